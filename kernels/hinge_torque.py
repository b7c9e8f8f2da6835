"""Explicit hinge torques: torsion springs with a (possibly nonlinear) moment law, evaluated at the start of a step.

τ(θ, θ̇) acts on the child about the hinge axis and −τ on the parent; it enters the step as an external wrench
(M(v⁺ − v⁻) = h·f(x⁻, v⁻) + Jᵀλ), like the bending term F(q_k, v_k)·Δt of the planar vine models
(Jitosho et al. 2021 Eq. 7–9, Chen et al. 2025 Eq. 3). Laws (per-world parameters, `params[w·P + i]`):

- LAW_LINEAR (0): τ = −k·θ − c·θ̇; params (k [N m/rad], c [N m s/rad]).
- LAW_WRINKLING (1): τ = −sign(θ)·M_w(|θ|) − c·θ̇ with the Comer–Levy wrinkling moment M_w (Chen et al. Eqs. 1–2)
  above the wrinkling onset θ_c = 2·asin(ε_crit) and linear below it (continuous at θ_c);
  params (m_full = π·P·R³ [N m], ε_crit [-], c [N m s/rad]).
- LAW_MLP (2): τ = −½(f(θ) − f(−θ)) − c·θ̇ with f(θ) = Σ_j w2_j·tanh(w1_j·θ + b1_j) + b2 (10 hidden units; odd in θ);
  params (c, w1[10], b1[10], w2[10], b2).
"""

import warp as wp

# forward kernels only: the solver is not differentiated (no adjoint code, half the compile time)
wp.set_module_options({"enable_backward": False})

LAW_LINEAR = wp.constant(0)
LAW_WRINKLING = wp.constant(1)
LAW_MLP = wp.constant(2)
MLP_HIDDEN = wp.constant(10)


@wp.func
def comer_levy_moment(gamma0: float) -> float:
    """Comer–Levy moment of an inflated tube with wrinkled half-angle γ0, in units of π·P·R³ (Chen et al. Eq. 1)."""
    pi = 3.14159265358979
    den = 4.0 * (wp.sin(gamma0) + (pi - gamma0) * wp.cos(gamma0))
    return (wp.sin(2.0 * gamma0) + 2.0 * pi - 2.0 * gamma0) / wp.max(den, 1.0e-12)


@wp.func
def wrinkling_moment(theta_abs: float, m_full: float, eps_crit: float) -> float:
    """Restoring moment magnitude [N m] at bending angle |θ| (Chen et al. Eqs. 1–2, linear below the onset)."""
    eps = wp.clamp(eps_crit, 1.0e-6, 0.999)
    onset = 2.0 * wp.asin(eps)
    m_onset = 0.5 * m_full  # Eq. 1 at γ0 = 0
    if theta_abs < onset:
        return m_onset * theta_abs / onset
    s = wp.sin(wp.min(theta_abs, 3.14159265358979) * 0.5)
    arg = wp.clamp(2.0 * eps / wp.max(s, 1.0e-12) - 1.0, -1.0, 1.0)
    return m_full * comer_levy_moment(wp.acos(arg))


@wp.func
def mlp_moment(theta: float, params: wp.array(dtype=float), base: int) -> float:
    f = params[base + 1 + 3 * MLP_HIDDEN]
    for j in range(MLP_HIDDEN):
        f += params[base + 1 + 2 * MLP_HIDDEN + j] * wp.tanh(
            params[base + 1 + j] * theta + params[base + 1 + MLP_HIDDEN + j]
        )
    return f


@wp.func
def hinge_moment(law: int, theta: float, rate: float, params: wp.array(dtype=float), base: int) -> float:
    """τ(θ, θ̇) [N m] of one hinge (see the module docstring)."""
    if law == LAW_LINEAR:
        return -params[base] * theta - params[base + 1] * rate
    if law == LAW_WRINKLING:
        m = wrinkling_moment(wp.abs(theta), params[base], params[base + 1])
        return -wp.sign(theta) * m - params[base + 2] * rate
    return -0.5 * (mlp_moment(theta, params, base) - mlp_moment(-theta, params, base)) - params[base] * rate


@wp.func
def hinge_angle(q_parent: wp.quat, rest: wp.quat, q_child: wp.quat, axis_child: wp.vec3) -> float:
    """Rotation [rad] of the child about the hinge axis from its rest pose relative to the parent, in (−π, π]."""
    d = wp.quat_inverse(q_parent * rest) * q_child
    if d[3] < 0.0:
        d = -d
    return 2.0 * wp.atan2(d[0] * axis_child[0] + d[1] * axis_child[1] + d[2] * axis_child[2], d[3])


@wp.kernel
def hinge_torques(
    # Model:
    body_count: int,
    hinge_count: int,
    parent: wp.array(dtype=int),
    child: wp.array(dtype=int),
    rest_rotation: wp.array(dtype=wp.quat),  # per (world, hinge)
    axis_child: wp.array(dtype=wp.vec3),
    law: int,
    param_count: int,
    params: wp.array(dtype=float),
    # In:
    body_q: wp.array(dtype=wp.transform),
    body_qd: wp.array(dtype=wp.spatial_vector),
    # Out:
    angle_out: wp.array(dtype=float),
    body_f: wp.array(dtype=wp.spatial_vector),
):
    tid = wp.tid()
    w = tid // hinge_count
    k = tid - w * hinge_count
    p = parent[k]
    c = w * body_count + child[k]
    qc = wp.transform_get_rotation(body_q[c])
    qp = wp.quat_identity()
    wp_ = wp.vec3()
    if p >= 0:
        qp = wp.transform_get_rotation(body_q[w * body_count + p])
        s = body_qd[w * body_count + p]
        wp_ = wp.vec3(s[3], s[4], s[5])
    sc = body_qd[c]
    axis = wp.quat_rotate(qc, axis_child[k])
    theta = hinge_angle(qp, rest_rotation[tid], qc, axis_child[k])
    rate = wp.dot(wp.vec3(sc[3], sc[4], sc[5]) - wp_, axis)
    tau = hinge_moment(law, theta, rate, params, w * param_count)
    angle_out[tid] = theta
    t = axis * tau
    wp.atomic_add(body_f, c, wp.spatial_vector(wp.vec3(), t))
    if p >= 0:
        wp.atomic_add(body_f, w * body_count + p, wp.spatial_vector(wp.vec3(), -t))
