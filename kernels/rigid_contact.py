"""Contact of rigid-body shapes with static shapes and with the shapes of other bodies (FB normal row + fixed-point
friction, as for particles: kernels/contact.py, kernels/friction.py).

Each body shape contributes contact features (body frame): points with a radius (sphere centre, capsule ends, box
corners), cylinder caps, whose deepest rim point towards the target is found per contact (exact for a wheel on a
plane), and cylinder rim samples, active only against surfaces that face a cap (standing cylinders). A slot pairs a
feature with a target (static shape t < n_static, else body shape t − n_static);
its rows (t1, t2, n) follow the joint rows: [... | attachment | joint | body contact (3 each)].
Friction: on a cylinder the first tangent follows its axis and μ = (μ along the axis, μ across) is the cylinder's own
pair; otherwise the target's frame is used. The pair's coefficient is the geometric mean with the other shape's mean μ.
"""

import warp as wp

from .block import code_and_next, first_code_ahead
from .contact import shape_signed_distance
from .data import (
    ATTACHMENT,
    BODY_CONTACT,
    JOINT,
    PARTICLE_BODY,
    BodyData,
    BodyJacobian,
    ContactSettings,
    Jacobian,
    ModelData,
    family_element0,
    family_row0,
)
from .friction import (
    assemble_contact_rows,
    cone_projected,
    contact_slot_off,
    release_contact_slot,
    switch_off_contact_rows,
)
from .rigid import ang, body_pose, body_vel, body_velocity, lin, row_effective_mass, spatial
from .types import SHAPE_CYLINDER


@wp.func
def body_contact_row0(m: ModelData, b: BodyData, w: int, k: int) -> int:
    return family_row0(m, w, BODY_CONTACT, k)


@wp.func
def particle_body_slot(m: ModelData, b: BodyData, k: int) -> wp.vec2i:
    """(particle, body shape) of particle–body-shape slot k (one world's numbering: each particle has one slot per
    shape it may touch, ``particle_target_shape``)."""
    nbs = m.particle_body_count // m.particle_count
    p = k // nbs
    return wp.vec2i(p, b.particle_target_shape[k - p * nbs])


@wp.func
def body_family_starts(m: ModelData) -> wp.vec4i:
    """The first element numbers of the families that act on rigid bodies (attachment, joint, body contact, particle
    contact with a body), for body_incidence_entry (read once, outside a loop over incidence entries)."""
    return wp.vec4i(
        family_element0(m, ATTACHMENT),
        family_element0(m, JOINT),
        family_element0(m, BODY_CONTACT),
        family_element0(m, PARTICLE_BODY),
    )


@wp.func
def body_incidence_entry(b: BodyData, c: int, starts: wp.vec4i) -> wp.vec3i:
    """Entry c of the bodies' incidence lists (Model.body_incidence: element · 4 + role, elements numbered by the
    row-family table; ``starts``: body_family_starts) as (family, element within the family, role): the family is
    ATTACHMENT, JOINT, BODY_CONTACT or PARTICLE_BODY; the role is the body's side of a joint (0 child, 1 parent) or of
    a body contact (0 the feature's body, 1 the target's), 0 otherwise. The family is picked without early returns:
    with them the CPU's solve spent 2.5× the cycles in its rigid-body phases."""
    return decode_body_incidence(b.body_incidence[c], starts)


@wp.func
def decode_body_incidence(code: int, starts: wp.vec4i) -> wp.vec3i:
    """body_incidence_entry of an entry's code (element · 4 + role) read before."""
    e = code // 4
    family = ATTACHMENT
    first = starts[0]
    if e >= starts[1]:
        family = JOINT
        first = starts[1]
    if e >= starts[2]:
        family = BODY_CONTACT
        first = starts[2]
    if e >= starts[3]:
        family = PARTICLE_BODY
        first = starts[3]
    return wp.vec3i(family, e - first, code - 4 * e)


@wp.func
def frame_from_reference(n: wp.vec3, ref: wp.vec3) -> wp.mat33:
    t1 = ref - n * wp.dot(ref, n)
    if wp.length(t1) < 1.0e-3:
        t1 = wp.vec3(1.0, 0.0, 0.0) - n * n[0]
        if wp.length(t1) < 1.0e-3:
            t1 = wp.vec3(0.0, 1.0, 0.0) - n * n[1]
    t1 = wp.normalize(t1)
    t2 = wp.cross(n, t1)
    return wp.mat33(t1[0], t1[1], t1[2], t2[0], t2[1], t2[2], n[0], n[1], n[2])


@wp.func
def target_pose(
    m: ModelData,
    b: BodyData,
    t: int,
    w: int,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    h: float,
) -> wp.transform:
    """World pose of contact target t (a static shape, or a body shape at the iterate x⁻ + h·v of its body)."""
    if t < m.shape_count:
        return wp.transform(m.shape_pos[t], m.shape_rot[t])
    s = b.target_body_shape[t - m.shape_count]
    pose_b = body_pose(b, b.body_shape_body[s], w, bx_start, bv, h)
    return wp.transform(
        wp.transform_point(pose_b, b.body_shape_pos[s]), wp.transform_get_rotation(pose_b) * b.body_shape_rot[s]
    )


@wp.func
def target_type(m: ModelData, b: BodyData, t: int) -> int:
    if t < m.shape_count:
        return m.shape_type[t]
    return b.body_shape_type[b.target_body_shape[t - m.shape_count]]


@wp.func
def target_params(m: ModelData, b: BodyData, t: int) -> wp.vec3:
    if t < m.shape_count:
        return m.shape_params[t]
    return b.body_shape_params[b.target_body_shape[t - m.shape_count]]


@wp.func
def target_mu(m: ModelData, b: BodyData, shape_mu: wp.array(dtype=wp.vec2), w: int, t: int) -> wp.vec2:
    """Friction (μ along t1, t2) of target t in world w: a static shape's from the per-world ``shape_mu``."""
    if t < m.shape_count:
        return shape_mu[w * m.shape_count + t]
    return b.body_shape_mu[b.target_body_shape[t - m.shape_count]]


@wp.func
def target_body(m: ModelData, b: BodyData, t: int) -> int:
    if t < m.shape_count:
        return -1
    return b.body_shape_body[b.target_body_shape[t - m.shape_count]]


@wp.func
def assemble_body_contact(
    tid: int,
    m: ModelData,
    b: BodyData,
    contact: ContactSettings,
    h: float,
    newton_iteration: int,
    linearise: int,
    bx_start: wp.array(dtype=wp.transform),
    bv_lin: wp.array(dtype=wp.spatial_vector),
    bv: wp.array(dtype=wp.spatial_vector),
    inv_inertia: wp.array(dtype=wp.mat33),
    shape_mu: wp.array(dtype=wp.vec2),
    lam_n_prev: wp.array(dtype=float),
    lam: wp.array(dtype=float),
    bjac: BodyJacobian,
    row_compliance: wp.array(dtype=float),
    rhs: wp.array(dtype=float),
    diag: wp.array(dtype=float),
) -> float:
    """Body contact slot ``tid`` (world-major). linearise = 1: contact point (feature frame), frame and lever arms of
    the step at the poses x⁻ + h·v_lin, and whether the slot is a candidate (others get zero multipliers); no rows.
    linearise = 0: rows at the iterate with those frozen Jacobians (chord Newton, as for the particle rows). Returns
    its rows' Σφ² (its part of the world's merit; 0 when linearising)."""
    w = tid // b.body_contact_count
    k = tid - w * b.body_contact_count
    f = k // b.target_count
    t = k - f * b.target_count
    ia = b.feature_body[f]
    ib = target_body(m, b, t)
    ttype = target_type(m, b, t)
    tparams = target_params(m, b, t)
    row0 = body_contact_row0(m, b, w, k)
    kk = w * b.body_contact_count + k
    if linearise != 0:
        pose_a = body_pose(b, ia, w, bx_start, bv_lin, h)
        tpose = target_pose(m, b, t, w, bx_start, bv_lin, h)
        trot = wp.transform_get_rotation(tpose)
        local = b.feature_point[f]
        point = wp.transform_point(pose_a, local)
        axis = wp.quat_rotate(wp.transform_get_rotation(pose_a), b.feature_axis[f])
        radius = b.feature_radius[f]
        if b.feature_kind[f] == 1:
            # cylinder cap: deepest rim point towards the target, fixed in the body for this step
            n0 = shape_signed_distance(ttype, wp.transform_get_translation(tpose), trot, tparams, point)
            d = -wp.vec3(n0[1], n0[2], n0[3])
            d = d - axis * wp.dot(d, axis)
            if wp.length(d) > 1.0e-6:
                point = point + wp.normalize(d) * radius
                local = wp.transform_point(wp.transform_inverse(pose_a), point)
            radius = 0.0
        sd = shape_signed_distance(ttype, wp.transform_get_translation(tpose), trot, tparams, point)
        n = wp.vec3(sd[1], sd[2], sd[3])
        # gap at the predicted poses too, so a fast approach within the step is not missed
        pose_a1 = body_pose(b, ia, w, bx_start, bv, h)
        tpose1 = target_pose(m, b, t, w, bx_start, bv, h)
        sd1 = shape_signed_distance(
            ttype,
            wp.transform_get_translation(tpose1),
            wp.transform_get_rotation(tpose1),
            tparams,
            wp.transform_point(pose_a1, local),
        )
        gap = wp.min(sd[0], sd1[0]) - radius
        rim_off = (
            b.feature_kind[f] == 2 and wp.abs(wp.dot(n, axis)) < 0.7
        )  # rim samples only where a cap faces the target
        if rim_off or ib == ia or b.body_inv_mass[ia] <= 0.0 or (gap > contact.margin and lam[row0 + 2] <= 0.0):
            bjac.contact_frame[kk] = wp.mat33()
            release_contact_slot(row0, lam)
            return 0.0
        p = point - n * radius
        arm_b = wp.vec3()
        if ib >= 0:
            arm_b = p - wp.transform_get_translation(body_pose(b, ib, w, bx_start, bv_lin, h))
        # friction frame and coefficients
        fs = b.feature_shape[f]
        fmu = b.body_shape_mu[fs]
        tmu = target_mu(m, b, shape_mu, w, t)
        frame = wp.mat33()
        mu = wp.vec2()
        if b.body_shape_type[fs] == SHAPE_CYLINDER:
            frame = frame_from_reference(n, axis)
            tm = 0.5 * (tmu[0] + tmu[1])
            mu = wp.vec2(wp.sqrt(fmu[0] * tm), wp.sqrt(fmu[1] * tm))
        else:
            frame = frame_from_reference(n, wp.quat_rotate(trot, wp.vec3(1.0, 0.0, 0.0)))
            fm = 0.5 * (fmu[0] + fmu[1])
            mu = wp.vec2(wp.sqrt(tmu[0] * fm), wp.sqrt(tmu[1] * fm))
        bjac.contact_frame[kk] = frame
        bjac.contact_arm_a[kk] = p - wp.transform_get_translation(pose_a)
        bjac.contact_arm_b[kk] = arm_b
        bjac.contact_mu[kk] = mu
        bjac.contact_point[kk] = wp.vec4(local[0], local[1], local[2], radius)
        return 0.0
    frame = bjac.contact_frame[kk]
    res = float(0.0)
    if contact_slot_off(frame):
        switch_off_contact_rows(row0, row_compliance, rhs, diag)
    else:
        pose_a = body_pose(b, ia, w, bx_start, bv, h)
        tpose = target_pose(m, b, t, w, bx_start, bv, h)
        cp = bjac.contact_point[kk]
        sd = shape_signed_distance(
            ttype,
            wp.transform_get_translation(tpose),
            wp.transform_get_rotation(tpose),
            tparams,
            wp.transform_point(pose_a, wp.vec3(cp[0], cp[1], cp[2])),
        )
        gap = sd[0] - cp[3]
        arm_a = bjac.contact_arm_a[kk]
        arm_b = bjac.contact_arm_b[kk]
        va = body_vel(b, ia, w, bv)
        vb = body_vel(b, ib, w, bv)
        u = lin(va) + wp.cross(ang(va), arm_a) - lin(vb) - wp.cross(ang(vb), arm_b)
        t1 = wp.vec3(frame[0, 0], frame[0, 1], frame[0, 2])
        t2 = wp.vec3(frame[1, 0], frame[1, 1], frame[1, 2])
        n = wp.vec3(frame[2, 0], frame[2, 1], frame[2, 2])
        r_n = row_effective_mass(b, ia, w, inv_inertia, n, wp.cross(arm_a, n)) + row_effective_mass(
            b, ib, w, inv_inertia, -n, -wp.cross(arm_b, n)
        )
        r1 = row_effective_mass(b, ia, w, inv_inertia, t1, wp.cross(arm_a, t1)) + row_effective_mass(
            b, ib, w, inv_inertia, -t1, -wp.cross(arm_b, t1)
        )
        r2 = row_effective_mass(b, ia, w, inv_inertia, t2, wp.cross(arm_a, t2)) + row_effective_mass(
            b, ib, w, inv_inertia, -t2, -wp.cross(arm_b, t2)
        )
        res = assemble_contact_rows(
            row0,
            frame,
            u,
            gap / h,
            r_n,
            r1,
            r2,
            bjac.contact_mu[kk],
            lam_n_prev[kk],
            newton_iteration,
            contact,
            lam,
            row_compliance,
            rhs,
            diag,
        )
    if res > 0.0:  # (a NaN stays out of the merit)
        return res
    return 0.0


@wp.func
def gather_body_contact(
    tid: int,
    m: ModelData,
    b: BodyData,
    bjac: BodyJacobian,
    inv_inertia: wp.array(dtype=wp.mat33),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    row_compliance: wp.array(dtype=float),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """y = J M⁻¹ (impulse) + C x for the three rows of body contact slot ``tid`` (world-major); ``inv_inertia``: the
    bodies' world inverse inertias at the iterate."""
    w = tid // b.body_contact_count
    k = tid - w * b.body_contact_count
    f = k // b.target_count
    t = k - f * b.target_count
    ia = b.feature_body[f]
    ib = int(-1)
    if t >= m.shape_count:
        ib = b.body_shape_body[b.target_body_shape[t - m.shape_count]]
    row0 = body_contact_row0(m, b, w, k)
    F = bjac.contact_frame[tid]
    rel = wp.vec3()
    if not contact_slot_off(F):
        dva = body_velocity(b, ia, w, inv_inertia, body_impulse)
        rel = lin(dva) + wp.cross(ang(dva), bjac.contact_arm_a[tid])
        if ib >= 0:
            dvb = body_velocity(b, ib, w, inv_inertia, body_impulse)
            rel = rel - lin(dvb) - wp.cross(ang(dvb), bjac.contact_arm_b[tid])
    d = F * rel
    for r in range(3):
        y[row0 + r] = d[r] + row_compliance[row0 + r] * x[row0 + r]


@wp.func
def project_cone_rows(lam: wp.array(dtype=float), row0: int, mu: wp.vec2, delta: wp.array(dtype=float)) -> float:
    """Project the friction impulses of the contact rows at row0 (t1, t2, n) onto their cone; the changes are added to
    ``delta`` (applied by the caller through Jᵀ and M⁻¹). Returns the normal impulse."""
    lam_n = lam[row0 + 2]
    projected = cone_projected(lam[row0], lam[row0 + 1], mu, lam_n)
    delta[row0] += projected[0] - lam[row0]
    delta[row0 + 1] += projected[1] - lam[row0 + 1]
    lam[row0] = projected[0]
    lam[row0 + 1] = projected[1]
    return lam_n


@wp.func
def project_body_friction(
    tid: int,
    m: ModelData,
    b: BodyData,
    bjac: BodyJacobian,
    lam: wp.array(dtype=float),
    lam_n_prev: wp.array(dtype=float),
    delta: wp.array(dtype=float),
    active_contacts: wp.array(dtype=int),
    active_index: int,
):
    """Cone projection of body contact slot ``tid``'s friction; the change is added to ``delta`` (the friction impulse
    changes, for the caller to apply through the usual Jᵀ/M⁻¹ path); a contact with positive normal impulse counts in
    active_contacts[active_index]."""
    w = tid // b.body_contact_count
    k = tid - w * b.body_contact_count
    row0 = body_contact_row0(m, b, w, k)
    F = bjac.contact_frame[tid]
    if contact_slot_off(F):
        lam_n_prev[tid] = 0.0
        return
    lam_n = project_cone_rows(lam, row0, bjac.contact_mu[tid], delta)
    lam_n_prev[tid] = wp.max(lam_n, 0.0)
    if lam_n > 0.0:
        wp.atomic_add(active_contacts, active_index, 1)


# ---------------------------------------------------------------------------------------------------------------------
# Particles against body shapes: slot k = particle · n + j for the j-th of the n body shapes particles collide with
# (``particle_contact``), rows (t1, t2, n) after the body contacts.


@wp.func
def particle_body_row0(m: ModelData, w: int, k: int) -> int:
    return family_row0(m, w, PARTICLE_BODY, k)


@wp.func
def assemble_particle_body_contact(
    tid: int,
    m: ModelData,
    b: BodyData,
    contact: ContactSettings,
    h: float,
    newton_iteration: int,
    linearise: int,
    x_start: wp.array(dtype=wp.vec3),
    v_lin: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    bx_start: wp.array(dtype=wp.transform),
    bv_lin: wp.array(dtype=wp.spatial_vector),
    bv: wp.array(dtype=wp.spatial_vector),
    inv_inertia: wp.array(dtype=wp.mat33),
    lam_n_prev: wp.array(dtype=float),
    lam: wp.array(dtype=float),
    jac: Jacobian,
    rhs: wp.array(dtype=float),
    diag: wp.array(dtype=float),
) -> float:
    """Particle–body-shape slot ``tid`` (world-major); linearise as in :func:`assemble_body_contact`."""
    w = tid // m.particle_body_count
    k = tid - w * m.particle_body_count
    slot = particle_body_slot(m, b, k)
    p = slot[0]
    s = slot[1]
    ib = b.body_shape_body[s]
    pk = w * m.particle_count + p
    row0 = particle_body_row0(m, w, k)
    inv_m = m.particle_inv_mass[p]
    pose_b = body_pose(b, ib, w, bx_start, bv, h)
    spos = wp.transform_point(pose_b, b.body_shape_pos[s])
    srot = wp.transform_get_rotation(pose_b) * b.body_shape_rot[s]
    vp = v[pk]
    x = x_start[pk] + vp * h
    sd = shape_signed_distance(b.body_shape_type[s], spos, srot, b.body_shape_params[s], x)
    gap = sd[0] - m.particle_radius[p]
    if linearise != 0:
        pose0 = body_pose(b, ib, w, bx_start, bv_lin, h)
        srot0 = wp.transform_get_rotation(pose0) * b.body_shape_rot[s]
        x0 = x_start[pk] + v_lin[pk] * h
        sd0 = shape_signed_distance(
            b.body_shape_type[s], wp.transform_point(pose0, b.body_shape_pos[s]), srot0, b.body_shape_params[s], x0
        )
        near = wp.min(gap, sd0[0] - m.particle_radius[p]) <= contact.margin or lam[row0 + 2] > 0.0
        if inv_m > 0.0 and near:
            n0 = wp.vec3(sd0[1], sd0[2], sd0[3])
            jac.pb_frame[tid] = frame_from_reference(n0, wp.quat_rotate(srot0, wp.vec3(1.0, 0.0, 0.0)))
            jac.pb_arm[tid] = (
                x0 - n0 * sd0[0] - wp.transform_get_translation(pose0)
            )  # surface point relative to the body
            jac.pb_mu[tid] = b.body_shape_mu[s]
        else:
            jac.pb_frame[tid] = wp.mat33()
            release_contact_slot(row0, lam)
        return 0.0
    frame = jac.pb_frame[tid]
    res = float(0.0)
    if contact_slot_off(frame):
        switch_off_contact_rows(row0, jac.row_compliance, rhs, diag)
    else:
        arm = jac.pb_arm[tid]
        vb = body_vel(b, ib, w, bv)
        u = vp - lin(vb) - wp.cross(ang(vb), arm)
        t1 = wp.vec3(frame[0, 0], frame[0, 1], frame[0, 2])
        t2 = wp.vec3(frame[1, 0], frame[1, 1], frame[1, 2])
        n = wp.vec3(frame[2, 0], frame[2, 1], frame[2, 2])
        r_n = inv_m + row_effective_mass(b, ib, w, inv_inertia, -n, -wp.cross(arm, n))
        r1 = inv_m + row_effective_mass(b, ib, w, inv_inertia, -t1, -wp.cross(arm, t1))
        r2 = inv_m + row_effective_mass(b, ib, w, inv_inertia, -t2, -wp.cross(arm, t2))
        res = assemble_contact_rows(
            row0,
            frame,
            u,
            gap / h,
            r_n,
            r1,
            r2,
            jac.pb_mu[tid],
            lam_n_prev[tid],
            newton_iteration,
            contact,
            lam,
            jac.row_compliance,
            rhs,
            diag,
        )
    if res > 0.0:  # (a NaN stays out of the merit)
        return res
    return 0.0


@wp.func
def gather_particle_body_contact(
    tid: int,
    m: ModelData,
    b: BodyData,
    jac: Jacobian,
    inv_inertia: wp.array(dtype=wp.mat33),
    particle_impulse: wp.array(dtype=wp.vec3),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """y = J M⁻¹ (impulse) + C x for the three rows of particle–body-shape slot ``tid`` (world-major);
    ``inv_inertia``: the bodies' world inverse inertias at the iterate."""
    w = tid // m.particle_body_count
    k = tid - w * m.particle_body_count
    slot = particle_body_slot(m, b, k)
    p = slot[0]
    s = slot[1]
    row0 = particle_body_row0(m, w, k)
    F = jac.pb_frame[tid]
    rel = wp.vec3()
    if not contact_slot_off(F):
        dvb = body_velocity(b, b.body_shape_body[s], w, inv_inertia, body_impulse)
        rel = (
            particle_impulse[w * m.particle_count + p] * m.particle_inv_mass[p]
            - lin(dvb)
            - wp.cross(ang(dvb), jac.pb_arm[tid])
        )
    d = F * rel
    for r in range(3):
        y[row0 + r] = d[r] + jac.row_compliance[row0 + r] * x[row0 + r]


@wp.func
def project_particle_body_friction(
    tid: int,
    m: ModelData,
    jac: Jacobian,
    lam: wp.array(dtype=float),
    lam_n_prev: wp.array(dtype=float),
    delta: wp.array(dtype=float),
    active_contacts: wp.array(dtype=int),
    active_index: int,
):
    """Cone projection of particle–body-shape slot ``tid`` (as project_body_friction)."""
    w = tid // m.particle_body_count
    k = tid - w * m.particle_body_count
    row0 = particle_body_row0(m, w, k)
    F = jac.pb_frame[tid]
    if contact_slot_off(F):
        lam_n_prev[tid] = 0.0
        return
    lam_n = project_cone_rows(lam, row0, jac.pb_mu[tid], delta)
    lam_n_prev[tid] = wp.max(lam_n, 0.0)
    if lam_n > 0.0:
        wp.atomic_add(active_contacts, active_index, 1)


@wp.func
def body_transpose_range(
    w: int, first: int, end: int, m: ModelData, b: BodyData, bjac: BodyJacobian, jac: Jacobian, x: wp.array(dtype=float)
) -> wp.spatial_vector:
    """Σ (J_bᵀ x) over entries [first, end) of one body's incidence list in world w: force and torque about the
    body's centre [N s, N m s per unit of x], summed in list order (attachments, joint rows, body contacts,
    particle–body contacts; no atomics, so the sum is reproducible). The lanes of a world sum a body's list in
    chunks (kernels/world_rows.py, scatter_world_bodies)."""
    f = wp.vec3()
    t = wp.vec3()
    starts = body_family_starts(m)
    ahead = first_code_ahead(b.body_incidence, first, end)
    for c in range(first, end):
        codes = code_and_next(b.body_incidence, c, end, ahead)  # on a GPU the next code is read ahead
        ahead = codes[1]
        entry = decode_body_incidence(codes[0], starts)
        family = entry[0]
        k = entry[1]
        role = entry[2]
        if family == ATTACHMENT:
            row0 = family_row0(m, w, ATTACHMENT, k)
            xk = wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
            f += xk
            t += wp.cross(bjac.attachment_arm[w * b.attachment_count + k], xk)
        elif family == PARTICLE_BODY:
            # a particle against one of this body's shapes: the body takes −Fᵀx at the contact arm
            row0 = family_row0(m, w, PARTICLE_BODY, k)
            kk = w * m.particle_body_count + k
            imp = wp.transpose(jac.pb_frame[kk]) * wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
            f -= imp
            t -= wp.cross(jac.pb_arm[kk], imp)
        elif family == BODY_CONTACT:
            # body contact slot: role 0 = the feature's body, 1 = the target's body
            row0 = family_row0(m, w, BODY_CONTACT, k)
            kk = w * b.body_contact_count + k
            imp = wp.transpose(bjac.contact_frame[kk]) * wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
            if role == 0:
                f += imp
                t += wp.cross(bjac.contact_arm_a[kk], imp)
            else:
                f -= imp
                t -= wp.cross(bjac.contact_arm_b[kk], imp)
        else:
            row0 = family_row0(m, w, JOINT, k)
            for r in range(6):
                kr = (w * b.joint_count + k) * 6 + r
                xr = x[row0 + r]
                if role == 1:
                    f -= bjac.joint_lin[kr] * xr
                    t += bjac.joint_ang_parent[kr] * xr
                else:
                    f += bjac.joint_lin[kr] * xr
                    t += bjac.joint_ang_child[kr] * xr
    return spatial(f, t)
