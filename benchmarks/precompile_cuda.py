"""Compile every softsnake kernel module for a CUDA architecture ahead of time, on a machine without a GPU.

Warp compiles kernels on first use, and on a GPU machine the CUDA compile of all modules takes ~3 minutes of one core.
This fills Warp's kernel cache (``WARP_CACHE_PATH``, default ``~/.cache/warp``) with the cubins instead, e.g. on a
cluster's login node, for every block size the solver launches with on a GPU. Copy the cache directory to the GPU
machine, or share it, and point ``WARP_CACHE_PATH`` at it there.

    WARP_CACHE_PATH=/path/to/cache python -P benchmarks/precompile_cuda.py --arch 90

``--modules step_primal,step_dual`` compiles only those modules (the last part of their names); ``--benchmarks
latency_floor`` adds the kernels of that script of benchmarks/. The kernels compiled
are the ones ``import softsnake`` finds: run from the checkout to compile with ``PYTHONPATH=$PWD`` (a shared
environment's editable install may point at another checkout).

The cubins must come from the same Warp version and match the GPU machine's output format. Warp writes cubins when the
driver is older than Warp's CUDA toolkit, and PTX otherwise. ``--ptx`` writes PTX.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import warp as wp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90, help="CUDA compute capability × 10 (90: Hopper, 80: A100, 89: Ada)")
    ap.add_argument("--ptx", action="store_true", help="write PTX instead of cubins")
    ap.add_argument(
        "--block-dim",
        type=int,
        action="append",
        default=[],
        help="also compile the stage modules for this block size (SolverConfig.block_dim)",
    )
    ap.add_argument(
        "--stage-only",
        action="store_true",
        help="only the stage modules, at the --block-dim sizes alone (a variant of gpu_check's blocks section)",
    )
    ap.add_argument(
        "--modules",
        default="",
        help="comma-separated module names to compile, e.g. step_primal,step_dual (default: every softsnake module)",
    )
    ap.add_argument(
        "--record",
        default="",
        help="append the kernel cache folder of every module compiled or found cached to this file, one per line",
    )
    ap.add_argument(
        "--benchmarks",
        default="",
        help="comma-separated scripts of benchmarks/ whose own kernels to compile too (block 256), e.g. latency_floor",
    )
    args = ap.parse_args()
    only = {m.strip() for m in args.modules.split(",") if m.strip()}
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    from warp._src.context import user_modules  # private: the registry of loaded Warp modules

    import softsnake.kernels
    import softsnake.robots.snake_sim  # noqa: F401  (with the solver: every kernel module)
    import softsnake.sim.dual  # noqa: F401
    import softsnake.sim.primal  # noqa: F401
    from softsnake.sim.warp_runtime import STAGE_MODULES, module_identifiers

    wp.init()
    kernels = Path(softsnake.kernels.__file__).parent
    print(f"kernel sources: {kernels}", flush=True)
    # every variant's cache folder as a fresh process names it, before any module is built (building step_dual's
    # kernels changes step_primal's hash in this process, and the other way round)
    module_identifiers(stage_block_dims=args.block_dim)
    for name, module in sorted(user_modules.items()):
        short = name.rsplit(".", 1)[-1]
        if not name.startswith("softsnake") or not module.kernels or (only and short not in only):
            continue
        stage = short in STAGE_MODULES
        if args.stage_only and not stage:
            continue
        # the block sizes the solver launches a module with on CUDA: 256 for plain launches and for the stages (one
        # block per world, SolverConfig.block_dim = 0); --block-dim adds stage block sizes
        dims = set(args.block_dim) if args.stage_only and args.block_dim else {256, *(args.block_dim if stage else ())}
        for block_dim in sorted(dims):
            build(name, module, block_dim, args)
    if args.benchmarks:
        # a benchmark's kernels: its module, and the modules of its kernels declared with module="unique"
        sys.path.insert(0, str(Path(__file__).parent))
        for script in args.benchmarks.split(","):
            found = vars(importlib.import_module(script.strip())).values()
            modules = {k.module.name: k.module for k in found if isinstance(k, wp.Kernel)}
            for name, module in sorted(modules.items()):
                build(name, module, 256, args)
    print(f"kernel cache: {wp.config.kernel_cache_dir}")


def build(name: str, module, block_dim: int, args: argparse.Namespace) -> None:
    """Compile one Warp module for ``block_dim`` lanes per block and args.arch into the kernel cache."""
    t0 = time.perf_counter()
    options = module.resolve_options(wp.config, block_dim=block_dim)
    built = module._compile(None, None, output_arch=args.arch, use_ptx=args.ptx, options=options)
    state = f"compiled in {time.perf_counter() - t0:.1f} s" if built else "already cached"
    print(f"{name} (block {block_dim}, sm_{args.arch}): {state}", flush=True)
    if args.record:
        with open(args.record, "a", encoding="utf-8") as f:
            f.write(module.get_module_identifier(block_dim) + "\n")


if __name__ == "__main__":
    main()
