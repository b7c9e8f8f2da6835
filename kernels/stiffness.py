"""The elastic part of the primal system matrix as 3×3 blocks, A_el = h(h+β) K = Σ_t J_tᵀ C_t⁻¹ J_t (docs/solver.md).

The tets' rotations R_t are held for the whole step (the chord Newton method), so A_el is constant over a step: it is
assembled once per step into a block-sparse matrix with one 3×3 block per pair of particles that share a tet, and
every MINRES product is a block row times the velocities, ~15 blocks per particle, instead of the strain and stress
of every tet and the gather of their vertex forces.

For the corotated linear tet (kernels/tet.py) with rest gradients g_a (the rows of B, g_0 = −Σ g_k) and scaled Lamé
parameters (λ', μ') = h(h+β)V·(λ, μ), the block of vertices a, b is

    K_ab = λ' r_a r_bᵀ + μ' ((g_a·g_b) I + r_b r_aᵀ),     r_a = R_t g_a,

the force on vertex a from a velocity of vertex b through ε = sym(Rᵀ Σ_b x_b g_bᵀ), σ = λ' tr(ε) I + 2μ' ε and
f_a = R σ g_a. A block (i, j) sums the K_ab of the tets that hold particles i and j as vertices a and b, in a fixed
order (the pattern's contribution list), so the assembly is deterministic on every device.
"""

import warp as wp

from .block import LANE_BATCH, batch_holds, batch_step, gather_batch, lane_batch
from .data import Jacobian, ModelData


@wp.struct
class StiffnessPattern:
    """The block pattern of one world in slices of ``slice_width`` block rows (softsnake/sim/stiffness.py,
    sliced_layout): block j of particle p's row in slot ``row_first[p] + j · slice_width`` (``row_length[p]`` blocks,
    in column order), its column ``col`` and contributions (CSR ``contrib_start`` over ``contrib``: 16·tet + 4·a + b,
    and ``contrib_gg``: g_a·g_b) per slot; the ``upper_count`` slots ``upper`` of the blocks on and right of the
    diagonal and the slots ``mirror`` of their transposes; ``blocks`` the blocks' 9 entries per slot and world
    (``block_offset``) and ``rotated`` (worlds · tets · 4) scratch. A slice is a warp's rows on a GPU (32), so that
    its lanes read their j-th blocks from consecutive addresses, entry by entry; 1 on the CPU, which is CSR with each
    block's entries together."""

    slots_per_world: int
    slice_width: int
    row_first: wp.array(dtype=int)
    row_length: wp.array(dtype=int)
    col: wp.array(dtype=int)
    contrib_start: wp.array(dtype=int)
    contrib: wp.array(dtype=int)
    contrib_gg: wp.array(dtype=float)
    upper_count: int
    upper: wp.array(dtype=int)
    mirror: wp.array(dtype=int)
    blocks: wp.array(dtype=float)
    block_matrices: wp.array(dtype=wp.mat33)  # ``blocks`` as 3×3 matrices, the same memory (read at slice_width 1)
    rotated: wp.array(dtype=wp.vec3)


@wp.func
def rest_gradient(B: wp.mat33, a: int) -> wp.vec3:
    """g_a of a tet: row a−1 of its rest inverse B, g_0 = −(g_1 + g_2 + g_3)."""
    if a == 0:
        return -wp.vec3(B[0, 0] + B[1, 0] + B[2, 0], B[0, 1] + B[1, 1] + B[2, 1], B[0, 2] + B[1, 2] + B[2, 2])
    return wp.vec3(B[a - 1, 0], B[a - 1, 1], B[a - 1, 2])


@wp.func
def rotate_gradients(tid: int, m: ModelData, jac: Jacobian, rotated: wp.array(dtype=wp.vec3)):
    """r_a = R_t g_a for the four vertices of tet ``tid`` (world-major)."""
    w = tid // m.tet_count
    t = tid - w * m.tet_count
    R = jac.tet_rotation[tid]
    B = m.tet_rest_inverse[t]
    for a in range(4):
        rotated[4 * tid + a] = R * rest_gradient(B, a)


@wp.func
def block_offset(w: int, k: int, sp: StiffnessPattern) -> int:
    """Where entry (0, 0) of slot k's block of world w lies in ``sp.blocks``; entry (r, c) lies (3r + c)·slice_width
    further: a slice's blocks are stored entry by entry, each entry of its slots together."""
    lane = k & (sp.slice_width - 1)  # a power of two
    return 9 * (w * sp.slots_per_world + k - lane) + lane


@wp.func
def store_block(w: int, k: int, sp: StiffnessPattern, K: wp.mat33):
    """K into slot k of world w (``block_matrices`` at slice width 1, else entry by entry: block_offset)."""
    if sp.slice_width == 1:
        sp.block_matrices[w * sp.slots_per_world + k] = K
    else:
        o = block_offset(w, k, sp)
        for e in range(9):
            sp.blocks[o + e * sp.slice_width] = K[e // 3, e % 3]


@wp.func
def assemble_block(w: int, u: int, m: ModelData, lame: wp.array(dtype=wp.vec2), sp: StiffnessPattern):
    """The u-th upper block of world w (slot ``sp.upper[u]``): Σ over its contributions of
    λ' r_a r_bᵀ + μ' ((g_a·g_b) I + r_b r_aᵀ), in order, and its transpose into the mirror slot. The mirror's own
    sum, taken over the same tets in the same order with a and b swapped, has the same products and sums entry by
    entry (only the outer products' factors trade places), so the transpose is that block to the bit."""
    k = sp.upper[u]
    K = wp.mat33()
    base = 4 * w * m.tet_count
    for c in range(sp.contrib_start[k], sp.contrib_start[k + 1]):
        code = sp.contrib[c]
        t = code // 16
        a = (code // 4) % 4
        bb = code % 4
        ra = sp.rotated[base + 4 * t + a]
        rb = sp.rotated[base + 4 * t + bb]
        l = lame[t]
        K += l[0] * wp.outer(ra, rb) + l[1] * (sp.contrib_gg[c] * wp.identity(n=3, dtype=float) + wp.outer(rb, ra))
    store_block(w, k, sp, K)
    km = sp.mirror[u]
    if km != k:
        store_block(w, km, sp, wp.transpose(K))


@wp.func
def csr_row_times(
    matrices: wp.array(dtype=wp.mat33),
    col: wp.array(dtype=int),
    x: wp.array(dtype=wp.vec3),
    xb: wp.vec4i,
    base: int,
    first: int,
    end: int,
) -> wp.vec3:
    """Σ blocks · x over slots [first, end) of a row at slice width 1 (CSR): each block one 3×3 load from
    ``matrices`` (StiffnessPattern.block_matrices, world slots from ``base``), which a CPU core reads fastest."""
    acc = wp.vec3()
    for k0 in range(first, end, batch_step(1)):
        ks = lane_batch(0, k0, 1, end)
        xs = gather_batch(x, gather_batch(col, ks) + xb)
        for j in range(LANE_BATCH):
            K = matrices[base + ks[j]]
            if batch_holds(k0, j, 1, end):
                acc += K * xs[j]
    return acc


@wp.func
def sliced_row_times(
    blocks: wp.array(dtype=float),
    col: wp.array(dtype=int),
    x: wp.array(dtype=wp.vec3),
    xb: wp.vec4i,
    o: int,
    width: int,
    first: int,
    end: int,
) -> wp.vec3:
    """Σ blocks · x over a row's slots first, first + width, … before ``end`` in slices of ``width`` rows: slot k's
    block has its entry (r, c) at o + 9k + (3r + c)·width in ``blocks`` (block_offset)."""
    acc = wp.vec3()
    for k0 in range(first, end, batch_step(width)):
        ks = lane_batch(0, k0, width, end)
        xs = gather_batch(x, gather_batch(col, ks) + xb)
        for j in range(LANE_BATCH):
            e = o + 9 * ks[j]
            K = wp.mat33(
                blocks[e],
                blocks[e + width],
                blocks[e + 2 * width],
                blocks[e + 3 * width],
                blocks[e + 4 * width],
                blocks[e + 5 * width],
                blocks[e + 6 * width],
                blocks[e + 7 * width],
                blocks[e + 8 * width],
            )
            if batch_holds(k0, j, width, end):
                acc += K * xs[j]
    return acc


@wp.func
def block_row_times(
    w: int, p: int, particles_per_world: int, sp: StiffnessPattern, x: wp.array(dtype=wp.vec3)
) -> wp.vec3:
    """(A_el x) of particle p in world w: its block row times x, in column order. The row is read a batch of blocks
    at a time, their columns first, so that a GPU lane waits twice per batch instead of once per block; the two
    layouts have a loop each (a branch per block inside one loop cost a CPU step ~10 %)."""
    width = sp.slice_width
    first = sp.row_first[p]
    end = first + width * (sp.row_length[p] - 1) + 1  # past the row's last slot
    xb = wp.vec4i(w * particles_per_world)
    if width == 1:
        return csr_row_times(sp.block_matrices, sp.col, x, xb, w * sp.slots_per_world, first, end)
    return sliced_row_times(sp.blocks, sp.col, x, xb, block_offset(w, first, sp) - 9 * first, width, first, end)
