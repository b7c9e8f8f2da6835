"""Chamber step responses (paper Sec. VI-B, Fig. 6): one link, inflation from 0 to 60–100 % of p_max and deflation
back to 0, through the latency model (Eqs. 10–12), with the link curvature that follows."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from softsnake.io.files import save_figure_atomic
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim


@dataclass
class StepResponse:
    t: np.ndarray  # (T,) time since the step [s]
    levels_psi: np.ndarray  # (k,) step targets [psi]
    inflate_pressure: np.ndarray  # (T, k) [psi]
    inflate_curvature: np.ndarray  # (T, k) [1/m]
    deflate_pressure: np.ndarray  # (T, k) [psi]
    deflate_curvature: np.ndarray  # (T, k) [1/m]

    def rise_time(self, fraction: float = 0.9) -> np.ndarray:
        """Time [s] for each level's pressure to reach ``fraction`` of its target."""
        return np.array(
            [self.t[np.argmax(self.inflate_pressure[:, j] >= fraction * lv)] for j, lv in enumerate(self.levels_psi)]
        )

    def fall_time(self, fraction: float = 0.1) -> np.ndarray:
        """Time [s] for each level's pressure to fall to ``fraction`` of its start."""
        return np.array(
            [self.t[np.argmax(self.deflate_pressure[:, j] <= fraction * lv)] for j, lv in enumerate(self.levels_psi)]
        )


def step_responses(
    fractions=(0.6, 0.7, 0.8, 0.9, 1.0),
    *,
    seconds: float = 1.0,
    config: SnakeConfig | None = None,
    device: str = "cpu",
    progress=None,
) -> StepResponse:
    """Inflate one link (one world per level) from rest to fraction·p_max for ``seconds``, then vent for ``seconds``."""
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.size == 0 or np.any(~np.isfinite(fr)) or np.any(fr <= 0) or np.any(fr > 1):
        raise ValueError(f"fractions must be in (0, 1], got {fractions!r}")
    base = config or SnakeConfig()
    cfg = dataclasses.replace(base, links=1)
    levels = fr * cfg.pneumatics.p_max_psi
    sim = SnakeSim(worlds=fr.size, device=device, config=cfg)
    frames = int(round(seconds / cfg.frame_dt))
    rec = np.zeros((4, frames, fr.size))
    for phase, target in enumerate((levels, np.zeros_like(levels))):
        sim.set_pressure_targets(target[:, None])
        for k in range(frames):
            sim.step()
            rec[2 * phase, k] = sim.pressures()[:, 0]
            rec[2 * phase + 1, k] = sim.curvatures()[:, 0]
            if progress is not None:
                progress(phase * frames + k + 1, 2 * frames)
    t = np.arange(1, frames + 1) * cfg.frame_dt
    return StepResponse(t, levels, rec[0], rec[1], rec[2], rec[3])


def plot_step_responses(r: StepResponse, path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for j, lv in enumerate(r.levels_psi):
        for a, p, k in (
            (ax[0], r.inflate_pressure, r.inflate_curvature),
            (ax[1], r.deflate_pressure, r.deflate_curvature),
        ):
            line = a.plot(r.t, p[:, j], label=f"{lv:.1f} psi")[0]
            scale = lv / max(abs(k[-1 if a is ax[0] else 0, j]), 1e-12)
            a.plot(r.t, k[:, j] * scale, "--", color=line.get_color(), alpha=0.6)
    ax[0].set_title("inflation (solid: pressure; dashed: curvature, scaled to the pressure)")
    ax[1].set_title("deflation")
    for a in ax:
        a.set_xlabel("t [s]")
        a.grid(alpha=0.3)
    ax[0].set_ylabel("pressure [psi]")
    ax[0].legend(fontsize=8)
    fig.tight_layout()
    out = save_figure_atomic(fig, path, dpi=110)
    plt.close(fig)
    return out
