"""Row assembly and matrix-free Schur products y = (J M⁻¹ Jᵀ + C) x of the particle row families (paper Eq. 8).

Element e of world w of the particle families (distance, tet, contact: E = ModelData.element_count per world) has id
w·E + e; its rows sit where the row-family table puts them (``family_row0``: distance 1 row each, tet 6, contact 3:
t1, t2, n). Per step the Jacobian is described by a unit direction per distance row, the rotation R per
tet (rows are formed from R and the rest inverse B on the fly) and a contact frame (t1, t2, n) per contact slot.

Rows use velocity-level residuals with impulses λ [N·s]: a compliant row with damping β [s] and compliance α is
    φ = (c + β·J v)/(h + β) + α/(h (h + β)) · λ,
so Schur diagonal compliance is α/(h(h+β)) and the right-hand side is −φ (docs/solver.md).
"""

import warp as wp

from .block import LANE_BATCH, batch_holds, batch_step, code_and_next, first_code_ahead, gather_batch, lane_batch
from .contact import shape_signed_distance, tangent_basis
from .data import (
    ATTACHMENT,
    DISTANCE,
    JOINT,
    PARTICLE_BODY,
    TET,
    ContactSettings,
    Jacobian,
    ModelData,
    contact_row0,
    family_element0,
    family_row0,
    load6,
)
from .friction import assemble_contact_rows, contact_slot_off, switch_off_contact_rows
from .tet import (
    linearisation_point,
    polar_rotation,
    tet_compliance_diagonal,
    tet_compliance_times,
    tet_constitutive_multiplier,
    tet_deformation_gradient,
    tet_jacobian_times,
    tet_row_gradient,
    tet_strain,
    write_tet_forces,
)
from .types import vec6

#: a rest-length scale (``Control.distance_rest_scale``) below zero switches a distance constraint off in that world
DISTANCE_OFF = wp.constant(-1.0)


@wp.func
def assemble_particle_element(
    tid: int,
    m: ModelData,
    contact: ContactSettings,
    h: float,
    newton_iteration: int,
    linearise: int,
    primal_fem: int,
    x_start: wp.array(dtype=wp.vec3),
    v_lin: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    distance_scale: wp.array(dtype=float),
    shape_mu: wp.array(dtype=wp.vec2),
    contact_lam_n_prev: wp.array(dtype=float),
    lam: wp.array(dtype=float),
    jac: Jacobian,
    rhs: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    tet_force: wp.array(dtype=wp.vec3),
) -> float:
    """Element ``tid`` of the particle families (world-major). linearise = 1: compute the step's Jacobians at the
    linearisation point x⁻ + h·v_lin (``jac``) and write no rows. linearise = 0: write the rows (right-hand side −φ at
    the iterate x⁻ + h·v, Schur diagonal, compliance) with the step's frozen Jacobians (a chord Newton method,
    docs/solver.md) and return their Σφ² (the element's part of the world's merit). Primal FEM (primal_fem = 1): the
    tet's impulse is the constitutive one, J_tᵀλ_t per vertex goes to ``tet_force``. ``shape_mu``: the static shapes'
    friction of every world (worlds · shapes, Control.shape_mu)."""
    w = tid // m.element_count
    e = tid - w * m.element_count
    pbase = w * m.particle_count
    res = float(0.0)

    if e < m.distance_count:
        # ---- distance / actuation row, paper Eqs. 3-4: c = |xi − xj| − r·ε(p)
        i = m.distance_i[e]
        j = m.distance_j[e]
        k = w * m.distance_count + e
        r0 = family_row0(m, w, DISTANCE, e)
        if distance_scale[k] < 0.0:
            # switched off in this world (Control.distance_rest_scale < 0): the limit of infinite compliance, scaled
            # by 1/compliance: no Jacobian, identity row, φ = λ, so the row only releases a carried multiplier
            if linearise != 0:
                jac.distance_dir[k] = wp.vec3(0.0, 0.0, 0.0)
                return 0.0
            jac.row_compliance[r0] = 1.0
            rhs[r0] = -lam[r0]
            diag[r0] = 1.0
            res = lam[r0] * lam[r0]
        else:
            if linearise != 0:
                d0 = (x_start[pbase + i] + v_lin[pbase + i] * h) - (x_start[pbase + j] + v_lin[pbase + j] * h)
                n0 = wp.vec3(1.0, 0.0, 0.0)
                if wp.length(d0) > 1.0e-12:
                    n0 = wp.normalize(d0)
                jac.distance_dir[k] = n0
                return 0.0
            vi = v[pbase + i]
            vj = v[pbase + j]
            d = (x_start[pbase + i] + vi * h) - (x_start[pbase + j] + vj * h)
            length = wp.length(d)
            n = jac.distance_dir[k]
            beta = m.distance_damping[e]
            inv_hb = 1.0 / (h + beta)
            comp = m.distance_compliance[e] * inv_hb / h
            jac.row_compliance[r0] = comp
            c = length - m.distance_rest[e] * distance_scale[k]
            phi = (c + beta * wp.dot(n, vi - vj)) * inv_hb + comp * lam[r0]
            mass_term = m.particle_inv_mass[i] + m.particle_inv_mass[j]
            if mass_term + comp <= 0.0:
                phi = 0.0  # both ends kinematic and rigid: nothing to solve
                comp = 1.0
            rhs[r0] = -phi
            diag[r0] = mass_term + comp
            res = phi * phi
    elif e < m.distance_count + m.tet_count:
        # ---- corotational tet, 6 strain rows (paper Eq. 5)
        t = e - m.distance_count
        idx = m.tet_indices[t]
        B = m.tet_rest_inverse[t]
        if linearise != 0:
            # R of the step: polar factor at x⁻ + h·v⁻, held for the whole step, so the strain rows below are linear
            # in x and the tet part of each Newton solve is exact (stiffness-warped linear elasticity)
            F0 = tet_deformation_gradient(
                linearisation_point(x_start, v_lin, h, pbase + idx[0]),
                linearisation_point(x_start, v_lin, h, pbase + idx[1]),
                linearisation_point(x_start, v_lin, h, pbase + idx[2]),
                linearisation_point(x_start, v_lin, h, pbase + idx[3]),
                B,
            )
            jac.tet_rotation[w * m.tet_count + t] = polar_rotation(F0)
            return 0.0
        v0 = v[pbase + idx[0]]
        v1 = v[pbase + idx[1]]
        v2 = v[pbase + idx[2]]
        v3 = v[pbase + idx[3]]
        F = tet_deformation_gradient(
            x_start[pbase + idx[0]] + v0 * h,
            x_start[pbase + idx[1]] + v1 * h,
            x_start[pbase + idx[2]] + v2 * h,
            x_start[pbase + idx[3]] + v3 * h,
            B,
        )
        R = jac.tet_rotation[w * m.tet_count + t]
        strain = tet_strain(R, F)
        beta = m.tet_damping[t]
        inv_hb = 1.0 / (h + beta)
        scale = inv_hb / (h * m.tet_volume[t] * m.tet_youngs[t])
        nu = m.tet_poisson[t]
        row0 = family_row0(m, w, TET, t)
        if primal_fem != 0:
            # primal FEM (kernels/primal.py): the tet's impulse is the constitutive one at this iterate, its rows are
            # eliminated (no stage reads their right-hand side or diagonal: saddle.saddle_rows leaves them out) and
            # its stiffness enters the particle system
            jv6 = tet_jacobian_times(R, B, v0, v1, v2, v3)
            rate = vec6()
            for r in range(6):
                rate[r] = (strain[r] + beta * jv6[r]) * inv_hb
            lam_t = tet_constitutive_multiplier(rate, nu, m.tet_youngs[t], m.tet_volume[t], h, beta)
            for r in range(6):
                lam[row0 + r] = lam_t[r]
            write_tet_forces(R, B, lam_t, 4 * (w * m.tet_count + t), tet_force)
            return 0.0
        clam = tet_compliance_times(load6(lam, row0), nu, scale)
        i0 = m.particle_inv_mass[idx[0]]
        i1 = m.particle_inv_mass[idx[1]]
        i2 = m.particle_inv_mass[idx[2]]
        i3 = m.particle_inv_mass[idx[3]]
        for r in range(6):
            g0 = tet_row_gradient(R, B, r, 0)
            g1 = tet_row_gradient(R, B, r, 1)
            g2 = tet_row_gradient(R, B, r, 2)
            g3 = tet_row_gradient(R, B, r, 3)
            jv = wp.dot(g0, v0) + wp.dot(g1, v1) + wp.dot(g2, v2) + wp.dot(g3, v3)
            phi_r = (strain[r] + beta * jv) * inv_hb + clam[r]
            rhs[row0 + r] = -phi_r
            diag[row0 + r] = (
                i0 * wp.dot(g0, g0)
                + i1 * wp.dot(g1, g1)
                + i2 * wp.dot(g2, g2)
                + i3 * wp.dot(g3, g3)
                + tet_compliance_diagonal(r, nu, scale)
            )
            res += phi_r * phi_r
    else:
        # ---- contact slot: the pair (particle p, shape s) the step's list put there (kernels/contact_list.py)
        cidx = e - m.distance_count - m.tet_count
        k = w * m.contact_count + cidx
        row0 = contact_row0(m, w, cidx)
        p = jac.contact_particle[k]
        if linearise != 0:
            # the list holds only this step's candidates (with mass); an empty slot was cleared (zero frame and
            # multipliers) when the list was written
            if p >= 0:
                s = jac.contact_shape[k]
                sd0 = shape_signed_distance(
                    m.shape_type[s],
                    m.shape_pos[s],
                    m.shape_rot[s],
                    m.shape_params[s],
                    x_start[pbase + p] + v_lin[pbase + p] * h,
                )
                jac.contact_frame[k] = tangent_basis(wp.vec3(sd0[1], sd0[2], sd0[3]), m.shape_rot[s])
            return 0.0
        frame = jac.contact_frame[k]
        if contact_slot_off(frame):
            # an empty slot: rows switched off
            switch_off_contact_rows(row0, jac.row_compliance, rhs, diag)
        else:
            s = jac.contact_shape[k]
            inv_m = m.particle_inv_mass[p]
            vp = v[pbase + p]
            x = x_start[pbase + p] + vp * h
            sd = shape_signed_distance(m.shape_type[s], m.shape_pos[s], m.shape_rot[s], m.shape_params[s], x)
            gap = sd[0] - m.particle_radius[p]
            res = assemble_contact_rows(
                row0,
                frame,
                vp,
                gap / h,
                inv_m,
                inv_m,
                inv_m,
                shape_mu[w * m.shape_count + s],
                contact_lam_n_prev[k],
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
def add_contact_transpose_product(
    acc: wp.vec3, m: ModelData, jac: Jacobian, x: wp.array(dtype=float), w: int, p: int
) -> wp.vec3:
    """acc + Σ Fᵀ x over the contact slots of particle p in world w (one run of the step's list, in slot order, added
    one by one so the sum rounds as it would with the slots among the particle's other rows)."""
    first = jac.contact_first[w * m.particle_count + p]
    for k in range(first, first + jac.contact_num[w * m.particle_count + p]):
        row0 = contact_row0(m, w, k)
        acc += wp.transpose(jac.contact_frame[w * m.contact_count + k]) * wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
    return acc


@wp.func
def add_tet_transpose_product(
    acc: wp.vec3,
    m: ModelData,
    jac: Jacobian,
    x: wp.array(dtype=float),
    tet_force: wp.array(dtype=wp.vec3),
    use_tet_force: int,
    w: int,
    p: int,
) -> wp.vec3:
    """acc + Σ J_tᵀ x_t over the tets of particle p in world w, in tet order: from ``tet_force`` (per tet and vertex,
    already J_tᵀ x_t) when use_tet_force = 1, from the strain gradients and the tet rows of x when 0; none when 2 (the
    primal product takes the tets' part from its block matrix)."""
    if use_tet_force == 2:
        return acc
    first = m.particle_tet_start[p]
    last = m.particle_tet_start[p + 1]
    if use_tet_force != 0:
        base = wp.vec4i(4 * w * m.tet_count)
        for c0 in range(first, last, batch_step(1)):  # a batch of tets' codes, then of their forces, at a time
            forces = gather_batch(tet_force, gather_batch(m.particle_tet, lane_batch(0, c0, 1, last)) + base)
            for j in range(LANE_BATCH):
                if batch_holds(c0, j, 1, last):
                    acc += forces[j]
    else:
        for c in range(first, last):
            code = m.particle_tet[c]
            t = code // 4
            R = jac.tet_rotation[w * m.tet_count + t]
            B = m.tet_rest_inverse[t]
            xt = load6(x, family_row0(m, w, TET, t))
            for r in range(6):
                acc += tet_row_gradient(R, B, r, code - 4 * t) * xt[r]
    return acc


@wp.func
def particle_transpose_product(
    m: ModelData,
    jac: Jacobian,
    x: wp.array(dtype=float),
    tet_force: wp.array(dtype=wp.vec3),
    use_tet_force: int,
    w: int,
    p: int,
) -> wp.vec3:
    """(Jᵀ x) of particle p in world w, summed over the particle's rows in a fixed order (no atomics, so the result is
    reproducible and independent of the other worlds): distances, tets, contact slots, attachments, body-shape
    contacts. use_tet_force = 1 takes each tet's part from ``tet_force`` (per tet and vertex, already J_tᵀ x_t: the
    primal step writes it where it computes x_t) instead of recomputing the strain gradients; 2 leaves the tets out."""
    acc = wp.vec3()
    tets_pending = int(1)  # the particle's tets follow its distances
    contacts_pending = int(1)  # its contact slots come after its tets and before its attachments
    first_tet = family_element0(m, TET)
    first_attachment = family_element0(m, ATTACHMENT)
    start = m.particle_incidence_start[p]
    end = m.particle_incidence_start[p + 1]
    ahead = first_code_ahead(m.particle_incidence, start, end)
    for c in range(start, end):
        codes = code_and_next(m.particle_incidence, c, end, ahead)  # on a GPU the next code is read ahead
        ahead = codes[1]
        code = codes[0]
        e = code // 4
        local = code - 4 * e
        if e >= first_tet and tets_pending != 0:
            acc = add_tet_transpose_product(acc, m, jac, x, tet_force, use_tet_force, w, p)
            tets_pending = 0
        if e >= first_attachment and contacts_pending != 0:
            acc = add_contact_transpose_product(acc, m, jac, x, w, p)
            contacts_pending = 0
        if e < first_tet:
            n = jac.distance_dir[w * m.distance_count + e] * x[family_row0(m, w, DISTANCE, e)]
            if local == 0:
                acc += n
            else:
                acc -= n
        elif e < family_element0(m, JOINT):
            # particle–body attachment (c = p + R r − x)
            row0 = family_row0(m, w, ATTACHMENT, e - first_attachment)
            acc -= wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
        else:
            # particle against a body shape (kernels/rigid_contact.py): the particle takes +Fᵀx
            k = e - family_element0(m, PARTICLE_BODY)
            row0 = family_row0(m, w, PARTICLE_BODY, k)
            F = jac.pb_frame[w * m.particle_body_count + k]
            acc += wp.transpose(F) * wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
    if tets_pending != 0:
        acc = add_tet_transpose_product(acc, m, jac, x, tet_force, use_tet_force, w, p)
    if contacts_pending != 0:
        acc = add_contact_transpose_product(acc, m, jac, x, w, p)
    return acc


@wp.func
def gather_particle_rows(
    tid: int,
    m: ModelData,
    jac: Jacobian,
    h: float,
    impulse: wp.array(dtype=wp.vec3),
    x: wp.array(dtype=float),
    skip_tets: int,
    y: wp.array(dtype=float),
):
    """y = J M⁻¹ (impulse) + C x on the rows of element ``tid`` (world-major over the distance, tet unless
    ``skip_tets``, and contact elements), with impulse = Jᵀ x per particle (particle_transpose_product); skip_tets = 1
    leaves the tet rows alone (the primal FEM step eliminates them)."""
    per_world = m.element_count - skip_tets * m.tet_count
    w = tid // per_world
    e = tid - w * per_world
    if skip_tets != 0 and e >= m.distance_count:
        e += m.tet_count
    pbase = w * m.particle_count
    if e < m.distance_count:
        i = m.distance_i[e]
        j = m.distance_j[e]
        dv = impulse[pbase + i] * m.particle_inv_mass[i] - impulse[pbase + j] * m.particle_inv_mass[j]
        r = family_row0(m, w, DISTANCE, e)
        val = wp.dot(jac.distance_dir[w * m.distance_count + e], dv) + jac.row_compliance[r] * x[r]
        y[r] = val
    elif e < m.distance_count + m.tet_count:
        t = e - m.distance_count
        idx = m.tet_indices[t]
        B = m.tet_rest_inverse[t]
        R = jac.tet_rotation[w * m.tet_count + t]
        row0 = family_row0(m, w, TET, t)
        beta = m.tet_damping[t]
        scale = 1.0 / ((h + beta) * h * m.tet_volume[t] * m.tet_youngs[t])
        xt = load6(x, row0)
        cx = tet_compliance_times(xt, m.tet_poisson[t], scale)
        d0 = impulse[pbase + idx[0]] * m.particle_inv_mass[idx[0]]
        d1 = impulse[pbase + idx[1]] * m.particle_inv_mass[idx[1]]
        d2 = impulse[pbase + idx[2]] * m.particle_inv_mass[idx[2]]
        d3 = impulse[pbase + idx[3]] * m.particle_inv_mass[idx[3]]
        jd = tet_jacobian_times(R, B, d0, d1, d2, d3)
        for r in range(6):
            y[row0 + r] = jd[r] + cx[r]
    else:
        cidx = e - m.distance_count - m.tet_count
        p = jac.contact_particle[w * m.contact_count + cidx]
        row0 = contact_row0(m, w, cidx)
        dv = wp.vec3()
        if p >= 0:
            dv = jac.contact_frame[w * m.contact_count + cidx] * (impulse[pbase + p] * m.particle_inv_mass[p])
        for r in range(3):
            val = dv[r] + jac.row_compliance[row0 + r] * x[row0 + r]
            y[row0 + r] = val
