"""Host side of the elastic block matrix of the primal step (kernels/stiffness.py): the pattern of 3×3 blocks, one per
pair of particles that share a tet, and the tet-vertex contributions that each block sums."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class BlockPattern:
    """One world's pattern: CSR block rows (``row_start`` (n + 1,), ``col`` (blocks,)), each block's contributions
    (``contrib_start`` (blocks + 1,), ``contrib`` = 16·tet + 4·a + b, ``contrib_gg`` = g_a·g_b [1/m²])."""

    row_start: np.ndarray
    col: np.ndarray
    contrib_start: np.ndarray
    contrib: np.ndarray
    contrib_gg: np.ndarray

    @property
    def block_count(self) -> int:
        return len(self.col)


def rest_gradients(rest_inverse: np.ndarray) -> np.ndarray:
    """(T, 4, 3) g_a of every tet: the rows of its rest inverse B, g_0 = −(g_1 + g_2 + g_3)."""
    B = np.asarray(rest_inverse, dtype=np.float64).reshape(-1, 3, 3)
    return np.concatenate([-B.sum(axis=1, keepdims=True), B], axis=1)


def block_pattern(tets: np.ndarray, particles: int, rest_inverse: np.ndarray) -> BlockPattern:
    """The blocks (i, j) with i and j vertices of a common tet, in row-major order, and their contributions sorted
    by (tet, a, b) within each block."""
    tets = np.asarray(tets, dtype=np.int64).reshape(-1, 4)
    T = len(tets)
    g = rest_gradients(rest_inverse)
    a, b = np.meshgrid(np.arange(4), np.arange(4), indexing="ij")
    a, b = a.ravel(), b.ravel()
    t = np.repeat(np.arange(T), 16)
    aa, bb = np.tile(a, T), np.tile(b, T)
    i, j = tets[t, aa], tets[t, bb]
    code = 16 * t + 4 * aa + bb
    gg = np.einsum("ij,ij->i", g[t, aa], g[t, bb])
    order = np.lexsort((code, j, i))
    i, j, code, gg = i[order], j[order], code[order], gg[order]
    first = np.ones(len(i), dtype=bool)
    first[1:] = (i[1:] != i[:-1]) | (j[1:] != j[:-1])
    starts = np.nonzero(first)[0]
    row_start = np.zeros(particles + 1, dtype=np.int64)
    np.add.at(row_start, i[starts] + 1, 1)
    return BlockPattern(
        row_start=np.cumsum(row_start),
        col=j[starts],
        contrib_start=np.append(starts, len(i)),
        contrib=code,
        contrib_gg=gg,
    )
