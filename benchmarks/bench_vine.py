"""Vine batch timing: ms per step vs batch size and maximum link count.

chen preset (fixed array sizes: every one of the ``links`` links is simulated from the start), random launch angles,
the rectangles_1 scene of the Julia reference. The step includes the growth schedule, the explicit bending torques and
the engine step (Newton × PCR budget of the preset). The first step (kernel loading, warm-start build-up) is not timed.

    python benchmarks/bench_vine.py --batches 1,8,32,128 --links 10,20,40,80 --steps 3 [--device cuda] [--out FILE.json]

Anchor (Chen et al. 2025, PyTorch + cvxpylayers, i9-14900K CPU): ≈0.1 s per step at 40 links, batch 1; ≈0.7 s at
batch 128.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from softsnake.experiments.bench import cpu_model
from softsnake.io.vine_data import read_rects
from softsnake.robots.vine import VineConfig
from softsnake.robots.vine_sim import VineSim

DATA = Path(__file__).resolve().parents[1] / "assets" / "vine" / "julia_rollouts" / "rectangles_1.rects"


def time_case(batch: int, links: int, steps: int, device: str, rects) -> dict:
    cfg = VineConfig.preset_config("chen", links=links)
    rng = np.random.default_rng(0)
    sim = VineSim(
        cfg, rects=rects, worlds=batch, headings=rng.uniform(np.radians(-80), np.radians(-20), batch), device=device
    )
    sim.step()  # warm-up (kernel loading)
    import warp as wp

    wp.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        sim.step()
    wp.synchronize()
    dt = (time.perf_counter() - t0) / steps
    q = sim.poses()
    if not np.all(np.isfinite(q)):
        raise RuntimeError(f"non-finite state at batch {batch}, links {links}: not publishing")
    return dict(
        batch=batch,
        links=links,
        bodies_per_vine=2 * links,
        ms_per_step=1000 * dt,
        ms_per_vine_step=1000 * dt / batch,
        steps=steps,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--links", default="10,20,40,80")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rects", default=str(DATA))
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    batches = [int(x) for x in a.batches.split(",")]
    links = [int(x) for x in a.links.split(",")]
    rects = read_rects(a.rects)
    rows = []
    for L in links:
        for B in batches:
            r = time_case(B, L, a.steps, a.device, rects)
            rows.append(r)
            print(json.dumps(r), flush=True)
    meta = dict(device=a.device, machine=cpu_model(), date=time.strftime("%Y-%m-%d"), rows=rows)
    if a.out:
        Path(a.out).write_text(json.dumps(meta, indent=1))
    print("\n| max links | " + " | ".join(f"batch {B}" for B in batches) + " |")
    print("| --- |" + " --- |" * len(batches))
    for L in links:
        cells = [next(r for r in rows if r["batch"] == B and r["links"] == L)["ms_per_step"] for B in batches]
        print(f"| {L} | " + " | ".join(f"{c:.0f}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
