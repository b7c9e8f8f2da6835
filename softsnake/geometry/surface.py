"""Boundary surface of a tetrahedral mesh, for rendering and export."""

from __future__ import annotations

import numpy as np

# Faces of a positively oriented tet (det[x1-x0, x2-x0, x3-x0] > 0), listed opposite vertices 3, 2, 1, 0, each wound
# counter-clockwise seen from outside (right-hand normal points away from the opposite vertex).
_TET_FACES = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], dtype=np.int64)


def surface_triangles(tets) -> np.ndarray:
    """Boundary triangles (k, 3) of a tet mesh (m, 4), wound outward (right-hand normals point out of the solid).

    A face belongs to the boundary when exactly one tet has it. Tets must be positively oriented (the convention of
    ``softsnake.geometry.tetmesh``); faces keep the order of the tets they come from. Raises ValueError for a bad
    array, a tet with a repeated vertex, or a face shared by more than two tets (non-manifold mesh).
    """
    t = np.asarray(tets)
    if t.ndim != 2 or t.shape[1] != 4:
        raise ValueError(f"surface_triangles: tets must have shape (m, 4), got {t.shape}")
    if t.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    if not np.issubdtype(t.dtype, np.integer):
        raise ValueError(f"surface_triangles: tets must be integer vertex indices, got dtype {t.dtype}")
    t = t.astype(np.int64)
    if (t < 0).any():
        k = int(np.argwhere((t < 0).any(axis=1))[0, 0])
        raise ValueError(f"surface_triangles: tet {k} has a negative vertex index {t[k].tolist()}")
    s = np.sort(t, axis=1)
    repeated = (s[:, 1:] == s[:, :-1]).any(axis=1)
    if repeated.any():
        k = int(np.argmax(repeated))
        raise ValueError(f"surface_triangles: tet {k} repeats a vertex {t[k].tolist()}")

    faces = t[:, _TET_FACES].reshape(-1, 3)  # (4m, 3), outward for each tet
    keys = np.sort(faces, axis=1)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    if (counts > 2).any():
        bad = int(np.argmax(counts[inverse] > 2))
        raise ValueError(
            f"surface_triangles: face {keys[bad].tolist()} is shared by {int(counts[inverse[bad]])} tets "
            "(non-manifold mesh)"
        )
    return faces[counts[inverse] == 1]
