"""The row families of a world, the kernels' side of the row-family table (softsnake/sim/rows.py takes its names, rows
per element and kinds from here).

Each family is one entry of ``FAMILIES`` with the functions that walk its elements for one world, shared by the lanes
of the world's block (kernels/block.py), one per stage that concerns it:

    linearise  its Jacobians for the step (bilateral and elastic families)
    contacts   its candidates and frames, in the collision stage (contact families)
    assemble   its rows at the iterate: right-hand side, Schur diagonal, compliance, merit
    gather     y = J M⁻¹ p + C x on its rows (the products of both formulations)
    project    its friction cone projection (contact families)
    body_row_d its rows' D in the rows' rigid-body preconditioner (families that act on bodies)

A family leaves out what does not concern it (the ``no_*`` functions). The stage functions in world_rows.py,
step_primal.py and step_body_blocks.py loop over this table at code generation (``wp.static``), so a new family is
one entry here and its functions; its element numbering and rows follow from the table (``family_row0``). Where it
acts on particles or bodies, its Jᵀx part is a branch of ``particle_transpose_product`` (kernels/schur.py) or
``body_transpose_range`` (kernels/rigid_contact.py), and the Model lists its incidences (softsnake/sim/model.py).
"""

import warp as wp

from .block import world_lanes
from .body_precond import BodyBlocks, attachment_and_joint_row_d, body_contact_slot_row_d, particle_body_slot_row_d
from .data import (
    ATTACHMENT,
    BODY_CONTACT,
    CONTACT,
    DISTANCE,
    JOINT,
    PARTICLE_BODY,
    TET,
    BodyData,
    ModelData,
    StepData,
    family_element0,
)
from .friction import project_friction
from .rigid import assemble_body_row, gather_body_row
from .rigid_contact import (
    assemble_body_contact,
    assemble_particle_body_contact,
    gather_body_contact,
    gather_particle_body_contact,
    project_body_friction,
    project_particle_body_friction,
)
from .schur import assemble_particle_element, gather_particle_rows


class RowFamily:
    """One entry of the table: name, index (kernels/data.py constant, the family's place in the row order), rows per
    element, kind ("bilateral", "elastic", "contact") and its functions."""

    def __init__(self, name, index, rows_per_element, kind, **functions):
        self.name = name
        self.index = index
        self.rows_per_element = rows_per_element
        self.kind = kind
        for hook, default in NO_FUNCTION.items():
            setattr(self, hook, functions.pop(hook, default))
        if functions:
            raise TypeError(f"unknown row-family functions {sorted(functions)}")


# ----------------------------------------------------------------------------------- the functions' signatures
@wp.func
def no_linearise(w: int, lane: int, m_rows: ModelData, m_attach: ModelData, b: BodyData, s: StepData):
    pass


@wp.func
def no_contacts(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    pass


@wp.func
def no_assemble(
    w: int,
    lane: int,
    m_rows: ModelData,
    m_attach: ModelData,
    b: BodyData,
    s: StepData,
    newton_iteration: int,
    primal_fem: int,
) -> float:
    return 0.0


@wp.func
def no_gather(
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
    pass


@wp.func
def no_project(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, active_index: int, bodies: int):
    pass


@wp.func
def no_body_row_d(
    w: int,
    lane: int,
    m: ModelData,
    b: BodyData,
    s: StepData,
    bb: BodyBlocks,
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    pass


NO_FUNCTION = dict(
    linearise=no_linearise,
    contacts=no_contacts,
    assemble=no_assemble,
    gather=no_gather,
    project=no_project,
    body_row_d=no_body_row_d,
)


# ------------------------------------------------------------------- particle families (kernels/schur.py)
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
    first = family_element0(m_rows, CONTACT)
    return particle_elements_assemble(w, lane, first, m_rows.element_count, m_rows, s, newton_iteration, primal_fem)


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
def contact_project(w: int, lane: int, m: ModelData, b: BodyData, s: StepData, active_index: int, bodies: int):
    n = m.contact_count
    for k in range(lane, n, world_lanes()):
        project_friction(
            w * n + k, m, s.jac, s.shape_mu, s.lam, s.dlam, s.contact_lam_n_prev, s.active_contacts, active_index
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
            s.h,
            s.body_x_start,
            s.body_v,
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
        attachment_and_joint_row_d(
            w * n + k, m, b, s.bjac, bb, s.h, s.body_x_start, s.body_v, s.diag, row_d, row_weight
        )


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
def body_contact_contacts(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """Which feature–target slots are candidates this step, with their frames, arms, friction and contact points."""
    n = b.body_contact_count
    for k in range(lane, n, world_lanes()):
        assemble_body_contact(
            w * n + k,
            m_rows,
            b,
            s.contact,
            s.h,
            0,
            1,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
            s.shape_mu,
            s.body_contact_lam_n_prev,
            s.lam,
            s.bjac,
            s.jac.row_compliance,
            s.rhs,
            s.diag,
        )


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
            0,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
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
        gather_body_contact(
            w * n + k, m, b, s.bjac, s.h, s.body_x_start, s.body_v, body_impulse, s.jac.row_compliance, x, y
        )


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
        body_contact_slot_row_d(w * n + k, m, b, s.bjac, bb, s.h, s.body_x_start, s.body_v, s.diag, row_d, row_weight)


@wp.func
def particle_body_contacts(w: int, lane: int, m_rows: ModelData, b: BodyData, s: StepData):
    """Which particle–body-shape slots are candidates this step, with their frames, arms and friction."""
    n = m_rows.particle_body_count
    for k in range(lane, n, world_lanes()):
        assemble_particle_body_contact(
            w * n + k,
            m_rows,
            b,
            s.contact,
            s.h,
            0,
            1,
            s.x_start,
            s.v_start,
            s.v,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
            s.particle_body_lam_n_prev,
            s.lam,
            s.jac,
            s.rhs,
            s.diag,
        )


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
            0,
            s.x_start,
            s.v_start,
            s.v,
            s.body_x_start,
            s.body_v_start,
            s.body_v,
            s.particle_body_lam_n_prev,
            s.lam,
            s.jac,
            s.rhs,
            s.diag,
        )
    return acc


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
        gather_particle_body_contact(
            w * n + k, m, b, s.jac, s.h, s.body_x_start, s.body_v, particle_impulse, body_impulse, x, y
        )


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
        particle_body_slot_row_d(w * n + k, m, b, s.jac, bb, s.h, s.body_x_start, s.body_v, s.diag, row_d, row_weight)


# ------------------------------------------------------------------------------------------------- the table
#: in row order (their index is their place); rows per element and kind as softsnake/sim/rows.py reports them
FAMILIES = (
    RowFamily(
        "distance",
        DISTANCE,
        1,
        "bilateral",
        linearise=distance_linearise,
        assemble=distance_assemble,
        gather=distance_gather,
    ),
    RowFamily("tet", TET, 6, "elastic", linearise=tet_linearise, assemble=tet_assemble, gather=tet_gather),
    RowFamily(
        "contact",
        CONTACT,
        3,
        "contact",
        contacts=contact_contacts,
        assemble=contact_assemble,
        gather=contact_gather,
        project=contact_project,
    ),
    RowFamily(
        "attachment",
        ATTACHMENT,
        3,
        "bilateral",
        linearise=attachment_linearise,
        assemble=attachment_assemble,
        gather=attachment_gather,
        body_row_d=attachment_row_d,
    ),
    RowFamily(
        "joint",
        JOINT,
        6,
        "bilateral",
        linearise=joint_linearise,
        assemble=joint_assemble,
        gather=joint_gather,
        body_row_d=joint_row_d,
    ),
    RowFamily(
        "body_contact",
        BODY_CONTACT,
        3,
        "contact",
        contacts=body_contact_contacts,
        assemble=body_contact_assemble,
        gather=body_contact_gather,
        project=body_contact_project,
        body_row_d=body_contact_row_d,
    ),
    RowFamily(
        "particle_body",
        PARTICLE_BODY,
        3,
        "contact",
        contacts=particle_body_contacts,
        assemble=particle_body_assemble,
        gather=particle_body_gather,
        project=particle_body_project,
        body_row_d=particle_body_row_d,
    ),
)

#: the order in which the families' rows are assembled, and so their merits summed: the rigid-body contact families,
#: the bilateral body rows, then the particle families
ASSEMBLY_ORDER = tuple(FAMILIES[k] for k in (PARTICLE_BODY, BODY_CONTACT, ATTACHMENT, JOINT, DISTANCE, TET, CONTACT))

assert all(int(f.index) == k for k, f in enumerate(FAMILIES)), "FAMILIES must be in row order"

#: bit masks of families for gather_world_rows (bit k: family k): all, all but the tets (the primal product takes them
#: from its block matrix), those that act on rigid bodies (the rows' preconditioner)
ALL_FAMILIES = wp.constant(sum(1 << k for k in range(len(FAMILIES))))
WITHOUT_TETS = wp.constant(sum(1 << k for k, f in enumerate(FAMILIES) if f.name != "tet"))
BODY_FAMILIES = wp.constant(
    sum(1 << k for k, f in enumerate(FAMILIES) if f.name in ("attachment", "joint", "body_contact", "particle_body"))
)
