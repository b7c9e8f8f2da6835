"""Vine commands: ``softsnake vine rollout | fit | replay | batch``.

Arguments and input files are checked before any simulation; outputs are written atomically at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np


def _out_dir(path) -> Path:
    from softsnake.io.files import ensure_writable_dir

    return ensure_writable_dir(Path(path))


def _positive(name: str, v: float) -> float:
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be > 0, got {v}")
    return v


def _obstacles(args) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles (N, 4) and circles (M, 3) [m] from --rects / --circles (same unit, --rect-unit)."""
    from softsnake.io.vine_data import read_circles, read_rects

    _positive("--rect-unit", args.rect_unit)
    rects = read_rects(args.rects, unit=args.rect_unit) if args.rects else np.zeros((0, 4))
    circles = read_circles(args.circles, unit=args.rect_unit) if args.circles else np.zeros((0, 3))
    return rects, circles


def _check_config_file(path) -> None:
    """Strict check of a vine config TOML (unknown keys and value types), naming the file and key, before any work."""
    from softsnake.io.toml_files import read_toml
    from softsnake.io.user_files import check_fields, check_keys
    from softsnake.robots.vine import VineConfig

    data = read_toml(path, "vine config")
    if "vine" in data:
        check_keys(data, ("vine",), where=str(path))
        check_fields(data["vine"], VineConfig, where=f"{path} [vine]")
    else:
        check_fields(data, VineConfig, where=str(path))


def _config(args):
    from softsnake.robots.vine import VineConfig

    if getattr(args, "config", None):
        _check_config_file(args.config)
        try:
            return (
                VineConfig.from_toml(args.config, preset=args.preset)
                if args.preset
                else VineConfig.from_toml(args.config)
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{args.config}: {exc}") from None
    return VineConfig.preset_config(args.preset or "jitosho")


def _check_vines(args, vines: int) -> None:
    """Config, input files, device and memory of a rollout/batch, before any simulation."""
    from softsnake.cli_args import check_device, check_memory, model_bytes
    from softsnake.io.vine_data import read_julia_rollout

    cfg = _config(args)
    _obstacles(args)
    if getattr(args, "reference", None):
        read_julia_rollout(args.reference, bodies=2 * cfg.links)
    check_device(args.device)
    steps = int(round(args.seconds / cfg.dt))
    if steps < 1:
        raise ValueError(f"--seconds {args.seconds:g} is shorter than one step ({cfg.dt:.4g} s)")
    bodies = 2 * cfg.links
    check_memory(
        f"{vines} vine(s) × {steps} steps",
        vines * (model_bytes(particles=0, bodies=bodies) + 8.0 * 3 * bodies * (steps + 1)),
        args.device,
    )


def check_rollout_command(args) -> None:
    _check_vines(args, 1)


def check_batch_command(args) -> None:
    if args.angles[0] > args.angles[1]:
        raise ValueError(f"--angles MIN_DEG MAX_DEG: {args.angles[0]:g} > {args.angles[1]:g}")
    _check_vines(args, args.vines)


def check_fit_command(args) -> None:
    from softsnake.io.vine_data import read_video, read_wall_fit

    if bool(args.video) == bool(args.wall):
        raise ValueError("give either --video DIR [DIR ...] or --wall FILE")
    if args.wall and args.model != "linear":
        raise ValueError("the wall case fits the linear model (K, C) of the original")
    if args.wall:
        read_wall_fit(args.wall)
    for video in args.video or ():
        read_video(video)


def check_replay_command(args) -> None:
    from softsnake.io.vine_data import read_video

    read_params_toml(args.params)
    read_video(args.video)


def _plot_vines(ax, q, rects=None, walls=None, alpha=1.0, color=None, circles=None):
    import matplotlib.pyplot as plt

    if rects is not None:
        for x, y, w, h in rects:
            ax.add_patch(plt.Rectangle((x, y), w, h, color="0.8", zorder=0))
    if circles is not None:
        for x, y, r in circles:
            ax.add_patch(plt.Circle((x, y), r, color="0.8", zorder=0))
    if walls is not None:
        for x1, y1, x2, y2 in np.reshape(walls, (-1, 4)):
            ax.plot([x1, x2], [y1, y2], "k-", lw=2)
    cmap = plt.get_cmap("hsv")
    for w in range(q.shape[0]):
        ax.plot(q[w, :, 0], q[w, :, 1], "-", color=color or cmap(w / max(q.shape[0], 1)), lw=1.2, alpha=alpha)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")


# ---------------------------------------------------------------------------- rollout
def run_rollout_command(args) -> int:
    from softsnake.experiments.vine_julia import compare_to_reference, rollout_rects
    from softsnake.io.files import save_figure_atomic, write_json_atomic, write_npz_atomic
    from softsnake.io.vine_data import read_julia_rollout

    cfg = _config(args)
    _positive("--seconds", args.seconds)
    rects, circles = _obstacles(args)
    ref = read_julia_rollout(args.reference, bodies=2 * cfg.links)[0] if args.reference else None
    out = _out_dir(args.out)
    t0 = time.perf_counter()
    t, q, sim = rollout_rects(rects, args.seconds, config=cfg, device=args.device, circles=circles)
    wall = time.perf_counter() - t0
    q = q[:, 0]
    write_npz_atomic(out / "rollout.npz", t=t, q=q)
    summary = dict(
        preset=cfg.preset,
        links=cfg.links,
        bodies=int(q.shape[1]),
        steps=int(len(t) - 1),
        dt=cfg.dt,
        seconds=float(t[-1]),
        wall_seconds=wall,
        ms_per_step=1000 * sim.step_seconds / max(sim.steps, 1),
    )
    if ref is not None:
        c = compare_to_reference(q, ref)
        summary.update(
            reference=str(args.reference),
            mean_body_error_mm=1000 * c.mean_body_error,
            final_tip_error_mm=1000 * c.final_tip_error,
            max_body_error_mm=1000 * c.max_body_error,
            compared_steps=c.steps,
        )
    write_json_atomic(out / "summary.json", summary)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 6))
    for k in np.linspace(0, len(q) - 1, 6).astype(int):
        _plot_vines(
            ax,
            q[k : k + 1],
            rects=rects if k == 0 else None,
            circles=circles if k == 0 else None,
            color=plt.cm.viridis(k / max(len(q) - 1, 1)),
        )
    if ref is not None:
        ax.plot(
            ref[min(len(ref), len(q)) - 1, :, 0],
            ref[min(len(ref), len(q)) - 1, :, 1],
            "k--",
            lw=1,
            label="reference (final)",
        )
        ax.legend()
    ax.set_title(f"vine rollout ({cfg.preset}), {t[-1]:.2f} s")
    save_figure_atomic(fig, out / "rollout.png", dpi=110)
    plt.close(fig)
    print(json.dumps(summary, indent=1))
    return 0


# ---------------------------------------------------------------------------- fit
def _write_params_toml(path, law: str, params: dict, meta: dict) -> None:
    from softsnake.io.files import write_text_atomic

    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        return repr(float(v)) if isinstance(v, float) else str(v)

    lines = (
        ["# softsnake vine fit", "[fit]", f"model = {val(law)}"]
        + [f"{k} = {val(v)}" for k, v in meta.items()]
        + ["", "[params]"]
        + [f"{k} = {val(v)}" for k, v in params.items()]
    )
    write_text_atomic(path, "\n".join(lines) + "\n")


def read_params_toml(path) -> tuple[str, dict, dict]:
    from softsnake.io.toml_files import read_toml

    p = Path(path)
    data = read_toml(p, "params file")
    if "params" not in data or "fit" not in data or "model" not in data["fit"]:
        raise ValueError(
            f"{p}: needs a [fit] table with 'model' and a [params] table (write it with 'softsnake vine fit')"
        )
    return data["fit"]["model"], dict(data["params"]), dict(data["fit"])


def run_fit_command(args) -> int:
    out = Path(args.out)  # checked by its argument type; written atomically at the end
    if args.wall:
        from softsnake.experiments.vine_wall import fit_wall, tip_x_mae, wall_scene

        if args.model != "linear":
            raise ValueError("the wall case fits the linear model (K, C) of the original")
        scene = wall_scene(args.wall, touch_wall=not args.wall_as_given)
        res = fit_wall(
            scene, popsize=args.popsize, generations=args.generations, seed=args.seed, verbose=not args.quiet
        )
        mae = float(tip_x_mae(scene, np.array([[res.params["stiffness"], res.params["damping"]]]))[0])
        meta = dict(
            data=str(args.wall),
            tip_x_mae_mm=1000 * mae,
            wall_offset_mm=1000 * scene.wall_offset,
            rollouts=res.rollouts,
            launches=res.launches,
            wall_seconds=res.seconds,
            seed=args.seed,
        )
    else:
        from softsnake.experiments.vine_video import FIT_MODELS, estimate_radius_px, fit_videos, make_scene
        from softsnake.io.vine_data import read_video

        if args.model not in FIT_MODELS:
            raise ValueError(f"--model must be one of {', '.join(FIT_MODELS)}, got {args.model!r}")
        deps = [read_video(d) for d in args.video]
        radius = args.radius_px if args.radius_px else estimate_radius_px(deps)
        _positive("--radius-px", radius)
        _positive("--link-radii", args.link_radii)
        scenes = [make_scene(d, radius, substeps=args.substeps, link_radii=args.link_radii) for d in args.video]
        res = fit_videos(
            scenes,
            args.model,
            popsize=args.popsize,
            generations=args.generations,
            seed=args.seed,
            verbose=not args.quiet,
        )
        meta = dict(
            videos=[str(v) for v in args.video],
            radius_px=radius,
            substeps=args.substeps,
            link_radii=args.link_radii,
            scale_m_per_px=scenes[0].scale,
            mse_px2=res.loss,
            mse_px2_per_video=list(res.per_video.values()),
            mse_px2_in_batch=res.batch_loss,
            rollouts=res.rollouts,
            launches=res.launches,
            wall_seconds=res.seconds,
            seed=args.seed,
        )
    from softsnake.cli import raise_if_stopped

    raise_if_stopped()  # a stop swallowed during the fit: no parameter file from it
    _write_params_toml(out, args.model, res.params, meta)
    print(json.dumps(dict(model=args.model, params=res.params, **meta), indent=1))
    return 0


# ---------------------------------------------------------------------------- replay
def run_replay_command(args) -> int:
    from softsnake.experiments.vine_video import make_scene, replay
    from softsnake.io.files import save_figure_atomic, write_json_atomic, write_npz_atomic

    law, params, fit = read_params_toml(args.params)
    if "radius_px" not in fit:
        raise ValueError(f"{args.params}: not a video fit (no radius_px in [fit])")
    out = _out_dir(args.out)
    scene = make_scene(
        args.video,
        float(fit["radius_px"]),
        substeps=int(fit.get("substeps", 1)),
        link_radii=float(fit.get("link_radii", 4.0)),
    )
    r = replay(scene, law, params)
    write_npz_atomic(out / "replay.npz", frames=r["frames"], sim_points=r["sim_points"], sim_count=r["sim_count"])
    write_json_atomic(
        out / "replay.json",
        dict(video=str(args.video), model=law, params=params, mse_px2=r["mse"], frames=int(len(r["frames"]))),
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dep = scene.deployment
    F = len(r["frames"])
    picks = np.linspace(0, F - 1, 4).astype(int)
    fig, axs = plt.subplots(1, len(picks), figsize=(4.2 * len(picks), 4.4))
    for ax, k in zip(axs, picks):
        for (x1, y1), (x2, y2) in dep.walls:
            ax.plot([x1, x2], [-y1, -y2], "k-", lw=2)  # walls in the points' convention (y negated)
        real = dep.frames[k]
        ax.plot(real[:, 0], real[:, 1], "-", color="tab:orange", lw=3, alpha=0.7, label="real centreline")
        n = r["sim_count"][k]
        ax.plot(
            r["sim_points"][k, :n, 0],
            r["sim_points"][k, :n, 1],
            "o-",
            color="tab:blue",
            ms=3,
            lw=1,
            label="simulated body centres",
        )
        ax.set_aspect("equal")
        ax.set_title(f"{dep.name} frame {k}")
        ax.invert_yaxis()
    axs[0].legend(loc="best", fontsize=7)
    fig.suptitle(f"replay ({law}): mean squared nearest-point distance {r['mse']:.1f} px²")
    save_figure_atomic(fig, out / "replay.png", dpi=100)
    plt.close(fig)
    print(
        f"{dep.name}: {law} model, mean squared nearest-point distance {r['mse']:.2f} px² over {F} frames → "
        f"{Path(args.out_final) / 'replay.npz'}"
    )
    return 0


# ---------------------------------------------------------------------------- batch
def run_batch_command(args) -> int:
    from softsnake.experiments.vine_julia import rollout_rects
    from softsnake.io.files import save_figure_atomic, write_json_atomic

    if args.vines < 1:
        raise ValueError(f"--vines must be ≥ 1, got {args.vines}")
    _positive("--seconds", args.seconds)
    cfg = _config(args)
    rects, circles = _obstacles(args)
    out = _out_dir(args.out)
    rng = np.random.default_rng(args.seed)
    lo, hi = np.radians(args.angles)
    heads = rng.uniform(lo, hi, args.vines)
    t0 = time.perf_counter()
    t, q, sim = rollout_rects(
        rects, args.seconds, config=cfg, worlds=args.vines, headings=heads, device=args.device, circles=circles
    )
    wall = time.perf_counter() - t0
    if not np.all(np.isfinite(q)):
        raise ValueError("non-finite state in the batch: no timings published")
    summary = dict(
        preset=cfg.preset,
        vines=args.vines,
        links=cfg.links,
        steps=sim.steps,
        dt=cfg.dt,
        device=str(sim.model.device),
        wall_seconds=wall,
        ms_per_step=1000 * sim.step_seconds / sim.steps,
        ms_per_vine_step=1000 * sim.step_seconds / sim.steps / args.vines,
        seed=args.seed,
        headings_deg=np.degrees(heads).tolist(),
    )
    write_json_atomic(out / "batch.json", summary)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 6))
    _plot_vines(ax, q[-1], rects=rects, circles=circles)
    ax.set_title(f"{args.vines} vines, {t[-1]:.1f} s ({summary['ms_per_step']:.0f} ms/step, {summary['device']})")
    save_figure_atomic(fig, out / "batch.png", dpi=110)
    plt.close(fig)
    print(json.dumps({k: v for k, v in summary.items() if k != "headings_deg"}, indent=1))
    return 0


def _needs_subcommand(args) -> int:
    raise ValueError("give a vine command: rollout, fit, replay or batch (softsnake vine --help)")


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("vine", help="soft growing (vine) robots: rollout, fit, replay, batch")
    vs = p.add_subparsers(dest="vine_command", metavar="VINE_COMMAND")
    p.set_defaults(func=_needs_subcommand)
    from softsnake.cli_args import input_path, integer, number, output_file, output_folder

    def common(q, preset=True):
        if preset:
            q.add_argument("--preset", choices=("jitosho", "chen"), default=None, help="model preset (default jitosho)")
            q.add_argument("--config", type=input_path, help="TOML file with a [vine] table (VineConfig fields)")
        q.add_argument("--device", default="cpu")

    r = vs.add_parser(
        "rollout", help="one vine among rectangles: rollout.npz (t, q (T, B, 3)), rollout.png, summary.json"
    )
    common(r)
    r.add_argument("--rects", type=input_path, help=".rects file: x y w h per line (lower-left corner, size)")
    r.add_argument(
        "--circles", type=input_path, help=".circles file: x y r per line (centre, radius), same unit as --rect-unit"
    )
    r.add_argument(
        "--rect-unit",
        type=number(0, lo_open=True),
        default=0.0254,
        help="metres per .rects/.circles unit (default: inches)",
    )
    r.add_argument("--seconds", type=number(0, lo_open=True), default=5.0)
    r.add_argument(
        "--reference", type=input_path, help="reference rollout csv to compare with (mean body / final tip error)"
    )
    r.add_argument("--out", type=output_folder, required=True)
    r.set_defaults(func=run_rollout_command, check=check_rollout_command, stage="out")

    f = vs.add_parser("fit", help="fit bending parameters to videos (or the wall case): params.toml")
    f.add_argument("--video", type=input_path, nargs="+", help="video directories (points.npy, walls.npy)")
    f.add_argument("--wall", type=input_path, help="jitosho_wall_fit.npz: fit K, C of the wall-growth case")
    f.add_argument("--wall-as-given", action="store_true", help="wall case: do not move the wall onto the frame-0 tip")
    f.add_argument(
        "--model",
        choices=("linear", "wrinkling", "mlp"),
        default="linear",
        help="linear | wrinkling | mlp (1-10-1 tanh network, 31 parameters)",
    )
    f.add_argument(
        "--radius-px",
        type=number(0, lo_open=True),
        default=None,
        help="tube radius in pixels (default: estimated from the videos)",
    )
    f.add_argument(
        "--substeps",
        type=integer(1),
        default=1,
        help="engine steps per video frame (0.1 s); the stiffness bound grows as its square",
    )
    f.add_argument(
        "--link-radii",
        type=number(0, lo_open=True),
        default=4.0,
        help="video fit: link length in tube radii (Chen et al.: 2, the tube diameter)",
    )
    f.add_argument("--popsize", type=integer(2), default=8)
    f.add_argument("--generations", type=integer(1), default=6)
    f.add_argument("--seed", type=integer(0), default=0)
    f.add_argument("--quiet", action="store_true")
    f.add_argument("--out", type=output_file(".toml"), required=True, help="params .toml file")
    f.set_defaults(func=run_fit_command, check=check_fit_command)

    y = vs.add_parser("replay", help="simulate a video with fitted parameters: replay.npz, replay.png (overlay)")
    y.add_argument("--video", type=input_path, required=True)
    y.add_argument(
        "--params", type=input_path, required=True, help="params.toml written by 'softsnake vine fit --video'"
    )
    y.add_argument("--out", type=output_folder, required=True)
    y.set_defaults(func=run_replay_command, check=check_replay_command, stage="out")

    b = vs.add_parser("batch", help="many vines with random launch angles in one model: batch.png, batch.json")
    common(b)
    b.add_argument("--vines", type=integer(1), default=64)
    b.add_argument("--rects", type=input_path, help=".rects file")
    b.add_argument("--circles", type=input_path, help=".circles file: x y r per line")
    b.add_argument(
        "--rect-unit",
        type=number(0, lo_open=True),
        default=0.0254,
        help="metres per .rects/.circles unit (default: inches)",
    )
    b.add_argument("--seconds", type=number(0, lo_open=True), default=3.0)
    b.add_argument("--angles", type=number(), nargs=2, default=(-80.0, -20.0), metavar=("MIN_DEG", "MAX_DEG"))
    b.add_argument("--seed", type=integer(0), default=0)
    b.add_argument("--out", type=output_folder, required=True)
    b.set_defaults(func=run_batch_command, check=check_batch_command, stage="out")
