"""The rows' rigid-body preconditioner's factorisation stage of the primal step (kernels/body_precond.py), one block
per world. A module of its own: its loops stay loops (``max_unroll`` 0), since the dense 6×6 block updates inlined for
every row kind and unrolled took minutes to compile for CUDA.
"""

import warp as wp

from .block import STAGE_MODULE_OPTIONS, world_index, world_lanes, world_sync
from .body_precond import (
    body_block_chunk,
    body_block_entry,
    cholesky_scale_column,
    cholesky_update_row,
    cluster_dof,
    cluster_inverse_column,
    cluster_jitter,
)
from .data import BodyData, ModelData, StepData
from .minres import row_index
from .row_families import FAMILIES
from .saddle import (
    FACTOR_BLOCKS,
    FACTOR_CHOLESKY,
    FACTOR_CHUNKS,
    FACTOR_INVERSE,
    FACTOR_ROWS,
    PrimalData,
    phase_clock,
    phase_mark,
    saddle_rows,
)
from .world_rows import world_inverse_inertias

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
    """H = M_b + J_bᵀ D⁻¹ J_b per cluster of bodies at the rows the solve sees (D per row, then H's rows summed
    over the bodies' incidence lists in chunks and the chunks in order: no atomics, the same H whatever the lanes),
    its Cholesky factor (a row per lane, two barriers per column) and from it H⁻¹ (a column per lane): the rows'
    rigid-body preconditioner (kernels/body_precond.py)."""
    block, thread = wp.tid()
    w, lane = world_index(block, thread)
    lanes = world_lanes()
    bb = p.bb
    t = phase_clock(p)
    world_inverse_inertias(w, lane, b, s)  # the bodies' M⁻¹ in the rows' D
    rows = saddle_rows(w, m, s, p)  # the rows the solve sees: the preconditioner reads D on these alone
    for k in range(lane, rows.count, lanes):
        i = w * rows.rows + row_index(k, rows)
        p.row_d[i] = s.diag[i]
    world_sync()
    for f in range(wp.static(len(FAMILIES))):  # D and the weight 1/D of every row acting on a body
        wp.static(FAMILIES[f].body_row_d)(w, lane, m, b, s, bb, p.row_d, p.t_rows)
    world_sync()
    t = phase_mark(w, lane, p, FACTOR_ROWS, t)
    n = b.body_count
    for c in range(lane, b.body_chunk_start[n], lanes):  # J_bᵀD⁻¹J_b per incidence chunk
        body_block_chunk(w, c, m, b, s.bjac, s.jac, bb, p.t_rows, p.H_chunk)
    world_sync()
    t = phase_mark(w, lane, p, FACTOR_CHUNKS, t)
    for item in range(lane, 6 * n * bb.max_dofs, lanes):  # H = M_b + the chunks in order, an entry per lane
        body_block_entry(w, item, b, bb, s.h, s.body_x_start, s.body_v, p.H_chunk, p.H)
    world_sync()
    for c in range(lane, bb.clusters, lanes):
        cluster_jitter(w, c, bb, p.H, p.H_jitter)
    world_sync()
    t = phase_mark(w, lane, p, FACTOR_BLOCKS, t)
    dofs = 6 * n
    for j in range(bb.max_dofs):
        for q in range(lane, dofs, lanes):
            cholesky_scale_column(w, cluster_dof(b, bb, q), j, bb, p.H, p.H_jitter)
        world_sync()
        for q in range(lane, dofs, lanes):
            cholesky_update_row(w, cluster_dof(b, bb, q), j, bb, p.H, p.H_jitter)
        world_sync()
    t = phase_mark(w, lane, p, FACTOR_CHOLESKY, t)
    for q in range(lane, dofs, lanes):
        cluster_inverse_column(w, cluster_dof(b, bb, q), bb, p.H, p.H_inv, p.slice_width, p.H_inv_lanes)
    phase_mark(w, lane, p, FACTOR_INVERSE, t)
