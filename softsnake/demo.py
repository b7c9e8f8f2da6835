"""Engine command: ``softsnake demo`` (the built-in default scene, with a progress display and solver diagnostics)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from softsnake.io.files import write_npz_atomic


def check_demo(args) -> None:
    from softsnake.cli_args import check_device, check_memory, model_bytes
    from softsnake.scenes import demo_scene

    args.steps = int(round(args.seconds / args.dt))
    if args.steps < 1:
        raise ValueError(f"--seconds {args.seconds:g} is shorter than one step (--dt {args.dt:g})")
    check_device(args.device)
    b = demo_scene()
    per_world = (
        model_bytes(particles=b.particle_count, tets=b.tet_count, distances=b.distance_count)
        + 12.0 * args.steps * b.particle_count
    )
    check_memory(f"--worlds {args.worlds} × {args.steps} steps", args.worlds * per_world, args.device)


def run_demo(args) -> int:
    from tqdm import tqdm

    import softsnake as ss
    from softsnake.cli_args import RunTimeNotice
    from softsnake.scenes import demo_scene

    out = Path(args.out) if args.out else None
    model = demo_scene().finalize(device=args.device, worlds=args.worlds)
    state = model.state()
    solver = ss.Solver(model, dt=args.dt, newton_iterations=args.newton, linear_iterations=args.linear)
    steps = args.steps
    frames = np.empty((steps, model.worlds * model.particle_count, 3), dtype=np.float32)
    print(model)
    notice = RunTimeNotice(args.prog, "step")
    t0 = time.perf_counter()
    for k in tqdm(range(steps), desc="simulating", unit="step", disable=args.quiet):
        solver.step(state)
        frames[k] = state.particle_q.numpy()
        notice(k + 1, steps)
    wall = time.perf_counter() - t0
    d = solver.diagnostics()
    print(f"{steps} steps in {wall:.2f} s ({steps / wall:.1f} steps/s, real-time factor {args.seconds / wall:.2f})")
    print("Newton residual norm per iteration (world 0):", np.array2string(d.residual_norm[:, 0], precision=3))
    print(
        f"{'MINRES' if solver.config.fem == 'primal' else 'PCR'} iterations per Newton iteration (world 0):",
        d.linear_iterations[:, 0].tolist(),
        " residual reduction:",
        np.array2string(d.linear_reduction[:, 0], precision=2),
    )
    print("active contacts per world:", d.active_contacts.tolist())
    if out is not None:
        write_npz_atomic(
            out / "demo.npz", t=np.arange(1, steps + 1) * args.dt, particle_q=frames, tets=model.tet_indices
        )
        print(f"wrote {Path(args.out_final) / 'demo.npz'}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    from softsnake.cli_args import integer, number, output_folder

    p = sub.add_parser(
        "demo", help="run the built-in default scene (soft cube, static box, pendulum) and print solver diagnostics"
    )
    p.add_argument("--device", default="cpu", help="warp device: cpu, cuda, cuda:0 (default: cpu)")
    p.add_argument("--worlds", type=integer(1), default=1, help="number of independent worlds (default: 1)")
    p.add_argument("--seconds", type=number(0, lo_open=True), default=1.0, help="simulated time [s] (default: 1)")
    p.add_argument("--dt", type=number(0, lo_open=True), default=1.0 / 240.0, help="time step [s] (default: 1/240)")
    p.add_argument("--newton", type=integer(1), default=4, help="Newton iterations per step (default: 4)")
    p.add_argument(
        "--linear",
        type=integer(1),
        default=20,
        help="linear-solver (MINRES) iterations per Newton iteration (default: 20)",
    )
    p.add_argument("--out", type=output_folder, default=None, help="folder for demo.npz (particle positions per step)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_demo, check=check_demo, stage="out")
