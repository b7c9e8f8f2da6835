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

import numpy as np

from .geometry2d import norm, unit
from .inversion_events import _ContactEvents
from .inversion_model import _TOL0, WallEstimate, _Hyp, _Mode, _smooth
from .inversion_onset import _OnsetHypotheses

__all__ = ["invert_streams", "WallEstimate", "wall_errors"]


class _Inverter(_OnsetHypotheses, _ContactEvents):
    def __init__(
        self,
        L,
        theta,
        launch,
        launch_angle,
        turn_length,
        turn_angle,
        angle_noise,
        length_noise,
        jump,
        friction,
        radius,
        event_samples,
    ):
        self.events = bool(event_samples)
        self.L = np.array(L, dtype=float)
        if length_noise > 0 and len(self.L) > 15:
            # the true length grows monotonically and (between event samples) linearly with the sample index:
            # a moving average over the whole stream removes most of the independent per-sample noise
            self.L = _smooth(self.L, 15)
        self.raw = np.array(theta, dtype=float)  # a copy: unwrapped in place below
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
        self.cands: list[tuple] = []  # skimmed corners: point, arc, side, on post-turn, (position(L), bracket)
        self.walls: list[WallEstimate] = []
        self.flight_arc = 0.0  # arclength where the current free growth started
        self.turning = False  # a formed, still active turn (mode R between contacts)

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
            return n, d, float(np.sqrt(np.mean((gv[: max(n, 1)] - d) ** 2)))
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
        return n, d, float(np.sqrt(np.mean((gv[: max(n, 1)] - d) ** 2)))

    def ell(self, mode: _Mode, sl):
        return self.L[sl] - mode.arcQ

    def test_mode(self, mode: _Mode, j: int, end: int, d: float | None = None):
        sl = slice(j, end)
        gv = mode.g(self.L[sl], self.th[sl])
        return self.prefix(gv, self.ell(mode, sl), d)

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
            self.phi += self.tt  # the turn coincides with a fixed pivot: a permanent bend
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
            return hyps, []  # a pinned tip can only start to slide
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
        side = -1 if np.cos(thW - self.phi) > 0 else 1  # the obstacle lies behind the sliding direction
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


def invert_streams(
    L: np.ndarray,
    theta: np.ndarray,
    launch,
    launch_angle: float,
    *,
    turn_length: float | None = None,
    turn_angle: float = 0.0,
    angle_noise: float = 0.0,
    length_noise: float = 0.0,
    jump: float = math.radians(8.0),
    friction: float | None = None,
    radius: float | None = None,
    event_samples: bool = True,
) -> list[WallEstimate]:
    """Recover walls from length/collision-angle streams (Section 2.4), straight or with one pre-formed turn.

    ``turn_length`` [m]: arclength from the base at which the turn forms; ``turn_angle`` [rad]: its signed angle
    (the robot's starting shape, known to the operator). ``angle_noise``/``length_noise``: the sensor's standard
    deviations, used for smoothing and for the consistency thresholds. ``friction``/``radius`` (optional): only used
    to break ties between morphologies the samples cannot tell apart (Eqs. 13-15). ``jump`` is kept for backward
    compatibility. Returns one :class:`WallEstimate` per contacted wall piece (contact runs are split at wall
    corners).
    """
    return _Inverter(
        L,
        theta,
        launch,
        launch_angle,
        turn_length,
        turn_angle,
        angle_noise,
        length_noise,
        jump,
        friction,
        radius,
        event_samples,
    ).run()


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
