"""Acceptance 2: patch test of one corotational tet against linear-elastic energy (shear pitfall, solver notes §3)."""

import numpy as np
import pytest
import warp as wp

import softsnake as ss
from softsnake.kernels.tet import polar_rotation, tet_compliance_times, tet_deformation_gradient, tet_strain
from softsnake.kernels.types import vec6


@wp.kernel
def _tet_energy(x: wp.array(dtype=wp.vec3), B: wp.mat33, volume: float, youngs: float, nu: float, out: wp.array(dtype=float)):
    F = tet_deformation_gradient(x[0], x[1], x[2], x[3], B)
    c = tet_strain(polar_rotation(F), F)
    # the solver's compliance block, assembled column by column (the energy ½ cᵀ E⁻¹ c is formed on the host)
    E = wp.matrix(shape=(6, 6), dtype=float)
    for j in range(6):
        e = vec6()
        e[j] = 1.0
        col = tet_compliance_times(e, nu, 1.0 / (volume * youngs))
        for i in range(6):
            E[i, j] = col[i]
    out[0] = 0.0
    for i in range(6):
        out[1 + i] = c[i]
        for j in range(6):
            out[7 + 6 * i + j] = E[i, j]


def _energy(X, x, youngs, nu):
    """Compliant-row energy ½ cᵀ E⁻¹ c from the engine's strain and compliance kernels."""
    Dm = (X[1:] - X[0]).T
    V = abs(np.linalg.det(Dm)) / 6.0
    out = wp.zeros(7 + 36, dtype=float)
    wp.launch(_tet_energy, dim=1, inputs=[wp.array(x, dtype=wp.vec3), wp.mat33(*np.linalg.inv(Dm).ravel()), V, youngs, nu, out])
    o = out.numpy().astype(np.float64)
    c, E = o[1:7], o[7:].reshape(6, 6)
    return 0.5 * c @ np.linalg.solve(E, c), V


def _linear_elastic_energy(eps, youngs, nu, V):
    lam = youngs * nu / ((1 + nu) * (1 - 2 * nu))
    mu = youngs / (2 * (1 + nu))
    return V * (0.5 * lam * np.trace(eps) ** 2 + mu * np.sum(eps * eps))


X = np.array([[0.0, 0.0, 0.0], [0.03, 0.002, 0.001], [0.004, 0.025, 0.003], [0.002, 0.001, 0.028]])


@pytest.mark.parametrize("nu", [0.0, 0.3, 0.45])
@pytest.mark.parametrize(
    "eps",
    [
        np.array([[0, 1e-3, 0], [1e-3, 0, 0], [0, 0, 0]]),  # pure shear ε12
        np.array([[0, 0, 0], [0, 0, 2e-3], [0, 2e-3, 0]]),  # pure shear ε23
        np.array([[2e-3, 0, 0], [0, 0, 0], [0, 0, 0]]),  # uniaxial stretch (strain state)
        np.array([[1e-3, 0, 0], [0, -5e-4, 0], [0, 0, 2e-4]]),  # triaxial
    ],
)
def test_tet_energy_matches_linear_elasticity(eps, nu):
    youngs = 1.0e5
    rot = np.array([[0.36, 0.48, -0.8], [-0.8, 0.6, 0.0], [0.48, 0.64, 0.6]])  # rigid rotation must not matter
    x = (X @ (np.eye(3) + eps).T) @ rot.T + np.array([0.1, -0.2, 0.3])
    U, V = _energy(X, x, youngs, nu)
    ref = _linear_elastic_energy(eps, youngs, nu, V)
    assert U == pytest.approx(ref, rel=0.01)


def test_shear_energy_is_2GVeps2():
    youngs, nu, e = 2.0e5, 0.3, 1e-3
    eps = np.array([[0, e, 0], [e, 0, 0], [0, 0, 0]])
    U, V = _energy(X, X @ (np.eye(3) + eps).T, youngs, nu)
    G = youngs / (2 * (1 + nu))
    assert U == pytest.approx(2 * G * V * e**2, rel=0.01)
