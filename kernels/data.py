"""Warp structs that carry the model and the per-iteration linearisation into kernels."""

import warp as wp

from .types import vec6


@wp.struct
class ModelData:
    particle_count: int
    distance_count: int
    tet_count: int
    shape_count: int
    contact_count: int  # particle_count · shape_count slots per world
    row_count: int  # rows per world
    element_count: int  # elements per world

    particle_inv_mass: wp.array(dtype=float)
    particle_radius: wp.array(dtype=float)
    # rows acting on each particle (CSR): code = 4·element + local vertex, elements numbered [distance | tet | contact]
    particle_incidence_start: wp.array(dtype=int)
    particle_incidence: wp.array(dtype=int)

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
    """Per-iteration linearisation (world-major, one entry per element)."""

    distance_dir: wp.array(dtype=wp.vec3)
    tet_rotation: wp.array(dtype=wp.mat33)
    contact_frame: wp.array(dtype=wp.mat33)  # rows t1, t2, n; zero for far contacts
    row_compliance: wp.array(dtype=float)  # scalar-row compliance (distance and contact rows)


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
