"""Validation scenes at the real-time budget (h = 1/120 s, 4 Newton × 20 PCR) with their independent references.

Each ``run_*`` function builds a scene through the public API, simulates it with the given solver settings and returns
a dict of measured quantities next to the analytic/independent value they are checked against. The tests
(``tests/test_realtime.py``) and the convergence benchmark (``benchmarks/convergence.py``) use the same functions, so a
number in the docs and an assertion in a test come from one place.
"""

from __future__ import annotations

import numpy as np

from .geometry import box_tet_mesh
from .sim import ModelBuilder, Solver

G = 9.81
#: the paper's real-time budget
REALTIME = dict(dt=1.0 / 120.0, newton_iterations=4, linear_iterations=20)


def incline_gravity(slope: float, g: float = G) -> tuple[float, float, float]:
    """Gravity of an incline with tan θ = slope that descends along +x (the ground stays z-up)."""
    theta = np.arctan(slope)
    return (g * np.sin(theta), 0.0, -g * np.cos(theta))


def soft_cube(b: ModelBuilder, size: float, cells: int, *, youngs: float, density: float = 1000.0, poisson: float = 0.3, z: float = 0.0, vel=(0.0, 0.0, 0.0), damping: float = 0.0) -> np.ndarray:
    """A soft cube of edge ``size`` [m] meshed with cells³ cubes (6 tets each), lower face at height z [m]."""
    mesh = box_tet_mesh((size, size, size), (cells, cells, cells), origin=(-size / 2, -size / 2, z))
    return b.add_soft_mesh(mesh.vertices, mesh.tets, density=density, youngs_modulus=youngs, poisson_ratio=poisson, vel=vel, damping=damping)


def _com(state, model) -> np.ndarray:
    q = state.particle_q.numpy()[: model.particle_count]
    return np.average(q, axis=0, weights=model.particle_mass)


def _com_vel(state, model) -> np.ndarray:
    v = state.particle_qd.numpy()[: model.particle_count]
    return np.average(v, axis=0, weights=model.particle_mass)


def run_incline(slope: float, mu: float, *, seconds: float = 1.0, size: float = 0.03, cells: int = 2, youngs: float = 2.0e5, solver_kwargs=None) -> dict:
    """Soft cube on an incline (tan θ = slope). Reference: sticks iff slope ≤ μ, else a = g(sin θ − μ cos θ)."""
    b = ModelBuilder(gravity=incline_gravity(slope))
    soft_cube(b, size, cells, youngs=youngs)
    b.add_ground_plane(mu=mu)
    model = b.finalize()
    state = model.state()
    solver = Solver(model, **{**REALTIME, **(solver_kwargs or {})})
    n = int(round(seconds / solver.dt))
    x = np.empty(n + 1)
    x[0] = _com(state, model)[0]
    for k in range(n):
        solver.step(state)
        x[k + 1] = _com(state, model)[0]
    t = np.arange(n + 1) * solver.dt
    theta = np.arctan(slope)
    expected = max(G * (np.sin(theta) - mu * np.cos(theta)), 0.0)
    late = t >= 0.3 * seconds
    accel = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    return dict(drift=abs(x[-1] - x[0]), accel=accel, expected_accel=expected, solver=solver)


def run_slide_to_stop(v0: float = 0.5, mu: float = 0.4, *, seconds: float = 0.5, size: float = 0.03, cells: int = 2, youngs: float = 2.0e5, solver_kwargs=None) -> dict:
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
    return dict(distance=_com(state, model)[0] - x0, expected=v0**2 / (2 * mu * G), speed=float(np.linalg.norm(_com_vel(state, model))), solver=solver)


def run_drop(*, seconds: float = 2.0, size: float = 0.06, cells: int = 3, youngs: float = 1.0e5, height: float = 0.05, side_speed: float = 0.3, mu: float = 0.5, solver_kwargs=None) -> dict:
    """Soft cube dropped from ``height`` [m] with a sideways speed onto a frictional ground. Expected: finite, at rest,
    no deep penetration, not tipped over."""
    b = ModelBuilder()
    soft_cube(b, size, cells, youngs=youngs, z=height, vel=(side_speed, 0.0, 0.0))
    b.add_ground_plane(mu=mu)
    model = b.finalize()
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


def run_cantilever(*, seconds: float = 4.0, cells=(30, 3, 3), size=(0.1, 0.01, 0.01), youngs: float = 5.0e6, poisson: float = 0.3, density: float = 1000.0, solver_kwargs=None, record_every: int = 0) -> dict:
    """Beam clamped at x = 0 sagging under its weight; tip deflection [m] and its swing over the last 0.5 s."""
    b = ModelBuilder()
    mesh = cantilever_mesh(cells, size)
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=density, youngs_modulus=youngs, poisson_ratio=poisson)
    b.fix_particles(np.nonzero(mesh.vertices[:, 0] < 1e-9)[0])
    model = b.finalize()
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
    return dict(tip=last[-1], swing=float(last.max() - last.min()), history=np.asarray(history), solver=solver, state=state, model=model)


def run_box_stack(*, seconds: float = 10.0, count: int = 3, offset: float = 0.003, half: float = 0.05, mu: float = 0.6, solver_kwargs=None) -> dict:
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
    return dict(q=q, sink=float(-lowest.min()), height_error=float(np.abs(q[:, 2] - rest).max()), shift=float(np.abs(np.diff(q[:, 0])).max()), speed=float(np.abs(state.body_qd.numpy()).max()), solver=solver)
