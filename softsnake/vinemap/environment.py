"""Polygonal environments for the geometric vine simulator: validation, JSON files and random generators.

Lengths are in metres. An :class:`Environment` holds the *true* obstacle polygons (used for the occupancy rubric);
:meth:`Environment.scene` compiles the obstacles grown by a bumper of the robot radius (Section 3.1.1) into the flat
arrays the simulator ray-casts against.

JSON format (all keys except ``obstacles`` optional)::

    {
      "units": "m",
      "boundary": [xmin, ymin, xmax, ymax],          # square workspace, default [0, 0, 1, 1]
      "obstacles": [[[x, y], [x, y], ...], ...],     # simple polygons, >= 3 vertices, clockwise preferred
      "launch_positions": [[x, y], ...],             # default: two points on the bottom side
      "robot_radius": 0.015,                         # bumper and critical-angle radius R
      "robot_length": 1.0,                           # maximum robot length L_VR
      "friction": 0.3                                 # static friction coefficient mu
    }
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import numpy as np
import shapely
from shapely.geometry import LinearRing, MultiPolygon, Point, Polygon, box
from shapely.geometry.polygon import orient

__all__ = [
    "Environment",
    "Scene",
    "load_environment",
    "save_environment",
    "uniform_environment",
    "nonuniform_environment",
    "default_launches",
    "write_atomic",
]


def default_launches(boundary: tuple[float, float, float, float], radius: float) -> list[tuple[float, float]]:
    """The two launch positions on the bottom side of the boundary, at 1/3 and 2/3 of its width [m]."""
    xmin, ymin, xmax, _ = boundary
    w = xmax - xmin
    y = ymin + 2.0 * radius
    return [(xmin + w / 3.0, y), (xmin + 2.0 * w / 3.0, y)]


def _as_polygon(verts, index: int) -> np.ndarray:
    try:
        arr = np.asarray(verts, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"obstacle {index}: vertices must be a list of [x, y] pairs ({exc})") from None
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"obstacle {index}: vertices must be a list of [x, y] pairs, got shape {arr.shape}")
    if len(arr) > 1 and np.allclose(arr[0], arr[-1]):
        arr = arr[:-1]
    if len(arr) < 3:
        raise ValueError(f"obstacle {index}: needs at least 3 vertices, got {len(arr)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"obstacle {index}: vertices must be finite numbers")
    ring = LinearRing(arr)
    if not ring.is_simple:
        raise ValueError(f"obstacle {index} is self-intersecting (its edges cross); give a simple polygon")
    poly = Polygon(arr)
    if poly.area <= 1e-12:
        raise ValueError(f"obstacle {index} has zero area")
    # Normalise to clockwise order (the paper's convention, Algorithm 1 input).
    return np.asarray(orient(poly, sign=-1.0).exterior.coords)[:-1]


@dataclass
class Environment:
    """A square workspace with polygonal obstacles and launch positions (true geometry, metres)."""

    obstacles: list[np.ndarray]
    boundary: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    launches: list[tuple[float, float]] | None = None
    robot_radius: float = 0.015
    robot_length: float = 1.0
    friction: float = 0.3
    _scene: "Scene | None" = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        b = tuple(float(v) for v in self.boundary)
        if len(b) != 4 or not all(math.isfinite(v) for v in b) or b[2] <= b[0] or b[3] <= b[1]:
            raise ValueError(f"boundary must be [xmin, ymin, xmax, ymax] with xmax > xmin and ymax > ymin, got {b}")
        self.boundary = b
        for name in ("robot_radius", "robot_length", "friction"):
            v = float(getattr(self, name))
            if not math.isfinite(v) or v <= 0:
                raise ValueError(f"{name} must be a positive number, got {v}")
            setattr(self, name, v)
        self.obstacles = [_as_polygon(o, i) for i, o in enumerate(self.obstacles)]
        if self.launches is None:
            self.launches = default_launches(self.boundary, self.robot_radius)
        self.launches = [tuple(float(c) for c in p) for p in self.launches]
        for i, p in enumerate(self.launches):
            if len(p) != 2 or not all(math.isfinite(c) for c in p):
                raise ValueError(f"launch position {i} must be [x, y], got {p}")
            self.check_launch(p, f"launch position {i}")

    # -- queries ---------------------------------------------------------------------------------------------
    def check_launch(self, point, what: str = "launch point") -> None:
        """Raise ``ValueError`` if ``point`` is outside the boundary or inside an obstacle (or its bumper)."""
        x, y = float(point[0]), float(point[1])
        xmin, ymin, xmax, ymax = self.boundary
        r = self.robot_radius
        if not (xmin + r <= x + 1e-12 and x <= xmax - r + 1e-12 and ymin + r <= y + 1e-12 and y <= ymax - r + 1e-12):
            raise ValueError(f"{what} ({x:.4g}, {y:.4g}) is outside the boundary (shrunk by the robot radius {r:g} m)")
        pt = Point(x, y)
        for i, o in enumerate(self.obstacles):
            poly = Polygon(o)
            if poly.contains(pt) or poly.distance(pt) < r - 1e-12:
                raise ValueError(f"{what} ({x:.4g}, {y:.4g}) is inside obstacle {i} or within its bumper of {r:g} m")

    def scene(self) -> "Scene":
        """The compiled bumpered geometry used by the simulator (cached)."""
        if self._scene is None:
            self._scene = Scene.from_environment(self)
        return self._scene

    def to_json(self) -> dict:
        """The environment as a JSON-serialisable dict (see module docstring)."""
        return {
            "units": "m",
            "boundary": list(self.boundary),
            "obstacles": [np.round(o, 9).tolist() for o in self.obstacles],
            "launch_positions": [list(p) for p in self.launches],
            "robot_radius": self.robot_radius,
            "robot_length": self.robot_length,
            "friction": self.friction,
        }

    @classmethod
    def from_json(cls, data: dict, *, source: str = "environment") -> "Environment":
        """Build from a dict in the documented JSON format. ValueError naming ``source`` (the file) and the key for an
        unknown key (a misspelt ``robot_lenght`` is not ignored), a value of the wrong type or shape, or bad
        geometry."""
        from softsnake.io.user_files import check_keys, describe

        if not isinstance(data, dict):
            raise ValueError(f"{source} must contain a JSON object, got {describe(data)}")
        check_keys(data, JSON_KEYS, where=source)

        def bad(key, expected):
            return ValueError(f"{source}: '{key}' must be {expected}, got {describe(data[key])}")

        def number(v):
            return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

        def point(v):
            return isinstance(v, list) and len(v) == 2 and all(number(c) for c in v)

        if data.get("units", "m") != "m":
            raise bad("units", '"m"')
        if not isinstance(data.get("obstacles"), list):
            raise ValueError(
                f"{source}: needs an 'obstacles' list of vertex lists"
                + (f", got {describe(data['obstacles'])}" if "obstacles" in data else "")
            )
        for i, o in enumerate(data["obstacles"]):
            if not isinstance(o, list) or not all(point(v) for v in o):
                raise ValueError(
                    f"{source}: 'obstacles' entry {i} must be a list of [x, y] number pairs, got {describe(o)}"
                )
        kw = {}
        for key in ("robot_radius", "robot_length", "friction"):
            if key in data:
                if not number(data[key]):
                    raise bad(key, "a finite number")
                kw[key] = float(data[key])
        if "boundary" in data:
            if not (
                isinstance(data["boundary"], list)
                and len(data["boundary"]) == 4
                and all(number(v) for v in data["boundary"])
            ):
                raise bad("boundary", "[xmin, ymin, xmax, ymax] (4 numbers)")
            kw["boundary"] = tuple(data["boundary"])
        if "launch_positions" in data:
            if not (
                isinstance(data["launch_positions"], list)
                and data["launch_positions"]
                and all(point(p) for p in data["launch_positions"])
            ):
                raise bad("launch_positions", "a non-empty list of [x, y] number pairs")
            kw["launches"] = [tuple(p) for p in data["launch_positions"]]
        try:
            return cls(obstacles=list(data["obstacles"]), **kw)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None


#: the keys of an environment JSON file
JSON_KEYS = ("units", "boundary", "obstacles", "launch_positions", "robot_radius", "robot_length", "friction")


def write_atomic(path: str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically, with an ordinary file's mode (``softsnake.io.files.atomic_path``)."""
    from softsnake.io.files import atomic_path

    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)


def load_environment(path: str) -> Environment:
    """Read an environment JSON file; ValueError naming the file (and the key) when it is missing or malformed."""
    from softsnake.io.user_files import read_json

    return Environment.from_json(read_json(path, "environment file"), source=str(path))


def save_environment(env: Environment, path: str) -> None:
    """Write ``env`` as JSON (atomically)."""
    write_atomic(path, json.dumps(env.to_json(), indent=1))


# ---------------------------------------------------------------------------------------------------------------
# Compiled bumpered scene
# ---------------------------------------------------------------------------------------------------------------
@dataclass
class Scene:
    """Bumpered polygons as flat arrays (metres).

    ``verts`` (N, 2) all vertices; ``poly_of`` (N,) polygon id; ``prev``/``next`` (N,) neighbouring vertex indices;
    edges run from vertex ``i`` to ``next[i]``. Polygon ``0`` is the boundary shrunk by the robot radius; it is an
    *inverted* obstacle (its outside is solid). Other polygons are obstacles grown by the radius, clockwise.
    """

    verts: np.ndarray
    poly_of: np.ndarray
    prev: np.ndarray
    next: np.ndarray
    polys: list[np.ndarray]
    poly_start: np.ndarray
    inverted: np.ndarray
    radius: float
    friction: float
    bounds: tuple[float, float, float, float]

    @property
    def edge_a(self) -> np.ndarray:
        return self.verts

    @property
    def edge_b(self) -> np.ndarray:
        return self.verts[self.next]

    @classmethod
    def from_polygons(cls, boundary, obstacles, radius: float, friction: float) -> "Scene":
        """Compile true obstacle polygons: grow by ``radius`` (mitred bumper), merge overlaps, clip to the box."""
        xmin, ymin, xmax, ymax = boundary
        inner = box(xmin + radius, ymin + radius, xmax - radius, ymax - radius)
        grown = [Polygon(o).buffer(radius, join_style="mitre", mitre_limit=2.0) for o in obstacles]
        merged = shapely.unary_union(grown) if grown else Polygon()
        merged = merged.intersection(inner.buffer(-1e-6, join_style="mitre"))
        parts = []
        geoms = merged.geoms if isinstance(merged, MultiPolygon) or hasattr(merged, "geoms") else [merged]
        for g in geoms:
            if isinstance(g, Polygon) and g.area > 1e-10:
                g = orient(Polygon(g.exterior), sign=-1.0).simplify(1e-9)
                if isinstance(g, Polygon) and g.area > 1e-10:
                    parts.append(np.asarray(g.exterior.coords)[:-1])
        bnd = np.array(
            [
                [xmin + radius, ymin + radius],
                [xmin + radius, ymax - radius],
                [xmax - radius, ymax - radius],
                [xmax - radius, ymin + radius],
            ]
        )
        polys = [bnd] + parts
        verts, poly_of, prev, nxt, starts = [], [], [], [], []
        k = 0
        for pid, p in enumerate(polys):
            n = len(p)
            starts.append(k)
            verts.append(p)
            poly_of.append(np.full(n, pid))
            idx = np.arange(n)
            prev.append(k + (idx - 1) % n)
            nxt.append(k + (idx + 1) % n)
            k += n
        starts.append(k)
        inverted = np.zeros(len(polys), bool)
        inverted[0] = True
        return cls(
            np.concatenate(verts),
            np.concatenate(poly_of),
            np.concatenate(prev),
            np.concatenate(nxt),
            polys,
            np.array(starts),
            inverted,
            float(radius),
            float(friction),
            tuple(boundary),
        )

    @classmethod
    def from_environment(cls, env: Environment) -> "Scene":
        return cls.from_polygons(env.boundary, env.obstacles, env.robot_radius, env.friction)

    def inside_poly(self, pid: int, point) -> bool:
        """Whether ``point`` is in the solid part of polygon ``pid`` (crossing-number test)."""
        p = self.polys[pid]
        x, y = float(point[0]), float(point[1])
        xi, yi = p[:, 0], p[:, 1]
        xj, yj = np.roll(xi, 1), np.roll(yi, 1)
        cond = (yi > y) != (yj > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            xc = (xj - xi) * (y - yi) / (yj - yi) + xi
        inside = bool(np.count_nonzero(cond & (x < xc)) % 2)
        return inside != bool(self.inverted[pid])

    def solid(self, point) -> bool:
        """Whether ``point`` lies inside any bumpered obstacle or outside the shrunk boundary."""
        return any(self.inside_poly(pid, point) for pid in range(len(self.polys)))


# ---------------------------------------------------------------------------------------------------------------
# Random environments (Section 4.2)
# ---------------------------------------------------------------------------------------------------------------
def _clear_of(poly: Polygon, placed: list[Polygon], gap: float, launches, launch_clear: float, inner: Polygon) -> bool:
    if not inner.contains(poly):
        return False
    if any(poly.distance(q) < gap for q in placed):
        return False
    return all(poly.distance(Point(p)) > launch_clear for p in launches)


def uniform_environment(
    seed: int,
    *,
    boundary=(0.0, 0.0, 1.0, 1.0),
    robot_radius: float = 0.015,
    robot_length: float = 1.0,
    friction: float = 0.3,
    side_range=(0.12, 0.22),
    grid: int = 35,
) -> Environment:
    """3-5 randomly placed axis-aligned squares (the paper's uniform environments), seeded.

    Squares keep at least one grid cell from each other and from the boundary, and clear of the launch positions.
    """
    rng = np.random.default_rng(seed)
    xmin, ymin, xmax, ymax = boundary
    cell = (xmax - xmin) / grid
    launches = default_launches(boundary, robot_radius)
    inner = box(xmin + cell, ymin + cell, xmax - cell, ymax - cell)
    n = int(rng.integers(3, 6))
    placed: list[Polygon] = []
    for _ in range(2000):
        if len(placed) == n:
            break
        s = rng.uniform(*side_range) * (xmax - xmin)
        x = rng.uniform(xmin, xmax - s)
        y = rng.uniform(ymin + 0.15 * (ymax - ymin), ymax - s)
        sq = box(x, y, x + s, y + s)
        if _clear_of(sq, placed, cell, launches, 4 * robot_radius + cell, inner):
            placed.append(sq)
    obstacles = [np.asarray(p.exterior.coords)[:-1] for p in placed]
    return Environment(obstacles, boundary, launches, robot_radius, robot_length, friction)


def nonuniform_environment(
    seed: int,
    *,
    boundary=(0.0, 0.0, 1.0, 1.0),
    robot_radius: float = 0.015,
    robot_length: float = 1.0,
    friction: float = 0.3,
    concave: bool = True,
    grid: int = 35,
) -> Environment:
    """3-6 obstacles from convex hulls of random point splatters, scaled and placed at random, seeded.

    With ``concave=True`` about half the obstacles get a notch cut from their hull (concave corners). Obstacles keep
    at least one grid cell apart (the paper's manual adjustment) and clear of the launch positions.
    """
    rng = np.random.default_rng(seed)
    xmin, ymin, xmax, ymax = boundary
    w = xmax - xmin
    cell = w / grid
    launches = default_launches(boundary, robot_radius)
    inner = box(xmin + cell, ymin + cell, xmax - cell, ymax - cell)
    n = int(rng.integers(3, 7))
    placed: list[Polygon] = []
    for _ in range(4000):
        if len(placed) == n:
            break
        pts = rng.normal(size=(int(rng.integers(6, 14)), 2)) * rng.uniform(0.5, 1.5, size=2)
        hull = shapely.MultiPoint(pts).convex_hull
        if not isinstance(hull, Polygon):
            continue
        size = rng.uniform(0.12, 0.3) * w
        bx0, by0, bx1, by1 = hull.bounds
        scale = size / max(bx1 - bx0, by1 - by0)
        hull = shapely.affinity.scale(hull, scale, scale, origin=(0, 0))
        if concave and rng.random() < 0.5:
            c = np.asarray(hull.centroid.coords[0])
            ang = rng.uniform(0, 2 * np.pi)
            half = rng.uniform(0.2, 0.4)
            far = [c + 2 * size * np.array([math.cos(ang + k * half), math.sin(ang + k * half)]) for k in (-1, 1)]
            notch = Polygon([c, far[0], far[1]])  # a V-shaped wedge from the centroid outwards
            cut = hull.difference(notch)
            if isinstance(cut, Polygon) and cut.area > 0.6 * hull.area:
                hull = shapely.simplify(cut, 1e-6)
        bx0, by0, bx1, by1 = hull.bounds
        x = rng.uniform(xmin - bx0, xmax - bx1)
        y = rng.uniform(ymin + 0.15 * (ymax - ymin) - by0, ymax - by1)
        cand = shapely.affinity.translate(hull, x, y)
        if _clear_of(cand, placed, cell, launches, 4 * robot_radius + cell, inner):
            placed.append(cand)
    obstacles = [np.asarray(orient(p, sign=-1.0).exterior.coords)[:-1] for p in placed]
    return Environment(obstacles, boundary, launches, robot_radius, robot_length, friction)
