"""Readers of the vine-robot reference data (rectangle scenes, Julia rollouts, the wall-growth fit, video deployments).

Every reader validates its input and raises ValueError naming the file and what is wrong with it."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .arrays import read_npy, read_npz

INCH = 0.0254  # [m]


def _read_rows(path, what: str, fields: str, positive: tuple, label: str, unit: float) -> np.ndarray:
    """Rows of ``len(fields.split())`` numbers per line (``#`` comments and blank lines skipped), columns ``positive``
    (called ``label`` in errors) > 0, scaled by ``unit``; ValueError naming the file and line otherwise."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"cannot read {what} file {str(p)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} file {str(p)!r} is not text ({exc.reason} at byte {exc.start})") from None
    names = fields.split()
    rows = []
    for ln, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").split()
        if len(parts) != len(names):
            raise ValueError(f"{p}:{ln}: expected {len(names)} numbers '{fields}', got {len(parts)}: {line!r}")
        try:
            vals = [float(v) for v in parts]
        except ValueError:
            raise ValueError(f"{p}:{ln}: not a number in {line!r}") from None
        if not np.all(np.isfinite(vals)):
            raise ValueError(f"{p}:{ln}: non-finite value in {line!r}")
        bad = [f"{names[i]}={vals[i]}" for i in positive if vals[i] <= 0]
        if bad:
            raise ValueError(f"{p}:{ln}: {label} must be > 0, got {', '.join(bad)}")
        rows.append(vals)
    if not rows:
        raise ValueError(f"{what} file {str(p)!r} has no {what}")
    return np.asarray(rows) * unit


def read_rects(path, *, unit: float = INCH) -> np.ndarray:
    """Rectangles of a ``.rects`` file: one ``x y w h`` per line (lower-left corner, width, height), in ``unit`` metres
    (default inches, as the Julia scenes). Returns (N, 4) [m]. Blank lines and ``#`` comments are skipped."""
    return _read_rows(path, "rectangles", "x y w h", (2, 3), "width and height", unit)


def read_circles(path, *, unit: float = INCH) -> np.ndarray:
    """Circles of a ``.circles`` file: one ``x y r`` per line (centre, radius > 0), in ``unit`` metres (default
    inches, like ``.rects``). Returns (N, 3) [m]. Blank lines and ``#`` comments are skipped."""
    return _read_rows(path, "circles", "x y r", (2,), "radius", unit)


def read_julia_rollout(path, *, bodies: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A reference rollout csv, plain or gzip-compressed (``.csv.gz``): a header, then q then v of all bodies per row
    [m, rad, m/s, rad/s]. Returns q (T, B, 3) and v (T, B, 3); row 0 is the initial state."""
    p = Path(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter(
                "error", UserWarning
            )  # NumPy warns (and returns an empty array) for a file without rows
            data = np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)
    except OSError as exc:
        raise ValueError(f"cannot read rollout csv {str(p)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"rollout csv {str(p)!r} is not text ({exc.reason} at byte {exc.start})") from None
    except (ValueError, EOFError, UserWarning) as exc:
        if isinstance(exc, UserWarning) or "no data" in str(exc):
            raise ValueError(f"rollout csv {str(p)!r} has no rows after its header") from None
        raise ValueError(f"rollout csv {str(p)!r} is not rows of comma-separated numbers: {exc}") from None
    if data.shape[1] % 6 != 0:
        raise ValueError(
            f"rollout csv {str(p)!r}: {data.shape[1]} columns is not 6 per body (x, y, θ, then velocities)"
        )
    B = data.shape[1] // 6
    if bodies is not None and B != bodies:
        raise ValueError(f"rollout csv {str(p)!r} has {B} bodies, expected {bodies}")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"rollout csv {str(p)!r} has non-finite values")
    return data[:, : 3 * B].reshape(-1, B, 3), data[:, 3 * B :].reshape(-1, B, 3)


@dataclass
class WallFitData:
    """The wall-growth experiment (Jitosho et al. 2021, Fig. 7), converted to metres."""

    points: np.ndarray  # (8, 21, 2) [m] robot centreline per frame, base → tip
    growth_rate: np.ndarray  # (steps, 5) [m/s] per prismatic joint and step
    normal_impulse_guess: np.ndarray


def read_wall_fit(path) -> WallFitData:
    """The wall-growth data of ``assets/vine/jitosho_wall_fit.npz`` (arrays ``x_mm``, ``y_mm``, ``growth_rate_mm_s``,
    optional ``normal_impulse_guess``; see that folder's README), converted to metres."""
    p = Path(path)
    z = read_npz(p, "wall-fit data")
    missing = [k for k in ("x_mm", "y_mm", "growth_rate_mm_s") if k not in z]
    if missing:
        raise ValueError(
            f"cannot read wall-fit data {str(p)!r}: it lacks {', '.join(missing)} (needs x_mm, y_mm, growth_rate_mm_s)"
        )
    try:
        x, y, g = (np.asarray(z[k], float) for k in ("x_mm", "y_mm", "growth_rate_mm_s"))
        n = np.asarray(z.get("normal_impulse_guess", np.zeros(0)), float)
    except (TypeError, ValueError):
        raise ValueError(f"wall-fit data {str(p)!r}: x_mm, y_mm and growth_rate_mm_s must be numeric arrays") from None
    if x.shape != y.shape or x.ndim != 2 or x.shape[1] < 2 or g.ndim != 2:
        raise ValueError(
            f"wall-fit data {str(p)!r}: x_mm {x.shape} and y_mm {y.shape} must be equal (frames, points); growth "
            f"{g.shape} (steps, joints)"
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and np.all(np.isfinite(g))):
        raise ValueError(f"wall-fit data {str(p)!r} has non-finite values")
    return WallFitData(np.stack([x, y], axis=-1) * 1e-3, g * 1e-3, n)


@dataclass
class VideoDeployment:
    """A real deployment: skeleton points per frame and wall segments, all in pixels (origin at the robot base,
    x along the base line)."""

    name: str
    frames: list  # T arrays (n_t, 2) [px]
    walls: np.ndarray  # (K−1, 2, 2) [px] walls (row 0 of walls.npy, the base line, is kept in base_line)
    base_line: np.ndarray  # (2, 2) [px]

    @property
    def frame_count(self) -> int:
        return len(self.frames)

    def lengths(self) -> np.ndarray:
        """Polyline length of each frame's centreline [px]."""
        return np.array(
            [np.sum(np.linalg.norm(np.diff(f, axis=0), axis=1)) if len(f) > 1 else 0.0 for f in self.frames]
        )


def read_video(directory) -> VideoDeployment:
    """A video folder: ``points`` (T, 1+P, 2) with the valid count in ``[t, 0, 0]`` and ``walls`` (K, 2, 2), either as
    ``points.npy`` and ``walls.npy`` or compressed in one ``deployment.npz`` (``assets/vine/real_video``)."""
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"video directory {str(d)!r} does not exist")
    if (d / "deployment.npz").exists():
        arrays = read_npz(d / "deployment.npz", "video data")
        if "points" not in arrays or "walls" not in arrays:
            raise ValueError(f"video data {str(d / 'deployment.npz')!r} needs the arrays points and walls")
        pts, walls = arrays["points"], arrays["walls"]
    else:
        pts, walls = read_npy(d / "points.npy", "video points"), read_npy(d / "walls.npy", "video walls")
    if pts.ndim != 3 or pts.shape[2] != 2 or pts.shape[1] < 2 or pts.shape[0] < 2:
        raise ValueError(f"{d}/points.npy must have shape (frames ≥ 2, 1+P, 2), got {pts.shape}")
    if walls.ndim != 3 or walls.shape[1:] != (2, 2) or walls.shape[0] < 1:
        raise ValueError(f"{d}/walls.npy must have shape (K ≥ 1, 2, 2), got {walls.shape}")
    if not (np.all(np.isfinite(pts)) and np.all(np.isfinite(walls))):
        raise ValueError(f"non-finite values in {str(d)!r}")
    frames = []
    P = pts.shape[1] - 1
    for t in range(pts.shape[0]):
        n = pts[t, 0, 0]
        if n != int(n) or not (0 <= n <= P):
            raise ValueError(f"{d}/points.npy frame {t}: point count {n!r} is not an integer in [0, {P}]")
        frames.append(np.asarray(pts[t, 1 : 1 + int(n)], dtype=np.float64))
    return VideoDeployment(
        d.name, frames, np.asarray(walls[1:], dtype=np.float64), np.asarray(walls[0], dtype=np.float64)
    )
