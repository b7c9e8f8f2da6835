"""Independent references for validation: a linear-elasticity FEM solve (scipy sparse direct) and beam theory."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

PSI = 6894.757  # Pa per psi


def linear_tet_element_stiffness(vertices: np.ndarray, tets: np.ndarray, youngs: float, nu: float) -> np.ndarray:
    """Element stiffness matrices (m, 12, 12) of constant-strain tets (standard B-matrix formulation, engineering shear
    strains), dofs ordered (vertex, axis)."""
    lam = youngs * nu / ((1 + nu) * (1 - 2 * nu))
    mu = youngs / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[np.arange(3), np.arange(3)] += 2 * mu
    D[3:, 3:] = np.eye(3) * mu
    out = np.empty((len(tets), 12, 12))
    for k, tet in enumerate(tets):
        M = np.ones((4, 4))
        M[:, 1:] = vertices[tet]
        V = abs(np.linalg.det(M)) / 6.0
        grads = np.linalg.inv(M)[1:, :].T  # (4, 3): ∇N_a
        B = np.zeros((6, 12))
        for a in range(4):
            gx, gy, gz = grads[a]
            B[:, 3 * a : 3 * a + 3] = [[gx, 0, 0], [0, gy, 0], [0, 0, gz], [0, gz, gy], [gz, 0, gx], [gy, gx, 0]]
        out[k] = V * B.T @ D @ B
    return out


def assemble_tet_matrices(tets: np.ndarray, blocks: np.ndarray, particle_count: int) -> sp.csr_matrix:
    """Global (3n, 3n) matrix from per-tet (m, 12, 12) blocks."""
    dofs = (3 * np.asarray(tets)[:, :, None] + np.arange(3)).reshape(len(tets), 12)
    rows = np.repeat(dofs, 12, axis=1).ravel()
    cols = np.tile(dofs, (1, 12)).ravel()
    n = 3 * particle_count
    return sp.csr_matrix((blocks.ravel(), (rows, cols)), shape=(n, n))


def linear_tet_stiffness(vertices: np.ndarray, tets: np.ndarray, youngs: float, nu: float) -> sp.csr_matrix:
    """Global stiffness K of constant-strain tets (standard B-matrix formulation, engineering shear strains)."""
    vertices = np.asarray(vertices, dtype=np.float64)
    return assemble_tet_matrices(tets, linear_tet_element_stiffness(vertices, tets, youngs, nu), len(vertices))


def linear_fem_displacement(vertices, tets, youngs, nu, density, gravity, fixed) -> np.ndarray:
    """Static displacement (n, 3) under gravity with lumped (= consistent, for linear tets) body loads."""
    vertices = np.asarray(vertices, dtype=np.float64)
    K = linear_tet_stiffness(vertices, tets, youngs, nu)
    f = np.zeros((len(vertices), 3))
    x = vertices[tets]
    vol = np.abs(np.linalg.det(np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1)))) / 6.0
    for a in range(4):
        np.add.at(f, tets[:, a], (density * vol / 4.0)[:, None] * np.asarray(gravity)[None, :])
    free = np.ones(len(vertices), dtype=bool)
    free[fixed] = False
    dof = np.repeat(free, 3)
    u = np.zeros(3 * len(vertices))
    u[dof] = spla.spsolve(K[dof][:, dof].tocsc(), f.ravel()[dof])
    return u.reshape(-1, 3)


def cantilever_tip_deflection(length, width, depth, youngs, nu, density, g) -> float:
    """Euler-Bernoulli + Timoshenko shear tip deflection of a clamped beam under self-weight [m]."""
    area = width * depth
    q = density * g * area
    inertia = width * depth**3 / 12.0
    shear_modulus = youngs / (2 * (1 + nu))
    kappa = 10 * (1 + nu) / (12 + 11 * nu)  # rectangular section (Cowper)
    return q * length**4 / (8 * youngs * inertia) + q * length**2 / (2 * kappa * shear_modulus * area)


def link_static_curvature(config, pressure_psi: float) -> float:
    """Static curvature [1/m] of one free soft link (``robots.snake_link`` mesh and constraint families) with chamber 0
    at gauge ``pressure_psi`` (chamber 1 for a negative value), from one sparse direct solve of the linearised model:
    linear tets (``link_material``'s E, ν of ``config``), the layer and perimeter rows as hard linear constraints
    (Lagrange multipliers),
    the pressurised chamber's actuation rows as springs of stiffness 1/compliance whose rest length is scaled by
    ε(p) = 1 + p/Y (Eq. 4; the vented chamber's are off, as in ``SnakeSim``).
    The first cross-section is clamped and the last one moves as a rigid body (the carriages' attachments); no
    gravity, no ground. Curvature = yaw of the last section / link length, as ``SnakeSim.curvatures`` measures it."""
    from softsnake.robots.snake import actuation_compliance, link_material
    from softsnake.robots.snake_link import link_mesh

    c = config
    mesh = link_mesh(c.link_length, c.link_radius, c.sections, c.inner_ring)
    X = np.asarray(mesh.vertices, dtype=np.float64)
    n = len(X)
    K = linear_tet_stiffness(X, mesh.tets, link_material(c)[0], c.poisson_ratio)
    # reduced coordinates: free particles of the inner sections (3 each) + the rigid motion (t, ω) of the last section
    last = int(mesh.section.max())
    inner = np.nonzero((mesh.section > 0) & (mesh.section < last))[0]
    tip = np.nonzero(mesh.section == last)[0]
    centre = X[tip].mean(axis=0)
    m = 3 * len(inner) + 6
    rows, cols, vals = [], [], []
    for k, i in enumerate(inner):
        for d in range(3):
            rows.append(3 * i + d), cols.append(3 * k + d), vals.append(1.0)
    base = 3 * len(inner)
    for i in tip:
        r = X[i] - centre
        cross = np.array([[0.0, r[2], -r[1]], [-r[2], 0.0, r[0]], [r[1], -r[0], 0.0]])  # u = t + ω × r = t + cross·ω
        for d in range(3):
            rows.append(3 * i + d), cols.append(base + d), vals.append(1.0)
            for e in range(3):
                if cross[d, e] != 0.0:
                    rows.append(3 * i + d), cols.append(base + 3 + e), vals.append(cross[d, e])
    T = sp.csr_matrix((vals, (rows, cols)), shape=(3 * n, m))

    def pair_rows(pairs):
        """(k, 3n) rows e_abᵀ(u_b − u_a): the linearised length change of each pair, and the rest lengths."""
        pairs = np.asarray(pairs)
        d = X[pairs[:, 1]] - X[pairs[:, 0]]
        length = np.linalg.norm(d, axis=1)
        e = d / length[:, None]
        k = np.arange(len(pairs))
        r = np.repeat(k, 6)
        cidx = np.concatenate([3 * pairs[:, 0:1] + np.arange(3), 3 * pairs[:, 1:2] + np.arange(3)], axis=1).ravel()
        v = np.concatenate([-e, e], axis=1).ravel()
        return sp.csr_matrix((v, (r, cidx)), shape=(len(pairs), 3 * n)), length

    k_act = 1.0 / actuation_compliance(c, mesh)
    p = float(pressure_psi) * PSI
    active = 0 if p >= 0 else 1
    G, length = pair_rows(mesh.actuation_pairs[mesh.actuation_chamber == active])  # the vented chamber has none
    stretch = abs(p) / c.youngs_modulus * length
    K_total = K + k_act * (G.T @ G)
    f = k_act * (G.T @ stretch)
    H, _ = pair_rows(mesh.hard_pairs(keep_redundant=True))
    Kr = (T.T @ K_total @ T).tocsc()
    Hr = (H @ T).tocsc()
    # hard rows as [K Hᵀ; H −αI] with α = 1e-9 of an actuation row's compliance: regularises rows that the clamp or the
    # rigid end make empty or redundant, and changes the answer by ~1e-9 relative
    alpha = 1e-9 / k_act
    kkt = sp.bmat([[Kr, Hr.T], [Hr, -alpha * sp.identity(Hr.shape[0])]], format="csc")
    rhs = np.concatenate([T.T @ f, np.zeros(Hr.shape[0])])
    sol = spla.spsolve(kkt, rhs)
    return float(sol[base + 5]) / c.link_length
