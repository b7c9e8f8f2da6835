"""First-order implicit time stepping of particles (docs/formulation.md): prediction, impulse application,
finalisation. Functions of one particle ``tid`` (world-major: tid = w·particles + i), called by the stage kernels."""

import warp as wp

# forward kernels only: the solver is not differentiated (no adjoint code, half the compile time)
wp.set_module_options({"enable_backward": False})


@wp.func
def predict_particle(
    tid: int,
    particles_per_world: int,
    inv_mass: wp.array(dtype=float),
    gravity: wp.vec3,
    h: float,
    q: wp.array(dtype=wp.vec3),
    qd: wp.array(dtype=wp.vec3),
    force: wp.array(dtype=wp.vec3),
    x_start: wp.array(dtype=wp.vec3),
    v_start: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
):
    """ṽ = v⁻ + h·(g + M⁻¹ f_ext) [m/s]; kinematic particles (inverse mass 0) keep their prescribed velocity."""
    i = tid % particles_per_world
    x_start[tid] = q[tid]
    v0 = qd[tid]
    v_start[tid] = v0
    wi = inv_mass[i]
    if wi > 0.0:
        v0 = v0 + (gravity + force[tid] * wi) * h
    v[tid] = v0


@wp.func
def apply_particle_impulse(
    tid: int,
    particles_per_world: int,
    inv_mass: wp.array(dtype=float),
    impulse: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
):
    """v += M⁻¹ · impulse."""
    v[tid] = v[tid] + impulse[tid] * inv_mass[tid % particles_per_world]


@wp.func
def start_multiplier(
    lam: wp.array(dtype=float), i: int, is_contact: bool, warm_start: float, contact_warm_start: float
):
    """Scale the previous step's multiplier of row i into its start value: bilateral rows by warm_start, contact rows
    by contact_warm_start (0 restarts contacts from the FB corner)."""
    if is_contact:
        lam[i] = lam[i] * contact_warm_start
    else:
        lam[i] = lam[i] * warm_start


@wp.func
def finalize_particle(
    tid: int,
    particles_per_world: int,
    h: float,
    max_speed: float,
    x_start: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    q: wp.array(dtype=wp.vec3),
    qd: wp.array(dtype=wp.vec3),
    nonfinite: wp.array(dtype=int),
):
    """x⁺ = x⁻ + h v⁺; flags worlds whose state became non-finite or ran away (speed above max_speed [m/s], 0: off),
    which catches a blow-up while its values are still finite."""
    vi = v[tid]
    xi = x_start[tid] + vi * h
    q[tid] = xi
    qd[tid] = vi
    if not (wp.isfinite(xi) and wp.isfinite(vi)) or (max_speed > 0.0 and wp.length(vi) > max_speed):
        nonfinite[tid // particles_per_world] = 1


@wp.kernel
def restore_particles(
    # Model:
    particles_per_world: int,
    # In:
    all_worlds: int,
    nonfinite: wp.array(dtype=int),
    x_start: wp.array(dtype=wp.vec3),
    v_start: wp.array(dtype=wp.vec3),
    # Out:
    q: wp.array(dtype=wp.vec3),
    qd: wp.array(dtype=wp.vec3),
):
    """Undo a rejected step: every world (all_worlds = 1) or only the flagged ones."""
    tid = wp.tid()
    if all_worlds != 0 or nonfinite[tid // particles_per_world] != 0:
        q[tid] = x_start[tid]
        qd[tid] = v_start[tid]


@wp.kernel
def reset_multipliers(
    # Model:
    rows_per_world: int,
    # In:
    all_worlds: int,
    nonfinite: wp.array(dtype=int),
    # In/out:
    lam: wp.array(dtype=float),
):
    """Zero the carried multipliers of every world (all_worlds = 1) or only of the rejected ones."""
    i = wp.tid()
    if all_worlds != 0 or nonfinite[i // rows_per_world] != 0:
        lam[i] = 0.0
