"""Per-world gaits and per-world resets of the snake (the robots layer under the learning environments)."""

import math

import numpy as np
import pytest

from helpers import TEST_DEVICE
from softsnake.robots.pneumatics import ChamberPressures, OpenLoopGait
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim

COARSE = SnakeConfig().with_coarse_mesh()


def test_a_per_world_gait_gives_each_world_its_single_gait_exactly():
    gaits = [OpenLoopGait(phi=-0.3), OpenLoopGait(omega_hz=1.3, alpha=0.7), OpenLoopGait(amplitude_psi=5.0, phi=0.3)]
    batch = OpenLoopGait.stack(gaits)
    assert batch.worlds == 3 and batch.world(1) == gaits[1]
    mixed = OpenLoopGait(phi=[-0.3, 0.0, 0.3])  # numbers are shared, sequences per world
    for t in np.linspace(0.0, 3.0, 37):
        a = batch(t, 3)
        for w, g in enumerate(gaits):
            assert np.array_equal(a[w], g.targets(t))  # bit for bit: the same float64 operations
            assert np.array_equal(mixed(t, 3)[w], OpenLoopGait(phi=(-0.3, 0.0, 0.3)[w]).targets(t))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(phi=[0.0, 1.5]), r"OpenLoopGait.phi\[1\] must be in \[-1, 1\]"),
        (dict(phi=[0.0, 0.1], omega_hz=[1.0, 2.0, 3.0]), "same length"),
        (dict(amplitude_psi=[8.0, 9.0]), r"amplitude_psi\[1\] = 9.0 psi is above p_max"),
        (dict(omega_hz=[]), "empty sequence"),
        (dict(alpha=[[1.0]]), "a number or a sequence"),
        (dict(omega_hz=[float("nan")]), "finite frequency"),
    ],
)
def test_bad_per_world_gaits_are_refused_with_the_world_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OpenLoopGait(**kwargs)


def test_a_per_world_gait_refuses_another_batch_size():
    with pytest.raises(ValueError, match="values for 2 worlds, not 3"):
        OpenLoopGait(phi=[0.0, 0.1])(0.0, 3)


def test_per_world_latency_gains_and_reset_of_the_chambers():
    p = ChamberPressures(3, 2)
    p.set_latency_gains([1], k_inflate=0.5)
    p.step(np.full((3, 2), 8.0), 0.0083)
    v = p.values
    assert np.array_equal(v[0], v[2]) and v[1, 0, 0] > v[0, 0, 0]  # world 1 inflates faster
    p.reset([0])
    assert not p.values[0].any() and np.array_equal(p.values[1:], v[1:])
    with pytest.raises(ValueError, match=r"k_deflate must be in \(0, 1\]"):
        p.set_latency_gains([0], k_deflate=1.5)
    with pytest.raises(ValueError, match=r"worlds must lie in \[0, 3\)"):
        p.reset([3])


def _arrays(sim):
    return {
        "particle_q": sim.particle_positions(),
        "body_q": sim.body_poses(),
        "particle_qd": sim.state.particle_qd.numpy().reshape(sim.worlds, -1, 3),
        "pressure": sim.chamber_pressures(),
    }


def _run(sim, gait, frames):
    for _ in range(frames):
        sim.set_pressure_targets(gait(sim.world_time.max(), sim.worlds, sim.links))
        sim.step()


def test_a_reset_world_equals_a_new_snake_and_the_others_are_untouched():
    """Acceptance: after ``SnakeSim.reset_worlds`` a world steps bit for bit as the same world of a newly built
    SnakeSim (engine state, carried solver state, chamber pressures, frame count), and the world beside it as if
    nothing happened."""
    gait = OpenLoopGait(omega_hz=3.0)
    sim, reference = SnakeSim(2, TEST_DEVICE, COARSE), SnakeSim(2, TEST_DEVICE, COARSE)
    for s in (sim, reference):
        _run(s, gait, 4)
    # a randomised reset first, then a plain one: the plain reset must undo every variation
    sim.reset_worlds([1], heading=0.5, ground_mu=0.3, actuation_gain=0.7, k_inflate=0.4)
    for s in (sim, reference):
        _run(s, gait, 1)
    sim.reset_worlds([1])
    assert sim.world_frame.tolist() == [5, 0]
    fresh = SnakeSim(1, TEST_DEVICE, COARSE)
    for _ in range(4):
        targets = gait(float(sim.world_time[0]), 1, sim.links)
        sim.set_pressure_targets(np.stack([targets[0], gait(float(sim.world_time[1]), 1, sim.links)[0]]))
        sim.step()
        reference.set_pressure_targets(np.repeat(targets, 2, axis=0))
        reference.step()
        fresh.set_pressure_targets(gait(float(fresh.world_time[0]), 1, fresh.links))
        fresh.step()
    now, ref, new = _arrays(sim), _arrays(reference), _arrays(fresh)
    for name in now:
        assert np.array_equal(now[name][0], ref[name][0]), name  # world 0 untouched
        assert np.array_equal(now[name][1], new[name][0]), name  # world 1 as a new snake
        assert not np.array_equal(now[name][1], ref[name][1]), name  # not vacuous
    assert sim.world_frame.tolist() == [9, 4]


def test_reset_variations_turn_the_snake_and_are_checked():
    sim = SnakeSim(3, TEST_DEVICE, COARSE)
    com = sim.com()
    sim.reset_worlds([0, 2], heading=[math.pi / 2, -0.4], ground_mu=[0.5, 0.8], actuation_gain=[1.0, 0.5])
    assert np.allclose(sim.heading(), [math.pi / 2, 0.0, -0.4], atol=1e-6)
    assert np.allclose(sim.com(), com, atol=1e-6)  # turned about the centre of mass
    assert np.allclose(sim.control.shape_mu.numpy()[:, 0], [0.5, 1.0, 0.8])
    assert sim.actuation_gain.tolist() == [1.0, 1.0, 0.5]
    for kwargs, message in (
        (dict(ground_mu=-0.1), "ground_mu must be finite and ≥ 0"),
        (dict(actuation_gain=0.0), "actuation_gain must be finite and > 0"),
        (dict(heading=[0.1, float("nan")]), "heading must be finite"),
        (dict(k_inflate=2.0), r"k_inflate must be in \(0, 1\]"),
    ):
        before = sim.snapshot()
        with pytest.raises(ValueError, match=message):
            sim.reset_worlds([0, 1], **kwargs)
        after = sim.snapshot()
        assert all(np.array_equal(before[k], after[k]) for k in before if k != "meta")  # nothing touched


def test_three_gaits_in_one_batch_reproduce_three_single_runs(tmp_path):
    """Acceptance: ``softsnake gait --phi -0.3,0,0.3`` runs three gaits as three worlds and writes one trajectory per
    world; each equals the single-gait run of that φ bit for bit on the CPU."""
    from softsnake.cli import main

    common = ["gait", "--coarse", "--seconds", "0.1", "--no-usd", "--no-gif", "--quiet", "--device", TEST_DEVICE]
    assert main([*common, "--phi", "-0.3,0,0.3", "--out", str(tmp_path / "batch")]) == 0
    batch = np.load(tmp_path / "batch" / "trajectory.npz")
    assert batch["phi"].tolist() == [-0.3, 0.0, 0.3] and batch["com"].shape[1] == 3
    for w, phi in enumerate(("-0.3", "0", "0.3")):
        assert main([*common, "--phi", phi, "--out", str(tmp_path / phi)]) == 0
        single = np.load(tmp_path / phi / "trajectory.npz")
        for name in ("com", "pressure", "curvature", "heading"):
            assert np.array_equal(batch[name][:, w], single[name][:, 0]), (phi, name)
    assert not np.array_equal(batch["curvature"][:, 0], batch["curvature"][:, 2])  # the gaits differ
