"""The rigid-body row families' functions for the row-family table (kernels/row_families.py): attachments and joints
(element physics in kernels/rigid.py), contacts of rigid bodies' features and of particles on bodies' shapes
(kernels/rigid_contact.py), and each family's rows' D in the rows' rigid-body preconditioner
(kernels/body_precond.py), each a loop of the world's lanes (kernels/block.py) over the family's elements."""

import warp as wp

from .block import world_lanes
from .body_precond import BodyBlocks, attachment_and_joint_row_d, body_contact_slot_row_d, particle_body_slot_row_d
from .data import BodyData, ModelData, StepData
from .rigid import assemble_body_row, gather_body_row
from .rigid_contact import (
    assemble_body_contact,
    assemble_particle_body_contact,
    gather_body_contact,
    gather_particle_body_contact,
    project_body_friction,
    project_particle_body_friction,
)


# ---------------------------------------------------------------- attachments and joints (kernels/rigid.py)
@wp.func
def body_rows_assemble(
    w: int,
    lane: int,
    first: int,
    last: int,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
) -> float:
    n = b.attachment_count + b.joint_count
    acc = float(0.0)
    for k in range(first + lane, last, world_lanes()):
        # the Jacobians are taken at x⁻ (fixed for the step); the linearisation pass writes rows too, which the first
        # iteration writes again
        acc += assemble_body_row(
            w * n + k,
            m_attach,
            b,
            s.h,
            s.x_start,
            s.v,
            s.body_x_start,
            s.body_v,
            s.body_inv_inertia,
            s.lam,
            s.bjac,
            s.jac.row_compliance,
            s.rhs,
            s.diag,
        )
    return acc


@wp.func
def body_rows_gather(
    w: int,
    lane: int,
    first: int,
    last: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    particle_impulse: wp.array(dtype=wp.vec3),
    body_impulse: wp.array(dtype=wp.spatial_vector),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    n = b.attachment_count + b.joint_count
    for k in range(first + lane, last, world_lanes()):
        gather_body_row(
            w * n + k,
            m,
            b,
            s.bjac,
            s.body_inv_inertia,
            particle_impulse,
            body_impulse,
            s.jac.row_compliance,
            x,
            y,
        )


@wp.func
def body_rows_row_d(
    w: int,
    lane: int,
    first: int,
    last: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    bb: BodyBlocks,
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    n = b.attachment_count + b.joint_count
    for k in range(first + lane, last, world_lanes()):
        attachment_and_joint_row_d(w * n + k, m, b, s.bjac, bb, s.body_inv_inertia, s.diag, row_d, row_weight)


@wp.func
def attachment_linearise(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    """Each attachment's lever arm at x⁻ (paper Eq. 6)."""
    body_rows_assemble(w, lane, 0, b.attachment_count, m_attach, b, s)


@wp.func
def attachment_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    return body_rows_assemble(w, lane, 0, b.attachment_count, m_attach, b, s)


@wp.func
def attachment_gather(
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
    body_rows_gather(w, lane, 0, b.attachment_count, m, b, s, particle_impulse, body_impulse, x, y)


@wp.func
def attachment_row_d(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    bb: BodyBlocks,
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    body_rows_row_d(w, lane, 0, b.attachment_count, m, b, s, bb, row_d, row_weight)


@wp.func
def joint_linearise(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    """Each joint row's Jacobian at the bodies' poses x⁻."""
    body_rows_assemble(w, lane, b.attachment_count, b.attachment_count + b.joint_count, m_attach, b, s)


@wp.func
def joint_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    return body_rows_assemble(w, lane, b.attachment_count, b.attachment_count + b.joint_count, m_attach, b, s)


@wp.func
def joint_gather(
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
    body_rows_gather(
        w, lane, b.attachment_count, b.attachment_count + b.joint_count, m, b, s, particle_impulse, body_impulse, x, y
    )


@wp.func
def joint_row_d(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    bb: BodyBlocks,
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    body_rows_row_d(w, lane, b.attachment_count, b.attachment_count + b.joint_count, m, b, s, bb, row_d, row_weight)


# ----------------------------------------------------- contacts on rigid bodies (kernels/rigid_contact.py)
@wp.func
def body_contact_rows(
    w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData, newton_iteration: int, linearise: int
) -> float:
    """The feature–target slots' rows at the iterate (assemble_body_contact), or with ``linearise`` which are
    candidates this step, with their frames, arms, friction and contact points; returns the lanes' part of Σφ²."""
    n = b.body_contact_count
    acc = float(0.0)
    for k in range(lane, n, world_lanes()):
        acc += assemble_body_contact(
            w * n + k,
            m_rows,
            b,
            s.contact,
            s.h,
            newton_iteration,
            linearise,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
            s.body_inv_inertia,
            s.shape_mu,
            s.body_contact_lam_n_prev,
            s.lam,
            s.bjac,
            s.jac.row_compliance,
            s.rhs,
            s.diag,
        )
    return acc


@wp.func
def body_contact_contacts(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """Which feature–target slots are candidates this step, with their frames, arms, friction and contact points."""
    body_contact_rows(w, lane, m_rows, b, s, 0, 1)


@wp.func
def body_contact_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    return body_contact_rows(w, lane, m_rows, b, s, newton_iteration, 0)


@wp.func
def body_contact_gather(
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
    n = b.body_contact_count
    for k in range(lane, n, world_lanes()):
        gather_body_contact(w * n + k, m, b, s.bjac, s.body_inv_inertia, body_impulse, s.jac.row_compliance, x, y)


@wp.func
def body_contact_project(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, active_index: int, bodies: int):
    if bodies != 0:
        n = b.body_contact_count
        for k in range(lane, n, world_lanes()):
            project_body_friction(
                w * n + k, m, b, s.bjac, s.lam, s.body_contact_lam_n_prev, s.dlam, s.active_contacts, active_index
            )


@wp.func
def body_contact_row_d(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    bb: BodyBlocks,
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    n = b.body_contact_count
    for k in range(lane, n, world_lanes()):
        body_contact_slot_row_d(w * n + k, m, b, s.bjac, bb, s.body_inv_inertia, s.diag, row_d, row_weight)


@wp.func
def particle_body_rows(
    w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData, newton_iteration: int, linearise: int
) -> float:
    """The particle–body-shape slots' rows at the iterate (assemble_particle_body_contact), or with ``linearise``
    which are candidates this step, with their frames, arms and friction; returns the lanes' part of Σφ²."""
    n = m_rows.particle_body_count
    acc = float(0.0)
    for k in range(lane, n, world_lanes()):
        acc += assemble_particle_body_contact(
            w * n + k,
            m_rows,
            b,
            s.contact,
            s.h,
            newton_iteration,
            linearise,
            s.x_start,
            s.v_start,
            s.v,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
            s.body_inv_inertia,
            s.particle_body_lam_n_prev,
            s.lam,
            s.jac,
            s.rhs,
            s.diag,
        )
    return acc


@wp.func
def particle_body_contacts(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """Which particle–body-shape slots are candidates this step, with their frames, arms and friction."""
    particle_body_rows(w, lane, m_rows, b, s, 0, 1)


@wp.func
def particle_body_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    return particle_body_rows(w, lane, m_rows, b, s, newton_iteration, 0)


@wp.func
def particle_body_gather(
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
    n = m.particle_body_count
    for k in range(lane, n, world_lanes()):
        gather_particle_body_contact(w * n + k, m, b, s.jac, s.body_inv_inertia, particle_impulse, body_impulse, x, y)


@wp.func
def particle_body_project(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, active_index: int, bodies: int):
    if bodies != 0:
        n = m.particle_body_count
        for k in range(lane, n, world_lanes()):
            project_particle_body_friction(
                w * n + k, m, s.jac, s.lam, s.particle_body_lam_n_prev, s.dlam, s.active_contacts, active_index
            )


@wp.func
def particle_body_row_d(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    bb: BodyBlocks,
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    n = m.particle_body_count
    for k in range(lane, n, world_lanes()):
        particle_body_slot_row_d(w * n + k, m, b, s.jac, bb, s.body_inv_inertia, s.diag, row_d, row_weight)
