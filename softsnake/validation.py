"""Validation scenes at the real-time budget (h = 1/120 s, 4 Newton × 20 PCR) with their independent references.

Each ``run_*`` function builds a scene through the public API, simulates it with the given solver settings and returns
a dict of measured quantities next to the analytic/independent value they are checked against; the ``*_model``
functions build the scenes alone and the ``implicit_euler_*`` functions are discrete references (what implicit Euler at
step h gives, where that differs from the continuous formula). The tests (``tests/test_realtime.py`` and others), the
convergence benchmark (``benchmarks/convergence.py``) and the comparison with Newton's VBD
(``benchmarks/compare_newton.py``) use the same functions, so a number in the docs and an assertion in a test come from
one place.
"""

from __future__ import annotations

import time

import numpy as np
import warp as wp

from .geometry import box_tet_mesh
from .sim import ModelBuilder, Solver

G = 9.81
#: the paper's real-time budget
REALTIME = dict(dt=1.0 / 120.0, newton_iterations=4, linear_iterations=20)


def incline_gravity(slope: float, g: float = G) -> tuple[float, float, float]:
    """Gravity of an incline with tan θ = slope that descends along +x (the ground stays z-up)."""
    theta = np.arctan(slope)
    return (g * np.sin(theta), 0.0, -g * np.cos(theta))


def soft_cube(
    b: ModelBuilder,
    size: float,
    cells: int,
    *,
    youngs: float,
    density: float = 1000.0,
    poisson: float = 0.3,
    z: float = 0.0,
    vel=(0.0, 0.0, 0.0),
    damping: float = 0.0,
) -> np.ndarray:
    """A soft cube of edge ``size`` [m] meshed with cells³ cubes (6 tets each), lower face at height z [m]."""
    mesh = box_tet_mesh((size, size, size), (cells, cells, cells), origin=(-size / 2, -size / 2, z))
    return b.add_soft_mesh(
        mesh.vertices,
        mesh.tets,
        density=density,
        youngs_modulus=youngs,
        poisson_ratio=poisson,
        vel=vel,
        damping=damping,
    )


def _com(state, model) -> np.ndarray:
    q = state.particle_q.numpy()[: model.particle_count]
    return np.average(q, axis=0, weights=model.particle_mass)


def _com_vel(state, model) -> np.ndarray:
    v = state.particle_qd.numpy()[: model.particle_count]
    return np.average(v, axis=0, weights=model.particle_mass)


def incline_model(slope: float, mu, *, size: float = 0.03, cells: int = 2, youngs: float = 2.0e5):
    """The incline scene's model: a soft cube of edge ``size`` [m] resting on ground of friction ``mu`` under the
    gravity of an incline with tan θ = slope."""
    b = ModelBuilder(gravity=incline_gravity(slope))
    soft_cube(b, size, cells, youngs=youngs)
    b.add_ground_plane(mu=mu)
    return b.finalize()


def coulomb_incline_acceleration(slope: float, mu: float, g: float = G) -> float:
    """Coulomb's law on an incline with tan θ = slope: a = g(sin θ − μ cos θ) when sliding, 0 when it sticks [m/s²]."""
    theta = np.arctan(slope)
    return max(g * (np.sin(theta) - mu * np.cos(theta)), 0.0)


def fitted_acceleration(t: np.ndarray, x: np.ndarray, start: float) -> float:
    """Acceleration [m/s²] of a parabola fitted to x(t) for t ≥ start (after the contact has settled)."""
    late = t >= start
    return float(2.0 * np.polyfit(t[late], x[late], 2)[0])


def run_incline(
    slope: float,
    mu: float,
    *,
    seconds: float = 1.0,
    size: float = 0.03,
    cells: int = 2,
    youngs: float = 2.0e5,
    solver_kwargs=None,
) -> dict:
    """Soft cube on an incline (tan θ = slope). Reference: sticks iff slope ≤ μ, else a = g(sin θ − μ cos θ)."""
    model = incline_model(slope, mu, size=size, cells=cells, youngs=youngs)
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    n = int(round(seconds / solver.dt))
    x = np.empty(n + 1)
    x[0] = _com(state, model)[0]
    for k in range(n):
        solver.step(state)
        x[k + 1] = _com(state, model)[0]
    t = np.arange(n + 1) * solver.dt
    accel = fitted_acceleration(t, x, 0.3 * seconds)
    return dict(
        drift=abs(x[-1] - x[0]),
        accel=accel,
        expected_accel=coulomb_incline_acceleration(slope, mu),
        x=x,
        t=t,
        solver=solver,
    )


def run_slide_to_stop(
    v0: float = 0.5,
    mu: float = 0.4,
    *,
    seconds: float = 0.5,
    size: float = 0.03,
    cells: int = 2,
    youngs: float = 2.0e5,
    solver_kwargs=None,
) -> dict:
    """Soft cube launched along the ground at v0 [m/s]. Reference: it stops after v0²/(2μg)."""
    b = ModelBuilder()
    soft_cube(b, size, cells, youngs=youngs, vel=(v0, 0.0, 0.0))
    b.add_ground_plane(mu=mu)
    model = b.finalize()
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    x0 = _com(state, model)[0]
    for _ in range(int(round(seconds / solver.dt))):
        solver.step(state)
    return dict(
        distance=_com(state, model)[0] - x0,
        expected=v0**2 / (2 * mu * G),
        speed=float(np.linalg.norm(_com_vel(state, model))),
        solver=solver,
    )


def implicit_euler_stop_distance(v0: float, mu: float, h: float, g: float = G) -> float:
    """Distance [m] a block launched at v0 [m/s] slides on ground of friction μ under implicit Euler with step h: the
    velocity after step k is max(v0 − kμgh, 0) and each step moves h times it, x = h Σ_k max(v0 − kμgh, 0) (the
    discrete counterpart of v0²/(2μg), shorter by about v0·h/2)."""
    k = np.arange(1, int(np.ceil(v0 / (mu * g * h))) + 1)
    return float(h * np.maximum(v0 - k * mu * g * h, 0.0).sum())


def implicit_euler_thrown_block(pos, vel, mu, *, h: float, seconds: float, g: float = G) -> np.ndarray:
    """Trajectory (steps + 1, 3) [m] of a rigid block's lowest point thrown at ``vel`` [m/s] from ``pos`` [m] onto z = 0
    ground, as implicit Euler steps a point mass with an inelastic, frictional contact: each step the normal impulse
    keeps z ≥ 0 and the friction impulse is Coulomb's maximal-dissipation one for the elliptic cone
    |(λ1/μ1, λ2/μ2)| ≤ λ_n (x and y the cone's axes), evaluated at the end-of-step velocity: it sticks when stopping it
    needs no more than the cone holds, else u'_k = u_k / (1 + λ_n μ_k²/q) with q = √(μ1²u'1² + μ2²u'2²) (per unit
    mass). The Coulomb impact prediction for a block that neither bounces nor tips."""
    mu1, mu2 = (float(mu), float(mu)) if np.ndim(mu) == 0 else map(float, mu)
    x, v = np.array(pos, dtype=np.float64), np.array(vel, dtype=np.float64)
    path = [x.copy()]
    for _ in range(int(round(seconds / h))):
        v[2] -= g * h
        normal = 0.0
        if x[2] + h * v[2] < 0.0:
            normal = -x[2] / h - v[2]  # normal impulse per unit mass that lands the block on z = 0
            v[2] = -x[2] / h
        u = v[:2].copy()
        if normal > 0.0 and np.any(u != 0.0):
            if np.hypot(u[0] / mu1, u[1] / mu2) <= normal:
                u[:] = 0.0
            else:
                m2 = np.array([mu1 * mu1, mu2 * mu2])

                def slip(q, u=u, m2=m2, normal=normal):  # the weighted slip of the end velocity u/(1 + λ_n μ²/q), − q
                    return float(np.sqrt((m2 * (u / (1.0 + normal * m2 / q)) ** 2).sum())) - q

                lo, hi = 1e-300, float(np.sqrt((m2 * u * u).sum()))
                for _ in range(200):  # bisection: slip(q) > 0 below the root, < 0 above it
                    mid = 0.5 * (lo + hi)
                    lo, hi = (mid, hi) if slip(mid) > 0.0 else (lo, mid)
                u = u / (1.0 + normal * m2 / hi)
        v[:2] = u
        x += h * v
        path.append(x.copy())
    return np.asarray(path)


def implicit_euler_pendulum(pivot, pos, vel, *, h: float, steps: int, gravity=(0.0, 0.0, -G)) -> np.ndarray:
    """Positions (steps + 1, 3) [m] of a point pendulum on a rigid rod, stepped by implicit Euler with the rod's
    length held at the end of each step: x' = x + h v + h² g + h² (λ/m) n(x') with n(x') along x' − pivot, so x' is
    x + h v + h² g projected radially onto the sphere |x' − pivot| = |x − pivot|, and v' = (x' − x)/h. Its numerical
    damping takes (ωh)²/2 of the amplitude per step for small swings (ω² = g/L)."""
    pivot = np.asarray(pivot, dtype=np.float64)
    x, v = np.array(pos, dtype=np.float64), np.array(vel, dtype=np.float64)
    g = np.asarray(gravity, dtype=np.float64)
    length = np.linalg.norm(x - pivot)
    path = [x.copy()]
    for _ in range(steps):
        y = x + h * v + h * h * g - pivot
        new = pivot + length * y / np.linalg.norm(y)
        v = (new - x) / h
        x = new
        path.append(x.copy())
    return np.asarray(path)


def drop_model(
    *,
    size: float = 0.06,
    cells: int = 3,
    youngs: float = 1.0e5,
    height: float = 0.05,
    side_speed: float = 0.3,
    mu: float = 0.5,
):
    """The drop scene's model: a soft cube with its lower face ``height`` [m] above ground of friction ``mu``, thrown
    sideways at ``side_speed`` [m/s]."""
    b = ModelBuilder()
    soft_cube(b, size, cells, youngs=youngs, z=height, vel=(side_speed, 0.0, 0.0))
    b.add_ground_plane(mu=mu)
    return b.finalize()


def run_drop(
    *,
    seconds: float = 2.0,
    size: float = 0.06,
    cells: int = 3,
    youngs: float = 1.0e5,
    height: float = 0.05,
    side_speed: float = 0.3,
    mu: float = 0.5,
    solver_kwargs=None,
) -> dict:
    """Soft cube dropped from ``height`` [m] with a sideways speed onto a frictional ground. Expected: finite, at rest,
    no deep penetration, not tipped over."""
    model = drop_model(size=size, cells=cells, youngs=youngs, height=height, side_speed=side_speed, mu=mu)
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    deepest = 0.0
    for _ in range(int(round(seconds / solver.dt))):
        solver.step(state)
        deepest = max(deepest, -float(state.particle_q.numpy()[:, 2].min()))
    q = state.particle_q.numpy()
    v = state.particle_qd.numpy()
    return dict(
        penetration=deepest,
        max_speed=float(np.abs(v).max()),
        height=float(q[:, 2].max() - q[:, 2].min()),  # a cube that tipped onto an edge stands taller than its size
        finite=bool(np.isfinite(q).all() and np.isfinite(v).all()),
        solver=solver,
    )


def self_weight_sink(height: float, youngs: float, density: float, g: float = G) -> float:
    """ρgH²/(2E) [m]: how far the top of a column of height H [m] with Poisson's ratio 0 sinks under its own weight
    (∫₀^H ρg(H − z)/E dz); Young's modulus E [Pa], density ρ [kg/m³], gravity g [m/s²]."""
    return density * g * height**2 / (2.0 * youngs)


def column_model(
    cells=(60, 12, 12), size=(0.3, 0.06, 0.06), *, youngs: float = 1.0e5, density: float = 1070.0, device: str = "cpu"
):
    """A large world with an exact static solution: a block of ``cells`` cubes (6 tets each; default 51,840 tets,
    10,309 particles) of ``size`` [m] with Poisson's ratio 0, standing on the ground (μ = 1). Under its own weight it
    is in uniaxial stress σ_zz = −ρg(H − z) with no lateral strain, so its base stays flat and the friction carries
    nothing, and its top sinks by ``self_weight_sink``. Built on ``device``."""
    b = ModelBuilder()
    mesh = box_tet_mesh(size, cells, origin=(-size[0] / 2, -size[1] / 2, 0.0))
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=density, youngs_modulus=youngs, poisson_ratio=0.0, damping=0.002)
    b.add_ground_plane(mu=1.0)
    return b.finalize(device=device)


def run_column(
    *,
    steps: int = 40,
    cells=(60, 12, 12),
    size=(0.3, 0.06, 0.06),
    youngs: float = 1.0e5,
    density: float = 1070.0,
    device: str = "cpu",
    solver_kwargs=None,
) -> dict:
    """``column_model`` settling from rest for ``steps`` steps. Reference: its top sinks by ρgH²/(2E), the top stays
    level and nothing moves sideways. Returns the sink's relative error after each step (the top's mean, in float64:
    float32 means over ~800 nodes err by ~0.1 µm), the top's spread and the largest sideways displacement at the end
    (fractions of the exact sink), and the seconds of each step (synchronised with the device)."""
    model = column_model(cells, size, youngs=youngs, density=density, device=device)
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    rest = state.particle_q.numpy().astype(np.float64)
    top = np.isclose(rest[:, 2], rest[:, 2].max())
    exact = self_weight_sink(float(np.ptp(rest[:, 2])), youngs, density)
    error, seconds = [], []
    for _ in range(steps):
        wp.synchronize_device(model.device)
        t0 = time.perf_counter()
        solver.step(state)
        wp.synchronize_device(model.device)
        seconds.append(time.perf_counter() - t0)
        q = state.particle_q.numpy().astype(np.float64)
        error.append((rest[top, 2].mean() - q[top, 2].mean()) / exact - 1.0)
    moved = q - rest
    return dict(
        tets=model.tet_count,
        particles=model.particle_count,
        exact_sink=exact,
        sink_error=np.asarray(error),
        top_spread=float(np.ptp(moved[top, 2])) / exact,
        sideways=float(np.abs(moved[:, :2]).max()) / exact,
        seconds=np.asarray(seconds),
    )


def cantilever_mesh(cells=(30, 3, 3), size=(0.1, 0.01, 0.01)):
    return box_tet_mesh(size, cells)


def cantilever_reference(cells=(30, 3, 3), size=(0.1, 0.01, 0.01), youngs=5.0e6, poisson=0.3, density=1000.0) -> float:
    """Tip deflection [m] of the clamped beam from an independent sparse linear-FEM solve of the same mesh (scipy)."""
    from .reference_fem import linear_fem_displacement

    mesh = cantilever_mesh(cells, size)
    clamp = np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]
    tip = np.nonzero(mesh.vertices[:, 0] > size[0] - 1e-9)[0]
    u = linear_fem_displacement(mesh.vertices, mesh.tets, youngs, poisson, density, (0.0, 0.0, -G), clamp)
    return float(-u[tip, 2].mean())


def cantilever_model(
    *,
    cells=(30, 3, 3),
    size=(0.1, 0.01, 0.01),
    youngs: float = 5.0e6,
    poisson: float = 0.3,
    density: float = 1000.0,
    gravity=(0.0, 0.0, -G),
):
    """The clamped beam: ``cantilever_mesh`` with the x = 0 face fixed; returns (model, mesh)."""
    b = ModelBuilder(gravity=gravity)
    mesh = cantilever_mesh(cells, size)
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=density, youngs_modulus=youngs, poisson_ratio=poisson)
    b.fix_particles(np.nonzero(mesh.vertices[:, 0] < 1e-9)[0])
    return b.finalize(), mesh


def run_cantilever(
    *,
    seconds: float = 4.0,
    cells=(30, 3, 3),
    size=(0.1, 0.01, 0.01),
    youngs: float = 5.0e6,
    poisson: float = 0.3,
    density: float = 1000.0,
    solver_kwargs=None,
    record_every: int = 0,
) -> dict:
    """Beam clamped at x = 0 sagging under its weight; tip deflection [m] and its swing over the last 0.5 s."""
    model, mesh = cantilever_model(cells=cells, size=size, youngs=youngs, poisson=poisson, density=density)
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    tip = np.nonzero(mesh.vertices[:, 0] > size[0] - 1e-9)[0]
    n = int(round(seconds / solver.dt))
    tail = max(1, int(round(0.5 / solver.dt)))
    history = []
    for k in range(n):
        solver.step(state)
        if k >= n - tail or (record_every and k % record_every == 0):
            history.append(float(mesh.vertices[tip, 2].mean() - state.particle_q.numpy()[tip, 2].mean()))
    last = np.asarray(history[-tail:])
    return dict(
        tip=last[-1],
        swing=float(last.max() - last.min()),
        history=np.asarray(history),
        solver=solver,
        state=state,
        model=model,
    )


def run_box_stack(
    *,
    seconds: float = 10.0,
    count: int = 3,
    offset: float = 0.003,
    half: float = 0.05,
    mu: float = 0.6,
    solver_kwargs=None,
) -> dict:
    """Rigid boxes stacked with a sideways offset per level; they must stay stacked (a static problem)."""
    b = ModelBuilder()
    for k in range(count):
        body = b.add_body((offset * k, 0.0, half + 2 * half * k + 0.001 * k))
        b.add_shape_box(body, (half, half, half), mu=mu, density=500.0)
    b.add_ground_plane(mu=mu)
    model = b.finalize()
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    lowest = np.full(count, np.inf)
    rest = half + 2 * half * np.arange(count)
    for _ in range(int(round(seconds / solver.dt))):
        solver.step(state)
        lowest = np.minimum(lowest, state.body_q.numpy()[:, 2] - rest)
    q = state.body_q.numpy()
    return dict(
        q=q,
        sink=float(-lowest.min()),
        height_error=float(np.abs(q[:, 2] - rest).max()),
        shift=float(np.abs(np.diff(q[:, 0])).max()),
        speed=float(np.abs(state.body_qd.numpy()).max()),
        solver=solver,
    )


def run_held_link(config, pressure_psi, *, seconds: float = 1.5, ramp: float = 0.5, solver_kwargs=None) -> dict:
    """One snake link exactly as ``robots.snake.build_snake`` builds it (mesh, hollow-section material, hard layer and
    perimeter rows, actuation rows, the end sections' rows left out), held as the static references
    ``reference_link.held_link_static`` (exact) and ``reference_fem.link_static_curvature`` (linearised) hold it: no
    gravity, no ground, no wheels, the first cross-section fixed and the last one attached to a free rigid body (the
    carriage's mass and inertia). One world per pressure [psi, ≥ 0]:
    chamber 0 is pressurised (its actuation rows at ε = 1 + p/Y, ramped over ``ramp`` s), chamber 1 vented (rows off).
    Returns the curvature [1/m] (yaw of the last section / link length, as ``SnakeSim.curvatures``) at every step."""
    from .kernels.schur import DISTANCE_OFF
    from .robots.snake import actuation_compliance, link_material
    from .robots.snake_link import link_mesh

    c = config
    psi = np.atleast_1d(np.asarray(pressure_psi, dtype=np.float64))
    if np.any(psi < 0):
        raise ValueError("run_held_link: pressures must be ≥ 0 psi (chamber 0 pressurised)")
    mesh = link_mesh(c.link_length, c.link_radius, c.sections, c.inner_ring)
    youngs, density = link_material(c)
    b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
    ids = b.add_soft_mesh(
        mesh.vertices,
        mesh.tets,
        density=density,
        youngs_modulus=youngs,
        poisson_ratio=c.poisson_ratio,
        damping=c.material_damping,
    )
    last = int(mesh.section.max())
    chamber = []
    for a, d in mesh.hard_pairs():  # as build_snake: the end sections are held rigid by the clamp and the body
        b.add_distance(int(ids[a]), int(ids[d]), compliance=0.0)
        chamber.append(-1)
    for (a, d), ch in zip(mesh.actuation_pairs, mesh.actuation_chamber):
        b.add_distance(int(ids[a]), int(ids[d]), compliance=actuation_compliance(c, mesh))
        chamber.append(int(ch))
    b.fix_particles(ids[mesh.section == 0])
    half = np.array([c.carriage_length, c.carriage_width, c.carriage_height]) / 2
    inertia = (
        c.carriage_mass
        / 3.0
        * np.array([half[1] ** 2 + half[2] ** 2, half[0] ** 2 + half[2] ** 2, half[0] ** 2 + half[1] ** 2])
    )
    end = b.add_body((c.link_length + c.carriage_length / 2, 0.0, 0.0), mass=c.carriage_mass, inertia=inertia)
    for v in np.nonzero(mesh.section == last)[0]:
        b.add_attachment(int(ids[v]), end)
    worlds = psi.size
    model = b.finalize(worlds=worlds)
    state, control = model.state(), model.control()
    kw = dict(solver_kwargs or {})
    solver = Solver(model, dt=kw.pop("dt", c.h), config=c.solver, **kw)  # the snake's solver settings
    chamber = np.asarray(chamber)
    off = np.where(chamber == 1, float(DISTANCE_OFF), 1.0)
    steps = int(round(seconds / solver.dt))
    kappa = np.empty((steps, worlds))
    for k in range(steps):
        strain = psi * 6894.757 / c.youngs_modulus * min(1.0, (k + 1) * solver.dt / ramp)  # ε − 1 = p/Y (Eq. 4)
        scale = np.where(chamber[None, :] == 0, 1.0 + strain[:, None], off[None, :])
        control.distance_rest_scale.assign(scale.astype(np.float32).ravel())
        solver.step(state, control)
        q = state.body_q.numpy().reshape(worlds, -1, 7)[:, end, 3:].astype(np.float64)
        x, y, z, w = q.T
        kappa[k] = np.arctan2(2 * (x * y + z * w), 1 - 2 * (y * y + z * z)) / c.link_length  # yaw of the body's x axis
    return dict(curvature=kappa, t=(np.arange(steps) + 1) * solver.dt, solver=solver, model=model, state=state)
