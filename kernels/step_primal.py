"""The primal-FEM formulation's stages (softsnake/sim/primal.py, docs/solver.md), one block per world
(kernels/block.py): warm start, then per Newton iteration assemble (with the line search), the rows' body-block
factorisation, the whole MINRES solve and the update, and a finishing stage. The matrix-free saddle product and the
two-level preconditioner are functions of one world, used inside the solve and by the operator launches that tests
and diagnostics call (``saddle_product``, ``saddle_preconditioner``).
"""

import warp as wp

from .block import (
    LANE_BATCH,
    STAGE_MODULE_OPTIONS,
    batch_holds,
    batch_step,
    block_clock,
    gather_batch,
    lane_batch,
    world_index,
    world_lanes,
    world_sum,
    world_sum_vec3,
    world_sync,
)
from .body_precond import BodyBlocks, body_mass_times_dofs, cluster_inverse_row, woodbury_row
from .data import BODY_CONTACT, CONTACT, BodyData, ModelData, StepData
from .minres import (
    BETA1,
    PHIBAR,
    SLOTS,
    MinresScalars,
    SaddleVector,
    minres_lanczos,
    minres_start,
    minres_update,
    row_batch,
    row_index,
    store_scalars,
)
from .primal import (
    bilateral_row,
    coarse_partial,
    coarse_restrict,
    coarse_solve,
    fit_body_rotation,
    particle_residual,
    precondition_particle,
    start_velocity,
    warm_start_scale,
)
from .rigid import apply_body_impulse
from .row_families import BODY_FAMILIES, WITHOUT_TETS
from .schur import particle_transpose_product
from .stiffness import StiffnessPattern, assemble_block, block_row_times, rotate_gradients
from .world_rows import (
    apply_world_body_impulses,
    assemble_world_rows,
    body_rows_start,
    gather_world_rows,
    merit_grew,
    project_world_cones,
    restart_merit,
    scatter_world_bodies,
    scatter_world_particles,
)

# forward kernels only, rebuilt when any kernel source changes (kernels/block.py, STAGE_MODULE_OPTIONS)
wp.set_module_options(STAGE_MODULE_OPTIONS)


@wp.struct
class PrimalData:
    """The primal step's model-derived data and buffers (softsnake/sim/primal.py builds them)."""

    m_rows: ModelData  # the model with the particles' effective inverse masses (row assembly)
    m_attach: ModelData  # … with their two-level inverse masses (attachment rows)
    mass: wp.array(dtype=float)  # particle mass, 0 for kinematic particles [kg]
    tet_lame: wp.array(dtype=wp.vec2)  # h(h+β)·V·(λ, μ) per tet
    stiffness: StiffnessPattern  # A_el = h(h+β)K as 3×3 blocks, assembled once per step (kernels/stiffness.py)
    diag_v: wp.array(dtype=float)  # A_pp, the particle blocks' diagonal
    # soft bodies (connected tet components) and the coarse space
    soft_bodies: int
    nodes: int  # coarse nodes per world
    use_coarse: int
    body_start: wp.array(dtype=int)
    body_particles: wp.array(dtype=int)
    body_inv_mass: wp.array(dtype=float)  # 1/Σm of a free soft body, 0 for one with kinematic particles
    body_of_particle: wp.array(dtype=int)
    rest: wp.array(dtype=wp.vec3)
    node_index: wp.array(dtype=int)
    node_weight: wp.array(dtype=float)
    node_particles: wp.array(dtype=int)
    node_weights: wp.array(dtype=float)
    # the nodes' lists in chunks (softsnake/sim/model.py, list_chunk), summed by separate lanes into node_chunk_sum
    node_chunk_start: wp.array(dtype=int)
    node_chunk_first: wp.array(dtype=int)
    node_chunk_end: wp.array(dtype=int)
    node_chunk_sum: wp.array(dtype=wp.vec3)
    node_body: wp.array(dtype=int)
    node_first: wp.array(dtype=int)
    inverse_start: wp.array(dtype=int)
    inverse: wp.array(dtype=wp.vec4)
    rotation: wp.array(dtype=wp.mat33)
    rc: wp.array(dtype=float)
    rc4: wp.array(dtype=wp.vec4)  # rc as vec4s (the same memory)
    yc: wp.array(dtype=float)
    # rows: the tets' rows are eliminated [skip_start, skip_start + skip_count)
    skip_start: int
    skip_count: int
    free_rows: int
    # iterate and product buffers
    v_pred: wp.array(dtype=wp.vec3)
    dv: wp.array(dtype=wp.vec3)
    mass_xv: wp.array(dtype=wp.vec3)
    g: wp.array(dtype=float)
    # MINRES
    b: SaddleVector
    x: SaddleVector
    y: SaddleVector
    v: SaddleVector
    r1: SaddleVector
    r2: SaddleVector
    w1: SaddleVector
    w2: SaddleVector
    sc: wp.array(dtype=float)
    # the rows' rigid-body preconditioner (Woodbury over clusters of bodies)
    body_blocks: int
    bb: BodyBlocks
    H: wp.array(dtype=wp.float64)  # per cluster H, then its Cholesky factor L
    H_inv: wp.array(dtype=wp.float64)  # per cluster H⁻¹
    H_jitter: wp.array(dtype=wp.float64)  # per cluster, the pivots' jitter
    H_chunk: wp.array(dtype=wp.float64)  # H's rows summed per incidence chunk (worlds · chunks · 6 · max_dofs)
    y_body: wp.array(dtype=float)  # H⁻¹ f per body dof (6 per body)
    row_d: wp.array(dtype=float)  # D per row (the factor writes it)
    t_rows: wp.array(dtype=float)  # scratch: the factor's row weights 1/D, then each application's D⁻¹r
    u_rows: wp.array(dtype=float)
    zero_rows: wp.array(dtype=float)
    zero_particles: wp.array(dtype=wp.vec3)
    f_body: wp.array(dtype=wp.spatial_vector)
    imp_body: wp.array(dtype=wp.spatial_vector)
    # scaled warm start
    warm_scaled: int
    warm_carried: wp.array(dtype=float)
    warm_step: wp.array(dtype=float)
    warm_merit: wp.array(dtype=float)
    warm_res: wp.array(dtype=float)
    warm_scale: wp.array(dtype=float)
    momentum_balance: int
    # the linear solve's phase timers (SolverConfig.phase_timing): clock cycles per world and phase (SOLVE_PHASES)
    phase_timing: int
    phase_cycles: wp.array(dtype=wp.int64)


#: the phases of one MINRES iteration that the solve's timers tell apart (PrimalData.phase_cycles, worlds · phases)
SOLVE_PHASES = (
    "product_particles",  # A x_v − J_pᵀ x_l per particle
    "product_bodies",  # J_bᵀ x_l per rigid body
    "product_rows",  # J M⁻¹ (…) + C x_l per row
    "lanczos",  # the Lanczos recurrence and its dot products
    "precondition_coarse",  # the coarse correction's restriction and solve
    "precondition_particles",  # D⁻¹ and the coarse prolongation per particle
    "precondition_bodies",  # the rows' rigid-body part (Woodbury: J_bᵀD⁻¹r, H⁻¹, the gathers)
    "precondition_rows",  # the rows' diagonal part
    "update",  # the MINRES update of the iterate and its scalars
)
PRODUCT_PARTICLES, PRODUCT_BODIES, PRODUCT_ROWS, LANCZOS = (wp.constant(k) for k in range(4))
PRECONDITION_COARSE, PRECONDITION_PARTICLES, PRECONDITION_BODIES, PRECONDITION_ROWS, UPDATE = (
    wp.constant(k) for k in range(4, 9)
)
PHASE_COUNT = wp.constant(len(SOLVE_PHASES))


@wp.func
def phase_clock(p: PrimalData) -> wp.int64:
    """The clock with p.phase_timing on (a phase's start), else 0: without timing the solve reads no clock."""
    if p.phase_timing != 0:
        return block_clock()
    return wp.int64(0)


@wp.func
def phase_mark(w: int, lane: int, p: PrimalData, phase: int, t0: wp.int64) -> wp.int64:
    """With p.phase_timing: the world's lanes meet at a barrier and lane 0 adds the cycles since ``t0`` to world
    w's ``phase``; returns the next phase's start (phase_clock). Without timing it does nothing."""
    if p.phase_timing != 0:
        world_sync()
        if lane == 0:
            k = w * PHASE_COUNT + phase
            p.phase_cycles[k] = p.phase_cycles[k] + (block_clock() - t0)
    return phase_clock(p)


# --------------------------------------------------------------------------------------------------- operators


@wp.func
def saddle_product_world(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    p: PrimalData,
    x: SaddleVector,
    y: SaddleVector,
    negate_rows: int,
):
    """y = [[A, −J_pᵀ], [−J_p, −S]] x for world w; with ``negate_rows = 0`` y's row part gets its negative,
    J_p x_v + S x_l (MINRES folds the sign into its Lanczos step). A x_v = M x_v + A_el x_v with the step's block
    matrix; kinematic particles have identity rows. mass_xv = M x_v, which the row gathers turn back into x_v."""
    lanes = world_lanes()
    n = m.particle_count
    t = phase_clock(p)
    for i in range(lane, n, lanes):
        k = w * n + i
        mp = p.mass[i]
        if mp > 0.0:
            xm = x.v[k] * mp
            y.v[k] = (
                xm
                + block_row_times(w, i, n, p.stiffness, x.v)
                - particle_transpose_product(m, s.jac, x.l, s.tet_force, 2, w, i)
            )
            p.mass_xv[k] = xm
        else:
            y.v[k] = x.v[k]
            p.mass_xv[k] = wp.vec3()
    t = phase_mark(w, lane, p, PRODUCT_PARTICLES, t)
    if b.body_count > 0:
        scatter_world_bodies(w, lane, m, b, s, x.l, s.body_impulse)  # J_bᵀ x_l (ends at a barrier)
    else:
        world_sync()
    t = phase_mark(w, lane, p, PRODUCT_BODIES, t)
    if negate_rows != 0:
        gather_world_rows(w, lane, m, b, s, p.mass_xv, s.body_impulse, x.l, p.g, WITHOUT_TETS)
        R = m.row_count
        for k0 in range(lane, p.free_rows, batch_step(lanes)):
            idx = row_batch(w, R, k0, lanes, p.free_rows, p.skip_start, p.skip_count)
            gs = gather_batch(p.g, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, p.free_rows):
                    y.l[idx[j]] = -gs[j]
        world_sync()
    else:
        gather_world_rows(w, lane, m, b, s, p.mass_xv, s.body_impulse, x.l, y.l, WITHOUT_TETS)
    phase_mark(w, lane, p, PRODUCT_ROWS, t)


@wp.func
def saddle_preconditioner_world(
    w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData, r: SaddleVector, z: SaddleVector
):
    """z = blockdiag(two-level A⁻¹ approximation, rows' preconditioner) r for world w: particles D⁻¹ + R P A_c⁻¹ Pᵀ Rᵀ;
    rows their Schur diagonal, or with rigid bodies (D + J_b M_b⁻¹ J_bᵀ)⁻¹ by the Woodbury identity
    (kernels/body_precond.py)."""
    lanes = world_lanes()
    n = m.particle_count
    t = phase_clock(p)
    if p.use_coarse != 0:
        chunks = p.node_chunk_start[p.nodes]
        for c in range(lane, chunks, lanes):  # Pᵀr in chunks of the nodes' lists, then a lane per node
            p.node_chunk_sum[w * chunks + c] = coarse_partial(
                w, p.node_chunk_first[c], p.node_chunk_end[c], n, p.node_particles, p.node_weights, r.v
            )
        world_sync()
        for j in range(lane, p.nodes, lanes):
            coarse_restrict(
                w, j, p.nodes, p.soft_bodies, p.node_chunk_start, p.node_chunk_sum, p.node_body, p.rotation, p.rc
            )
        world_sync()
        dofs = 3 * p.nodes
        for k in range(lane, dofs, lanes):
            coarse_solve(w * dofs + k, p.nodes, p.node_body, p.node_first, p.inverse_start, p.inverse, p.rc4, p.yc)
        world_sync()
    t = phase_mark(w, lane, p, PRECONDITION_COARSE, t)
    for i in range(lane, n, lanes):
        precondition_particle(
            w * n + i,
            n,
            p.nodes,
            p.soft_bodies,
            p.diag_v,
            p.body_of_particle,
            p.node_index,
            p.node_weight,
            p.rotation,
            p.use_coarse,
            p.yc,
            r.v,
            z.v,
        )
    t = phase_mark(w, lane, p, PRECONDITION_PARTICLES, t)
    R = m.row_count
    if p.body_blocks != 0:
        # t = D⁻¹ r is needed only on the rows that act on bodies, the last families of each world
        first = body_rows_start(m)
        for k0 in range(lane, R - first, batch_step(lanes)):
            idx = lane_batch(w * R + first, k0, lanes, R - first)
            rs = gather_batch(r.l, idx)
            ds = gather_batch(p.row_d, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, R - first):
                    p.t_rows[idx[j]] = rs[j] / ds[j]
        world_sync()
        scatter_world_bodies(w, lane, m, b, s, p.t_rows, p.f_body)
        for q in range(lane, 6 * b.body_count, lanes):  # y = H⁻¹ f, a row per lane
            cluster_inverse_row(w, q, b, p.bb, p.H_inv, p.f_body, p.y_body)
        world_sync()
        for i in range(lane, b.body_count, lanes):
            body_mass_times_dofs(w, i, b, s.h, s.body_x_start, s.body_v, p.y_body, p.imp_body)
        world_sync()
        gather_world_rows(w, lane, m, b, s, p.zero_particles, p.imp_body, p.zero_rows, p.u_rows, BODY_FAMILIES)
        t = phase_mark(w, lane, p, PRECONDITION_BODIES, t)
        for k0 in range(lane, p.free_rows, batch_step(lanes)):
            idx = row_batch(w, R, k0, lanes, p.free_rows, p.skip_start, p.skip_count)
            rs = gather_batch(r.l, idx)
            us = gather_batch(p.u_rows, idx)
            ds = gather_batch(p.row_d, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, p.free_rows):
                    z.l[idx[j]] = woodbury_row(rs[j], us[j], ds[j])
    else:
        for k0 in range(lane, p.free_rows, batch_step(lanes)):
            idx = row_batch(w, R, k0, lanes, p.free_rows, p.skip_start, p.skip_count)
            rs = gather_batch(r.l, idx)
            ds = gather_batch(s.diag, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, p.free_rows):
                    z.l[idx[j]] = rs[j] / ds[j]
    world_sync()
    phase_mark(w, lane, p, PRECONDITION_ROWS, t)


@wp.kernel
def saddle_product(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
    # In:
    x: SaddleVector,
    negate_rows: int,
    # Out:
    y: SaddleVector,
):
    """The saddle operator on (x.v, x.l) for every world (saddle_product_world)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    saddle_product_world(w, lane, m, b, s, p, x, y, negate_rows)


@wp.kernel
def saddle_preconditioner(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
    # In:
    r: SaddleVector,
    # Out:
    z: SaddleVector,
):
    """The preconditioner on (r.v, r.l) for every world (saddle_preconditioner_world)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    saddle_preconditioner_world(w, lane, m, b, s, p, r, z)


# ------------------------------------------------------------------------------------------------ Newton step


@wp.func
def assemble_world(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    p: PrimalData,
    newton_iteration: int,
    residual_sq: wp.array(dtype=float),
    residual_base: int,
):
    """Rows at the iterate (tets: constitutive impulses) and the particles' momentum residual: residual_sq gets
    Σφ² + Σ|r_v/A_pp|² [m²/s²] and p.b the saddle right-hand side (−r_v, −rhs = φ)."""
    acc = assemble_world_rows(w, lane, p.m_rows, p.m_attach, b, s, newton_iteration, 1)
    scatter_world_particles(w, lane, m, s, s.lam, s.tet_force, 1, s.impulse)
    n = m.particle_count
    for i in range(lane, n, world_lanes()):
        acc += particle_residual(w * n + i, i, p.mass, p.diag_v, s.v, p.v_pred, s.impulse, p.b.v)
    total = world_sum(acc)  # the rows' and the particles' parts
    if lane == 0:
        residual_sq[residual_base + w] = residual_sq[residual_base + w] + total
    R = m.row_count
    for k in range(lane, p.free_rows, world_lanes()):
        i = w * R + row_index(k, p.skip_start, p.skip_count)
        p.b.l[i] = -s.rhs[i]
    world_sync()


@wp.func
def apply_world_update(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """λ += x on every row of world w and the bodies take J_bᵀx (the particles' part is the caller's)."""
    R = m.row_count
    for r in range(lane, R, world_lanes()):
        s.lam[w * R + r] = s.lam[w * R + r] + x[w * R + r]
    world_sync()
    apply_world_body_impulses(w, lane, m, b, s, x)


@wp.func
def halve_last_update(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData):
    """Take back half of the last Newton update (s.dlam, p.dv; the bodies through J_bᵀ), keeping the other half."""
    R = m.row_count
    for r in range(lane, R, world_lanes()):
        s.back[w * R + r] = -0.5 * s.dlam[w * R + r]
    world_sync()
    apply_world_update(w, lane, m, b, s, s.back)
    n = m.particle_count
    for i in range(lane, n, world_lanes()):
        k = w * n + i
        half = p.dv[k] * 0.5
        s.v[k] = s.v[k] - half
        p.dv[k] = half
    world_sync()


@wp.func
def assemble_with_line_search(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData, it: int):
    """The rows at iterate ``it`` (merit in residual_sq[it]); for it > 0, where the last Newton update made the merit
    ‖φ‖² grow, half of it is taken back and the rows are evaluated again (a decision of the world, uniform over its
    block). One assembly call site, in a loop of one or two passes."""
    passes = int(1)
    k = int(0)
    while k < passes:
        newton_iteration = it
        if k > 0:
            newton_iteration = wp.min(it, s.newton_iterations - 1)
        assemble_world(w, lane, m, b, s, p, newton_iteration, s.residual_sq, it * s.worlds)
        if k == 0 and merit_grew(w, s, it):
            halve_last_update(w, lane, m, b, s, p)
            restart_merit(w, lane, s, it)
            passes = 2
        k += 1


@wp.kernel
def warm_start(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
):
    """The start of the Newton iteration: the step's elastic block matrix; v = v⁻ for dynamic particles (the carried
    friction impulse joins the
    prediction ṽ), the bodies take their part of the last cone projection and the carried multipliers, the soft bodies'
    rotations for the coarse space, and the scaled warm start of the bilateral multipliers (docs/solver.md, "Warm
    start": s ∈ [0, 1] minimising the parabola through the first residuals at s = 1, ½, 0)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    # the step's elastic block matrix (the rotations of the linearisation are held for the step)
    n = m.tet_count
    for t in range(lane, n, lanes):
        rotate_gradients(w * n + t, m, s.jac, p.stiffness.rotated)
    world_sync()
    for k in range(lane, p.stiffness.blocks_per_world, lanes):
        assemble_block(w, k, m, p.tet_lame, p.stiffness)
    n = m.particle_count
    for i in range(lane, n, lanes):
        start_velocity(w * n + i, m.particle_inv_mass[i], s.v_start, s.v, p.v_pred, s.carried_impulse)
    nb = b.body_count
    for i in range(lane, nb, lanes):
        # the bodies' part of the last step's cone projection joins their prediction ṽ_b (consumed here)
        apply_body_impulse(w * nb + i, b, s.body_x_start, s.h, s.carried_body_impulse, s.body_momentum, s.body_v)
        s.carried_body_impulse[w * nb + i] = wp.spatial_vector()
    world_sync()
    if s.warm_start > 0.0 or s.contact_warm_start > 0.0:
        apply_world_body_impulses(w, lane, m, b, s, s.lam)  # bodies: v_b = ṽ_b + M_b⁻¹J_bᵀλ (tets do not act on bodies)
    if p.use_coarse != 0:
        for c in range(lane, p.soft_bodies, lanes):
            p.rotation[w * p.soft_bodies + c] = fit_body_rotation(
                w, c, n, p.body_start, p.body_particles, p.mass, p.rest, s.x_start, s.v_start, s.h
            )
        world_sync()
    if p.warm_scaled == 0:
        return
    R = m.row_count
    contact_start = m.layout.row_start[CONTACT]
    contact_end = m.layout.row_start[CONTACT + 1]
    body_contact_start = m.layout.row_start[BODY_CONTACT]
    for r in range(lane, R, lanes):
        carried = float(0.0)
        if bilateral_row(r, p.skip_start, p.skip_count, contact_start, contact_end, body_contact_start):
            carried = s.lam[w * R + r]
        p.warm_carried[w * R + r] = carried
        p.warm_step[w * R + r] = -0.5 * carried
    world_sync()
    merit = wp.vec3()
    for k in range(3 * p.warm_scaled):  # s = 1, ½, 0: two probe steps of −½λ (a loop, not unrolled: one assembly)
        if k > 0:
            apply_world_update(w, lane, m, b, s, p.warm_step)
        assemble_world(w, lane, m, b, s, p, 0, p.warm_res, 0)
        # the merit of the particles and the bilateral rows (a contact row's b_λ is φ/(∂φ/∂a), with ∂φ/∂a down to
        # 10⁻³ on a separating contact, which would swamp the sum), in a fixed order
        acc = float(0.0)
        for i in range(lane, n, lanes):
            bv = p.b.v[w * n + i]
            acc += wp.dot(bv, bv) / (p.diag_v[i] * p.diag_v[i])
        for kk in range(lane, p.free_rows, lanes):
            r = row_index(kk, p.skip_start, p.skip_count)
            if bilateral_row(r, p.skip_start, p.skip_count, contact_start, contact_end, body_contact_start):
                g = p.b.l[w * R + r]
                acc += g * g
        merit[k] = world_sum(acc)
    scale = warm_start_scale(merit[0], merit[1], merit[2])
    if lane == 0:
        p.warm_scale[w] = scale
        for k in range(3):
            p.warm_merit[k * s.worlds + w] = merit[k]
    # λ's bilateral rows are now 0 (exactly: two halves of each): add s·λ_carried
    for r in range(lane, R, lanes):
        p.warm_step[w * R + r] = scale * p.warm_carried[w * R + r]
    world_sync()
    apply_world_update(w, lane, m, b, s, p.warm_step)


@wp.kernel
def newton_assemble(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
    # Iteration:
    it: int,
):
    """Newton iteration ``it``: rows and the saddle right-hand side at the iterate; from the second iteration on,
    the line search on the last update."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    assemble_with_line_search(w, lane, m, b, s, p, it)


@wp.func
def minres_solve_world(
    w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData, iterations: int
) -> int:
    """MINRES on world w's saddle system (right-hand side p.b, solution p.x), all ``iterations`` in this launch, or
    until the preconditioned residual fell by s.linear_tolerance; returns the iterations run. Pass k = −1 preconditions
    the right-hand side and starts the recurrence (one call site of the product and of the preconditioner)."""
    n = m.particle_count
    R = m.row_count
    sc = MinresScalars()
    done = iterations
    alfa = float(0.0)
    for k in range(-1, iterations):
        r = p.b
        if k >= 0:
            saddle_product_world(w, lane, m, b, s, p, p.v, p.y, 0)
            t = phase_clock(p)
            alfa = minres_lanczos(w, lane, n, R, p.skip_start, p.skip_count, -1.0, sc, p.v, p.y, p.r1, p.r2)
            world_sync()
            phase_mark(w, lane, p, LANCZOS, t)
            r = p.r2
        saddle_preconditioner_world(w, lane, m, b, s, p, r, p.y)
        t = phase_clock(p)
        if k < 0:
            sc = minres_start(w, lane, n, R, p.skip_start, p.skip_count, p.b, p.y, p.x, p.r1, p.r2, p.w1, p.w2, p.v)
        else:
            sc = minres_update(w, lane, n, R, p.skip_start, p.skip_count, alfa, sc, p.r2, p.y, p.v, p.w1, p.w2, p.x)
        world_sync()
        phase_mark(w, lane, p, UPDATE, t)
        if k >= 0 and s.linear_tolerance > 0.0 and sc.phibar <= s.linear_tolerance * sc.beta1:
            done = k + 1
            break
    if lane == 0:
        store_scalars(sc, p.sc, w * SLOTS)
    return done


@wp.kernel
def newton_solve(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
    # Iteration:
    it: int,
    iterations: int,
):
    """The linear solve of Newton iteration ``it`` (a world already below the Newton tolerance skips it): MINRES,
    every iteration in this launch; diagnostics in the solver's layout (residuals before and after, squared)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    W = s.worlds
    tol = s.newton_tolerance
    if tol > 0.0 and s.residual_sq[it * W + w] <= tol * tol:
        return
    done = minres_solve_world(w, lane, m, b, s, p, iterations)
    if lane == 0:
        L = s.linear_iterations
        base = it * (L + 1) * W
        beta1 = p.sc[w * SLOTS + BETA1]
        phibar = p.sc[w * SLOTS + PHIBAR]
        s.linear_rr[base + w] = beta1 * beta1
        s.linear_rr[base + wp.min(done, L) * W + w] = phibar * phibar
        s.linear_iters[it * W + w] = done


@wp.kernel
def newton_update(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
    # Iteration:
    it: int,
):
    """v += Δv, λ += Δλ and the bodies through M_b⁻¹J_bᵀΔλ (Δ in p.x; kept in s.dlam / p.dv for the line search). Before
    the last iteration, particle friction goes back onto its cone, its change part of Δλ; no particle is kicked: the
    next solve balances the change through the whole body. (Contacts on rigid bodies are projected once, after the
    last iteration: projected in the loop, a wheel's tiny spin inertia turns each change into a spin kick that the
    next iteration undoes, and the iteration oscillates.)"""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    W = s.worlds
    tol = s.newton_tolerance
    converged = tol > 0.0 and s.residual_sq[it * W + w] <= tol * tol
    n = m.particle_count
    for i in range(lane, n, lanes):
        k = w * n + i
        d = p.x.v[k]
        if converged:
            d = wp.vec3()
        p.dv[k] = d
        s.v[k] = s.v[k] + d
    R = m.row_count
    for r in range(lane, R, lanes):
        k = w * R + r
        dl = p.x.l[k]
        if converged:
            dl = 0.0
        s.dlam[k] = dl
        s.lam[k] = s.lam[k] + dl
    world_sync()
    if it < s.newton_iterations - 1:
        project_world_cones(w, lane, m, b, s, it, 0)
    apply_world_body_impulses(w, lane, m, b, s, s.dlam)


@wp.kernel
def finish(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
):
    """After the last Newton iteration: the rows at the final iterate and the line search on the last update; each
    free soft body's momentum balance (docs/solver.md, "Momentum balance"); the friction cone projection, whose change
    (particles and bodies) is carried into the next step's prediction instead of kicking single particles or a light
    wheel, so the implicit solve balances it through the whole structure."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    N = s.newton_iterations
    assemble_with_line_search(w, lane, m, b, s, p, N)
    n = m.particle_count
    if p.momentum_balance != 0:
        # with b_v = Jᵀλ − M(v − ṽ) per particle (the momentum residual at the last iterate), the body's net residual
        # Σ b_v is what the truncated solve left unbalanced; Δv = Σ b_v / Σ m on every free particle removes it
        for c in range(p.soft_bodies):
            inv = p.body_inv_mass[c]
            if inv != 0.0:
                acc = wp.vec3()
                for k in range(p.body_start[c] + lane, p.body_start[c + 1], lanes):
                    acc += p.b.v[w * n + p.body_particles[k]]
                dv = world_sum_vec3(acc) * inv
                for k in range(p.body_start[c] + lane, p.body_start[c + 1], lanes):
                    i = p.body_particles[k]
                    if p.mass[i] > 0.0:
                        s.v[w * n + i] = s.v[w * n + i] + dv
        world_sync()
    R = m.row_count
    for r in range(lane, R, lanes):
        s.dlam[w * R + r] = 0.0
    world_sync()
    project_world_cones(w, lane, m, b, s, N - 1, 1)
    if b.body_count > 0:
        scatter_world_bodies(w, lane, m, b, s, s.dlam, s.carried_body_impulse)
    if m.contact_count + m.particle_body_count > 0:
        scatter_world_particles(w, lane, m, s, s.dlam, s.tet_force, 0, s.carried_impulse)
