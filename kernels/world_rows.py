"""The row families of one world, walked by the lanes of its block (kernels/block.py): assembly, the transpose
products Jᵀx (per particle and per rigid body), the gathers J M⁻¹ p + C x, impulse application and the friction
cone projection. Shared by both formulations' stage kernels (kernels/step_common.py, step_primal.py, step_dual.py).

Each function walks the families in the order of the row-family table (softsnake/sim/rows.py) where the order
matters (atomic sums into a world's merit) and ends at a barrier, so its results are visible to every lane after it.
"""

import warp as wp

from .block import block_sync
from .data import ATTACHMENT, CONTACT, BodyData, ModelData, StepData, family_element0
from .friction import project_friction
from .integrate import apply_particle_impulse
from .rigid import apply_body_impulse, assemble_body_row, gather_body_row
from .rigid_contact import (
    assemble_body_contact,
    assemble_particle_body_contact,
    body_transpose_product,
    gather_body_contact,
    gather_particle_body_contact,
    project_body_friction,
    project_particle_body_friction,
)
from .schur import assemble_particle_element, gather_particle_rows, particle_transpose_product


@wp.func
def contacts_world(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """The contact part of the collision stage for world w, after the particle–shape list is written: which
    rigid-body contact slots (particle–body-shape, body feature–target) are candidates this step, with their frames,
    lever arms and friction coefficients, and the frames of the listed particle–shape contacts, all at the
    linearisation point x⁻ + h·v⁻ and held for the step (kernels/rigid_contact.py, kernels/schur.py)."""
    lanes = wp.block_dim()
    n = m_rows.particle_body_count
    for k in range(lane, n, lanes):
        assemble_particle_body_contact(
            w * n + k, m_rows, b, s.contact, s.h, 0, 1, s.x_start, s.v_start, s.v, s.body_x_start, s.body_v_start,
            s.body_v, s.particle_body_lam_n_prev, s.lam, s.jac, s.rhs, s.diag, s.scratch_residual, 0,
        )
    n = b.body_contact_count
    for k in range(lane, n, lanes):
        assemble_body_contact(
            w * n + k, m_rows, b, s.contact, s.h, 0, 1, s.body_x_start, s.body_v_start, s.body_v,
            s.body_contact_lam_n_prev, s.lam, s.bjac, s.jac.row_compliance, s.rhs, s.diag, s.scratch_residual, 0,
        )
    n = m_rows.element_count
    for e in range(family_element0(m_rows, CONTACT) + lane, n, lanes):
        assemble_particle_element(
            w * n + e, m_rows, s.contact, s.h, 0, 1, 0, s.x_start, s.v_start, s.v, s.distance_scale,
            s.contact_lam_n_prev, s.lam, s.jac, s.rhs, s.diag, s.scratch_residual, 0, s.tet_force,
        )
    block_sync()


@wp.func
def linearise_world_rows(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    """The Jacobians of world w's bilateral and elastic rows for the step: distance directions and tet rotations at
    x⁻ + h·v⁻, attachment and joint Jacobians at x⁻ (held for the step: a chord Newton method)."""
    lanes = wp.block_dim()
    n = b.attachment_count + b.joint_count
    for k in range(lane, n, lanes):
        # the rows' values are written again by the first iteration; only their Jacobians matter here
        assemble_body_row(
            w * n + k, m_attach, b, s.h, s.x_start, s.v, s.body_x_start, s.body_v, s.lam, s.bjac, s.jac.row_compliance,
            s.rhs, s.diag, s.scratch_residual, 0,
        )
    n = m_rows.element_count
    for e in range(lane, family_element0(m_rows, CONTACT), lanes):
        assemble_particle_element(
            w * n + e, m_rows, s.contact, s.h, 0, 1, 0, s.x_start, s.v_start, s.v, s.distance_scale,
            s.contact_lam_n_prev, s.lam, s.jac, s.rhs, s.diag, s.scratch_residual, 0, s.tet_force,
        )
    block_sync()


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
    residual_sq: wp.array(dtype=float),
    residual_base: int,
):
    """Every row of world w at the iterate with the step's Jacobians: right-hand side −φ, Schur diagonal and
    compliance; residual_sq[residual_base + w] += Σφ². ``m_rows`` is the model the rows are assembled with (the primal
    step's effective particle masses), ``m_attach`` the one of the attachment rows (docs/solver.md,
    "Preconditioner"); with ``primal_fem`` the tets' impulses are the constitutive ones."""
    lanes = wp.block_dim()
    n = m_rows.particle_body_count
    for k in range(lane, n, lanes):
        assemble_particle_body_contact(
            w * n + k, m_rows, b, s.contact, s.h, newton_iteration, 0, s.x_start, s.v_start, s.v, s.body_x_start,
            s.body_v_start, s.body_v, s.particle_body_lam_n_prev, s.lam, s.jac, s.rhs, s.diag, residual_sq, residual_base,
        )
    n = b.body_contact_count
    for k in range(lane, n, lanes):
        assemble_body_contact(
            w * n + k, m_rows, b, s.contact, s.h, newton_iteration, 0, s.body_x_start, s.body_v_start, s.body_v,
            s.body_contact_lam_n_prev, s.lam, s.bjac, s.jac.row_compliance, s.rhs, s.diag, residual_sq, residual_base,
        )
    n = b.attachment_count + b.joint_count
    for k in range(lane, n, lanes):
        assemble_body_row(
            w * n + k, m_attach, b, s.h, s.x_start, s.v, s.body_x_start, s.body_v, s.lam, s.bjac, s.jac.row_compliance,
            s.rhs, s.diag, residual_sq, residual_base,
        )
    n = m_rows.element_count
    for e in range(lane, n, lanes):
        assemble_particle_element(
            w * n + e, m_rows, s.contact, s.h, newton_iteration, 0, primal_fem, s.x_start, s.v_start, s.v,
            s.distance_scale, s.contact_lam_n_prev, s.lam, s.jac, s.rhs, s.diag, residual_sq, residual_base, s.tet_force,
        )
    block_sync()


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
    """impulse = Jᵀx per particle of world w (with use_tet_force = 1 the tets' part is read from ``tet_force``)."""
    for p in range(lane, m.particle_count, wp.block_dim()):
        impulse[w * m.particle_count + p] = particle_transpose_product(m, s.jac, x, tet_force, use_tet_force, w, p)
    block_sync()


@wp.func
def scatter_world_bodies(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float), impulse: wp.array(dtype=wp.spatial_vector)):
    """impulse = J_bᵀx per rigid body of world w (one lane per body, its incidence list in order)."""
    for i in range(lane, b.body_count, wp.block_dim()):
        impulse[w * b.body_count + i] = body_transpose_product(w, i, m, b, s.bjac, s.jac, x)
    block_sync()


@wp.func
def gather_world_rows(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    particle_impulse: wp.array(dtype=wp.vec3),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
    skip_tets: int,
    particle_rows: int,
):
    """y = J M⁻¹ (particle_impulse, body_impulse) + C x on the rows of world w: the particle families (distance, tet
    unless ``skip_tets``, contact) when ``particle_rows``, and every family that acts on a body."""
    lanes = wp.block_dim()
    if particle_rows != 0:
        n = m.element_count - skip_tets * m.tet_count
        for e in range(lane, n, lanes):
            gather_particle_rows(w * n + e, m, s.jac, s.h, particle_impulse, x, skip_tets, y)
    n = b.attachment_count + b.joint_count
    for k in range(lane, n, lanes):
        gather_body_row(w * n + k, m, b, s.bjac, s.h, s.body_x_start, s.body_v, particle_impulse, body_impulse, s.jac.row_compliance, x, y)
    n = b.body_contact_count
    for k in range(lane, n, lanes):
        gather_body_contact(w * n + k, m, b, s.bjac, s.h, s.body_x_start, s.body_v, body_impulse, s.jac.row_compliance, x, y)
    n = m.particle_body_count
    for k in range(lane, n, lanes):
        gather_particle_body_contact(w * n + k, m, b, s.jac, s.h, s.body_x_start, s.body_v, particle_impulse, body_impulse, x, y)
    block_sync()


@wp.func
def apply_world_body_impulses(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """The rigid bodies of world w take the impulses J_bᵀx (v_b += M_b⁻¹ J_bᵀx, angular momentum kept)."""
    if b.body_count > 0:
        scatter_world_bodies(w, lane, m, b, s, x, s.body_impulse)
        for i in range(lane, b.body_count, wp.block_dim()):
            apply_body_impulse(w * b.body_count + i, b, s.body_x_start, s.h, s.body_impulse, s.body_momentum, s.body_v)
        block_sync()


@wp.func
def apply_world_impulses(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, x: wp.array(dtype=float)):
    """v += M⁻¹Jᵀx for the particles and the rigid bodies of world w."""
    scatter_world_particles(w, lane, m, s, x, s.tet_force, 0, s.impulse)
    for p in range(lane, m.particle_count, wp.block_dim()):
        apply_particle_impulse(w * m.particle_count + p, m.particle_count, m.particle_inv_mass, s.impulse, s.v)
    block_sync()
    apply_world_body_impulses(w, lane, m, b, s, x)


@wp.func
def project_world_cones(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, newton_iteration: int, bodies: int):
    """Friction impulses left outside their cone are projected onto it, each change added to s.dlam for the caller to
    apply; ``bodies = 0`` leaves the contacts on rigid bodies alone. Contacts with a positive normal impulse are
    counted at diagnostics row ``newton_iteration``."""
    lanes = wp.block_dim()
    active = newton_iteration * s.worlds + w
    if bodies != 0:
        n = b.body_contact_count
        for k in range(lane, n, lanes):
            project_body_friction(w * n + k, m, b, s.bjac, s.lam, s.body_contact_lam_n_prev, s.dlam, s.active_contacts, active)
        n = m.particle_body_count
        for k in range(lane, n, lanes):
            project_particle_body_friction(w * n + k, m, s.jac, s.lam, s.particle_body_lam_n_prev, s.dlam, s.active_contacts, active)
    n = m.contact_count
    for k in range(lane, n, lanes):
        project_friction(w * n + k, m, s.jac, s.lam, s.dlam, s.contact_lam_n_prev, s.active_contacts, active)
    block_sync()


@wp.func
def body_rows_start(m: ModelData) -> int:
    """First row of a world that acts on a rigid body (the families from attachments on)."""
    return m.layout.row_start[ATTACHMENT]
