"""The floor of the linear solve's structure on a GPU: what one pass of its loop costs with nothing in it but the
barriers, the block sums and a chain of dependent loads per lane and phase.

One world's linear solve passes 84 times per default step through a loop of 37 phases that each end at a barrier
(docs/solver.md, "On a GPU"; 33 since the preconditioner's two parts share theirs, kept at 37 here so that the floor
stays comparable with its H100 measurement); 1.5 ms per step leaves ~15 µs per pass. This kernel makes the same passes
and phases on one world's block (256 lanes on a GPU; kernels/block.py's barrier and block sum; a cluster of blocks with
SOFTSNAKE_WORLD_BLOCKS, as the stage kernels), each phase with ``loads`` dependent global loads per lane (a random cycle
through 1 MiB of indices, which stays in the L2 cache) and, with ``sums``, a block sum in place of the bare barrier.
Time per pass, against the solve's measured one, says how much of a pass the structure alone costs: no arithmetic of the
step, no bandwidth.

The solve's loop is also large: ~19,000 instructions (300 KB) in the sm_90 SASS of newton_solve at 256 lanes, above a
multiprocessor's instruction caches, so each pass may fetch its code again from L2. Two more cases on a GPU (one block
per world) measure that: the same 512 independent multiply-adds per lane and phase, as one phase's code in a loop (~560
instructions) or as each phase its own code (37 copies with their own constants: 20,872 instructions, 343 KB, counted
with cuobjdump on the sm_90 cubin); the difference is the cost of the code's size.

A world's solve also moves its data through one multiprocessor (on a cluster, through each of its blocks'): the snake
moves ~1.5 MB per MINRES iteration (benchmarks/profile_step.py, ``solve_bytes``). The stream case times what that
costs at the structure's floor: each phase, every lane of the world reads STREAM_LOADS floats of an 8 MiB array
(L2-resident), a warp's 32 lanes 128 consecutive bytes per load as the solve's sliced tables are read, in one unrolled
batch that the compiler schedules as it does the solve's (sm_90: ~5 loads in flight before the first add waits), so a
pass of 37 phases moves ~1.2 MB per block. Its bytes per second per block, against the solve's bytes per iteration,
give the iteration's streaming floor (benchmarks/gpu_report.py prints both).

A batch of worlds streams from memory instead: 132 snakes in flight, one per multiprocessor, hold more than the L2
cache. The device stream case (``device_stream``) times the whole GPU reading a 1 GiB array and, 16 times over, a 16 MiB
one (within L2); against the bytes a world moves on its own (profile_step.py, ``per_world``) it is the ceiling of 1024
snakes (gpu_report.py, "bandwidth ceiling of the batch").

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
#: barriers of one pass (the sm_90 SASS of newton_solve at 256 lanes when the floor was first measured; 33 now)
PASSES, PHASES = 84, 37
#: (dependent loads per lane and phase, a block sum per phase) measured
CASES = ((0, 0), (1, 0), (2, 0), (4, 0), (0, 1), (1, 1))
#: entries of the index cycle (int32: 1 MiB)
CHAIN = 1 << 18
#: float loads per lane and phase in the stream case (issued together: 32 KB per 256-lane block and phase), and the
#: streamed array's entries (8 MiB, far above a multiprocessor's caches and well within the L2 cache)
STREAM_LOADS, STREAM_ENTRIES = 32, 1 << 21


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


@wp.kernel
def stream_kernel(passes: int, phases: int, data: wp.array(dtype=float), out: wp.array(dtype=float)):
    """``passes`` × ``phases`` phases; in each, the world's lanes read the array's (STREAM_ENTRIES long) next
    STREAM_LOADS · lanes floats, a lane's loads ``lanes`` apart (a warp's 32 consecutive: coalesced), then meet at a
    barrier."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    mask = wp.static(STREAM_ENTRIES - 1)  # the array's length, a power of two
    acc = wp.vector(0.0, length=STREAM_LOADS)  # independent sums: no load waits for another's add
    k = lane
    for _p in range(passes):
        for _q in range(phases):
            vals = wp.vector(0.0, length=STREAM_LOADS)
            for i in range(wp.static(STREAM_LOADS)):  # a constant bound: unrolled, the loads issued together
                vals[i] = data[(k + i * lanes) & mask]
            acc += vals
            k = (k + wp.static(STREAM_LOADS) * lanes) & mask
            world_sync()
    out[w * lanes + lane] = wp.dot(acc, acc)


#: the device stream case: (bytes of the array, times it is read) on a GPU and on a CPU: far above the L2 cache
#: (the device's memory) and well within it (16 MiB: the H100's L2 holds 50 MB)
DEVICE_STREAMS = {
    "cuda": {"dram": (1 << 30, 1), "l2": (1 << 24, 16)},
    "cpu": {"dram": (1 << 24, 1), "l2": (1 << 20, 4)},
}


@wp.kernel(module="unique", enable_backward=False)
def device_stream_kernel(repeats: int, threads: int, data: wp.array(dtype=wp.vec4), out: wp.array(dtype=float)):
    """Every thread sums its share of ``data`` ``repeats`` times, its vec4s ``threads`` apart (a warp's 32 threads
    read 512 consecutive bytes per load): the rate at which all multiprocessors together stream an array, the
    ceiling of a batch of worlds whose data all pass through memory each iteration (a module of its own: no
    cluster)."""
    tid = wp.tid()
    acc = wp.vec4()
    for _r in range(repeats):
        for i in range(tid, data.shape[0], threads):
            acc += data[i]
    out[tid] = wp.dot(acc, acc)


def median_seconds(launch, dev, repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``launch`` (a kernel launch on ``dev``), each synchronised, after
    one to compile and warm."""
    launch()
    wp.synchronize_device(dev)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        launch()
        wp.synchronize_device(dev)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def device_stream(device: str, repeats: int = 5) -> dict:
    """GB/s at which the whole device reads an array far above its L2 cache (``dram``) and one within it (``l2``),
    DEVICE_STREAMS' sizes, with 2,048 threads per multiprocessor (as many as it keeps resident) on a GPU; the median
    of ``repeats`` synchronised launches. ``multiprocessors``: how many one-world-per-multiprocessor worlds run at
    once."""
    dev = wp.get_device(device)
    threads = 2048 * dev.sm_count if dev.is_cuda else 1
    out = wp.zeros(threads, dtype=float, device=dev)
    rates = {}
    for where, (size, reads) in DEVICE_STREAMS["cuda" if dev.is_cuda else "cpu"].items():
        data = wp.full(size // 16, wp.vec4(1.0), dtype=wp.vec4, device=dev)
        args = [reads, threads, data, out]
        seconds = median_seconds(
            lambda args=args: wp.launch(device_stream_kernel, dim=threads, inputs=args, device=dev), dev, repeats
        )
        rates[f"{where}_gb_per_s"] = size * reads / seconds / 1e9
        rates[f"{where}_bytes"] = size
    return dict(multiprocessors=dev.sm_count if dev.is_cuda else 1, **rates)


def device_stream_line(stream: dict) -> str:
    """device_stream's result in words."""
    return (
        f"the whole device streaming an array: {stream['dram_gb_per_s']:.0f} GB/s from memory "
        f"({stream['dram_bytes'] >> 20} MiB), {stream['l2_gb_per_s']:.0f} GB/s within the L2 cache "
        f"({stream['l2_bytes'] >> 20} MiB)"
    )


#: steps of multiply-adds per lane and phase in the code-size cases, each on 8 independent accumulators (no dependent
#: latency): 37 phases unrolled make a loop body of 20,872 instructions, the size of newton_solve's
CODE_STEPS = 64


@wp.kernel(
    module="unique",
    enable_backward=False,
    cluster_dim=WORLD_BLOCKS if WORLD_BLOCKS > 1 else None,
    module_options={"max_unroll": max(PHASES, CODE_STEPS)},
)
def code_kernel(passes: int, phases: int, distinct: int, out: wp.array(dtype=float)):
    """``passes`` × ``phases`` (= PHASES) phases of CODE_STEPS × 8 multiply-adds, each phase ending at a barrier: with
    ``distinct``, every phase its own constants and so its own instructions (the phases unrolled: PHASES times one
    phase's code); else one phase's code in a loop. The time between the two is what fetching a loop body larger
    than the instruction caches costs (a module of its own: the CPU never compiles it)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    a0, a1, a2, a3 = float(lane), float(1.0), float(2.0), float(3.0)
    a4, a5, a6, a7 = float(4.0), float(5.0), float(6.0), float(7.0)
    d = float(1.0e-3)
    for _p in range(passes):
        if distinct != 0:
            for q in range(PHASES):  # a constant bound: unrolled, q a constant in each copy
                for i in range(CODE_STEPS):
                    c = 1.0 + float((q + 2) * (i + 1)) * 1.0e-7
                    a0, a1, a2, a3 = a0 * c + d, a1 * c + d, a2 * c + d, a3 * c + d
                    a4, a5, a6, a7 = a4 * c + d, a5 * c + d, a6 * c + d, a7 * c + d
                world_sync()
        else:
            for _q in range(phases):  # a runtime bound: a loop
                for i in range(CODE_STEPS):
                    c = 1.0 + float(i + 1) * 1.0e-7
                    a0, a1, a2, a3 = a0 * c + d, a1 * c + d, a2 * c + d, a3 * c + d
                    a4, a5, a6, a7 = a4 * c + d, a5 * c + d, a6 * c + d, a7 * c + d
                world_sync()
    out[w * world_lanes() + lane] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7


def index_cycle(n: int, seed: int = 0) -> np.ndarray:
    """next[i] for one random cycle through all n entries (every load depends on the one before)."""
    order = np.random.default_rng(seed).permutation(n)
    nxt = np.empty(n, dtype=np.int32)
    nxt[order] = np.roll(order, -1)
    return nxt


def measure(device: str, repeats: int = 5) -> list[dict]:
    """µs per pass of each case: the median of ``repeats`` synchronised launches of one step's passes, less that of a
    launch without passes, over the passes. On a GPU with one block per world, also the two code-size cases
    (code_kernel; ``code``: "loop" or "distinct", against "none" for the others); clusters and the CPU leave them
    out (each would compile ~20,000 instructions again: ~40 s)."""
    dev = wp.get_device(device)
    lanes = 256 if dev.is_cuda else 1
    blocks = WORLD_BLOCKS if dev.is_cuda else 1
    chain = wp.array(index_cycle(CHAIN), dtype=int, device=dev)
    out = wp.zeros(blocks * lanes, dtype=float, device=dev)

    def timed(kernel, args: list) -> float:
        return median_seconds(
            lambda: wp.launch_tiled(kernel, dim=[blocks], inputs=args, block_dim=lanes, device=dev), dev, repeats
        )

    def row(loads: int, sums: int, code: str, seconds: float) -> dict:
        us = 1e6 * max(seconds - launch, 0.0) / PASSES
        return dict(
            loads=loads, block_sum=bool(sums), code=code, lanes=lanes, blocks=blocks, phases=PHASES, us_per_pass=us
        )

    launch = timed(phases_kernel, [0, PHASES, 0, 0, chain, out])  # a launch with no pass: subtracted
    rows = [
        row(loads, sums, "none", timed(phases_kernel, [PASSES, PHASES, loads, sums, chain, out]))
        for loads, sums in CASES
    ]
    data = wp.full(STREAM_ENTRIES, 1.0, dtype=float, device=dev)
    stream = row(0, 0, "none", timed(stream_kernel, [PASSES, PHASES, data, out]))
    stream["stream_bytes_per_pass"] = 4 * STREAM_LOADS * lanes * blocks * PHASES
    per_block = stream["stream_bytes_per_pass"] / blocks
    stream["stream_gb_per_s_per_block"] = per_block / max(stream["us_per_pass"], 1e-9) / 1e3
    rows.append(stream)
    if dev.is_cuda and blocks == 1:
        rows += [
            row(0, 0, code, timed(code_kernel, [PASSES, PHASES, int(code == "distinct"), out]))
            for code in ("loop", "distinct")
        ]
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda" if wp.is_cuda_available() else "cpu")
    ap.add_argument("--json", help="write the rows here")
    args = ap.parse_args()
    quiet_warp()
    rows = measure(args.device)
    stream = device_stream(args.device) if WORLD_BLOCKS == 1 else {}
    for r in rows:
        sync = "block sum" if r["block_sum"] else "barrier"
        code = "" if r["code"] == "none" else f", {8 * CODE_STEPS} multiply-adds per phase, code {r['code']}"
        per_phase = f"{r['loads']} dependent loads + {sync} per phase{code}"
        if "stream_bytes_per_pass" in r:
            per_phase = (
                f"{4 * STREAM_LOADS} B streamed per lane + {sync} per phase "
                f"({r['stream_gb_per_s_per_block']:.1f} GB/s per block)"
            )
        print(f"{per_phase}, {PHASES} phases: {r['us_per_pass']:.2f} µs per pass")
    if stream:
        print(device_stream_line(stream))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=args.device, passes=PASSES, rows=rows, device_stream=stream), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
