"""``softsnake vinemap deploy|explore`` sub-commands (registered by :func:`add_commands`).

All outputs are written atomically (temporary file in the same directory, then ``os.replace``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os

import numpy as np

__all__ = ["add_commands"]


def _floats(text: str, n: int, what: str) -> list[float]:
    parts = text.split(",")
    if len(parts) != n:
        raise ValueError(f"{what} must be {n} comma-separated numbers, got {text!r}")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"{what} must be {n} comma-separated numbers, got {text!r}") from None
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"{what} must be finite numbers, got {text!r}")
    return vals


def check_deploy(args) -> None:
    """Environment file, launch point, turn and length: all checked before the deployment is simulated."""
    from .environment import load_environment
    from .simulator import Action

    env = load_environment(args.env)
    x, y, deg = _floats(args.launch, 3, "--launch X,Y,DEG")
    env.check_launch((x, y), "--launch point")
    frac, tdeg = (None, 0.0)
    if args.turn:
        frac, tdeg = _floats(args.turn, 2, "--turn FRACTION,DEG")
        if not 0.0 < frac < 1.0:
            raise ValueError(f"--turn FRACTION must lie strictly between 0 and 1, got {frac:g}")
        if abs(tdeg) >= 180.0:
            raise ValueError(f"--turn DEG must be within (-180, 180), got {tdeg:g}")
    length = env.robot_length if args.length is None else args.length
    args.env_obj, args.action = env, Action((x, y), math.radians(deg), length, frac, math.radians(tdeg))


def cmd_deploy(args) -> int:
    from .environment import write_atomic
    from .plotting import plot_deployment
    from .simulator import simulate

    env, act, out = args.env_obj, args.action, str(args.out)
    (x, y), deg, length, frac, tdeg = (
        act.launch,
        math.degrees(act.angle),
        act.length,
        act.turn_fraction,
        math.degrees(act.turn_angle),
    )
    dep = simulate(env.scene(), act)
    result = {
        "units": {"length": "m", "angle": "deg"},
        "action": {"launch": [x, y], "angle_deg": deg, "length": length, "turn_fraction": frac, "turn_angle_deg": tdeg},
        "shape": dep.shape.tolist(),
        "turn_point": None if dep.turn_point is None else dep.turn_point.tolist(),
        "walls": [w.tolist() for w in dep.walls],
        "wall_normals": [n.tolist() for n in dep.wall_normals],
        "wall_on_boundary": dep.wall_on_boundary,
        "swept_area": [p.tolist() for p in dep.swept],
        "stuck": dep.stuck,
        "events": dep.events,
        "robot_length_used": dep.length,
    }
    write_atomic(os.path.join(out, "result.json"), json.dumps(result, indent=1))
    plot_deployment(
        env,
        dep,
        os.path.join(out, "deployment.png"),
        title=f"launch {deg:g} deg" + (f", turn {tdeg:g} deg at {frac:g}" if frac else ""),
    )
    print(
        f"wrote {os.path.join(str(args.out_final), 'result.json')} and deployment.png ({len(dep.walls)} walls, "
        f"{'stuck' if dep.stuck else 'free'} tip at {np.round(dep.shape[-1], 4).tolist()})"
    )
    return 0


def check_explore(args) -> None:
    """The environment (file or generated) and --deployments against the size of the action space."""
    from .environment import load_environment, nonuniform_environment, uniform_environment
    from .mapping import action_space

    if args.env and args.random:
        raise ValueError("give either --env FILE or --random uniform|nonuniform, not both")
    if args.env:
        env = load_environment(args.env)
    elif args.random:
        gen = uniform_environment if args.random == "uniform" else nonuniform_environment
        env = gen(args.seed)
    else:
        raise ValueError("explore needs --env FILE or --random uniform|nonuniform")
    actions = action_space(env, args.turns)
    if args.deployments > len(actions):
        raise ValueError(
            f"--deployments must be ≤ {len(actions)}, the number of {'turning' if args.turns else 'straight'} actions "
            f"of this environment (each is deployed at most once), got {args.deployments}"
        )
    args.env_obj, args.actions = env, actions


def cmd_explore(args) -> int:
    from tqdm import tqdm

    from .environment import save_environment, write_atomic
    from .mapping import explore
    from .plotting import plot_belief, plot_environment, plot_scores

    env, actions, out = args.env_obj, args.actions, str(args.out)
    save_environment(env, os.path.join(out, "environment.json"))
    # the bar closes as an interruption propagates, so its last line comes before the CLI's "interrupted" line (left to
    # tqdm's finaliser it was sometimes written after it, at interpreter exit)
    with tqdm(
        total=min(args.deployments, len(actions)), desc=f"MC mapping ({len(actions)} actions)", unit="deploy"
    ) as bar:

        def progress(step, total, msg):
            bar.update(1)
            bar.set_postfix_str(msg)

        res = explore(
            env,
            actions,
            deployments=args.deployments,
            mc_envs=args.mc_envs,
            seed=args.seed,
            random_repeats=args.random_repeats,
            progress=progress,
        )
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["deployment", "mc", "ideal", "random_mean", "random_std", "mc_action", "ideal_action", "mc_loop_s"])
    for i in range(len(res.mc)):
        w.writerow(
            [
                i + 1,
                f"{res.mc[i]:.4f}",
                f"{res.ideal[i]:.4f}",
                f"{res.random_mean[i]:.4f}",
                f"{res.random_std[i]:.4f}",
                res.mc_actions[i],
                res.ideal_actions[i],
                f"{res.loop_seconds[i]:.3f}",
            ]
        )
    write_atomic(os.path.join(out, "scores.csv"), buf.getvalue())
    from .grid import Grid

    g = Grid(env.boundary, 35)
    bel = res.belief.reshape(g.n, g.n)
    from .simulator import simulate

    deps = [simulate(env.scene(), actions[a]) for a in res.mc_actions]
    plot_belief(env, bel, os.path.join(out, "belief.png"), deps, title=f"final belief after {len(res.mc)} deployments")
    if res.mc_env is not None:
        plot_environment(res.mc_env, os.path.join(out, "mc_environment.png"), "last Monte Carlo environment", env)
    plot_scores(
        {"Monte Carlo": res.mc, "Ideal": res.ideal, "Random (mean)": res.random_mean},
        os.path.join(out, "scores.png"),
        band=(res.random_mean, res.random_std),
    )
    print(
        f"final scores: MC {res.mc[-1]:.2f}, Ideal {res.ideal[-1]:.2f}, "
        f"Random {res.random_mean[-1]:.2f} ± {res.random_std[-1]:.2f}; wrote "
        f"{os.path.join(str(args.out_final), 'scores.csv')}"
    )
    return 0


def _needs_subcommand(args) -> int:
    raise ValueError("give a vinemap command: deploy or explore (softsnake vinemap --help)")


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``vinemap`` with nested ``deploy`` and ``explore`` sub-commands."""
    from softsnake.cli_args import input_path, integer, number, output_folder

    vm = subparsers.add_parser(
        "vinemap",
        help="geometric vine-robot simulator and Monte Carlo mapping",
        description="Geometric vine-robot simulator on visibility graphs and Monte Carlo "
        "mapping (Fuentes et al. 2025). Lengths in metres, angles in degrees.",
    )
    sub = vm.add_subparsers(dest="vinemap_command", metavar="SUBCOMMAND")
    vm.set_defaults(func=_needs_subcommand, uses_warp=False)

    d = sub.add_parser("deploy", help="simulate one deployment; writes result.json and deployment.png")
    d.add_argument("--env", type=input_path, required=True, help="environment JSON file (see docs/vinemap.md)")
    d.add_argument("--launch", required=True, metavar="X,Y,DEG", help="launch point [m] and angle [deg]")
    d.add_argument("--turn", metavar="FRACTION,DEG", help="pre-formed turn at FRACTION of the length, angle [deg]")
    d.add_argument(
        "--length", type=number(0, lo_open=True), help="robot length [m] (default: the environment's robot_length)"
    )
    d.add_argument("--out", type=output_folder, required=True, help="output directory")
    d.set_defaults(func=cmd_deploy, check=check_deploy, stage="out", uses_warp=False)

    e = sub.add_parser("explore", help="Monte Carlo mapping vs Ideal and Random; writes scores.csv and pictures")
    src = e.add_argument_group("environment (one of)")
    src.add_argument("--env", type=input_path, help="environment JSON file")
    src.add_argument("--random", choices=("uniform", "nonuniform"), help="generate a random environment")
    e.add_argument("--seed", type=integer(0), default=0, help="seed (≥ 0) for the environment and the sampling")
    e.add_argument(
        "--deployments",
        type=integer(1),
        default=20,
        help="deployments, at most the number of actions (100 straight, 570 with --turns)",
    )
    e.add_argument("--turns", action="store_true", help="use the 570-action space with turns (default 100 straight)")
    e.add_argument("--mc-envs", type=integer(1), default=5, help="Monte Carlo environments per loop (≥ 1)")
    e.add_argument("--random-repeats", type=integer(1), default=100, help="repeats of the Random baseline (≥ 1)")
    e.add_argument("--out", type=output_folder, required=True, help="output directory")
    e.set_defaults(func=cmd_explore, check=check_explore, stage="out", uses_warp=False)
