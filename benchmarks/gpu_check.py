"""Every GPU measurement of the fused step in one run (under 8 minutes on one H100/H200), written to one JSON file.

First, before any section, the kernel modules the carried cache lacks compile, one per core at once; ``meta`` says
which (``uncached_modules``; ``uncached_cpu_modules``: the CPU builds missing, not compiled), how long
(``compile_seconds``) and under which cache folders (``module_identifiers``). ``registers`` holds the stage kernels'
registers per thread read from the carried cubins (benchmarks/cubin_registers.py, run by gpu_prepare.sh).

Sections, each written to the file as soon as it is done (a run cut short keeps what it measured):
  launches   launches per solver step, counted eagerly on the GPU (slab, full snake; the graph's node count)
  snake      Table II: ms per frame (2 steps of 1/120 s) for ¼, 1, 4, 10 snakes and snake-steps/s at 1024 snakes,
             the default step (one captured graph per step), with the paper's figures beside them
  slab       the engine slab (4,500 tets): ms per step and world-steps/s at 1, 8, 64, 256, 1024 worlds
  large      one world of 51,840 tets (softsnake.validation.run_column, above 50k: no switch to another path,
             one block on one multiprocessor): ms per step and, after 40 steps, its top's sink against the exact
             ρgH²/(2E) (tests/test_large_world.py: within −6.4e-5 … −1.2e-5 on the CPU)
  profile    each stage kernel's GPU time in one snake step (Warp's CUDA activity timing), and the linear solve's
             phases (share and clock cycles per MINRES iteration: SolverConfig.phase_timing), again with the elastic
             blocks in CSR order (SolverConfig.slice_width = 1) instead of a warp's slices, and an
             estimate of the bytes a MINRES iteration moves (profile_step.py, solve_bytes)
  floor      what one pass of the linear solve's loop costs with only its structure in it: 37 barriers (or block sums)
             per pass, with 0–4 dependent L2 loads per lane and phase, one world's block (benchmarks/latency_floor.py),
             what a loop body of the solve's size (~20,000 instructions) costs against a small one, and the rate
             one block streams coalesced floats at (against the profile's bytes per MINRES iteration: gpu_report.py),
             and the rate the whole device streams an array from memory and within L2 (the batch's ceiling)
  agreement  the 2 s straight gait on the GPU against the CPU (the paths' gap, against the CPU's round-off spread);
             the two CPU runs are gpu_prepare.sh's when they match (``cpu_reference``: "carried"), else run here
  tests      the CUDA test files (SOFTSNAKE_TEST_DEVICE=cuda) that exercise the block-per-world kernels: tests
             passed and failed, written after each test, and the ten slowest in the output's tail
  env        the learning environment's env-steps/s (benchmarks/bench_env.py) at 1, 16, 64, 256 worlds, coarse and full
  blocks     one snake at SolverConfig.block_dim 64, 128 and 256 lanes per world, with the lanes' loops an element
             at a time instead of four (SOFTSNAKE_LANE_BATCH=1), under a register cap of 128, over thread-block
             clusters of 2, 4 and 8 blocks, and with the linear solve on 512 or 1024 lanes
             (SolverConfig.solve_block_dim, capped at 128 or 64 registers), and 1024 snakes at 32, 64, 128 and 256
             lanes (fewer lanes: more worlds resident per multiprocessor; at 32, a warp per world, all 1024 at once
             on an H100), unbatched and capped
             (BLOCK_VARIANTS); each one snake against the first for agreement; each variant in a process of its
             own, which names the stage modules the carried cache lacked (``uncached_modules``) and stops after 2
             minutes; the clusters last, and the section last of all (the 0173a57 run spent its last 7 minutes in
             it)
  ppo        (only when named in --sections: ~5 min) examples/train_ppo.py's full run, 256 coarse snakes on the GPU,
             491,520 environment steps; its curve, plot and policy land in $OUT/ppo/

On the GPU machine (no network there; benchmarks/gpu_prepare.sh made the wheels, the precompiled kernel cache, the
registers and the CPU runs here, carried as .gpu/ and unpacked into /tmp/gpu, ``--carried``):

    bash benchmarks/gpu_check.sh --commit <hash>      (installs, then runs this script into $OUT/gpu_check.json)

``--sections`` picks a subset (comma-separated), ``--quick`` shortens every timing (for a first try of the script),
``--budget-s`` (default 450) is the time after which no section begins and the tests and the blocks variants stop, so
that the device call ends within 8 minutes with every measurement it got to in the file. Call it without a pipe to
``tail`` (the device tool keeps the last 12,000 characters of the output itself; a pipe holds them back until the end).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

#: what benchmarks/gpu_prepare.sh carried, unpacked by gpu_check.sh: registers.json, agreement_cpu*.npz (--carried)
CARRIED = Path("/tmp/gpu")
#: in the order they run: the blocks section's experimental variants last (a variant that hangs stops at its
#: timeout, after everything else was measured)
SECTIONS = ("launches", "snake", "slab", "large", "profile", "floor", "agreement", "tests", "env", "blocks", "ppo")
#: the sections a plain run takes (under 8 minutes on an H100)
DEFAULT_SECTIONS = SECTIONS[:-1]
#: the stage block sizes the sections launch (blocks: 32, 64, 128, 256)
STAGE_BLOCK_DIMS = (32, 64, 128, 256)
#: pytest, once the kernel modules are hashed as in compile_up_front (the cache folders precompile_cuda.py fills)
PYTEST = (
    "import sys\n"
    "import softsnake.sim.dual\n"
    "import softsnake.sim.primal\n"
    "from softsnake.sim.warp_runtime import module_identifiers\n"
    f"module_identifiers(stage_block_dims={STAGE_BLOCK_DIMS!r})\n"
    "import pytest\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)
TEST_FILES = (
    "tests/test_launches.py",
    "tests/test_batch.py",
    "tests/test_recorded_step.py",
    "tests/test_rigid.py",
    "tests/test_primal.py",
    "tests/test_contact_list.py",
)


#: when the run's time is up (time.monotonic(); main sets it from --budget-s): a section not begun by then is
#: skipped, and the tests and the blocks variants stop at it
DEADLINE = float("inf")
#: saves a long section's partial result into the file as it goes (main sets it for each section)
SAVE_PARTIAL = None


def remaining() -> float:
    """Seconds left of the run's budget (DEADLINE)."""
    return DEADLINE - time.monotonic()


def save_partial(partial: dict) -> None:
    """The running section's result so far, written to the file (a run cut short keeps it)."""
    if SAVE_PARTIAL is not None:
        SAVE_PARTIAL(partial)


def write(path: Path, record: dict) -> None:
    tmp = path.with_suffix(path.suffix + ".partial")
    tmp.write_text(json.dumps(record, indent=1, default=float))
    os.replace(tmp, path)


def section_launches(device: str, quick: bool) -> dict:
    import softsnake as ss
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim
    from softsnake.scenes import soft_slab_on_ground
    from softsnake.sim.launches import launches_per_step

    model = soft_slab_on_ground().finalize(device=device)
    slab = launches_per_step(ss.Solver(model), model.state())
    sim = SnakeSim(worlds=1, device=device, config=SnakeConfig())
    snake = launches_per_step(sim.solver, sim.state, sim.control)
    return dict(slab=slab, snake=snake)


def section_snake(device: str, quick: bool) -> dict:
    from softsnake.experiments.bench import bench_snakes

    rows = []
    for snakes, frames in ((0.25, 60), (1, 120), (4, 60), (10, 40), (1024, 6)):
        r = bench_snakes(snakes, 10 if quick else frames, device=device)
        rows.append(
            {
                k: r[k]
                for k in (
                    "snakes",
                    "ms_total",
                    "ms_per_snake",
                    "snake_steps_per_s",
                    "real_time_factor",
                    "launches_per_step",
                    "peak_memory_mb",
                    "paper_ms_total",
                )
            }
        )
        print(f"  snakes {snakes:g}: {r['ms_total']:.2f} ms/frame, {r['ms_total'] / 2:.3f} ms/step", flush=True)
    return dict(rows=rows)


def section_slab(device: str, quick: bool) -> dict:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_engine import bench

    rows = []
    for worlds in (1, 8, 64, 256, 1024):
        r = bench(device, worlds, 20 if quick else 100, 4, 20, 1.0 / 120.0)
        rows.append({k: r[k] for k in ("worlds", "ms_per_step", "world_steps_per_s", "real_time_factor")})
        print(f"  slab × {worlds}: {r['ms_per_step']:.3f} ms/step", flush=True)
    return dict(rows=rows)


def section_large(device: str, quick: bool) -> dict:
    """The default step on one world of 51,840 tets (softsnake.validation.run_column, as tests/test_large_world.py
    runs it): its time per step (synchronised, after five steps) and whether it settles to the exact self-weight sink
    as on the CPU."""
    from softsnake.validation import run_column

    r = run_column(device=device)
    ms = 1e3 * float(np.median(r["seconds"][5:]))
    e = r["sink_error"][30:]
    print(f"  {r['tets']} tets: {ms:.2f} ms/step, sink error {e.min():+.2e} … {e.max():+.2e}", flush=True)
    return dict(
        tets=r["tets"],
        particles=r["particles"],
        ms_per_step=ms,
        first_step_s=float(r["seconds"][0]),
        exact_sink_um=1e6 * r["exact_sink"],
        sink_error_steps_31_40=[float(v) for v in e],
        top_spread=r["top_spread"],
        sideways=r["sideways"],
    )


#: the blocks section's variants, (lanes per block, the linear solve's lanes, register cap or None, blocks per world,
#: elements per batch of a lane's loops, snakes): block sizes for one snake, the solve on more lanes than the other
#: stages (SolverConfig.solve_block_dim, under the register cap that fits its block), the lanes' loops an element at a
#: time instead of four (kernels/block.py, GPU_LANE_BATCH: the same sums, shorter code, longer chains of dependent
#: loads; the solve then holds 168 registers instead of 204, so it spills less under a 512-lane solve's cap), a
#: world over a thread-block cluster of 2, 4 or 8 blocks (kernels/block.py, WORLD_BLOCKS), and 1024 snakes at four
#: block sizes (at 32 lanes a world is one warp, and the stages' 204–255 registers a lane leave room for 8–9 worlds
#: per multiprocessor: on an H100's 132 the whole batch in flight at once, where 256 lanes run it in eight rounds of
#: 132), under the register cap that gives two 256-lane worlds per multiprocessor (stage_register_cap) and
#: unbatched; in the order of what they decide, should the run's budget stop the section early: the default first
#: (the others' reference for agreement) and unbatched second, the clusters last (never run to the end on a GPU yet:
#: the 0173a57 run on an H100 spent its last 7 minutes in this section without a result)
BLOCK_VARIANTS = (
    (256, 256, None, 1, 4, 1),
    (256, 256, None, 1, 1, 1),
    (128, 128, None, 1, 4, 1),
    (64, 64, None, 1, 4, 1),
    (256, 512, 128, 1, 1, 1),
    (256, 512, 128, 1, 4, 1),
    (256, 256, 128, 1, 4, 1),
    (256, 1024, 64, 1, 4, 1),
    (256, 256, None, 1, 4, 1024),
    (256, 256, None, 1, 1, 1024),
    (128, 128, None, 1, 4, 1024),
    (64, 64, None, 1, 4, 1024),
    (32, 32, None, 1, 4, 1024),
    (256, 256, 128, 1, 4, 1024),
    (256, 256, None, 2, 4, 1),
    (256, 256, None, 4, 4, 1),
    (256, 256, None, 8, 4, 1),
)
#: the default of BLOCK_VARIANTS' fields after the lanes (register cap, blocks per world, elements per batch)
DEFAULT_BUILD = (None, 1, 4)

#: one variant of the blocks section, in a process of its own: the stage modules hashed first, as precompile_cuda.py
#: hashed them (warp_runtime.module_identifiers), and what the carried cache lacks compiled on all cores (and named)
_BLOCK_RUN = """
import dataclasses, json, os, sys
import softsnake.sim.dual, softsnake.sim.primal
from softsnake.sim.warp_runtime import compile_kernels, kernels_to_compile, module_identifiers
lanes, solve_lanes, snakes, frames = (int(a) for a in sys.argv[1:5])
device = sys.argv[5]
module_identifiers(stage_block_dims=sorted({lanes, solve_lanes}))
uncached = kernels_to_compile(device)
compile_kernels(device, bar=False, workers=os.cpu_count(), stream=sys.stderr)
print(f"compiled {uncached or 'nothing'}; timing {snakes} snakes, {frames} frames", file=sys.stderr, flush=True)
from softsnake.experiments.bench import bench_snakes
from softsnake.robots.snake import SnakeConfig
cfg = SnakeConfig()
cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, block_dim=lanes, solve_block_dim=solve_lanes))
r = bench_snakes(snakes, frames, device=device, config=cfg)
out = dict(ms_per_frame=r["ms_total"], com=r["com_world0"], uncached_modules=uncached)
if snakes == 1:  # where the solve's time goes in this variant: its phases' cycles per MINRES iteration
    sys.path.insert(0, sys.argv[6])
    from profile_step import solve_phases
    phases = solve_phases("snake", device, 2, block_dim=lanes, solve_block_dim=solve_lanes)["phases"]
    out["phase_cycles"] = {k: v["cycles_per_iteration"] for k, v in phases.items()}
print(json.dumps(out))
"""
#: the longest a blocks variant may take [s]: ~15 s with its modules in the carried cache (gpu_prepare.sh checks
#: that they are); a cache miss compiles its stage modules first (~2 minutes on 16 cores) and is stopped
BLOCK_VARIANT_TIMEOUT_S = 120


def variant_builds() -> list[str]:
    """The stage-module builds BLOCK_VARIANTS need beyond the default ones, a line each: register cap (- for none),
    blocks per world, elements per batch, the modules (comma-separated short names), then the block sizes
    (gpu_prepare.sh precompiles them, benchmarks/precompile_cuda.py). A solve on more lanes than the other stages
    needs step_primal alone at its size: step_common's collision tiles do not fit a block above 256 lanes."""
    builds: dict = {}
    for lanes, solve_lanes, cap, blocks, batch, _ in BLOCK_VARIANTS:
        if (cap, blocks, batch) != DEFAULT_BUILD:
            builds.setdefault((cap, blocks, batch, "step_common,step_primal,step_body_blocks"), set()).add(lanes)
        if solve_lanes != lanes:
            builds.setdefault((cap, blocks, batch, "step_primal"), set()).add(solve_lanes)
    return [
        f"{cap or '-'} {blocks} {batch} {mods} {' '.join(map(str, sorted(d)))}"
        for (cap, blocks, batch, mods), d in builds.items()
    ]


#: one variant's cache lookup, in a process of its own as _BLOCK_RUN hashes the modules: the stage modules it launches
#: (and every other module at its default size) without a cubin for the GPU in WARP_CACHE_PATH
_CACHE_LOOKUP = """
import json, os, sys
import softsnake.sim.dual, softsnake.sim.primal
import warp as wp
from softsnake.sim.warp_runtime import module_identifiers
wp.init()
lanes, solve_lanes = int(sys.argv[1]), int(sys.argv[2])
launched = dict(step_common={lanes}, step_body_blocks={lanes}, step_primal={lanes, solve_lanes}, step_dual=set())
missing = []
for short, per_size in module_identifiers(stage_block_dims=sorted({lanes, solve_lanes})).items():
    for size in sorted(launched.get(short, {256})):
        folder = os.path.join(wp.config.kernel_cache_dir, per_size[size])
        if not (os.path.isdir(folder) and any(f.endswith(".cubin") for f in os.listdir(folder))):
            missing.append(f"{short} (block {size})")
print(json.dumps(missing))
"""


def variant_environment(cap: int | None, blocks: int, batch: int) -> dict:
    """This process's environment with a blocks variant's module options: the register cap (None: none), the blocks
    per world and the elements per batch (kernels/block.py reads them when the kernels are imported)."""
    env = dict(os.environ, SOFTSNAKE_WORLD_BLOCKS=str(blocks), SOFTSNAKE_LANE_BATCH=str(batch))
    env.pop("SOFTSNAKE_CUDA_MAX_REGISTERS", None)
    if cap is not None:
        env["SOFTSNAKE_CUDA_MAX_REGISTERS"] = str(cap)
    return env


def variant_cache_misses() -> dict[str, list[str]]:
    """For each BLOCK_VARIANTS build (the default one first), the kernel modules its process would launch that Warp's
    cache (WARP_CACHE_PATH) holds no GPU cubin for, as a fresh process on the GPU machine hashes them: gpu_prepare.sh
    checks that the precompiled cache leaves nothing for a variant to compile there."""
    out = {}
    for lanes, solve_lanes, cap, blocks, batch, _ in ((256, 256, *DEFAULT_BUILD, 1), *BLOCK_VARIANTS):
        env = variant_environment(cap, blocks, batch)
        name = f"{lanes} lanes (solve {solve_lanes}) × {blocks}, cap {cap or 'none'}, batch {batch}"
        if name in out:
            continue
        run = subprocess.run(
            [sys.executable, "-P", "-c", _CACHE_LOOKUP, str(lanes), str(solve_lanes)],
            env=env,
            capture_output=True,
            text=True,
        )
        lines = (run.stdout if run.returncode == 0 else "").strip().splitlines()
        out[name] = json.loads(lines[-1]) if lines else [f"lookup failed: {run.stderr.strip()[-300:]}"]
    return out


def run_with_timeout(args: list[str], env: dict, timeout: float) -> tuple[int | None, str, str]:
    """(return code, None when stopped at ``timeout`` seconds; standard output; standard error) of a process of its
    own; what it wrote before it was stopped is kept (files, not pipes)."""
    with (
        tempfile.TemporaryFile("w+") as out,
        tempfile.TemporaryFile("w+") as err,
        subprocess.Popen(args, env=env, stdout=out, stderr=err, text=True) as run,
    ):
        try:
            code = run.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()
            code = None
        out.seek(0)
        err.seek(0)
        return code, out.read(), err.read()


def section_blocks(device: str, quick: bool) -> dict:
    """One snake at 64 to 256 lanes per world, unbatched, capped, with the solve on 512 or 1024 lanes, 1024 snakes at
    64 to 256 lanes, unbatched and capped, and one snake over clusters of 2 to 8 blocks (BLOCK_VARIANTS), each
    variant in a process of its own (the cap, the batch and the cluster are module options, read when the kernels are
    imported), stopped after
    BLOCK_VARIANT_TIMEOUT_S or at the run's deadline (its last lines of output kept); per variant ms per frame,
    snake-steps/s and, for one snake, the gap of world 0's centre of mass [mm] from the first variant's after as many
    frames (round-off: a few µm) and the solve's cycles per MINRES iteration by phase (profile_step.solve_phases, two
    frames). Each variant's row is written to the file as soon as it is done."""
    out = {}
    reference = None
    for lanes, solve_lanes, cap, blocks, batch, snakes in BLOCK_VARIANTS:
        frames = (3 if quick else 12) if snakes > 1 else (20 if quick else 60)
        solve = f" (solve {solve_lanes})" if solve_lanes != lanes else ""
        unbatched = ", unbatched" if batch == 1 else ""
        name = (
            f"{lanes} lanes{solve} × {blocks} block{'s' if blocks > 1 else ''}, cap {cap or 'none'}{unbatched}, "
            f"{snakes} snakes"
        )
        timeout = min(BLOCK_VARIANT_TIMEOUT_S, remaining())
        if timeout < 20.0:
            out[name] = dict(error=["not run: the run's time budget was spent"])
            continue
        args = [sys.executable, "-P", "-c", _BLOCK_RUN, *map(str, (lanes, solve_lanes, snakes, frames)), device]
        args.append(str(Path(__file__).parent))  # profile_step.py's folder
        code, stdout, stderr = run_with_timeout(args, variant_environment(cap, blocks, batch), timeout)
        if code != 0:
            why = f"stopped after {timeout:.0f} s" if code is None else f"exit code {code}"
            out[name] = dict(error=[why, *stderr.strip().splitlines()[-3:]])
            print(f"  {name}: {' | '.join(out[name]['error'])}", flush=True)
        else:
            r = json.loads(stdout.strip().splitlines()[-1])
            row = dict(ms_per_frame=r["ms_per_frame"], snake_steps_per_s=2e3 * snakes / r["ms_per_frame"])
            row["uncached_modules"] = r["uncached_modules"]
            if snakes == 1:
                reference = reference or r["com"]
                row["com_gap_mm"] = 1e3 * float(np.linalg.norm(np.subtract(r["com"], reference)))
                row["phase_cycles"] = r["phase_cycles"]
            out[name] = row
            print(f"  {name}: {row}", flush=True)
        save_partial(out)
    return out


def section_profile(device: str, quick: bool) -> dict:
    import warp as wp

    sys.path.insert(0, str(Path(__file__).parent))
    from profile_step import device_kernel_times, make_scene, solve_phases

    advance, substeps, title, _ = make_scene("snake", device, graph_capture=False)
    for _ in range(3):
        advance()
    frames = 3 if quick else 10
    times = device_kernel_times(advance, frames, wp.get_device(device))
    n = frames * substeps
    return dict(
        scene=title,
        stages={k: dict(gpu_ms_per_step=t / n, launches_per_step=c / n) for k, (t, c) in times.items()},
        solve_phases=solve_phases("snake", device, frames),
        # the elastic blocks in CSR order (each lane's row apart from its warp's others) instead of a warp's slices:
        # what the product over particles gains from reads that a warp's lanes share (kernels/stiffness.py)
        solve_phases_csr=solve_phases("snake", device, frames, slice_width=1),
    )


def section_floor(device: str, quick: bool) -> dict:
    """benchmarks/latency_floor.py on one world's block here, and in processes of their own on clusters of 2 and 8
    blocks (SOFTSNAKE_WORLD_BLOCKS, read at import; Hopper only: elsewhere the error is recorded)."""
    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    from latency_floor import PASSES, device_stream, device_stream_line, measure

    rows = measure(device, repeats=3 if quick else 5)
    stream = device_stream(device, repeats=3 if quick else 5)
    clusters = {}
    for blocks in (2, 8) if device != "cpu" else ():  # a CPU world is one lane
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"floor_{blocks}.json"
        args = [sys.executable, "-P", str(here / "latency_floor.py"), "--device", device, "--json", str(path)]
        code, _, stderr = run_with_timeout(args, {**os.environ, "SOFTSNAKE_WORLD_BLOCKS": str(blocks)}, 120.0)
        if code == 0:
            rows += json.loads(path.read_text())["rows"]
        else:  # a cluster that fails or hangs is recorded; the one-block rows stay
            clusters[blocks] = ["stopped after 120 s" if code is None else f"exit code {code}"]
            clusters[blocks] += stderr.strip().splitlines()[-3:]
    for r in rows:
        sync = "sum" if r["block_sum"] else "barrier"
        code = "" if r.get("code", "none") == "none" else f", arithmetic code {r['code']}"
        if "stream_bytes_per_pass" in r:
            mb, rate = r["stream_bytes_per_pass"] / 1e6, r["stream_gb_per_s_per_block"]
            code = f", {mb:.2f} MB streamed ({rate:.0f} GB/s per block)"
        print(f"  ×{r['blocks']} {r['loads']} loads, {sync}{code}: {r['us_per_pass']:.2f} µs/pass", flush=True)
    print(f"  {device_stream_line(stream)}", flush=True)
    return dict(passes_per_step=PASSES, rows=rows, cluster_errors=clusters, device_stream=stream)


def section_agreement(device: str, quick: bool) -> dict:
    """The GPU run here, twice (a step has no sum whose order depends on the lanes' timing, so the two should agree
    bit for bit); the two CPU runs from benchmarks/gpu_prepare.sh (CARRIED) when they were made with the same
    seconds, arguments, Warp and sources, else here too (``cpu_reference``: "carried" or "computed", and why)."""
    here = Path(__file__).resolve().parent
    sys.path.insert(0, str(here))
    from device_agreement import mismatch, provenance

    seconds = 0.5 if quick else 2.0
    out, why = {}, {}
    with_tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    runs = (("gpu", device, 1.0), ("gpu_repeat", device, 1.0), ("cpu", "cpu", 1.0), ("cpu_ulp", "cpu", 1.000001))
    for name, run_device, scale in runs:
        carried = CARRIED / f"agreement_{name}.npz"
        if run_device == "cpu":
            why[name] = mismatch(carried, provenance(run_device, seconds, scale))
            if why[name] is None:
                with np.load(carried) as f:
                    out[name] = f["com"][:, 0].copy()
                continue
        path = with_tmp / f"agreement_{name}.npz"
        subprocess.run(
            [sys.executable, "-P", str(here / "device_agreement.py"), "run", "--device", run_device]
            + ["--youngs-scale", repr(scale), "--seconds", repr(seconds), "--out", str(path)],
            check=True,
        )
        with np.load(path) as f:
            out[name] = f["com"][:, 0].copy()
    computed = {k: v for k, v in why.items() if v is not None}
    print(f"  CPU runs {'computed here: ' + str(computed) if computed else 'carried from ' + str(CARRIED)}", flush=True)
    gap = lambda a, b: float(np.linalg.norm(out[a][-1] - out[b][-1]))  # noqa: E731
    forward = lambda a: float(out[a][-1, 0] - out[a][0, 0])  # noqa: E731
    return dict(
        seconds=seconds,
        forward_mm={k: 1e3 * forward(k) for k in out},
        gpu_cpu_gap_mm=1e3 * gap("gpu", "cpu"),
        gpu_repeats_bit_for_bit=bool(np.array_equal(out["gpu"], out["gpu_repeat"])),  # no order-dependent sums
        cpu_roundoff_gap_mm=1e3 * gap("cpu", "cpu_ulp"),
        cpu_reference="computed" if computed else "carried",
        cpu_reference_why=computed,
    )


def section_env(device: str, quick: bool) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_env import measure

    rows = []
    for snake in ("coarse", "full"):
        for worlds in (1, 16, 64, 256):
            rows.append(measure(worlds, snake, device, steps=3 if quick else 10, min_seconds=1.0 if quick else 3.0))
    return dict(rows=rows)


def section_ppo(device: str, quick: bool) -> dict:
    """PPO's full run (docs/learning.md): its summary and learning curve; the files stay in $OUT/ppo/."""
    root = Path(__file__).resolve().parent.parent
    out = Path(os.environ.get("OUT", "/tmp")) / "ppo"
    worlds = 8 if quick else 256
    steps = worlds * 64 * (2 if quick else 30)  # 30 rollouts of 64 steps per world
    subprocess.run(
        [sys.executable, "-P", str(root / "examples" / "train_ppo.py"), "--device", device, "--worlds", str(worlds)]
        + ["--timesteps", str(steps), "--out", str(out)],
        check=True,
    )
    return dict(summary=json.loads((out / "summary.json").read_text()), curve=(out / "curve.csv").read_text())


def section_tests(device: str, quick: bool) -> dict:
    """The CUDA test files, verbose: pytest's output goes to the console as it runs, and the tests passed and failed so
    far to the file after each (a run cut short keeps how far it got); stopped at the run's deadline
    (``returncode`` None)."""
    env = dict(os.environ, SOFTSNAKE_TEST_DEVICE=device)
    t0 = time.perf_counter()
    lines: list[str] = []
    result = dict(returncode=None, seconds=0.0, passed=0, failed=[], tail=[])
    with subprocess.Popen(
        [sys.executable, "-P", "-c", PYTEST, "-v", "--durations=10", "-p", "no:cacheprovider", *TEST_FILES],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as run:
        watchdog = threading.Timer(max(remaining(), 0.0), run.kill)
        watchdog.start()
        try:
            for line in run.stdout:
                line = line.rstrip()
                print("  " + line, flush=True)
                lines.append(line)
                verdict = line.split(" [")[0].strip().rsplit(" ", 1)[-1] if "::" in line else ""
                if verdict in ("PASSED", "FAILED", "ERROR"):
                    if verdict == "PASSED":
                        result["passed"] += 1
                    else:
                        result["failed"].append(line.split(" ")[0])
                    result.update(seconds=time.perf_counter() - t0, tail=lines[-25:])
                    save_partial(result)
        finally:
            watchdog.cancel()
    stopped = run.returncode is not None and run.returncode < 0
    result.update(returncode=None if stopped else run.returncode, seconds=time.perf_counter() - t0, tail=lines[-25:])
    return result


def compile_up_front(device: str) -> dict:
    """Compile, before any section, the kernel modules the carried cache lacks for ``device``, one module per core at
    once; say which were missing (for the CPU too, names only: modules a GPU run may still launch there) and how long
    it took. First, before any kernel is built, every stage variant the sections launch is hashed as a fresh process
    hashes it, the cache folders benchmarks/precompile_cuda.py fills (warp_runtime.module_identifiers)."""
    import softsnake.sim.dual  # noqa: F401  (the CUDA tests also run the dual formulation's stages)
    from softsnake.sim.warp_runtime import compile_kernels, kernels_to_compile, module_identifiers

    identifiers = module_identifiers(stage_block_dims=STAGE_BLOCK_DIMS)
    uncached = kernels_to_compile(device)
    uncached_cpu = uncached if device.startswith("cpu") else kernels_to_compile("cpu")
    cpu = "" if device.startswith("cpu") else f"; for cpu (not compiled here): {uncached_cpu or 'none'}"
    print(f"kernel modules not in the cache for {device}: {uncached or 'none'}{cpu}", flush=True)
    t0 = time.perf_counter()
    error = None
    try:
        compile_kernels(device, bar=False, workers=os.cpu_count(), stream=sys.stdout)
    except Exception as exc:  # noqa: BLE001 - the sections still run (and compile what they need)
        error = f"{type(exc).__name__}: {exc}"
        print(f"  compiling failed: {error}", flush=True)
    seconds = time.perf_counter() - t0
    print(f"compiled {len(uncached)} modules in {seconds:.1f} s on {os.cpu_count()} cores", flush=True)
    out = dict(
        uncached_modules=uncached,
        uncached_cpu_modules=uncached_cpu,
        compile_seconds=seconds,
        compile_workers=os.cpu_count(),
        module_identifiers=identifiers,
    )
    if error:
        out["compile_error"] = error
    return out


def main() -> int:
    global CARRIED, DEADLINE, SAVE_PARTIAL
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if sys.argv[1:] == ["--variant-builds"]:  # for gpu_prepare.sh: what the blocks section compiles beyond the defaults
        print("\n".join(variant_builds()))
        return 0
    if sys.argv[1:] == ["--cache-misses"]:  # for gpu_prepare.sh: what a variant would still compile on the GPU
        misses = variant_cache_misses()
        for name, missing in misses.items():
            print(f"{name}: {', '.join(missing) or 'all cached'}")
        return 1 if any(misses.values()) else 0
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--commit", default="", help="the commit measured (the device machine has no git history)")
    ap.add_argument(
        "--sections",
        default=",".join(DEFAULT_SECTIONS),
        help=f"comma-separated, from {','.join(SECTIONS)} (default: all but ppo)",
    )
    ap.add_argument("--quick", action="store_true", help="short timings, to try the script")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=450.0,
        help="seconds from the start after which no section begins and the tests and blocks variants stop "
        "(default 450: the whole device call, installation included, under 8 minutes)",
    )
    ap.add_argument(
        "--carried",
        default=str(CARRIED),
        help="folder of what benchmarks/gpu_prepare.sh carried (registers.json, agreement_cpu*.npz; default /tmp/gpu)",
    )
    args = ap.parse_args()
    DEADLINE = time.monotonic() + args.budget_s
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SECTIONS))
    if unknown:
        ap.error(f"unknown sections {unknown}; choose from {SECTIONS}")
    CARRIED = Path(args.carried)
    import warp as wp

    from softsnake.sim.model import quiet_warp

    quiet_warp()
    wp.init()
    dev = wp.get_device(args.device)
    meta = dict(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        commit=args.commit,
        device=dev.name,
        warp=wp.__version__,
        host=platform.platform(),
        python=platform.python_version(),
        quick=args.quick,
    )
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = dict(meta=meta, seconds={})
    write(path, record)
    meta.update(compile_up_front(args.device))
    registers = CARRIED / "registers.json"
    if registers.is_file():
        record["registers"] = json.loads(registers.read_text())
        # the carried cubins' module folders against this machine's (the same sources: the same folders)
        ours = meta["module_identifiers"]
        meta["registers_match_sources"] = all(
            ours.get(r["module"], {}).get(r["block_dim"]) == r["cubin"].split("/")[0]
            for r in record["registers"]["rows"]
        )
    write(path, record)
    functions = {name: globals()[f"section_{name}"] for name in SECTIONS}
    for name in wanted:
        if remaining() <= 0.0:
            record[name] = dict(error=f"not run: the time budget (--budget-s {args.budget_s:g}) was spent")
            print(f"{name}: {record[name]['error']}", flush=True)
            continue
        print(f"{name} …", flush=True)
        t0 = time.perf_counter()

        def save(partial: dict, name: str = name) -> None:
            record[name] = partial
            write(path, record)

        SAVE_PARTIAL = save
        try:
            record[name] = functions[name](args.device, args.quick)
        except Exception as exc:  # noqa: BLE001 - a failed section is recorded and the others still run
            record[name] = dict(error=f"{type(exc).__name__}: {exc}")
            print(f"  failed: {exc}", flush=True)
        record["seconds"][name] = time.perf_counter() - t0
        write(path, record)
    print(json.dumps({k: v for k, v in record.items() if k not in ("profile", "registers")}, indent=1, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
