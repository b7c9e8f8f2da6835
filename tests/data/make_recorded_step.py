"""Write tests/data/recorded_snake_step.npz: a coarse snake mid-gait (checkpoint) and the state one frame later.

The file fixes what the solver's kernels computed when it was recorded, so that a rewrite of the kernels (fused,
reordered, parallel sums) can be checked against them (tests/test_recorded_step.py, issue 11 target 5: "fused/optimised
and previous kernels agree within 1e-5 on a recorded step"). It was written on the CPU at commit 43e9768, before the
GPU launch changes of 2026-11-24:

    git worktree add /tmp/ref 43e9768 && cd /tmp/ref && ln -s ../kernels softsnake/kernels
    PYTHONPATH=/tmp/ref python -P /path/to/tests/data/make_recorded_step.py /path/to/tests/data/recorded_snake_step.npz
"""

import sys
from pathlib import Path

import numpy as np

from softsnake.experiments.gait import default_gait, gait_targets
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim
from softsnake.sim.model import quiet_warp

#: the coarse test snake (tests/test_snake.py, COARSE), two worlds with different gait phases
CONFIG = dict(sections=5, inner_ring=4)
WARM_FRAMES = 30


def main(out: str) -> None:
    quiet_warp()
    sim = SnakeSim(worlds=2, config=SnakeConfig(**CONFIG))
    gait = default_gait()
    for _ in range(WARM_FRAMES):  # the wheels touch the ground and the links bend: contacts, friction, joints
        sim.set_pressure_targets(gait_targets(gait, sim.time, sim.worlds, sim.links))
        sim.step()
    checkpoint = Path(out).with_suffix(".checkpoint.npz")
    sim.save(checkpoint)
    sim.set_pressure_targets(gait_targets(gait, sim.time, sim.worlds, sim.links))
    sim.step()
    with np.load(checkpoint) as f:
        arrays = {"checkpoint_" + k: f[k] for k in f.files}
    checkpoint.unlink()
    np.savez_compressed(
        out,
        **arrays,
        after_particle_q=sim.state.particle_q.numpy(),
        after_particle_qd=sim.state.particle_qd.numpy(),
        after_body_q=sim.state.body_q.numpy(),
        after_body_qd=sim.state.body_qd.numpy(),
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(Path(__file__).with_name("recorded_snake_step.npz")))
