"""Small planar geometry helpers for the vine simulator (metres, radians). Pure NumPy."""

from __future__ import annotations

import math

import numpy as np

EPS = 1e-9  # geometric tolerance [m] for a workspace of order 1 m


def unit(angle: float) -> np.ndarray:
    """Unit vector at ``angle`` [rad]."""
    return np.array([math.cos(angle), math.sin(angle)])


def cross(a, b) -> float:
    """z-component of the 2-D cross product."""
    return float(a[0] * b[1] - a[1] * b[0])


def angle_of(v) -> float:
    """Direction of vector ``v`` [rad]."""
    return math.atan2(float(v[1]), float(v[0]))


def norm(v) -> float:
    return math.hypot(float(v[0]), float(v[1]))


def wrap(a: float) -> float:
    """Wrap an angle to ``(-pi, pi]``."""
    return (a + math.pi) % (2 * math.pi) - math.pi


def _line_edge_params(origin, direction, edge_a: np.ndarray, edge_b: np.ndarray):
    """For the line origin + t·direction against every edge a + s·(b − a): (t, s, den), den = direction × edge;
    t and s are inf/nan where den = 0 (parallel)."""
    ox, oy = float(origin[0]), float(origin[1])
    dx, dy = float(direction[0]), float(direction[1])
    ex = edge_b[:, 0] - edge_a[:, 0]
    ey = edge_b[:, 1] - edge_a[:, 1]
    px = edge_a[:, 0] - ox
    py = edge_a[:, 1] - oy
    den = dx * ey - dy * ex
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (px * ey - py * ex) / den
        s = (px * dy - py * dx) / den
    return t, s, den


def ray_cast(origin, direction, t_min: float, t_max: float, edge_a: np.ndarray, edge_b: np.ndarray):
    """First intersection of the ray ``origin + t * direction`` (``t_min < t <= t_max``) with the edges.

    ``direction`` must be a unit vector. Returns ``(t, edge_index, s)`` with ``s`` the position along the edge in
    ``[0, 1]``, or ``None``. Edges parallel to the ray are ignored.
    """
    t, s, den = _line_edge_params(origin, direction, edge_a, edge_b)
    ok = (np.abs(den) > 1e-14) & (s >= -1e-10) & (s <= 1 + 1e-10) & (t > t_min + EPS) & (t <= t_max + EPS)
    if not ok.any():
        return None
    idx = np.flatnonzero(ok)
    k = idx[np.argmin(t[idx])]
    return float(t[k]), int(k), float(min(max(s[k], 0.0), 1.0))


def points_in_triangle(points: np.ndarray, a, b, c, tol: float = EPS) -> np.ndarray:
    """Mask of ``points`` (N, 2) strictly inside triangle ``abc`` (either orientation), margin ``tol``."""
    sgn = 1.0 if cross(np.subtract(b, a), np.subtract(c, a)) > 0 else -1.0

    def side(p, q):
        return sgn * ((q[0] - p[0]) * (points[:, 1] - p[1]) - (q[1] - p[1]) * (points[:, 0] - p[0]))

    return (side(a, b) > tol) & (side(b, c) > tol) & (side(c, a) > tol)


def points_in_polygon(points: np.ndarray, poly: np.ndarray) -> np.ndarray:
    """Crossing-number point-in-polygon for ``points`` (N, 2) against a closed polygon (K, 2)."""
    x = points[:, 0][:, None]
    y = points[:, 1][:, None]
    xi, yi = poly[:, 0][None, :], poly[:, 1][None, :]
    xj, yj = np.roll(poly[:, 0], 1)[None, :], np.roll(poly[:, 1], 1)[None, :]
    cond = (yi > y) != (yj > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = (xj - xi) * (y - yi) / (yj - yi) + xi
    return (np.count_nonzero(cond & (x < xc), axis=1) % 2).astype(bool)


def line_circle_param(p0, d, center, radius: float):
    """Parameters ``t`` where ``p0 + t d`` (unit ``d``) meets the circle; ``None`` if it does not."""
    w = np.subtract(p0, center)
    b = float(np.dot(w, d))
    c = float(np.dot(w, w)) - radius * radius
    disc = b * b - c
    if disc < 0:
        return None
    r = math.sqrt(disc)
    return -b - r, -b + r


def ray_line_intersection(origin, direction, p0, p1):
    """Parameter ``t`` where the ray meets the infinite line through ``p0, p1`` (``None`` if parallel)."""
    e = np.subtract(p1, p0)
    den = cross(direction, e)
    if abs(den) < 1e-15:
        return None
    return cross(np.subtract(p0, origin), e) / den


def segment_crosses_edges(p, q, edge_a: np.ndarray, edge_b: np.ndarray, margin: float = 1e-7) -> bool:
    """Whether the segment ``p -> q`` passes through any edge away from the segment's own end points."""
    dx, dy = float(q[0]) - float(p[0]), float(q[1]) - float(p[1])
    seg_len = math.hypot(dx, dy)
    if seg_len <= 2 * margin:
        return False
    t, s, den = _line_edge_params(p, (dx, dy), edge_a, edge_b)
    m = margin / seg_len
    ok = (np.abs(den) > 1e-14) & (t > m) & (t < 1 - m) & (s > 1e-9) & (s < 1 - 1e-9)
    return bool(ok.any())


def circle_intersection_nearest(c1, r1: float, c2, r2: float, ref, tol: float = 1e-12):
    """Intersection of the circles |p − c1| = r1 and |p − c2| = r2 [m] nearest ``ref``; ``None`` if they do not meet
    (the chord's squared half-length below −``tol``) or share their centre."""
    c1, c2 = np.asarray(c1, float), np.asarray(c2, float)
    dv = c2 - c1
    dd = norm(dv)
    if dd < 1e-15:
        return None
    x = (dd * dd + r1 * r1 - r2 * r2) / (2 * dd)
    y2 = r1 * r1 - x * x
    if y2 < -tol:
        return None
    y = math.sqrt(max(y2, 0.0))
    ex = dv / dd
    ey = np.array([-ex[1], ex[0]])
    sols = [c1 + x * ex + y * ey, c1 + x * ex - y * ey]
    return min(sols, key=lambda p: norm(p - np.asarray(ref, float)))
