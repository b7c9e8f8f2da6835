"""Search commands over the snake: ``softsnake optimize`` (CMA-ES over the gait) and ``softsnake sweep`` (grid or
random sweeps from a TOML spec, locally over processes or on a Ray cluster).

As every command: arguments and the spec are checked before any simulation work; outputs are written atomically.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path

import numpy as np

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
            from tqdm import tqdm

            tqdm.write(
                f"generation {record['generation']:3d} | evaluations {record['evaluations']:5d} | best "
                f"{record['best']:.4f} | mean {record['mean']:.4f} | best so far {record['best_so_far']:.4f} {unit}"
                + (f" | {record['diverged']} diverged" if record["diverged"] else "")
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


# ---------------------------------------------------------------------------------------------------------- sweep
def check_sweep_command(args) -> None:
    from softsnake.cli_args import check_device
    from softsnake.experiments.sweep import SweepFolder, load_spec

    args.spec_obj = load_spec(args.spec, seconds=args.seconds, settle=args.settle)
    if args.table.suffix not in (".csv", ".parquet"):
        raise ValueError(f"--table must end in .csv or .parquet, got {str(args.table)!r}")
    if args.table.suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ValueError("a .parquet table needs pyarrow: pip install 'softsnake[sweep]'") from None
    if args.ray is not None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError("--ray needs Ray: pip install 'softsnake[sweep]'") from None
    check_device(args.device)
    SweepFolder(args.out, args.spec_obj)  # refuses a folder that holds another sweep


def run_sweep_command(args) -> int:
    import signal

    from softsnake.cli import EXIT_INTERRUPTED, Stopped, raise_if_stopped
    from softsnake.cli_args import RunTimeNotice
    from softsnake.experiments.sweep import batches, plot_sweep, run_sweep, write_table

    spec, out = args.spec_obj, Path(args.out)
    total = len(batches(spec))
    if not args.json:
        where = (
            f"Ray at {args.ray}" if args.ray else f"{args.processes} process(es)" if args.processes else "this process"
        )
        print(
            f"sweep {spec.source}: {len(spec.points)} points in {total} batches ({spec.mode}), on {where}", flush=True
        )
    notice, bar = RunTimeNotice(args.prog, unit="batch"), None

    def progress(done, count):
        nonlocal bar
        raise_if_stopped()  # a signal swallowed during the last batch stops the sweep here, that batch saved
        notice(done, count)
        if args.quiet or args.json:
            return
        if bar is None:
            from tqdm import tqdm

            bar = tqdm(total=count, initial=done, desc="sweep", unit="batch")
        bar.update(done - bar.n)

    try:
        rows, computed = run_sweep(
            spec, out, processes=args.processes, ray_address=args.ray, device=args.device, on_batch=progress
        )
        raise_if_stopped()  # no table from a sweep whose stop was swallowed after its last batch
    except (KeyboardInterrupt, Stopped) as stop:
        if bar is not None:
            bar.close()
        done = len(list((out / "batches").glob("*.json"))) if (out / "batches").is_dir() else 0
        how = "interrupted" if isinstance(stop, KeyboardInterrupt) else f"stopped by {signal.Signals(stop.signum).name}"
        print(
            f"softsnake: {how}; {done} of {total} batches are saved in {str(out)!r}: run the same command to resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED if isinstance(stop, KeyboardInterrupt) else 128 + stop.signum
    if bar is not None:
        bar.close()
    table = out / args.table
    write_table(spec, rows, table)
    plot_sweep(spec, rows, out / "sweep.png")
    speeds = np.array([r["speed_body_lengths_per_s"] for r in rows], dtype=float)
    best = int(np.nanargmax(speeds)) if np.isfinite(speeds).any() else None
    summary = dict(
        points=len(rows),
        batches=total,
        computed_batches=computed,
        resumed_batches=total - computed,
        diverged=int(sum(r["diverged"] for r in rows)),
        best_point=None if best is None else rows[best]["point"],
        best_speed_body_lengths_per_s=None if best is None else float(speeds[best]),
        table=str(table),
    )
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    if summary["resumed_batches"]:
        print(f"resumed: {summary['resumed_batches']} of {total} batches were already done")
    if best is not None:
        point = spec.points[rows[best]["point"]]
        print(
            f"fastest: point {rows[best]['point']} ({', '.join(f'{k} = {point[k]}' for k in spec.swept) or '-'}), "
            f"{speeds[best]:.4f} body lengths/s"
        )
    print(f"wrote {table}, {out / 'sweep.png'}")
    return 0


def add_sweep_command(sub) -> None:
    from softsnake.cli_args import input_path, integer, number, output_folder

    p = sub.add_parser(
        "sweep",
        help="grid or random sweep of gait, snake and solver parameters from a TOML spec (processes or Ray); resumes",
    )
    p.add_argument("spec", type=input_path, help="sweep spec (TOML: [sweep], [gait], [snake], [pneumatics], [solver])")
    p.add_argument("--out", type=output_folder, required=True, help="output folder (run again with it to resume)")
    p.add_argument(
        "--processes", type=integer(0), default=1, help="local worker processes (0: in this process; default 1)"
    )
    p.add_argument(
        "--ray",
        default=None,
        metavar="ADDRESS",
        help="run the batches as Ray tasks on this cluster ('local': a new one)",
    )
    p.add_argument(
        "--seconds",
        type=number(0, lo_open=True),
        default=None,
        help="simulated time per point [s] instead of the spec's",
    )
    p.add_argument("--settle", type=number(0), default=None, help="start of the speed window [s] instead of the spec's")
    p.add_argument("--table", type=Path, default=Path("sweep.csv"), help="table file name: .csv (default) or .parquet")
    p.add_argument("--device", default="cpu", help="warp device: cpu, cuda, cuda:0 (default: cpu)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run_sweep_command, check=check_sweep_command)


def add_commands(sub: argparse._SubParsersAction, common) -> None:
    add_optimize_command(sub, common)
    add_sweep_command(sub)
