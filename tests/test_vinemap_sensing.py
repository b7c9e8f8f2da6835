"""Section 2.4 inversion: forward-simulated (length, collision angle) streams back to walls."""

import math

import numpy as np
import pytest

from softsnake.vinemap.environment import Environment, nonuniform_environment, uniform_environment
from softsnake.vinemap.sensing import invert_streams, sensor_streams, true_wall_runs, wall_errors
from softsnake.vinemap.simulator import Action, simulate

SLAB = [[0.1, 0.6], [0.9, 0.6], [0.9, 0.7], [0.1, 0.7]]


def test_eq16_17_single_wall_exact():
    env = Environment([SLAB], robot_radius=0.01, launches=[(0.5, 0.05)])
    act = Action((0.5, 0.05), math.radians(60), 0.65)
    dep = simulate(env.scene(), act)
    L, th = sensor_streams(dep, step=0.002)
    contact = ~np.isnan(th)
    # collision angle while sliding is measured counter-clockwise from the heading to the wall (Section 4.3.2):
    # at first contact the heading is 60 deg and the wall is horizontal, so theta_c = 120 deg
    assert math.degrees(th[contact][0]) == pytest.approx(120, abs=0.3)
    est = invert_streams(L, th, act.launch, act.angle)
    assert len(est) == 1 and len(est[0].pivots) == 1
    # with the event-triggered onset sample, Eq. 16 places the first contact exactly and Eq. 17 keeps every
    # recovered point on the wall line
    np.testing.assert_allclose(est[0].points[:, 1], 0.59, atol=1e-9)
    assert wall_errors(est, true_wall_runs(dep))[0] < 1e-6
    # without it the contact instant is only known to within one sample: the midpoint estimate stays within a
    # fraction of a millimetre here, and the offset shrinks with the sampling step
    L, th = sensor_streams(dep, step=0.002, events=False)
    est = invert_streams(L, th, act.launch, act.angle, event_samples=False)
    off_2mm = np.max(np.abs(est[0].points[:, 1] - 0.59))
    assert 0 < off_2mm < 1e-3
    L, th = sensor_streams(dep, step=0.0002, events=False)
    est = invert_streams(L, th, act.launch, act.angle, event_samples=False)
    assert np.max(np.abs(est[0].points[:, 1] - 0.59)) < 0.2 * off_2mm


def test_pivot_change_recovered_at_post_corner():
    post = [[0.55, 0.40], [0.57, 0.40], [0.57, 0.42], [0.55, 0.42]]
    env = Environment([SLAB, post], robot_radius=0.01, launches=[(0.3, 0.05)])
    act = Action((0.3, 0.05), math.radians(65), 0.87)
    dep = simulate(env.scene(), act)
    L, th = sensor_streams(dep)
    est = invert_streams(L, th, act.launch, act.angle)
    assert len(est) == 1
    np.testing.assert_allclose(est[0].pivots[-1], [0.54, 0.43], atol=0.005)  # the wrapped bumper corner
    assert wall_errors(est, true_wall_runs(dep))[0] < 0.01


def _deployments():
    for gen, seed in ((uniform_environment, 0), (uniform_environment, 1), (nonuniform_environment, 0),
                      (nonuniform_environment, 1)):
        env = gen(seed)
        for a in np.linspace(0.2, math.pi - 0.2, 12):
            for p in env.launches:
                act = Action(p, float(a), env.robot_length)
                dep = simulate(env.scene(), act)
                if true_wall_runs(dep):
                    yield act, dep


def test_noise_free_round_trip_within_1cm():
    errs = []
    for act, dep in _deployments():
        L, th = sensor_streams(dep)
        errs.extend(wall_errors(invert_streams(L, th, act.launch, act.angle), true_wall_runs(dep)))
    errs = np.asarray(errs)
    assert len(errs) > 40
    assert errs.max() < 0.01


def test_noise_degrades_error():
    med = []
    for sig in (0.0, math.radians(1.0)):
        errs = []
        rng = np.random.default_rng(5)
        for act, dep in _deployments():
            L, th = sensor_streams(dep, angle_noise=sig, length_noise=0.001 if sig else 0.0, rng=rng)
            try:
                est = invert_streams(L, th, act.launch, act.angle, angle_noise=sig, length_noise=0.001 if sig else 0.0)
                errs.extend(wall_errors(est, true_wall_runs(dep)))
            except ValueError:
                errs.append(np.inf)  # wall count mismatch counts as a failure
        med.append(np.median(errs))
    assert med[0] < med[1] < 0.03  # median wall error stays at the centimetre level with 1 deg / 1 mm noise


def test_turned_streams_from_recorded_phases():
    # the simulator records the turn geometry of every phase, so the action is no longer needed for the streams
    env = Environment([SLAB], robot_radius=0.01, launches=[(0.5, 0.05)])
    act = Action((0.5, 0.05), math.radians(95), 0.9, 0.3, math.radians(40))
    dep = simulate(env.scene(), act)
    a = sensor_streams(dep)
    b = sensor_streams(dep, action=act)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


# Hand-picked turned deployments in uniform environment 0 (launch 0), covering pivot-at-turn (Eq. 22), rigid rotation
# about the pivot (positive/negative pivot, Eqs. 24-25) and sequences of them: (launch angle, turn fraction, turn).
TURNED = [(11.459, 0.2, -60), (11.459, 0.2, 30), (11.459, 0.2, 60), (11.459, 0.4, 60), (33.899, 0.2, 30),
          (33.899, 0.4, 30)]


@pytest.mark.parametrize("ang,frac,turn", TURNED)
def test_turned_round_trip_within_1cm(ang, frac, turn):
    env = uniform_environment(0)
    act = Action(env.launches[0], math.radians(ang), env.robot_length, frac, math.radians(turn))
    dep = simulate(env.scene(), act)
    morph = {e for e in dep.events if e in ("pivot_at_turn", "positive_pivot", "negative_pivot")}
    assert morph and "friction_locked" not in dep.events
    L, th = sensor_streams(dep, action=act)
    est = invert_streams(L, th, act.launch, act.angle, turn_length=frac * act.length, turn_angle=act.turn_angle)
    truth = true_wall_runs(dep)  # the forward simulator's contacted walls
    assert len(truth) >= 1
    assert wall_errors(est, truth).max() < 0.01


def test_turned_slab_pivot_at_turn():
    env = Environment([SLAB], robot_radius=0.01, launches=[(0.5, 0.05)])
    act = Action((0.5, 0.05), math.radians(95), 0.9, 0.3, math.radians(40))
    dep = simulate(env.scene(), act)
    assert "pivot_at_turn" in dep.events
    L, th = sensor_streams(dep, action=act)
    est = invert_streams(L, th, act.launch, act.angle, turn_length=0.27, turn_angle=act.turn_angle)
    np.testing.assert_allclose(est[0].pivots[0], dep.turn_point, atol=1e-9)  # Eq. 22: the turn point is the pivot
    assert wall_errors(est, true_wall_runs(dep)).max() < 0.01
