"""Quasi-static curvature vs pressure (paper Sec. VI-A, Fig. 5): one soft link between two wheeled carriages, one
world per pressure, pressure applied without latency and held until the link settles."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim


@dataclass
class CurvatureResult:
    pressure_psi: np.ndarray  # (k,) signed pressure [psi]
    curvature_per_m: np.ndarray  # (k,) settled link curvature [1/m]
    link_length: float  # [m]
    #: per pressure, |mean κ of the last averaging window − mean κ of the window before| [1/m]: how settled the value is
    settle_change_per_m: np.ndarray | None = None

    @property
    def settled_to(self) -> float:
        """Largest window-to-window change of the averaged curvature over the sweep [1/m]."""
        return float(np.max(self.settle_change_per_m)) if self.settle_change_per_m is not None else float("nan")

    def bending_angle_deg(self, pressure_psi: float) -> float:
        """Bending angle κ·L [deg] at a pressure (linear interpolation of the sweep)."""
        return float(np.degrees(np.interp(pressure_psi, self.pressure_psi, self.curvature_per_m) * self.link_length))

    def linear_fit(self, low: float, high: float) -> tuple[float, float, float]:
        """Least-squares line κ = a·p + b over low ≤ p ≤ high [psi]: (a [1/(m·psi)], b [1/m], R²)."""
        sel = (self.pressure_psi >= low - 1e-9) & (self.pressure_psi <= high + 1e-9)
        p, k = self.pressure_psi[sel], self.curvature_per_m[sel]
        a, b = np.polyfit(p, k, 1)
        ss_res = float(np.sum((k - (a * p + b)) ** 2))
        ss_tot = float(np.sum((k - k.mean()) ** 2))
        return float(a), float(b), 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0


def curvature_sweep(
    pressures_psi,
    *,
    config: SnakeConfig | None = None,
    device: str = "cpu",
    ramp_seconds: float = 0.5,
    settle_seconds: float = 5.0,
    average_seconds: float = 0.25,
    progress=None,
) -> CurvatureResult:
    """Settled curvature of one link for each signed pressure [psi] (|p| may exceed p_max here, as in Fig. 5).

    The pressure (latency off) rises linearly over ``ramp_seconds`` [s] (a quasi-static load; a jump of several psi
    in one step is a violent impact) and is held until ``settle_seconds``; the curvature is averaged over the last
    ``average_seconds``; the window before it is averaged too, and their difference is reported
    (``CurvatureResult.settle_change_per_m``) as the check that the static value has settled. The default 5 s: at the
    real-time budget the held link keeps relaxing for ~2 s, and 1.5 s holds give curvatures up to ~6 % above it
    (docs/snake.md, "Curvature vs pressure").
    ``progress``: optional callable(frames_done, frames_total)."""
    p = np.asarray(pressures_psi, dtype=np.float64).reshape(-1)
    if p.size == 0 or not np.all(np.isfinite(p)):
        raise ValueError("pressures must be a non-empty list of finite numbers [psi]")
    base = config or SnakeConfig()
    top = float(np.max(np.abs(p)))
    pneu = dataclasses.replace(
        base.pneumatics,
        latency=False,
        p_max_psi=max(base.pneumatics.p_max_psi, top),
        supply_psi=max(base.pneumatics.supply_psi, top),
    )
    cfg = dataclasses.replace(base, links=1, pneumatics=pneu)
    sim = SnakeSim(worlds=p.size, device=device, config=cfg)
    frames = int(round(settle_seconds / cfg.frame_dt))
    avg = max(1, int(round(average_seconds / cfg.frame_dt)))
    acc = np.zeros(p.size)
    before = np.zeros(p.size)
    for k in range(frames):
        sim.set_pressure_targets(p[:, None] * min(1.0, sim.time / ramp_seconds if ramp_seconds > 0 else 1.0))
        sim.step()
        if k >= frames - avg:
            acc += sim.curvatures()[:, 0]
        elif k >= frames - 2 * avg:
            before += sim.curvatures()[:, 0]
        if progress is not None:
            progress(k + 1, frames)
    return CurvatureResult(p, acc / avg, cfg.link_length, np.abs(acc - before) / avg)
