"""Long gait runs for docs/snake.md: the paper's gait with φ = 0, +0.3 and −0.3 as three worlds of one model (full
snake, default settings), mean speeds over 0–5, 0–10, 10–20 and 20–30 s (body lengths/s), the heading change, and a
picture of the centre-of-mass paths.

    python benchmarks/studies/snake_gait_long.py --seconds 30 --out runs/gait30      # ~16 min on a 2-core CPU

Writes DIR/trajectory.npz (as `softsnake gait`), DIR/summary.json and DIR/paths.png; prints the table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

WINDOWS = ((0.0, 5.0), (0.0, 10.0), (10.0, 20.0), (20.0, 30.0))
OFFSETS = (0.0, 0.3, -0.3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="simulated time [s] (default 30)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    args = ap.parse_args()
    if not args.seconds > 0:
        ap.error("--seconds must be > 0")
    from softsnake.experiments.gait import run_gait
    from softsnake.io.files import save_figure_atomic, write_json_atomic
    from softsnake.robots.pneumatics import OpenLoopGait
    from softsnake.robots.snake_sim import SnakeSim
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    args.out.mkdir(parents=True, exist_ok=True)
    sim = SnakeSim(worlds=len(OFFSETS), device=args.device)
    t0 = time.perf_counter()
    traj = run_gait([OpenLoopGait(phi=phi) for phi in OFFSETS], args.seconds, sim=sim)
    wall = time.perf_counter() - t0
    traj.save(args.out / "trajectory.npz")
    L = traj.body_length
    rows = []
    for w, phi in enumerate(OFFSETS):
        speeds = {f"{a:g}-{b:g} s": float(traj.window_speed(a, b)[w]) for a, b in WINDOWS if b <= traj.t[-1] + 1e-9}
        rows.append(
            dict(
                phi=phi,
                speed_body_lengths_per_s=speeds,
                heading_change_rad=float(traj.turn()[w]),
                displacement_m=traj.displacement()[w].tolist(),
            )
        )
    write_json_atomic(
        args.out / "summary.json",
        dict(seconds=float(traj.t[-1]), body_length_m=L, wall_seconds=wall, device=args.device, runs=rows),
    )
    print(json.dumps(rows, indent=1))
    print(f"wall time {wall:.0f} s")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5))
    for w, r in enumerate(rows):
        c = traj.com[:, w] - traj.com0[w]
        ax.plot(c[:, 0], c[:, 1], label=f"φ = {r['phi']:+.1f}: heading {r['heading_change_rad']:+.2f} rad")
    ax.set(xlabel="x [m]", ylabel="y [m]", title=f"centre of mass, {traj.t[-1]:.0f} s (h = 1/120 s, 4 × 20)")
    ax.axis("equal")
    ax.grid(alpha=0.3)
    ax.legend()
    save_figure_atomic(fig, args.out / "paths.png")


if __name__ == "__main__":
    main()
