"""Geometrically exact static reference of one held snake link (float64 NumPy/scipy, no engine code).

``held_link_static(config, psi)`` finds the static equilibrium of exactly the model ``validation.run_held_link``
simulates: the link mesh of ``robots.snake_link`` with the hollow-section material (``robots.snake.link_material``),
corotated linear tets, the layer and perimeter rows as hard distance constraints |x_i − x_j| = r, the pressurised
chamber's actuation rows as springs ½k(|x_i − x_j| − ε r)² with ε = 1 + p/Y and k = 1/compliance (Eq. 4; the vented
chamber's are off), no gravity, no ground, the first cross-section fixed and the last one moving as one rigid body.

Unlike ``reference_fem.link_static_curvature``, which linearises all of it about the rest shape, nothing here is
linearised: the tets' energy is V·ψ(S − I) with F = R·S the polar decomposition and ψ the linear-elastic energy
density (McAdams et al. 2011, Eq. 3: its gradient is exactly P = R·σ(S − I)), the springs and constraints keep their
lengths, and the rigid end keeps its finite rotation. The equilibrium ∇E + Jᵀλ = 0, c = 0 is solved by Newton
iterations on the KKT system with the corotated tangent R·K_e·Rᵀ of each tet (its missing ∂R terms only slow the
iteration; its fixed point is the exact equilibrium) and the springs' and constraints' exact second derivatives.
The actuation springs are compressed by up to ε − 1 = 0.83 at 8 psi, so their transverse (geometric) stiffness
k·(1 − εr/l) is large and negative: this is where the linearised reference and this one part.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .reference_fem import PSI, assemble_tet_matrices


def _rotation(theta: np.ndarray) -> np.ndarray:
    """Rotation matrix of the rotation vector θ (Rodrigues)."""
    a = float(np.linalg.norm(theta))
    if a < 1e-300:
        return np.eye(3)
    k = theta / a
    K = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(a) * K + (1.0 - np.cos(a)) * (K @ K)


def _pair_terms(x: np.ndarray, pairs: np.ndarray):
    """Per pair (i, j): unit direction e, length l and the sparse (k, 3n) Jacobian of l."""
    d = x[pairs[:, 1]] - x[pairs[:, 0]]
    length = np.linalg.norm(d, axis=1)
    e = d / length[:, None]
    k = np.arange(len(pairs))
    cols = np.concatenate([3 * pairs[:, 0:1] + np.arange(3), 3 * pairs[:, 1:2] + np.arange(3)], axis=1).ravel()
    J = sp.csr_matrix(
        (np.concatenate([-e, e], axis=1).ravel(), (np.repeat(k, 6), cols)), shape=(len(pairs), 3 * len(x))
    )
    return e, length, J


def _pair_hessian(pairs: np.ndarray, e: np.ndarray, axial: np.ndarray, transverse: np.ndarray, n: int) -> sp.csr_matrix:
    """Σ over pairs of [[B, −B], [−B, B]] with B = axial·eeᵀ + transverse·(I − eeᵀ), as a (3n, 3n) matrix."""
    ee = e[:, :, None] * e[:, None, :]
    B = axial[:, None, None] * ee + transverse[:, None, None] * (np.eye(3) - ee)
    blocks = np.zeros((len(pairs), 6, 6))
    blocks[:, :3, :3] = blocks[:, 3:, 3:] = B
    blocks[:, :3, 3:] = blocks[:, 3:, :3] = -B
    dofs = np.concatenate([3 * pairs[:, 0:1] + np.arange(3), 3 * pairs[:, 1:2] + np.arange(3)], axis=1)
    rows = np.repeat(dofs, 6, axis=1).ravel()
    cols = np.tile(dofs, (1, 6)).ravel()
    return sp.csr_matrix((blocks.ravel(), (rows, cols)), shape=(3 * n, 3 * n))


def _corotated_tet_hessians(F, R, S, volume, Dm_inv, lam: float, mu: float) -> np.ndarray:
    """Exact (m, 12, 12) Hessians of the tets' energy V·ψ(S − I), ψ(ε) = μ ε:ε + ½λ tr(ε)²: dP = 2μ(dF − dR) +
    λ tr(Rᵀ dF) R + λ (tr S − 3) dR, with the polar rotation's derivative dR = R[w]×,
    (tr S·I − S) w = 2 axial(skew(Rᵀ dF))
    (from dF = dR·S + R·dS with Rᵀ dR skew and dS symmetric)."""
    m = len(F)
    trS = np.trace(S, axis1=1, axis2=2)
    inv_tS = np.linalg.inv(trS[:, None, None] * np.eye(3) - S)
    out = np.empty((m, 12, 12))
    for b in range(4):
        for d in range(3):
            dDs = np.zeros((m, 3, 3))
            if b == 0:
                dDs[:, d, :] = -1.0
            else:
                dDs[:, d, b - 1] = 1.0
            dF = dDs @ Dm_inv
            M = np.einsum("tji,tjk->tik", R, dF)
            A = 0.5 * (M - np.transpose(M, (0, 2, 1)))
            w = 2.0 * np.einsum("tij,tj->ti", inv_tS, np.stack([A[:, 2, 1], A[:, 0, 2], A[:, 1, 0]], axis=1))
            W = np.zeros((m, 3, 3))
            W[:, 0, 1], W[:, 0, 2], W[:, 1, 2] = -w[:, 2], w[:, 1], -w[:, 0]
            W -= np.transpose(W, (0, 2, 1))
            dR = R @ W
            trM = np.trace(M, axis1=1, axis2=2)
            dP = 2 * mu * (dF - dR) + lam * trM[:, None, None] * R + lam * (trS - 3.0)[:, None, None] * dR
            dG = volume[:, None, None] * np.einsum("tij,tkj->tik", dP, Dm_inv)  # columns: d(∂E/∂x_1..3)
            col = 3 * b + d
            out[:, 3:, col] = np.transpose(dG, (0, 2, 1)).reshape(m, 9)
            out[:, :3, col] = -dG.sum(axis=2)
    return out


def held_link_static(
    config, pressure_psi: float, *, increments: int = 16, tolerance: float = 1e-9, max_iterations: int = 100
) -> dict:
    """Static equilibrium of the held link at chamber-0 gauge pressure ``pressure_psi`` (≥ 0) [psi].

    The pressure is raised to its value in ``increments`` equal steps; at each, Newton iterations solve the KKT system
    [H Jᵀ; J −αI] of the reduced coordinates (the inner sections' particles, the last section's rigid translation and
    rotation increment) with the exact Hessian of the energy and of λ·c, until the reduced force falls below
    ``tolerance`` × the actuation's out-of-balance force at rest. α = 1e-12 × an actuation row's compliance
    regularises the KKT system (the hard rows are those of ``LinkMesh.hard_pairs``, none of them redundant).

    Returns dict(curvature [1/m]: yaw of the last section / link length, as ``SnakeSim.curvatures``; positions (n, 3)
    [m]; iterations (total); residual: the largest reduced force [N] at the solution)."""
    from .robots.snake import actuation_compliance, link_material
    from .robots.snake_link import link_mesh

    c = config
    if pressure_psi < 0:
        raise ValueError("held_link_static: the pressure must be ≥ 0 psi (chamber 0 pressurised)")
    mesh = link_mesh(c.link_length, c.link_radius, c.sections, c.inner_ring)
    X = np.asarray(mesh.vertices, dtype=np.float64)
    n = len(X)
    tets = np.asarray(mesh.tets)
    youngs, _ = link_material(c)
    nu = c.poisson_ratio
    lam = youngs * nu / ((1 + nu) * (1 - 2 * nu))
    mu = youngs / (2 * (1 + nu))
    Dm = np.transpose(X[tets[:, 1:]] - X[tets[:, :1]], (0, 2, 1))
    Dm_inv = np.linalg.inv(Dm)
    volume = np.abs(np.linalg.det(Dm)) / 6.0

    last = int(mesh.section.max())
    inner = np.nonzero((mesh.section > 0) & (mesh.section < last))[0]
    tip = np.nonzero(mesh.section == last)[0]
    base = 3 * len(inner)
    hard = mesh.hard_pairs()  # the simulated model's rows (the end sections are held rigid by the clamp and the body)
    hard_rest = np.linalg.norm(X[hard[:, 1]] - X[hard[:, 0]], axis=1)
    act = mesh.actuation_pairs[mesh.actuation_chamber == 0]
    act_length = np.linalg.norm(X[act[:, 1]] - X[act[:, 0]], axis=1)
    k_act = 1.0 / actuation_compliance(c, mesh)
    alpha = 1e-12 / k_act

    def reduced_map(x):
        """T: reduced increments → particle increments at x (δx = δt + δθ × (x − centre) on the last section)."""
        centre = x[tip].mean(axis=0)
        rows, cols, vals = [], [], []
        for k, i in enumerate(inner):
            rows += [3 * i, 3 * i + 1, 3 * i + 2]
            cols += [3 * k, 3 * k + 1, 3 * k + 2]
            vals += [1.0, 1.0, 1.0]
        for i in tip:
            r = x[i] - centre
            cross = np.array([[0.0, r[2], -r[1]], [-r[2], 0.0, r[0]], [r[1], -r[0], 0.0]])
            for d in range(3):
                rows.append(3 * i + d), cols.append(base + d), vals.append(1.0)
                for f in range(3):
                    if cross[d, f] != 0.0:
                        rows.append(3 * i + d), cols.append(base + 3 + f), vals.append(cross[d, f])
        return sp.csr_matrix((vals, (rows, cols)), shape=(3 * n, base + 6)), centre

    x = X.copy()
    R_end = np.eye(3)
    multipliers = np.zeros(len(hard))
    total = 0
    first = None
    for step in range(1, increments + 1):
        act_rest = act_length * (1.0 + pressure_psi * step / increments * PSI / c.youngs_modulus)  # ε(p), Eq. 4
        for _ in range(max_iterations):
            F = np.einsum("tij,tjk->tik", np.transpose(x[tets[:, 1:]] - x[tets[:, :1]], (0, 2, 1)), Dm_inv)
            U, _, Vt = np.linalg.svd(F)
            U[np.linalg.det(U @ Vt) < 0, :, 2] *= -1.0
            R = U @ Vt  # polar rotation, det +1 (as kernels/tet.polar_rotation)
            S = np.einsum("tji,tjk->tik", R, F)
            eps = 0.5 * (S + np.transpose(S, (0, 2, 1))) - np.eye(3)
            sigma = lam * np.trace(eps, axis1=1, axis2=2)[:, None, None] * np.eye(3) + 2 * mu * eps
            Hf = volume[:, None, None] * np.einsum("tij,tjk,tlk->til", R, sigma, Dm_inv)  # V·P·Dm⁻ᵀ: ∂E/∂x_1..3
            g = np.zeros((n, 3))
            for a in range(3):
                np.add.at(g, tets[:, a + 1], Hf[:, :, a])
                np.add.at(g, tets[:, 0], -Hf[:, :, a])
            e_a, l_a, J_a = _pair_terms(x, act)
            stretch = l_a - act_rest
            g = g.ravel() + k_act * (J_a.T @ stretch)
            e_h, l_h, J_h = _pair_terms(x, hard)
            constraint = l_h - hard_rest
            T, centre = reduced_map(x)
            residual = float(np.abs(T.T @ (g + J_h.T @ multipliers)).max())
            first = first or max(residual, 1e-300)
            floor = 1e-12 * (1.0 + float(np.abs(multipliers).max()))  # float64 round-off of the rows' forces [N]
            if (
                residual <= max(tolerance * first * step / increments, floor)
                and np.abs(constraint).max() <= 1e-8 * c.link_length
            ):
                break
            H = assemble_tet_matrices(tets, _corotated_tet_hessians(F, R, S, volume, Dm_inv, lam, mu), n)
            H = H + _pair_hessian(act, e_a, np.full(len(act), k_act), k_act * stretch / l_a, n)
            H = H + _pair_hessian(hard, e_h, np.zeros(len(hard)), multipliers / l_h, n)
            Jr = (J_h @ T).tocsc()
            kkt = sp.bmat([[(T.T @ H @ T).tocsc(), Jr.T], [Jr, -alpha * sp.identity(len(hard))]], format="csc")
            sol = spla.spsolve(kkt, np.concatenate([-(T.T @ g), -constraint]))
            dz, multipliers = sol[: base + 6], sol[base + 6 :]
            x[inner] += dz[:base].reshape(-1, 3)
            rot = _rotation(dz[base + 3 :])
            x[tip] = centre + dz[base : base + 3] + (x[tip] - centre) @ rot.T
            R_end = rot @ R_end
            total += 1
        else:
            raise RuntimeError(
                f"held_link_static did not converge at {pressure_psi * step / increments:.3g} psi "
                f"(residual {residual:.3g} N)"
            )
    return dict(
        curvature=float(np.arctan2(R_end[1, 0], R_end[0, 0])) / c.link_length,
        positions=x,
        iterations=total,
        residual=residual,
        multipliers=multipliers,
    )
