"""Proprioceptive sensing for vine robots (Fuentes et al. 2025, Section 2.4): the forward sensor streams
(:mod:`.streams`), their inversion to walls (:mod:`.inversion`) and the round trip that scores one against the
other.
"""

from __future__ import annotations

import math

import numpy as np

from .inversion import WallEstimate, invert_streams, wall_errors
from .streams import sensor_streams, true_wall_runs

__all__ = [
    "sensor_streams",
    "invert_streams",
    "WallEstimate",
    "wall_errors",
    "true_wall_runs",
    "round_trip_actions",
    "round_trip",
]


def round_trip_actions(env, n_angles: int = 12, fractions=(0.2, 0.4, 0.6), turns_deg=(20, 40, 60)):
    """Evaluation actions for the inversion: every launch point x ``n_angles`` launch angles over (0, 180) deg x
    (straight + a turn at each fraction of the length with each of +-``turns_deg``), the paper's turning action
    space layout (Section 4.1.1)."""
    from .simulator import Action

    out = []
    for p in env.launches:
        for a in np.linspace(0.1, math.pi - 0.1, n_angles):
            out.append(Action(tuple(p), float(a), env.robot_length))
            for f in fractions:
                for t in turns_deg:
                    for sgn in (-1, 1):
                        out.append(Action(tuple(p), float(a), env.robot_length, f, math.radians(sgn * t)))
    return out


def round_trip(
    env,
    action,
    *,
    step: float = 0.001,
    events: bool = True,
    angle_noise: float = 0.0,
    length_noise: float = 0.0,
    rng: np.random.Generator | None = None,
):
    """Simulate ``action``, sense the deployment and invert the streams.

    Returns ``(deployment, errors)``: the per-wall Hausdorff errors [m] (:func:`wall_errors`), an empty array when the
    deployment touched no wall, or ``None`` when the number of recovered walls differs from the true one.
    """
    from .simulator import simulate

    dep = simulate(env.scene(), action)
    truth = true_wall_runs(dep)
    if not truth:
        return dep, np.zeros(0)
    L, th = sensor_streams(dep, step, angle_noise=angle_noise, length_noise=length_noise, rng=rng, events=events)
    turn = action.turn_fraction * action.length if action.has_turn else None
    est = invert_streams(
        L,
        th,
        action.launch,
        action.angle,
        turn_length=turn,
        turn_angle=action.turn_angle,
        angle_noise=angle_noise,
        length_noise=length_noise,
        friction=env.friction,
        radius=env.robot_radius,
        event_samples=events,
    )
    try:
        return dep, wall_errors(est, truth)
    except ValueError:
        return dep, None
