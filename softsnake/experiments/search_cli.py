"""Search commands over the snake: ``softsnake optimize`` (CMA-ES over the gait) and ``softsnake sweep`` (grid or
random sweeps from a TOML spec, locally over processes or on a Ray cluster).

As every command: arguments and the spec are checked before any simulation work; outputs are written atomically.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from pathlib import Path

#: command-line names of the gait parameters (as ``softsnake gait`` spells them) → OpenLoopGait fields
GAIT_FLAGS = {"omega": "omega_hz", "alpha": "alpha", "phi": "phi", "amplitude": "amplitude_psi"}


# ------------------------------------------------------------------------------------------------------- optimize
def _pair(text: str) -> tuple:
    parts = text.split(",")
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be two numbers x,y [m], got {text!r}") from None
    if len(values) != 2 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"must be two finite numbers x,y [m], got {text!r}")
    return values


def _parameter_list(text: str) -> tuple:
    names = tuple(p.strip() for p in text.split(","))
    unknown = [n for n in names if n not in GAIT_FLAGS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown gait parameter(s) {', '.join(map(repr, unknown))}; choose from {', '.join(GAIT_FLAGS)}"
        )
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"a parameter is named twice in {text!r}")
    return names


def check_optimize_command(args) -> None:
    from softsnake.cli_args import check_device
    from softsnake.experiments.cli import FRAMES_PER_GAIT_PERIOD, check_snake_memory, snake_config_from_args
    from softsnake.experiments.optimize import DEFAULT_BOUNDS, GaitObjective

    cfg = snake_config_from_args(args)
    args.objective_spec = GaitObjective(args.objective, args.seconds, args.settle, args.goal or (0.3, 0.0))
    highest = 1.0 / (FRAMES_PER_GAIT_PERIOD * cfg.frame_dt)
    bounds = {GAIT_FLAGS[k]: DEFAULT_BOUNDS[GAIT_FLAGS[k]] for k in args.parameters}
    for flag, name in GAIT_FLAGS.items():
        given = getattr(args, f"{flag}_range")
        if given is not None:
            if flag not in args.parameters:
                raise ValueError(f"--{flag}-range is given but {flag} is not in --parameters")
            bounds[name] = given
    if "omega_hz" in bounds:
        lo, hi = bounds["omega_hz"]
        if lo < 0 or hi > highest:
            raise ValueError(f"--omega-range must lie in [0, {highest:g}] Hz (4 frames per period), got {lo:g},{hi:g}")
    if "amplitude_psi" in bounds:
        lo, hi = bounds["amplitude_psi"]
        if lo < 0 or hi > cfg.p_max_psi:
            raise ValueError(f"--amplitude-range must lie in [0, p_max = {cfg.p_max_psi:g}] psi, got {lo:g},{hi:g}")
    if "phi" in bounds and not -1 <= bounds["phi"][0] < bounds["phi"][1] <= 1:
        raise ValueError(f"--phi-range must lie in [-1, 1], got {bounds['phi'][0]:g},{bounds['phi'][1]:g}")
    args.bounds = bounds
    check_device(args.device)
    check_snake_memory(f"--popsize {args.popsize}", cfg, args.popsize, device=args.device)
    fine = dataclasses.replace(
        cfg,
        solver=dataclasses.replace(
            cfg.solver, newton_iterations=args.check_newton, linear_iterations=args.check_linear
        ),
    )
    args.cfg, args.fine_cfg = cfg, fine


def run_optimize_command(args) -> int:
    from softsnake.experiments.cli import gait_label, progress_bar
    from softsnake.experiments.optimize import compare_gaits, optimize_gait, plot_convergence
    from softsnake.io.files import write_json_atomic, write_text_atomic
    from softsnake.robots.pneumatics import OpenLoopGait

    cfg, objective, out = args.cfg, args.objective_spec, Path(args.out)
    paper = OpenLoopGait(p_max_psi=cfg.p_max_psi)
    unit = objective.unit()

    def report(record):
        if not args.quiet and not args.json:
            print(
                f"generation {record['generation']:3d} | evaluations {record['evaluations']:5d} | best "
                f"{record['best']:.4f} | mean {record['mean']:.4f} | best so far {record['best_so_far']:.4f} {unit}"
                + (f" | {record['diverged']} diverged" if record["diverged"] else ""),
                flush=True,
            )

    with progress_bar("optimize", args.quiet, args.prog) as progress:
        result = optimize_gait(
            config=cfg,
            objective=objective,
            parameters=tuple(GAIT_FLAGS[k] for k in args.parameters),
            bounds=args.bounds,
            generations=args.generations,
            popsize=args.popsize,
            sigma0=args.sigma,
            seed=args.seed,
            device=args.device,
            start=paper,
            progress=progress,
            on_generation=report,
        )
    best = result.best_gait
    checks = {}
    budgets = [("optimised", cfg)] + ([] if args.no_check else [("finer", args.fine_cfg)])
    for name, budget in budgets:
        with progress_bar(f"re-run ({name} budget)", args.quiet, args.prog) as progress:
            ev = compare_gaits([paper, best], config=budget, objective=objective, device=args.device, progress=progress)
        gain = ev.score[1] - ev.score[0] if objective.maximise else ev.score[0] - ev.score[1]
        checks[name] = dict(
            newton_iterations=budget.solver.newton_iterations,
            linear_iterations=budget.solver.linear_iterations,
            paper=float(ev.score[0]),
            best=float(ev.score[1]),
            advantage=float(gain),
            paper_speed=float(ev.speed[0]),
            best_speed=float(ev.speed[1]),
        )
    if "finer" in checks:
        base = checks["optimised"]["advantage"]
        checks["finer"]["advantage_kept"] = float(checks["finer"]["advantage"] / base) if base > 0 else math.nan
    rows = ["generation,evaluations,best,mean,worst,best_so_far,diverged,sigma"] + [
        ",".join(f"{r[k]:.6g}" if isinstance(r[k], float) else str(r[k]) for k in r) for r in result.generations
    ]
    write_text_atomic(out / "convergence.csv", "\n".join(rows) + "\n")
    plot_convergence(
        result,
        out / "convergence.png",
        reference=checks["optimised"]["paper"],
        unit=f"{objective.kind} [{unit}]",
        title=f"CMA-ES on {', '.join(args.parameters)}: best {gait_label(best)}",
    )
    summary = dict(
        objective=dataclasses.asdict(objective),
        parameters=list(args.parameters),
        bounds={k: list(v) for k, v in args.bounds.items()},
        generations=args.generations,
        popsize=args.popsize,
        seed=args.seed,
        evaluations=result.evaluations,
        best_gait=best.as_dict(),
        best_score=result.best_score,
        paper_gait=paper.as_dict(),
        checks=checks,
        gait_command=(
            f"softsnake gait --omega {best.omega_hz:.6g} --alpha {best.alpha:.6g} --phi {best.phi:.6g} "
            f"--amplitude {best.amplitude_psi:.6g}"
        ),
        config=cfg.to_dict(),
    )
    write_json_atomic(out / "best_gait.json", dict(best.as_dict(), score=result.best_score, unit=unit))
    write_json_atomic(out / "summary.json", summary)
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=1))
        return 0
    print(f"best gait after {result.evaluations} evaluations: {gait_label(best)}")
    for name, c in checks.items():
        line = (
            f"{name} budget ({c['newton_iterations']} Newton × {c['linear_iterations']}): paper {c['paper']:.4f}, "
            f"best {c['best']:.4f} {unit}, advantage {c['advantage']:+.4f}"
        )
        if "advantage_kept" in c:
            line += f" ({100 * c['advantage_kept']:.0f} % of the optimised budget's)"
        print(line)
    print(f"run it: {summary['gait_command']}{' --coarse' if args.coarse else ''} --out DIR")
    print(f"wrote {Path(args.out_final) / 'summary.json'}, best_gait.json, convergence.csv, convergence.png")
    return 0


def add_optimize_command(sub, common) -> None:
    from softsnake.cli_args import integer, number, output_folder

    p = sub.add_parser(
        "optimize",
        help="CMA-ES over the gait (ω, α, φ, A): each generation as worlds of one batch; best gait, convergence plot",
    )
    common(p)
    p.add_argument("--objective", choices=("speed", "goal"), default="speed", help="speed (default) or goal distance")
    p.add_argument(
        "--goal", type=_pair, default=None, help="goal x,y [m] from the start (objective goal; default 0.3,0)"
    )
    p.add_argument(
        "--parameters",
        type=_parameter_list,
        default=("omega", "alpha", "amplitude"),
        help="gait parameters to optimise, comma-separated from omega, alpha, phi, amplitude (default "
        "omega,alpha,amplitude; the others stay at the paper's values)",
    )
    for flag, unit in (("omega", "Hz"), ("alpha", "rad"), ("phi", "-"), ("amplitude", "psi")):
        p.add_argument(
            f"--{flag}-range", type=_range, default=None, metavar="LOW,HIGH", help=f"search range of {flag} [{unit}]"
        )
    p.add_argument("--generations", type=integer(1), default=10, help="CMA-ES generations (default 10)")
    p.add_argument("--popsize", type=integer(2), default=8, help="gaits per generation = worlds per batch (default 8)")
    p.add_argument(
        "--sigma", type=number(0, 1, lo_open=True), default=0.25, help="initial step, fraction of each range"
    )
    p.add_argument("--seed", type=integer(1), default=1, help="CMA-ES seed (default 1)")
    p.add_argument("--seconds", type=number(0, lo_open=True), default=6.0, help="simulated time per evaluation [s]")
    p.add_argument("--settle", type=number(0), default=2.0, help="speed measured from this time on [s] (default 2)")
    p.add_argument("--check-newton", type=integer(1), default=8, help="finer budget of the re-run check (default 8)")
    p.add_argument("--check-linear", type=integer(1), default=40, help="finer budget of the re-run check (default 40)")
    p.add_argument("--no-check", action="store_true", help="skip the re-run of both gaits at the finer budget")
    p.add_argument("--out", type=output_folder, required=True, help="output folder")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run_optimize_command, check=check_optimize_command, stage="out")


def _range(text: str) -> tuple:
    parts = text.split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be two numbers LOW,HIGH, got {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise argparse.ArgumentTypeError(f"must be two finite numbers with LOW < HIGH, got {text!r}")
    return lo, hi


def add_commands(sub: argparse._SubParsersAction, common) -> None:
    add_optimize_command(sub, common)
