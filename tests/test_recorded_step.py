"""The solver's kernels against a step recorded before they were rewritten (issue 11, target 5).

tests/data/recorded_snake_step.npz holds a coarse two-world snake 30 frames into the gait (a checkpoint: state,
multipliers, contact list, pressures) and the state one frame (two steps, 4 × 20) later, computed on the CPU at commit
43e9768 (tests/data/make_recorded_step.py). Optimised kernels (fused launches, reordered or parallel sums) must agree
with it within 1e-5 of each quantity's scale (on the CPU the code of 2026-11-24 is bit-identical to it)."""

from pathlib import Path

import numpy as np
from helpers import TEST_DEVICE

from softsnake.experiments.gait import default_gait, gait_targets
from softsnake.robots.snake_sim import SnakeSim

DATA = Path(__file__).parent / "data" / "recorded_snake_step.npz"


def test_one_frame_from_the_recorded_checkpoint_matches_the_recorded_kernels(tmp_path):
    with np.load(DATA) as f:
        data = {k: f[k] for k in f.files}
    checkpoint = tmp_path / "checkpoint.npz"
    np.savez(checkpoint, **{k[len("checkpoint_"):]: v for k, v in data.items() if k.startswith("checkpoint_")})
    sim = SnakeSim.load(checkpoint, device=TEST_DEVICE)
    assert sim.frame == 30
    sim.set_pressure_targets(gait_targets(default_gait(), sim.time, sim.worlds, sim.links))
    sim.step()
    now = dict(
        particle_q=sim.state.particle_q.numpy(),
        particle_qd=sim.state.particle_qd.numpy(),
        body_q=sim.state.body_q.numpy(),
        body_qd=sim.state.body_qd.numpy(),
    )
    for name, value in now.items():
        ref = data["after_" + name]
        moved = np.abs(ref - data["checkpoint_" + name]).max()
        assert moved > 0.0, name  # the frame changed it: the comparison below is not vacuous
        err = np.abs(value - ref).max()
        scale = np.abs(ref).max()
        assert err <= 1e-5 * scale, f"{name}: max difference {err:.3g} against scale {scale:.3g}"
