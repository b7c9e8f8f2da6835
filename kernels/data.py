"""Warp structs that carry the model and the per-iteration linearisation into kernels."""

import warp as wp

from .types import vec6

#: the row families of softsnake/sim/rows.py (ROW_FAMILIES), in row order: indices into RowLayout
DISTANCE = wp.constant(0)
TET = wp.constant(1)
CONTACT = wp.constant(2)
ATTACHMENT = wp.constant(3)
JOINT = wp.constant(4)
BODY_CONTACT = wp.constant(5)
PARTICLE_BODY = wp.constant(6)
FAMILY_COUNT = 7
#: entries of a list (a rigid body's incidences, a coarse node's particles) that one lane sums before a lane per list
#: adds the chunks' sums in order (softsnake/sim/model.py, list_chunk)
LIST_CHUNK = 8

vec8i = wp.types.vector(length=8, dtype=wp.int32)


@wp.struct
class RowLayout:
    """The row-family table of one world (softsnake/sim/rows.py, RowTable.layout()): for family k (DISTANCE …
    PARTICLE_BODY) its first row, first element number and rows per element; entry FAMILY_COUNT holds the totals
    (rows and elements per world)."""

    row_start: vec8i
    element_start: vec8i
    rows_per_element: vec8i


@wp.struct
class ModelData:
    particle_count: int
    distance_count: int
    tet_count: int
    shape_count: int
    contact_count: int  # particle–shape contact slots per world (the compact list's capacity, kernels/contact_list.py)
    row_count: int  # rows per world
    element_count: int  # particle-family elements per world (distance, tet, contact)
    attachment_count: int
    particle_body_count: int  # particle–body-shape slots per world (particles · body shapes)
    layout: RowLayout  # where each row family's rows and elements begin

    particle_inv_mass: wp.array(dtype=float)
    particle_radius: wp.array(dtype=float)
    # rows acting on each particle except its tets (CSR): code = 4·element + local vertex, elements numbered
    # [distance | tet | contact | attachment | …]
    # (contact slots change every step: they are listed per particle in Jacobian.contact_first/contact_num instead)
    particle_incidence_start: wp.array(dtype=int)
    particle_incidence: wp.array(dtype=int)
    # the tets of each particle (CSR, code = 4·tet + local vertex), kept apart from the list above so the products
    # sum a particle's tet terms in one tight run (in the same order as if they sat between its distances and contacts)
    particle_tet_start: wp.array(dtype=int)
    particle_tet: wp.array(dtype=int)

    distance_i: wp.array(dtype=int)
    distance_j: wp.array(dtype=int)
    distance_rest: wp.array(dtype=float)
    distance_compliance: wp.array(dtype=float)
    distance_damping: wp.array(dtype=float)

    tet_indices: wp.array(dtype=wp.vec4i)
    tet_rest_inverse: wp.array(dtype=wp.mat33)
    tet_volume: wp.array(dtype=float)
    tet_youngs: wp.array(dtype=float)
    tet_poisson: wp.array(dtype=float)
    tet_damping: wp.array(dtype=float)

    shape_type: wp.array(dtype=int)
    shape_pos: wp.array(dtype=wp.vec3)
    shape_rot: wp.array(dtype=wp.quat)
    shape_params: wp.array(dtype=wp.vec3)
    shape_mu: wp.array(dtype=wp.vec2)


@wp.struct
class Jacobian:
    """Per-step linearisation (world-major, one entry per element), computed once at the step's linearisation point."""

    distance_dir: wp.array(dtype=wp.vec3)
    tet_rotation: wp.array(dtype=wp.mat33)
    contact_frame: wp.array(dtype=wp.mat33)  # rows t1, t2, n; zero for an empty slot
    contact_particle: wp.array(dtype=int)  # per slot (world-major): particle, −1 for an empty slot
    contact_shape: wp.array(dtype=int)  # per slot: static shape
    contact_first: wp.array(dtype=int)  # per (world, particle): its first slot within the world
    contact_num: wp.array(dtype=int)  # per (world, particle): its number of slots
    row_compliance: wp.array(dtype=float)  # scalar-row compliance (all scalar rows)
    pb_frame: wp.array(dtype=wp.mat33)  # particle–body-shape contacts: rows t1, t2, n (zero: off)
    pb_arm: wp.array(dtype=wp.vec3)  # contact point − centre of the shape's body
    pb_mu: wp.array(dtype=wp.vec2)


@wp.struct
class ContactSettings:
    margin: float  # contacts farther than this [m] are skipped
    da_min: float  # floor on ∂φ/∂a
    smoothing: float  # FB smoothing ε [m/s]
    stick_velocity: float  # creep speed below which friction acts as sticking [m/s]
    free_weight: float  # friction weight that switches a row off, relative to the Delassus diagonal


@wp.func
def load6(a: wp.array(dtype=float), base: int) -> vec6:
    return vec6(a[base], a[base + 1], a[base + 2], a[base + 3], a[base + 4], a[base + 5])


@wp.func
def family_row0(m: ModelData, w: int, family: int, k: int) -> int:
    """First row of element k of row family ``family`` in world w (the row-family table)."""
    return w * m.row_count + m.layout.row_start[family] + m.layout.rows_per_element[family] * k


@wp.func
def family_element0(m: ModelData, family: int) -> int:
    """Element number of the first element of ``family`` (incidence codes are 4·element + role)."""
    return m.layout.element_start[family]


@wp.func
def contact_row0(m: ModelData, w: int, k: int) -> int:
    """First row (t1; then t2, n) of particle–shape contact slot k of world w."""
    return family_row0(m, w, CONTACT, k)


@wp.func
def contact_slots_used(m: ModelData, jac: Jacobian, w: int) -> int:
    """How many of world w's particle–shape contact slots this step's list filled: it fills them from the first on, a
    run per particle in particle order (kernels/contact_list.py), so the last particle's run ends at the count."""
    n = m.particle_count
    if m.contact_count == 0 or n == 0:
        return 0
    last = w * n + n - 1
    return jac.contact_first[last] + jac.contact_num[last]


@wp.struct
class BodyData:
    """Rigid bodies, particle–body attachments and joints (one world; replicated by index arithmetic)."""

    body_count: int
    attachment_count: int
    joint_count: int

    body_inv_mass: wp.array(dtype=float)
    body_inertia: wp.array(dtype=wp.mat33)  # body frame [kg m²]
    body_inv_inertia: wp.array(dtype=wp.mat33)
    # rows acting on each body (CSR): code = 4·element + role (0 attachment, 1 joint parent, 2 joint child)
    body_incidence_start: wp.array(dtype=int)
    body_incidence: wp.array(dtype=int)
    # the incidence lists cut into chunks (softsnake/sim/model.py, list_chunk), summed by separate lanes: body
    # i's chunks are [body_chunk_start[i], body_chunk_start[i + 1]); chunk c covers entries [chunk_first[c],
    # chunk_end[c])
    body_chunk_start: wp.array(dtype=int)
    chunk_first: wp.array(dtype=int)
    chunk_end: wp.array(dtype=int)
    chunk_body: wp.array(dtype=int)  # the body whose list chunk c cuts

    attachment_particle: wp.array(dtype=int)
    attachment_body: wp.array(dtype=int)
    attachment_offset: wp.array(dtype=wp.vec3)  # body frame [m]
    attachment_compliance: wp.array(dtype=float)

    joint_type: wp.array(dtype=int)
    joint_parent: wp.array(dtype=int)  # −1: the world
    joint_child: wp.array(dtype=int)
    joint_anchor_parent: wp.array(dtype=wp.vec3)  # parent frame (world frame for the world)
    joint_anchor_child: wp.array(dtype=wp.vec3)  # child frame
    joint_axis_parent: wp.array(dtype=wp.vec3)  # unit, parent frame
    joint_axis_child: wp.array(dtype=wp.vec3)  # unit, child frame
    joint_perp1_parent: wp.array(dtype=wp.vec3)  # unit ⊥ axis, parent frame
    joint_perp2_parent: wp.array(dtype=wp.vec3)
    joint_rest_rotation: wp.array(dtype=wp.quat)  # conj(q_parent)·q_child at build time
    joint_rest_slide: wp.array(dtype=float)  # axis·(anchor_child − anchor_parent) at build time [m]
    joint_compliance: wp.array(dtype=float)  # compliance of the locked rows
    joint_drive_mode: wp.array(dtype=int)  # 0 free, 1 velocity motor, 2 spring
    joint_drive_target: wp.array(dtype=float)  # motor: rate [rad/s or m/s]; spring: rest angle [rad] or slide [m]
    joint_drive_compliance: wp.array(dtype=float)  # spring: 1/K
    joint_drive_damping: wp.array(dtype=float)  # spring: β = damping/K [s]; motor: damping gain d [N m s/rad or N s/m]

    # shapes on bodies (pose in the body frame) and their contact features (body frame)
    body_shape_type: wp.array(dtype=int)
    body_shape_body: wp.array(dtype=int)
    body_shape_pos: wp.array(dtype=wp.vec3)
    body_shape_rot: wp.array(dtype=wp.quat)
    body_shape_params: wp.array(dtype=wp.vec3)
    body_shape_mu: wp.array(dtype=wp.vec2)
    feature_count: int
    target_count: int  # static shapes + body shapes that other bodies collide with
    target_body_shape: wp.array(dtype=int)  # body-shape index of each body target (target t ≥ static shapes)
    particle_target_shape: wp.array(dtype=int)  # body shapes that particles collide with
    body_contact_count: int  # feature_count · target_count slots per world
    feature_body: wp.array(dtype=int)
    feature_shape: wp.array(dtype=int)
    feature_point: wp.array(dtype=wp.vec3)
    feature_axis: wp.array(dtype=wp.vec3)
    feature_radius: wp.array(dtype=float)
    feature_kind: wp.array(dtype=int)  # 0 point (with radius), 1 cylinder cap (deepest rim point per contact)


@wp.struct
class BodyJacobian:
    """Per-step linearisation of attachment, joint and body-contact rows (world-major)."""

    attachment_arm: wp.array(dtype=wp.vec3)  # R·offset (world)
    joint_lin: wp.array(dtype=wp.vec3)  # child linear part per row (parent: negative), 6 per joint
    joint_ang_parent: wp.array(dtype=wp.vec3)
    joint_ang_child: wp.array(dtype=wp.vec3)
    contact_frame: wp.array(dtype=wp.mat33)  # body contacts: rows t1, t2, n (zero: switched off)
    contact_arm_a: wp.array(dtype=wp.vec3)  # contact point − centre of the feature's body
    contact_arm_b: wp.array(dtype=wp.vec3)  # contact point − centre of the target's body
    contact_mu: wp.array(dtype=wp.vec2)
    contact_point: wp.array(dtype=wp.vec4)  # contact point of the feature (body frame) and its radius, fixed per step


@wp.struct
class StepData:
    """The solver's buffers of one step, all worlds (world-major; softsnake/sim/solver.py allocates them): the call's
    state and control, the iterate, the rows, the carried multipliers and per-world diagnostics."""

    worlds: int
    h: float  # time step [s]
    gravity: wp.vec3  # [m/s²]
    max_speed: float  # runaway threshold [m/s] (0: off)
    warm_start: float  # start-value factor of the carried bilateral multipliers
    contact_warm_start: float  # … of the carried contact impulses
    newton_iterations: int
    linear_iterations: int
    linear_tolerance: float  # relative residual at which a world's linear solve stops (0: run the budget)
    newton_tolerance: float  # residual [m/s] below which a world skips its remaining updates (0: off)
    contact: ContactSettings
    # the State and Control of this call
    particle_q: wp.array(dtype=wp.vec3)
    particle_qd: wp.array(dtype=wp.vec3)
    body_q: wp.array(dtype=wp.transform)
    body_qd: wp.array(dtype=wp.spatial_vector)
    particle_f: wp.array(dtype=wp.vec3)
    body_f: wp.array(dtype=wp.spatial_vector)
    distance_scale: wp.array(dtype=float)
    shape_mu: wp.array(dtype=wp.vec2)  # static shapes' friction per world (worlds · shapes)
    # particles: x⁻, v⁻, the iterate v, impulse scratch, the friction impulse carried to the next step
    x_start: wp.array(dtype=wp.vec3)
    v_start: wp.array(dtype=wp.vec3)
    v: wp.array(dtype=wp.vec3)
    impulse: wp.array(dtype=wp.vec3)
    carried_impulse: wp.array(dtype=wp.vec3)
    # rigid bodies: the same, and the world angular momentum of the iterate
    body_x_start: wp.array(dtype=wp.transform)
    body_v_start: wp.array(dtype=wp.spatial_vector)
    body_v: wp.array(dtype=wp.spatial_vector)
    body_impulse: wp.array(dtype=wp.spatial_vector)
    # the world inverse inertia R I⁻¹ Rᵀ at each body's pose of the iterate, which the rows' assembly, gathers and D
    # read; evaluated by the stages that read it (world_rows.py, world_inverse_inertias) after the bodies' velocities
    # last changed
    body_inv_inertia: wp.array(dtype=wp.mat33)
    body_chunk_sum: wp.array(dtype=wp.spatial_vector)  # J_bᵀx per incidence chunk (worlds · chunks; scratch)
    body_momentum: wp.array(dtype=wp.vec3)
    carried_body_impulse: wp.array(dtype=wp.spatial_vector)
    # rows (worlds · rows): multipliers [N s], the Newton update, right-hand side, Schur diagonal, line-search step
    lam: wp.array(dtype=float)
    dlam: wp.array(dtype=float)
    rhs: wp.array(dtype=float)
    diag: wp.array(dtype=float)
    back: wp.array(dtype=float)
    # the previous step's normal impulses (first cone radius) of the three contact families
    contact_lam_n_prev: wp.array(dtype=float)
    body_contact_lam_n_prev: wp.array(dtype=float)
    particle_body_lam_n_prev: wp.array(dtype=float)
    tet_force: wp.array(dtype=wp.vec3)  # J_tᵀλ_t per tet and vertex (primal assembly)
    jac: Jacobian
    bjac: BodyJacobian
    # per world: ‖φ‖² before each Newton iteration and after the last ((newton + 1) · worlds), a scratch merit, the
    # linear solves' squared residuals (newton · (linear + 1) · worlds) and iteration counts (newton · worlds), active
    # contacts (newton · worlds), the line search's decisions, non-finite flags
    residual_sq: wp.array(dtype=float)
    scratch_residual: wp.array(dtype=float)
    linear_rr: wp.array(dtype=float)
    linear_iters: wp.array(dtype=int)
    active_contacts: wp.array(dtype=int)
    line_searches: wp.array(dtype=int)  # (newton + 1) · worlds: 1 where the update before iterate k was halved
    nonfinite: wp.array(dtype=int)
