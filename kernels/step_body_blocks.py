"""The rows' rigid-body preconditioner's factorisation stage of the primal step (kernels/body_precond.py), one block
per world. A module of its own: its loops stay loops (``max_unroll`` 0), since the dense 6×6 block updates inlined for
every row kind and unrolled took minutes to compile for CUDA.
"""

import warp as wp

from .block import STAGE_MODULE_OPTIONS, world_index, world_lanes, world_sync
from .body_precond import (
    body_mass_block,
    cholesky_scale_column,
    cholesky_update_row,
    cluster_dof,
    cluster_inverse_column,
    cluster_jitter,
)
from .data import BodyData, ModelData, StepData
from .row_families import FAMILIES
from .step_primal import PrimalData

wp.set_module_options({**STAGE_MODULE_OPTIONS, "max_unroll": 0})


@wp.kernel
def factor_body_blocks(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
):
    """H = M_b + J_bᵀ D⁻¹ J_b per cluster of bodies at the rows the solve sees, its Cholesky factor (a row per lane,
    two barriers per column) and from it H⁻¹ (a column per lane): the rows' rigid-body preconditioner
    (kernels/body_precond.py)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    bb = p.bb
    for k in range(lane, bb.block_size, lanes):
        p.H[w * bb.block_size + k] = wp.float64(0.0)
    R = m.row_count
    for r in range(lane, R, lanes):
        p.row_d[w * R + r] = s.diag[w * R + r]
    world_sync()
    n = b.body_count
    for i in range(lane, n, lanes):
        body_mass_block(w * n + i, b, bb, s.h, s.body_x_start, s.body_v, p.H)
    for f in range(wp.static(len(FAMILIES))):  # the H terms and D of every row acting on a body
        wp.static(FAMILIES[f].body_block)(w, lane, m, b, s, bb, p.H, p.row_d)
    world_sync()
    for c in range(lane, bb.clusters, lanes):
        cluster_jitter(w, c, bb, p.H, p.H_jitter)
    world_sync()
    dofs = 6 * n
    for j in range(bb.max_dofs):
        for q in range(lane, dofs, lanes):
            cholesky_scale_column(w, cluster_dof(b, bb, q), j, bb, p.H, p.H_jitter)
        world_sync()
        for q in range(lane, dofs, lanes):
            cholesky_update_row(w, cluster_dof(b, bb, q), j, bb, p.H, p.H_jitter)
        world_sync()
    for q in range(lane, dofs, lanes):
        cluster_inverse_column(w, cluster_dof(b, bb, q), bb, p.H, p.H_inv)
