"""How the steady gait speed depends on the model's estimated parameters and on the solver budget (docs/snake.md,
"What sets the gait speed"): the paper's straight gait (ω = 2 Hz, α = π/2, A = 8 psi, latency on) on the coarse snake
(5 cross-sections per link; ``--full`` for the default mesh), once per variant, mean speeds over 5 s windows.

    python -P benchmarks/studies/snake_gait_sensitivity.py --out runs/sens                 # default variants, ~6 min,
    2 jobs
    python -P benchmarks/studies/snake_gait_sensitivity.py --out runs/sens --variant "wide:snake.wheel_track=0.12"

A variant is ``NAME`` (one of the defaults below) or ``NAME:KEY=VALUE[,KEY=VALUE...]`` with KEY ``snake.FIELD``,
``pneumatics.FIELD`` or ``solver.FIELD`` (the tables of a snake config TOML), or the study switch that patches the
solver in that variant's process: ``study.linear_schedule="20/20/20/40"`` (MINRES iterations per Newton iteration).
Writes DIR/summary.json and one DIR/NAME.npz trajectory per variant; prints one line per variant.
"""

from __future__ import annotations

import argparse
import ast
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

#: the defaults: the model as shipped, its two estimated parameters that set the speed (chamber area: the actuation
#: force p·A_c and so the curvature per psi; the wheels' viscous loss), the wheel contact's width (pivot friction of
#: its two cap contacts) and the solver budget
DEFAULT_VARIANTS = {
    "default": {},
    "chamber_area_x1.5": {"snake.chamber_area": 1.695e-4},
    "chamber_area_x2": {"snake.chamber_area": 2.26e-4},
    "wheel_damping_1e-5": {"snake.wheel_damping": 1.0e-5},
    "wheel_width_2mm": {"snake.wheel_width": 0.002},
    "budget_4x40": {"solver.linear_iterations": 40},
    "converged_8x100": {
        "solver.newton_iterations": 8,
        "solver.linear_iterations": 100,
        "solver.linear_tolerance": 1e-5,
    },
}


def parse_variant(text: str) -> tuple[str, dict]:
    """``NAME`` of a default variant or ``NAME:KEY=VALUE,...`` → (name, overrides); ValueError on a bad form."""
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"variant {text!r} has no name")
    if not rest:
        if name not in DEFAULT_VARIANTS:
            raise ValueError(f"unknown variant {name!r}; defaults: {', '.join(DEFAULT_VARIANTS)}")
        return name, dict(DEFAULT_VARIANTS[name])
    overrides = {}
    for item in rest.split(","):
        key, eq, value = item.partition("=")
        table, dot, field = key.strip().partition(".")
        if not eq or not dot or table not in ("snake", "pneumatics", "solver", "study") or not field:
            raise ValueError(f"variant {text!r}: {item!r} is not snake|pneumatics|solver|study.FIELD=VALUE")
        if table == "study" and field not in STUDY_SWITCHES:
            raise ValueError(f"variant {text!r}: unknown study switch {field!r} (known: {', '.join(STUDY_SWITCHES)})")
        try:
            overrides[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise ValueError(f"variant {text!r}: {value!r} is not a number, bool or quoted string") from None
    return name, overrides


def variant_config(overrides: dict, full: bool):
    """SnakeConfig with the overrides (through the strict TOML-table loader, so bad keys and values are errors)."""
    from softsnake.robots.snake import SnakeConfig

    tables: dict = {}
    for key, value in overrides.items():
        if key.startswith("study."):
            continue
        table, _, field = key.partition(".")
        tables.setdefault(table, {})[field] = value
    cfg = SnakeConfig.from_dict(tables, source="variant")
    return cfg if full else cfg.with_coarse_mesh()


STUDY_SWITCHES = ("linear_schedule",)


def apply_study_switches(overrides: dict) -> None:
    """Patch the solver of this process for the ``study.*`` switches of a variant (each variant runs in a process of
    its own)."""
    from softsnake.sim import primal as sp

    switches = {k.removeprefix("study."): v for k, v in overrides.items() if k.startswith("study.")}
    if "linear_schedule" in switches:
        schedule = [int(n) for n in str(switches["linear_schedule"]).split("/")]
        solve = sp.PrimalStep.solve
        sp.PrimalStep.solve = lambda self, it, iterations=None: solve(self, it, schedule[it])


def run_variant(name: str, overrides: dict, seconds: float, full: bool, out: str) -> dict:
    from softsnake.experiments.gait import run_gait
    from softsnake.robots.pneumatics import OpenLoopGait
    from softsnake.sim.warp_runtime import init_warp

    init_warp()
    apply_study_switches(overrides)
    cfg = variant_config(overrides, full)
    t0 = time.perf_counter()
    traj = run_gait(OpenLoopGait(), seconds, config=cfg)
    wall = time.perf_counter() - t0
    traj.save(Path(out) / f"{name}.npz")
    windows = [(a, a + 5.0) for a in np.arange(0.0, traj.t[-1] - 5.0 + 1e-9, 5.0)]
    speeds = {f"{a:g}-{b:g} s": float(traj.window_speed(a, b)[0]) for a, b in windows}
    return dict(name=name, overrides=overrides, speed_body_lengths_per_s=speeds, wall_seconds=wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="output folder")
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated time per variant [s] (default 20)")
    ap.add_argument("--variant", action="append", help="a variant (repeatable; default: all of DEFAULT_VARIANTS)")
    ap.add_argument("--full", action="store_true", help="the default link mesh instead of the coarse one (~10x slower)")
    ap.add_argument("--jobs", type=int, default=2, help="variants run at once, one process each (default 2)")
    args = ap.parse_args()
    if not args.seconds >= 5.0:
        ap.error("--seconds must be ≥ 5 (one speed window)")
    if args.jobs < 1:
        ap.error("--jobs must be ≥ 1")
    try:
        variants = [parse_variant(v) for v in args.variant] if args.variant else list(DEFAULT_VARIANTS.items())
        for _, overrides in variants:
            variant_config(overrides, args.full)  # fail before any run starts
    except ValueError as exc:
        ap.error(str(exc))
    if len({n for n, _ in variants}) != len(variants):
        ap.error("variant names must differ")
    from softsnake.io.files import write_json_atomic

    args.out.mkdir(parents=True, exist_ok=True)
    # a process per variant: the study switches patch the solver in the process they run in
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn"), max_tasks_per_child=1) as pool:
        futures = [pool.submit(run_variant, n, o, args.seconds, args.full, str(args.out)) for n, o in variants]
        rows = []
        for f in futures:
            row = f.result()
            rows.append(row)
            speeds = "  ".join(f"{k} {v:.4f}" for k, v in row["speed_body_lengths_per_s"].items())
            print(f"{row['name']:<22} {speeds}   ({row['wall_seconds']:.0f} s)", flush=True)
    mesh = "full" if args.full else "coarse"
    write_json_atomic(
        args.out / "summary.json",
        dict(seconds=args.seconds, mesh=mesh, gait="omega 2 Hz, alpha pi/2, phi 0, A 8 psi, latency", runs=rows),
    )


if __name__ == "__main__":
    main()
