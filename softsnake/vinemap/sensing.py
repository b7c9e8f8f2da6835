"""Proprioceptive sensing for vine robots (Fuentes et al. 2025, Section 2.4).

Forward: :func:`sensor_streams` turns a simulated deployment into the two streams a tip sensor would give, robot
length ``L`` [m] and tip collision angle ``theta_c`` [rad] (counter-clockwise from the growth direction to the wall
tangent, ``NaN`` when the tip touches nothing), sampled every ``step`` metres of growth.

Inverse: :func:`invert_streams` recovers contact points and walls from the streams plus the launch pose only:

* first contact of a run: ``C_o = B + L [cos th_B, sin th_B]`` (Eq. 16) with the wall direction
  ``th_W = th_B + th_C0`` (Eq. 21 without a turn);
* while sliding: ``C_i = B + L_i u(th_W - th_Ci)`` (Eq. 17, heading fixed relative to the flat wall);
* pivot changes: when the contact points leave the wall line (the kink in ``theta_c(L)`` of Section 2.4), the new
  pivot ``B' = B + s u(th_B)`` on the body line is solved by least squares from the flat-wall condition (the general
  form of Eqs. 18-19);
* after a skim (contact lost at a wall end), the wall end is kept as a candidate pivot; the next run picks the
  pivot whose contact points are most collinear.

With a pre-formed turn (Eqs. 20-25): the turn forms at the known arclength; at contact ``C_o`` follows Eq. 20 and
``th_W = th_B + th_T + th_C0`` (Eq. 21); the morphology is chosen from the data -- the turn point as a fixed pivot
(pivot-at-turn, Eq. 22, then Eq. 17) or rigid rotation of the turned robot about its pivot (positive/negative pivot,
Eqs. 24-25) -- whichever keeps the contact points on the wall line. Friction-locked episodes (Eqs. 26-29) are not
handled.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .geometry2d import line_circle_param, norm, unit

__all__ = ["sensor_streams", "invert_streams", "WallEstimate", "wall_errors", "true_wall_runs"]


def _ccw_line_angle(d, w) -> float:
    """Counter-clockwise angle from direction ``d`` to the line along ``w``, in ``[0, pi)``."""
    a = math.atan2(d[0] * w[1] - d[1] * w[0], d[0] * w[0] + d[1] * w[1])
    return a % math.pi


def _shape_arcs(shape: np.ndarray) -> np.ndarray:
    """Cumulative arclength [m] of each vertex of a centreline polyline."""
    return np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(shape, axis=0).T))])


def _arc_of_vertex(shape: np.ndarray, arcs: np.ndarray, p) -> float:
    """Arclength [m] of the first shape vertex at ``p``."""
    k = int(np.argmin(np.hypot(*(shape - p).T)))
    if norm(shape[k] - p) > 1e-7:
        raise ValueError("pivot of a turn slide is not a vertex of the final shape")
    return float(arcs[k])


def _post_turn_length(R: float, lb: float, tt: float) -> float:
    """Post-turn length ``l_a`` [m] with ``|l_b + l_a e^{i tt}| = R`` (tip at distance ``R`` from the pivot)."""
    return -lb * math.cos(tt) + math.sqrt(max(R * R - (lb * math.sin(tt)) ** 2, 0.0))


def sensor_streams(dep, step: float = 0.001, *, action=None, angle_noise: float = 0.0, length_noise: float = 0.0,
                   rng: np.random.Generator | None = None):
    """Length and collision-angle streams of a deployment: ``(L, theta_c)`` arrays [m], [rad].

    Deployments of robots with a pre-formed turn need ``action`` (the simulated :class:`Action`, for the turn angle);
    friction-locked episodes (tip pinned while the turn migrates, Eqs. 26-29) are not synthesised and raise
    ``ValueError``. ``angle_noise`` [rad] and ``length_noise`` [m] add independent Gaussian noise to each sample.
    """
    turned = any(p["kind"] == "turn_slide" for p in dep.phases) or dep.turn_point is not None
    if turned and (action is None or not action.has_turn):
        raise ValueError("streams of a turned robot need the action with its turn (turn angle)")
    if "friction_locked" in dep.events:
        raise ValueError("friction-locked turn episodes are not synthesised into sensor streams")
    if turned:
        arcs = _shape_arcs(dep.shape)
        arc_T = _arc_of_vertex(dep.shape, arcs, dep.turn_point)
        tt = float(action.turn_angle)
    Ls, th = [], []
    for ph in dep.phases:
        if ph["kind"] == "free":
            a0, a1 = ph["arc"] + ph["t0"], ph["arc"] + ph["t1"]
            for L in np.arange(math.ceil(a0 / step) * step, a1 - 1e-12, step):
                if Ls and L <= Ls[-1] + 1e-12:
                    continue  # re-growth records after a wrap repeat lengths already sensed
                Ls.append(L)
                th.append(np.nan)
            continue
        P, h, h2 = ph["pivot"], ph["h"], ph["h2"]
        w = h2 - h
        lw = norm(w)
        if lw < 1e-12:
            continue
        w = w / lw
        if ph["kind"] == "slide":
            arc = ph["arc"]
            a0, a1 = arc + norm(h - P), arc + norm(h2 - P)
        else:
            # Rigid rotation of the turned robot about P (positive/negative pivot): the pre-turn length l_b is the
            # arclength from P to the turn point, the tip is P + l_b u(a) + l_a u(a + tt) on the wall line.
            arc = _arc_of_vertex(dep.shape, arcs, P)
            lb = arc_T - arc
            a0 = arc + lb + _post_turn_length(norm(h - P), lb, tt)
            a1 = arc + lb + _post_turn_length(norm(h2 - P), lb, tt)
        for L in np.arange(math.ceil(a0 / step) * step, a1 + 1e-12, step):
            if Ls and L <= Ls[-1] + 1e-12:
                continue
            if ph["kind"] == "slide":
                r = line_circle_param(h, w, P, L - arc)
                tip = h + (r[1] if r else 0.0) * w
                d = (tip - P) / norm(tip - P)
            else:
                la = L - arc - lb
                z = complex(lb, 0.0) + la * complex(math.cos(tt), math.sin(tt))   # tip relative to P, frame a = 0
                r = line_circle_param(h, w, P, abs(z))
                tip = h + (r[1] if r else 0.0) * w
                a = math.atan2(*(tip - P)[::-1]) - math.atan2(z.imag, z.real)  # pre-turn direction
                d = unit(a + tt)                                                 # post-turn heading
            Ls.append(L)
            th.append(_ccw_line_angle(d, w))
    L = np.asarray(Ls)
    t = np.asarray(th)
    if rng is None:
        rng = np.random.default_rng(0)
    if angle_noise > 0:
        t = t + rng.normal(0.0, angle_noise, t.shape)
    if length_noise > 0:
        L = L + rng.normal(0.0, length_noise, L.shape)
    return L, t


@dataclass
class WallEstimate:
    """One recovered wall: end points (2, 2) [m], the contact points behind it, and the pivots used."""

    segment: np.ndarray
    points: np.ndarray
    pivots: list[np.ndarray]


def _runs(theta: np.ndarray, jump: float):
    """Index ranges of contact runs: split at no-contact samples and at jumps of theta_c (a new wall)."""
    runs, start = [], None
    for i, v in enumerate(theta):
        if np.isnan(v):
            if start is not None:
                runs.append((start, i, False))
                start = None
        elif start is None:
            start = i
        elif abs(v - theta[i - 1]) > jump:
            runs.append((start, i, True))
            start = i
    if start is not None:
        runs.append((start, len(theta), False))
    return runs


def _smooth(x: np.ndarray, k: int) -> np.ndarray:
    if k <= 1 or len(x) < k:
        return x
    pad = k // 2
    xp = np.concatenate([np.full(pad, x[0]), x, np.full(pad, x[-1])])
    return np.convolve(xp, np.ones(k) / k, mode="valid")[: len(x)]


def invert_streams(L: np.ndarray, theta: np.ndarray, launch, launch_angle: float, *, turn_length: float | None = None,
                   turn_angle: float = 0.0, angle_noise: float = 0.0, length_noise: float = 0.0,
                   jump: float = math.radians(8.0)) -> list[WallEstimate]:
    """Recover walls from length/collision-angle streams (Section 2.4), straight or with one pre-formed turn.

    ``turn_length`` [m]: arclength from the base at which the turn forms; ``turn_angle`` [rad]: its signed angle
    (the robot's starting shape, known to the operator). ``angle_noise``/``length_noise``: the sensor's standard
    deviations, used for smoothing and for the threshold that flags a pivot change. Friction-locked episodes are not
    handled. Returns one :class:`WallEstimate` per contact run.
    """
    L = np.asarray(L, float)
    theta = np.asarray(theta, float)
    P = np.asarray(launch, float)
    arcP = 0.0
    thB = float(launch_angle)                      # direction of the body segment leaving P (pre-turn if turning)
    tt = float(turn_angle)
    turn_pending = turn_length is not None and tt != 0.0
    turning, lb = False, 0.0                       # active turn: T = P + lb u(thB), post-turn heading thB + tt
    cands: list[tuple[np.ndarray, float]] = []  # wall ends passed on the current body line (skimmed corners)
    walls = []
    smooth_k = 1 if angle_noise == 0 else 15
    for i0, i1, split in _runs(theta, jump + 4 * angle_noise):
        Li = L[i0:i1]
        ti = _smooth(theta[i0:i1], smooth_k)
        if turn_pending and turn_length < Li[0] - 1e-9:
            # Algorithm 1 lines 11-15: the turn forms during free growth before this contact.
            turn_pending = False
            lb = turn_length - arcP
            if lb <= 1e-9:
                thB += tt                            # turn at a fixed pivot: a permanent bend
            else:
                turning = True
                cands = [(c, a) for c, a in cands if a < turn_length]
        if turning:
            arcT = arcP + lb
            T = P + lb * unit(thB)
            thW = thB + tt + ti[0]                          # Eq. 21
            Co = T + (Li[0] - arcT) * unit(thB + tt)        # Eq. 20
        else:
            thW = thB + ti[0]                               # Eq. 21 (no turn)
            Co = P + (Li[0] - arcP) * unit(thB)             # Eq. 16
        phi = thW - ti                                      # heading of the tip segment at each sample
        uW = unit(thW)
        nW = np.array([-uW[1], uW[0]])
        eff = angle_noise / math.sqrt(smooth_k)
        tol = 1e-6 + 3.0 * (eff * max(Li[-1] - arcP, 0.0) + length_noise)

        def tips(Q, arcQ, sl=slice(None)):
            """Eq. 17: tip positions with the tip segment pivoting about Q (arclength arcQ)."""
            return Q + (Li[sl] - arcQ)[:, None] * np.stack([np.cos(phi[sl]), np.sin(phi[sl])], axis=1)

        def tips_rigid(sl=slice(None)):
            """Eqs. 24-25: the turned robot rotates rigidly about P; pre-turn direction phi - tt (Eq. 24)."""
            a = phi[sl] - tt
            pre = lb * np.stack([np.cos(a), np.sin(a)], axis=1)
            return P + pre + (Li[sl] - arcP - lb)[:, None] * np.stack([np.cos(phi[sl]), np.sin(phi[sl])], axis=1)

        # Pivot at the start of the run: the current pivot (the turn point T for pivot-at-turn, Eq. 22), a skimmed
        # corner on the tip segment, or -- with an active turn -- rigid rotation about P (positive/negative pivot).
        m = min(len(Li), 12)
        options = [(T, arcT) if turning else (P, arcP)] + cands
        resid = [np.mean(np.abs((tips(Q, a, slice(0, m)) - Co) @ nW)) for Q, a in options]
        rigid = False
        if turning and lb > 0:
            r_rig = np.mean(np.abs((tips_rigid(slice(0, m)) - Co) @ nW))
            rigid = r_rig < min(resid)
        Q, arcQ = options[int(np.argmin(resid))]
        if rigid:
            Q, arcQ = P, arcP
        elif turning:
            turning = False                                 # the turn is frozen as a fixed bend (Eq. 22)
        pivots = [Q]
        pts = []
        i = 0
        win = 1 if angle_noise == 0 and length_noise == 0 else 10
        while i < len(Li):
            ahead = slice(i, min(i + win, len(Li)))
            if rigid:
                res = np.abs((tips_rigid(ahead) - Co) @ nW)
                if i == 0 or np.median(res) <= tol:
                    pts.append(tips_rigid(slice(i, i + 1))[0])
                    i += 1
                    continue
                # The rotation stops (a corner is wrapped): freeze the turn where it was at the last consistent
                # sample and treat the tip segment as a straight body from there (pivot search below).
                rigid, turning = False, False
                Q, arcQ = P + lb * unit(phi[i - 1] - tt), arcP + lb
                pivots.append(Q)
                continue
            res = np.abs((tips(Q, arcQ, ahead) - Co) @ nW)
            if i == 0 or np.median(res) <= tol:
                pts.append(tips(Q, arcQ, slice(i, i + 1))[0])
                i += 1
                continue
            # Pivot change: B' = Q + s u(phi_k) on the body line at the last consistent sample k = i - 1;
            # s from the flat-wall condition n_W . (C_j - C_o) = 0 on the following samples (least squares).
            k = i - 1
            uk = unit(phi[k])
            sl = slice(i, min(i + 40, len(Li)))
            ui = np.stack([np.cos(phi[sl]), np.sin(phi[sl])], axis=1)
            a = uk @ nW - ui @ nW
            b = -((Q - Co) @ nW) - (Li[sl] - arcQ) * (ui @ nW)
            s = float(a @ b / max(a @ a, 1e-300))
            if not (0.0 < s < Li[i] - arcQ):
                pts.append(tips(Q, arcQ, slice(i, i + 1))[0])  # not a consistent kink (noise): keep the pivot
                i += 1
                continue
            Q, arcQ = Q + s * uk, arcQ + s
            if len(pivots) > 1 and norm(Q - pivots[-1]) < 0.01:
                pivots[-1] = Q  # refinement of the pivot found a few samples earlier
            else:
                pivots.append(Q)
            pts.append(tips(Q, arcQ, slice(i, i + 1))[0])
            i += 1
        pts = np.asarray(pts)
        # Wall line through the contact points (total least squares), segment between the extreme projections.
        cen = pts.mean(axis=0)
        if len(pts) >= 3 and angle_noise > 0:
            _, _, vt = np.linalg.svd(pts - cen)
            dirn = vt[0]
        else:
            dirn = uW
            cen = Co
        proj = (pts - cen) @ dirn
        seg = np.array([cen + proj.min() * dirn, cen + proj.max() * dirn])
        if proj[0] > proj[-1]:
            seg = seg[::-1]
        walls.append(WallEstimate(seg, pts, pivots))
        # State after the run: the body keeps its last heading; the wall end is a candidate pivot.
        if rigid:
            thB = float(phi[-1]) - tt                       # Eq. 24: pre-turn direction at the end of the run
            arc_end = arcP + lb + norm(pts[-1] - (P + lb * unit(thB)))
        else:
            P, arcP = Q, arcQ
            thB = float(phi[-1])
            arc_end = arcQ + norm(pts[-1] - Q)
        cands = [] if split else [(pts[-1].copy(), arc_end)]
        if turn_pending and not rigid and turn_length <= Li[-1] + 2 * float(np.median(np.diff(Li))) if len(Li) > 1 \
                else False:
            # Algorithm 1 line 7: the turn everts while the tip slides and forms at the tip's contact point.
            turn_pending, turning = False, True
            lb = turn_length - arcP
            cands = []
    return walls


def true_wall_runs(dep) -> list[np.ndarray]:
    """The deployment's contacted wall pieces with consecutive pieces on one line merged (one per contact run)."""
    out = []
    for ph in dep.phases:
        if ph["kind"] not in ("slide", "turn_slide") or norm(ph["h2"] - ph["h"]) < 1e-12:
            continue
        seg = np.array([ph["h"], ph["h2"]])
        if out and norm(out[-1][1] - seg[0]) < 1e-9:
            d0 = out[-1][1] - out[-1][0]
            d1 = seg[1] - seg[0]
            if abs(d0[0] * d1[1] - d0[1] * d1[0]) < 1e-9 * norm(d0) * norm(d1):
                out[-1] = np.array([out[-1][0], seg[1]])
                continue
        out.append(seg)
    return out


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
