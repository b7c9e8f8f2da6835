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

#: block sizes the solver launches each module with on CUDA: 256 for plain launches and for the stages (one block per
#: world, SolverConfig.block_dim = 0); pass --block-dim to add another stage block size
STAGE_MODULES = ("step_common", "step_primal", "step_body_blocks", "step_dual")


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
    args = ap.parse_args()
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    from warp._src.context import user_modules  # private: the registry of loaded Warp modules

    import softsnake.robots.snake_sim  # noqa: F401  (with the solver: every kernel module)
    import softsnake.sim.dual  # noqa: F401
    import softsnake.sim.primal  # noqa: F401

    wp.init()
    for name, module in sorted(user_modules.items()):
        if not name.startswith("softsnake") or not module.kernels:
            continue
        stage = name.rsplit(".", 1)[-1] in STAGE_MODULES
        for block_dim in sorted({256, *(args.block_dim if stage else ())}):
            t0 = time.perf_counter()
            options = module.resolve_options(wp.config, block_dim=block_dim)
            built = module._compile(None, None, output_arch=args.arch, use_ptx=args.ptx, options=options)
            state = f"compiled in {time.perf_counter() - t0:.1f} s" if built else "already cached"
            print(f"{name} (block {block_dim}, sm_{args.arch}): {state}", flush=True)
    print(f"kernel cache: {wp.config.kernel_cache_dir}")


if __name__ == "__main__":
    main()
