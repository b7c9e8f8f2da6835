"""An independent NumPy re-implementation of the original planar vine step (Jitosho et al. 2021, Sec. II-H, Eq. 15):
one quadratic program per step, every constraint linearised at q_k. It does not use the engine; it exists to tell
model differences from solver differences when the ``jitosho`` preset is compared with the Julia rollouts.

The step, with Δt, M = diag(m, m, I) per body, F the explicit spring-damper torques at (q_k, v_k) (Eq. 7–8):
    min_v ½ vᵀMv − vᵀ(M v_k + F Δt)
    s.t. c(q_k)/Δt + J(q_k) v = 0                          (base pin, pins Eq. 2, prismatic collinearity Eq. 3)
         Φ(q_k)/Δt + L(q_k) v ≥ 0                          (Eq. 13; every contact point against every obstacle)
         g(q_k, v_k) + G_q(q_k, v_k) v Δt + G_v (v − v_k) = u   (Eq. 14; g = d|h|/dt of each link's two bodies)
    q_{k+1} = q_k + Δt v
Contact point: the distal end of each link's second body. Φ of a rectangle is the original's polygon distance: per
side, the distance to the nearer end point where the point projects outside the side, else the signed distance to
the side's line; Φ is the smallest non-negative one (the largest if all are negative) minus the tube radius, and the
normal is the *face normal of that side* — also in the corner regions, where a closest-point distance would use the
radial direction. Units inside are the original's (mm, the model's mass unit, s), which matters for a solver with
absolute tolerances; the public functions take and return SI.

``solver="exact"`` solves the QP to machine precision (primal active set: few contacts are active at once);
``solver="osqp"`` uses OSQP (optional dependency) with the settings of the original, ``ORIGINAL_OSQP_SETTINGS``:
OSQP's defaults of the time (ε_abs = ε_rel = 1e-3, no polishing), i.e. no duality-gap termination check and the
adaptive-ρ interval fixed at 25 iterations with OSQP ≥ 1.0. Measured on ``rectangles_1`` (docs/vine.md): the OSQP
rollout reproduces the Julia csv to 0.01 mm mean body error, the exact solution of the same QPs is 27.9 mm away.

Run: ``python -m softsnake.experiments.vine_qp_reference --rects R.rects --reference R.csv [--solver osqp]``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass

import numpy as np

#: OSQP settings that reproduce the original's solves (its OSQP defaults; see the module docstring)
ORIGINAL_OSQP_SETTINGS = dict(
    eps_abs=1e-3, eps_rel=1e-3, polishing=False, check_dualgap=False, adaptive_rho_interval=25
)

MM = 1.0e3  # original length unit per metre


@dataclass
class OriginalVine:
    """The original model's parameters in its own units (mm, model mass unit, s). Build it with :meth:`from_config`."""

    links: int
    d: float  # body half length [mm]
    stiffness: float  # K [mass·mm²/s²/rad]
    damping: float  # C [mass·mm²/s/rad]
    mass: float
    inertia: float  # [mass·mm²]
    diameter: float  # tube diameter [mm]
    heading: float  # θ0 [rad] (rest angle of the base spring)
    growth_rate: float  # per prismatic joint [mm/s]
    dt: float  # [s]

    @classmethod
    def from_config(cls, cfg) -> "OriginalVine":
        """From a ``jitosho`` :class:`~softsnake.robots.vine.VineConfig` (SI; the mass unit is kept)."""
        if cfg.preset != "jitosho" or cfg.bending != "linear":
            raise ValueError("the original step is the jitosho preset with linear bending")
        return cls(
            cfg.links,
            cfg.half_length * MM,
            cfg.stiffness * MM**2,
            cfg.damping * MM**2,
            cfg.mass,
            cfg.inertia * MM**2,
            2 * cfg.radius * MM,
            cfg.heading,
            cfg.growth_rate * MM,
            cfg.dt,
        )

    @property
    def body_count(self) -> int:
        return 2 * self.links


# ------------------------------------------------------------------ constraint rows (q, v: (3·bodies,) x, y, θ)
def joint_rows(m: OriginalVine, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """c(q) and J = ∂c/∂q: base pin at the origin, pins between links (Eq. 2), collinear bodies of a link (Eq. 3)."""
    nb = m.body_count
    x, y, th = q[0::3], q[1::3], q[2::3]
    d = m.d
    c = np.zeros(4 * m.links)
    J = np.zeros((4 * m.links, 3 * nb))
    c[0], c[1] = x[0] - d * math.cos(th[0]), y[0] - d * math.sin(th[0])
    J[0, [0, 2]] = 1.0, d * math.sin(th[0])
    J[1, [1, 2]] = 1.0, -d * math.cos(th[0])
    r = 2
    for k in range(1, m.links):  # distal end of body a = proximal end of body b
        a, b = 2 * k - 1, 2 * k
        c[r] = x[b] - x[a] - d * (math.cos(th[a]) + math.cos(th[b]))
        c[r + 1] = y[b] - y[a] - d * (math.sin(th[a]) + math.sin(th[b]))
        J[r, [3 * a, 3 * b, 3 * a + 2, 3 * b + 2]] = -1.0, 1.0, d * math.sin(th[a]), d * math.sin(th[b])
        J[r + 1, [3 * a + 1, 3 * b + 1, 3 * a + 2, 3 * b + 2]] = -1.0, 1.0, -d * math.cos(th[a]), -d * math.cos(th[b])
        r += 2
    for k in range(m.links):  # b_s · h = 0 for both bodies s of the link, h = centre a → centre b
        a, b = 2 * k, 2 * k + 1
        hx, hy = x[b] - x[a], y[b] - y[a]
        for s in (a, b):
            sn, cs = math.sin(th[s]), math.cos(th[s])
            c[r] = -sn * hx + cs * hy
            J[r, [3 * a, 3 * a + 1, 3 * b, 3 * b + 1]] = sn, -cs, -sn, cs
            J[r, 3 * s + 2] += -cs * hx - sn * hy
            r += 1
    return c, J


def growth_rows(m: OriginalVine, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """g = d|h|/dt per link (h between the link's two body centres), G_q = ∂g/∂q, G_v = ∂g/∂v."""
    nb = m.body_count
    g = np.zeros(m.links)
    Gq = np.zeros((m.links, 3 * nb))
    Gv = np.zeros((m.links, 3 * nb))
    for k in range(m.links):
        a, b = 2 * k, 2 * k + 1
        h = q[3 * b : 3 * b + 2] - q[3 * a : 3 * a + 2]
        dv = v[3 * b : 3 * b + 2] - v[3 * a : 3 * a + 2]
        n = math.hypot(h[0], h[1])
        g[k] = h @ dv / n
        dg = dv / n - (h @ dv) * h / n**3
        Gq[k, 3 * b : 3 * b + 2], Gq[k, 3 * a : 3 * a + 2] = dg, -dg
        Gv[k, 3 * b : 3 * b + 2], Gv[k, 3 * a : 3 * a + 2] = h / n, -h / n
    return g, Gq, Gv


def rect_distance(rect: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The original's polygon distance of points p (n, 2) to an axis-aligned rectangle (x, y, w, h): Φ (n,), face
    normals (n, 2). Sides in the original's order: left, top, right, bottom."""
    x0, y0, w, h = rect
    corners = np.array([[x0, y0], [x0, y0 + h], [x0 + w, y0 + h], [x0 + w, y0]])
    normals = np.array([[-1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, -1.0]])
    ds = np.zeros((len(p), 4))
    for i in range(4):
        a, b = corners[i], corners[(i + 1) % 4]
        t = b - a
        before = (a - p) @ t > 0.0
        after = (p - b) @ t > 0.0
        ds[:, i] = np.where(
            before, np.linalg.norm(a - p, axis=1), np.where(after, np.linalg.norm(p - b, axis=1), (p - b) @ normals[i])
        )
    inside = np.all(ds < 0.0, axis=1)
    pick = np.where(inside, np.argmax(ds, axis=1), np.argmin(np.where(ds >= 0.0, ds, np.inf), axis=1))
    return ds[np.arange(len(p)), pick], normals[pick]


def contact_rows(m: OriginalVine, q: np.ndarray, rects_mm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Φ(q) (gap minus tube radius) and L = ∂Φ/∂q for every (obstacle, link) pair."""
    nb = m.body_count
    b = np.arange(1, nb, 2)
    x, y, th = q[3 * b], q[3 * b + 1], q[3 * b + 2]
    p = np.stack([x + m.d * np.cos(th), y + m.d * np.sin(th)], axis=1)
    phis, rows = [], []
    for rect in rects_mm:
        phi, n = rect_distance(rect, p)
        L = np.zeros((m.links, 3 * nb))
        L[np.arange(m.links), 3 * b] = n[:, 0]
        L[np.arange(m.links), 3 * b + 1] = n[:, 1]
        L[np.arange(m.links), 3 * b + 2] = m.d * (-n[:, 0] * np.sin(th) + n[:, 1] * np.cos(th))
        phis.append(phi - m.diameter / 2)
        rows.append(L)
    if not rows:
        return np.zeros(0), np.zeros((0, 3 * nb))
    return np.concatenate(phis), np.vstack(rows)


def spring_forces(m: OriginalVine, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """F(q, v) = R τ, τ = −K θ − C θ̇ at the base pin (θ from θ0) and at every pin between links (Eq. 7–8)."""
    th, om = q[2::3], v[2::3]
    F = np.zeros_like(q)
    for k in range(m.links):
        child = 2 * k
        ang, rate = (th[0] - m.heading, om[0]) if k == 0 else (th[child] - th[child - 1], om[child] - om[child - 1])
        tau = -m.stiffness * ang - m.damping * rate
        F[3 * child + 2] += tau
        if k > 0:
            F[3 * (child - 1) + 2] -= tau
    return F


# ------------------------------------------------------------------ the QP
def solve_qp_active_set(Mdiag, r, Aeq, beq, Ain, bin_, *, tol: float = 1e-12, max_changes: int = 500) -> np.ndarray:
    """min ½vᵀ diag(M) v − rᵀv s.t. Aeq v = beq, Ain v ≥ bin (primal active set on the Schur complement)."""
    Minv = 1.0 / Mdiag
    active: list[int] = []
    for _ in range(max_changes):
        A = np.vstack([Aeq, Ain[active]]) if active else Aeq
        b = np.concatenate([beq, bin_[active]]) if active else beq
        mu = np.linalg.solve((A * Minv) @ A.T, b - A @ (Minv * r))
        v = Minv * (r + A.T @ mu)
        mu_in = mu[len(beq) :]
        if active and mu_in.min() < -tol:
            active.pop(int(np.argmin(mu_in)))
            continue
        viol = bin_ - Ain @ v
        viol[active] = -np.inf
        if len(viol) and viol.max() > tol:
            active.append(int(np.argmax(viol)))
            continue
        return v
    raise RuntimeError("active-set QP did not converge")


def qp_step(
    m: OriginalVine,
    q: np.ndarray,
    v: np.ndarray,
    rects_mm: np.ndarray,
    *,
    solver: str = "exact",
    osqp_settings: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One step of the original (original units): returns q_{k+1}, v_{k+1}."""
    nb = m.body_count
    Mdiag = np.tile([m.mass, m.mass, m.inertia], nb)
    c, J = joint_rows(m, q)
    g, Gq, Gv = growth_rows(m, q, v)
    phi, L = contact_rows(m, q, rects_mm)
    r = Mdiag * v + spring_forces(m, q, v) * m.dt
    Aeq = np.vstack([J, Gq * m.dt + Gv])
    beq = np.concatenate([-c / m.dt, m.growth_rate - (g - Gv @ v)])
    if solver == "exact":
        v1 = solve_qp_active_set(Mdiag, r, Aeq, beq, L, -phi / m.dt)
    elif solver == "osqp":
        v1 = _solve_osqp(Mdiag, r, Aeq, beq, L, -phi / m.dt, {**ORIGINAL_OSQP_SETTINGS, **(osqp_settings or {})})
    else:
        raise ValueError(f"solver must be 'exact' or 'osqp', got {solver!r}")
    return q + m.dt * v1, v1


def _solve_osqp(Mdiag, r, Aeq, beq, Ain, bin_, settings: dict) -> np.ndarray:
    try:
        import osqp
        import scipy.sparse as sp
    except ImportError as exc:  # optional: only this comparison needs it
        raise ValueError("solver='osqp' needs the osqp and scipy packages (pip install osqp)") from exc
    A = sp.csc_matrix(np.vstack([Ain, Aeq]))
    lo = np.concatenate([bin_, beq])
    hi = np.concatenate([np.full(len(bin_), np.inf), beq])
    s = osqp.OSQP()
    s.setup(P=sp.csc_matrix(np.diag(Mdiag)), q=-r, A=A, l=lo, u=hi, verbose=False, **settings)
    try:
        res = s.solve(raise_error=False)
    except TypeError:  # OSQP < 1.0
        res = s.solve()
    if res.x is None or not np.all(np.isfinite(res.x)):
        raise RuntimeError(f"OSQP failed: {res.info.status}")
    return np.asarray(res.x)


def initial_state(m: OriginalVine) -> tuple[np.ndarray, np.ndarray]:
    """Straight vine at the heading, bodies abutting (data README), at rest (original units)."""
    i = np.arange(m.body_count)
    q = np.zeros((m.body_count, 3))
    q[:, 0] = (2 * i + 1) * m.d * math.cos(m.heading)
    q[:, 1] = (2 * i + 1) * m.d * math.sin(m.heading)
    q[:, 2] = m.heading
    return q.reshape(-1), np.zeros(3 * m.body_count)


def _to_original(a: np.ndarray) -> np.ndarray:
    return (np.asarray(a, dtype=np.float64) * np.array([MM, MM, 1.0])).reshape(-1)


def _to_si(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1, 3) / np.array([MM, MM, 1.0])


def step_si(
    cfg, q, v, rects_m, *, solver: str = "exact", osqp_settings: dict | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One original step from planar poses q (B, 3) and velocities v (B, 3) in SI; returns (q, v) (B, 3) in SI."""
    m = OriginalVine.from_config(cfg)
    q1, v1 = qp_step(
        m,
        _to_original(q),
        _to_original(v),
        np.asarray(rects_m, dtype=np.float64).reshape(-1, 4) * MM,
        solver=solver,
        osqp_settings=osqp_settings,
    )
    return _to_si(q1), _to_si(v1)


def rollout(cfg, rects_m, steps: int, *, solver: str = "exact", osqp_settings: dict | None = None) -> np.ndarray:
    """Planar poses (steps + 1, bodies, 3) [m, m, rad] of the original step from the straight initial state."""
    m = OriginalVine.from_config(cfg)
    rects = np.asarray(rects_m, dtype=np.float64).reshape(-1, 4) * MM
    q, v = initial_state(m)
    out = [q]
    for _ in range(int(steps)):
        q, v = qp_step(m, q, v, rects, solver=solver, osqp_settings=osqp_settings)
        out.append(q)
    return np.stack([_to_si(a) for a in out])


def main(argv=None) -> int:
    from softsnake.experiments.vine_julia import compare_to_reference
    from softsnake.io.vine_data import read_julia_rollout, read_rects
    from softsnake.robots.vine import VineConfig

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rects", required=True)
    ap.add_argument("--reference", required=True, help="Julia rollout csv")
    ap.add_argument("--solver", choices=("exact", "osqp"), default="exact")
    ap.add_argument(
        "--engine", help="optional rollout.npz of the engine (softsnake vine rollout) to compare with this solve"
    )
    args = ap.parse_args(argv)
    cfg = VineConfig.preset_config("jitosho")
    q_ref, _ = read_julia_rollout(args.reference, bodies=2 * cfg.links)
    t0 = time.perf_counter()
    q = rollout(cfg, read_rects(args.rects), len(q_ref) - 1, solver=args.solver)
    c = compare_to_reference(q, q_ref)
    out = dict(
        solver=args.solver,
        steps=c.steps,
        seconds=time.perf_counter() - t0,
        mean_body_error_mm=1e3 * c.mean_body_error,
        final_tip_error_mm=1e3 * c.final_tip_error,
        max_body_error_mm=1e3 * c.max_body_error,
    )
    if args.engine:
        e = compare_to_reference(np.load(args.engine)["q"], q)
        out.update(engine_vs_this_mean_mm=1e3 * e.mean_body_error, engine_vs_this_final_tip_mm=1e3 * e.final_tip_error)
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
