"""The ``jitosho`` preset against the original (Julia/OSQP) planar simulator's rollouts (assets/vine/julia_rollouts)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from softsnake.io.vine_data import read_julia_rollout, read_rects
from softsnake.robots.vine import VineConfig
from softsnake.robots.vine_sim import VineSim


def rollout_rects(
    rects: np.ndarray,
    seconds: float,
    *,
    config: VineConfig | None = None,
    worlds: int = 1,
    headings=None,
    device: str = "cpu",
    circles=None,
) -> tuple[np.ndarray, np.ndarray, VineSim]:
    """Roll the vine out among ``rects`` (N, 4) [m] (and ``circles`` (M, 3) [m]) for ``seconds``; returns t (T,),
    q (T, worlds, bodies, 3), sim."""
    cfg = config or VineConfig.preset_config("jitosho")
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    sim = VineSim(cfg, rects=rects, circles=circles, worlds=worlds, headings=headings, device=device)
    steps = int(round(seconds / cfg.dt))
    t, q = sim.rollout(steps)
    return t, q, sim


@dataclass
class ReferenceComparison:
    mean_body_error: float  # [m] mean over steps and bodies of |p_sim − p_ref|
    final_tip_error: float  # [m]
    max_body_error: float  # [m]
    per_step: np.ndarray  # (T,) mean body error per step [m]
    steps: int


def compare_to_reference(q_sim: np.ndarray, q_ref: np.ndarray) -> ReferenceComparison:
    """Errors of body positions (T, B, 3) against the reference (same body order; row 0 = initial state)."""
    T = min(len(q_sim), len(q_ref))
    if q_sim.shape[1:] != q_ref.shape[1:]:
        raise ValueError(f"simulated bodies {q_sim.shape[1:]} do not match the reference {q_ref.shape[1:]}")
    e = np.linalg.norm(q_sim[:T, :, :2] - q_ref[:T, :, :2], axis=2)
    return ReferenceComparison(float(e.mean()), float(e[-1, -1]), float(e.max()), e.mean(axis=1), T - 1)


def julia_case(
    rects_path, csv_path, *, seconds: float | None = None, config: VineConfig | None = None
) -> tuple[ReferenceComparison, np.ndarray, np.ndarray, VineSim]:
    """Run the jitosho preset on a reference scene and compare; returns (comparison, t, q_sim (T, B, 3), sim)."""
    rects = read_rects(rects_path)
    q_ref, _ = read_julia_rollout(csv_path)
    cfg = config or VineConfig.preset_config("jitosho")
    if q_ref.shape[1] != 2 * cfg.links:
        raise ValueError(f"reference has {q_ref.shape[1]} bodies, the config {2 * cfg.links}")
    secs = (len(q_ref) - 1) * cfg.dt if seconds is None else seconds
    t, q, sim = rollout_rects(rects, secs, config=cfg)
    return compare_to_reference(q[:, 0], q_ref), t, q[:, 0], sim
