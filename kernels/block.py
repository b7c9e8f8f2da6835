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
so a stage computes exactly what one launch per phase over the elements of that world would.
"""

import warp as wp


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
