"""Explicit hinge torques (softsnake.sim.HingeTorques): moment laws against closed forms, per-world parameters."""

import math

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE
from softsnake.sim import HingeTorques


def comer_levy_reference(theta, m_full, eps):
    """Chen et al. 2025 Eqs. 1–2 written out independently: M = πPR³·(sin2γ0 + 2π − 2γ0)/(4[sinγ0 + (π − γ0)cosγ0]),
    γ0 = acos(2ε/sin(θ/2) − 1) for θ ≥ 2 asin ε; below that onset the moment is linear and continuous."""
    th = abs(theta)
    onset = 2 * math.asin(eps)
    if th < onset:
        g = 0.0
        m_on = m_full * (math.sin(2 * g) + 2 * math.pi - 2 * g) / (4 * (math.sin(g) + (math.pi - g) * math.cos(g)))
        return m_on * th / onset
    g = math.acos(2 * eps / math.sin(th / 2) - 1)
    return m_full * (math.sin(2 * g) + 2 * math.pi - 2 * g) / (4 * (math.sin(g) + (math.pi - g) * math.cos(g)))


def one_hinge_model(worlds, inertia=2e-3):
    b = ss.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    body = b.add_body((0.0, 0.0, 0.0), mass=1.0, inertia=(inertia, inertia, inertia))
    b.add_joint_revolute(-1, body, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    return b.finalize(device=TEST_DEVICE, worlds=worlds), body


def torques_at(model, body, angles, law, params, rates=None):
    """Torque about z on the body for per-world hinge angles (rest = built pose)."""
    state, control = model.state(), model.control()
    ht = HingeTorques(model, [(-1, body)], params, law=law)
    q = np.zeros((model.worlds, 7), np.float32)
    q[:, 5], q[:, 6] = np.sin(np.asarray(angles) / 2), np.cos(np.asarray(angles) / 2)
    state.body_q.assign(q)
    if rates is not None:
        qd = np.zeros((model.worlds, 6), np.float32)
        qd[:, 5] = rates
        state.body_qd.assign(qd)
    ht.apply(state, control)
    return control.body_f.numpy()[:, 5].astype(np.float64), ht.angles.numpy()


def test_wrinkling_moment_matches_closed_form_on_both_branches_and_is_continuous():
    m_full, eps = 0.8, 0.12
    onset = 2 * math.asin(eps)
    angles = np.concatenate(
        [
            np.linspace(0.01, onset * 0.999, 6),
            [onset, onset * 1.001],
            np.linspace(onset * 1.05, 3.0, 10),
            -np.linspace(0.05, 2.5, 5),
        ]
    )
    model, body = one_hinge_model(len(angles))
    tau, th = torques_at(model, body, angles, "wrinkling", [m_full, eps, 0.0])
    # float32 round-off, measured (this machine, 2026-11-27): angles 8.7e-8 rad, moments 1.44e-6 relative; bounds 3×
    np.testing.assert_allclose(th, angles, atol=2.7e-7)
    expected = np.array([-math.copysign(comer_levy_reference(a, m_full, eps), a) for a in angles])
    np.testing.assert_allclose(tau, expected, rtol=4.4e-6)
    # continuity at the onset: both sides give πPR³/2 (at the onset measured 1.6e-7 relative, bound 3×; 0.1 % past it
    # the moment itself has moved by 1.9e-3: a true change of the function, not an error, so that bound stays)
    assert tau[6] == pytest.approx(-0.5 * m_full, rel=5.0e-7)
    assert tau[7] == pytest.approx(-0.5 * m_full, rel=2e-3)
    # large bending approaches the fully wrinkled moment πPR³ from below (Chen Fig. 2b)
    assert -tau[17] < m_full and -tau[17] > 0.9 * m_full
    # the host reference used for plots and docs agrees too
    np.testing.assert_allclose(ss.sim.wrinkling_moment_np(np.abs(angles), m_full, eps), np.abs(expected), rtol=1e-9)


def test_linear_law_per_world_parameters_and_damping():
    model, body = one_hinge_model(3)
    tau, _ = torques_at(
        model, body, [0.2, 0.2, -0.1], "linear", [[1.0, 0.0], [2.0, 0.0], [1.0, 0.5]], rates=[0.0, 0.0, 2.0]
    )
    # measured 8.9e-8 (this machine, 2026-11-27); bound 3×
    np.testing.assert_allclose(tau, [-0.2, -0.4, 0.1 - 1.0], rtol=2.7e-7)


def test_mlp_law_is_odd_and_a_callable_law_runs_on_the_host():
    model, body = one_hinge_model(2)
    rng = np.random.default_rng(1)
    p = np.concatenate([[0.0], rng.normal(size=31)])
    tau, _ = torques_at(model, body, [0.3, -0.3], "mlp", p)
    # odd exactly, measured 0.0 apart (this machine, 2026-11-27): the law is −½(f(θ) − f(−θ)) and the two worlds' angles
    # are exact negatives, so the same two values of f are subtracted in the other order
    assert tau[0] == -tau[1] and abs(tau[0]) > 1e-4
    w1, b1, w2, b2 = p[1:11], p[11:21], p[21:31], p[31]
    f = lambda x: np.sum(w2 * np.tanh(w1 * x + b1)) + b2
    # float32 round-off: measured 9.5e-8 (this machine, 2026-11-27); bound 3×
    assert tau[0] == pytest.approx(-0.5 * (f(0.3) - f(-0.3)), rel=2.9e-7)
    cubic = lambda th, rate, prm: -prm[:, :1] * th**3
    tau_c, _ = torques_at(model, body, [0.3, -0.5], cubic, [[2.0], [2.0]])
    # measured 1.1e-7 (this machine, 2026-11-27); bound 3×
    np.testing.assert_allclose(tau_c, [-2 * 0.027, 2 * 0.125], rtol=3.4e-7)


def test_explicit_torsion_pendulum_period():
    """I θ̈ = −k θ with the torque applied explicitly before each implicit step: symplectic Euler, whose discrete
    period is 2πh / acos(1 − (ωh)²/2) (ω² = k/I; 0.07 % / 0.29 % shorter than 2π/ω at h = 1/120 s), per world (k and
    4k), at the budget. Measured: +4.8e-5 / +2.0e-4 from the discrete period."""
    I, k = 2e-3, 0.5
    model, body = one_hinge_model(2, inertia=I)
    state, control = model.state(), model.control()
    ht = HingeTorques(model, [(-1, body)], [[k, 0.0], [4 * k, 0.0]], rest_angles=0.3)
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    dt = solver.dt
    th = []
    for _ in range(288):  # 2.4 s: 6 / 12 periods
        ht.apply(state, control)
        solver.step(state, control)
        th.append(ht.angles.numpy().copy())
    th = np.asarray(th)
    t = (np.arange(len(th)) + 1) * dt
    for w, (kk, bound) in enumerate(((k, 1.5e-4), (4 * k, 5.9e-4))):
        x = th[:, w]
        i = np.nonzero(np.sign(x[:-1]) != np.sign(x[1:]))[0]
        period = 2 * np.mean(np.diff(t[i] + dt * x[i] / (x[i] - x[i + 1])))  # interpolated zero crossings
        omega = math.sqrt(kk / I)
        assert period == pytest.approx(2 * math.pi * dt / math.acos(1 - (omega * dt) ** 2 / 2), rel=bound)


def test_hinge_torque_bad_input():
    model, body = one_hinge_model(1)
    with pytest.raises(ValueError, match="unknown hinge torque law"):
        HingeTorques(model, [(-1, body)], [1.0, 0.0], law="cubic")
    with pytest.raises(ValueError, match="takes 3 parameters"):
        HingeTorques(model, [(-1, body)], [1.0, 0.0], law="wrinkling")
    with pytest.raises(ValueError, match="eps_crit"):
        HingeTorques(model, [(-1, body)], [1.0, 1.5, 0.0], law="wrinkling")
    with pytest.raises(ValueError, match="body indices"):
        HingeTorques(model, [(-1, 5)], [1.0, 0.0])
    with pytest.raises(ValueError, match="≥ 0"):
        HingeTorques(model, [(-1, body)], [-1.0, 0.0])
