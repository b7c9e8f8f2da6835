"""Patch test of one corotational tet against linear-elastic energy (the shear note of docs/formulation.md §3)."""

import numpy as np
import pytest
import warp as wp

from softsnake.kernels.tet import (
    polar_rotation,
    tet_compliance_times,
    tet_deformation_gradient,
    tet_jacobian_times,
    tet_strain,
    tet_vertex_forces,
)
from softsnake.kernels.types import vec6


@wp.kernel
def _tet_energy(
    x: wp.array(dtype=wp.vec3), B: wp.mat33, volume: float, youngs: float, nu: float, out: wp.array(dtype=float)
):
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
    wp.launch(
        _tet_energy,
        dim=1,
        inputs=[wp.array(x, dtype=wp.vec3), wp.mat33(*np.linalg.inv(Dm).ravel()), V, youngs, nu, out],
    )
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
    # the corotated energy of a finite strain differs from the linear one at second order: measured ≤ 1.3e-3 relative
    assert U == pytest.approx(ref, rel=3.9e-3)


def test_shear_energy_is_2GVeps2():
    youngs, nu, e = 2.0e5, 0.3, 1e-3
    eps = np.array([[0, e, 0], [e, 0, 0], [0, 0, 0]])
    U, V = _energy(X, X @ (np.eye(3) + eps).T, youngs, nu)
    G = youngs / (2 * (1 + nu))
    assert U == pytest.approx(2 * G * V * e**2, rel=6.1e-5)  # measured 2.0e-5


@wp.kernel
def _jacobian_checks(
    x: wp.array(dtype=wp.vec3),
    a: wp.array(dtype=wp.vec3),
    lam: vec6,
    B: wp.mat33,
    out: wp.array(dtype=float),
):
    F = tet_deformation_gradient(x[0], x[1], x[2], x[3], B)
    R = polar_rotation(F)
    ja = tet_jacobian_times(R, B, a[0], a[1], a[2], a[3])
    # the strain is linear in the positions at fixed R: c(x + a) − c(x) = J a
    dc = tet_strain(R, tet_deformation_gradient(x[0] + a[0], x[1] + a[1], x[2] + a[2], x[3] + a[3], B)) - tet_strain(
        R, F
    )
    P = tet_vertex_forces(R, B, lam)
    f1 = wp.vec3(P[0, 0], P[1, 0], P[2, 0])
    f2 = wp.vec3(P[0, 1], P[1, 1], P[2, 1])
    f3 = wp.vec3(P[0, 2], P[1, 2], P[2, 2])
    f0 = -(f1 + f2 + f3)
    for r in range(6):
        out[r] = ja[r]
        out[6 + r] = dc[r]
    out[12] = wp.dot(lam, ja)  # λ·(J a)
    out[13] = wp.dot(f0, a[0]) + wp.dot(f1, a[1]) + wp.dot(f2, a[2]) + wp.dot(f3, a[3])  # (Jᵀλ)·a


def test_closed_form_jacobian_is_the_strain_derivative_and_its_transpose_the_forces():
    """J_t a (one 3×3 product) equals the change of the corotated strain at fixed R, and the vertex forces are its exact
    transpose, for a rotated, sheared tet."""
    rng = np.random.default_rng(3)
    Dm = (X[1:] - X[0]).T
    F0 = np.eye(3) + 0.2 * rng.normal(size=(3, 3))
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    q *= np.sign(np.linalg.det(q))
    x = (X - X[0]) @ (q @ F0).T
    a = 1e-3 * rng.normal(size=(4, 3))
    lam = rng.normal(size=6)
    out = wp.zeros(14, dtype=float)
    wp.launch(
        _jacobian_checks,
        dim=1,
        inputs=[
            wp.array(x, dtype=wp.vec3),
            wp.array(a, dtype=wp.vec3),
            vec6(*lam),
            wp.mat33(*np.linalg.inv(Dm).ravel()),
            out,
        ],
    )
    o = out.numpy().astype(np.float64)
    # the difference of two O(1) float32 strains carries their round-off: measured 1.47e-7 (this machine, 2026-11-27);
    # bound 3×
    np.testing.assert_allclose(o[:6], o[6:12], atol=4.5e-7)
    assert np.abs(o[:6]).max() > 1e-2
    # measured 0.0 apart (this machine, 2026-11-27), but the two float32 sums add in different orders (not exact by
    # construction): a floor of 4 float32 ulps of the product (its six terms' magnitudes add up to 1.1× it)
    assert abs(o[12] - o[13]) <= 4 * np.finfo(np.float32).eps * abs(o[12])
