"""The particle row families' functions for the row-family table (kernels/row_families.py): distance and actuation
rows, tets and particle–shape contacts, each a loop of the world's lanes (kernels/block.py) over the family's elements
calling the element physics of kernels/schur.py and kernels/friction.py."""

import warp as wp

from .block import world_lanes
from .data import CONTACT, DISTANCE, TET, BodyData, ModelData, StepData, contact_slots_used, family_element0
from .friction import project_friction
from .schur import assemble_particle_element, gather_particle_rows


@wp.func
def particle_elements_linearise(w: int, lane: int, first: int, last: int, m_rows: ModelData, s: StepData):
    n = m_rows.element_count
    for e in range(first + lane, last, world_lanes()):
        assemble_particle_element(
            w * n + e,
            m_rows,
            s.contact,
            s.h,
            0,
            1,
            0,
            s.x_start,
            s.v_start,
            s.v,
            s.distance_scale,
            s.shape_mu,
            s.contact_lam_n_prev,
            s.lam,
            s.jac,
            s.rhs,
            s.diag,
            s.tet_force,
        )


@wp.func
def particle_elements_assemble(
    w: int,
    lane: int,
    first: int,
    last: int,
    m_rows: ModelData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    n = m_rows.element_count
    acc = float(0.0)
    for e in range(first + lane, last, world_lanes()):
        acc += assemble_particle_element(
            w * n + e,
            m_rows,
            s.contact,
            s.h,
            newton_iteration,
            0,
            primal_fem,
            s.x_start,
            s.v_start,
            s.v,
            s.distance_scale,
            s.shape_mu,
            s.contact_lam_n_prev,
            s.lam,
            s.jac,
            s.rhs,
            s.diag,
            s.tet_force,
        )
    return acc


@wp.func
def particle_elements_gather(
    w: int,
    lane: int,
    first: int,
    last: int,
    m: ModelData,
    s: StepData,
    particle_impulse: wp.array(dtype=wp.vec3),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    n = m.element_count
    for e in range(first + lane, last, world_lanes()):
        gather_particle_rows(w * n + e, m, s.jac, s.h, particle_impulse, x, 0, y)


@wp.func
def distance_linearise(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    """Each distance row's direction at x⁻ + h·v⁻ (paper Eqs. 3–4)."""
    particle_elements_linearise(w, lane, family_element0(m_rows, DISTANCE), family_element0(m_rows, TET), m_rows, s)


@wp.func
def distance_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    first = family_element0(m_rows, DISTANCE)
    return particle_elements_assemble(
        w,
        lane,
        first,
        family_element0(m_rows, TET),
        m_rows,
        s,
        newton_iteration,
        primal_fem,
    )


@wp.func
def distance_gather(
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
    particle_elements_gather(
        w, lane, family_element0(m, DISTANCE), family_element0(m, TET), m, s, particle_impulse, x, y
    )


@wp.func
def tet_linearise(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    """Each tet's rotation, the polar factor at x⁻ + h·v⁻ (paper Eq. 5)."""
    particle_elements_linearise(w, lane, family_element0(m_rows, TET), family_element0(m_rows, CONTACT), m_rows, s)


@wp.func
def tet_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    first = family_element0(m_rows, TET)
    return particle_elements_assemble(
        w,
        lane,
        first,
        family_element0(m_rows, CONTACT),
        m_rows,
        s,
        newton_iteration,
        primal_fem,
    )


@wp.func
def tet_gather(
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
    particle_elements_gather(
        w, lane, family_element0(m, TET), family_element0(m, CONTACT), m, s, particle_impulse, x, y
    )


@wp.func
def contact_contacts(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """The frames of the listed particle–shape contacts at x⁻ + h·v⁻ (the list itself: kernels/contact_list.py)."""
    particle_elements_linearise(w, lane, family_element0(m_rows, CONTACT), m_rows.element_count, m_rows, s)


@wp.func
def contact_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    """The contact slots' rows: every slot in the dual step, whose solve has every row (an empty slot's are identity
    rows); the filled ones in the primal step, whose stages leave the empty slots' rows out (saddle.saddle_rows)."""
    first = family_element0(m_rows, CONTACT)
    last = m_rows.element_count
    if primal_fem != 0:
        last = first + contact_slots_used(m_rows, s.jac, w)
    return particle_elements_assemble(w, lane, first, last, m_rows, s, newton_iteration, primal_fem)


@wp.func
def contact_gather(
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
    particle_elements_gather(w, lane, family_element0(m, CONTACT), m.element_count, m, s, particle_impulse, x, y)


@wp.func
def live_contact_gather(
    w: int,
    lane: int,
    m: ModelData,
    s: StepData,
    particle_impulse: wp.array(dtype=wp.vec3),
    x: wp.array(dtype=float),
    y: wp.array(dtype=float),
):
    """The contact family's gather on the slots this step's list filled only (contact_slots_used): the primal saddle
    system leaves the empty slots' rows out (kernels/saddle.py, saddle_rows)."""
    first = family_element0(m, CONTACT)
    particle_elements_gather(w, lane, first, first + contact_slots_used(m, s.jac, w), m, s, particle_impulse, x, y)


@wp.func
def contact_project(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, active_index: int, bodies: int):
    """The friction cones of the slots this step's list filled (an empty slot holds zero multipliers: nothing to
    project)."""
    n = m.contact_count
    for k in range(lane, contact_slots_used(m, s.jac, w), world_lanes()):
        project_friction(
            w * n + k, m, s.jac, s.shape_mu, s.lam, s.dlam, s.contact_lam_n_prev, s.active_contacts, active_index
        )
