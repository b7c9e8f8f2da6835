"""Snake commands: ``softsnake gait | curvature | step-response | bench | info``.

Every argument is checked (gait parameters, device, output folder, config file) before any simulation work; outputs
are written atomically at the end, so an interrupted run leaves no file that looks complete.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from contextlib import contextmanager
from pathlib import Path

import numpy as np


def snake_config_from_args(args):
    """The snake config of ``--config`` (strict TOML loader), ``--coarse`` and the ``--newton/--linear`` budget."""
    from softsnake.robots.snake import SnakeConfig

    cfg = SnakeConfig.from_toml(args.config) if getattr(args, "config", None) else SnakeConfig()
    if getattr(args, "coarse", False):
        cfg = cfg.with_coarse_mesh()
    budget = {
        k: v
        for k, v in (
            ("newton_iterations", getattr(args, "newton", None)),
            ("linear_iterations", getattr(args, "linear", None)),
        )
        if v is not None
    }
    if budget:
        cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, **budget))
    return cfg


def _snake_world_bytes(cfg, links: int | None = None) -> int:
    """Lower bound on the memory of one world of the snake (or of ``links`` links) [bytes], from the mesh counts of
    ``snake_link.link_mesh`` (sections × (3·inner_ring + 1) particles, (sections − 1)·12·inner_ring tets per link)."""
    from softsnake.cli_args import model_bytes

    n = cfg.links if links is None else links
    return model_bytes(
        particles=n * cfg.sections * (3 * cfg.inner_ring + 1),
        tets=n * (cfg.sections - 1) * 12 * cfg.inner_ring,
        bodies=3 * (n + 1),
    )


def _frames(seconds: float, cfg, what: str = "--seconds") -> int:
    frames = int(round(seconds / cfg.frame_dt))
    if frames < 1:
        raise ValueError(f"{what} {seconds:g} is shorter than one frame ({cfg.frame_dt:.4g} s)")
    return frames


def check_snake_memory(
    what: str,
    cfg,
    worlds: int,
    *,
    links: int | None = None,
    frames: int = 0,
    values_per_frame: int = 0,
    device: str = "cpu",
) -> None:
    """Memory of ``worlds`` snake worlds plus ``frames`` × worlds × ``values_per_frame`` float64 records."""
    from softsnake.cli_args import check_memory

    check_memory(what, worlds * (_snake_world_bytes(cfg, links) + 8.0 * frames * values_per_frame), device)


@contextmanager
def progress_bar(desc: str, quiet: bool, prog: str = "softsnake"):
    """A frame-progress callback ``update(done, total)`` for the run inside the ``with`` block; the tqdm bar opens on
    the first update and is closed when the block ends, also when an interruption propagates through it (so the
    bar never writes after the CLI's last message). A run that will take more than an hour says so (also when
    ``quiet``), once its first frames are timed."""
    from tqdm import tqdm

    from softsnake.cli_args import RunTimeNotice

    bar = None
    notice = RunTimeNotice(prog)

    def update(done, total):
        nonlocal bar
        notice(done, total)
        if quiet:
            return
        if bar is None:
            bar = tqdm(total=total, desc=desc, unit="frame")
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        if bar is not None:
            bar.close()


# ---------------------------------------------------------------------------- gait
#: a gait period must span at least this many control frames, or the sampled targets no longer describe the wave
FRAMES_PER_GAIT_PERIOD = 4


def gait_from_lists(args, cfg):
    """The gait of ``--omega/--alpha/--phi/--amplitude``, each one value or a comma-separated list of one per world:
    ``args.worlds`` is set to the lists' length when not given (or read from a checkpoint)."""
    lists = {f"--{k}": getattr(args, k) for k in ("omega", "alpha", "phi", "amplitude")}
    lengths = {flag: len(v) for flag, v in lists.items() if len(v) > 1}
    worlds = args.worlds or max([1, *lengths.values()])
    wrong = {flag: n for flag, n in lengths.items() if n != worlds}
    if wrong:
        given = ", ".join(f"{flag} has {n}" for flag, n in wrong.items())
        source = "--worlds" if args.worlds else "the longest list"
        raise ValueError(f"give one value or one per world ({worlds} from {source}): {given}")
    args.worlds = worlds
    highest = 1.0 / (FRAMES_PER_GAIT_PERIOD * cfg.frame_dt)
    if max(args.omega) > highest:
        raise ValueError(
            f"--omega must be ≤ {highest:g} Hz (the gait is sampled once per {cfg.frame_dt:.4g} s control frame, and "
            f"a period needs at least {FRAMES_PER_GAIT_PERIOD} frames), got {max(args.omega):g}"
        )
    values = {
        k: (v[0] if len(v) == 1 else list(v))
        for k, v in zip(("omega_hz", "alpha", "phi", "amplitude_psi"), lists.values())
    }
    from softsnake.robots.pneumatics import OpenLoopGait

    return OpenLoopGait(**values, p_max_psi=cfg.p_max_psi)


def check_gait_command(args) -> None:
    from softsnake.cli_args import check_device

    if args.resume:
        given = [
            f
            for f, v in (
                ("--config", args.config),
                ("--coarse", args.coarse),
                ("--worlds", args.worlds),
                ("--no-latency", args.no_latency),
            )
            if v
        ]
        if given:
            raise ValueError(
                f"--resume continues the checkpoint's snakes with their configuration; leave out {', '.join(given)}"
            )
        from softsnake.robots.snake_sim import read_checkpoint

        _, cfg, meta = read_checkpoint(args.resume)  # without building the snake; the format checked
        args.worlds = meta["worlds"]
        budget = {
            k: v for k, v in (("newton_iterations", args.newton), ("linear_iterations", args.linear)) if v is not None
        }
        if budget:
            cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, **budget))
    else:
        cfg = snake_config_from_args(args)
        if args.no_latency:
            cfg = dataclasses.replace(cfg, pneumatics=dataclasses.replace(cfg.pneumatics, latency=False))
    args.gait = gait_from_lists(args, cfg)
    frames = _frames(args.seconds, cfg)
    check_device(args.device)
    check_snake_memory(
        f"--worlds {args.worlds} × --seconds {args.seconds:g}",
        cfg,
        args.worlds,
        frames=frames,
        values_per_frame=4 + 2 * cfg.links,
        device=args.device,
    )
    args.cfg = cfg


def run_gait_command(args) -> int:
    cfg, gait, out = args.cfg, args.gait, Path(args.out)
    from softsnake.experiments.gait import SnakeAnimation, SnakeUsdRecorder, plot_trajectory, run_gait
    from softsnake.io.files import write_json_atomic
    from softsnake.robots.snake_sim import SnakeSim

    if args.resume:
        sim = SnakeSim.load(args.resume, device=args.device, solver=cfg.solver)
    else:
        sim = SnakeSim(worlds=args.worlds, device=args.device, config=cfg)
    if not args.json:
        print(sim if not args.resume else f"{sim}, resumed at t = {sim.time:.4g} s")
    usd = None if args.no_usd else SnakeUsdRecorder(out / f"snake.{args.usd_format}", sim, every=args.usd_every)
    animation = None if args.no_gif else SnakeAnimation(sim)
    recorders = [r for r in (usd, animation) if r is not None]

    def record(s):
        for r in recorders:
            r(s)

    try:
        with progress_bar("gait", args.quiet, args.prog) as progress:
            traj = run_gait(gait, args.seconds, sim=sim, frame_callback=record, progress=progress)
    except BaseException:
        if usd is not None:
            usd.discard()
        raise
    per_world = {k: np.broadcast_to(v, (args.worlds,)) for k, v in gait.as_dict().items() if k != "p_max_psi"}
    traj.save(out / "trajectory.npz", **per_world)
    sim.save(out / "checkpoint.npz")
    latency = cfg.pneumatics.latency
    label = gait_label(gait.world(0)) + f", latency {'on' if latency else 'off'}"
    labels = None
    if gait.worlds is not None:
        labels = [gait_label(gait.world(w)) for w in range(gait.worlds)]
        label = f"{gait.worlds} gaits, latency {'on' if latency else 'off'}"
    plot_trajectory(traj, out / "trajectory.png", labels=labels, title=label)
    if animation is not None:
        animation.save(out / "snake.gif", title=label)
    if usd is not None:
        usd.close()
    speed = traj.speed_body_lengths()
    summary = dict(
        gait=gait.as_dict(),
        latency=latency,
        resumed_from=str(args.resume) if args.resume else None,
        start_seconds=traj.t0,
        worlds=args.worlds,
        seconds=float(traj.t[-1]),  # the time at the end of the run, counted from the start of the gait
        displacement_m=traj.displacement().tolist(),
        speed_body_lengths_per_s=speed.tolist(),
        body_length_m=traj.body_length,
        config=cfg.to_dict(),
    )
    write_json_atomic(out / "summary.json", summary)
    if args.json:
        print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=1))
        return 0
    for w in range(min(args.worlds, 16)):
        which = f"world {w}" + (f" ({gait_label(gait.world(w))})" if gait.worlds is not None else "")
        print(
            f"COM displacement {which}: {traj.displacement()[w].round(4).tolist()} m, mean speed {speed[w]:.3f} body "
            "lengths/s"
        )
    written = (
        ["trajectory.png", "summary.json", "checkpoint.npz"]
        + ([] if animation is None else ["snake.gif"])
        + ([] if usd is None else [f"snake.{args.usd_format}"])
    )
    print(f"wrote {Path(args.out_final) / 'trajectory.npz'}, {', '.join(written)}")
    return 0


def gait_label(gait) -> str:
    """A single gait's parameters in one short line."""
    return f"ω={gait.omega_hz:g} Hz, α={gait.alpha:.3f}, φ={gait.phi:g}, A={gait.amplitude_psi:g} psi"


# ----------------------------------------------------------------------- curvature
def check_curvature_command(args) -> None:
    from softsnake.cli_args import check_device

    cfg = snake_config_from_args(args)
    p_max = cfg.p_max_psi
    if args.max_psi < p_max:
        raise ValueError(
            f"--max-psi must be ≥ p_max = {p_max:g} psi (the linear fits and the bending angle are over 0…p_max), got "
            f"{args.max_psi:g}"
        )
    count = 2 * args.max_psi / args.step_psi + 1  # pressures in the sweep (float: may overflow an int)
    check_device(args.device)
    check_snake_memory(
        f"--max-psi {args.max_psi:g} / --step-psi {args.step_psi:g} ({count:.0f} pressures)",
        cfg,
        count,
        links=1,
        device=args.device,
    )
    p = np.arange(-args.max_psi, args.max_psi + 0.5 * args.step_psi, args.step_psi)
    fitted = int(np.count_nonzero((p >= -1e-9) & (p <= p_max + 1e-9)))
    if fitted < 3 or int(np.count_nonzero((p <= 1e-9) & (p >= -p_max - 1e-9))) < 3:
        raise ValueError(
            f"--step-psi {args.step_psi:g} leaves {fitted} pressures in 0…{p_max:g} psi; the linear fit needs at "
            f"least 3 on each side (step ≤ {p_max / 2:g} psi)"
        )
    args.cfg, args.pressures = cfg, p


def run_curvature_command(args) -> int:
    cfg, out = args.cfg, Path(args.out)
    from softsnake.experiments.curvature import curvature_sweep
    from softsnake.io.files import save_figure_atomic, write_text_atomic

    with progress_bar("curvature", args.quiet, args.prog) as progress:
        r = curvature_sweep(
            args.pressures, config=cfg, device=args.device, settle_seconds=args.seconds, progress=progress
        )
    rows = ["pressure_psi,curvature_per_m"] + [f"{a:.6g},{k:.8g}" for a, k in zip(r.pressure_psi, r.curvature_per_m)]
    write_text_atomic(out / "curvature.csv", "\n".join(rows) + "\n")
    pos, neg = r.linear_fit(0.0, cfg.p_max_psi), r.linear_fit(-cfg.p_max_psi, 0.0)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    ax.plot(r.pressure_psi, r.curvature_per_m, "o-", label="simulated link")
    for (a, b, r2), lo, hi in ((pos, 0, cfg.p_max_psi), (neg, -cfg.p_max_psi, 0)):
        xs = np.array([lo, hi])
        ax.plot(xs, a * xs + b, "--", label=f"fit {lo:g}…{hi:g} psi: {a:.3f} 1/(m·psi), R²={r2:.4f}")
    ax.set_xlabel("pressure [psi] (negative: left chamber)")
    ax.set_ylabel("curvature [1/m]")
    ax.set_title("quasi-static curvature vs pressure (paper Fig. 5)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure_atomic(fig, out / "curvature.png", dpi=110)
    plt.close(fig)
    print(f"+side: {pos[0]:.4f} 1/(m·psi), R²={pos[2]:.5f}; −side: {neg[0]:.4f} 1/(m·psi), R²={neg[2]:.5f}")
    print(
        f"bending angle at +{cfg.p_max_psi:g} psi: {r.bending_angle_deg(cfg.p_max_psi):.1f}°, at −{cfg.p_max_psi:g} "
        f"psi: {r.bending_angle_deg(-cfg.p_max_psi):.1f}°"
    )
    print(f"settled: the averaged curvatures changed by at most {r.settled_to:.3g} 1/m between the last two windows")
    print(f"wrote {Path(args.out_final) / 'curvature.csv'}, curvature.png")
    return 0


# ------------------------------------------------------------------- step response
def check_step_response_command(args) -> None:
    from softsnake.cli_args import check_device

    cfg = snake_config_from_args(args)
    frames = _frames(args.seconds, cfg)
    check_device(args.device)
    check_snake_memory(
        f"--seconds {args.seconds:g}", cfg, 5, links=1, frames=frames, values_per_frame=4, device=args.device
    )
    args.cfg = cfg


def run_step_response_command(args) -> int:
    cfg, out = args.cfg, Path(args.out)
    from softsnake.experiments.step_response import plot_step_responses, step_responses
    from softsnake.io.files import write_npz_atomic

    with progress_bar("step response", args.quiet, args.prog) as progress:
        r = step_responses(config=cfg, seconds=args.seconds, device=args.device, progress=progress)
    write_npz_atomic(
        out / "step_response.npz",
        t=r.t,
        levels_psi=r.levels_psi,
        inflate_pressure=r.inflate_pressure,
        inflate_curvature=r.inflate_curvature,
        deflate_pressure=r.deflate_pressure,
        deflate_curvature=r.deflate_curvature,
    )
    plot_step_responses(r, out / "step_response.png")
    for lv, rise, fall in zip(r.levels_psi, r.rise_time(), r.fall_time()):
        print(f"{lv:4.1f} psi: 90% rise {rise:.3f} s, 10% fall {fall:.3f} s")
    print(f"wrote {Path(args.out_final) / 'step_response.npz'}, step_response.png")
    return 0


# --------------------------------------------------------------------------- bench
def check_bench_command(args) -> None:
    from softsnake.cli_args import check_device
    from softsnake.experiments.bench import parse_snakes

    cfg = snake_config_from_args(args)
    args.snake_counts = parse_snakes(args.snakes)
    check_device(args.device)
    biggest = max(args.snake_counts)
    check_snake_memory(
        f"--snakes {biggest:g}", cfg, max(1, math.ceil(biggest)), links=1 if biggest < 1 else None, device=args.device
    )
    args.cfg = cfg


#: ``bench --frames`` from which a short timing of the largest count comes first, to say if the run takes over an hour
BENCH_PROBE_FROM = 1000


def _bench_time_notice(args) -> None:
    """Time 3 frames of the largest snake count and say how long the whole bench will take, if over an hour."""
    from softsnake.cli_args import RunTimeNotice
    from softsnake.experiments.bench import bench_snakes

    probe = bench_snakes(max(args.snake_counts), 3, device=args.device, config=args.cfg, warmup=1)
    total = len(args.snake_counts) * args.frames
    notice = RunTimeNotice(args.prog, probe_units=1, probe_s=0.0, clock=iter([0.0, 1e-3 * probe["ms_total"]]).__next__)
    notice(0, total)
    notice(1, total)


def run_bench_command(args) -> int:
    from softsnake.experiments.bench import PAPER_TABLE_II, bench_snakes

    cfg, snakes = args.cfg, args.snake_counts
    if args.frames >= BENCH_PROBE_FROM:
        _bench_time_notice(args)
    rows = []
    for s in snakes:
        rows.append(bench_snakes(s, args.frames, device=args.device, config=cfg))
        if not args.json:
            r = rows[-1]
            paper = PAPER_TABLE_II.get(s)
            per = "    -" if r["ms_per_snake"] is None else f"{r['ms_per_snake']:8.2f}"
            print(
                f"snakes {s:5g} | assembly {r['ms_assembly']:8.2f} ms | solve {r['ms_solve']:8.2f} ms | total "
                f"{r['ms_total']:8.2f} ms | per snake {per} | "
                f"{r['steps_per_s']:7.1f} steps/s | RTF {r['real_time_factor']:.3f} | "
                f"{r['launches_per_step']:.0f} launches/step | peak {r['peak_memory_mb']:.0f} "
                f"MB | paper total {paper[2] if paper else '-'} ms",
                flush=True,
            )
    from softsnake.cli import raise_if_stopped

    raise_if_stopped()  # a stop swallowed during the runs: no table or plot from them
    if args.json:
        print(json.dumps(rows, indent=2))
    if args.csv:
        from softsnake.experiments.bench import bench_csv
        from softsnake.io.files import write_text_atomic

        write_text_atomic(args.csv, bench_csv(rows))
    if args.plot:
        from softsnake.experiments.bench import plot_bench

        plot_bench(rows, args.plot)
    return 0


# ---------------------------------------------------------------------------- info
def check_info_command(args) -> None:
    args.cfg = snake_config_from_args(args)


def run_info_command(args) -> int:
    """Counts and settings as TOML comments, then the configuration: the whole output loads with ``--config``."""
    from softsnake.robots.snake import snake_counts

    cfg = args.cfg
    lines = ["one snake vs paper Table I:"]
    lines += [
        f"  {k:22s} {ours:6d}   paper {paper:6d}   {100 * rel:+6.1f}%"
        for k, (ours, paper, rel) in snake_counts(cfg).items()
    ]
    lines.append(
        f"body length {cfg.body_length:.3f} m, link {cfg.link_length} m × Ø{2 * cfg.link_radius} m, Y = "
        f"{cfg.youngs_modulus} Pa, ν = {cfg.poisson_ratio}"
    )
    linear = "MINRES" if cfg.solver.fem == "primal" else "PCR"
    lines.append(
        f"solver: h = {cfg.h:.5f} s ({cfg.substeps} sub-steps per {cfg.frame_dt:.5f} s frame), "
        f"{cfg.solver.newton_iterations} Newton × {cfg.solver.linear_iterations} {linear} iterations"
    )
    lines += ["", "full configuration (this whole output is TOML: save it and load it with --config):"]
    print("\n".join(f"# {line}".rstrip() for line in lines))
    print()
    print(cfg.to_toml())
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    from softsnake.cli_args import input_path, integer, number, numbers, output_file, output_folder

    def common(p, device=True):
        p.add_argument(
            "--config",
            type=input_path,
            default=None,
            help="snake configuration TOML ([snake], [pneumatics], [solver] tables)",
        )
        p.add_argument(
            "--coarse", action="store_true", help="coarse link mesh (5 sections, 13 particles each) for quick runs"
        )
        p.add_argument(
            "--newton", type=integer(1), default=None, help="Newton iterations per solver step (default: config, 4)"
        )
        p.add_argument(
            "--linear",
            type=integer(1),
            default=None,
            help='linear-solver iterations per Newton iteration: MINRES, or PCR with fem = "dual" '
            "(default: config, 20)",
        )
        if device:
            p.add_argument("--device", default="cpu", help="warp device: cpu, cuda, cuda:0 (default: cpu)")
            p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = sub.add_parser(
        "gait",
        help="open-loop undulation gait (paper Eq. 9): trajectory.npz/.png, snake.gif, snake.usdc, checkpoint.npz",
    )
    common(p)
    p.add_argument("--worlds", type=integer(1), default=None, help="snakes simulated together (default 1)")
    p.add_argument(
        "--seconds",
        type=number(0, lo_open=True),
        default=5.0,
        help="simulated time [s] (default 5; with --resume: how much longer)",
    )
    p.add_argument(
        "--resume",
        type=input_path,
        default=None,
        metavar="CHECKPOINT",
        help="continue the run that wrote this checkpoint.npz (its snakes, configuration and gait time)",
    )
    per_world = "; a comma-separated list gives one value per world"
    p.add_argument(
        "--omega",
        type=numbers(0),
        default=(2.0,),
        help=f"oscillation frequency ω [Hz], ≤ a quarter of the frame rate (15 Hz) (default 2){per_world}",
    )
    p.add_argument(
        "--alpha",
        type=numbers(),
        default=(math.pi / 2,),
        help=f"phase lag between links α [rad] (default π/2){per_world}",
    )
    p.add_argument(
        "--phi", type=numbers(-1, 1), default=(0.0,), help=f"offset φ in [−1, 1] (turning; default 0){per_world}"
    )
    p.add_argument(
        "--amplitude", type=numbers(), default=(8.0,), help=f"amplitude A [psi] ≤ p_max (default 8){per_world}"
    )
    p.add_argument("--no-latency", action="store_true", help="pressures follow the targets instantly (paper Fig. 7)")
    p.add_argument("--out", type=output_folder, required=True, help="output folder")
    p.add_argument("--no-usd", action="store_true", help="skip the USD animation")
    p.add_argument("--no-gif", action="store_true", help="skip the animated top view (snake.gif)")
    p.add_argument("--usd-every", type=integer(1), default=2, help="write every k-th frame to USD (default 2: 30 fps)")
    p.add_argument("--usd-format", choices=("usdc", "usda"), default="usdc")
    p.add_argument("--json", action="store_true", help="print the run's summary (displacement, speed) as JSON")
    p.set_defaults(func=run_gait_command, check=check_gait_command, stage="out")

    from softsnake.experiments.search_cli import add_commands as search_commands

    search_commands(sub, common)

    p = sub.add_parser("curvature", help="quasi-static curvature vs pressure of one link (paper Fig. 5)")
    common(p)
    p.add_argument(
        "--max-psi",
        type=number(0, lo_open=True),
        default=10.0,
        help="sweep from −max to +max [psi], ≥ p_max (default 10)",
    )
    p.add_argument(
        "--step-psi", type=number(0, lo_open=True), default=1.0, help="pressure step [psi], ≤ p_max/2 (default 1)"
    )
    p.add_argument(
        "--seconds",
        type=number(0.5),
        default=5.0,
        help=(
            "time each pressure is ramped (0.5 s) and held [s], ≥ 0.5: two 0.25 s averaging windows (default 5: at "
            "the real-time budget the held link relaxes for seconds; shorter runs are quick checks, see the settled "
            "line)"
        ),
    )
    p.add_argument("--out", type=output_folder, required=True, help="output folder")
    p.set_defaults(func=run_curvature_command, check=check_curvature_command, stage="out")

    p = sub.add_parser(
        "step-response", help="chamber inflation/deflation step responses, 60–100%% of p_max (paper Fig. 6)"
    )
    common(p)
    p.add_argument(
        "--seconds", type=number(0, lo_open=True), default=1.0, help="duration of each phase [s] (default 1)"
    )
    p.add_argument("--out", type=output_folder, required=True, help="output folder")
    p.set_defaults(func=run_step_response_command, check=check_step_response_command, stage="out")

    p = sub.add_parser("bench", help="multi-snake benchmark (paper Table II): ms per frame of 2 sub-steps")
    common(p)
    p.add_argument(
        "--snakes", default="0.25,1,2,4", help="comma-separated snake counts; 0.25 = one link (default 0.25,1,2,4)"
    )
    p.add_argument(
        "--frames",
        type=integer(1, 100_000, why="a longer timing does not change the mean; time long runs with gait"),
        default=20,
        help="timed frames per count (default 20, at most 100000)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--csv",
        type=output_file(".csv"),
        help="also write the rows (incl. snake-steps/s and peak memory) to this CSV file",
    )
    p.add_argument(
        "--plot", type=output_file(".png"), help="also plot ms/frame and snake-steps/s against the snake count (PNG)"
    )
    p.set_defaults(func=run_bench_command, check=check_bench_command)

    p = sub.add_parser("info", help="model counts (vs paper Table I) and settings, as TOML that --config loads")
    common(p, device=False)
    p.set_defaults(func=run_info_command, check=check_info_command)
