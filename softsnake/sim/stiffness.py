"""Host side of the elastic block matrix of the primal step (kernels/stiffness.py): the pattern of 3×3 blocks, one per
pair of particles that share a tet, the tet-vertex contributions that each block sums, and the sliced layout in which
the step stores the blocks (``sliced_layout``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lane_layout import check_slice_width


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


@dataclass
class SlicedPattern:
    """A pattern in slices of ``width`` block rows (the sliced ELLPACK layout of GPU sparse products, SELL-C): slice s
    holds rows s·width … and ``width`` · (its longest row's length) slots, where block j of row p sits in slot
    ``row_first[p] + j · width``, so the lanes of a warp that multiply ``width`` consecutive rows read their j-th
    blocks (and columns) from consecutive slots. Slots past a row's end are padding: column 0, no contributions.
    ``width`` = 1 is the plain CSR order. ``contrib_start`` (slots + 1,) indexes ``contrib``/``contrib_gg`` per slot.
    ``upper`` lists the slots of the blocks (i, j) with j ≥ i in slot order, ``mirror`` the slot of each one's (j, i):
    K is symmetric, and block (j, i) sums the same tets in the same order with a and b swapped, so it is block (i, j)
    transposed to the bit, and the step assembles the upper blocks alone (kernels/stiffness.py, assemble_block)."""

    width: int
    row_first: np.ndarray
    row_length: np.ndarray
    col: np.ndarray
    contrib_start: np.ndarray
    contrib: np.ndarray
    contrib_gg: np.ndarray
    upper: np.ndarray
    mirror: np.ndarray

    @property
    def slot_count(self) -> int:
        return len(self.col)


def sliced_layout(pattern: BlockPattern, width: int) -> SlicedPattern:
    """``pattern`` in slices of ``width`` rows, a power of two (SlicedPattern); each block keeps its contributions in
    order."""
    check_slice_width(width)
    length = np.diff(pattern.row_start)
    rows = len(length)
    slices = -(-rows // width)
    longest = np.zeros(slices, dtype=np.int64)
    np.maximum.at(longest, np.arange(rows) // width, length)
    slice_start = width * np.concatenate([[0], np.cumsum(longest)])
    row_first = slice_start[np.arange(rows) // width] + np.arange(rows) % width
    slots = int(slice_start[-1])
    # the CSR block (p, j) goes to slot row_first[p] + j · width
    csr_row = np.repeat(np.arange(rows), length)
    slot = row_first[csr_row] + (np.arange(len(pattern.col)) - pattern.row_start[csr_row]) * width
    col = np.zeros(slots, dtype=np.int64)
    col[slot] = pattern.col
    count = np.zeros(slots, dtype=np.int64)
    count[slot] = np.diff(pattern.contrib_start)
    contrib_start = np.concatenate([[0], np.cumsum(count)])
    # each block's contribution list, moved whole (in its order) to its slot's place in the slot order
    take = np.argsort(np.repeat(slot, np.diff(pattern.contrib_start)), kind="stable")
    # the CSR blocks are in (row, column) order, so block (j, i) is found by its key j·rows + i
    key = csr_row * rows + pattern.col
    transpose = np.searchsorted(key, pattern.col * rows + csr_row)
    if not np.array_equal(key[transpose], pattern.col * rows + csr_row):
        raise ValueError("the block pattern is not symmetric")
    upper = np.nonzero(pattern.col >= csr_row)[0]
    order = np.argsort(slot[upper])
    return SlicedPattern(
        width=width,
        row_first=row_first,
        row_length=length,
        col=col,
        contrib_start=contrib_start,
        contrib=pattern.contrib[take],
        contrib_gg=pattern.contrib_gg[take],
        upper=slot[upper][order],
        mirror=slot[transpose[upper]][order],
    )
