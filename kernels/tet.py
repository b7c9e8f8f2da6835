"""Corotational linear tetrahedron as six compliant strain rows (paper Eq. 5, docs/formulation.md §3).

Rows are the plain tensor strain components in Voigt order c = (ε11, ε22, ε33, ε23, ε13, ε12) of the corotated strain
ε = ½(RᵀF + FᵀR) − I, with F = Ds·B, B = Dm⁻¹ and R the rotation of the polar decomposition of F (held fixed when
differentiating). The compliance block matching these rows is

    E = 1/(V·Y) · [[1, −ν, −ν], [−ν, 1, −ν], [−ν, −ν, 1]]  ⊕  diag((1+ν)/2, (1+ν)/2, (1+ν)/2)

The shear entries are (1+ν)/(2VY), not the paper's (1+ν)/(VY): with tensor rows the shear energy ½ε²/E_ss must equal
2·G·V·ε² (G = Y/(2(1+ν))), see the shear note in docs/formulation.md §3.
"""

import warp as wp

from .types import vec6


@wp.func
def voigt_i(row: int) -> int:
    """First tensor index of Voigt row (11, 22, 33, 23, 13, 12)."""
    if row < 3:
        return row
    if row == 3:
        return 1
    return 0


@wp.func
def voigt_j(row: int) -> int:
    """Second tensor index of Voigt row (11, 22, 33, 23, 13, 12)."""
    if row < 3:
        return row
    if row == 5:
        return 1
    return 2


@wp.func
def linearisation_point(x_start: wp.array(dtype=wp.vec3), v_lin: wp.array(dtype=wp.vec3), h: float, k: int) -> wp.vec3:
    """x⁻ + h·v⁻ of particle k (world-major): where a step takes its rotations, the tets' (paper Eq. 5) and the
    coarse space's soft bodies' (kernels/primal.py, fit_body_rotation), held for the whole step."""
    return x_start[k] + v_lin[k] * h


@wp.func
def polar_rotation(F: wp.mat33) -> wp.mat33:
    """Rotation factor of F = R·S (reflections pushed into the smallest singular value, det R = +1)."""
    U = wp.mat33()
    sigma = wp.vec3()
    V = wp.mat33()
    wp.svd3(F, U, sigma, V)
    R = U * wp.transpose(V)
    if wp.determinant(R) < 0.0:
        # flip the column of U that belongs to the smallest singular value (svd3 sorts them descending)
        U = wp.mat33(U[0, 0], U[0, 1], -U[0, 2], U[1, 0], U[1, 1], -U[1, 2], U[2, 0], U[2, 1], -U[2, 2])
        R = U * wp.transpose(V)
    return R


@wp.func
def tet_deformation_gradient(x0: wp.vec3, x1: wp.vec3, x2: wp.vec3, x3: wp.vec3, B: wp.mat33) -> wp.mat33:
    """F = [x1−x0, x2−x0, x3−x0] · B (columns are edge vectors)."""
    Ds = wp.mat33(
        x1[0] - x0[0],
        x2[0] - x0[0],
        x3[0] - x0[0],
        x1[1] - x0[1],
        x2[1] - x0[1],
        x3[1] - x0[1],
        x1[2] - x0[2],
        x2[2] - x0[2],
        x3[2] - x0[2],
    )
    return Ds * B


@wp.func
def tet_strain(R: wp.mat33, F: wp.mat33) -> vec6:
    """Corotated small strain in Voigt order (tensor shear components, not engineering γ)."""
    S = wp.transpose(R) * F
    return vec6(
        S[0, 0] - 1.0,
        S[1, 1] - 1.0,
        S[2, 2] - 1.0,
        0.5 * (S[1, 2] + S[2, 1]),
        0.5 * (S[0, 2] + S[2, 0]),
        0.5 * (S[0, 1] + S[1, 0]),
    )


@wp.func
def tet_row_gradient(R: wp.mat33, B: wp.mat33, row: int, vertex: int) -> wp.vec3:
    """∂c_row/∂x_vertex = ½(R[:,i]·b_k[j] + R[:,j]·b_k[i]), b_k = row k−1 of B, b_0 = −(b_1+b_2+b_3)."""
    i = voigt_i(row)
    j = voigt_j(row)
    bi = float(0.0)
    bj = float(0.0)
    if vertex == 0:
        bi = -(B[0, i] + B[1, i] + B[2, i])
        bj = -(B[0, j] + B[1, j] + B[2, j])
    else:
        bi = B[vertex - 1, i]
        bj = B[vertex - 1, j]
    ci = wp.vec3(R[0, i], R[1, i], R[2, i])
    cj = wp.vec3(R[0, j], R[1, j], R[2, j])
    return 0.5 * (ci * bj + cj * bi)


@wp.func
def tet_jacobian_times(R: wp.mat33, B: wp.mat33, a0: wp.vec3, a1: wp.vec3, a2: wp.vec3, a3: wp.vec3) -> vec6:
    """J_t a: the six strain rows applied to per-vertex vectors (velocities, velocity changes).

    In closed form: with the rows' gradients ∂c_ij/∂x_a = ½(R[:,i] b_a[j] + R[:,j] b_a[i]) (tet_row_gradient),
    J_t a = sym(Rᵀ G) in Voigt order with G = Σ_a a_a b_aᵀ = [a1−a0, a2−a0, a3−a0]·B, one 3×3 product instead of
    24 gradient evaluations."""
    S = wp.transpose(R) * tet_deformation_gradient(a0, a1, a2, a3, B)
    return vec6(
        S[0, 0],
        S[1, 1],
        S[2, 2],
        0.5 * (S[1, 2] + S[2, 1]),
        0.5 * (S[0, 2] + S[2, 0]),
        0.5 * (S[0, 1] + S[1, 0]),
    )


@wp.func
def tet_vertex_forces(R: wp.mat33, B: wp.mat33, lam: vec6) -> wp.mat33:
    """J_tᵀ λ for vertices 1–3 as the columns of R·Λ·Bᵀ (vertex 0 gets minus their sum), where Λ is the symmetric
    tensor of the Voigt multipliers (Λ_ii = λ_ii, Λ_ij = Λ_ji = ½λ_ij): the transpose of tet_jacobian_times."""
    L = wp.mat33(
        lam[0],
        0.5 * lam[5],
        0.5 * lam[4],
        0.5 * lam[5],
        lam[1],
        0.5 * lam[3],
        0.5 * lam[4],
        0.5 * lam[3],
        lam[2],
    )
    return R * L * wp.transpose(B)


@wp.func
def tet_compliance_times(x: vec6, nu: float, scale: float) -> vec6:
    """E·x for the isotropic block above; scale = 1/(V·Y) times any time-step factor."""
    s = 0.5 * (1.0 + nu)
    return scale * vec6(
        x[0] - nu * (x[1] + x[2]),
        x[1] - nu * (x[0] + x[2]),
        x[2] - nu * (x[0] + x[1]),
        s * x[3],
        s * x[4],
        s * x[5],
    )


@wp.func
def tet_compliance_diagonal(row: int, nu: float, scale: float) -> float:
    if row < 3:
        return scale
    return scale * 0.5 * (1.0 + nu)


@wp.func
def tet_stiffness_times(c: vec6, nu: float, youngs: float) -> vec6:
    """Linear-elastic stress σ = D·c (Voigt, tensor shear rows) [Pa]; D = E⁻¹ without the volume factor."""
    lam = youngs * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))
    mu = youngs / (2.0 * (1.0 + nu))
    return lame_stress(c, lam, mu)


@wp.func
def lame_stress(c: vec6, lam: float, mu: float) -> vec6:
    """λ·tr(c)·δ + 2μ·c in Voigt order with tensor shear rows (4μ on those), for Lamé parameters (λ, μ) — or any
    common scaling of them, such as the primal product's h(h+β)V·(λ, μ)."""
    tr = c[0] + c[1] + c[2]
    return vec6(
        lam * tr + 2.0 * mu * c[0],
        lam * tr + 2.0 * mu * c[1],
        lam * tr + 2.0 * mu * c[2],
        4.0 * mu * c[3],
        4.0 * mu * c[4],
        4.0 * mu * c[5],
    )


@wp.func
def tet_constitutive_multiplier(
    strain_rate: vec6, nu: float, youngs: float, volume: float, h: float, beta: float
) -> vec6:
    """λ_t = −C_t⁻¹·φ₀ with C_t⁻¹ = h(h+β)·V·D (kernels/tet.py): the impulse that zeroes the tet's rows."""
    s = tet_stiffness_times(strain_rate, nu, youngs)
    return -(h * (h + beta) * volume) * s


@wp.func
def write_tet_forces(R: wp.mat33, B: wp.mat33, lam: vec6, base: int, tet_force: wp.array(dtype=wp.vec3)):
    """tet_force[base + a] = Σ_r ∂c_r/∂x_a · λ_r for the tet's four vertices (its part of Jᵀλ; kernels/tet.py,
    tet_vertex_forces)."""
    P = tet_vertex_forces(R, B, lam)
    f1 = wp.vec3(P[0, 0], P[1, 0], P[2, 0])
    f2 = wp.vec3(P[0, 1], P[1, 1], P[2, 1])
    f3 = wp.vec3(P[0, 2], P[1, 2], P[2, 2])
    tet_force[base] = -(f1 + f2 + f3)
    tet_force[base + 1] = f1
    tet_force[base + 2] = f2
    tet_force[base + 3] = f3
