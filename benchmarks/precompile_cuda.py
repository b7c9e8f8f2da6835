"""Compile every softsnake kernel module for a CUDA architecture ahead of time, on a machine without a GPU.

Warp compiles kernels on first use, and on a GPU machine the CUDA compile of all modules takes ~3 minutes of one core.
This fills Warp's kernel cache (``WARP_CACHE_PATH``, default ``~/.cache/warp``) with the cubins instead, e.g. on a
cluster's login node, for every block size the solver launches with on a GPU. Copy the cache directory to the GPU
machine, or share it, and point ``WARP_CACHE_PATH`` at it there.

    WARP_CACHE_PATH=/path/to/cache python -P benchmarks/precompile_cuda.py --arch 90

The cubins must come from the same Warp version and match the GPU machine's output format. Warp writes cubins when the
driver is older than Warp's CUDA toolkit, and PTX otherwise. ``--ptx`` writes PTX.
"""

from __future__ import annotations

import argparse
import time

import warp as wp

#: block sizes the solver launches each module with on CUDA (softsnake/sim/solver.py): 256 for plain launches, 1024
#: for the per-world reductions below 64 worlds (256 above), 32 for the list sums; a module missing here compiles on
#: first use as before
BLOCK_DIMS = {"minres": (256, 1024), "pcr": (256, 1024), "primal": (256, 1024), "block_sums": (32,)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", type=int, default=90, help="CUDA compute capability × 10 (90: Hopper, 80: A100, 89: Ada)")
    ap.add_argument("--ptx", action="store_true", help="write PTX instead of cubins")
    args = ap.parse_args()
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    import softsnake.robots.snake_sim  # noqa: F401  (with the solver and the primal step: every kernel module)
    import softsnake.sim.primal  # noqa: F401
    from warp._src.context import user_modules  # private: the registry of loaded Warp modules

    wp.init()
    for name, module in sorted(user_modules.items()):
        if not name.startswith("softsnake") or not module.kernels:
            continue
        for block_dim in BLOCK_DIMS.get(name.rsplit(".", 1)[-1], (256,)):
            t0 = time.perf_counter()
            options = module.resolve_options(wp.config, block_dim=block_dim)
            built = module._compile(None, None, output_arch=args.arch, use_ptx=args.ptx, options=options)
            state = f"compiled in {time.perf_counter() - t0:.1f} s" if built else "already cached"
            print(f"{name} (block {block_dim}, sm_{args.arch}): {state}", flush=True)
    print(f"kernel cache: {wp.config.kernel_cache_dir}")


if __name__ == "__main__":
    main()
