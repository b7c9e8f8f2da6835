"""The straight gait's round-off spread for docs/snake.md: the paper's gait (φ = 0, full snake, default settings) run
once per Young's modulus scale, each scale a few float32 steps from 1 (1 ± 1e-6 … 1 ± 5e-6 by default, and 1
itself). Such a change is far below anything physical; the wheels' stick and slip amplify it into a few percent of
speed, so the spread of these runs is how far apart two runs of the same gait can land.

    python benchmarks/studies/snake_gait_round_off.py --out runs/round_off      # ~15 min on one CPU core

Each run is a model of its own (one world), one after another. Prints each run's speeds over 10–20 and 20–30 s
(body lengths/s) and heading change, then the mean ± standard deviation and range of each window over all runs;
writes DIR/summary.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np

DEFAULT_SCALES = "1,0.999999,1.000001,0.999998,1.000002,0.999997,1.000003,0.999996,1.000004,0.999995,1.000005"
WINDOWS = ((10.0, 20.0), (20.0, 30.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default=DEFAULT_SCALES, help="comma-separated Young's modulus factors")
    ap.add_argument("--seconds", type=float, default=30.0, help="simulated time of each run [s] (default 30)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    args = ap.parse_args()
    try:
        scales = [float(s) for s in args.scales.split(",") if s.strip()]
    except ValueError:
        ap.error(f"--scales must be comma-separated numbers, got {args.scales!r}")
    if not scales or not all(np.isfinite(s) and s > 0 for s in scales):
        ap.error("--scales must be positive numbers")
    if not args.seconds >= WINDOWS[-1][1]:
        ap.error(f"--seconds must be at least {WINDOWS[-1][1]:g} (the last window's end)")
    from softsnake.experiments.gait import run_gait
    from softsnake.io.files import write_json_atomic
    from softsnake.robots.pneumatics import OpenLoopGait
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    args.out.mkdir(parents=True, exist_ok=True)
    base = SnakeConfig()
    runs = []
    t0 = time.perf_counter()
    for scale in scales:
        config = dataclasses.replace(base, youngs_modulus=base.youngs_modulus * scale)
        traj = run_gait(
            [OpenLoopGait(phi=0.0)], args.seconds, sim=SnakeSim(worlds=1, config=config, device=args.device)
        )
        speeds = [float(traj.window_speed(a, b)[0]) for a, b in WINDOWS]
        runs.append(dict(youngs_scale=scale, speeds=speeds, heading_change_rad=float(traj.turn()[0])))
        print(
            f"E × {scale:.6f}: "
            + " / ".join(f"{v:.4f}" for v in speeds)
            + f" body lengths/s, turn {runs[-1]['heading_change_rad']:+.3f} rad",
            flush=True,
        )
    summary = {}
    for k, (a, b) in enumerate(WINDOWS):
        v = np.array([r["speeds"][k] for r in runs])
        summary[f"{a:g}-{b:g} s"] = dict(
            mean=float(v.mean()),
            std=float(v.std(ddof=1)) if len(v) > 1 else 0.0,
            min=float(v.min()),
            max=float(v.max()),
        )
    write_json_atomic(
        args.out / "summary.json",
        dict(
            seconds=args.seconds, device=args.device, wall_seconds=time.perf_counter() - t0, runs=runs, windows=summary
        ),
    )
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
