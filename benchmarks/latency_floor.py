"""The floor of the linear solve's structure on a GPU: what one pass of its loop costs with nothing in it but the
barriers, the block sums and a chain of dependent loads per lane and phase.

One world's linear solve passes 84 times per default step through a loop of 37 phases that each end at a barrier
(docs/solver.md, "On a GPU"); 1.5 ms per step leaves ~15 µs per pass. This kernel makes the same passes and phases on
one world's block (256 lanes on a GPU; kernels/block.py's barrier and block sum; a cluster of blocks with
SOFTSNAKE_WORLD_BLOCKS, as the stage kernels), each phase with ``loads`` dependent global loads per lane (a random cycle
through 1 MiB of indices, which stays in the L2 cache) and, with ``sums``, a block sum in place of the bare barrier.
Time per pass, against the solve's measured one, says how much of a pass the structure alone costs: no arithmetic of the
step, no bandwidth.

    python -P benchmarks/latency_floor.py --device cuda [--json floor.json]

benchmarks/gpu_check.py runs it (section ``floor``). On a CPU the block has one lane and the numbers mean little.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import warp as wp

from softsnake.kernels.block import (
    STAGE_MODULE_OPTIONS,
    WORLD_BLOCKS,
    world_index,
    world_lanes,
    world_sum,
    world_sync,
)
from softsnake.sim.model import quiet_warp

#: the stage kernels' options: with SOFTSNAKE_WORLD_BLOCKS > 1 the world is a thread-block cluster, as theirs
wp.set_module_options(STAGE_MODULE_OPTIONS)

#: passes of one default step's linear solves (4 Newton iterations × (20 MINRES iterations + the start)) and the
#: barriers of one pass (the sm_90 SASS of newton_solve at 256 lanes)
PASSES, PHASES = 84, 37
#: (dependent loads per lane and phase, a block sum per phase) measured
CASES = ((0, 0), (1, 0), (2, 0), (4, 0), (0, 1), (1, 1))
#: entries of the index cycle (int32: 1 MiB)
CHAIN = 1 << 18


@wp.kernel
def phases_kernel(
    passes: int, phases: int, loads: int, sums: int, chain: wp.array(dtype=int), out: wp.array(dtype=float)
):
    """``passes`` × ``phases`` phases; each walks ``loads`` steps of the index cycle, then meets the other lanes at a
    barrier (or, with ``sums``, in a block sum of where they are)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    k = (lane * 7919) % chain.shape[0]
    acc = float(0.0)
    for _p in range(passes):
        for _q in range(phases):
            for _r in range(loads):
                k = chain[k]
            if sums != 0:
                acc += world_sum(float(k))
            else:
                world_sync()
    out[w * world_lanes() + lane] = acc + float(k)


def index_cycle(n: int, seed: int = 0) -> np.ndarray:
    """next[i] for one random cycle through all n entries (every load depends on the one before)."""
    order = np.random.default_rng(seed).permutation(n)
    nxt = np.empty(n, dtype=np.int32)
    nxt[order] = np.roll(order, -1)
    return nxt


def measure(device: str, repeats: int = 5) -> list[dict]:
    """µs per pass of each case: the median of ``repeats`` synchronised launches of one step's passes, less that of a
    launch without passes, over the passes."""
    dev = wp.get_device(device)
    lanes = 256 if dev.is_cuda else 1
    blocks = WORLD_BLOCKS if dev.is_cuda else 1
    chain = wp.array(index_cycle(CHAIN), dtype=int, device=dev)
    out = wp.zeros(blocks * lanes, dtype=float, device=dev)

    def seconds(passes: int, loads: int, sums: int) -> float:
        args = [passes, PHASES, loads, sums, chain, out]
        wp.launch_tiled(phases_kernel, dim=[blocks], inputs=args, block_dim=lanes, device=dev)  # compile, warm
        wp.synchronize_device(dev)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            wp.launch_tiled(phases_kernel, dim=[blocks], inputs=args, block_dim=lanes, device=dev)
            wp.synchronize_device(dev)
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    launch = seconds(0, 0, 0)  # a launch with no pass: subtracted
    rows = []
    for loads, sums in CASES:
        us = 1e6 * max(seconds(PASSES, loads, sums) - launch, 0.0) / PASSES
        rows.append(dict(loads=loads, block_sum=bool(sums), lanes=lanes, blocks=blocks, phases=PHASES, us_per_pass=us))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if wp.is_cuda_available() else "cpu")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    quiet_warp()
    rows = measure(args.device)
    for r in rows:
        sync = "block sum" if r["block_sum"] else "barrier"
        print(f"{r['loads']} dependent loads + {sync} per phase, {PHASES} phases: {r['us_per_pass']:.2f} µs per pass")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=args.device, passes=PASSES, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
