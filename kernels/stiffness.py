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
    """The block pattern of one world (softsnake/sim/stiffness.py builds it): block rows per particle (CSR
    ``row_start``/``col``), each block's contributions (CSR ``contrib_start`` over ``contrib``: 16·tet + 4·a + b, and
    ``contrib_gg``: g_a·g_b), and ``blocks`` per world (worlds · blocks) with ``rotated`` (worlds · tets · 4)
    scratch."""

    blocks_per_world: int
    row_start: wp.array(dtype=int)
    col: wp.array(dtype=int)
    contrib_start: wp.array(dtype=int)
    contrib: wp.array(dtype=int)
    contrib_gg: wp.array(dtype=float)
    blocks: wp.array(dtype=wp.mat33)
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
def assemble_block(w: int, k: int, m: ModelData, lame: wp.array(dtype=wp.vec2), sp: StiffnessPattern):
    """Block k of world w: Σ over its contributions of λ' r_a r_bᵀ + μ' ((g_a·g_b) I + r_b r_aᵀ)."""
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
    sp.blocks[w * sp.blocks_per_world + k] = K


@wp.func
def block_row_times(
    w: int, p: int, particles_per_world: int, sp: StiffnessPattern, x: wp.array(dtype=wp.vec3)
) -> wp.vec3:
    """(A_el x) of particle p in world w: its block row times x, in column order. The row is read a batch of blocks
    at a time, their columns first, so that a GPU lane waits twice per batch instead of once per block."""
    acc = wp.vec3()
    base = w * sp.blocks_per_world
    xb = wp.vec4i(w * particles_per_world)
    end = sp.row_start[p + 1]
    for k0 in range(sp.row_start[p], end, batch_step(1)):
        ks = lane_batch(0, k0, 1, end)
        xs = gather_batch(x, gather_batch(sp.col, ks) + xb)
        for j in range(LANE_BATCH):
            K = sp.blocks[base + ks[j]]
            if batch_holds(k0, j, 1, end):
                acc += K * xs[j]
    return acc
