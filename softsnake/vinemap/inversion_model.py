"""Data and small numerics of the stream inversion (softsnake/vinemap/inversion.py): the kinematic modes and their
invariants, the candidate explanations, the wall estimates, golden-section search and stream smoothing."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .geometry2d import unit


def _golden_section_min(f, a: float, b: float, iterations: int = 60) -> float:
    """Minimiser of a unimodal ``f`` on [a, b] by golden-section search (the bracket shrinks by 0.618 per step)."""
    gr = (math.sqrt(5) - 1) / 2
    c1, c2 = b - gr * (b - a), a + gr * (b - a)
    f1, f2 = f(c1), f(c2)
    for _ in range(iterations):
        if f1 < f2:
            b, c2, f2 = c2, c1, f1
            c1 = b - gr * (b - a)
            f1 = f(c1)
        else:
            a, c1, f1 = c1, c2, f2
            c2 = a + gr * (b - a)
            f2 = f(c2)
    return 0.5 * (a + b)


@dataclass
class WallEstimate:
    """One recovered wall: end points (2, 2) [m], the contact points behind it, the pivots used and the kinematics
    identified along it (``"pivot"``, ``"wrap"``, ``"pivot_at_turn"``, ``"rigid_rotation"``, ``"friction_locked"``)."""

    segment: np.ndarray
    points: np.ndarray
    pivots: list[np.ndarray]
    modes: list[str] = field(default_factory=list)


def _smooth(x: np.ndarray, k: int) -> np.ndarray:
    """Moving average over ``k`` samples (a local straight-line fit); within ``k // 2`` of the ends, the straight
    line fitted to the first / last ``k`` samples, so the ends are neither biased by a trend nor left unsmoothed."""
    if k <= 1 or len(x) < k:
        return x
    pad = k // 2
    out = np.convolve(x, np.ones(k) / k, mode="same")
    t = np.arange(k, dtype=float)
    for sl, idx in ((slice(0, k), np.arange(pad)), (slice(len(x) - k, len(x)), np.arange(k - pad, k))):
        c = np.polyfit(t, x[sl], 1)
        out[sl][idx] = np.polyval(c, t[idx])
    return out


_TOL0 = 1e-7  # [m] consistency tolerance of the kinematic invariants for noise-free streams


@dataclass(eq=False)
class _Mode:
    """Kinematics of the moving part of the robot while its tip touches a wall.

    ``S``: straight tip segment pivoting about ``Q`` (Eqs. 17, 22); ``R``: the turned robot rotating rigidly about
    ``Q`` with the turn at arclength ``arcT`` (positive/negative pivot, Eqs. 23-25); ``F``: friction-locked, tip
    pinned at ``Co`` while the turn point moves on ``|T - Q| = l_b`` (Eqs. 26-29). ``phi`` below is the heading of the
    tip segment, ``theta`` the collision angle, ``thW = phi + theta`` the wall direction (Eq. 21).
    """

    kind: str
    Q: np.ndarray
    arcQ: float
    arcT: float = 0.0
    tt: float = 0.0
    Co: np.ndarray | None = None

    @property
    def lb(self) -> float:
        return self.arcT - self.arcQ

    def g(self, L, th):
        """Distance from ``Q`` to the wall line, from one sample (constant while the mode holds)."""
        if self.kind == "S":
            return (L - self.arcQ) * np.sin(th)
        return self.lb * np.sin(th + self.tt) + (L - self.arcT) * np.sin(th)

    def dg(self, L, th):
        if self.kind == "S":
            return (L - self.arcQ) * np.cos(th)
        return self.lb * np.cos(th + self.tt) + (L - self.arcT) * np.cos(th)

    def turn_point(self, phi: float) -> np.ndarray:
        return self.Q + self.lb * unit(phi - self.tt)

    def tips(self, L, th, thW: float) -> np.ndarray:
        L = np.atleast_1d(np.asarray(L, float))
        phi = thW - np.atleast_1d(np.asarray(th, float))
        u = np.stack([np.cos(phi), np.sin(phi)], axis=1)
        if self.kind == "F":
            return np.repeat(self.Co[None, :], len(L), axis=0)
        if self.kind == "S":
            return self.Q + (L - self.arcQ)[:, None] * u
        v = np.stack([np.cos(phi - self.tt), np.sin(phi - self.tt)], axis=1)
        return self.Q + self.lb * v + (L - self.arcT)[:, None] * u

    def theta_at(self, L: float, d: float, ref: float) -> float:
        """Collision angle at length ``L`` for which the invariant equals ``d`` (branch nearest ``ref``)."""
        if self.kind == "S":
            ell = L - self.arcQ
            if ell <= 1e-12:
                return ref
            a = math.asin(min(max(d / ell, -1.0), 1.0))
            return a if abs(a - ref) <= abs(math.pi - a - ref) else math.pi - a
        if self.kind == "F":
            return ref
        t = ref
        for _ in range(30):
            f = float(self.g(L, t)) - d
            df = float(self.dg(L, t))
            if abs(df) < 1e-12:
                break
            step = max(min(f / df, 0.2), -0.2)
            t -= step
            if abs(step) < 1e-14:
                break
        return t if abs(t - ref) < 0.5 else ref


@dataclass(eq=False)
class _Hyp:
    """A candidate explanation of the samples from index ``j`` on: the mode, its wall and how long it holds."""

    mode: _Mode
    n: int  # samples consistent with the hypothesis
    d: float  # the mode's invariant (distance from Q to the wall line)
    prior: int  # tie-break rank (lower first)
    new_wall: bool  # whether the hypothesis starts a new wall estimate
    wall: tuple | None = None  # (thW, Co) for a new wall; None: keep the current wall
    pivot: np.ndarray | None = None  # a new fixed pivot (wrapped corner / frozen turn) for the report
    turn_frozen: bool = False
    rms: float = 0.0

    def label(self) -> str:
        if self.mode.kind == "F":
            return "friction_locked"
        if self.mode.kind == "R":
            return "rigid_rotation"
        if self.turn_frozen:
            return "pivot_at_turn"
        return "wrap" if (self.pivot is not None and not self.new_wall) else "pivot"
