"""Events inside a contact for the stream inversion: wraps (Eqs. 18-19), convex wall corners, new contacts after a
skim, and the end of a friction lock. A mixin of ``inversion._Inverter``."""

from __future__ import annotations

import math

import numpy as np

from .geometry2d import angle_of, line_circle_param, norm, unit, wrap
from .inversion_model import _Hyp, _Mode


class _ContactEvents:
    """Explanations of a change inside a contact (mixed into ``_Inverter``, whose state they read)."""

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
        for skip in (0,) if self.noisy else (0, 1):
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
                    continue  # the angle does not change (body along the wall): no pivot information
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
                mode = _Mode("S", V, arcV) if kind == "S" else _Mode("R", V, arcV, m.arcT, m.tt)
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
            for r, (_name, mode, piv, frozen) in enumerate(cand):
                n, d, rms = self.test_mode(mode, j, end)
                thK2 = mode.theta_at(Lk, d, th[j])
                out.append(_Hyp(mode, n, d, 1 + r, True, (phiK + thK2, K), piv, frozen, rms))
            if m.kind == "R":
                fl = self.fit_locked(
                    j,
                    end,
                    lambda Le: m.tips([Le], [m.theta_at(Le, d_old, th[j - 1])], thW)[0],
                    phiK,
                    (Lk if self.events else L[j - 1], L[j]),
                    m,
                )
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
        t = th_ref  # solve lb sin(t + tt) + e sin t = -c near the last angle
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
        S = _Mode("S", m.Q, m.arcT)  # only the invariant is used here (Q replaced below)
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
            t_foot = float((T_prev - m.Co) @ unit(thW))  # the tip moves away from the foot of T on the wall
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
            for b in (a, math.pi - a):  # both branches; the unlock bracket decides
                tt_e = wrap(b - th[j])
                # the lock ends (tip still at Co) between the last locked sample and this one:
                # |lbX + la e^{i tt}| = |Co - X|  ->  la = -lbX cos tt + sqrt(|Co - X|^2 - lbX^2 sin^2 tt)
                D = norm(m.Co - X)
                disc = D * D - (lbX * math.sin(tt_e)) ** 2
                if disc < 0 or not self.unlock_in_bracket(m.arcT - lbX * math.cos(tt_e) + math.sqrt(disc), j):
                    continue
                R = _Mode("R", X, aX, m.arcT, tt_e)
                n, d, rms = self.test_mode(R, j, end, d=y)
                out.append(
                    _Hyp(R, n, y, pr + 0.1 * abs(wrap(tt_e - tt_prev)), False, None, X if pr == 3 else None, False, rms)
                )
        return out

    def unlock_in_bracket(self, Le: float, j: int) -> bool:
        # plausibility check, not a fit: 10 um absorbs the sqrt-sensitivity of a near-tangent line-circle cut
        tol = 1e-5 + 3.0 * self.sl + (0.002 if self.noisy else 0.0)
        return self.L[j - 1] - tol <= Le <= self.L[j] + tol
