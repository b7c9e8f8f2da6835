"""Proprioceptive sensing for straight vine robots (Fuentes et al. 2025, Section 2.4).

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

Only robots without a pre-formed turn are supported here.
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


def sensor_streams(dep, step: float = 0.001, *, angle_noise: float = 0.0, length_noise: float = 0.0,
                   rng: np.random.Generator | None = None):
    """Length and collision-angle streams of a straight deployment: ``(L, theta_c)`` arrays [m], [rad].

    ``angle_noise`` [rad] and ``length_noise`` [m] add independent Gaussian noise to each sample.
    """
    if any(p["kind"] == "turn_slide" for p in dep.phases) or dep.turn_point is not None:
        raise ValueError("sensor streams are implemented for robots without a pre-formed turn only")
    Ls, th = [], []
    for ph in dep.phases:
        if ph["kind"] == "free":
            a0, a1 = ph["arc"] + ph["t0"], ph["arc"] + ph["t1"]
            for L in np.arange(math.ceil(a0 / step) * step, a1 - 1e-12, step):
                if Ls and L <= Ls[-1] + 1e-12:
                    continue  # re-growth records after a wrap repeat lengths already sensed
                Ls.append(L)
                th.append(np.nan)
        else:
            P, arc, h, h2 = ph["pivot"], ph["arc"], ph["h"], ph["h2"]
            w = h2 - h
            lw = norm(w)
            if lw < 1e-12:
                continue
            w = w / lw
            a0, a1 = arc + norm(h - P), arc + norm(h2 - P)
            for L in np.arange(math.ceil(a0 / step) * step, a1 + 1e-12, step):
                if Ls and L <= Ls[-1] + 1e-12:
                    continue
                r = line_circle_param(h, w, P, L - arc)
                tip = h + (r[1] if r else 0.0) * w
                Ls.append(L)
                th.append(_ccw_line_angle((tip - P) / norm(tip - P), w))
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


def invert_streams(L: np.ndarray, theta: np.ndarray, launch, launch_angle: float, *, angle_noise: float = 0.0,
                   length_noise: float = 0.0, jump: float = math.radians(8.0)) -> list[WallEstimate]:
    """Recover walls from length/collision-angle streams of a straight robot (Section 2.4).

    ``angle_noise``/``length_noise``: the sensor's standard deviations, used for smoothing and for the threshold
    that flags a pivot change. Returns one :class:`WallEstimate` per contact run.
    """
    L = np.asarray(L, float)
    theta = np.asarray(theta, float)
    P = np.asarray(launch, float)
    arcP = 0.0
    thB = float(launch_angle)
    cands: list[tuple[np.ndarray, float]] = []  # wall ends passed on the current body line (skimmed corners)
    walls = []
    smooth_k = 1 if angle_noise == 0 else 15
    for i0, i1, split in _runs(theta, jump + 4 * angle_noise):
        Li = L[i0:i1]
        ti = _smooth(theta[i0:i1], smooth_k)
        thW = thB + ti[0]                                   # Eq. 21 (no turn)
        phi = thW - ti                                      # heading of the body at each sample
        uW = unit(thW)
        nW = np.array([-uW[1], uW[0]])
        Co = P + (Li[0] - arcP) * unit(thB)                 # Eq. 16
        eff = angle_noise / math.sqrt(smooth_k)
        tol = 1e-6 + 3.0 * (eff * max(Li[-1] - arcP, 0.0) + length_noise)

        def tips(Q, arcQ, sl=slice(None)):
            return Q + (Li[sl] - arcQ)[:, None] * np.stack([np.cos(phi[sl]), np.sin(phi[sl])], axis=1)

        # Pivot at the start of the run: the current pivot or a skimmed corner on the body line.
        m = min(len(Li), 12)
        options = [(P, arcP)] + cands
        resid = [np.mean(np.abs((tips(Q, a, slice(0, m)) - Co) @ nW)) for Q, a in options]
        Q, arcQ = options[int(np.argmin(resid))]
        pivots = [Q]
        pts = []
        i = 0
        win = 1 if angle_noise == 0 and length_noise == 0 else 10
        while i < len(Li):
            ahead = slice(i, min(i + win, len(Li)))
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
        P, arcP = Q, arcQ
        thB = float(phi[-1])
        if not split:
            cands = [(pts[-1].copy(), arcQ + norm(pts[-1] - Q))]
        else:
            cands = []
    return walls


def true_wall_runs(dep) -> list[np.ndarray]:
    """The deployment's contacted wall pieces with consecutive pieces on one line merged (one per contact run)."""
    out = []
    for ph in dep.phases:
        if ph["kind"] != "slide" or norm(ph["h2"] - ph["h"]) < 1e-12:
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
