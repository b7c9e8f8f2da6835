"""Independent references for validation: a linear-elasticity FEM solve (scipy sparse direct, imported on use) and beam theory."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla


def linear_tet_stiffness(vertices: np.ndarray, tets: np.ndarray, youngs: float, nu: float) -> sp.csr_matrix:
    """Global stiffness K of constant-strain tets (standard B-matrix formulation, engineering shear strains)."""
    lam = youngs * nu / ((1 + nu) * (1 - 2 * nu))
    mu = youngs / (2 * (1 + nu))
    D = np.zeros((6, 6))
    D[:3, :3] = lam
    D[np.arange(3), np.arange(3)] += 2 * mu
    D[3:, 3:] = np.eye(3) * mu
    rows, cols, vals = [], [], []
    for tet in tets:
        X = vertices[tet]
        M = np.ones((4, 4))
        M[:, 1:] = X
        V = abs(np.linalg.det(M)) / 6.0
        grads = np.linalg.inv(M)[1:, :].T  # (4, 3): ∇N_a
        B = np.zeros((6, 12))
        for a in range(4):
            gx, gy, gz = grads[a]
            B[:, 3 * a : 3 * a + 3] = [[gx, 0, 0], [0, gy, 0], [0, 0, gz], [0, gz, gy], [gz, 0, gx], [gy, gx, 0]]
        Ke = V * B.T @ D @ B
        dofs = (3 * np.asarray(tet)[:, None] + np.arange(3)).ravel()
        rows.append(np.repeat(dofs, 12))
        cols.append(np.tile(dofs, 12))
        vals.append(Ke.ravel())
    n = 3 * len(vertices)
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))


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
