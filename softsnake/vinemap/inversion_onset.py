"""Contact onset for the stream inversion (Fuentes et al. 2025, Eqs. 16, 20, 21): the candidate explanations of a
new contact from the free-growth state, and the friction-locked fits. A mixin of ``inversion._Inverter``."""

from __future__ import annotations

import math

import numpy as np

from .geometry2d import norm, unit, wrap
from .inversion_model import _golden_section_min, _Hyp, _Mode


class _OnsetHypotheses:
    """Explanations of a new contact (mixed into ``_Inverter``, whose state they read)."""

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
        side = 1 if th[j] % math.pi < math.pi / 2 else -1  # rotation side of a straight slide (Algorithm 2)
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
                fl = self.fit_locked(
                    j,
                    end,
                    lambda Le: src + (Le - arc_src) * unit(hf),
                    hf,
                    (Lc if self.events or Lprev is None else Lprev, L[j]),
                    base,
                )
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
        Li, ti = self.L[j : j + m], self.th[j : j + m]
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
                morph = classify_turn_morphology(
                    tc, abs(m.tt), self.friction, m.lb, max(Lc - m.arcT, 1e-9), self.radius
                )
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
        exact = bracket[1] - bracket[0] < 1e-12  # contact instant known (event sample)
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
            B = m.lb**2 - np.sum(P * P, axis=1)
            sw = float(A @ B / max(A @ A, 1e-300))
            return sw, Co, e, float(np.sum((A * sw - B) ** 2))

        def cost2(Le):
            return svals(Le)[3]

        best = min(
            (_golden_section_min(cost2, float(L[j - 1]), float(L[j])), float(L[j - 1]), float(L[j])), key=cost2
        )  # the lock may start at a sample
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
