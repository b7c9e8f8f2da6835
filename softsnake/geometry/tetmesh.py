"""Tetrahedral meshes: structured box meshes, TetGen tetrahedralization of closed surfaces, checks and meshio I/O."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass
class TetMesh:
    """vertices (n, 3) [m] and tets (m, 4) vertex indices, positively oriented (det[x1−x0, x2−x0, x3−x0] > 0)."""

    vertices: np.ndarray
    tets: np.ndarray


def tet_volumes(vertices: np.ndarray, tets: np.ndarray) -> np.ndarray:
    """Signed volumes det[x1−x0, x2−x0, x3−x0]/6 [m³]."""
    x = np.asarray(vertices, dtype=np.float64)[np.asarray(tets)]
    d = x[:, 1:] - x[:, :1]
    return np.linalg.det(np.transpose(d, (0, 2, 1))) / 6.0


def validate_tet_mesh(vertices, tets, *, name: str = "mesh") -> TetMesh:
    """Check a tet mesh and return it positively oriented.

    Raises ValueError for non-finite vertices, out-of-range or repeated indices within a tet, degenerate (near-zero
    volume) tets and inverted tets (orientation opposite to the rest of the mesh). A mesh whose tets are all negatively
    oriented (another convention) is flipped, not rejected.
    """
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(tets)
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] == 0:
        raise ValueError(f"{name}: vertices must have shape (n, 3), got {v.shape}")
    if not np.all(np.isfinite(v)):
        bad = int(np.argwhere(~np.isfinite(v))[0, 0])
        raise ValueError(f"{name}: vertex {bad} is not finite")
    if t.ndim != 2 or t.shape[1] != 4 or t.shape[0] == 0:
        raise ValueError(f"{name}: tets must have shape (m, 4), got {t.shape}")
    if not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"{name}: tet indices must be integers, got dtype {t.dtype}")
    t = t.astype(np.int64)
    out = np.argwhere((t < 0) | (t >= len(v)))
    if out.size:
        k = int(out[0, 0])
        raise ValueError(f"{name}: tet {k} has vertex index {int(t[k, out[0, 1]])} out of range [0, {len(v)})")
    srt = np.sort(t, axis=1)
    rep = np.nonzero(np.any(srt[:, 1:] == srt[:, :-1], axis=1))[0]
    if rep.size:
        raise ValueError(f"{name}: tet {int(rep[0])} repeats a vertex index {t[rep[0]].tolist()}")
    vol = tet_volumes(v, t)
    edge = np.max(np.linalg.norm(v[t[:, [1, 2, 3, 2, 3, 3]]] - v[t[:, [0, 0, 0, 1, 1, 2]]], axis=2), axis=1)
    degenerate = np.nonzero(np.abs(vol) <= 1e-6 * edge**3)[0]
    if degenerate.size:
        k = int(degenerate[0])
        raise ValueError(f"{name}: tet {k} is degenerate (volume {vol[k]:.3e} m³ for edge length {edge[k]:.3e} m)")
    negative = vol < 0
    if negative.all():
        t = t[:, [0, 2, 1, 3]]
    elif negative.any():
        k = int(np.nonzero(negative)[0][0]) if negative.sum() <= len(t) / 2 else int(np.nonzero(~negative)[0][0])
        raise ValueError(f"{name}: tet {k} is inverted (its orientation differs from the rest of the mesh)")
    return TetMesh(v, t.astype(np.int32))


def box_tet_mesh(size, cells, origin=(0.0, 0.0, 0.0)) -> TetMesh:
    """Structured mesh of a box: cells = (nx, ny, nz) cubes, each split into 6 tets around its main diagonal.

    size: box edge lengths [m]; origin: minimum corner [m]."""
    nx, ny, nz = (int(c) for c in cells)
    if min(nx, ny, nz) < 1:
        raise ValueError(f"cells must be ≥ 1 in each direction, got {cells}")
    sx, sy, sz = (float(s) for s in size)
    gx, gy, gz = np.meshgrid(
        np.linspace(0, sx, nx + 1), np.linspace(0, sy, ny + 1), np.linspace(0, sz, nz + 1), indexing="ij"
    )
    verts = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1) + np.asarray(origin, dtype=np.float64)

    def vid(i, j, k):
        return (i * (ny + 1) + j) * (nz + 1) + k

    # 6 tets sharing the diagonal 0-6 of the cube with corners numbered by (dx, dy, dz) bits
    paths = [(1, 3), (1, 5), (2, 3), (2, 6), (4, 5), (4, 6)]
    corner = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 1)]
    tets = []
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                c = [vid(i + a, j + b, k + d) for a, b, d in corner]
                for a, b in paths:
                    tets.append([c[0], c[a], c[b], c[7]])
    tets = np.asarray(tets)
    flip = tet_volumes(verts, tets) < 0  # half of the six path tets come out left-handed
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return validate_tet_mesh(verts, tets, name="box mesh")


def tetrahedralize(
    surface_vertices, surface_faces, *, max_volume: float | None = None, min_ratio: float = 1.5
) -> TetMesh:
    """Tetrahedralize a closed, manifold triangle surface with TetGen.

    max_volume: upper bound on tet volume [m³] (None: TetGen's choice); min_ratio: radius-edge quality bound."""
    import tetgen

    v = np.asarray(surface_vertices, dtype=np.float64)
    f = np.asarray(surface_faces, dtype=np.int32)
    if f.ndim != 2 or f.shape[1] != 3:
        raise ValueError(f"surface faces must have shape (m, 3), got {f.shape}")
    if v.ndim != 2 or v.shape[1] != 3 or not np.all(np.isfinite(v)):
        raise ValueError("surface vertices must be a finite (n, 3) array")
    if f.size == 0 or f.min() < 0 or f.max() >= len(v):
        raise ValueError("surface faces index vertices out of range")
    gen = tetgen.TetGen(v, f)
    kwargs = {"minratio": float(min_ratio), "quality": True}
    if max_volume is not None:
        kwargs["maxvolume"] = float(max_volume)
    try:
        nodes, elems, *_ = gen.tetrahedralize(**kwargs)
    except RuntimeError as exc:  # TetGen reports self-intersections etc. this way
        raise ValueError(f"TetGen failed on the surface (is it closed and manifold?): {exc}") from exc
    return validate_tet_mesh(nodes, elems, name="tetgen mesh")


def read_tet_mesh(path) -> TetMesh:
    """Read a tetrahedral mesh with meshio (any format meshio reads: .vtu, .msh, .mesh, ...)."""
    import meshio

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"cannot read tet mesh: no such file {str(p)!r}")
    try:
        m = meshio.read(p)
    except (Exception, SystemExit) as exc:  # meshio raises many types (and some readers exit) on malformed input
        raise ValueError(f"cannot read tet mesh {str(p)!r}: {exc}") from exc
    tets = [c.data for c in m.cells if c.type == "tetra"]
    if not tets:
        raise ValueError(f"{str(p)!r} contains no tetrahedra")
    return validate_tet_mesh(m.points, np.concatenate(tets), name=str(p))


def write_tet_mesh(path, mesh: TetMesh) -> None:
    """Write a tet mesh with meshio, atomically (temporary file in the same folder, then rename)."""
    import meshio

    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=p.stem + ".", suffix=p.suffix, dir=p.parent)
    os.close(fd)
    try:
        meshio.write(tmp, meshio.Mesh(mesh.vertices, [("tetra", mesh.tets)]))
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
