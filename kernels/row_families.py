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

A family leaves out what does not concern it (the ``no_*`` functions). The families' functions live beside their
kind: kernels/particle_families.py (distance, tet, contact) and kernels/body_families.py (attachment, joint,
body_contact, particle_body). The stage functions in world_rows.py, saddle.py, step_primal.py and
step_body_blocks.py loop over this table at code generation (``wp.static``), so a new family is one entry here and
its functions; its element numbering and rows follow from the table (``family_row0``). Where it acts on particles or
bodies, its Jᵀx part is a branch of ``particle_transpose_product`` (kernels/schur.py) or ``body_transpose_range``
(kernels/rigid_contact.py), its rigid-body preconditioner terms one of ``body_block_chunk`` (kernels/body_precond.py),
and the Model lists its incidences (softsnake/sim/model.py).
"""

import warp as wp

from .body_families import (
    attachment_assemble,
    attachment_gather,
    attachment_linearise,
    attachment_row_d,
    body_contact_assemble,
    body_contact_contacts,
    body_contact_gather,
    body_contact_project,
    body_contact_row_d,
    joint_assemble,
    joint_gather,
    joint_linearise,
    joint_row_d,
    particle_body_assemble,
    particle_body_contacts,
    particle_body_gather,
    particle_body_project,
    particle_body_row_d,
)
from .body_precond import BodyBlocks
from .data import ATTACHMENT, BODY_CONTACT, CONTACT, DISTANCE, JOINT, PARTICLE_BODY, TET, BodyData, ModelData, StepData
from .particle_families import (
    contact_assemble,
    contact_contacts,
    contact_gather,
    contact_project,
    distance_assemble,
    distance_gather,
    distance_linearise,
    tet_assemble,
    tet_gather,
    tet_linearise,
)


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

#: each assembled family's bit in the masks below, in ASSEMBLY_ORDER
ASSEMBLY_BITS = tuple(1 << int(f.index) for f in ASSEMBLY_ORDER)

#: bit masks of families for gather_rows and assemble_world_rows (bit k: family k): all; all but the tets (the
#: primal step's first Newton assembly after its warm start's, the particles' velocities unchanged); all but the tets
#: and the particle contacts (the primal product takes the tets from its block matrix and gathers only the contact
#: slots in use: kernels/saddle.py; the primal warm start's later merits keep their rows, which the probes do not
#: change); those that act on rigid bodies (the rows' preconditioner)
ALL_FAMILIES = wp.constant(sum(1 << k for k in range(len(FAMILIES))))
WITHOUT_TETS = wp.constant(sum(1 << k for k, f in enumerate(FAMILIES) if f.name != "tet"))
WITHOUT_TETS_AND_CONTACTS = wp.constant(sum(1 << k for k, f in enumerate(FAMILIES) if f.name not in ("tet", "contact")))
BODY_FAMILIES = wp.constant(
    sum(1 << k for k, f in enumerate(FAMILIES) if f.name in ("attachment", "joint", "body_contact", "particle_body"))
)
#: … and the families of WITHOUT_TETS_AND_CONTACTS that act on particles alone (the primal product gathers them beside
#: the bodies' J_bᵀx, before it gathers BODY_FAMILIES)
PARTICLE_ONLY_FAMILIES = wp.constant(WITHOUT_TETS_AND_CONTACTS & ~BODY_FAMILIES)
