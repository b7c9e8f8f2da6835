"""Lane-major layouts of the linear solve's tables (kernels/block.py, sliced_row): where each lane of a world's
block walks a row of its own (a particle's coarse nodes, a row of a dense inverse), the rows are stored in slices of
``width`` rows, entry j of a slice's rows side by side, so that a warp's 32 lanes read one stretch of memory where a
row-major table would have them read 32 (SolverConfig.slice_width). Width 1 is row-major, as a CPU core reads
fastest."""

from __future__ import annotations

import numpy as np


def check_slice_width(width: int) -> None:
    """A slice width is a power of two (the kernels find a row's place in its slice with a bit mask)."""
    if width < 1 or width & (width - 1):
        raise ValueError(f"a slice width is a power of two, got {width}")


def sliced_rows(table: np.ndarray, width: int, fill=0) -> np.ndarray:
    """``table`` (rows, L, …) in slices of ``width`` rows, flattened to (⌈rows/width⌉ · width · L, …): entry (r, j)
    at ((r // width) · L + j) · width + r % width; the last slice's missing rows hold ``fill``."""
    check_slice_width(width)
    table = np.asarray(table)
    rows, length = table.shape[:2]
    padded = np.concatenate([table, np.full(((-rows) % width, *table.shape[1:]), fill, dtype=table.dtype)])
    sliced = padded.reshape(-1, width, length, *table.shape[2:]).swapaxes(1, 2)
    return np.ascontiguousarray(sliced).reshape(-1, *table.shape[2:])


def sliced_blocks(blocks: np.ndarray, start: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense square blocks (row-major, d × d at ``start``, d a multiple of 4) as float32 vec4s, each block's rows
    sliced (``sliced_rows`` of its (d, d/4) vec4s): (vec4s (·, 4), the blocks' starts in vec4s (blocks + 1,))."""
    parts, starts = [], [0]
    for c in range(len(start) - 1):
        block = np.asarray(blocks[start[c] : start[c + 1]], dtype=np.float32)
        d = int(round(np.sqrt(block.size)))
        parts.append(sliced_rows(block.reshape(d, d // 4, 4), width) if d else np.zeros((0, 4), dtype=np.float32))
        starts.append(starts[-1] + len(parts[-1]))
    out = np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.float32)
    return (out if len(out) else np.zeros((1, 4), dtype=np.float32)), np.asarray(starts, dtype=np.int64)
