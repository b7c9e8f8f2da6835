"""Learning-environment throughput: env-steps/s of ``SnakeVectorEnv`` against the number of worlds.

    python3 -P benchmarks/bench_env.py --worlds 1,16,64,256 --snake coarse,full --device cpu

One env-step is one action step of one world (one 1/60 s control frame: 2 solver steps at the real-time budget,
plus the observation and reward read-back); random actions, the forward-speed task, autoreset on. Each row times
at least ``--steps`` vector steps and ``--min-seconds`` of wall time after one warm-up step (kernels compiled and
loaded). ``--processes N`` steps the worlds in N CPU worker processes (``SnakeVectorEnv(processes=N)``). Prints a
header (date, device, CPU, Warp, load average) and a Markdown table; refuses a non-finite state.
"""

from __future__ import annotations

import argparse
import datetime
import os
import time

import numpy as np


def measure(worlds: int, snake: str, device: str, steps: int, min_seconds: float, processes: int = 1) -> dict:
    from softsnake.envs import SnakeVectorEnv
    from softsnake.robots.snake import SnakeConfig

    cfg = SnakeConfig().with_coarse_mesh() if snake == "coarse" else SnakeConfig()
    env = SnakeVectorEnv(worlds, config=cfg, device=device, episode_seconds=60.0, processes=min(processes, worlds))
    env.reset(seed=0)
    env.action_space.seed(0)
    obs, *_ = env.step(env.action_space.sample())  # warm-up
    done, start = 0, time.perf_counter()
    while done < steps or time.perf_counter() - start < min_seconds:
        obs, *_ = env.step(env.action_space.sample())
        done += 1
    elapsed = time.perf_counter() - start
    env.close()
    if not np.isfinite(obs).all():
        raise SystemExit(f"non-finite observation with {worlds} worlds ({snake}): not reported")
    return dict(
        worlds=worlds,
        snake=snake,
        processes=min(processes, worlds),
        vector_steps=done,
        ms_per_vector_step=1e3 * elapsed / done,
        env_steps_per_s=worlds * done / elapsed,
        real_time_factor=worlds * done * cfg.frame_dt / elapsed,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", default="1,16,64,256", help="comma-separated world counts")
    ap.add_argument("--snake", default="coarse,full", help="coarse, full or both")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=3, help="least vector steps timed per row")
    ap.add_argument("--min-seconds", type=float, default=5.0, help="least wall time per row [s]")
    ap.add_argument("--processes", type=int, default=1, help="CPU worker processes per environment (default 1)")
    args = ap.parse_args()
    import warp as wp

    import softsnake  # noqa: F401  (quiet Warp)

    worlds = [int(w) for w in args.worlds.split(",")]
    snakes = args.snake.split(",")
    device = wp.get_device(args.device)
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    from softsnake.experiments.bench import cpu_model

    name = cpu_model() if device.is_cpu else device.name
    print(
        f"date {datetime.date.today().isoformat()} | device {device.alias} ({name})"
        f" | warp {wp.config.version} | load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
        flush=True,
    )
    rows = []
    for snake in snakes:
        for w in worlds:
            rows.append(measure(w, snake, args.device, args.steps, args.min_seconds, args.processes))
            r = rows[-1]
            print(
                f"{snake:6s} {w:5d} worlds: {r['ms_per_vector_step']:10.1f} ms per vector step, "
                f"{r['env_steps_per_s']:8.1f} env-steps/s, real-time factor {r['real_time_factor']:.3f}",
                flush=True,
            )
    print("\n| snake | worlds | processes | ms per vector step | env-steps/s | real-time factor (all worlds) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['snake']} | {r['worlds']} | {r['processes']} | {r['ms_per_vector_step']:.1f} | "
            f"{r['env_steps_per_s']:.1f} | "
            f"{r['real_time_factor']:.3f} |"
        )


if __name__ == "__main__":
    main()
