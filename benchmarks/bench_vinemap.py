"""Table 1 of Fuentes et al. 2025 (final mapping scores after N deployments) and the mapping-loop timing, and the
accuracy of the Section 2.4 stream inversion.

Runs the Monte Carlo mapping loop and the Ideal / Random baselines on seeded uniform and non-uniform environments
with the straight (100) and turning (570) action spaces, then writes a markdown table and a CSV:

    PYTHONPATH=. python3 benchmarks/bench_vinemap.py --envs 10 --deployments 20 --workers 2 --out bench_out

Environments use seeds ``seed0 .. seed0 + envs - 1``; the MC sampling of each run is seeded with the same seed.

Inversion accuracy (simulate -> (length, collision angle) streams -> walls, per-wall Hausdorff error):

    PYTHONPATH=. python3 benchmarks/bench_vinemap.py --inversion --envs 10 --angles 15 --workers 2 --out bench_out

noise-free over ``envs`` uniform + ``envs`` non-uniform environments x 2 launches x ``angles`` launch angles x
(straight + turns at 20/40/60 % by +-20/40/60 deg), with and without the event-triggered samples; the noise rows
use the first ``--noise-envs`` environments of each type and ``--noise-angles`` angles.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from softsnake.vinemap.environment import nonuniform_environment, uniform_environment, write_atomic  # noqa: E402
from softsnake.vinemap.grid import Grid  # noqa: E402
from softsnake.vinemap.mapping import action_space, explore, sample_mc_environment, simulate_actions  # noqa: E402

PAPER = {  # Table 1: mean (std) final scores
    ("uniform", False): {"Ideal": (73.37, 6.41), "Monte Carlo": (64.09, 7.73), "Random": (50.42, 4.62)},
    ("uniform", True): {"Ideal": (86.05, 2.88), "Monte Carlo": (70.53, 3.82), "Random": (55.09, 1.81)},
    ("nonuniform", False): {"Ideal": (49.01, 11.92), "Monte Carlo": (40.85, 11.33), "Random": (36.37, 7.88)},
    ("nonuniform", True): {"Ideal": (72.81, 5.88), "Monte Carlo": (56.55, 8.23), "Random": (43.77, 6.32)},
}
GENS = {"uniform": uniform_environment, "nonuniform": nonuniform_environment}


def run_one(kind: str, turns: bool, seed: int, deployments: int, mc_envs: int, repeats: int):
    env = GENS[kind](seed)
    acts = action_space(env, turns)
    t0 = time.perf_counter()
    res = explore(env, acts, deployments=deployments, mc_envs=mc_envs, random_repeats=repeats, seed=seed)
    return dict(
        kind=kind,
        turns=turns,
        seed=seed,
        mc=res.mc[-1],
        ideal=res.ideal[-1],
        random=res.random_mean[-1],
        random_std=res.random_std[-1],
        loop_s=float(np.mean(res.loop_seconds)),
        wall_s=time.perf_counter() - t0,
        mc_curve=res.mc.tolist(),
        ideal_curve=res.ideal.tolist(),
        random_curve=res.random_mean.tolist(),
    )


def time_loop(seed: int = 0, repeats: int = 3) -> float:
    """Seconds for one mapping loop (570 actions x 5 MC environments), median of ``repeats``, single process."""
    env = uniform_environment(seed)
    grid = Grid(env.boundary)
    acts = action_space(env, True)
    _, H, M = simulate_actions(env, acts[:3], grid)
    from softsnake.vinemap.grid import belief

    bel = belief(H.any(0), M.any(0))
    rng = np.random.default_rng(seed)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(5):
            mc = sample_mc_environment(bel, H.any(0), grid, env, rng)
            simulate_actions(mc, acts, grid)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def inversion_job(kind: str, seed: int, n_angles: int, events: bool, angle_noise: float, length_noise: float):
    """Round trips of every action of one environment: (errors of all walls [m], wrong wall counts, deployments)."""

    from softsnake.vinemap.sensing import round_trip, round_trip_actions

    env = GENS[kind](seed)
    rng = np.random.default_rng(1000 * seed + (kind == "nonuniform"))
    errs, wrong, n, fl = [], 0, 0, 0
    for act in round_trip_actions(env, n_angles=n_angles):
        dep, e = round_trip(env, act, events=events, angle_noise=angle_noise, length_noise=length_noise, rng=rng)
        if e is not None and len(e) == 0:
            continue
        n += 1
        fl += "friction_locked" in dep.events
        if e is None:
            wrong += 1
        else:
            errs.extend(e.tolist())
    return errs, wrong, n, fl


def run_inversion(args) -> int:
    import math

    from tqdm import tqdm

    os.makedirs(args.out, exist_ok=True)
    kinds = args.kinds.split(",")
    rows = [
        ("noise-free, event samples", True, 0.0, 0.0, args.envs, args.angles),
        ("noise-free, uniform 1 mm sampling only", False, 0.0, 0.0, args.envs, args.angles),
    ]
    for deg in (0.5, 1.0, 2.0):
        rows.append((f"angle {deg:g} deg", True, math.radians(deg), 0.0, args.noise_envs, args.noise_angles))
    for mm in (1.0, 5.0):
        rows.append((f"length {mm:g} mm", True, 0.0, mm / 1000, args.noise_envs, args.noise_angles))
    rows.append(("angle 1 deg + length 1 mm", True, math.radians(1.0), 0.001, args.noise_envs, args.noise_angles))
    out = []
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as ex:
        for name, ev, sa, sl, ne, na in rows:
            futs = [ex.submit(inversion_job, k, args.seed0 + i, na, ev, sa, sl) for k in kinds for i in range(ne)]
            errs, wrong, n, fl = [], 0, 0, 0
            for f in tqdm(as_completed(futs), total=len(futs), desc=name):
                e, w, m, q = f.result()
                errs += e
                wrong += w
                n += m
                fl += q
            e = np.asarray(errs)
            out.append(
                dict(
                    row=name,
                    envs=ne,
                    angles=na,
                    deployments=n,
                    friction_locked=fl,
                    walls=len(e),
                    wrong=wrong,
                    median_mm=1000 * np.median(e),
                    p95_mm=1000 * np.percentile(e, 95),
                    max_mm=1000 * e.max(),
                    within_1cm=100 * np.mean(e < 0.01),
                )
            )
            print(out[-1], flush=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(out[0]))
    w.writeheader()
    w.writerows(out)
    write_atomic(os.path.join(args.out, "inversion.csv"), buf.getvalue())
    lines = [
        f"# Stream inversion accuracy (seeds {args.seed0}.., {', '.join(kinds)}; "
        f"{time.perf_counter() - t0:.0f} s with {args.workers} workers)",
        "",
        "| streams | envs x angles | deployments (friction-locked) | walls | median | 95th pct | max | "
        "walls within 1 cm | wrong wall count |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out:
        lines.append(
            f"| {r['row']} | {2 * r['envs'] if len(kinds) == 2 else r['envs']} x {r['angles']} | "
            f"{r['deployments']} ({r['friction_locked']}) | {r['walls']} | {r['median_mm']:.3g} mm | "
            f"{r['p95_mm']:.3g} mm | {r['max_mm']:.3g} mm | {r['within_1cm']:.2f} % | "
            f"{r['wrong']} / {r['deployments']} |"
        )
    md = "\n".join(lines) + "\n"
    write_atomic(os.path.join(args.out, "inversion.md"), md)
    print(md)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", type=int, default=10, help="environments per type")
    ap.add_argument("--seed0", type=int, default=0)
    ap.add_argument("--deployments", type=int, default=20)
    ap.add_argument("--mc-envs", type=int, default=5)
    ap.add_argument("--random-repeats", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--kinds", default="uniform,nonuniform")
    ap.add_argument("--spaces", default="straight,turning")
    ap.add_argument("--out", default="bench_vinemap_out")
    ap.add_argument("--inversion", action="store_true", help="measure the stream inversion instead of Table 1")
    ap.add_argument("--angles", type=int, default=15, help="launch angles per launch point (--inversion)")
    ap.add_argument("--noise-envs", type=int, default=2, help="environments per type for the noise rows")
    ap.add_argument("--noise-angles", type=int, default=8, help="launch angles for the noise rows")
    args = ap.parse_args(argv)
    if args.inversion:
        return run_inversion(args)
    from tqdm import tqdm

    os.makedirs(args.out, exist_ok=True)
    loop_s = time_loop()
    print(f"one mapping loop (570 actions x 5 MC environments): {loop_s:.2f} s", flush=True)
    jobs = [
        (k, s == "turning", args.seed0 + i)
        for k in args.kinds.split(",")
        for s in args.spaces.split(",")
        for i in range(args.envs)
    ]
    rows = []
    with ProcessPoolExecutor(max_workers=args.workers) as ex:
        futs = [ex.submit(run_one, k, t, s, args.deployments, args.mc_envs, args.random_repeats) for k, t, s in jobs]
        for f in tqdm(as_completed(futs), total=len(futs), desc="mapping runs"):
            rows.append(f.result())
    rows.sort(key=lambda r: (r["kind"], r["turns"], r["seed"]))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["kind", "action_space", "seed", "mc", "ideal", "random_mean", "random_std", "mc_loop_s", "run_s"])
    for r in rows:
        w.writerow(
            [
                r["kind"],
                "turning" if r["turns"] else "straight",
                r["seed"],
                f"{r['mc']:.3f}",
                f"{r['ideal']:.3f}",
                f"{r['random']:.3f}",
                f"{r['random_std']:.3f}",
                f"{r['loop_s']:.3f}",
                f"{r['wall_s']:.1f}",
            ]
        )
    write_atomic(os.path.join(args.out, "runs.csv"), buf.getvalue())

    cols = [(k, t) for k in args.kinds.split(",") for t in [s == "turning" for s in args.spaces.split(",")]]
    head = " | ".join(f"{k} {'turning' if t else 'straight'}" for k, t in cols)
    lines = [
        f"# Table 1 reproduction ({args.envs} environments per type, seeds {args.seed0}..{args.seed0 + args.envs - 1}, "
        f"{args.deployments} deployments, {args.mc_envs} MC environments per loop, Random x{args.random_repeats})",
        "",
        f"| method | {head} |",
        "|---" * (len(cols) + 1) + "|",
    ]
    key = {"Ideal": "ideal", "Monte Carlo": "mc", "Random": "random"}
    for name, k in key.items():
        cells = []
        for c in cols:
            v = np.array([r[k] for r in rows if (r["kind"], r["turns"]) == c])
            p = PAPER[c][name]
            cells.append(f"{v.mean():.2f} ± {v.std():.2f} (paper {p[0]:.2f} ± {p[1]:.2f})" if len(v) else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    wins = []
    for c in cols:
        sel = [r for r in rows if (r["kind"], r["turns"]) == c]
        wins.append(f"{sum(r['mc'] > r['random'] for r in sel)}/{len(sel)}")
    lines.append("| MC > Random (runs) | " + " | ".join(wins) + " |")
    lines += ["", f"One mapping loop (570 actions x 5 MC environments, one process): {loop_s:.2f} s"]
    md = "\n".join(lines) + "\n"
    write_atomic(os.path.join(args.out, "table1.md"), md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
