"""Primal FEM (docs/solver.md): tets as elastic forces of the positions, eliminated from the multiplier system.

With the tet rows eliminated (λ_t = −C_t⁻¹·(c_t + β J_t v)/(h + β), the value that zeroes the row, C_t = E_t/(h(h+β))),
every Newton iteration solves the symmetric saddle-point system

    [ A    −J_pᵀ ] [Δv]   [−r_v   ]        A = M + Σ_t J_tᵀ C_t⁻¹ J_t,  r_v = M(v − ṽ) − Jᵀλ,
    [ −J_p  −S   ] [Δλ] = [−rhs   ]        S = J_b M_b⁻¹ J_bᵀ + C  (bodies eliminated as before),

for the particle velocities and the multipliers of every other row (contacts, distances, attachments, joints). The elastic
stress is always the constitutive one at the current positions, so a body at rest in equilibrium has zero residual
whatever the history of truncated linear solves, and the preconditioner can work on displacements (two-level: Jacobi
plus a trilinear coarse grid per soft body, coarse_space.py), where long stiff bodies converge in a few iterations.
"""

import warp as wp

from .data import Jacobian, ModelData
from .schur import particle_transpose_product
from .tet import lame_stress, polar_rotation, tet_jacobian_times, write_tet_forces


@wp.func
def skipped_row(tid: int, rows_per_world: int, skip_start: int, skip_count: int) -> int:
    """Global row of thread ``tid`` of a launch over the rows outside [skip_start, skip_start + skip_count) of every
    world (the eliminated tet rows)."""
    per_world = rows_per_world - skip_count
    w = tid // per_world
    k = tid - w * per_world
    if k >= skip_start:
        k += skip_count
    return w * rows_per_world + k


@wp.kernel
def tet_stiffness_product(
    m: ModelData,
    jac: Jacobian,
    lame: wp.array(dtype=wp.vec2),
    xv: wp.array(dtype=wp.vec3),
    # Out:
    tet_force: wp.array(dtype=wp.vec3),
):
    """Per tet and vertex, J_tᵀ s_t with s_t = −C_t⁻¹ J_t xv (scatter then sums −Σ J_tᵀ C_t⁻¹ J_t xv = −K·xv).
    ``lame`` = h(h+β)·V·(λ, μ) per tet (tet_scaled_lame), so C_t⁻¹·c = lame_stress(c, lame) needs no division here."""
    tid = wp.tid()
    w = tid // m.tet_count
    t = tid - w * m.tet_count
    idx = m.tet_indices[t]
    B = m.tet_rest_inverse[t]
    R = jac.tet_rotation[tid]
    pbase = w * m.particle_count
    c = tet_jacobian_times(R, B, xv[pbase + idx[0]], xv[pbase + idx[1]], xv[pbase + idx[2]], xv[pbase + idx[3]])
    k = lame[t]
    write_tet_forces(R, B, -lame_stress(c, k[0], k[1]), 4 * tid, tet_force)


@wp.kernel
def particle_system_top(
    m: ModelData,
    jac: Jacobian,
    mass: wp.array(dtype=float),
    xv: wp.array(dtype=wp.vec3),
    xl: wp.array(dtype=float),
    tet_force: wp.array(dtype=wp.vec3),
    # Out:
    yv: wp.array(dtype=wp.vec3),
    mass_xv: wp.array(dtype=wp.vec3),
):
    """yv = M xv − Jᵀs per particle, with Jᵀs = −K xv + J_pᵀ xl (the tets' part from the tet product in
    ``tet_force``, the rows' part from xl); identity for kinematic particles. mass_xv = M xv, which the row gathers
    turn back into xv (they multiply by M⁻¹)."""
    tid = wp.tid()
    w = tid // m.particle_count
    p = tid - w * m.particle_count
    mp = mass[p]
    if mp > 0.0:
        yv[tid] = xv[tid] * mp - particle_transpose_product(m, jac, xl, tet_force, 1, w, p)
        mass_xv[tid] = xv[tid] * mp
    else:
        yv[tid] = xv[tid]
        mass_xv[tid] = wp.vec3()


@wp.kernel
def negate_rows(rows_per_world: int, skip_start: int, skip_count: int, g: wp.array(dtype=float), y: wp.array(dtype=float)):
    """y = −g on the multiplier rows (the launch covers only them: rows_per_world − skip_count per world); also the
    saddle right-hand side of the rows, −rhs = φ."""
    i = skipped_row(wp.tid(), rows_per_world, skip_start, skip_count)
    y[i] = -g[i]


@wp.kernel
def particle_residual(
    particles_per_world: int,
    mass: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    v: wp.array(dtype=wp.vec3),
    v_pred: wp.array(dtype=wp.vec3),
    impulse: wp.array(dtype=wp.vec3),
    # Out:
    bv: wp.array(dtype=wp.vec3),
    residual_sq: wp.array(dtype=float),
):
    """bv = −r_v = Jᵀλ − M(v − ṽ) (0 for kinematic particles); residual_sq[w] += Σ |r_v/A_pp|², the velocity change
    a Jacobi step would make [m/s] (r_v/m would be dominated by the float32 round-off of the stiff elastic impulses; tiled:
    one block per world, fixed summation order)."""
    w, lane = wp.tid()
    acc = float(0.0)
    for k in range(lane, particles_per_world, wp.block_dim()):
        i = w * particles_per_world + k
        mk = mass[k]
        b = wp.vec3()
        if mk > 0.0:
            b = impulse[i] - (v[i] - v_pred[i]) * mk
            acc += wp.dot(b, b) / (diag[k] * diag[k])
        bv[i] = b
    # added to the rows' part that the assembly accumulated
    wp.tile_atomic_add(residual_sq, wp.tile_sum(wp.tile(acc)), offset=w)


@wp.kernel
def add_velocity(dv: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
    """v += dv."""
    i = wp.tid()
    v[i] = v[i] + dv[i]


@wp.kernel
def zero_converged_velocity(particles_per_world: int, tol_sq: float, residual_sq: wp.array(dtype=float), dv: wp.array(dtype=wp.vec3)):
    """Drop the Newton update of worlds whose residual was already below the Newton tolerance."""
    i = wp.tid()
    if residual_sq[i // particles_per_world] <= tol_sq:
        dv[i] = wp.vec3()


@wp.kernel
def backtrack_velocity(particles_per_world: int, residual_new: wp.array(dtype=float), residual_old: wp.array(dtype=float), dv: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3)):
    """v −= ½dv (and dv ← ½dv) in worlds whose merit grew with the last update."""
    i = wp.tid()
    w = i // particles_per_world
    if residual_new[w] > residual_old[w]:
        half = dv[i] * 0.5
        v[i] = v[i] - half
        dv[i] = half


@wp.kernel
def start_velocities(
    particles_per_world: int,
    inv_mass: wp.array(dtype=float),
    v_start: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    v_pred: wp.array(dtype=wp.vec3),
    carried_impulse: wp.array(dtype=wp.vec3),
):
    """v_pred = ṽ + M⁻¹Δp_carried (the prediction in v, plus the friction impulse the last step's cone projection took
    back, consumed here); dynamic particles start the Newton iteration from the previous velocity v⁻."""
    i = wp.tid()
    w_inv = inv_mass[i % particles_per_world]
    v_pred[i] = v[i] + carried_impulse[i] * w_inv
    carried_impulse[i] = wp.vec3()
    if w_inv > 0.0:
        v[i] = v_start[i]


# ------------------------------------------------------------------ two-level preconditioner of A


@wp.kernel
def fit_body_rotation(
    particles_per_world: int,
    bodies_per_world: int,
    body_start: wp.array(dtype=int),
    body_particles: wp.array(dtype=int),
    mass: wp.array(dtype=float),
    rest: wp.array(dtype=wp.vec3),
    x_start: wp.array(dtype=wp.vec3),
    # Out:
    rotation: wp.array(dtype=wp.mat33),
):
    """Best-fit rotation of each soft body from rest to x⁻ (polar factor of Σ m (x − c)(X − C)ᵀ)."""
    tid = wp.tid()
    w = tid // bodies_per_world
    c = tid - w * bodies_per_world
    msum = float(0.0)
    cx = wp.vec3()
    cX = wp.vec3()
    for k in range(body_start[c], body_start[c + 1]):
        p = body_particles[k]
        mp = wp.max(mass[p], 1.0e-12)
        msum += mp
        cx += x_start[w * particles_per_world + p] * mp
        cX += rest[p] * mp
    cx = cx / msum
    cX = cX / msum
    Apq = wp.mat33()
    for k in range(body_start[c], body_start[c + 1]):
        p = body_particles[k]
        mp = wp.max(mass[p], 1.0e-12)
        Apq += wp.outer(x_start[w * particles_per_world + p] - cx, rest[p] - cX) * mp
    rotation[tid] = polar_rotation(Apq)


@wp.kernel
def coarse_solve(
    nodes_per_world: int,
    node_body: wp.array(dtype=int),
    node_first: wp.array(dtype=int),
    inverse_start: wp.array(dtype=int),
    inverse: wp.array(dtype=wp.vec4),
    rc: wp.array(dtype=wp.vec4),
    # Out:
    yc: wp.array(dtype=float),
):
    """yc = A_c⁻¹ rc, one coarse dof per thread (dense rest-frame inverse of the body's block). A body's block has a
    multiple of 4 nodes (coarse_space.py), so its rows and its part of rc are whole vec4s, in units of which
    ``inverse_start`` counts: four independent chains of multiply-adds, where one serial chain would be bound by the
    add latency of a single-threaded CPU kernel (fixed order, deterministic)."""
    tid = wp.tid()
    dofs_per_world = 3 * nodes_per_world
    w = tid // dofs_per_world
    i = tid - w * dofs_per_world
    c = node_body[i // 3]
    first = 3 * node_first[c]
    n4 = (3 * node_first[c + 1] - first) // 4
    base = inverse_start[c] + (i - first) * n4
    r0 = (w * dofs_per_world + first) // 4
    acc = wp.vec4()
    for j in range(n4):
        acc += wp.cw_mul(inverse[base + j], rc[r0 + j])
    yc[tid] = (acc[0] + acc[1]) + (acc[2] + acc[3])


@wp.kernel
def precondition_particles(
    particles_per_world: int,
    nodes_per_world: int,
    bodies_per_world: int,
    diag: wp.array(dtype=float),
    body_of_particle: wp.array(dtype=int),
    node_index: wp.array(dtype=int),  # (n·8) flattened
    node_weight: wp.array(dtype=float),
    rotation: wp.array(dtype=wp.mat33),
    use_coarse: int,
    yc: wp.array(dtype=float),
    r: wp.array(dtype=wp.vec3),
    # Out:
    z: wp.array(dtype=wp.vec3),
):
    """z = D⁻¹ r + R P A_c⁻¹ Pᵀ Rᵀ r (additive two-level); 0 on kinematic particles."""
    tid = wp.tid()
    w = tid // particles_per_world
    p = tid - w * particles_per_world
    d = diag[p]
    if d <= 0.0:
        z[tid] = wp.vec3()
        return
    out = r[tid] / d
    c = body_of_particle[p]
    if use_coarse != 0 and c >= 0:
        acc = wp.vec3()
        for k in range(8):
            j = node_index[8 * p + k]
            if j >= 0:
                base = 3 * (w * nodes_per_world + j)
                acc += wp.vec3(yc[base], yc[base + 1], yc[base + 2]) * node_weight[8 * p + k]
        out += rotation[w * bodies_per_world + c] * acc
    z[tid] = out


@wp.kernel
def precondition_rows(rows_per_world: int, skip_start: int, skip_count: int, diag: wp.array(dtype=float), r: wp.array(dtype=float), z: wp.array(dtype=float)):
    """z = r / diag on the multiplier rows (Schur diagonal with the particles' effective masses, or the rows' own part D
    of the rigid-body block)."""
    i = skipped_row(wp.tid(), rows_per_world, skip_start, skip_count)
    z[i] = r[i] / diag[i]


# ------------------------------------------------------------------ scaled warm start (PrimalStep.scale_warm_start)


@wp.func
def bilateral_row(r: int, skip_start: int, skip_count: int, contact_start: int, contact_end: int, body_contact_start: int) -> bool:
    """Row r of a world keeps a bilateral multiplier (distance, attachment, joint): not a tet row, not a contact row."""
    tet = r >= skip_start and r < skip_start + skip_count
    contact = (r >= contact_start and r < contact_end) or r >= body_contact_start
    return not (tet or contact)


@wp.kernel
def bilateral_part(
    rows_per_world: int,
    skip_start: int,
    skip_count: int,
    contact_start: int,
    contact_end: int,
    body_contact_start: int,
    factor: float,
    lam: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """out = factor·λ on the bilateral rows that keep a multiplier (distances, attachments, joints), 0 on the tet and
    contact rows."""
    i = wp.tid()
    out[i] = 0.0
    if bilateral_row(i % rows_per_world, skip_start, skip_count, contact_start, contact_end, body_contact_start):
        out[i] = factor * lam[i]


@wp.kernel
def warm_start_merit(
    particles_per_world: int,
    rows_per_world: int,
    skip_start: int,
    skip_count: int,
    contact_start: int,
    contact_end: int,
    body_contact_start: int,
    diag_v: wp.array(dtype=float),
    bv: wp.array(dtype=wp.vec3),
    bl: wp.array(dtype=float),
    merit: wp.array(dtype=float),
):
    """merit[w] = Σ|b_v/A_pp|² + Σ φ² over the particles and the bilateral rows (b_λ = φ there; a contact row's b_λ is
    φ/(∂φ/∂a), with ∂φ/∂a down to 10⁻³ on a separating contact, which would swamp the sum): the first Newton residual
    of the scaled warm start, summed in a fixed order (tiled, one block per world; the assembly's own merit adds rows
    atomically, in an order a GPU does not fix, and s must not depend on it)."""
    w, lane = wp.tid()
    acc = float(0.0)
    for k in range(lane, particles_per_world, wp.block_dim()):
        b = bv[w * particles_per_world + k]
        acc += wp.dot(b, b) / (diag_v[k] * diag_v[k])
    per_world = rows_per_world - skip_count
    for k in range(lane, per_world, wp.block_dim()):
        r = skipped_row(w * per_world + k, rows_per_world, skip_start, skip_count) - w * rows_per_world
        if bilateral_row(r, skip_start, skip_count, contact_start, contact_end, body_contact_start):
            g = bl[w * rows_per_world + r]
            acc += g * g
    wp.tile_atomic_add(merit, wp.tile_sum(wp.tile(acc)), offset=w)


@wp.kernel
def warm_start_parabola(
    rows_per_world: int,
    merit_one: wp.array(dtype=float),
    merit_half: wp.array(dtype=float),
    merit_zero: wp.array(dtype=float),
    carried: wp.array(dtype=float),
    out: wp.array(dtype=float),
    scale: wp.array(dtype=float),
):
    """out = s·carried, with the s ∈ [0, 1] that minimises the parabola through the first Newton residuals of the
    world at s = 0, ½ and 1 (warm_start_merit; m(s) = a s² + b s + m(0), exact where the rows are linear in λ);
    scale[w] = s."""
    i = wp.tid()
    w = i // rows_per_world
    m0 = merit_zero[w]
    m1 = merit_one[w]
    a = 2.0 * m1 - 4.0 * merit_half[w] + 2.0 * m0
    b = 4.0 * merit_half[w] - 3.0 * m0 - m1
    s = float(1.0)
    if a > 0.0:
        s = wp.clamp(-b / (2.0 * a), 0.0, 1.0)
    elif m0 < m1:
        s = 0.0
    out[i] = s * carried[i]
    if i % rows_per_world == 0:
        scale[w] = s
