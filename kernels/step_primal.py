"""The primal-FEM formulation's stages (softsnake/sim/primal.py, docs/solver.md), one block per world
(kernels/block.py): warm start, then per Newton iteration assemble (with the line search), the rows' body-block
factorisation, the whole MINRES solve and the update, and a finishing stage. The saddle-point system's product,
preconditioner and solve are functions of one world (kernels/saddle.py); the operator launches here
(``saddle_product``, ``saddle_preconditioner``) are for tests and diagnostics.
"""

import warp as wp

from .block import STAGE_MODULE_OPTIONS, world_index, world_lanes, world_sum, world_sum_vec3, world_sync
from .data import BODY_CONTACT, CONTACT, BodyData, ModelData, StepData
from .minres import BETA1, PHIBAR, SLOTS, SaddleVector, row_index
from .primal import bilateral_row, fit_body_rotation, particle_residual, start_velocity, warm_start_scale
from .rigid import apply_body_impulse
from .row_families import ALL_FAMILIES, WITHOUT_TETS, WITHOUT_TETS_AND_CONTACTS
from .saddle import (
    ASSEMBLY_RESIDUAL,
    ASSEMBLY_ROWS,
    STIFFNESS,
    PrimalData,
    minres_solve_world,
    phase_clock,
    phase_mark,
    saddle_preconditioner_world,
    saddle_product_world,
    saddle_rows,
)
from .schur import particle_transpose_product
from .stiffness import assemble_block, rotate_gradients
from .world_rows import (
    apply_world_body_impulses,
    assemble_world_rows,
    merit_grew,
    project_world_cones,
    restart_merit,
    scatter_world_bodies,
    scatter_world_particles,
    world_inverse_inertias,
)

# forward kernels only, rebuilt when any kernel source changes (kernels/block.py, STAGE_MODULE_OPTIONS)
wp.set_module_options(STAGE_MODULE_OPTIONS)


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
    world_inverse_inertias(w, lane, b, s)
    saddle_product_world(w, lane, m, b, s, p, saddle_rows(w, m, s, p), x, y, negate_rows, 0.0, p.zero_particles)


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
    world_inverse_inertias(w, lane, b, s)
    saddle_preconditioner_world(w, lane, m, b, s, p, saddle_rows(w, m, s, p), r, z)


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
    families: int,
):
    """Rows at the iterate (tets: constitutive impulses) of the families in the bit mask ``families`` (the others'
    rows and tet forces as the last assembly left them) and the particles' momentum residual: residual_sq gets
    Σφ² + Σ|r_v/A_pp|² [m²/s²] and p.b the saddle right-hand side (−r_v, −rhs = φ)."""
    t = phase_clock(p)
    acc = assemble_world_rows(w, lane, p.m_rows, p.m_attach, b, s, newton_iteration, 1, families)
    t = phase_mark(w, lane, p, ASSEMBLY_ROWS, t)
    n = m.particle_count
    for i in range(lane, n, world_lanes()):  # Jᵀλ per particle (the tets' part as the assembly wrote it), then r_v
        impulse = particle_transpose_product(m, s.jac, s.lam, s.tet_force, 1, w, i)
        acc += particle_residual(w * n + i, i, p.mass, p.diag_v, s.v, p.v_pred, impulse, p.b.v)
    total = world_sum(acc)  # the rows' and the particles' parts
    if lane == 0:
        residual_sq[residual_base + w] = residual_sq[residual_base + w] + total
    rs = saddle_rows(w, m, s, p)
    for k in range(lane, rs.count, world_lanes()):
        i = w * rs.rows + row_index(k, rs)
        p.b.l[i] = -s.rhs[i]
    world_sync()
    phase_mark(w, lane, p, ASSEMBLY_RESIDUAL, t)


@wp.func
def apply_world_update(
    w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData, x: wp.array(dtype=float)
):
    """λ += x on the rows of world w's saddle system (saddle_rows) and the bodies take J_bᵀx (the particles' part is
    the caller's)."""
    rows = saddle_rows(w, m, s, p)
    for k in range(lane, rows.count, world_lanes()):
        i = w * rows.rows + row_index(k, rows)
        s.lam[i] = s.lam[i] + x[i]
    world_sync()
    apply_world_body_impulses(w, lane, m, b, s, x)


@wp.func
def halve_last_update(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, p: PrimalData):
    """Take back half of the last Newton update (s.dlam, p.dv; the bodies through J_bᵀ), keeping the other half."""
    rows = saddle_rows(w, m, s, p)
    for k in range(lane, rows.count, world_lanes()):
        i = w * rows.rows + row_index(k, rows)
        s.back[i] = -0.5 * s.dlam[i]
    world_sync()
    apply_world_update(w, lane, m, b, s, p, s.back)
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
    block). One assembly call site, in a loop of one or two passes. The first iteration after a scaled warm start
    leaves the tets' rows as its assemblies left them: the particles' velocities have not moved since (their merit is
    0 in the primal step, so the sum is the same)."""
    passes = int(1)
    k = int(0)
    families = ALL_FAMILIES
    if it == 0 and p.warm_scaled != 0:
        families = WITHOUT_TETS
    while k < passes:
        newton_iteration = it
        if k > 0:
            newton_iteration = wp.min(it, s.newton_iterations - 1)
            families = ALL_FAMILIES
        assemble_world(w, lane, m, b, s, p, newton_iteration, s.residual_sq, it * s.worlds, families)
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
    clock = phase_clock(p)
    n = m.tet_count
    for t in range(lane, n, lanes):
        rotate_gradients(w * n + t, m, s.jac, p.stiffness.rotated)
    world_sync()
    for u in range(lane, p.stiffness.upper_count, lanes):
        assemble_block(w, u, m, p.tet_lame, p.stiffness)
    phase_mark(w, lane, p, STIFFNESS, clock)
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
        for c in range(p.soft_bodies):  # a body at a time, over all lanes
            rotation = fit_body_rotation(
                w, lane, c, n, p.body_start, p.body_particles, p.mass, p.rest, s.x_start, s.v_start, s.h
            )
            if lane == 0:
                p.rotation[w * p.soft_bodies + c] = rotation
        world_sync()
    if p.warm_scaled == 0:
        return
    R = m.row_count
    rows = saddle_rows(w, m, s, p)
    contact_start = m.layout.row_start[CONTACT]
    contact_end = m.layout.row_start[CONTACT + 1]
    body_contact_start = m.layout.row_start[BODY_CONTACT]
    for k in range(lane, rows.count, lanes):
        r = row_index(k, rows)
        carried = float(0.0)
        if bilateral_row(r, contact_start, contact_end, body_contact_start):
            carried = s.lam[w * R + r]
        p.warm_carried[w * R + r] = carried
        p.warm_step[w * R + r] = -0.5 * carried
    world_sync()
    merit = wp.vec3()
    for k in range(3 * p.warm_scaled):  # s = 1, ½, 0: two probe steps of −½λ (a loop, not unrolled: one assembly)
        families = ALL_FAMILIES
        if k > 0:
            apply_world_update(w, lane, m, b, s, p, p.warm_step)
            # the probes change the bilateral λ and the bodies, not v: the tets' and particle contacts' rows stay
            families = WITHOUT_TETS_AND_CONTACTS
        assemble_world(w, lane, m, b, s, p, 0, p.warm_res, 0, families)
        # the merit of the particles and the bilateral rows (a contact row's b_λ is φ/(∂φ/∂a), with ∂φ/∂a down to
        # 10⁻³ on a separating contact, which would swamp the sum), in a fixed order
        acc = float(0.0)
        for i in range(lane, n, lanes):
            if p.mass[i] > 0.0:  # (a kinematic particle has no residual, and A_pp = 0)
                bv = p.b.v[w * n + i]
                acc += wp.dot(bv, bv) / (p.diag_v[i] * p.diag_v[i])
        for kk in range(lane, rows.count, lanes):
            r = row_index(kk, rows)
            if bilateral_row(r, contact_start, contact_end, body_contact_start):
                g = p.b.l[w * R + r]
                acc += g * g
        merit[k] = world_sum(acc)
    scale = warm_start_scale(merit[0], merit[1], merit[2])
    if lane == 0:
        p.warm_scale[w] = scale
    # λ's bilateral rows are now 0 (exactly: two halves of each): add s·λ_carried
    for k in range(lane, rows.count, lanes):
        i = w * R + row_index(k, rows)
        p.warm_step[i] = scale * p.warm_carried[i]
    world_sync()
    apply_world_update(w, lane, m, b, s, p, p.warm_step)


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
    rows = saddle_rows(w, m, s, p)
    for kk in range(lane, rows.count, lanes):
        k = w * rows.rows + row_index(kk, rows)
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
    rows = saddle_rows(w, m, s, p)  # (Δλ is 0 on the others, so the tets' part of the particles' Jᵀ is left out below)
    for k in range(lane, rows.count, lanes):
        s.dlam[w * rows.rows + row_index(k, rows)] = 0.0
    world_sync()
    project_world_cones(w, lane, m, b, s, N - 1, 1)
    if b.body_count > 0:
        scatter_world_bodies(w, lane, m, b, s, s.dlam, s.carried_body_impulse)
    if m.contact_count + m.particle_body_count > 0:
        scatter_world_particles(w, lane, m, s, s.dlam, s.tet_force, 2, s.carried_impulse)
