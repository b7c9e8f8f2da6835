"""Issue 3 (part 2): contact of rigid-body shapes with the ground, static shapes and other bodies."""

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE, tilted_gravity

S = np.sqrt(0.5)


def test_mass_properties_from_shapes():
    b = ss.ModelBuilder()
    body = b.add_body((0.0, 0.0, 0.0))
    b.add_shape_box(body, (0.1, 0.2, 0.3), density=500.0)
    b.add_shape_sphere(body, 0.05, pos=(0.0, 0.0, 0.4), density=1000.0)
    masses, inertias = b.resolved_body_mass_properties()
    mb = 500.0 * 8 * 0.1 * 0.2 * 0.3
    ms = 1000.0 * 4 / 3 * np.pi * 0.05**3
    assert masses[0] == pytest.approx(mb + ms)
    Izz = mb / 3 * (0.1**2 + 0.2**2) + 0.4 * ms * 0.05**2
    Ixx = mb / 3 * (0.2**2 + 0.3**2) + 0.4 * ms * 0.05**2 + ms * 0.4**2  # parallel-axis theorem
    assert np.diag(inertias[0]) == pytest.approx(
        [Ixx, mb / 3 * (0.1**2 + 0.3**2) + 0.4 * ms * 0.05**2 + ms * 0.4**2, Izz]
    )


def rolling_wheel(gravity, mu_wheel, seconds=1.0, hh=0.02, rim_contact=True):
    """A solid cylinder (r = 5 cm, axis along world −y) on μ = 1 ground at the budget; its poses and twists per step."""
    b = ss.ModelBuilder(gravity=gravity)
    r = 0.05
    wheel = b.add_body((0.0, 0.0, r), rot=(S, 0.0, 0.0, S))  # cylinder axis (local z) along world −y
    b.add_shape_cylinder(wheel, r, hh, mu=mu_wheel, density=500.0, rim_contact=rim_contact)
    b.add_ground_plane(mu=1.0)
    model = b.finalize(device=TEST_DEVICE)
    assert model.feature_count == (18 if rim_contact else 2)  # each cap rim's deepest point (+ 16 rim samples)
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    n = int(round(seconds / solver.dt))
    xs, vs = np.empty((n, 7)), np.empty((n, 6))
    for k in range(n):
        solver.step(state)
        xs[k], vs[k] = state.body_q.numpy()[0], state.body_qd.numpy()[0]
    return xs, vs


def implicit_euler_from_rest(a, n, h=1.0 / 120.0):
    """Velocity and displacement after steps 1..n of implicit Euler under a constant acceleration a: v = k·h·a,
    x = h²·a·k(k+1)/2."""
    k = np.arange(1, n + 1)
    return k * h * a, h * h * a * k * (k + 1) / 2


def test_cylinder_rolls_down_incline_without_slipping():
    # rolling without slip, a = g sin θ / (1 + I/(m r²)), I/(m r²) = 1/2; implicit Euler from rest. Measured at the
    # budget after 1 s: v +1.6e-6 and x +2.7e-6 relative, ω·r −3.8e-6 relative to v, slip ≤ 3.3e-5 m/s (first steps),
    # axis height 2.2e-7 m off
    theta, r = 0.3, 0.05
    xs, vs = rolling_wheel(tilted_gravity(theta, "x"), 1.0)
    v, x = implicit_euler_from_rest(9.81 * np.sin(theta) / 1.5, len(xs))
    assert vs[-1, 0] == pytest.approx(v[-1], rel=4.7e-6)
    assert xs[-1, 0] == pytest.approx(x[-1], rel=8.2e-6)
    assert vs[-1, 4] * r == pytest.approx(v[-1], rel=1.1e-5)  # ω about y: rolling along +x
    assert np.abs(vs[:, 0] - vs[:, 4] * r).max() < 1e-4  # the contact point does not slip
    assert np.abs(xs[:, 2] - r).max() < 6.7e-7  # stays on the ground


def test_upright_wheel_without_rim_samples_rolls_the_same():
    """The rim samples act only against a surface within 45° of facing a cap: leaving them out of a wheel that rolls
    down the incline (rim_contact=False, 16 contact slots fewer) changes no bit of its motion."""
    gravity = tilted_gravity(0.3, "x")
    for a, b in zip(rolling_wheel(gravity, 1.0, 0.25), rolling_wheel(gravity, 1.0, 0.25, rim_contact=False)):
        assert np.array_equal(a, b)
    builder = ss.ModelBuilder()
    with pytest.raises(ValueError, match="on a body"):
        builder.add_shape_cylinder(-1, 0.05, 0.02, rim_contact=False)
    with pytest.raises(ValueError, match="true or false"):
        builder.add_shape_cylinder(builder.add_body((0.0, 0.0, 0.1)), 0.05, 0.02, rim_contact="no")


# tan θ = 0.31: above the pair's μ = √0.05 = 0.22 in the weak direction, below 1 in the strong one; the wheel is wide
# (half width 0.06 m for radius 0.05 m) so that it cannot tip over (that needs tan θ > 1.2)
SIDE_SLOPE = 0.3


def test_anisotropic_wheel_holds_on_a_sideways_incline():
    xs, _ = rolling_wheel(tilted_gravity(SIDE_SLOPE, "y"), (1.0, 0.05), hh=0.06)
    assert np.abs(xs[-1, 1] - xs[0, 1]) < 9.3e-5  # no sideways slide along the wheel axis: measured 31 µm of creep
    assert np.abs(xs[-1, 2] - 0.05) < 4.7e-8  # still standing on its rim: measured 1.6e-8 m


def test_anisotropic_wheel_slides_when_axial_friction_is_low():
    # low friction along the axis: it slides down the slope as Coulomb's law with the pair's μ = √(0.05·1) predicts,
    # stepped by implicit Euler from rest; measured over 1 s: 408.9 mm against 405.1 (+0.95 %: the fitted
    # acceleration after 0.25 s is Coulomb's to 1e-6, the excess comes from the first steps, while the contact loads up)
    xs, _ = rolling_wheel(tilted_gravity(SIDE_SLOPE, "y"), (0.05, 1.0), hh=0.06)
    _, x = implicit_euler_from_rest(9.81 * (np.sin(SIDE_SLOPE) - np.sqrt(0.05) * np.cos(SIDE_SLOPE)), len(xs))
    print(f"\nslide {xs[-1, 1]:.6f} m, implicit Euler {x[-1]:.6f} m")
    assert xs[-1, 1] == pytest.approx(x[-1], rel=2.9e-2)


def test_cart_on_damped_wheels_coasts_down_at_the_analytic_rate():
    """A four-wheel cart (the snake's carriage wheels: r = 30 mm, 30 g, bearing loss c = 3e-5 N m s/rad) pushed to
    0.1 m/s on flat ground, μ = 1, at the real-time budget: rolling without slip, the hinges' torque c·ω = c·v/r per
    wheel gives M_eff·dv/dt = −4c·v/r², so v decays as exp(−t/τ) with τ = M_eff·r²/(4c), M_eff the mass plus each
    wheel's I/r². The snake's steady gait speed is the balance of a small net thrust against this loss
    (docs/snake.md), so the loss must come out right at the budget."""
    r, c, v0 = 0.03, 3.0e-5, 0.1
    b = ss.ModelBuilder()
    cart = b.add_body((0.0, 0.0, r), vel=(v0, 0.0, 0.0))
    b.add_shape_box(cart, (0.06, 0.03, 0.01), density=2000.0)
    wheels = []
    for x, y in ((-0.05, -0.05), (-0.05, 0.05), (0.05, -0.05), (0.05, 0.05)):
        w = b.add_body((x, y, r), rot=(S, 0.0, 0.0, S), vel=(v0, 0.0, 0.0), ang_vel=(0.0, v0 / r, 0.0))  # rolling
        b.add_shape_cylinder(
            w, r, 0.005, mu=1.0, density=0.03 / (np.pi * r * r * 0.01), body_contact=False, particle_contact=False
        )
        b.add_joint_revolute(cart, w, (x, y, r), (0.0, 1.0, 0.0), target_velocity=0.0, damping=c)
        wheels.append(w)
    b.add_ground_plane(mu=1.0)
    masses, inertias = b.resolved_body_mass_properties()
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # defaults: h = 1/120 s, 4 Newton × 20
    t = np.arange(1, 361) * solver.dt  # 3 s
    v = np.empty(len(t))
    for k in range(len(t)):
        solver.step(state)
        v[k] = state.body_qd.numpy()[0][0]
    tau = (float(np.sum(masses)) + sum(np.asarray(inertias[w])[2, 2] for w in wheels) / r**2) * r**2 / (4 * c)
    late = t > 0.2
    fitted = -1.0 / np.polyfit(t[late], np.log(v[late]), 1)[0]
    # implicit Euler decays as v0 (1 + h/τ)^−n: a fitted time constant h / ln(1 + h/τ), 0.12 % above τ = 3.51 s
    # (the continuous exp(−t/τ) differs by the step's own error). Measured: fitted +8.4e-6, final speed +2.6e-5
    discrete = solver.dt / np.log1p(solver.dt / tau)
    assert fitted == pytest.approx(discrete, rel=2.5e-5)
    assert v[-1] == pytest.approx(v0 * (1.0 + solver.dt / tau) ** -len(t), rel=7.8e-5)
    assert np.abs(state.body_q.numpy()[:, 2] - r).max() < 2.8e-8  # on its wheels, no hop: measured 9.3e-9 m


def box_scene(dt, seconds, *, on_static=False, stack=1, offset=0.0):
    b = ss.ModelBuilder()
    h = 0.05
    base = 0.1 if on_static else 0.0
    if on_static:
        b.add_shape_box(-1, (0.2, 0.2, 0.05), pos=(0.0, 0.0, 0.05), mu=0.6)
    for k in range(stack):
        body = b.add_body((offset * k, 0.0, base + h + 2 * h * k + 0.001 * k))
        b.add_shape_box(body, (h, h, h), mu=0.6, density=500.0)
    b.add_ground_plane(mu=0.6)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model, dt=dt)  # 4 Newton × 20
    lowest = np.full(stack, np.inf)
    for _ in range(int(round(seconds / dt))):
        solver.step(state)
        lowest = np.minimum(lowest, state.body_q.numpy()[:, 2] - (base + h + 2 * h * np.arange(stack)))
    return state.body_q.numpy(), lowest


# measured over 10 s at the budget, on the ground / on a static box: deepest 3.0e-9 / 8.9e-9 m below rest, resting
# 0 / 1.5e-8 m off (one float32 ulp of the 0.15 m height); bounds 3×, and three float32 ulps of the 0.05 m height
# (3.7e-9 m each) for the resting height measured exactly 0. Not moved sideways at all: x and y stay exactly 0, where
# float32 resolves far below 1e-9 m, so any sideways drift would be a real sideways force, not round-off
@pytest.mark.parametrize(
    "on_static, sink_bound, height_bound",
    [(False, 9.0e-9, 1.1e-8), (True, 2.7e-8, 4.5e-8)],
    ids=["on_ground", "on_static_box"],
)
def test_box_rests_without_sinking(on_static, sink_bound, height_bound):
    q, lowest = box_scene(1.0 / 120.0, 10.0, on_static=on_static)
    assert lowest[0] > -sink_bound
    assert abs(q[0, 2] - ((0.1 if on_static else 0.0) + 0.05)) < height_bound
    assert np.abs(q[0, :2]).max() < 1e-9


def test_particles_and_soft_cube_rest_on_a_dynamic_box():
    b = ss.ModelBuilder()
    box = b.add_body((0.0, 0.0, 0.05))
    b.add_shape_box(box, (0.1, 0.1, 0.05), mu=0.6, density=500.0)
    p = b.add_particle((0.02, 0.01, 0.12), mass=0.1)
    size = 0.04
    mesh = ss.box_tet_mesh((size, size, size), (2, 2, 2), origin=(-0.06, -0.02, 0.13))
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=1e5, poisson_ratio=0.3, damping=0.002)
    b.add_ground_plane(mu=0.6)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    for _ in range(240):
        solver.step(state)
    q = state.particle_q.numpy()
    # measured after 2 s: particle and cube 7.5e-9 m into the top face (one float32 ulp of 0.1 m), the box exactly at
    # rest height, particles at 0.83 µm/s, the box at 1.9 µm/s; bounds 3× (three ulps where measured at most one)
    assert q[p, 2] == pytest.approx(0.1, abs=2.3e-8)  # on the box's top face
    assert q[1:, 2].min() > 0.1 - 2.3e-8  # the soft cube rests on it
    assert state.body_q.numpy()[0, 2] == pytest.approx(0.05, abs=1.2e-8)  # and the box carries both on the ground
    assert np.abs(state.particle_qd.numpy()).max() < 2.5e-6
    assert np.abs(state.body_qd.numpy()).max() < 5.7e-6


def test_sphere_rolls_and_capsule_rests():
    theta, g, r = 0.3, 9.81, 0.04
    b = ss.ModelBuilder(gravity=tilted_gravity(theta, "x"))
    ball = b.add_body((0.0, 0.0, r))
    b.add_shape_sphere(ball, r, mu=1.0)
    pill = b.add_body((0.0, 0.5, r), rot=(0.0, S, 0.0, S))  # capsule axis (local z) along world x, lying
    b.add_shape_capsule(pill, r, 0.06, mu=1.0)
    b.add_ground_plane(mu=1.0)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    n = 120
    xs, vs = np.empty((n, 2, 7)), np.empty((n, 2, 6))
    for k in range(n):
        solver.step(state)
        xs[k], vs[k] = state.body_q.numpy(), state.body_qd.numpy()
    # rolling without slip, a = g sin θ / (1 + 2/5), implicit Euler from rest. Measured after 1 s: v +1.4e-6 and
    # x +3.1e-6 relative, ω·r −2.8e-6 relative to v, slip ≤ 2.3e-5 m/s, centre 4.6e-9 m off its height
    v, x = implicit_euler_from_rest(g * np.sin(theta) / 1.4, n)
    assert vs[-1, 0, 0] == pytest.approx(v[-1], rel=4.3e-6)
    assert xs[-1, 0, 0] == pytest.approx(x[-1], rel=9.4e-6)
    assert vs[-1, 0, 4] * r == pytest.approx(v[-1], rel=8.5e-6)
    assert np.abs(vs[:, 0, 0] - vs[:, 0, 4] * r).max() < 7e-5
    assert np.abs(xs[:, 0, 2] - r).max() < 1.4e-8
    # the lying capsule, its axis along the slope, sticks (μ = 1 > tan θ): measured 8.9e-10 m off its height, 37 µm
    # of creep along the slope in 1 s (the friction rows' stick velocity), 31 µm/s at the end
    assert np.abs(xs[:, 1, 2] - r).max() < 2.7e-9
    assert np.linalg.norm(xs[-1, 1, :2] - [0.0, 0.5]) < 1.1e-4
    assert np.abs(vs[-1, 1]).max() < 9.2e-5


def test_cylinder_stands_on_its_cap():
    b = ss.ModelBuilder()
    can = b.add_body((0.0, 0.0, 0.08))
    b.add_shape_cylinder(can, 0.04, 0.08, mu=0.6, density=500.0)
    b.add_ground_plane(mu=0.6)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model, dt=1.0 / 120.0)
    for _ in range(240):
        solver.step(state)
    q = state.body_q.numpy()[0]
    # measured after 2 s: exactly at its height, tilt quaternion components 1.6e-9, 8.1 µm/s
    assert q[2] == pytest.approx(0.08, abs=1.5e-8)  # 2 float32 ulps of 0.08 m
    assert np.abs(q[3:5]).max() < 4.8e-9  # upright
    assert np.abs(state.body_qd.numpy()).max() < 2.5e-5


@pytest.mark.parametrize("particle_contact", [True, False])
def test_contact_filters_on_body_shapes(particle_contact):
    """A body shape built with particle_contact=False (body_contact=False) gets no particle (body) contact rows: a
    particle dropped on it falls through, while the default shape holds it."""
    b = ss.ModelBuilder()
    table = b.add_body((0.0, 0.0, 0.0), mass=0.0, inertia=np.eye(3))  # kinematic
    b.add_shape_box(table, (0.2, 0.2, 0.05), mu=0.5, particle_contact=particle_contact, body_contact=False)
    ball = b.add_body((0.3, 0.0, 0.2), mass=0.1, inertia=(1e-4, 1e-4, 1e-4))
    b.add_shape_sphere(ball, 0.02, body_contact=False)
    b.add_particle((0.0, 0.0, 0.07), mass=0.01)
    model = b.finalize(device=TEST_DEVICE)
    assert model.target_count == model.shape_count  # no body is a target for other bodies' features
    assert model.particle_body_count == (2 if particle_contact else 1)  # the sphere still takes particles
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    for _ in range(60):
        solver.step(state)
    z = state.particle_q.numpy()[0, 2]
    if particle_contact:
        assert z == pytest.approx(0.05, abs=7.5e-9)  # on the face: measured exactly (one float32 ulp is 3.7e-9)
    else:  # in free fall, as implicit Euler gives it: 0.07 − g·h²·n(n+1)/2, measured 2.8e-7 m off (float32)
        assert z == pytest.approx(0.07 - 9.81 * solver.dt**2 * 60 * 61 / 2, abs=8.4e-7)
