"""Rigid bodies in maximal coordinates (docs/formulation.md §1–2): prediction with gyroscopic term, pose from velocity,
particle–body attachments (paper Eq. 6) and joints (revolute, prismatic, fixed) as compliant rows.

Body velocities are spatial vectors laid out (linear v [m/s], angular ω [rad/s]) in the world frame; poses are
transforms (position, quaternion x, y, z, w). A row acting on bodies has Jacobian [−lin, ang_p | lin, ang_c]: the
parent's linear part is always the negative of the child's (the parent is the world, fixed, when its index is −1).

Rows per world follow the particle rows: [distance | tet | contact | attachment (3 each) | joint (6 each)]. Joint rows:
revolute: 3 anchor rows (world axes), 2 axis-alignment rows, 1 drive row (angle about the axis);
prismatic: 3 rotation-lock rows, 2 rows keeping the slide on the axis, 1 drive row (slide along the axis);
fixed: 3 anchor rows, 3 rotation-lock rows. The drive row is free (switched off), a velocity motor or a spring.
"""

import warp as wp

from .data import ATTACHMENT, JOINT, BodyData, BodyJacobian, ModelData, family_row0

# forward kernels only: the solver is not differentiated (no adjoint code, half the compile time)
wp.set_module_options({"enable_backward": False})

JOINT_REVOLUTE = wp.constant(0)
JOINT_PRISMATIC = wp.constant(1)
JOINT_FIXED = wp.constant(2)

DRIVE_FREE = wp.constant(0)
DRIVE_MOTOR = wp.constant(1)
DRIVE_SPRING = wp.constant(2)


@wp.func
def lin(s: wp.spatial_vector) -> wp.vec3:
    return wp.vec3(s[0], s[1], s[2])


@wp.func
def ang(s: wp.spatial_vector) -> wp.vec3:
    return wp.vec3(s[3], s[4], s[5])


@wp.func
def spatial(a: wp.vec3, b: wp.vec3) -> wp.spatial_vector:
    return wp.spatial_vector(a[0], a[1], a[2], b[0], b[1], b[2])


@wp.func
def integrate_pose(x0: wp.transform, v: wp.spatial_vector, h: float) -> wp.transform:
    """p⁺ = p + h v, q⁺ = normalize(q + (h/2)[ω, 0] ⊗ q) (docs/formulation.md §1)."""
    p = wp.transform_get_translation(x0) + lin(v) * h
    q = wp.transform_get_rotation(x0)
    w = ang(v)
    dq = wp.quat(w[0], w[1], w[2], 0.0) * q
    q = wp.normalize(
        wp.quat(q[0] + 0.5 * h * dq[0], q[1] + 0.5 * h * dq[1], q[2] + 0.5 * h * dq[2], q[3] + 0.5 * h * dq[3])
    )
    return wp.transform(p, q)


@wp.func
def world_inverse_inertia(q: wp.quat, inv_inertia_body: wp.mat33) -> wp.mat33:
    R = wp.quat_to_matrix(q)
    return R * inv_inertia_body * wp.transpose(R)


@wp.func
def row_effective_mass(
    b: BodyData, body: int, w: int, inv_inertia: wp.array(dtype=wp.mat33), l: wp.vec3, a: wp.vec3
) -> float:
    """j M⁻¹ jᵀ of one body's part (l, a) of a row of world w, with ``inv_inertia`` the bodies' world inverse
    inertias at the iterate (StepData.body_inv_inertia, body_inverse_inertia_at_iterate); 0 for the world (−1)."""
    if body < 0:
        return 0.0
    return b.body_inv_mass[body] * wp.dot(l, l) + wp.dot(a, inv_inertia[w * b.body_count + body] * a)


@wp.func
def omega_from_momentum(x0: wp.transform, inv_inertia_body: wp.mat33, L: wp.vec3, omega: wp.vec3, h: float) -> wp.vec3:
    """End-of-step angular velocity of a body with world angular momentum L: ω⁺ = I_w(q⁺)⁻¹ L with
    q⁺ = q + (h/2)[ω⁺, 0]⊗q, solved by substitution from the guess ω. Evaluating the inertia at the pose the step ends
    in
    keeps L of a free body exactly (the gyroscopic term ω × Iω is implied) and makes internal joint couples cancel."""
    w = omega
    for _ in range(4):
        pose = integrate_pose(x0, spatial(wp.vec3(), w), h)
        w = world_inverse_inertia(wp.transform_get_rotation(pose), inv_inertia_body) * L
    return w


@wp.func
def predict_body(
    tid: int,
    b: BodyData,
    gravity: wp.vec3,
    h: float,
    q: wp.array(dtype=wp.transform),
    qd: wp.array(dtype=wp.spatial_vector),
    wrench: wp.array(dtype=wp.spatial_vector),
    x_start: wp.array(dtype=wp.transform),
    v_start: wp.array(dtype=wp.spatial_vector),
    v: wp.array(dtype=wp.spatial_vector),
    momentum: wp.array(dtype=wp.vec3),
):
    """Body ``tid`` (world-major): v̂ = v + h(g + f/m); angular momentum L = I_w ω + hτ and ω̂ = ω(L)
    (``omega_from_momentum``); f, τ: external force [N] and torque [N m] about the centre of mass (world frame).
    Bodies with inverse mass 0 are kinematic."""
    i = tid % b.body_count
    x_start[tid] = q[tid]
    s = qd[tid]
    v_start[tid] = s
    if b.body_inv_mass[i] > 0.0:
        R = wp.quat_to_matrix(wp.transform_get_rotation(q[tid]))
        f = wrench[tid]
        L = R * b.body_inertia[i] * wp.transpose(R) * ang(s) + ang(f) * h
        momentum[tid] = L
        s = spatial(
            lin(s) + (gravity + lin(f) * b.body_inv_mass[i]) * h,
            omega_from_momentum(q[tid], b.body_inv_inertia[i], L, ang(s), h),
        )
    v[tid] = s


@wp.func
def is_zero_wrench(J: wp.spatial_vector):
    return J[0] == 0.0 and J[1] == 0.0 and J[2] == 0.0 and J[3] == 0.0 and J[4] == 0.0 and J[5] == 0.0


@wp.func
def apply_body_impulse(
    tid: int,
    b: BodyData,
    x_start: wp.array(dtype=wp.transform),
    h: float,
    impulse: wp.array(dtype=wp.spatial_vector),
    momentum: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.spatial_vector),
):
    """Body ``tid``: v += impulse/m; L += angular impulse, ω = ω(L) at the pose the step ends in. A zero impulse
    leaves the body exactly as it is (ω is not re-evaluated from L)."""
    i = tid % b.body_count
    J = impulse[tid]
    if b.body_inv_mass[i] > 0.0 and not is_zero_wrench(J):
        s = v[tid]
        L = momentum[tid] + ang(J)
        momentum[tid] = L
        v[tid] = spatial(
            lin(s) + lin(J) * b.body_inv_mass[i], omega_from_momentum(x_start[tid], b.body_inv_inertia[i], L, ang(s), h)
        )


@wp.func
def finalize_body(
    tid: int,
    bodies_per_world: int,
    h: float,
    max_speed: float,
    x_start: wp.array(dtype=wp.transform),
    v: wp.array(dtype=wp.spatial_vector),
    q: wp.array(dtype=wp.transform),
    qd: wp.array(dtype=wp.spatial_vector),
    nonfinite: wp.array(dtype=int),
):
    """Body ``tid``: pose from the end-of-step velocity; flags non-finite or runaway worlds (as finalize_particle,
    angular speed up to 100 × max_speed [rad/s])."""
    s = v[tid]
    x = integrate_pose(x_start[tid], s, h)
    q[tid] = x
    qd[tid] = s
    p = wp.transform_get_translation(x)
    runaway = max_speed > 0.0 and (wp.length(lin(s)) > max_speed or wp.length(ang(s)) > 100.0 * max_speed)
    if not (wp.isfinite(p) and wp.isfinite(lin(s)) and wp.isfinite(ang(s))) or runaway:
        nonfinite[tid // bodies_per_world] = 1


@wp.kernel
def restore_bodies(
    # Model:
    bodies_per_world: int,
    # In:
    all_worlds: int,
    nonfinite: wp.array(dtype=int),
    x_start: wp.array(dtype=wp.transform),
    v_start: wp.array(dtype=wp.spatial_vector),
    # Out:
    q: wp.array(dtype=wp.transform),
    qd: wp.array(dtype=wp.spatial_vector),
):
    """Undo a rejected step: every world (all_worlds = 1) or only the flagged ones."""
    tid = wp.tid()
    if all_worlds != 0 or nonfinite[tid // bodies_per_world] != 0:
        q[tid] = x_start[tid]
        qd[tid] = v_start[tid]


@wp.func
def body_pose(
    b: BodyData,
    body: int,
    w: int,
    x_start: wp.array(dtype=wp.transform),
    v: wp.array(dtype=wp.spatial_vector),
    h: float,
) -> wp.transform:
    """Pose of a body at the current Newton iterate (identity for the world, index −1)."""
    if body < 0:
        return wp.transform_identity()
    k = w * b.body_count + body
    return integrate_pose(x_start[k], v[k], h)


@wp.func
def body_inverse_inertia_at_iterate(
    b: BodyData,
    body: int,
    w: int,
    x_start: wp.array(dtype=wp.transform),
    v: wp.array(dtype=wp.spatial_vector),
    h: float,
) -> wp.mat33:
    """R I⁻¹ Rᵀ of body ``body`` ≥ 0 of world w at its pose of the Newton iterate (body_pose) [1/(kg m²)]."""
    pose = body_pose(b, body, w, x_start, v, h)
    return world_inverse_inertia(wp.transform_get_rotation(pose), b.body_inv_inertia[body])


@wp.func
def body_velocity(
    b: BodyData,
    body: int,
    w: int,
    inv_inertia: wp.array(dtype=wp.mat33),
    body_impulse: wp.array(dtype=wp.spatial_vector),
) -> wp.spatial_vector:
    """M⁻¹ · (the body's impulse) at the iterate's pose, with ``inv_inertia`` the world inverse inertias of
    body_inverse_inertia_at_iterate (StepData.body_inv_inertia); zero for the world (index −1)."""
    if body < 0:
        return wp.spatial_vector()
    k = w * b.body_count + body
    impulse = body_impulse[k]
    return spatial(lin(impulse) * b.body_inv_mass[body], inv_inertia[k] * ang(impulse))


@wp.func
def body_vel(b: BodyData, body: int, w: int, v: wp.array(dtype=wp.spatial_vector)) -> wp.spatial_vector:
    if body < 0:
        return wp.spatial_vector()
    return v[w * b.body_count + body]


@wp.func
def unit(i: int) -> wp.vec3:
    if i == 0:
        return wp.vec3(1.0, 0.0, 0.0)
    if i == 1:
        return wp.vec3(0.0, 1.0, 0.0)
    return wp.vec3(0.0, 0.0, 1.0)


@wp.func
def attachment_row0(m: ModelData, b: BodyData, w: int, k: int) -> int:
    return family_row0(m, w, ATTACHMENT, k)


@wp.func
def joint_row0(m: ModelData, b: BodyData, w: int, j: int) -> int:
    return family_row0(m, w, JOINT, j)


@wp.func
def assemble_body_row(
    tid: int,
    m: ModelData,
    b: BodyData,
    h: float,
    x_start: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    inv_inertia: wp.array(dtype=wp.mat33),
    lam: wp.array(dtype=float),
    bjac: BodyJacobian,
    row_compliance: wp.array(dtype=float),
    rhs: wp.array(dtype=float),
    diag: wp.array(dtype=float),
) -> float:
    """The rows of attachment or joint ``tid`` (world-major over attachments then joints) at the iterate; their
    Jacobians are taken at the start of the step. Returns its rows' Σφ² (its part of the world's merit)."""
    per_world = b.attachment_count + b.joint_count
    w = tid // per_world
    e = tid - w * per_world
    res = float(0.0)
    if e < b.attachment_count:
        # ---- particle–body attachment, paper Eq. 6: c = p + R r − x (3 rows along the world axes)
        p = b.attachment_particle[e]
        i = b.attachment_body[e]
        pose = body_pose(b, i, w, bx_start, bv, h)
        pose0 = bx_start[w * b.body_count + i]
        arm = wp.quat_rotate(wp.transform_get_rotation(pose0), b.attachment_offset[e])  # Jacobian: start of step
        bjac.attachment_arm[w * b.attachment_count + e] = arm
        pk = w * m.particle_count + p
        err = (
            wp.transform_get_translation(pose)
            + wp.quat_rotate(wp.transform_get_rotation(pose), b.attachment_offset[e])
            - (x_start[pk] + v[pk] * h)
        )
        comp = b.attachment_compliance[e] / (h * h)
        row0 = attachment_row0(m, b, w, e)
        for r in range(3):
            ek = unit(r)
            a = wp.cross(arm, ek)
            phi = err[r] / h + comp * lam[row0 + r]
            rhs[row0 + r] = -phi
            row_compliance[row0 + r] = comp
            diag[row0 + r] = row_effective_mass(b, i, w, inv_inertia, ek, a) + m.particle_inv_mass[p] + comp + 1.0e-12
            res += phi * phi
    else:
        j = e - b.attachment_count
        ip = b.joint_parent[j]
        ic = b.joint_child[j]
        pose_p = body_pose(b, ip, w, bx_start, bv, h)
        pose_c = body_pose(b, ic, w, bx_start, bv, h)
        qp = wp.transform_get_rotation(pose_p)
        qc = wp.transform_get_rotation(pose_c)
        # constraint values at the Newton iterate ...
        delta_now = (wp.transform_get_translation(pose_c) + wp.quat_rotate(qc, b.joint_anchor_child[j])) - (
            wp.transform_get_translation(pose_p) + wp.quat_rotate(qp, b.joint_anchor_parent[j])
        )
        axis_c_now = wp.quat_rotate(qc, b.joint_axis_child[j])
        # ... Jacobians at the start of the step (a chord Newton method): the reaction impulses of a joint then form
        # exact couples about the step's start configuration, so internal forces conserve angular momentum
        pose_p0 = body_pose(b, ip, w, bx_start, bv, 0.0)
        pose_c0 = body_pose(b, ic, w, bx_start, bv, 0.0)
        qp0 = wp.transform_get_rotation(pose_p0)
        qc0 = wp.transform_get_rotation(pose_c0)
        arm_p = wp.quat_rotate(qp0, b.joint_anchor_parent[j])
        arm_c = wp.quat_rotate(qc0, b.joint_anchor_child[j])
        delta = (wp.transform_get_translation(pose_c0) + arm_c) - (wp.transform_get_translation(pose_p0) + arm_p)
        axis = wp.quat_rotate(qp0, b.joint_axis_parent[j])
        axis_c = wp.quat_rotate(qc0, b.joint_axis_child[j])
        b1 = wp.quat_rotate(qp0, b.joint_perp1_parent[j])
        b2 = wp.quat_rotate(qp0, b.joint_perp2_parent[j])
        b1_now = wp.quat_rotate(qp, b.joint_perp1_parent[j])
        b2_now = wp.quat_rotate(qp, b.joint_perp2_parent[j])
        axis_now = wp.quat_rotate(qp, b.joint_axis_parent[j])
        qd = wp.quat_inverse(qp) * qc * wp.quat_inverse(b.joint_rest_rotation[j])  # deviation, parent frame
        sgn = float(1.0)
        if qd[3] < 0.0:
            sgn = -1.0
        rotvec = wp.quat_rotate(qp, wp.vec3(qd[0], qd[1], qd[2]) * (2.0 * sgn))  # small-angle rotation vector
        vp = body_vel(b, ip, w, bv)
        vc = body_vel(b, ic, w, bv)
        kind = b.joint_type[j]
        comp_lock = b.joint_compliance[j] / (h * h)
        row0 = joint_row0(m, b, w, j)
        for r in range(6):
            l = wp.vec3()
            ap = wp.vec3()
            ac = wp.vec3()
            c = float(0.0)
            mode = int(-1)  # −1: locked row; else drive row
            if r < 3 and kind != JOINT_PRISMATIC:
                ek = unit(r)
                l = ek
                ac = wp.cross(arm_c, ek)
                ap = -wp.cross(arm_p, ek)
                c = delta_now[r]
            elif (r < 3 and kind == JOINT_PRISMATIC) or (r >= 3 and kind == JOINT_FIXED):
                ek = unit(r % 3)
                ac = ek
                ap = -ek
                c = rotvec[r % 3]
            elif kind == JOINT_REVOLUTE:
                if r < 5:
                    bk = b1
                    bk_now = b1_now
                    if r == 4:
                        bk = b2
                        bk_now = b2_now
                    ac = wp.cross(axis_c, bk)
                    ap = -ac
                    c = wp.dot(bk_now, axis_c_now)
                else:
                    ac = axis
                    ap = -axis
                    c = 2.0 * wp.atan2(sgn * wp.dot(wp.vec3(qd[0], qd[1], qd[2]), b.joint_axis_parent[j]), sgn * qd[3])
                    mode = b.joint_drive_mode[j]
            else:  # prismatic: slide stays on the axis (r = 3, 4), drive along it (r = 5)
                bk = b1
                bk_now = b1_now
                if r == 4:
                    bk = b2
                    bk_now = b2_now
                if r == 5:
                    bk = axis
                    bk_now = axis_now
                    mode = b.joint_drive_mode[j]
                l = bk
                ac = wp.cross(arm_c, bk)
                ap = -wp.cross(arm_p, bk) + wp.cross(bk, delta)
                c = wp.dot(bk_now, delta_now)
                if r == 5:
                    c = c - b.joint_rest_slide[j]
            k = (w * b.joint_count + j) * 6 + r
            jv = wp.dot(l, lin(vc) - lin(vp)) + wp.dot(ac, ang(vc)) + wp.dot(ap, ang(vp))
            comp = comp_lock
            phi = float(0.0)
            if mode == DRIVE_FREE:
                l = wp.vec3()
                ap = wp.vec3()
                ac = wp.vec3()
                comp = 1.0
                phi = 0.0
            elif mode == DRIVE_MOTOR:
                # velocity row J v⁺ = target; with damping d > 0 it is compliant, J v⁺ − target + λ/(d·h) = 0, so the
                # impulse is −d·h·(J v⁺ − target): a viscous damper / velocity servo of gain d (d = 0: a hard motor)
                comp = 0.0
                gain = b.joint_drive_damping[j]
                if gain > 0.0:
                    comp = 1.0 / (gain * h)
                phi = jv - b.joint_drive_target[j] + comp * lam[row0 + r]
            elif mode == DRIVE_SPRING:
                beta = b.joint_drive_damping[j]
                comp = b.joint_drive_compliance[j] / (h * (h + beta))
                phi = (c - b.joint_drive_target[j] + beta * jv) / (h + beta) + comp * lam[row0 + r]
            else:
                phi = c / h + comp * lam[row0 + r]
            bjac.joint_lin[k] = l
            bjac.joint_ang_parent[k] = ap
            bjac.joint_ang_child[k] = ac
            row_compliance[row0 + r] = comp
            rhs[row0 + r] = -phi
            diag[row0 + r] = (
                row_effective_mass(b, ip, w, inv_inertia, -l, ap)
                + row_effective_mass(b, ic, w, inv_inertia, l, ac)
                + comp
                + 1.0e-12
            )
            res += phi * phi
    if res > 0.0:  # (a NaN stays out of the merit)
        return res
    return 0.0


@wp.func
def gather_body_row(
    tid: int,
    m: ModelData,
    b: BodyData,
    bjac: BodyJacobian,
    inv_inertia: wp.array(dtype=wp.mat33),
    particle_impulse: wp.array(dtype=wp.vec3),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    row_compliance: wp.array(dtype=float),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """y = J M⁻¹ (impulse) + C x for attachment or joint ``tid`` (world-major; kernels/body_families.py,
    body_rows_gather, walks them); ``inv_inertia``: the bodies' world inverse inertias at the iterate."""
    per_world = b.attachment_count + b.joint_count
    w = tid // per_world
    e = tid - w * per_world
    if e < b.attachment_count:
        p = b.attachment_particle[e]
        i = b.attachment_body[e]
        dv = body_velocity(b, i, w, inv_inertia, body_impulse)
        arm = bjac.attachment_arm[w * b.attachment_count + e]
        rel = lin(dv) + wp.cross(ang(dv), arm) - particle_impulse[w * m.particle_count + p] * m.particle_inv_mass[p]
        row0 = attachment_row0(m, b, w, e)
        for r in range(3):
            y[row0 + r] = rel[r] + row_compliance[row0 + r] * x[row0 + r]
    else:
        j = e - b.attachment_count
        ip = b.joint_parent[j]
        ic = b.joint_child[j]
        dvp = wp.spatial_vector()
        dvc = wp.spatial_vector()
        if ip >= 0:
            dvp = body_velocity(b, ip, w, inv_inertia, body_impulse)
        if ic >= 0:
            dvc = body_velocity(b, ic, w, inv_inertia, body_impulse)
        row0 = joint_row0(m, b, w, j)
        for r in range(6):
            k = (w * b.joint_count + j) * 6 + r
            val = (
                wp.dot(bjac.joint_lin[k], lin(dvc) - lin(dvp))
                + wp.dot(bjac.joint_ang_child[k], ang(dvc))
                + wp.dot(bjac.joint_ang_parent[k], ang(dvp))
            )
            y[row0 + r] = val + row_compliance[row0 + r] * x[row0 + r]
