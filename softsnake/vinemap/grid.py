"""Occupancy grid of Section 4.1.2-4.1.4: rubrics, hit/miss matrices, belief (Eq. 31) and score (Eqs. 32-33).

The workspace square is split into ``n x n`` cells (35 in the paper). Grids are flattened to ``(n*n,)`` arrays with
index ``ix * n + iy`` (``ix`` along x). A cell is marked by a shape when the shape covers part of it (strictly
positive overlap, separating-axis test), matching "partially or fully covered" in the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import shapely

from .environment import Environment

__all__ = ["Grid", "belief", "score", "unweighted_score"]

PRIOR = 1.0 / 3.0


@dataclass
class Grid:
    """Square grid over ``bounds = (xmin, ymin, xmax, ymax)`` [m] with ``n`` cells per side."""

    bounds: tuple[float, float, float, float]
    n: int = 35

    def __post_init__(self) -> None:
        xmin, ymin, xmax, ymax = self.bounds
        self.cw = (xmax - xmin) / self.n
        self.ch = (ymax - ymin) / self.n
        self.x_edges = xmin + self.cw * np.arange(self.n + 1)
        self.y_edges = ymin + self.ch * np.arange(self.n + 1)
        cx = 0.5 * (self.x_edges[:-1] + self.x_edges[1:])
        cy = 0.5 * (self.y_edges[:-1] + self.y_edges[1:])
        self.cx, self.cy = cx, cy

    @property
    def size(self) -> int:
        return self.n * self.n

    def cell_boxes(self):
        ix, iy = np.meshgrid(np.arange(self.n), np.arange(self.n), indexing="ij")
        return shapely.box(
            self.x_edges[ix.ravel()],
            self.y_edges[iy.ravel()],
            self.x_edges[ix.ravel() + 1],
            self.y_edges[iy.ravel() + 1],
        )

    def rubric(self, obstacles) -> np.ndarray:
        """True occupancy (1 where an obstacle covers part of the cell, else 0), shape ``(n*n,)``."""
        boxes = self.cell_boxes()
        occ = np.zeros(self.size, bool)
        for o in obstacles:
            poly = shapely.Polygon(o)
            area = shapely.area(shapely.intersection(boxes, poly))
            occ |= area > 1e-12 * self.cw * self.ch
        return occ.astype(float)

    # -- rasterisation -------------------------------------------------------------------------------------------
    def cover(self, tris: np.ndarray, owner: np.ndarray, n_owners: int, chunk: int = 2048) -> np.ndarray:
        """Cells partially covered by triangles ``tris`` (P, 3, 2) (segments as degenerate triangles).

        Returns a ``(n_owners, n*n)`` boolean array: row ``k`` marks the cells touched by triangles with
        ``owner == k``. Separating-axis test against the axis-aligned cells (x, y and the three edge normals).
        """
        out = np.zeros((n_owners, self.size), bool)
        if len(tris) == 0:
            return out
        tol = 1e-12
        hx, hy = 0.5 * self.cw, 0.5 * self.ch
        for s in range(0, len(tris), chunk):
            t = tris[s : s + chunk]
            lo = t.min(axis=1)
            hi = t.max(axis=1)
            ox = (hi[:, 0:1] > self.x_edges[None, :-1] + tol) & (lo[:, 0:1] < self.x_edges[None, 1:] - tol)
            oy = (hi[:, 1:2] > self.y_edges[None, :-1] + tol) & (lo[:, 1:2] < self.y_edges[None, 1:] - tol)
            # a zero-width segment along x or y still covers the cells it runs through
            flat_x = (hi[:, 0] - lo[:, 0]) < tol
            flat_y = (hi[:, 1] - lo[:, 1]) < tol
            if flat_x.any():
                ox[flat_x] = (hi[flat_x, 0:1] > self.x_edges[None, :-1]) & (lo[flat_x, 0:1] < self.x_edges[None, 1:])
            if flat_y.any():
                oy[flat_y] = (hi[flat_y, 1:2] > self.y_edges[None, :-1]) & (lo[flat_y, 1:2] < self.y_edges[None, 1:])
            hit = ox[:, :, None] & oy[:, None, :]
            for e in range(3):
                a, b = t[:, e], t[:, (e + 1) % 3]
                nx, ny = -(b[:, 1] - a[:, 1]), b[:, 0] - a[:, 0]
                nrm = np.hypot(nx, ny)
                ok = nrm > 1e-15
                nx = np.where(ok, nx / np.where(ok, nrm, 1), 0.0)
                ny = np.where(ok, ny / np.where(ok, nrm, 1), 0.0)
                proj = t[:, :, 0] * nx[:, None] + t[:, :, 1] * ny[:, None]
                pmin, pmax = proj.min(axis=1), proj.max(axis=1)
                c = self.cx[None, :, None] * nx[:, None, None] + self.cy[None, None, :] * ny[:, None, None]
                r = (hx * np.abs(nx) + hy * np.abs(ny))[:, None, None]
                sep = (c - r >= pmax[:, None, None] - tol) | (c + r <= pmin[:, None, None] + tol)
                hit &= ~(sep & ok[:, None, None])
            flat = hit.reshape(len(t), -1)
            own = owner[s : s + chunk]  # owners are grouped (non-decreasing), so reduce runs of equal owners
            starts = np.flatnonzero(np.r_[True, own[1:] != own[:-1]])
            out[own[starts]] |= np.logical_or.reduceat(flat, starts, axis=0)
        return out

    def deployment_masks(self, deps, radius: float, obstacles=()) -> tuple[np.ndarray, np.ndarray]:
        """Hit and miss matrices (Section 4.1.3) for a list of deployments: two ``(len(deps), n*n)`` bool arrays.

        Misses: swept areas and the final robot centreline. Hits: contacted wall pieces moved from the bumper onto
        the true obstacle surface (``obstacles``: true polygons): each end is shifted by the robot radius along the
        wall normal and snapped to the nearest point of the true obstacles (so hits at the rounded-off bumper
        corners land on the obstacle corner), then nudged 0.1 mm inwards. Boundary walls are skipped.
        """
        miss_tris, miss_own, hit_pts, hit_nrm, hit_own = [], [], [], [], []
        for k, d in enumerate(deps):
            for poly in d.swept:
                for i in range(1, len(poly) - 1):
                    miss_tris.append((poly[0], poly[i], poly[i + 1]))
                    miss_own.append(k)
            for a, b in zip(d.shape[:-1], d.shape[1:]):
                miss_tris.append((a, b, b))
                miss_own.append(k)
            for w, nrm, on_b in zip(d.walls, d.wall_normals, d.wall_on_boundary):
                if not on_b:
                    hit_pts.append(w + radius * nrm)
                    hit_nrm.append(nrm)
                    hit_own.append(k)
        miss = self.cover(np.asarray(miss_tris, float).reshape(-1, 3, 2), np.asarray(miss_own, int), len(deps))
        if hit_pts and len(obstacles):
            pts = snap_to_polygons(np.concatenate(hit_pts), obstacles).reshape(-1, 2, 2)
            pts += 1e-4 * np.asarray(hit_nrm)[:, None, :]
            tris = np.concatenate([pts, pts[:, 1:2]], axis=1)
        else:
            tris = np.zeros((0, 3, 2))
        hit = self.cover(tris, np.asarray(hit_own, int), len(deps))
        return hit, miss


def snap_to_polygons(points: np.ndarray, polygons) -> np.ndarray:
    """Nearest point on the boundaries of ``polygons`` for each of ``points`` (N, 2) [m]."""
    a = np.concatenate([np.asarray(p, float) for p in polygons])
    b = np.concatenate([np.roll(np.asarray(p, float), -1, axis=0) for p in polygons])
    e = b - a
    ee = np.maximum(np.einsum("ij,ij->i", e, e), 1e-300)
    w = points[:, None, :] - a[None]
    t = np.clip(np.einsum("nij,ij->ni", w, e) / ee, 0.0, 1.0)
    foot = a[None] + t[..., None] * e[None]
    d2 = np.sum((points[:, None, :] - foot) ** 2, axis=2)
    k = np.argmin(d2, axis=1)
    return foot[np.arange(len(points)), k]


def belief(hit: np.ndarray, miss: np.ndarray, prior: float = PRIOR) -> np.ndarray:
    """Eq. 31: ``B = p (1 - (H or M)) + H / (H + M)``, with ``H/(H+M)`` taken as 0 where neither was observed."""
    h = hit.astype(float)
    m = miss.astype(float)
    seen = h + m
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(seen > 0, h / np.where(seen > 0, seen, 1.0), 0.0)
    return prior * (1.0 - np.logical_or(hit, miss)) + frac


def unweighted_score(x: np.ndarray, rubric: np.ndarray) -> np.ndarray:
    """Eq. 33: ``S_X = 100 mean(1 - |X - R|)`` over the last axis."""
    return 100.0 * np.mean(1.0 - np.abs(x - rubric), axis=-1)


def score(b: np.ndarray, rubric: np.ndarray, prior: float = PRIOR) -> np.ndarray:
    """Eq. 32: ``S = 100 (S_B - S_P) / (100 - S_P)``: 0 for the prior belief, 100 for the rubric itself."""
    s_p = unweighted_score(np.full(rubric.shape, prior), rubric)
    return 100.0 * (unweighted_score(b, rubric) - s_p) / (100.0 - s_p)


def environment_rubric(env: Environment, grid: Grid) -> np.ndarray:
    """Rubric of an environment's true obstacles."""
    return grid.rubric(env.obstacles)
