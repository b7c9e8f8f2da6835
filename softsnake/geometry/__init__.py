"""Meshing helpers: structured tet meshes, TetGen tetrahedralization, tet-mesh checks and file I/O."""

from .tetmesh import (
    TetMesh,
    box_tet_mesh,
    read_tet_mesh,
    tet_volumes,
    tetrahedralize,
    validate_tet_mesh,
    write_tet_mesh,
)

__all__ = [
    "TetMesh",
    "box_tet_mesh",
    "read_tet_mesh",
    "tet_volumes",
    "tetrahedralize",
    "validate_tet_mesh",
    "write_tet_mesh",
]
