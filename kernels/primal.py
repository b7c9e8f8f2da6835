"""Primal FEM (docs/solver.md): tets as elastic forces of the positions, eliminated from the multiplier system.

With the tet rows eliminated (λ_t = −C_t⁻¹·(c_t + β J_t v)/(h + β), the value that zeroes the row, C_t = E_t/(h(h+β))),
every Newton iteration solves the symmetric saddle-point system

    [ A    −J_pᵀ ] [Δv]   [−r_v   ]        A = M + Σ_t J_tᵀ C_t⁻¹ J_t,  r_v = M(v − ṽ) − Jᵀλ,
    [ −J_p  −S   ] [Δλ] = [−rhs   ]        S = J_b M_b⁻¹ J_bᵀ + C  (bodies eliminated as before),

for the particle velocities and the multipliers of every other row (contacts, distances, attachments, joints). The
elastic stress is always the constitutive one at the current positions, so a body at rest in equilibrium has zero
residual whatever the history of truncated linear solves, and the preconditioner can work on displacements
(two-level: Jacobi plus a trilinear coarse grid per soft body, coarse_space.py), where long stiff bodies converge in a
few iterations.
"""

import warp as wp

from .block import (
    LANE_BATCH,
    batch_holds,
    batch_step,
    gather_batch,
    lane_batch,
    sliced_row,
    world_lanes,
    world_sum,
    world_sum_vec3,
)
from .tet import linearisation_point, polar_rotation


@wp.func
def particle_residual(
    tid: int,
    p: int,
    mass: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    v: wp.array(dtype=wp.vec3),
    v_pred: wp.array(dtype=wp.vec3),
    impulse: wp.vec3,
    bv: wp.array(dtype=wp.vec3),
) -> float:
    """Particle ``tid`` (particle p of its world), ``impulse`` its Jᵀλ: bv = −r_v = Jᵀλ − M(v − ṽ) (0 for kinematic
    particles); returns |r_v/A_pp|², the velocity change a Jacobi step would make [m²/s²] (r_v/m would be dominated by
    the float32 round-off of the stiff elastic impulses)."""
    mk = mass[p]
    b = wp.vec3()
    out = float(0.0)
    if mk > 0.0:
        b = impulse - (v[tid] - v_pred[tid]) * mk
        out = wp.dot(b, b) / (diag[p] * diag[p])
    bv[tid] = b
    return out


@wp.func
def start_velocity(
    tid: int,
    inv_mass: float,
    v_start: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    v_pred: wp.array(dtype=wp.vec3),
    carried_impulse: wp.array(dtype=wp.vec3),
):
    """Particle ``tid``: v_pred = ṽ + M⁻¹Δp_carried (the prediction in v, plus the friction impulse the last step's
    cone projection took back, consumed here); a dynamic particle starts the Newton iteration from v⁻."""
    v_pred[tid] = v[tid] + carried_impulse[tid] * inv_mass
    carried_impulse[tid] = wp.vec3()
    if inv_mass > 0.0:
        v[tid] = v_start[tid]


# ------------------------------------------------------------------ two-level preconditioner of A


@wp.func
def fit_body_rotation(
    w: int,
    lane: int,
    c: int,
    particles_per_world: int,
    body_start: wp.array(dtype=int),
    body_particles: wp.array(dtype=int),
    mass: wp.array(dtype=float),
    rest: wp.array(dtype=wp.vec3),
    x_start: wp.array(dtype=wp.vec3),
    v_lin: wp.array(dtype=wp.vec3),
    h: float,
) -> wp.mat33:
    """Best-fit rotation of soft body c of world w from rest to the linearisation point x = x⁻ + h·v⁻, where the tets
    take their rotations (polar factor of Σ m (x − c)(X − C)ᵀ). The world's lanes share the body's particles and
    every lane gets the rotation: all of them call it (its sums are world sums, kernels/block.py)."""
    lanes = world_lanes()
    msum = float(0.0)
    cx = wp.vec3()
    cX = wp.vec3()
    for k in range(body_start[c] + lane, body_start[c + 1], lanes):
        p = body_particles[k]
        mp = wp.max(mass[p], 1.0e-12)
        msum += mp
        cx += linearisation_point(x_start, v_lin, h, w * particles_per_world + p) * mp
        cX += rest[p] * mp
    msum = world_sum(msum)
    cx = world_sum_vec3(cx) / msum
    cX = world_sum_vec3(cX) / msum
    Apq = wp.mat33()
    for k in range(body_start[c] + lane, body_start[c + 1], lanes):
        p = body_particles[k]
        mp = wp.max(mass[p], 1.0e-12)
        Apq += wp.outer(linearisation_point(x_start, v_lin, h, w * particles_per_world + p) - cx, rest[p] - cX) * mp
    Apq = wp.matrix_from_rows(world_sum_vec3(Apq[0]), world_sum_vec3(Apq[1]), world_sum_vec3(Apq[2]))
    return polar_rotation(Apq)


@wp.func
def coarse_partial(
    w: int,
    first: int,
    end: int,
    particles_per_world: int,
    node_particles: wp.array(dtype=int),
    node_weights: wp.array(dtype=float),
    r: wp.array(dtype=wp.vec3),
) -> wp.vec3:
    """Σ weight · r[particle] over entries [first, end) of a coarse node's (particle, weight) list in world w, in list
    order: one chunk of the node's Pᵀ r (the lanes of a world sum a node's list in chunks), read a batch of entries
    at a time."""
    acc = wp.vec3()
    xb = wp.vec4i(w * particles_per_world)
    for k0 in range(first, end, batch_step(1)):
        ks = lane_batch(0, k0, 1, end)
        rs = gather_batch(r, gather_batch(node_particles, ks) + xb)
        weights = gather_batch(node_weights, ks)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, 1, end):
                acc += rs[j] * weights[j]
    return acc


@wp.func
def coarse_restrict(
    w: int,
    j: int,
    nodes_per_world: int,
    bodies_per_world: int,
    node_chunk_start: wp.array(dtype=int),
    chunk_sum: wp.array(dtype=wp.vec3),
    node_body: wp.array(dtype=int),
    rotation: wp.array(dtype=wp.mat33),
    rc: wp.array(dtype=float),
):
    """rc = Rᵀ Pᵀ r at coarse node j of world w (in its body's rest frame; P = the node's interpolation weights), its
    chunks' sums (coarse_partial; ``chunk_sum`` holds a world's chunks, node_chunk_start[nodes] per world) in order."""
    chunks = node_chunk_start[nodes_per_world]
    acc = wp.vec3()
    end = node_chunk_start[j + 1]
    for c0 in range(node_chunk_start[j], end, batch_step(1)):
        sums = gather_batch(chunk_sum, lane_batch(w * chunks, c0, 1, end))
        for i in range(LANE_BATCH):
            if batch_holds(c0, i, 1, end):
                acc += sums[i]
    R = rotation[w * bodies_per_world + node_body[j]]
    a = wp.transpose(R) * acc
    base = 3 * (w * nodes_per_world + j)
    rc[base] = a[0]
    rc[base + 1] = a[1]
    rc[base + 2] = a[2]


@wp.func
def coarse_solve(
    tid: int,
    nodes_per_world: int,
    node_body: wp.array(dtype=int),
    node_first: wp.array(dtype=int),
    inverse_start: wp.array(dtype=int),
    inverse: wp.array(dtype=wp.vec4),
    slice_width: int,
    rc: wp.array(dtype=wp.vec4),
    yc: wp.array(dtype=float),
):
    """yc = A_c⁻¹ rc for coarse dof ``tid`` (world-major; dense rest-frame inverse of the body's block). A body's block
    has a multiple of 4 nodes (coarse_space.py), so its rows and its part of rc are whole vec4s, in units of which
    ``inverse_start`` counts: four independent chains of multiply-adds, where one serial chain would be bound by the
    add latency of a single-threaded CPU kernel (fixed order, deterministic). The block's rows are stored in slices
    of ``slice_width`` (kernels/block.py, sliced_row)."""
    dofs_per_world = 3 * nodes_per_world
    w = tid // dofs_per_world
    i = tid - w * dofs_per_world
    c = node_body[i // 3]
    first = 3 * node_first[c]
    n4 = (3 * node_first[c + 1] - first) // 4
    row = inverse_start[c] + sliced_row(i - first, n4, slice_width)
    r0 = (w * dofs_per_world + first) // 4
    acc = wp.vec4()
    if slice_width == 1:  # the same loop with the stride a literal 1, which a CPU core runs faster
        for j in range(n4):
            acc += wp.cw_mul(inverse[row + j], rc[r0 + j])
    else:
        for j in range(n4):
            acc += wp.cw_mul(inverse[row + j * slice_width], rc[r0 + j])
    yc[tid] = (acc[0] + acc[1]) + (acc[2] + acc[3])


@wp.func
def precondition_particle(
    tid: int,
    particles_per_world: int,
    nodes_per_world: int,
    bodies_per_world: int,
    diag: wp.array(dtype=float),
    body_of_particle: wp.array(dtype=int),
    node_index: wp.array(dtype=int),
    node_weight: wp.array(dtype=float),
    slice_width: int,
    rotation: wp.array(dtype=wp.mat33),
    use_coarse: int,
    yc: wp.array(dtype=float),
    r: wp.array(dtype=wp.vec3),
    z: wp.array(dtype=wp.vec3),
) -> float:
    """Particle ``tid``: z = D⁻¹ r + R P A_c⁻¹ Pᵀ Rᵀ r (additive two-level, ``node_index``/``node_weight``: the
    particles' 8 coarse nodes, in slices of ``slice_width`` particles, kernels/block.py, sliced_row); 0 on
    kinematic particles. Returns r·z, the particle's term of the preconditioned inner product."""
    w = tid // particles_per_world
    p = tid - w * particles_per_world
    # the loads are unconditional where they can be (the clamped node of an empty slot, the quotient of a
    # kinematic particle are discarded), so that a GPU lane issues them together instead of one after another
    d = diag[p]
    rp = r[tid]
    out = rp / d
    c = body_of_particle[p]
    if use_coarse != 0 and c >= 0:
        R = rotation[w * bodies_per_world + c]
        acc = wp.vec3()
        row = sliced_row(p, 8, slice_width)
        if slice_width == 1:  # the same loop with the stride a literal 1, which a CPU core runs ~8 % faster
            for k in range(8):
                j = node_index[row + k]
                weight = node_weight[row + k]
                base = 3 * (w * nodes_per_world + wp.max(j, 0))
                y = wp.vec3(yc[base], yc[base + 1], yc[base + 2])
                if j >= 0:
                    acc += y * weight
        else:
            for k in range(8):
                j = node_index[row + k * slice_width]
                weight = node_weight[row + k * slice_width]
                base = 3 * (w * nodes_per_world + wp.max(j, 0))
                y = wp.vec3(yc[base], yc[base + 1], yc[base + 2])
                if j >= 0:
                    acc += y * weight
        out += R * acc
    if d <= 0.0:
        out = wp.vec3()
    z[tid] = out
    return wp.dot(rp, out)


# ------------------------------------------------------------------ scaled warm start


@wp.func
def bilateral_row(r: int, contact_start: int, contact_end: int, body_contact_start: int) -> bool:
    """Row r of a world's saddle system (not a tet row: saddle.saddle_rows) is bilateral (distance, attachment,
    joint): not a contact row."""
    return not ((r >= contact_start and r < contact_end) or r >= body_contact_start)


@wp.func
def warm_start_scale(merit_one: float, merit_half: float, merit_zero: float) -> float:
    """The s ∈ [0, 1] that minimises the parabola through the first Newton residuals at s = 0, ½ and 1
    (m(s) = a s² + b s + m(0), exact where the rows are linear in λ)."""
    a = 2.0 * merit_one - 4.0 * merit_half + 2.0 * merit_zero
    b = 4.0 * merit_half - 3.0 * merit_zero - merit_one
    s = float(1.0)
    if a > 0.0:
        s = wp.clamp(-b / (2.0 * a), 0.0, 1.0)
    elif merit_zero < merit_one:
        s = 0.0
    return s
