"""Warp structs that carry the model and the per-iteration linearisation into kernels."""

import warp as wp

from .types import vec6


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
    particle_body_element_start: int  # first particle–body-shape contact element (after attachments, joints, body contacts)
    particle_body_row_start: int  # its first row in a world
    particle_body_count: int  # particle–body-shape slots per world (particles · body shapes)

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
def contact_row0(m: ModelData, w: int, k: int) -> int:
    """First row (t1; then t2, n) of contact slot k of world w: the slots follow the distance and tet rows, and slot
    m.contact_count is where the attachment rows begin."""
    return w * m.row_count + m.distance_count + 6 * m.tet_count + 3 * k


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
