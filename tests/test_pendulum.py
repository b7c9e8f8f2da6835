"""Acceptance 4: particle pendulum on a rigid distance constraint."""

import numpy as np

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
