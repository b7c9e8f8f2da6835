"""The row families of one world, walked by the lanes of its block (kernels/block.py): assembly, the transpose
products Jᵀx (per particle and per rigid body), the gathers J M⁻¹ p + C x, impulse application and the friction
cone projection. Shared by both formulations' stage kernels (kernels/step_common.py, step_primal.py, step_dual.py).

Each function walks the families in the order of the row-family table (softsnake/sim/rows.py) where the order
matters (each lane's part of the world's merit is summed in that order) and ends at a barrier, so its results are
visible to every lane after it.
"""

import warp as wp

from .block import LANE_BATCH, batch_holds, batch_step, gather_batch, lane_batch, world_lanes, world_sync
from .data import ATTACHMENT, BodyData, ModelData, StepData
from .integrate import apply_particle_impulse
from .rigid import apply_body_impulse, body_inverse_inertia_at_iterate
from .rigid_contact import body_transpose_range
from .row_families import ASSEMBLY_BITS, ASSEMBLY_ORDER, FAMILIES
from .schur import particle_transpose_product


@wp.func
def world_inverse_inertias(w: int, lane: int, b: BodyData, s: StepData):
    """s.body_inv_inertia = R I⁻¹ Rᵀ of world w's bodies at their poses of the iterate, the M⁻¹ that the rows read in
    their assembly (the Schur diagonal), their gathers and the rigid-body preconditioner's D: evaluated once per body
    by each stage that reads it, after the bodies' velocities last changed, where every row evaluated its bodies'
    poses and rotated inertias anew. Ends at a barrier (none without bodies)."""
    n = b.body_count
    if n > 0:
        for i in range(lane, n, world_lanes()):
            s.body_inv_inertia[w * n + i] = body_inverse_inertia_at_iterate(b, i, w, s.body_x_start, s.body_v, s.h)
        world_sync()


@wp.func
def contacts_world(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """The contact families' part of the collision stage for world w, after the particle–shape list is written:
    candidates, frames, lever arms and friction at the linearisation point x⁻ + h·v⁻, held for the step."""
    for f in range(wp.static(len(FAMILIES))):
        wp.static(FAMILIES[f].contacts)(w, lane, m_rows, b, s)
    world_sync()


@wp.func
def linearise_world_rows(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    """The Jacobians of world w's bilateral and elastic rows for the step (a chord Newton method)."""
    world_inverse_inertias(w, lane, b, s)  # the body rows' pass writes their diagonal too
    for f in range(wp.static(len(FAMILIES))):
        wp.static(FAMILIES[f].linearise)(w, lane, m_rows, m_attach, b, s)
    world_sync()


@wp.func
def assemble_world_rows(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
    families: int,
) -> float:
    """The rows of world w of the families in the bit mask ``families`` (row_families.ALL_FAMILIES, WITHOUT_TETS,
    WITHOUT_TETS_AND_CONTACTS) at the iterate with the step's Jacobians: right-hand side −φ, Schur diagonal and
    compliance; returns this lane's part of Σφ² (its rows, the families in ASSEMBLY_ORDER), which the caller sums over
    the world (world_sum: no atomics, so the merit is the same sum whatever the order the lanes run in). ``m_rows``
    is the model the rows are assembled with (the primal step's effective particle masses), ``m_attach`` the one of
    the attachment rows (docs/solver.md, "Preconditioner"); with ``primal_fem`` the tets' impulses are the
    constitutive ones."""
    world_inverse_inertias(w, lane, b, s)
    acc = float(0.0)
    for f in range(wp.static(len(ASSEMBLY_ORDER))):
        if families & wp.static(ASSEMBLY_BITS[f]) != 0:
            acc += wp.static(ASSEMBLY_ORDER[f].assemble)(w, lane, m_rows, m_attach, b, s, newton_iteration, primal_fem)
    world_sync()
    return acc


@wp.func
def scatter_world_particles(
    w: int,
    lane: int,
    m: ModelData,
    s: StepData,
    x: wp.array(dtype=float),
    tet_force: wp.array(dtype=wp.vec3),
    use_tet_force: int,
    impulse: wp.array(dtype=wp.vec3),
):
    """impulse = Jᵀx per particle of world w (with use_tet_force = 1 the tets' part is read from ``tet_force``, with 2
    it is left out: particle_transpose_product)."""
    for p in range(lane, m.particle_count, world_lanes()):
        impulse[w * m.particle_count + p] = particle_transpose_product(m, s.jac, x, tet_force, use_tet_force, w, p)
    world_sync()


@wp.func
def body_chunk_sums(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """The first half of J_bᵀx per rigid body of world w (scatter_world_bodies): one lane per chunk of a body's
    incidence list, its entries in order, into s.body_chunk_sum. ``lane`` is any numbering of the world's lanes
    (the chunks' sums do not depend on which lane takes which chunk)."""
    chunks = b.body_chunk_start[b.body_count]
    for c in range(lane, chunks, world_lanes()):
        s.body_chunk_sum[w * chunks + c] = body_transpose_range(
            w, b.chunk_first[c], b.chunk_end[c], m, b, s.bjac, s.jac, x
        )


@wp.func
def body_sums_of_chunks(w: int, lane: int, b: BodyData, s: StepData, impulse: wp.array(dtype=wp.spatial_vector)):
    """The second half (after a barrier): impulse = Σ of each body's chunk sums in order, one lane per body, a batch
    of chunks' loads at a time."""
    chunks = b.body_chunk_start[b.body_count]
    for i in range(lane, b.body_count, world_lanes()):
        acc = wp.spatial_vector()
        end = b.body_chunk_start[i + 1]
        for c0 in range(b.body_chunk_start[i], end, batch_step(1)):
            sums = gather_batch(s.body_chunk_sum, lane_batch(w * chunks, c0, 1, end))
            for j in range(LANE_BATCH):
                if batch_holds(c0, j, 1, end):
                    acc += sums[j]
        impulse[w * b.body_count + i] = acc


@wp.func
def scatter_world_bodies(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    x: wp.array(dtype=float),
    impulse: wp.array(dtype=wp.spatial_vector),
):
    """impulse = J_bᵀx per rigid body of world w: one lane per chunk of a body's incidence list (its entries in
    order), then one lane per body adds its chunks in order, so the sum is the same whatever the block size. A body
    glued by dozens of rows would otherwise keep one lane walking its whole list while the block waits. Ends at a
    barrier."""
    body_chunk_sums(w, lane, m, b, s, x)
    world_sync()
    body_sums_of_chunks(w, lane, b, s, impulse)
    world_sync()


@wp.func
def gather_rows(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    particle_impulse: wp.array(dtype=wp.vec3),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
    families: int,
):
    """y = J M⁻¹ (particle_impulse, body_impulse) + C x on the rows of world w of the families in the bit mask
    ``families`` (row_families.ALL_FAMILIES, WITHOUT_TETS_AND_CONTACTS, BODY_FAMILIES, PARTICLE_ONLY_FAMILIES), each
    row on its own (the lanes may take them in any order); no barrier at the end. The rigid bodies' M⁻¹ reads
    s.body_inv_inertia: the stage evaluates it (world_inverse_inertias) after the bodies' velocities last changed."""
    for f in range(wp.static(len(FAMILIES))):
        if (families >> f) & 1 != 0:
            wp.static(FAMILIES[f].gather)(w, lane, m, b, s, particle_impulse, body_impulse, x, y)


@wp.func
def apply_world_body_impulses(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """The rigid bodies of world w take the impulses J_bᵀx (v_b += M_b⁻¹ J_bᵀx, angular momentum kept)."""
    if b.body_count > 0:
        scatter_world_bodies(w, lane, m, b, s, x, s.body_impulse)
        for i in range(lane, b.body_count, world_lanes()):
            apply_body_impulse(w * b.body_count + i, b, s.body_x_start, s.h, s.body_impulse, s.body_momentum, s.body_v)
        world_sync()


@wp.func
def apply_world_impulses(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """v += M⁻¹Jᵀx for the particles and the rigid bodies of world w."""
    scatter_world_particles(w, lane, m, s, x, s.tet_force, 0, s.impulse)
    for p in range(lane, m.particle_count, world_lanes()):
        apply_particle_impulse(w * m.particle_count + p, m.particle_count, m.particle_inv_mass, s.impulse, s.v)
    world_sync()
    apply_world_body_impulses(w, lane, m, b, s, x)


@wp.func
def project_world_cones(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, newton_iteration: int, bodies: int):
    """Friction impulses left outside their cone are projected onto it, each change added to s.dlam for the caller to
    apply; ``bodies = 0`` leaves the contacts on rigid bodies alone. Contacts with a positive normal impulse are
    counted at diagnostics row ``newton_iteration``."""
    active = newton_iteration * s.worlds + w
    for f in range(wp.static(len(FAMILIES))):
        wp.static(FAMILIES[f].project)(w, lane, m, b, s, active, bodies)
    world_sync()


@wp.func
def merit_grew(w: int, s: StepData, it: int) -> bool:
    """The last Newton update made world w's merit ‖φ‖² grow (iterate ``it`` against ``it − 1``; the line search's
    test, the same in every lane)."""
    return it > 0 and s.residual_sq[it * s.worlds + w] > s.residual_sq[(it - 1) * s.worlds + w]


@wp.func
def restart_merit(w: int, lane: int, s: StepData, it: int):
    """After the line search halved an update: iterate ``it``'s merit is summed again, and the search is recorded."""
    if lane == 0:
        s.residual_sq[it * s.worlds + w] = 0.0
        s.line_searches[it * s.worlds + w] = 1
    world_sync()


@wp.func
def body_rows_start(m: ModelData) -> int:
    """First row of a world that acts on a rigid body (the families from attachments on)."""
    return m.layout.row_start[ATTACHMENT]
