"""One thread block per world: the lane-loop convention of the solver's stage kernels, and the block barrier.

Every stage of a step (softsnake/sim/solver.py) is one tiled launch over the worlds, ``wp.launch_tiled(dim=[worlds])``:
block w holds world w, and its ``block_dim`` lanes share the world's work by striding over its elements,

    for e in range(lane, count, wp.block_dim()):
        ...
    block_sync()

so that a phase whose results another lane reads (a product scattered per tet and gathered per particle, a vector
a reduction reads) ends at a barrier. Reductions over a world use ``wp.tile_sum(wp.tile(x))``, which synchronises
the block itself; scalars that every lane computes from such sums (the Krylov recurrences, a line-search decision)
stay in registers, identical in every lane, so control flow that depends on them is uniform over the block, as a
barrier requires. Worlds never share a block, so they never influence each other.

On the CPU a block has one lane (block_dim = 1): the loops run in element order and the barrier compiles to nothing,
so a stage computes exactly what one launch per phase over the elements of that world would. With Warp's cooperative
CPU blocks on (``wp.config.enable_cpu_blocks``) the solver runs SolverConfig.block_dim lanes on the CPU as fibers of
one thread that swap at each barrier: ~50× slower, the way the tests run a GPU's lane code without a GPU.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import warp as wp


def kernels_source_digest(folder: Path | None = None) -> str:
    """sha256 of the sources of the kernels package. The stage modules carry it as a module option, so their compiled
    kernels are rebuilt whenever any function changes that they reach through the row-family table: Warp hashes the
    functions a ``wp.static`` expression with a loop variable resolves to only when it generates code, after it
    looked up the cache (kernels/row_families.py)."""
    digest = hashlib.sha256()
    for path in sorted((folder or Path(__file__).parent).glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def stage_register_cap() -> dict:
    """The CUDA register cap of the stage kernels from the environment variable SOFTSNAKE_CUDA_MAX_REGISTERS (unset:
    none, the compiler's choice). A GPU experiment's knob: without a cap the solve kernels take 150–255 registers
    per lane, which leaves room for one 256-lane block per multiprocessor and none of 512; a cap of 128 allows 512
    lanes (or two 256-lane worlds per multiprocessor), 64 allows 1024, at the cost of spills (benchmarks/gpu_check.py,
    blocks)."""
    value = os.environ.get("SOFTSNAKE_CUDA_MAX_REGISTERS", "").strip()
    if not value:
        return {}
    if not value.isdigit() or not 16 <= int(value) <= 255:
        raise ValueError(f"SOFTSNAKE_CUDA_MAX_REGISTERS must be an integer in [16, 255], got {value!r}")
    return {"cuda_max_registers": int(value)}


#: the module options of the stage modules (kernels/step_*.py): forward code only (the solver is not differentiated),
#: the sources' digest (kernels_source_digest) and the register cap, if one is set (stage_register_cap)
STAGE_MODULE_OPTIONS = {
    "enable_backward": False,
    "softsnake_kernels_source": kernels_source_digest(),
    **stage_register_cap(),
}


@wp.func_native(
    """
#if defined(__CUDA_ARCH__)
__syncthreads();
#else
WP_TILE_SYNC();
#endif
"""
)
def block_sync():
    """Barrier of the thread block: every lane's global-memory writes before it are visible to every lane after it.
    Must be reached by all lanes of the block (uniform control flow)."""
    ...


@wp.func
def block_sum(x: float) -> float:
    """Σ x over the lanes of the block (fixed tree order; every lane gets the sum)."""
    return wp.tile_sum(wp.tile(x))[0]


@wp.func
def block_sum_vec3(x: wp.vec3) -> wp.vec3:
    """Σ x over the lanes of the block (every lane gets the sum)."""
    return wp.tile_extract(wp.tile_sum(wp.tile(x, preserve_type=True)), 0)


@wp.func_native(
    """
#if defined(__CUDA_ARCH__)
return clock64();
#else
return (int64_t)__builtin_readcyclecounter();
#endif
"""
)
def block_clock() -> wp.int64:
    """The calling lane's clock [cycles]: the SM's cycle counter on a GPU, the core's time-stamp counter on the CPU.
    Only differences on the same lane mean anything (kernels/step_primal.py, the solve's phase timers)."""
    ...
