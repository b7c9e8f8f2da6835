"""The rows' rigid-body preconditioner's factorisation stage of the primal step (kernels/body_precond.py), one block
per world. A module of its own: its loops stay loops (``max_unroll`` 0), since the dense 6×6 block updates inlined for
every row kind and unrolled took minutes to compile for CUDA.
"""

import warp as wp

from .block import block_sync
from .body_precond import body_mass_block, cluster_cholesky
from .data import BodyData, ModelData, StepData
from .row_families import FAMILIES
from .step_primal import PrimalData

wp.set_module_options({"max_unroll": 0, "enable_backward": False})


@wp.kernel
def factor_body_blocks(
    # Model:
    m: ModelData,
    b: BodyData,
    # Data in/out:
    s: StepData,
    p: PrimalData,
):
    """H = M_b + J_bᵀ D⁻¹ J_b per cluster of bodies at the rows the solve sees, and its Cholesky factors (the rows'
    rigid-body preconditioner, kernels/body_precond.py)."""
    w, lane = wp.tid()
    lanes = wp.block_dim()
    bb = p.bb
    for k in range(lane, bb.block_size, lanes):
        p.H[w * bb.block_size + k] = wp.float64(0.0)
    R = m.row_count
    for r in range(lane, R, lanes):
        p.row_d[w * R + r] = s.diag[w * R + r]
    block_sync()
    n = b.body_count
    for i in range(lane, n, lanes):
        body_mass_block(w * n + i, b, bb, s.h, s.body_x_start, s.body_v, p.H)
    for f in range(wp.static(len(FAMILIES))):  # the H terms and D of every row acting on a body
        wp.static(FAMILIES[f].body_block)(w, lane, m, b, s, bb, p.H, p.row_d)
    block_sync()
    for c in range(lane, p.clusters, lanes):
        cluster_cholesky(w * p.clusters + c, bb, p.clusters, p.H)
