"""Acceptance 4: particle pendulum on a rigid distance constraint."""

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE


def test_pendulum_length_and_small_angle_period():
    length, g, theta0, dt = 0.5, 9.81, 0.05, 1.0 / 1000.0
    b = ss.ModelBuilder(gravity=(0.0, 0.0, -g))
    pivot = b.add_particle((0.0, 0.0, 1.0), mass=0.0)
    bob = b.add_particle((length * np.sin(theta0), 0.0, 1.0 - length * np.cos(theta0)), mass=0.2)
    b.add_distance(pivot, bob)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model, dt=dt, newton_iterations=2, linear_iterations=2)
    period = 2 * np.pi * np.sqrt(length / g)
    n = int(2.2 * period / dt)
    xs = np.empty((n, 3))
    for k in range(n):
        solver.step(state)
        xs[k] = state.particle_q.numpy()[bob]
    r = np.linalg.norm(xs - np.array([0.0, 0.0, 1.0]), axis=1)
    assert np.max(np.abs(r - length)) / length < 1e-3
    x = xs[:, 0]
    t = (np.arange(n) + 1) * dt
    down = np.nonzero((x[:-1] > 0) & (x[1:] <= 0))[0]
    crossings = t[down] + dt * x[down] / (x[down] - x[down + 1])  # linear interpolation of the zero crossing
    assert len(crossings) >= 2
    measured = float(np.mean(np.diff(crossings)))
    # small-angle period with the finite-amplitude correction (1 + θ0²/16)
    expected = period * (1 + theta0**2 / 16)
    assert abs(measured / expected - 1) < 0.02, (measured, expected)


def test_distance_constraint_switched_off_in_one_world():
    """A negative rest-length scale (kernels.schur.DISTANCE_OFF) switches a distance constraint off in one world: the
    hanging bob there falls freely from the first step on, v_n = v_0 − g·h·n exactly as implicit Euler gives it (the
    multiplier carried by the warm start holds nothing), the other world keeps hanging at rest, and switched back on the
    constraint catches the bob again at its rest length. At the real-time budget (h = 1/120 s, 4 × 20)."""
    from softsnake.kernels.schur import DISTANCE_OFF

    g, h, length = 9.81, 1.0 / 120.0, 0.3
    b = ss.ModelBuilder(gravity=(0.0, 0.0, -g))
    pivot = b.add_particle((0.0, 0.0, 1.0), mass=0.0)
    bob = b.add_particle((0.0, 0.0, 1.0 - length), mass=0.1)
    b.add_distance(pivot, bob, compliance=1e-6)
    model = b.finalize(device=TEST_DEVICE, worlds=2)
    state, control = model.state(), model.control()
    solver = ss.Solver(model, dt=h)
    for _ in range(60):  # settle on the constraint (stretch m·g·compliance ≈ 1 µm)
        solver.step(state, control)
    w1 = model.particle_count + bob
    z_hang = state.particle_q.numpy()[[bob, w1], 2]
    v0 = float(state.particle_qd.numpy()[w1, 2])  # a few µm/s left of the settling
    control.distance_rest_scale.assign(np.array([1.0, DISTANCE_OFF], dtype=np.float32))
    for n in range(1, 13):
        solver.step(state, control)
        q, v = state.particle_q.numpy(), state.particle_qd.numpy()
        assert v[bob] == pytest.approx([0.0, 0.0, 0.0], abs=1e-5)  # world 0 keeps hanging
        assert q[bob, 2] == pytest.approx(z_hang[0], abs=1e-6)
        assert v[w1] == pytest.approx([0.0, 0.0, v0 - g * h * n], rel=1e-6, abs=1e-7)
        assert q[w1, 2] == pytest.approx(z_hang[1] + v0 * h * n - g * h * h * n * (n + 1) / 2, rel=1e-6)
    control.distance_rest_scale.assign(np.ones(2, dtype=np.float32))
    for _ in range(240):
        solver.step(state, control)
    r = np.linalg.norm(state.particle_q.numpy()[[bob, w1]] - [0.0, 0.0, 1.0], axis=1)
    assert r == pytest.approx([length, length], abs=1e-4)
