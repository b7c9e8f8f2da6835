"""The dual formulation's stages (every row, tets included, keeps its multiplier; Jacobi-preconditioned conjugate
residual on [J M⁻¹ Jᵀ + C] Δλ = b, the paper's solver), one block per world (kernels/block.py): warm start, per
Newton iteration assemble (with the line search), the whole PCR solve and the update, and a finishing stage.

PCR is Saad, Iterative Methods for Sparse Linear Systems, Alg. 6.20 with P = diag⁻¹: each world runs its own
recurrence from block sums in a fixed order, and a world whose residual fell below tol·‖b‖ stops.
"""

import warp as wp

from .block import STAGE_MODULE_OPTIONS, world_index, world_lanes, world_sum, world_sync
from .data import BodyData, ModelData, StepData
from .row_families import ALL_FAMILIES
from .step_common import is_contact_row
from .world_rows import (
    apply_world_impulses,
    assemble_world_rows,
    gather_rows,
    merit_grew,
    project_world_cones,
    restart_merit,
    scatter_world_bodies,
    scatter_world_particles,
    world_inverse_inertias,
)

# forward kernels only, rebuilt when any kernel source changes (kernels/block.py, STAGE_MODULE_OPTIONS)
wp.set_module_options(STAGE_MODULE_OPTIONS)


@wp.struct
class DualData:
    """PCR vectors (worlds · rows) and the warm start's carried multipliers and their product."""

    r: wp.array(dtype=float)
    z: wp.array(dtype=float)
    p: wp.array(dtype=float)
    Az: wp.array(dtype=float)
    Ap: wp.array(dtype=float)
    warm_scaled: int


@wp.func
def schur_product_world(
    w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float), y: wp.array(dtype=float)
) -> float:
    """y = (J M⁻¹ Jᵀ + C) x on world w's rows; returns x·y (rows in order)."""
    scatter_world_particles(w, lane, m, s, x, s.tet_force, 0, s.impulse)
    if b.body_count > 0:
        scatter_world_bodies(w, lane, m, b, s, x, s.body_impulse)
    gather_rows(w, lane, m, b, s, s.impulse, s.body_impulse, x, y, ALL_FAMILIES)
    world_sync()
    R = m.row_count
    acc = float(0.0)
    for k in range(lane, R, world_lanes()):
        acc += x[w * R + k] * y[w * R + k]
    return world_sum(acc)


@wp.func
def assemble_world(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    residual_sq: wp.array(dtype=float),
    residual_base: int,
):
    """Rows of world w at the iterate; residual_sq[residual_base + w] += Σφ² (a sum over the world's lanes)."""
    total = world_sum(assemble_world_rows(w, lane, m, m, b, s, newton_iteration, 0, ALL_FAMILIES))
    if lane == 0:
        residual_sq[residual_base + w] = residual_sq[residual_base + w] + total
    world_sync()


@wp.func
def update_world(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """λ += x and v += M⁻¹Jᵀx (particles and bodies)."""
    R = m.row_count
    for r in range(lane, R, world_lanes()):
        s.lam[w * R + r] = s.lam[w * R + r] + x[w * R + r]
    world_sync()
    apply_world_impulses(w, lane, m, b, s, x)


@wp.func
def assemble_with_line_search(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, it: int):
    """The rows at iterate ``it``; for it > 0, where the last Newton update made the merit ‖φ‖² grow, half of it is
    taken back and the rows are evaluated again (one assembly call site, in a loop of one or two passes)."""
    R = m.row_count
    passes = int(1)
    k = int(0)
    while k < passes:
        newton_iteration = it
        if k > 0:
            newton_iteration = wp.min(it, s.newton_iterations - 1)
        assemble_world(w, lane, m, b, s, newton_iteration, s.residual_sq, it * s.worlds)
        if k == 0 and merit_grew(w, s, it):
            for r in range(lane, R, world_lanes()):
                s.back[w * R + r] = -0.5 * s.dlam[w * R + r]
            world_sync()
            update_world(w, lane, m, b, s, s.back)
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
    d: DualData,
):
    """The carried impulses applied through this step's Jacobians (v = ṽ + M⁻¹Jᵀλ): contact impulses as carried,
    bilateral ones as s·λ with the s ∈ [0, 1] that minimises the P-norm of the first residual along them
    (φ(s) = φ₀ + s·Aλ, exact for linear rows): a reapplied impulse also reapplies the previous step's solve error."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    R = m.row_count
    if d.warm_scaled == 0:
        if s.warm_start > 0.0 or s.contact_warm_start > 0.0:
            apply_world_impulses(w, lane, m, b, s, s.lam)
        return
    for r in range(lane, R, lanes):
        k = w * R + r
        lam = s.lam[k]
        if is_contact_row(m, r):
            d.p[k] = 0.0
        else:
            d.p[k] = lam
            s.lam[k] = 0.0
    world_sync()
    apply_world_impulses(w, lane, m, b, s, s.lam)
    assemble_world(w, lane, m, b, s, 0, s.scratch_residual, 0)  # (its bodies' inverse inertias serve the product)
    schur_product_world(w, lane, m, b, s, d.p, d.Ap)
    acc_bd = float(0.0)
    acc_dd = float(0.0)
    for r in range(lane, R, lanes):
        k = w * R + r
        dk = d.Ap[k]
        acc_bd += s.rhs[k] * dk / s.diag[k]
        acc_dd += dk * dk / s.diag[k]
    bd = world_sum(acc_bd)
    dd = world_sum(acc_dd)
    scale = float(0.0)
    if dd > 0.0:
        scale = wp.clamp(bd / dd, 0.0, 1.0)
    for r in range(lane, R, lanes):
        k = w * R + r
        c = scale * d.p[k]
        d.p[k] = c
        s.lam[k] = s.lam[k] + c
    world_sync()
    apply_world_impulses(w, lane, m, b, s, d.p)


@wp.kernel
def newton_assemble(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    # Iteration:
    it: int,
):
    """Newton iteration ``it``: the rows at the iterate; from the second iteration on, the line search."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    assemble_with_line_search(w, lane, m, b, s, it)


@wp.kernel
def newton_solve(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    d: DualData,
    # Iteration:
    it: int,
    iterations: int,
):
    """PCR on [J M⁻¹ Jᵀ + C] Δλ = rhs (Δλ in s.dlam), every iteration in this launch; a world stops once
    ‖r‖ ≤ linear_tolerance·‖b‖, and a world already below the Newton tolerance makes no update."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    W = s.worlds
    R = m.row_count
    L = s.linear_iterations
    rr_base = it * (L + 1) * W
    tol_sq = s.linear_tolerance * s.linear_tolerance
    world_inverse_inertias(w, lane, b, s)  # the bodies' M⁻¹ for the gathers, fixed over the solve
    acc = float(0.0)
    for r in range(lane, R, lanes):
        k = w * R + r
        bk = s.rhs[k]
        s.dlam[k] = 0.0
        d.r[k] = bk
        d.z[k] = bk / s.diag[k]
        acc += bk * bk
    rr0 = world_sum(acc)
    if lane == 0:
        s.linear_rr[rr_base + w] = rr0
    world_sync()
    num = float(0.0)
    num_prev = float(0.0)
    rr_k = rr0
    done = int(0)
    k = int(-1)
    while k < iterations:  # pass k = −1 only takes the first product (one call site of the product)
        if k >= 0:
            beta = float(0.0)
            if k > 0 and num_prev > 0.0:
                beta = num / num_prev
            acc = float(0.0)
            for r in range(lane, R, lanes):
                i = w * R + r
                api = d.Az[i] + beta * d.Ap[i]
                d.p[i] = d.z[i] + beta * d.p[i]
                d.Ap[i] = api
                acc += api * api / s.diag[i]
            den = world_sum(acc)
            alpha = float(0.0)
            if den > 0.0 and rr_k > tol_sq * rr0:
                alpha = num / den
            acc = float(0.0)
            for r in range(lane, R, lanes):
                i = w * R + r
                api = d.Ap[i]
                s.dlam[i] = s.dlam[i] + alpha * d.p[i]
                ri = d.r[i] - alpha * api
                d.r[i] = ri
                d.z[i] = d.z[i] - alpha * api / s.diag[i]
                acc += ri * ri
            rr_k = world_sum(acc)
            if alpha != 0.0:
                done += 1
            if lane == 0 and k + 1 <= L:
                s.linear_rr[rr_base + (k + 1) * W + w] = rr_k
            if tol_sq > 0.0 and rr_k <= tol_sq * rr0:
                break
        if k + 1 < iterations:
            num_prev = num
            num = schur_product_world(w, lane, m, b, s, d.z, d.Az)
        k += 1
    if lane == 0:
        s.linear_iters[it * W + w] = done
    tol = s.newton_tolerance
    if tol > 0.0 and s.residual_sq[it * W + w] <= tol * tol:
        for r in range(lane, R, lanes):
            s.dlam[w * R + r] = 0.0
    world_sync()


@wp.kernel
def newton_update(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    # Iteration:
    it: int,
):
    """λ += Δλ and v += M⁻¹JᵀΔλ."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    update_world(w, lane, m, b, s, s.dlam)


@wp.kernel
def finish(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
):
    """After the last Newton iteration: the rows at the final iterate and the line search; friction impulses left
    outside their cone projected onto it, the change applied through M⁻¹Jᵀ."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    N = s.newton_iterations
    assemble_with_line_search(w, lane, m, b, s, N)
    if m.contact_count + b.body_contact_count + m.particle_body_count > 0:
        R = m.row_count
        for r in range(lane, R, world_lanes()):
            s.dlam[w * R + r] = 0.0
        world_sync()
        project_world_cones(w, lane, m, b, s, N - 1, 1)
        apply_world_impulses(w, lane, m, b, s, s.dlam)
