"""Proprioceptive sensing for vine robots (Fuentes et al. 2025, Section 2.4).

Forward: :func:`sensor_streams` turns a simulated deployment into the two streams a tip sensor gives, robot length
``L`` [m] and tip collision angle ``theta_c`` [rad] (counter-clockwise from the growth direction to the wall tangent,
a line angle in ``[0, pi)``, ``NaN`` when the tip touches nothing), sampled every ``step`` metres of growth, plus (by
default) the samples an event-triggered sensor logs when the contact state changes (onset, jump to another wall,
loss). Every phase the simulator records is synthesised, friction-locked episodes (Eqs. 26-29) included.

:func:`true_wall_runs` gives the contacted wall pieces a deployment really touched (the reference the inversion
is scored against).
"""

from __future__ import annotations

import math

import numpy as np

from .geometry2d import circle_intersection_nearest, line_circle_param, norm, unit

__all__ = ["sensor_streams", "true_wall_runs"]


def _ccw_line_angle(d, w) -> float:
    """Counter-clockwise angle from direction ``d`` to the line along ``w``, in ``[0, pi)``."""
    a = math.atan2(d[0] * w[1] - d[1] * w[0], d[0] * w[0] + d[1] * w[1])
    return a % math.pi


def _post_turn_length(R: float, lb: float, tt: float) -> float:
    """Post-turn length ``l_a`` [m] with ``|l_b + l_a e^{i tt}| = R`` (tip at distance ``R`` from the pivot)."""
    return -lb * math.cos(tt) + math.sqrt(max(R * R - (lb * math.sin(tt)) ** 2, 0.0))


def _locked_turn_point(B, lb: float, tip, la: float, T_ref):
    """Turn point of a friction-locked robot: on ``|T - B| = lb`` (Eq. 26) at distance ``la`` from the pinned tip,
    the circle intersection nearer ``T_ref``; ``None`` if the circles do not meet."""
    return circle_intersection_nearest(B, lb, tip, la, T_ref, tol=1e-12 * max(lb * lb, 1e-30))


def _phase_wall(ph):
    """(point, unit direction) of the wall line a contact phase presses on, or ``None`` for free growth."""
    if ph["kind"] == "free":
        return None
    if ph["kind"] == "friction_locked":
        return ph["tip"], ph["w"] / norm(ph["w"])
    w = ph["h2"] - ph["h"]
    lw = norm(w)
    return (ph["h"], w / lw) if lw >= 1e-12 else None


def _same_line(a, b) -> bool:
    if a is None or b is None:
        return False
    (p, u), (q, v) = a, b
    return abs(u[0] * v[1] - u[1] * v[0]) < 1e-9 and abs(u[0] * (q - p)[1] - u[1] * (q - p)[0]) < 1e-9


def _phase_sampler(ph):
    """``(a0, a1, theta(L))`` of a contact phase: its length interval [m] and the collision angle along it."""
    P = ph["pivot"]
    if ph["kind"] == "friction_locked":
        lb, tip, w = ph["lb"], ph["tip"], ph["w"] / norm(ph["w"])
        arcT = ph["arc"] + lb
        state = {"T": ph["T0"]}

        def theta(L):
            T = _locked_turn_point(P, lb, tip, L - arcT, state["T"])
            if T is None:
                return None
            state["T"] = T
            return _ccw_line_angle(tip - T, w)

        return arcT + ph["la0"], arcT + ph["la1"], theta
    h, h2 = ph["h"], ph["h2"]
    w = (h2 - h) / norm(h2 - h)
    arc = ph["arc"]
    if ph["kind"] == "slide":

        def theta(L):
            r = line_circle_param(h, w, P, L - arc)
            tip = h + (r[1] if r else 0.0) * w
            return _ccw_line_angle((tip - P) / norm(tip - P), w)

        return arc + norm(h - P), arc + norm(h2 - P), theta
    # Rigid rotation of the turned robot about P (positive/negative pivot): the tip is P + l_b u(a) + l_a u(a + tt)
    # on the wall line.
    lb, tt = ph["lb"], ph["tt"]

    def theta(L):
        la = L - arc - lb
        z = complex(lb, 0.0) + la * complex(math.cos(tt), math.sin(tt))  # tip relative to P, frame a = 0
        r = line_circle_param(h, w, P, abs(z))
        tip = h + (r[1] if r else 0.0) * w
        a = math.atan2(*(tip - P)[::-1]) - math.atan2(z.imag, z.real)  # pre-turn direction
        return _ccw_line_angle(unit(a + tt), w)  # post-turn heading to the wall

    return (
        arc + lb + _post_turn_length(norm(h - P), lb, tt),
        arc + lb + _post_turn_length(norm(h2 - P), lb, tt),
        theta,
    )


def sensor_streams(
    dep,
    step: float = 0.001,
    *,
    action=None,
    angle_noise: float = 0.0,
    length_noise: float = 0.0,
    rng: np.random.Generator | None = None,
    events: bool = True,
):
    """Length and collision-angle streams of a deployment: ``(L, theta_c)`` arrays [m], [rad].

    Samples every ``step`` metres of growth. All phases the simulator records are synthesised: free growth (NaN),
    sliding about a fixed pivot, rigid rotation of a turned robot (positive/negative pivot) and friction-locked
    episodes (tip pinned, turn point moving on the circle of Eq. 26; Eqs. 26-29). ``action`` is accepted for
    backward compatibility and not needed (the simulator records the turn geometry of each phase).

    ``events=True`` adds the samples an event-triggered tip sensor logs when its contact state changes: at contact
    onset, at a jump of the collision angle (the tip passes onto another wall) and at contact loss. Without them the
    instant of these events is only known to within one ``step``, which with a pivot a few millimetres from the tip
    leaves the wall direction undetermined by several degrees (see ``docs/vinemap.md``).
    ``angle_noise`` [rad] and ``length_noise`` [m] add independent Gaussian noise to each sample.
    """
    Ls, th = [], []

    def add(L, t):
        if Ls and L <= Ls[-1] + 1e-12:
            return  # re-growth records after a wrap repeat lengths already sensed
        Ls.append(float(L))
        th.append(t)

    phases = dep.phases
    prev_wall = None
    for k, ph in enumerate(phases):
        if ph["kind"] == "free":
            a0, a1 = ph["arc"] + ph["t0"], ph["arc"] + ph["t1"]
            for L in np.arange(math.ceil(a0 / step - 1e-9) * step, a1 - 1e-12, step):
                add(L, np.nan)
            prev_wall = None
            continue
        wall = _phase_wall(ph)
        if wall is None or (ph["kind"] == "friction_locked" and ph["la1"] <= ph["la0"]):
            continue
        a0, a1, theta = _phase_sampler(ph)
        Lq = list(np.arange(math.ceil(a0 / step - 1e-9) * step, a1 + 1e-12, step))
        if events and not _same_line(wall, prev_wall):
            Lq = [a0] + [L for L in Lq if L > a0 + 1e-12]
        nxt = next((q for q in phases[k + 1 :] if q["kind"] == "free" or _phase_wall(q) is not None), None)
        if events and (nxt is None or nxt["kind"] == "free") and (not Lq or a1 > Lq[-1] + 1e-12):
            Lq.append(a1)
        for L in Lq:
            if Ls and L <= Ls[-1] + 1e-12:
                continue
            t = theta(L)
            if t is None:
                break
            add(L, t)
        prev_wall = wall
    L = np.asarray(Ls)
    t = np.asarray(th)
    if rng is None:
        rng = np.random.default_rng(0)
    if angle_noise > 0:
        t = t + rng.normal(0.0, angle_noise, t.shape)
    if length_noise > 0:
        L = L + rng.normal(0.0, length_noise, L.shape)
    return L, t


def true_wall_runs(dep) -> list[np.ndarray]:
    """The deployment's contacted wall pieces with consecutive pieces on one line merged (one per wall estimate).

    A friction-locked episode contributes its pinned contact point (a zero-length piece on the locked wall line),
    merged with the slide that follows it on the same wall.
    """
    out, dirs = [], []
    for ph in dep.phases:
        if ph["kind"] in ("slide", "turn_slide"):
            if norm(ph["h2"] - ph["h"]) < 1e-12:
                continue
            seg = np.array([ph["h"], ph["h2"]])
            d1 = (seg[1] - seg[0]) / norm(seg[1] - seg[0])
        elif ph["kind"] == "friction_locked" and ph["la1"] > ph["la0"]:
            seg = np.array([ph["tip"], ph["tip"]])
            d1 = ph["w"] / norm(ph["w"])
        else:
            continue
        if out and norm(out[-1][1] - seg[0]) < 1e-9 and abs(dirs[-1][0] * d1[1] - dirs[-1][1] * d1[0]) < 1e-9:
            out[-1] = np.array([out[-1][0], seg[1]])
            continue
        out.append(seg)
        dirs.append(d1)
    return out
