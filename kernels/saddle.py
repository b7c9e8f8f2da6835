"""The primal step's saddle-point system for one world (kernels/step_primal.py runs it): its data (``PrimalData``), the
matrix-free saddle product, the two-level preconditioner and the whole MINRES solve of one Newton iteration, shared by
the lanes of the world's block (kernels/block.py), with the solve's phase timers (``SOLVE_PHASES``).

The system (docs/solver.md, "The primal formulation"): [[A, −J_pᵀ], [−J_p, −S]] (Δv, Δλ) = (−r_v, φ) with
A = M + h(h+β)K, the rigid bodies eliminated through M_b⁻¹J_bᵀ and the tets' rows into A's elastic blocks.
"""

import warp as wp

from .block import LANE_BATCH, batch_holds, batch_step, block_clock, gather_batch, lane_batch, world_lanes, world_sync
from .body_precond import BodyBlocks, body_mass_times_dofs, cluster_inverse_row, woodbury_row
from .data import BodyData, ModelData, StepData, contact_row0, contact_slots_used
from .minres import (
    SLOTS,
    MinresScalars,
    RowSet,
    SaddleVector,
    lanczos_factor,
    minres_lanczos,
    minres_start,
    minres_update,
    row_batch,
    row_set,
    store_scalars,
)
from .particle_families import live_contact_gather
from .primal import coarse_partial, coarse_restrict, coarse_solve, precondition_particle
from .row_families import BODY_FAMILIES, PARTICLE_ONLY_FAMILIES
from .schur import particle_transpose_product
from .stiffness import StiffnessPattern, block_row_times
from .world_rows import (
    body_chunk_sums,
    body_rows_start,
    body_sums_of_chunks,
    gather_rows,
    world_inverse_inertias,
)


@wp.struct
class PrimalData:
    """The primal step's model-derived data and buffers (softsnake/sim/primal.py builds them)."""

    m_rows: ModelData  # the model with the particles' effective inverse masses (row assembly)
    m_attach: ModelData  # … with their two-level inverse masses (attachment rows)
    mass: wp.array(dtype=float)  # particle mass, 0 for kinematic particles [kg]
    tet_lame: wp.array(dtype=wp.vec2)  # h(h+β)·V·(λ, μ) per tet
    stiffness: StiffnessPattern  # A_el = h(h+β)K as 3×3 blocks, assembled once per step (kernels/stiffness.py)
    slice_width: int  # rows per slice of the lane-major layouts (SolverConfig.slice_width, kernels/block.py)
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
    # rows: the tets' rows are eliminated [skip_start, skip_start + skip_count) (saddle_rows)
    skip_start: int
    skip_count: int
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
    H_inv: wp.array(dtype=wp.float64)  # per cluster H⁻¹, row-major
    H_inv_lanes: wp.array(dtype=wp.float64)  # H⁻¹ as the preconditioner reads it: with slices lane-major, else H_inv
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
    warm_res: wp.array(dtype=float)
    warm_scale: wp.array(dtype=float)
    momentum_balance: int
    # the phase timers (SolverConfig.phase_timing): clock cycles per world and phase (SOLVE_PHASES, then STEP_PHASES)
    phase_timing: int
    phase_cycles: wp.array(dtype=wp.int64)


#: the phases of one MINRES iteration that the solve's timers tell apart (PrimalData.phase_cycles, worlds · phases)
SOLVE_PHASES = (
    "product_particles",  # A x_v − J_pᵀ x_l per particle, with the Lanczos step's y −= c·r1 and v·y on it
    "product_bodies",  # J_bᵀ x_l per rigid body
    "product_rows",  # J M⁻¹ (…) + C x_l per row
    "lanczos",  # the rest of the Lanczos recurrence: the rows' part of y −= c·r1 and v·y, α, y −= (α/β)·r2
    "precondition_coarse",  # the coarse correction's restriction and solve, beside the rows' J_bᵀD⁻¹r per body
    "precondition_particles",  # D⁻¹ and the coarse prolongation per particle, beside H⁻¹ J_bᵀD⁻¹r per body dof
    "precondition_bodies",  # the rest of the rows' rigid-body part (Woodbury: M_b H⁻¹…, the rows' gathers)
    "precondition_rows",  # the rows' diagonal part (each preconditioner part sums r·z as it writes z)
    "update",  # β from r·z, the MINRES update of the iterate and its scalars
)
PRODUCT_PARTICLES, PRODUCT_BODIES, PRODUCT_ROWS, LANCZOS = (wp.constant(k) for k in range(4))
PRECONDITION_COARSE, PRECONDITION_PARTICLES, PRECONDITION_BODIES, PRECONDITION_ROWS, UPDATE = (
    wp.constant(k) for k in range(4, 9)
)
#: the phases of the other primal stages that the same timers tell apart, counted per step (after SOLVE_PHASES in
#: PrimalData.phase_cycles): every assembly's rows and its particles' Jᵀλ and momentum residual (the warm start's
#: three, the Newton iterations' and the finish's, line searches included), the warm start's elastic block matrix,
#: and each Newton iteration's factorisation of the rows' rigid-body preconditioner (kernels/step_body_blocks.py)
STEP_PHASES = (
    "assembly_rows",  # every row at the iterate (assemble_world_rows)
    "assembly_residual",  # Jᵀλ and r_v per particle, the merit's block sum and the rows' right-hand side
    "stiffness",  # the tets' rotated gradients and the elastic 3×3 blocks (warm start)
    "factor_rows",  # D and the weights 1/D of the rows the solve sees
    "factor_chunks",  # J_bᵀD⁻¹J_b per incidence chunk
    "factor_blocks",  # H = M_b + the chunks, per entry, and each cluster's pivot jitter
    "factor_cholesky",  # the Cholesky factor, two barriers per column
    "factor_inverse",  # H⁻¹, a column per lane
)
ASSEMBLY_ROWS, ASSEMBLY_RESIDUAL, STIFFNESS = (wp.constant(len(SOLVE_PHASES) + k) for k in range(3))
FACTOR_ROWS, FACTOR_CHUNKS, FACTOR_BLOCKS, FACTOR_CHOLESKY, FACTOR_INVERSE = (
    wp.constant(len(SOLVE_PHASES) + k) for k in range(3, 8)
)
PHASE_COUNT = wp.constant(len(SOLVE_PHASES) + len(STEP_PHASES))


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
def saddle_rows(w: int, m: ModelData, s: StepData, p: PrimalData) -> RowSet:
    """The rows of world w's saddle system (RowSet): all but the eliminated tet rows, whose multipliers each assembly
    sets from the positions, and the rows of the contact slots that this step's list left empty. The list fills a
    world's slots from the first on, in particle order (kernels/contact_list.py), so the empty ones are those past
    the last particle's run; the collision stage zeroed their multipliers, and their rows are identity rows with a
    zero right-hand side (switch_off_contact_rows), whose unknowns stay 0, so leaving them out changes no sum. Most
    slots are empty: the snake on its wheels uses ~50 of its 325. Every stage of the step that reads or adds to the
    multipliers walks these rows: the others' Δλ is 0."""
    tail_start = contact_row0(m, 0, contact_slots_used(m, s.jac, w))
    tail_count = contact_row0(m, 0, m.contact_count) - tail_start
    return row_set(m.row_count, p.skip_start, p.skip_count, tail_start, tail_count)


@wp.func
def gather_saddle_rows(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    particle_impulse: wp.array(dtype=wp.vec3),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """y = J M⁻¹ (particle_impulse, body_impulse) + C x on the saddle system's rows of world w (saddle_rows): the
    particle contacts on the slots in use, the other families but the tets whole. The rows on particles alone go
    first: they read only ``particle_impulse`` (complete at the caller's barrier before), so they share an interval
    with the lanes that finish ``body_impulse``; then, with bodies, a barrier and the rows on bodies. Ends at a
    barrier."""
    live_contact_gather(w, lane, m, s, particle_impulse, x, y)
    gather_rows(w, lane, m, b, s, particle_impulse, body_impulse, x, y, PARTICLE_ONLY_FAMILIES)
    if b.body_count > 0:
        world_sync()
        gather_rows(w, lane, m, b, s, particle_impulse, body_impulse, x, y, BODY_FAMILIES)
    world_sync()


@wp.func
def saddle_product_world(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    p: PrimalData,
    rs: RowSet,
    x: SaddleVector,
    y: SaddleVector,
    negate_rows: int,
    c: float,
    r1: wp.array(dtype=wp.vec3),
) -> float:
    """y = [[A, −J_pᵀ], [−J_p, −S]] x for world w; with ``negate_rows = 0`` y's row part gets its negative,
    J_p x_v + S x_l (MINRES folds the sign into its Lanczos step). A x_v = M x_v + A_el x_v with the step's block
    matrix; kinematic particles have identity rows. mass_xv = M x_v, which the row gathers turn back into x_v.
    The particle part takes MINRES's Lanczos subtraction as it is written, y_v −= c·r1 (c = 0: the product alone),
    and the lane's part of x_v·y_v is returned, its particles in the order of kernels/minres.py's loops
    (minres_lanczos adds the rows' part to it)."""
    lanes = world_lanes()
    n = m.particle_count
    t = phase_clock(p)
    xy = float(0.0)
    for i in range(lane, n, lanes):
        k = w * n + i
        mp = p.mass[i]
        xk = x.v[k]
        yk = xk
        xm = wp.vec3()
        if mp > 0.0:
            xm = xk * mp
            yk = (
                xm
                + block_row_times(w, i, n, p.stiffness, x.v)
                - particle_transpose_product(m, s.jac, x.l, s.tet_force, 2, w, i)
            )
        yk = yk - r1[k] * c
        y.v[k] = yk
        p.mass_xv[k] = xm
        xy += wp.dot(xk, yk)
    t = phase_mark(w, lane, p, PRODUCT_PARTICLES, t)
    # J_bᵀ x_l, its chunks and bodies numbered from the last lane down: lanes go on to the chunks from their particles
    # without a barrier (the first lanes may hold a particle more), and the bodies' sums share their interval with
    # the gathers of the rows on particles alone (gather_saddle_rows)
    rev = lanes - 1 - lane
    if b.body_count > 0:
        body_chunk_sums(w, rev, m, b, s, x.l)
    world_sync()
    if b.body_count > 0:
        body_sums_of_chunks(w, rev, b, s, s.body_impulse)
    t = phase_mark(w, lane, p, PRODUCT_BODIES, t)
    if negate_rows != 0:
        gather_saddle_rows(w, lane, m, b, s, p.mass_xv, s.body_impulse, x.l, p.g)
        for k0 in range(lane, rs.count, batch_step(lanes)):
            idx = row_batch(w, k0, lanes, rs)
            gs = gather_batch(p.g, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, rs.count):
                    y.l[idx[j]] = -gs[j]
        world_sync()
    else:
        gather_saddle_rows(w, lane, m, b, s, p.mass_xv, s.body_impulse, x.l, y.l)
    phase_mark(w, lane, p, PRODUCT_ROWS, t)
    return xy


@wp.func
def saddle_preconditioner_world(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    p: PrimalData,
    rs: RowSet,
    r: SaddleVector,
    z: SaddleVector,
) -> float:
    """z = blockdiag(two-level A⁻¹ approximation, rows' preconditioner) r for world w: particles D⁻¹ + R P A_c⁻¹ Pᵀ Rᵀ;
    rows their Schur diagonal, or with rigid bodies (D + J_b M_b⁻¹ J_bᵀ)⁻¹ by the Woodbury identity
    (kernels/body_precond.py). Returns the lane's part of r·z, the preconditioned inner product MINRES needs next,
    summed as z is written: the lane's particles, then its rows, in the order of kernels/minres.py's loops. Each lane
    writes z on its own entries (those minres walks in the same lane), so the phase ends without a barrier: the block
    sum of r·z is the next one.

    The two parts are independent until the rows' last step, so they share their barriers: each interval between two
    of them holds a step of the particles' part (the coarse restriction, the coarse solve, the particles) beside a
    step of the rigid-body part (D⁻¹r, J_bᵀ of it in chunks and per body, H⁻¹ per body dof), the body steps numbered
    from the last lane down (``rev``) so that the few lanes they need are not those the coarse steps' lists keep
    busy. Every sum is per element in a fixed order, so the result does not depend on which lane takes which step."""
    lanes = world_lanes()
    rev = lanes - 1 - lane
    n = m.particle_count
    R = m.row_count
    bodies = p.body_blocks != 0
    coarse = p.use_coarse != 0
    t = phase_clock(p)
    if bodies:
        # t = D⁻¹ r is needed only on the rows that act on bodies, the last families of each world
        first = body_rows_start(m)
        for k0 in range(lane, R - first, batch_step(lanes)):
            idx = lane_batch(w * R + first, k0, lanes, R - first)
            r_ = gather_batch(r.l, idx)
            ds = gather_batch(p.row_d, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, R - first):
                    p.t_rows[idx[j]] = r_[j] / ds[j]
    if coarse:
        chunks = p.node_chunk_start[p.nodes]
        for c in range(lane, chunks, lanes):  # Pᵀr in chunks of the nodes' lists, then a lane per node
            p.node_chunk_sum[w * chunks + c] = coarse_partial(
                w, p.node_chunk_first[c], p.node_chunk_end[c], n, p.node_particles, p.node_weights, r.v
            )
    if bodies or coarse:
        world_sync()
    if bodies:
        body_chunk_sums(w, rev, m, b, s, p.t_rows)  # J_bᵀ D⁻¹ r, in chunks …
    if coarse:
        for j in range(lane, p.nodes, lanes):
            coarse_restrict(
                w, j, p.nodes, p.soft_bodies, p.node_chunk_start, p.node_chunk_sum, p.node_body, p.rotation, p.rc
            )
    if bodies or coarse:
        world_sync()
    if bodies:
        body_sums_of_chunks(w, rev, b, s, p.f_body)  # … and per body
    if coarse:
        dofs = 3 * p.nodes
        for k in range(lane, dofs, lanes):
            coarse_solve(
                w * dofs + k, p.nodes, p.node_body, p.node_first, p.inverse_start, p.inverse, p.slice_width, p.rc4, p.yc
            )
    if bodies or coarse:
        world_sync()
    t = phase_mark(w, lane, p, PRECONDITION_COARSE, t)
    if bodies:
        for q in range(rev, 6 * b.body_count, lanes):  # y = H⁻¹ f, a row per lane
            cluster_inverse_row(w, q, b, p.bb, p.H_inv_lanes, p.slice_width, p.f_body, p.y_body)
    rz = float(0.0)
    for i in range(lane, n, lanes):
        rz += precondition_particle(
            w * n + i,
            n,
            p.nodes,
            p.soft_bodies,
            p.diag_v,
            p.body_of_particle,
            p.node_index,
            p.node_weight,
            p.slice_width,
            p.rotation,
            p.use_coarse,
            p.yc,
            r.v,
            z.v,
        )
    t = phase_mark(w, lane, p, PRECONDITION_PARTICLES, t)
    if bodies:
        world_sync()
        for i in range(rev, b.body_count, lanes):
            body_mass_times_dofs(w, i, b, s.h, s.body_x_start, s.body_v, p.y_body, p.imp_body)
        world_sync()
        gather_rows(w, lane, m, b, s, p.zero_particles, p.imp_body, p.zero_rows, p.u_rows, BODY_FAMILIES)
        world_sync()
        t = phase_mark(w, lane, p, PRECONDITION_BODIES, t)
        for k0 in range(lane, rs.count, batch_step(lanes)):
            idx = row_batch(w, k0, lanes, rs)
            r_ = gather_batch(r.l, idx)
            us = gather_batch(p.u_rows, idx)
            ds = gather_batch(p.row_d, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, rs.count):
                    zj = woodbury_row(r_[j], us[j], ds[j])
                    z.l[idx[j]] = zj
                    rz += r_[j] * zj
    else:
        for k0 in range(lane, rs.count, batch_step(lanes)):
            idx = row_batch(w, k0, lanes, rs)
            r_ = gather_batch(r.l, idx)
            ds = gather_batch(s.diag, idx)
            for j in range(LANE_BATCH):
                if batch_holds(k0, j, lanes, rs.count):
                    zj = r_[j] / ds[j]
                    z.l[idx[j]] = zj
                    rz += r_[j] * zj
    phase_mark(w, lane, p, PRECONDITION_ROWS, t)
    return rz


@wp.func
def minres_solve_world(
    w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData, iterations: int
) -> int:
    """MINRES on world w's saddle system (right-hand side p.b, solution p.x), all ``iterations`` in this launch, or
    until the preconditioned residual fell by s.linear_tolerance; returns the iterations run. Pass k = −1 preconditions
    the right-hand side and starts the recurrence (one call site of the product and of the preconditioner)."""
    n = m.particle_count
    rs = saddle_rows(w, m, s, p)
    world_inverse_inertias(w, lane, b, s)  # the bodies' M⁻¹ for the gathers, fixed over the solve
    sc = MinresScalars()
    done = iterations
    alfa = float(0.0)
    for k in range(-1, iterations):
        r = p.b
        if k >= 0:
            c = lanczos_factor(sc)
            vy = saddle_product_world(w, lane, m, b, s, p, rs, p.v, p.y, 0, c, p.r1.v)
            t = phase_clock(p)
            alfa = minres_lanczos(w, lane, n, rs, -1.0, c, vy, sc, p.v, p.y, p.r1, p.r2)
            world_sync()
            phase_mark(w, lane, p, LANCZOS, t)
            r = p.r2
        rz = saddle_preconditioner_world(w, lane, m, b, s, p, rs, r, p.y)
        t = phase_clock(p)
        if k < 0:
            sc = minres_start(w, lane, n, rs, rz, p.b, p.y, p.x, p.r1, p.r2, p.w1, p.w2, p.v)
        else:
            sc = minres_update(w, lane, n, rs, alfa, rz, sc, p.y, p.v, p.w1, p.w2, p.x)
        world_sync()
        phase_mark(w, lane, p, UPDATE, t)
        if k >= 0 and s.linear_tolerance > 0.0 and sc.phibar <= s.linear_tolerance * sc.beta1:
            done = k + 1
            break
    if lane == 0:
        store_scalars(sc, p.sc, w * SLOTS)
    return done
