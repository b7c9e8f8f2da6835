"""One thread block (or one cluster of blocks) per world: the lane-loop convention of the solver's stage kernels, the
world's barrier and its sums.

Every stage of a step (softsnake/sim/solver.py) is one tiled launch over the worlds,
``wp.launch_tiled(dim=[worlds · WORLD_BLOCKS])``: blocks w · WORLD_BLOCKS … hold world w (``world_index``), and
their lanes share the world's work by striding over its elements,

    for e in range(lane, count, world_lanes()):
        ...
    world_sync()

so that a phase whose results another lane reads (a product scattered per tet and gathered per particle, a vector
a reduction reads) ends at a barrier. Reductions over a world (``world_sum``, ``world_scan``) take a tile sum per
block and add the blocks in order, and synchronise the world themselves; scalars that every lane computes from such
sums (the Krylov recurrences, a line-search decision) stay in registers, identical in every lane, so control flow
that depends on them is uniform over the world, as a barrier requires. Worlds never share a block, so they never
influence each other.

WORLD_BLOCKS is 1 unless SOFTSNAKE_WORLD_BLOCKS sets it: then a world's blocks form a thread-block cluster (compute
capability ≥ 9.0), one per multiprocessor, which meet at cluster barriers (release/acquire at cluster scope) and read
each other's block sums from shared memory (``cluster_sum``, ``cluster_scan``): a GPU experiment, for single worlds
that one multiprocessor leaves latency-bound.

On the CPU a block has one lane (block_dim = 1): the loops run in element order and the barrier compiles to nothing,
so a stage computes exactly what one launch per phase over the elements of that world would. With Warp's cooperative
CPU blocks on (``wp.config.enable_cpu_blocks``) the solver runs SolverConfig.block_dim lanes on the CPU as fibers of
one thread that swap at each barrier: ~50× slower, the way the tests run a GPU's lane code without a GPU. Clusters
have no CPU counterpart: their native parts (the barrier, the shared-memory reads) are checked on a GPU only.
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
    per lane, which leaves room for one 256-lane block per multiprocessor; a cap of 128 fits two, at the cost of
    spills (benchmarks/gpu_check.py, blocks). Larger blocks are out of reach anyway: the collision stage's tiles
    take 36 KB of static shared memory at 256 lanes and would need 70 KB, above the 48 KB limit, at 512."""
    value = os.environ.get("SOFTSNAKE_CUDA_MAX_REGISTERS", "").strip()
    if not value:
        return {}
    if not value.isdigit() or not 16 <= int(value) <= 255:
        raise ValueError(f"SOFTSNAKE_CUDA_MAX_REGISTERS must be an integer in [16, 255], got {value!r}")
    return {"cuda_max_registers": int(value)}


def world_blocks_from_environment() -> int:
    """Thread blocks per world from the environment variable SOFTSNAKE_WORLD_BLOCKS (unset: 1). Above 1, a world's
    lanes span a thread-block cluster of that many blocks on a GPU of compute capability ≥ 9.0 (Hopper), one per
    multiprocessor, which meet at cluster barriers and sum through each other's shared memory; a GPU experiment's knob
    (benchmarks/gpu_check.py, blocks), read when the kernels are imported (a module option). The CPU runs 1."""
    value = os.environ.get("SOFTSNAKE_WORLD_BLOCKS", "").strip() or "1"
    if value not in ("1", "2", "4", "8", "16"):
        raise ValueError(f"SOFTSNAKE_WORLD_BLOCKS must be 1, 2, 4, 8 or 16, got {value!r}")
    return int(value)


#: thread blocks per world (world_blocks_from_environment)
WORLD_BLOCKS = world_blocks_from_environment()


#: the most elements a lane loads before it uses any, in the linear solve's loops (the vector updates of
#: kernels/minres.py, a block row, a coarse node's list): a GPU lane waits for its loads once per batch instead of once
#: per element. The compiler does not overlap them itself: one element's loads cannot pass the previous element's
#: stores (the arrays might alias), and a loop over a list of runtime length is not unrolled. The sums keep their
#: element order. The batch's slots are unrolled; how many of them hold elements is ``batch_size()``. Four by
#: construction: a batch's indices are a vec4i (``lane_batch``).
LANE_BATCH = wp.constant(4)


def gpu_lane_batch_from_environment() -> int:
    """Elements per batch of a lane's loops on a GPU (``batch_size``) from the environment variable
    SOFTSNAKE_LANE_BATCH (unset: LANE_BATCH, 4). 1 runs the GPU's lanes an element at a time, as a one-lane CPU block
    runs, with the same sums in the same order: a GPU experiment's knob (benchmarks/gpu_check.py, blocks) that weighs
    the batches' shorter chains of dependent loads against their larger code, read when the kernels are imported (a
    module option of the stage modules, the only ones that call ``batch_size``)."""
    value = os.environ.get("SOFTSNAKE_LANE_BATCH", "").strip() or str(LANE_BATCH)
    if value not in ("1", str(LANE_BATCH)):
        raise ValueError(f"SOFTSNAKE_LANE_BATCH must be 1 or {LANE_BATCH}, got {value!r}")
    return int(value)


#: elements per batch on a GPU and in the CPU's cooperative blocks (gpu_lane_batch_from_environment)
GPU_LANE_BATCH = gpu_lane_batch_from_environment()

#: the module options of the stage modules (kernels/step_*.py): forward code only (the solver is not differentiated),
#: the sources' digest (kernels_source_digest), the register cap, if one is set (stage_register_cap), the
#: cluster of a world's blocks (WORLD_BLOCKS), and the GPU's batch, if not the default (GPU_LANE_BATCH)
STAGE_MODULE_OPTIONS = {
    "enable_backward": False,
    "softsnake_kernels_source": kernels_source_digest(),
    **stage_register_cap(),
    **({"cluster_dim": WORLD_BLOCKS} if WORLD_BLOCKS > 1 else {}),
    **({"softsnake_lane_batch": GPU_LANE_BATCH} if GPU_LANE_BATCH != LANE_BATCH else {}),
}


@wp.func
def world_index(block: int, thread: int):
    """(world, lane in the world) of a stage kernel's thread, from ``wp.tid()`` of a launch over worlds · WORLD_BLOCKS
    blocks: the blocks of world w are w · WORLD_BLOCKS … (a cluster's ranks in order)."""
    blocks = wp.static(WORLD_BLOCKS)
    return block // blocks, (block % blocks) * wp.block_dim() + thread


@wp.func
def world_lanes() -> int:
    """The lanes that share a world: block_dim × WORLD_BLOCKS (1 on the CPU unless its cooperative blocks are on)."""
    return wp.block_dim() * wp.static(WORLD_BLOCKS)


#: a batch of LANE_BATCH vec3 values, one per row
vec3_batch = wp.types.matrix(shape=(LANE_BATCH, 3), dtype=float)
#: a batch of LANE_BATCH spatial vectors, one per row
spatial_batch = wp.types.matrix(shape=(LANE_BATCH, 6), dtype=float)
#: a batch of LANE_BATCH float64 values
float64_batch = wp.types.vector(length=LANE_BATCH, dtype=wp.float64)


@wp.func_native(
    f"""
#if defined(__CUDA_ARCH__) || WP_TILE_BLOCK_DIM > 1
return {GPU_LANE_BATCH};
#else
return 1;
#endif
"""
)
def batch_size() -> int:
    """Elements per batch: LANE_BATCH on a GPU and in the CPU's cooperative blocks (the tests' run of the GPU's lane
    code; GPU_LANE_BATCH, 1 with SOFTSNAKE_LANE_BATCH=1), 1 in a one-lane CPU block, whose core overlaps independent
    loads itself (out-of-order execution) and where the batches' bookkeeping cost ~3 % of a step. A compile-time
    constant, so the compiler drops the other slots' loads and arithmetic."""
    ...


@wp.func
def batch_step(lanes: int) -> int:
    """The stride of a lane's batched loop, ``for k0 in range(lane, count, batch_step(lanes))``."""
    return batch_size() * lanes


@wp.func
def lane_batch(base: int, k0: int, lanes: int, count: int) -> wp.vec4i:
    """Indices base + k0 + j·lanes, j < LANE_BATCH, of a lane's next batch of elements in a loop
    ``for k0 in range(lane, count, batch_step(lanes))``; slots past the last element repeat the last one (loads
    only: a store checks ``batch_holds``)."""
    last = count - 1
    return wp.vec4i(
        base + k0,
        base + wp.min(k0 + lanes, last),
        base + wp.min(k0 + 2 * lanes, last),
        base + wp.min(k0 + 3 * lanes, last),
    )


@wp.func
def batch_holds(k0: int, j: int, lanes: int, count: int) -> bool:
    """Whether slot j of the batch at k0 (``lane_batch``) is an element."""
    return j < batch_size() and k0 + j * lanes < count


@wp.func
def gather_batch(a: wp.array(dtype=wp.vec3), idx: wp.vec4i) -> vec3_batch:
    """a at the batch's indices, row j = a[idx[j]]: all loads issued before any is used."""
    return wp.matrix_from_rows(a[idx[0]], a[idx[1]], a[idx[2]], a[idx[3]])


@wp.func
def gather_batch(a: wp.array(dtype=wp.spatial_vector), idx: wp.vec4i) -> spatial_batch:  # noqa: F811 (an overload)
    """a at the batch's indices (spatial vectors), row j = a[idx[j]]."""
    return wp.matrix_from_rows(a[idx[0]], a[idx[1]], a[idx[2]], a[idx[3]])


@wp.func
def gather_batch(a: wp.array(dtype=float), idx: wp.vec4i) -> wp.vec4:  # noqa: F811 (a Warp overload)
    """a at the batch's indices (scalar arrays)."""
    return wp.vec4(a[idx[0]], a[idx[1]], a[idx[2]], a[idx[3]])


@wp.func
def gather_batch(a: wp.array(dtype=int), idx: wp.vec4i) -> wp.vec4i:  # noqa: F811 (a Warp overload)
    """a at the batch's indices (index arrays)."""
    return wp.vec4i(a[idx[0]], a[idx[1]], a[idx[2]], a[idx[3]])


@wp.func
def gather_batch(a: wp.array(dtype=wp.float64), idx: wp.vec4i) -> float64_batch:  # noqa: F811 (a Warp overload)
    """a at the batch's indices (float64 arrays)."""
    return float64_batch(a[idx[0]], a[idx[1]], a[idx[2]], a[idx[3]])


@wp.func
def first_code_ahead(codes: wp.array(dtype=int), first: int, end: int) -> int:
    """Before a lane's walk over entries [first, end) of a list of codes (``code_and_next``): on a GPU the first
    entry's code, read ahead; 0 in a one-lane CPU block and for an empty list."""
    code = int(0)
    if batch_size() > 1 and first < end:
        code = codes[first]
    return code


@wp.func
def code_and_next(codes: wp.array(dtype=int), c: int, end: int, ahead: int) -> wp.vec2i:
    """(entry c's code, the ``ahead`` to pass for entry c + 1) in a walk ``for c in range(first, end)`` that starts
    from ``first_code_ahead``. On a GPU, entry c's code was read one entry before and entry c + 1's is read now,
    before the work on entry c that depends on its code: a lane waits once per entry, where reading each code where
    it is used made it wait twice (for the code, then for what it indexes). A CPU core runs ahead by itself, so a
    one-lane CPU block reads entry c's code here and nothing ahead."""
    if batch_size() > 1:
        return wp.vec2i(ahead, codes[wp.min(c + 1, end - 1)])
    return wp.vec2i(codes[c], 0)


@wp.func
def sliced_row(row: int, row_length: int, width: int) -> int:
    """Where entry 0 of ``row`` lies in a table of rows of ``row_length`` entries stored in slices of ``width`` rows
    (softsnake/sim/lane_layout.py, sliced_rows); entry j lies j·width further. A slice keeps its rows' entries j side
    by side, so that the lanes of a warp, a row each, read consecutive addresses; width 1 is row-major. ``width`` is a
    power of two (SolverConfig.slice_width), so a row's place in its slice is a bit mask, not a division."""
    lane = row & (width - 1)
    return (row - lane) * row_length + lane


@wp.func_native(
    """
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 900
if (blocks > 1) {
    asm volatile("barrier.cluster.arrive.release;" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
    return;
}
#endif
__syncthreads();
#else
WP_TILE_SYNC();
#endif
"""
)
def lanes_sync(blocks: int):
    """Barrier of ``blocks`` thread blocks (a cluster, or the block alone for 1) with release/acquire ordering."""
    ...


@wp.func
def world_sync():
    """Barrier of the world's lanes: every lane's global-memory writes before it are visible to every lane after it.
    Must be reached by all lanes of the world (uniform control flow)."""
    lanes_sync(wp.static(WORLD_BLOCKS))


@wp.func_native(
    """
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__shared__ float slot;
if (threadIdx.x == 0) { slot = x; }
asm volatile("barrier.cluster.arrive.release;" ::: "memory");
asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
unsigned int local = (unsigned int)__cvta_generic_to_shared(&slot);
float total = 0.0f;
for (int r = 0; r < blocks; ++r) {
    unsigned int remote;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(r));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
    total += v;
}
asm volatile("barrier.cluster.arrive.release;" ::: "memory");
asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
return total;
#else
return x;
#endif
"""
)
def cluster_sum(x: float, blocks: int) -> float:
    """Σ over the ``blocks`` blocks of a cluster of each block's ``x`` (the same in all its lanes), in rank order,
    through the blocks' shared memory; every lane of the cluster gets the sum."""
    ...


@wp.func_native(
    """
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__shared__ int slot;
if (threadIdx.x == 0) { slot = x; }
asm volatile("barrier.cluster.arrive.release;" ::: "memory");
asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
unsigned int local = (unsigned int)__cvta_generic_to_shared(&slot);
int before = 0;
int total = 0;
for (int r = 0; r < blocks; ++r) {
    unsigned int remote;
    int v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(r));
    asm volatile("ld.shared::cluster.s32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
    if (r < rank) { before += v; }
    total += v;
}
asm volatile("barrier.cluster.arrive.release;" ::: "memory");
asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
return wp::vec2i(before, total);
#else
return wp::vec2i(0, x);
#endif
"""
)
def cluster_scan(x: int, rank: int, blocks: int) -> wp.vec2i:
    """(Σ of the blocks before ``rank``, Σ of all) over the ``blocks`` blocks of a cluster of each block's ``x``."""
    ...


@wp.func
def world_sum(x: float) -> float:
    """Σ x over the lanes of the world (fixed tree order within a block, then the blocks in order; every lane gets the
    sum)."""
    total = wp.tile_sum(wp.tile(x))[0]
    if wp.static(WORLD_BLOCKS > 1):
        total = cluster_sum(total, wp.static(WORLD_BLOCKS))
    return total


@wp.func
def world_sum_vec3(x: wp.vec3) -> wp.vec3:
    """Σ x over the lanes of the world (every lane gets the sum)."""
    total = wp.tile_extract(wp.tile_sum(wp.tile(x, preserve_type=True)), 0)
    if wp.static(WORLD_BLOCKS > 1):
        blocks = wp.static(WORLD_BLOCKS)
        total = wp.vec3(cluster_sum(total[0], blocks), cluster_sum(total[1], blocks), cluster_sum(total[2], blocks))
    return total


@wp.func
def world_scan(x: int, lane: int) -> wp.vec2i:
    """(Σ x of the lanes before ``lane``, Σ x of all lanes of the world): an exclusive scan in lane order."""
    runs = wp.tile(x)
    before = wp.untile(wp.tile_scan_exclusive(runs))
    total = wp.tile_sum(runs)[0]
    if wp.static(WORLD_BLOCKS > 1):
        blocks = wp.static(WORLD_BLOCKS)
        across = cluster_scan(total, lane // wp.block_dim(), blocks)
        before += across[0]
        total = across[1]
    return wp.vec2i(before, total)


@wp.func_native(
    """
#if defined(__CUDA_ARCH__)
return clock64();
#elif defined(__x86_64__) || defined(__i386__)
return (int64_t)__builtin_readcyclecounter();
#elif defined(__aarch64__)
int64_t ticks;
asm volatile("mrs %0, cntvct_el0" : "=r"(ticks));
return ticks;
#else
return 0;
#endif
"""
)
def block_clock() -> wp.int64:
    """The calling lane's clock: the SM's cycle counter on a GPU, the time-stamp counter on an x86 CPU, the virtual
    timer on an ARM one (0 elsewhere). Only differences on the same lane mean anything (kernels/saddle.py, the
    solve's phase timers, which read it only when they are on)."""
    ...
