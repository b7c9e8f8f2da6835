"""The stages of a step that both formulations share, one block per world (kernels/block.py): predict, collide,
linearise and finalise. The solver launches them in pipeline order (softsnake/sim/solver.py, ``Solver.step``).
"""

import warp as wp

from .block import STAGE_MODULE_OPTIONS, world_index, world_lanes, world_scan, world_sync
from .contact_list import ContactListData, clear_contact_slot, contact_list_offsets, list_contact_candidates
from .data import BODY_CONTACT, CONTACT, TET, BodyData, ModelData, StepData, contact_row0, contact_slots_used
from .integrate import finalize_particle, predict_particle, start_multiplier
from .minres import row_index, row_set
from .rigid import finalize_body, predict_body
from .world_rows import contacts_world, linearise_world_rows

# forward kernels only, rebuilt when any kernel source changes (kernels/block.py, STAGE_MODULE_OPTIONS)
wp.set_module_options(STAGE_MODULE_OPTIONS)


@wp.func
def is_contact_row(m: ModelData, r: int) -> bool:
    """Row r of a world belongs to a contact family (particle–shape contacts, or the body contact families)."""
    return (r >= m.layout.row_start[CONTACT] and r < m.layout.row_start[CONTACT + 1]) or r >= m.layout.row_start[
        BODY_CONTACT
    ]


@wp.kernel
def predict(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    # In:
    tet_multipliers: int,
):
    """x⁻, v⁻ and the prediction ṽ of every particle and body; the world's diagnostics and scratch merit zeroed; the
    carried multipliers scaled into start values. ``tet_multipliers`` = 0 leaves the tets' rows alone: the primal
    formulation sets their multipliers from the positions at each assembly (the dual carries them, 1)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    n = m.particle_count
    for i in range(lane, n, lanes):
        predict_particle(
            w * n + i,
            n,
            m.particle_inv_mass,
            s.gravity,
            s.h,
            s.particle_q,
            s.particle_qd,
            s.particle_f,
            s.x_start,
            s.v_start,
            s.v,
        )
    n = b.body_count
    for i in range(lane, n, lanes):
        predict_body(
            w * n + i,
            b,
            s.gravity,
            s.h,
            s.body_q,
            s.body_qd,
            s.body_f,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
            s.body_momentum,
        )
    W = s.worlds
    N = s.newton_iterations
    L = s.linear_iterations
    if lane == 0:
        s.scratch_residual[w] = 0.0
    for k in range(lane, N + 1, lanes):
        s.residual_sq[k * W + w] = 0.0
        s.line_searches[k * W + w] = 0
    for k in range(lane, N * (L + 1), lanes):
        s.linear_rr[k * W + w] = 0.0
    for k in range(lane, N, lanes):
        s.linear_iters[k * W + w] = 0
        s.active_contacts[k * W + w] = 0
    R = m.row_count
    tets = int(0)  # the tets' rows left out (a gap of the row set) where their multipliers are not carried
    if tet_multipliers == 0:
        tets = m.layout.row_start[TET + 1] - m.layout.row_start[TET]
    rows = row_set(R, m.layout.row_start[TET], tets, R, 0)
    for k in range(lane, rows.count, lanes):
        r = row_index(k, rows)
        start_multiplier(s.lam, w * R + r, is_contact_row(m, r), s.warm_start, s.contact_warm_start)
    world_sync()


@wp.func
def contact_list_offsets_block(
    w: int,
    lane: int,
    n: int,
    capacity: int,
    count: wp.array(dtype=int),
    offset: wp.array(dtype=int),
    overflow: wp.array(dtype=int),
):
    """The running sum of contact_list_offsets, shared by the lanes: each lane sums a contiguous run of particles,
    an exclusive scan over the lanes gives each run's start (the same offsets as a serial sum)."""
    lanes = world_lanes()
    if lanes == 1:
        contact_list_offsets(w, n, capacity, count, offset, overflow)
    else:
        chunk = (n + lanes - 1) // lanes
        begin = wp.min(lane * chunk, n)
        end = wp.min(begin + chunk, n)
        local = int(0)
        for p in range(begin, end):
            local += count[w * n + p]
        scan = world_scan(local, lane)
        start = scan[0]
        total = scan[1]
        for p in range(begin, end):
            offset[w * n + p] = start
            start += count[w * n + p]
        if lane == 0:
            overflow[w] = wp.max(total - capacity, 0)


@wp.func
def world_candidates(w: int, lane: int, m: ModelData, s: StepData, c: ContactListData, write: int):
    """One pass of world ``w``'s particles over their contact candidates (kernels/contact_list.py): count them
    (write = 0) or write them into their slots (write = 1)."""
    for p in range(lane, m.particle_count, world_lanes()):
        list_contact_candidates(w * m.particle_count + p, m, s, c, write)


@wp.kernel
def collide(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    c: ContactListData,
):
    """The step's contacts. The particle–shape list (kernels/contact_list.py): the previous list is kept, the
    candidates are counted per particle, given consecutive slots per world, and written with the multipliers they
    carried; then every contact's frame at the linearisation point, and the candidates of the rigid-body contact
    slots (world_rows.contacts_world)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    n = m.particle_count
    K = m.contact_count
    for k in range(lane, K, lanes):
        c.old_shape[w * K + k] = s.jac.contact_shape[w * K + k]
        c.old_lam_n[w * K + k] = s.contact_lam_n_prev[w * K + k]
    for p in range(lane, n, lanes):
        c.old_first[w * n + p] = s.jac.contact_first[w * n + p]
        c.old_num[w * n + p] = s.jac.contact_num[w * n + p]
    # the multipliers of the last step's contacts: the rows of its filled slots
    for i in range(contact_row0(m, w, 0) + lane, contact_row0(m, w, contact_slots_used(m, s.jac, w)), lanes):
        c.lam_prev[i] = s.lam[i]
    world_sync()
    world_candidates(w, lane, m, s, c, 0)  # count
    world_sync()
    contact_list_offsets_block(w, lane, n, K, c.count, c.offset, c.overflow)
    world_sync()
    for k in range(lane, K, lanes):
        clear_contact_slot(w * K + k, m, s)
    world_sync()
    world_candidates(w, lane, m, s, c, 1)  # write
    world_sync()
    contacts_world(w, lane, m, b, s)


@wp.kernel
def linearise(
    # Model:
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
):
    """The bilateral and elastic rows' Jacobians of the step (world_rows.linearise_world_rows)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    linearise_world_rows(w, lane, m_rows, m_attach, b, s)


@wp.kernel
def finalize(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
):
    """x⁺ = x⁻ + h v⁺ (bodies: pose from the velocity) into the call's State; non-finite or runaway worlds flagged."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    n = m.particle_count
    for i in range(lane, n, world_lanes()):
        finalize_particle(w * n + i, n, s.h, s.max_speed, s.x_start, s.v, s.particle_q, s.particle_qd, s.nonfinite)
    n = b.body_count
    for i in range(lane, n, world_lanes()):
        finalize_body(w * n + i, n, s.h, s.max_speed, s.body_x_start, s.body_v, s.body_q, s.body_qd, s.nonfinite)
