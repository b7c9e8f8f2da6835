"""Engine commands: ``softsnake demo`` (default scene with progress display) and ``softsnake engine-info``."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from softsnake.io.files import write_npz_atomic


def run_demo(args) -> int:
    from softsnake.sim.model import quiet_warp
    from tqdm import tqdm

    import softsnake as ss
    from softsnake.scenes import demo_scene

    if args.seconds <= 0 or args.dt <= 0:
        raise ValueError("--seconds and --dt must be > 0")
    out = Path(args.out) if args.out else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        if not os.access(out, os.W_OK):
            raise ValueError(f"output folder {str(out)!r} is not writable")
    quiet_warp()
    model = demo_scene().finalize(device=args.device, worlds=args.worlds)
    state = model.state()
    solver = ss.Solver(model, dt=args.dt, newton_iterations=args.newton, linear_iterations=args.linear)
    steps = int(round(args.seconds / args.dt))
    frames = np.empty((steps, model.worlds * model.particle_count, 3), dtype=np.float32)
    print(model)
    t0 = time.perf_counter()
    for k in tqdm(range(steps), desc="simulating", unit="step", disable=args.quiet):
        solver.step(state)
        frames[k] = state.particle_q.numpy()
    wall = time.perf_counter() - t0
    d = solver.diagnostics()
    print(f"{steps} steps in {wall:.2f} s ({steps / wall:.1f} steps/s, real-time factor {args.seconds / wall:.2f})")
    print("Newton residual norm per iteration (world 0):", np.array2string(d.residual_norm[:, 0], precision=3))
    print("PCR iterations (world 0):", d.linear_iterations[:, 0].tolist(), " residual reduction:", np.array2string(d.linear_reduction[:, 0], precision=2))
    print("active contacts per world:", d.active_contacts.tolist())
    if out is not None:
        write_npz_atomic(out / "demo.npz", t=np.arange(1, steps + 1) * args.dt, particle_q=frames, tets=model.tet_indices)
        print(f"wrote {out / 'demo.npz'}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the built-in default scene (soft cube, static box, pendulum) and print solver diagnostics")
    p.add_argument("--device", default="cpu", help="warp device: cpu, cuda, cuda:0 (default: cpu)")
    p.add_argument("--worlds", type=int, default=1, help="number of independent worlds (default: 1)")
    p.add_argument("--seconds", type=float, default=1.0, help="simulated time [s] (default: 1)")
    p.add_argument("--dt", type=float, default=1.0 / 240.0, help="time step [s] (default: 1/240)")
    p.add_argument("--newton", type=int, default=4, help="Newton iterations per step (default: 4)")
    p.add_argument("--linear", type=int, default=20, help="PCR iterations per Newton iteration (default: 20)")
    p.add_argument("--out", default=None, help="folder for demo.npz (particle positions per step)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_demo)
