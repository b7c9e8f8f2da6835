"""Is an optimised gait's gain an artefact of the solver budget? Re-runs the best gait of ``softsnake optimize`` and
the paper's gait side by side at other budgets (iterations, solver steps per frame) and reports how much of the
optimised budget's advantage each keeps (benchmarks/RESULTS.md, "Gait optimisation").

    python3 -P benchmarks/studies/gait_advantage_check.py --run runs/optimize --budgets 4x20x2,8x40x2,8x40x4
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", type=Path, required=True, help="output folder of softsnake optimize (summary.json)")
    ap.add_argument(
        "--budgets",
        default="4x20x2,8x40x2,8x40x4",
        help="NEWTONxLINEARxSUBSTEPS, comma-separated; the first is the reference (default 4x20x2,8x40x2,8x40x4)",
    )
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    try:
        budgets = [tuple(int(x) for x in b.split("x")) for b in args.budgets.split(",")]
        assert all(len(b) == 3 and min(b) >= 1 for b in budgets)
    except (ValueError, AssertionError):
        ap.error(f"--budgets must be NEWTONxLINEARxSUBSTEPS with positive integers, got {args.budgets!r}")
    summary = json.loads((args.run / "summary.json").read_text())
    from softsnake.experiments.optimize import GaitObjective, compare_gaits
    from softsnake.robots.pneumatics import OpenLoopGait
    from softsnake.robots.snake import SnakeConfig

    config = SnakeConfig.from_dict(summary["config"], source=str(args.run / "summary.json"))
    objective = GaitObjective(**{k: v for k, v in summary["objective"].items()})
    gaits = [OpenLoopGait(**summary["paper_gait"]), OpenLoopGait(**summary["best_gait"])]
    sign = 1.0 if objective.maximise else -1.0
    reference = None
    print(f"objective {objective.kind} over {objective.settle:g}–{objective.seconds:g} s [{objective.unit()}]")
    for newton, linear, substeps in budgets:
        cfg = dataclasses.replace(
            config,
            substeps=substeps,
            solver=dataclasses.replace(config.solver, newton_iterations=newton, linear_iterations=linear),
        )
        ev = compare_gaits(gaits, config=cfg, objective=objective, device=args.device)
        advantage = sign * (ev.score[1] - ev.score[0])
        reference = advantage if reference is None else reference
        print(
            f"{newton} Newton × {linear}, h = 1/{round(substeps / cfg.frame_dt)} s: paper {ev.score[0]:.4f}, best "
            f"{ev.score[1]:.4f}, advantage {advantage:+.4f} ({100 * advantage / reference:.0f} % of the first), "
            f"ratio {ev.score[1] / ev.score[0]:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
