"""Input checks shared by the builder and the readers: every failure is a ValueError that names the offending item."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np


def finite_vector(name: str, value, length: int = 3) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size != length:
        raise ValueError(f"{name} must have {length} components, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr.tolist()}")
    return arr


def non_negative(name: str, value) -> float:
    v = float(value)
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")
    return v


def positive(name: str, value) -> float:
    v = float(value)
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def poisson_ratio(value) -> float:
    v = float(value)
    if not math.isfinite(v) or not (-1.0 < v < 0.5):
        raise ValueError(
            f"poisson_ratio must lie in (-1, 0.5), got {value!r} (0.5 is exactly incompressible: use e.g. 0.4999)"
        )
    return v


def index_list(name: str, indices: Iterable[int], count: int, *, distinct: bool = True) -> np.ndarray:
    arr = np.asarray(list(indices) if not isinstance(indices, np.ndarray) else indices)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.equal(np.mod(arr, 1), 0)):
            raise ValueError(f"{name} must be integers, got {arr.tolist()}")
        arr = arr.astype(np.int64)
    arr = arr.astype(np.int64).reshape(-1)
    bad = arr[(arr < 0) | (arr >= count)]
    if bad.size:
        raise ValueError(f"{name}: index {int(bad[0])} out of range [0, {count})")
    if distinct and np.unique(arr).size != arr.size:
        vals, counts = np.unique(arr, return_counts=True)
        raise ValueError(f"{name}: index {int(vals[counts > 1][0])} is repeated")
    return arr


def unit_quaternion(name: str, value) -> np.ndarray:
    q = finite_vector(name, value, 4)
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > 1e-3:
        raise ValueError(f"{name} must be a unit quaternion (x, y, z, w), got norm {n:.6g}")
    return q / n
