"""Write tests/data/recorded_snake_step.npz: a coarse snake mid-gait (checkpoint) and the state one frame later.

The file fixes what the solver's kernels computed when it was recorded, so that a rewrite of the kernels (fused,
reordered, parallel sums) can be checked against them (tests/test_recorded_step.py: rewritten and
previous kernels agree within 1e-5 on a recorded step). It was written on the CPU at commit 43e9768, before the
GPU launch changes of 2026-11-24:

    git worktree add /tmp/ref 43e9768 && cd /tmp/ref && ln -s ../kernels softsnake/kernels
    PYTHONPATH=/tmp/ref python -P /path/to/tests/data/make_recorded_step.py /path/to/tests/data/recorded_snake_step.npz

``--first-solve`` writes tests/data/recorded_snake_solve.npz from that checkpoint: the first Newton iteration's
right-hand side, product, preconditioner and linear solve (written at commit 4b5edc2, the same way with /tmp/ref at
4b5edc2).

``--rerecord`` keeps the checkpoint and writes the state one frame later and the first-solve file again with the
current kernels, replayed with the recording's model (tests/test_recorded_step.py, ``recorded_frame``). It is for an
intended change of the solver's mathematics, which the recording cannot follow: used when the rows' preconditioner
changed (float64 body blocks, two-level attachment masses; the right-hand side, the product and the particles'
preconditioner still matched the 4b5edc2 recording within 1e-5 before it was re-recorded), and when the end-of-step
momentum balance came in (SolverConfig.momentum_balance; with it off the replay matched the recording before), and
when the primal step began to scale its carried bilateral multipliers (SolverConfig.warm_start_scaled, 2026-11-26;
with the scaling off both tests passed against the earlier recording), and when the coarse correction's soft-body
rotations moved to the tets' linearisation point x⁻ + h·v⁻ (2026-11-27; the right-hand side and the product matched
the recording within 2e-7 before, the particles' preconditioner moved by 1.8e-3 of its scale).
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


def record_first_solve(step_file: str, out: str) -> None:
    """Write what the kernels computed in the first Newton iteration of the recorded step (helpers.py,
    probe_first_linear_solve) to ``out``: recorded_snake_solve.npz, written on the CPU at commit 4b5edc2, whose kernels
    give the recorded frame bit for bit."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from helpers import probe_first_linear_solve

    quiet_warp()
    with np.load(step_file) as f:
        arrays = {k[len("checkpoint_") :]: f[k] for k in f.files if k.startswith("checkpoint_")}
    checkpoint = Path(out).with_suffix(".checkpoint.npz")
    np.savez(checkpoint, **arrays)
    sim = SnakeSim.load(checkpoint)
    checkpoint.unlink()
    sim.set_pressure_targets(gait_targets(default_gait(), sim.time, sim.worlds, sim.links))
    np.savez_compressed(out, **probe_first_linear_solve(sim))


def rerecord(step_file: str, solve_file: str) -> None:
    """Re-record the frame after the checkpoint and the first solve with the current kernels (module docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_recorded_step import STATE, end_of_frame, recorded_frame

    from helpers import probe_first_linear_solve

    quiet_warp()
    with np.load(step_file) as f:
        arrays = {k: f[k] for k in f.files if k.startswith("checkpoint_")}
    sim, _ = recorded_frame()
    after = end_of_frame(sim)
    np.savez_compressed(step_file, **arrays, **{"after_" + k: after[k] for k in STATE})
    sim, _ = recorded_frame()
    np.savez_compressed(solve_file, **probe_first_linear_solve(sim))


if __name__ == "__main__":
    here = Path(__file__).parent
    if len(sys.argv) > 1 and sys.argv[1] == "--rerecord":
        rerecord(str(here / "recorded_snake_step.npz"), str(here / "recorded_snake_solve.npz"))
        sys.exit(0)
    if len(sys.argv) > 1 and sys.argv[1] == "--first-solve":
        # python make_recorded_step.py --first-solve [recorded_snake_step.npz [recorded_snake_solve.npz]]
        args = (
            sys.argv[2:]
            + [str(here / "recorded_snake_step.npz"), str(here / "recorded_snake_solve.npz")][len(sys.argv[2:]) :]
        )
        record_first_solve(args[0], args[1])
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else str(here / "recorded_snake_step.npz"))
