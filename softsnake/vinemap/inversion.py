"""Inversion of the proprioceptive sensor streams (Fuentes et al. 2025, Section 2.4).

:func:`invert_streams` recovers the walls from the streams plus the robot's starting shape only (launch
point and angle, turn arclength and angle). It segments each contact run into kinematic modes and picks, at each
event, the explanation the samples support:

* the modes have invariants that need no knowledge of the wall direction: sliding about a fixed pivot ``Q``
  (Eqs. 17, 22): ``(L - arc_Q) sin theta_c`` = distance from ``Q`` to the wall; rigid rotation of the turned robot
  about ``Q`` (positive/negative pivot, Eqs. 23-25): ``l_b sin(theta_c + theta_T) + l_a sin theta_c``; friction-
  locked (Eqs. 26-29): the pinned tip ``C_o`` and ``|C_o - l_a u(th_W - theta_c) - Q| = l_b``;
* contact onset: ``C_o`` on the free-growth ray (Eqs. 16, 20), ``th_W = heading + theta_c`` (Eq. 21); candidate
  modes: the current pivot, skimmed corners (the body wraps them), pivot-at-turn, rigid rotation about the pivot or
  a corner skimmed before the turn, friction-locked (which also fixes the contact instant and the wall direction);
* inside a contact: a wrap (new pivot on the body, Eqs. 18-19 in general form: the invariant is linear in the new
  pivot's arclength and wall distance, solved by least squares, with a continuity check on ``theta_c``), a convex
  corner of the wall (new wall line, same kinematics or a new morphology), a new contact right after a skim, the end
  of a friction lock (the turn freezes where the lock left it, or the robot rotates with the changed turn angle);
* ties (one or two samples) are broken by looking one event ahead and, if still equal, by the morphology that
  Eqs. 13-15 predict when ``friction`` and ``radius`` are given.

With event samples the noise-free inversion is exact up to round-off. With uniform sampling only, the instants of
onset, corners and contact loss are known to within one sample; where the pivot is a few millimetres from the tip
this leaves the wall direction undetermined by degrees (``docs/vinemap.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .geometry2d import angle_of, line_circle_param, norm, unit, wrap

__all__ = ["invert_streams", "WallEstimate", "wall_errors"]


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


_TOL0 = 1e-7   # [m] consistency tolerance of the kinematic invariants for noise-free streams


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
    n: int                          # samples consistent with the hypothesis
    d: float                        # the mode's invariant (distance from Q to the wall line)
    prior: int                      # tie-break rank (lower first)
    new_wall: bool                  # whether the hypothesis starts a new wall estimate
    wall: tuple | None = None       # (thW, Co) for a new wall; None: keep the current wall
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


class _Inverter:
    def __init__(self, L, theta, launch, launch_angle, turn_length, turn_angle, angle_noise, length_noise, jump,
                 friction, radius, event_samples):
        self.events = bool(event_samples)
        self.L = np.array(L, dtype=float)
        if length_noise > 0 and len(self.L) > 15:
            # the true length grows monotonically and (between event samples) linearly with the sample index:
            # a moving average over the whole stream removes most of the independent per-sample noise
            self.L = _smooth(self.L, 15)
        self.raw = np.array(theta, dtype=float)   # a copy: unwrapped in place below
        self.th = self.raw.copy()
        self.noisy = angle_noise > 0 or length_noise > 0
        self.sa, self.sl = float(angle_noise), float(length_noise)
        self.k = 15 if angle_noise > 0 else 1
        self.win = 10 if self.noisy else 1
        self.jump = jump
        self.friction, self.radius = friction, radius
        self.tt = float(turn_angle)
        self.turn_pending = turn_length is not None and self.tt != 0.0
        self.turn_length = float(turn_length) if turn_length is not None else 0.0
        # the robot before the first contact: straight from the launch point
        self.mode = _Mode("S", np.asarray(launch, float), 0.0)
        self.phi = float(launch_angle)
        self.cands: list[tuple] = []   # skimmed corners: point, arc, side, on post-turn, (position(L), bracket)
        self.walls: list[WallEstimate] = []
        self.flight_arc = 0.0          # arclength where the current free growth started
        self.turning = False           # a formed, still active turn (mode R between contacts)

    # -- helpers ---------------------------------------------------------------------------------------------------
    def tol(self, ell):
        eff = self.sa / math.sqrt(self.k)
        return _TOL0 + 3.0 * (eff * np.maximum(ell, 0.0) + self.sl)

    def prefix(self, gv: np.ndarray, ell: np.ndarray, d: float | None = None):
        """Number of leading samples whose invariant stays at ``d`` (fitted from the first samples if ``None``)."""
        if len(gv) == 0:
            return 0, (d if d is not None else 0.0), 0.0
        tol = self.tol(ell)
        if not self.noisy:
            d = float(gv[0]) if d is None else d
            bad = np.flatnonzero(np.abs(gv - d) > tol)
            n = int(bad[0]) if len(bad) else len(gv)
            return n, d, float(np.sqrt(np.mean((gv[:max(n, 1)] - d) ** 2)))
        w = self.win
        if d is None:
            d = float(np.median(gv[:w]))
        dev = np.abs(gv - d)
        if len(dev) >= w:
            med = np.median(np.lib.stride_tricks.sliding_window_view(dev, w), axis=1)
            med = np.concatenate([med, [np.median(dev[i:]) for i in range(len(dev) - w + 1, len(dev))]])
        else:
            med = np.array([np.median(dev[i:]) for i in range(len(dev))])
        bad = np.flatnonzero(med > tol)
        n = int(bad[0]) if len(bad) else len(gv)
        return n, d, float(np.sqrt(np.mean((gv[:max(n, 1)] - d) ** 2)))

    def ell(self, mode: _Mode, sl):
        return self.L[sl] - mode.arcQ

    def test_mode(self, mode: _Mode, j: int, end: int, d: float | None = None):
        sl = slice(j, end)
        gv = mode.g(self.L[sl], self.th[sl])
        return self.prefix(gv, self.ell(mode, sl), d)

    # -- onset of a contact (Eqs. 16, 20, 21) ----------------------------------------------------------------------
    def source(self):
        """Start point, its arclength and the heading of the free growth."""
        if self.mode.kind == "R":
            return self.mode.turn_point(self.phi), self.mode.arcT, self.phi
        return self.mode.Q, self.mode.arcQ, self.phi

    def onset_hyps(self, j: int, end: int, Lprev: float | None) -> list[_Hyp]:
        """Explanations of a new contact at sample ``j`` from the free-growth state."""
        L, th = self.L, self.th
        Lc = L[j] if (Lprev is None or self.events) else 0.5 * (Lprev + L[j])
        src, arc_src, hf = self.source()
        Co = src + (Lc - arc_src) * unit(hf)
        side = 1 if th[j] % math.pi < math.pi / 2 else -1   # rotation side of a straight slide (Algorithm 2)
        modes = []
        if self.mode.kind == "S":
            modes.append(("S0", _Mode("S", self.mode.Q, self.mode.arcQ), None, False))
            for c in self.cands:
                mode = self.fit_cand(_Mode("S", c[0], c[1]), c, j, end)
                modes.append(("Sc" if c[2] == side else "Sx", mode, mode.Q, False))
        else:
            m = self.mode
            T = m.turn_point(self.phi)
            modes.append(("PaT", _Mode("S", T, m.arcT), T, True))
            modes.append(("R0", _Mode("R", m.Q, m.arcQ, m.arcT, m.tt), None, False))
            for c in self.cands:
                if c[3]:
                    mode = self.fit_cand(_Mode("S", c[0], c[1]), c, j, end)
                    modes.append(("Sla", mode, mode.Q, True))
                elif c[1] < m.arcT - 1e-9:
                    mode = self.fit_cand(_Mode("R", c[0], c[1], m.arcT, m.tt), c, j, end)
                    modes.append(("Rlb", mode, mode.Q, False))
        prior = self.prior_order(modes, th[j], Lc)
        out = []
        for name, mode, piv, frozen in modes:
            n, d, rms = self.test_mode(mode, j, end)
            thc = mode.theta_at(Lc, d, th[j])
            out.append(_Hyp(mode, n, d, prior[name], True, (hf + thc, Co), piv, frozen, rms))
        if self.mode.kind == "R":
            # friction-locked about the pivot, or about a corner skimmed before the turn (the corner becomes B)
            bases = [self.mode] + [mode for name, mode, _, _ in modes if name == "Rlb"]
            for r, base in enumerate(bases):
                fl = self.fit_locked(j, end, lambda Le: src + (Le - arc_src) * unit(hf), hf,
                                     (Lc if self.events or Lprev is None else Lprev, L[j]), base)
                if fl is not None:
                    fl.prior = prior["FL"] + (0 if r == 0 else 0.5)
                    fl.pivot = None if r == 0 else base.Q
                    out.append(fl)
        return out

    def fit_cand(self, mode: _Mode, cand, j: int, end: int) -> _Mode:
        """A skimmed corner as pivot: without event samples its position along the previous wall is only known to
        within one sample; the invariant is linear in the corner's arclength (= the robot length when the tip passed
        it), so fit it from the first samples of the new contact."""
        if self.events or cand[4] is None:
            return mode
        m = min(end - j, 4 if not self.noisy else 30)
        if m < 2:
            return mode
        Li, ti = self.L[j:j + m], self.th[j:j + m]
        if mode.kind == "S":
            A = np.stack([np.sin(ti), np.ones_like(ti)], axis=1)
            y = Li * np.sin(ti)
        else:
            s2 = np.sin(ti + mode.tt)
            A = np.stack([s2, np.ones_like(ti)], axis=1)
            y = mode.arcT * s2 + (Li - mode.arcT) * np.sin(ti)
        sol, *_ = np.linalg.lstsq(A, y, rcond=None)
        lo, hi = cand[4][1]
        arc = float(min(max(sol[0], lo), hi))
        pos = cand[4][0](arc)
        if pos is None:
            return mode
        return _Mode(mode.kind, pos, arc, mode.arcT, mode.tt)

    def prior_order(self, modes, th0: float, Lc: float) -> dict:
        """Tie-break ranks (used only when the samples cannot tell the hypotheses apart), mirroring Algorithms 2-3."""
        names = [m[0] for m in modes]
        rank = {}
        if self.mode.kind == "S":
            order = ["Sc", "S0", "Sx"]
        else:
            morph = None
            m = self.mode
            if self.friction is not None and self.radius is not None and m.lb > 0:
                from .kinematics import classify_turn_morphology
                sig = 1 if m.tt > 0 else -1
                tc = th0 % math.pi if sig > 0 else math.pi - th0 % math.pi
                morph = classify_turn_morphology(tc, abs(m.tt), self.friction, m.lb, max(Lc - m.arcT, 1e-9),
                                                 self.radius)
            if morph == "pivot_at_turn":
                order = ["PaT", "Sla", "R0", "Rlb", "FL"]
            elif morph == "friction_locked":
                order = ["FL", "PaT", "R0", "Rlb", "Sla"]
            else:
                order = ["Sla", "Rlb", "R0", "PaT", "FL"]
        for n in names + ["FL"]:
            rank[n] = order.index(n) if n in order else len(order)
        return rank

    def fit_locked(self, j: int, end: int, tip_of, h_ref: float, bracket, base: _Mode):
        """Friction-locked hypothesis: the tip is pinned at ``tip_of(Lc)`` (contact at length ``Lc`` in ``bracket``)
        while the turn point slides on ``|T - Q| = l_b`` (Eq. 26). Each sample then fixes the wall direction; the
        contact length is the one that makes them agree (Eqs. 27-29 inverted)."""
        L, th = self.L, self.th
        lb = base.lb
        exact = bracket[1] - bracket[0] < 1e-12       # contact instant known (event sample)
        if lb <= 1e-9 or end - j < (1 if exact else 2):
            return None
        m = 1 if exact and not self.noisy else min(end - j, 3 if not self.noisy else 30)
        idx = np.arange(j, j + m)
        la = L[idx] - base.arcT

        def walls(Lc):
            Co = tip_of(Lc)
            D = Co - base.Q
            dD = norm(D)
            if dD < 1e-12:
                return None
            c = (dD * dD + la * la - lb * lb) / (2 * la * dD)
            if np.any(np.abs(c) > 1 + 1e-9):
                return None
            ac = np.arccos(np.clip(c, -1, 1))
            base_a = math.atan2(D[1], D[0])
            out = []
            for sgn in (1, -1):
                psi = base_a + sgn * ac
                if abs(wrap(float(psi[0]) - h_ref)) > 0.6:
                    continue
                out.append(psi + th[idx])
            if not out:
                return None
            return min(out, key=lambda w: abs(wrap(float(w[0] - th[j]) - h_ref)))

        def spread(Lc):
            w = walls(Lc)
            if w is None:
                return 1e9
            w = np.unwrap(w)
            return float(np.std(w)) if not self.noisy else float(np.median(np.abs(w - np.median(w))))

        lo, hi = bracket
        if hi - lo < 1e-12:
            best = lo
        else:
            xs = np.linspace(lo, hi, 21)
            vals = [spread(x) for x in xs]
            k = int(np.argmin(vals))
            a, b = xs[max(k - 1, 0)], xs[min(k + 1, len(xs) - 1)]
            best = _golden_section_min(spread, a, b)
        w = walls(best)
        if w is None:
            return None
        thW = float(np.median(np.unwrap(w)))
        Co = tip_of(best)
        mode = _Mode("F", base.Q, base.arcQ, base.arcT, base.tt, Co)
        n = self.test_locked(mode, thW, j, end)
        if n < (1 if exact else 2):
            return None
        return _Hyp(mode, n, 0.0, 9, True, (thW, Co), None, False, spread(best))

    def fit_locked_same(self, j: int, end: int, thW: float, d_old: float):
        """The rotating robot locks again on the same wall (friction-locked, Eqs. 26-29): the tip stops at the point
        the rigid rotation reached at some length in the last sample interval; fitted from the next samples."""
        m = self.mode
        L, th = self.L, self.th
        if m.kind != "R" or m.lb <= 1e-9 or end - j < 2:
            return []
        mfit = min(end - j, 3 if not self.noisy else 30)
        sl = slice(j, j + mfit)

        def tip(Le):
            return m.tips([Le], [m.theta_at(Le, d_old, th[j - 1])], thW)[0]

        def cost(Le):
            mode = _Mode("F", m.Q, m.arcQ, m.arcT, m.tt, tip(Le))
            r = self.locked_resid(mode, thW, sl)
            return float(np.sum(r * r)) if not self.noisy else float(np.median(np.abs(r)))

        mode = _Mode("F", m.Q, m.arcQ, m.arcT, m.tt, tip(_golden_section_min(cost, float(L[j - 1]), float(L[j]))))
        n = self.test_locked(mode, thW, j, end)
        out = []
        if n >= 2:
            out.append(_Hyp(mode, n, 0.0, 3, False, None, None, False, 0.0))
        # ... or the rotating pre-turn segment wraps a corner V = Q + s u(a) and the tip locks at that instant:
        # per sample, |C_o - l_a u(phi) - V| = l_b - s gives s in closed form; the lock length makes them agree
        # (linear in s: 2 (l_b - P_i.e) s = l_b^2 - |P_i|^2 with P_i = T_i - Q; ill-conditioned right at the lock
        # start, where T_i ~ Q + l_b e, so fitted by least squares over up to 10 samples)
        sl2 = slice(j, j + min(end - j, 10 if not self.noisy else 30))
        la = L[sl2] - m.arcT
        u = np.stack([np.cos(thW - th[sl2]), np.sin(thW - th[sl2])], axis=1)

        def svals(Le):
            Co = tip(Le)
            e = unit(thW - m.theta_at(Le, d_old, th[j - 1]) - m.tt)
            P = Co - la[:, None] * u - m.Q
            A = 2.0 * (m.lb - P @ e)
            B = m.lb ** 2 - np.sum(P * P, axis=1)
            sw = float(A @ B / max(A @ A, 1e-300))
            return sw, Co, e, float(np.sum((A * sw - B) ** 2))

        def cost2(Le):
            return svals(Le)[3]

        best = min((_golden_section_min(cost2, float(L[j - 1]), float(L[j])), float(L[j - 1]), float(L[j])), key=cost2)  # the lock may start at a sample
        sw, Co, e, _ = svals(best)
        if math.isfinite(sw):
            if 1e-9 < sw < m.lb - 1e-9:
                V = m.Q + sw * e
                mode2 = _Mode("F", V, m.arcQ + sw, m.arcT, m.tt, Co)
                n2 = self.test_locked(mode2, thW, j, end)
                if n2 >= 2:
                    out.append(_Hyp(mode2, n2, 0.0, 3.5, False, None, V, False, 0.0))
        return out

    def locked_resid(self, mode: _Mode, thW: float, sl):
        la = self.L[sl] - mode.arcT
        phi = thW - self.th[sl]
        T = mode.Co - la[:, None] * np.stack([np.cos(phi), np.sin(phi)], axis=1)
        return np.hypot(*(T - mode.Q).T) - mode.lb

    def test_locked(self, mode: _Mode, thW: float, j: int, end: int) -> int:
        r = np.abs(self.locked_resid(mode, thW, slice(j, end)))
        n, _, _ = self.prefix(r, self.L[j:end] - mode.arcT, 0.0)
        return n

    # -- events inside a contact -----------------------------------------------------------------------------------
    def kink_hyps(self, j: int, end: int, d_old: float, thW: float, Co) -> list[_Hyp]:
        """Explanations of the first sample ``j`` that the current mode no longer fits."""
        L, th = self.L, self.th
        m = self.mode
        out = []
        Lk = L[j] if self.events else 0.5 * (L[j - 1] + L[j])
        # Wrap (Section 2.4, Eqs. 18-19 in general form): a new fixed pivot V with arclength arcV on the body; on the
        # same wall the invariant is linear in (arcV, c = n.(V - Q)). ``skip = 1``: two wraps within one sample
        # (the sample between them is assigned to the second pivot; the LS fit does not care how many wraps led to
        # the final pivot as long as the wall is the same).
        for skip in ((0,) if self.noisy else (0, 1)):
            j0 = j + skip
            nfit = min(end - j0, 3 if not self.noisy else 40)
            if m.kind not in ("S", "R") or nfit < 2:
                continue
            sl = slice(j0, j0 + nfit)
            Li, ti = L[sl], th[sl]
            variants = ["S"] if m.kind == "S" else ["R", "S"]
            for kind in variants:
                if kind == "S":
                    # (L_i - arcV) sin th_i - c = d_old  ->  L_i sin - d_old = arcV sin + c
                    A = np.stack([np.sin(ti), np.ones_like(ti)], axis=1)
                    y = Li * np.sin(ti) - d_old
                else:
                    # arcT sin(th+tt) - arcV sin(th+tt) + la sin th - c = d_old
                    s2 = np.sin(ti + m.tt)
                    A = np.stack([s2, np.ones_like(ti)], axis=1)
                    y = m.arcT * s2 + (Li - m.arcT) * np.sin(ti) - d_old
                sol, _, rank, sv = np.linalg.lstsq(A, y, rcond=None)
                if rank < 2 or sv[-1] < 1e-9 * sv[0]:
                    continue         # the angle does not change (body along the wall): no pivot information
                arcV, c = float(sol[0]), float(sol[1])
                res = self.wrap_point(kind, arcV, c, L[j0] if skip else Lk, d_old, thW, th[j - 1])
                if res is None:
                    continue
                V, thw = res
                # a wrap keeps the collision angle continuous: the angle at the wrap instant lies between the last
                # consistent sample and the old kinematics extrapolated to this sample
                # (one sample earlier too: right after a short wrap the old invariant drifts by less than the
                # tolerance, so the kink can be flagged one sample late)
                t_hi = m.theta_at(L[j0], d_old, th[j - 1])
                t_lo = m.theta_at(2 * L[j - 1] - L[j], d_old, th[j - 1])
                slack = 1e-6 + 4.0 * self.sa
                if not (min(t_lo, t_hi) - slack <= thw <= max(t_lo, t_hi) + slack):
                    continue
                mode = (_Mode("S", V, arcV) if kind == "S" else _Mode("R", V, arcV, m.arcT, m.tt))
                n, d, rms = self.test_mode(mode, j0, end)
                if skip and n < 2:
                    continue
                out.append(_Hyp(mode, n + skip, d, skip, False, None, V, m.kind == "R" and kind == "S", rms))
        if m.kind == "S" and not self.noisy and not any(q.n >= 2 for q in out):
            # One sample in the new regime (or two events within a sample): the wrap is underdetermined; place it
            # at the middle of the sample interval (a wrap keeps theta continuous, a wall corner makes it jump, so
            # a feasible wrap is preferred).
            Lw = 0.5 * (L[j - 1] + L[j])
            thw = m.theta_at(Lw, d_old, th[j - 1])
            ellj = L[j] - m.arcQ
            den = math.sin(thw) - math.sin(th[j])
            if abs(den) > 1e-15:
                sw = (d_old - ellj * math.sin(th[j])) / den
                if 1e-9 < sw < Lw - m.arcQ:
                    V = m.Q + sw * unit(thW - thw)
                    mode = _Mode("S", V, m.arcQ + sw)
                    out.append(_Hyp(mode, 1, float(mode.g(L[j], th[j])), 0, False, None, V, False, 0.0))
        if m.kind in ("S", "R"):
            # A corner of the wall: same kinematics, new wall line through the tip at the corner.
            thK = m.theta_at(Lk, d_old, th[j - 1])
            phiK = thW - thK
            K = m.tips([Lk], [thK], thW)[0]
            cand = [("C0", _Mode(m.kind, m.Q, m.arcQ, m.arcT, m.tt), None, False)]
            if m.kind == "R":
                TK = m.turn_point(phiK)
                cand.append(("CPaT", _Mode("S", TK, m.arcT), TK, True))
            for r, (name, mode, piv, frozen) in enumerate(cand):
                n, d, rms = self.test_mode(mode, j, end)
                thK2 = mode.theta_at(Lk, d, th[j])
                out.append(_Hyp(mode, n, d, 1 + r, True, (phiK + thK2, K), piv, frozen, rms))
            if m.kind == "R":
                fl = self.fit_locked(j, end, lambda Le: m.tips([Le], [m.theta_at(Le, d_old, th[j - 1])], thW)[0],
                                     phiK, (Lk if self.events else L[j - 1], L[j]), m)
                if fl is not None:
                    fl.prior = 4
                    out.append(fl)
                out.extend(self.fit_locked_same(j, end, thW, d_old))
        if m.kind == "F":
            out.extend(self.unlock_hyps(j, end, thW))
        return out

    def wrap_point(self, kind: str, arcV: float, c: float, Lk: float, d_old: float, thW: float, th_ref: float):
        """Position of a wrapped pivot from its arclength and wall distance (the body at the wrap instant)."""
        m = self.mode
        if m.kind == "S":
            s = arcV - m.arcQ
            if not (1e-9 < s < Lk - m.arcQ):
                return None
            x = -c / s
            if abs(x) > 1 + 1e-9:
                return None
            a = math.asin(min(max(x, -1.0), 1.0))
            thw = a if abs(a - th_ref) <= abs(math.pi - a - th_ref) else math.pi - a
            return m.Q + s * unit(thW - thw), thw
        if kind == "R":
            s = arcV - m.arcQ
            if not (1e-9 < s < m.lb - 1e-9):
                return None
            x = -c / s
            if abs(x) > 1 + 1e-9:
                return None
            a = math.asin(min(max(x, -1.0), 1.0))
            ref = th_ref + m.tt
            b = a if abs(wrap(a - ref)) <= abs(wrap(math.pi - a - ref)) else math.pi - a
            return m.Q + s * unit(thW - b), b - m.tt
        e = arcV - m.arcT
        if not (1e-9 < e < Lk - m.arcT):
            return None
        t = th_ref          # solve lb sin(t + tt) + e sin t = -c near the last angle
        for _ in range(40):
            f = m.lb * math.sin(t + m.tt) + e * math.sin(t) + c
            df = m.lb * math.cos(t + m.tt) + e * math.cos(t)
            if abs(df) < 1e-12:
                return None
            dt = max(min(f / df, 0.2), -0.2)
            t -= dt
            if abs(dt) < 1e-14:
                break
        if abs(t - th_ref) > 0.5:
            return None
        phiw = thW - t
        return m.Q + m.lb * unit(phiw - m.tt) + e * unit(phiw), t

    def unlock_hyps(self, j: int, end: int, thW: float) -> list[_Hyp]:
        """The friction-locked tip starts to slide (Algorithm 3 lines 21-24): the turn freezes where it is
        (pivot-at-turn) or the robot, with its new turn angle, rotates rigidly about its pivot."""
        m = self.mode
        L, th = self.L, self.th
        out = []
        n_w = np.array([-math.sin(thW), math.cos(thW)])
        # pivot-at-turn: the invariant fixes the offset of the frozen turn point from the wall line
        S = _Mode("S", m.Q, m.arcT)   # only the invariant is used here (Q replaced below)
        n, d, rms = self.test_mode(S, j, end)
        if n >= 1:
            # T_e on |T - Q| = l_b with n.(T_e - Co) = d (line-circle intersection nearest the last locked T)
            la_prev = L[j - 1] - m.arcT
            T_prev = m.Co - la_prev * unit(thW - th[j - 1])
            r = line_circle_param(m.Co + d * n_w, unit(thW), m.Q, m.lb)
            if r is not None:
                cands = [m.Co + d * n_w + t * unit(thW) for t in r]
                # the lock ends between the last locked sample and this one: arcT + |Co - T_e| lies in between
                cands = [p for p in cands if self.unlock_in_bracket(m.arcT + norm(m.Co - p), j)]
                if cands:
                    TE = min(cands, key=lambda p: norm(p - T_prev))
                    out.append(_Hyp(_Mode("S", TE, m.arcT), n, d, 0, False, None, TE, True, rms))
        # ... or it unlocks and reaches a corner of the wall within one sample: the turn freezes where the last
        # locked sample left it and the tip slides onto the next wall
        la_prev = L[j - 1] - m.arcT
        T_prev = m.Co - la_prev * unit(thW - th[j - 1])
        Lk = L[j] if self.events else 0.5 * (L[j - 1] + L[j])
        r = line_circle_param(m.Co, unit(thW), T_prev, Lk - m.arcT)
        if r is not None:
            t_foot = float((T_prev - m.Co) @ unit(thW))      # the tip moves away from the foot of T on the wall
            t = r[0] if t_foot > 0 else r[1]
            if abs(t) > 1e-12:
                K = m.Co + t * unit(thW)
                S2 = _Mode("S", T_prev, m.arcT)
                n, d, rms = self.test_mode(S2, j, end)
                phiK = angle_of(K - T_prev)
                thK = S2.theta_at(Lk, d, th[j])
                out.append(_Hyp(S2, n, d, 5, True, (phiK + thK, K), T_prev, True, rms))
        # a skimmed corner on the post-turn segment becomes the pivot (the turn freezes)
        # (the lock moved the turn point, so the corner's arclength follows from its known distance to the wall)
        for c in self.cands:
            if c[3] and abs(math.sin(th[j])) > 1e-9:
                d = float(n_w @ (c[0] - m.Co))
                mode = _Mode("S", c[0], float(L[j] - d / math.sin(th[j])))
                if mode.arcQ <= m.arcT:
                    continue
                n, d, rms = self.test_mode(mode, j, end, d=d)
                out.append(_Hyp(mode, n, d, 2, False, None, mode.Q, True, rms))
        # rigid rotation (about the pivot or a corner skimmed before the turn) with the turn angle reached at the end
        # of the lock: strong test on the known wall, lb sin(th + tt) + la sin(th) = n.(X - Co)
        la_prev = L[j - 1] - m.arcT
        phi_prev = thW - th[j - 1]
        T_prev = m.Co - la_prev * unit(phi_prev)
        tt_prev = wrap(phi_prev - angle_of(T_prev - m.Q))
        pivots = [(m.Q, m.arcQ, 1)] + [(c[0], c[1], 3) for c in self.cands if not c[3] and c[1] < m.arcT - 1e-9]
        la = L[j:end] - m.arcT
        for X, aX, pr in pivots:
            lbX = m.arcT - aX
            y = float(n_w @ (X - m.Co))
            z = (y - la[0] * math.sin(th[j])) / lbX
            if abs(z) > 1 + 1e-9:
                continue
            a = math.asin(min(max(z, -1.0), 1.0))
            for b in (a, math.pi - a):       # both branches; the unlock bracket decides
                tt_e = wrap(b - th[j])
                # the lock ends (tip still at Co) between the last locked sample and this one:
                # |lbX + la e^{i tt}| = |Co - X|  ->  la = -lbX cos tt + sqrt(|Co - X|^2 - lbX^2 sin^2 tt)
                D = norm(m.Co - X)
                disc = D * D - (lbX * math.sin(tt_e)) ** 2
                if disc < 0 or not self.unlock_in_bracket(m.arcT - lbX * math.cos(tt_e) + math.sqrt(disc), j):
                    continue
                R = _Mode("R", X, aX, m.arcT, tt_e)
                n, d, rms = self.test_mode(R, j, end, d=y)
                out.append(_Hyp(R, n, y, pr + 0.1 * abs(wrap(tt_e - tt_prev)), False, None, X if pr == 3 else None,
                                False, rms))
        return out

    def unlock_in_bracket(self, Le: float, j: int) -> bool:
        # plausibility check, not a fit: 10 um absorbs the sqrt-sensitivity of a near-tangent line-circle cut
        tol = 1e-5 + 3.0 * self.sl + (0.002 if self.noisy else 0.0)
        return self.L[j - 1] - tol <= Le <= self.L[j] + tol

    # -- main loop -------------------------------------------------------------------------------------------------
    def run(self) -> list[WallEstimate]:
        L, raw = self.L, self.raw
        runs = []
        start = None
        for i, v in enumerate(raw):
            if np.isnan(v):
                if start is not None:
                    runs.append((start, i))
                    start = None
            elif start is None:
                start = i
        if start is not None:
            runs.append((start, len(raw)))
        for i0, i1 in runs:
            # theta_c is a line angle (mod pi): keep it continuous along the run, so that the heading thW - theta
            # does not flip by pi where the body lies along the wall (theta ~ 0 ~ pi)
            raw[i0:i1] = np.unwrap(raw[i0:i1], period=math.pi)
            self.breaks = set()
            if self.noisy:
                # With noise a wall corner (or a new contact within one sample) is only accepted where the raw angle
                # jumps by more than the noise can explain; the angles are smoothed between such breaks.
                thr = max(self.jump / 2.0, 8.0 * self.sa)
                br = [i for i in range(i0 + 1, i1) if abs(raw[i] - raw[i - 1]) > thr]
                self.breaks = set(br)
                for a, b in zip([i0] + br, br + [i1]):
                    self.th[a:b] = _smooth(raw[a:b], self.k)
            else:
                self.th[i0:i1] = raw[i0:i1]
            Lprev = L[i0 - 1] if i0 > 0 else None
            self.free_flight(L[i0] if (Lprev is None or self.events) else 0.5 * (Lprev + L[i0]))
            self.contact_run(i0, i1, Lprev)
        return self.walls

    def free_flight(self, Lc: float) -> None:
        """Free growth up to the contact at length ``Lc``: the pre-formed turn may form (Algorithm 1 lines 11-15)."""
        if not self.turn_pending or self.turn_length >= Lc:
            return
        self.turn_pending = False
        m = self.mode
        arc_turn = max(self.turn_length, self.flight_arc)
        lb = arc_turn - m.arcQ
        if lb <= 1e-9:
            self.phi += self.tt                  # the turn coincides with a fixed pivot: a permanent bend
            return
        self.mode = _Mode("R", m.Q, m.arcQ, arc_turn, self.tt)
        self.phi = self.phi + self.tt
        self.cands = [(p, a, sd, False, f) for p, a, sd, _, f in self.cands]

    def choose(self, hyps: list[_Hyp]) -> _Hyp | None:
        if not hyps:
            return None
        nmax = max(h.n for h in hyps)
        if self.noisy:
            top = [h for h in hyps if h.n >= nmax - max(2, nmax // 10)]
            return min(top, key=lambda h: (-(h.n >= nmax - 2), h.prior, h.rms))
        top = [h for h in hyps if h.n == nmax]
        return min(top, key=lambda h: (h.prior, h.rms))

    def successors(self, j: int, i1: int, d_old: float, thW: float, Co, pts) -> tuple[list[_Hyp], list[_Hyp]]:
        """Hypotheses for sample ``j`` after the current mode stopped fitting: events on the same contact, and a new
        contact right after the tip left the wall at a corner (within one sample, no NaN between)."""
        hyps = self.kink_hyps(j, i1, d_old, thW, Co)
        if self.mode.kind == "F":
            return hyps, []          # a pinned tip can only start to slide
        saved = (self.mode, self.phi, self.cands, self.flight_arc)
        self.end_contact(pts, thW, d_old, j)
        onset = self.onset_hyps(j, i1, self.L[j - 1])
        for o in onset:
            o.prior += 10
        self.mode, self.phi, self.cands, self.flight_arc = saved
        return hyps, onset

    def pick(self, hyps: list[_Hyp], j: int, i1: int, thW: float, Co, pts) -> _Hyp | None:
        """Choose a hypothesis; when several explain equally few samples, look one event ahead and prefer the one
        whose continuation explains more samples with fewer new walls."""
        if not hyps:
            return None
        nmax = max(h.n for h in hyps)
        top = [h for h in hyps if h.n == nmax]
        if self.noisy or len(top) < 2 or nmax >= 3 or j + nmax >= i1:
            return self.choose(hyps)
        scored = []
        saved = (self.mode, self.phi, self.cands, self.flight_arc)
        for h in top:
            self.mode = h.mode
            w, c = h.wall if h.new_wall else (thW, Co)
            k = j + nmax
            self.phi = w - float(self.th[k - 1])
            tips = list(pts) + list(h.mode.tips(self.L[j:k], self.th[j:k], w))
            a, b = self.successors(k, i1, h.d if h.mode.kind != "F" else 0.0, w, c, tips)
            nxt = self.choose(a + b)
            cov = nmax + (nxt.n if nxt is not None else 0)
            nw = int(h.new_wall) + (int(nxt.new_wall or any(nxt is o for o in b)) if nxt is not None else 0)
            scored.append((-cov, nw, h.prior, h.rms, id(h), h))
            self.mode, self.phi, self.cands, self.flight_arc = saved
        return min(scored, key=lambda t: t[:5])[5]

    def contact_run(self, i0: int, i1: int, Lprev) -> None:
        L, th = self.L, self.th
        h = self.pick(self.onset_hyps(i0, i1, Lprev), i0, i1, 0.0, None, [])
        j = i0
        pts: list[np.ndarray] = []
        pivots: list[np.ndarray] = []
        thW, Co = h.wall
        pts.append(np.asarray(Co, float))
        pivots.append(h.pivot if h.pivot is not None else h.mode.Q)
        modes = [h.label()]
        while True:
            self.mode = h.mode
            if h.mode.kind == "R":
                self.turning = True
            if h.turn_frozen:
                self.turning = False
            n = max(h.n, 1)
            k = min(j + n, i1)
            pts.extend(self.mode.tips(L[j:k], th[j:k], thW))
            self.phi = thW - float(th[k - 1])
            d_old = h.d
            if self.mode.kind == "F":
                d_old = 0.0
            j = k
            if j >= i1:
                break
            hyps, onset = self.successors(j, i1, d_old, thW, Co, pts)
            if self.noisy and j not in self.breaks:
                hyps, onset = [q for q in hyps if not q.new_wall], []
            nh = self.pick(hyps + onset, j, i1, thW, Co, pts)
            if nh is None or nh.n == 0:
                # nothing explains the sample (noise): keep the current mode for it
                h = _Hyp(self.mode, 1, d_old, 0, False, None)
                continue
            if any(nh is o for o in onset):
                self.end_contact(pts, thW, d_old, j)
                self.walls.append(self.make_wall(pts, thW, Co, pivots, modes))
                pts, pivots, modes = [], [], []
            elif nh.new_wall:
                self.walls.append(self.make_wall(pts, thW, Co, pivots, modes))
                pts, pivots, modes = [], [], []
            if nh.new_wall:
                thW, Co = nh.wall
                pts.append(np.asarray(Co, float))
                pivots.append(nh.pivot if nh.pivot is not None else nh.mode.Q)
            elif nh.pivot is not None:
                pivots.append(nh.pivot)
            if not modes or modes[-1] != nh.label():
                modes.append(nh.label())
            h = nh
        self.end_contact(pts, thW, d_old if h.n else 0.0, i1)
        self.walls.append(self.make_wall(pts, thW, Co, pivots, modes))

    def end_contact(self, pts, thW, d: float, j: int) -> None:
        """The tip leaves the wall: its last point is a corner the body may later wrap around (a skim)."""
        m = self.mode
        K = np.asarray(pts[-1], float)
        if m.kind == "F":
            return
        if m.kind == "S":
            arcK = m.arcQ + norm(K - m.Q)
        else:
            arcK = m.arcT + norm(K - m.turn_point(self.phi))
        side = -1 if np.cos(thW - self.phi) > 0 else 1     # the obstacle lies behind the sliding direction
        fit = None
        if m.kind in ("S", "R") and j < len(self.L):
            ref = float(self.th[j - 1])
            mode = m

            def fit(Lx, mode=mode, d=d, ref=ref, thW=thW):
                return mode.tips([Lx], [mode.theta_at(Lx, d, ref)], thW)[0]

            fit = (fit, (float(self.L[j - 1]), float(self.L[j])))
        self.cands = [(K, arcK, side, m.kind == "R", fit)]
        self.flight_arc = arcK

    def make_wall(self, pts, thW, Co, pivots, modes) -> WallEstimate:
        pts = np.asarray(pts, float)
        if len(pts) >= 3 and self.noisy:
            cen = pts.mean(axis=0)
            _, _, vt = np.linalg.svd(pts - cen)
            dirn = vt[0]
        else:
            dirn = unit(thW)
            cen = np.asarray(Co, float)
        proj = (pts - cen) @ dirn
        seg = np.array([cen + proj.min() * dirn, cen + proj.max() * dirn])
        if proj[0] > proj[-1]:
            seg = seg[::-1]
        return WallEstimate(seg, pts, [np.asarray(p, float) for p in pivots], list(modes))


def invert_streams(L: np.ndarray, theta: np.ndarray, launch, launch_angle: float, *, turn_length: float | None = None,
                   turn_angle: float = 0.0, angle_noise: float = 0.0, length_noise: float = 0.0,
                   jump: float = math.radians(8.0), friction: float | None = None,
                   radius: float | None = None, event_samples: bool = True) -> list[WallEstimate]:
    """Recover walls from length/collision-angle streams (Section 2.4), straight or with one pre-formed turn.

    ``turn_length`` [m]: arclength from the base at which the turn forms; ``turn_angle`` [rad]: its signed angle
    (the robot's starting shape, known to the operator). ``angle_noise``/``length_noise``: the sensor's standard
    deviations, used for smoothing and for the consistency thresholds. ``friction``/``radius`` (optional): only used
    to break ties between morphologies the samples cannot tell apart (Eqs. 13-15). ``jump`` is kept for backward
    compatibility. Returns one :class:`WallEstimate` per contacted wall piece (contact runs are split at wall
    corners).
    """
    return _Inverter(L, theta, launch, launch_angle, turn_length, turn_angle, angle_noise, length_noise, jump,
                     friction, radius, event_samples).run()


def _point_seg(p, a, b) -> float:
    ab = b - a
    t = min(max(float((p - a) @ ab) / max(float(ab @ ab), 1e-300), 0.0), 1.0)
    return norm(p - (a + t * ab))


def wall_errors(estimates: list[WallEstimate], truth: list[np.ndarray]) -> np.ndarray:
    """Hausdorff distance [m] between each true wall piece and its estimate (matched in order)."""
    if len(estimates) != len(truth):
        raise ValueError(f"{len(estimates)} walls recovered but the deployment contacted {len(truth)}")
    errs = []
    for est, tru in zip(estimates, truth):
        s = est.segment
        errs.append(max(_point_seg(s[0], *tru), _point_seg(s[1], *tru), _point_seg(tru[0], *s), _point_seg(tru[1], *s)))
    return np.asarray(errs)
