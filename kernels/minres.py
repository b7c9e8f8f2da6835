"""Preconditioned MINRES for the symmetric saddle-point system of the primal FEM step (kernels/saddle.py).

Paige & Saunders (1975), in the form of scipy.sparse.linalg.minres: a Lanczos recurrence with the preconditioner's inner
product and Givens rotations that minimise the residual norm over the Krylov space. It needs only a symmetric operator
(the saddle system is indefinite, so CG and CR do not apply) and a symmetric positive-definite preconditioner.

Every vector is a pair (particle part vec3 per world·particle, row part float per world·row); of the row part, the
loops touch only a world's ``RowSet`` (not the eliminated tet rows, not the empty contact slots). The functions here
are the vector work of one iteration for one world, shared by the lanes of its block (kernels/block.py): each lane
walks the same indices in every loop, reductions are block sums in a fixed order, and the recurrence scalars
(``MinresScalars``) are identical in every lane. The whole solve runs in one launch (``saddle.minres_solve_world`` in
``step_primal.newton_solve``).
"""

from typing import Any

import warp as wp

from .block import LANE_BATCH, batch_holds, batch_step, gather_batch, lane_batch, world_lanes, world_sum

SLOTS = wp.constant(13)
BETA, OLDB, ALFA, DBAR, EPS, OLDEPS, CS, SN, PHIBAR, PHI, DELTA, GAMMA, BETA1 = (wp.constant(i) for i in range(13))


@wp.struct
class MinresScalars:
    """The recurrence of one world's solve (the slots of ``SLOTS`` in the same order are its read-back)."""

    beta: float
    oldb: float
    alfa: float
    dbar: float
    eps: float
    oldeps: float
    cs: float
    sn: float
    phibar: float
    phi: float
    delta: float
    gamma: float
    beta1: float


@wp.struct
class SaddleVector:
    """A vector of the saddle system: particle part (worlds·particles) and row part (worlds·rows)."""

    v: wp.array(dtype=wp.vec3)
    l: wp.array(dtype=float)


@wp.struct
class RowSet:
    """The rows of a world that the solve's vectors hold: the world's ``rows`` but two ranges, [gap_start,
    gap_start + gap_count) and [tail_start, tail_start + tail_count) with gap_start + gap_count ≤ tail_start,
    ``count`` rows in all (kernels/saddle.py, saddle_rows: the eliminated tet rows and the empty contact slots' rows).
    The loops never read or write the vectors' entries on the two ranges."""

    rows: int
    gap_start: int
    gap_count: int
    tail_start: int
    tail_count: int
    count: int


@wp.func
def row_set(rows: int, gap_start: int, gap_count: int, tail_start: int, tail_count: int) -> RowSet:
    """A world's ``rows`` but the ranges [gap_start, gap_start + gap_count) and [tail_start, tail_start + tail_count)
    (RowSet; an empty range: count 0)."""
    rs = RowSet()
    rs.rows = rows
    rs.gap_start = gap_start
    rs.gap_count = gap_count
    rs.tail_start = tail_start
    rs.tail_count = tail_count
    rs.count = rows - gap_count - tail_count
    return rs


@wp.func
def row_index(k: int, rs: RowSet) -> int:
    """The k-th row of a world in the row set (k < rs.count): the rows before each skipped range keep their index,
    the rows after it move past it."""
    r = k
    if r >= rs.gap_start:
        r += rs.gap_count
    if r >= rs.tail_start:
        r += rs.tail_count
    return r


@wp.func
def row_batch(w: int, k0: int, lanes: int, rs: RowSet) -> wp.vec4i:
    """World w's row indices of a lane's next batch (``lane_batch``) in the loop over the row set's rows: rows
    row_index(k0 + j·lanes), the slots past the last row repeating it."""
    ks = lane_batch(0, k0, lanes, rs.count)
    base = w * rs.rows
    return wp.vec4i(
        base + row_index(ks[0], rs),
        base + row_index(ks[1], rs),
        base + row_index(ks[2], rs),
        base + row_index(ks[3], rs),
    )


@wp.func
def lanczos_subtract_batch(
    acc: float,
    idx: wp.vec4i,
    k0: int,
    lanes: int,
    count: int,
    sign: float,
    c: float,
    v: wp.array(dtype=float),
    y: wp.array(dtype=float),
    r1: wp.array(dtype=float),
):
    """y = sign·y − c·r1 on a lane's batch of rows; returns acc + Σ v·y over it, in element order (the particles'
    part is the product's, kernels/saddle.py)."""
    y_ = gather_batch(y, idx)
    r_ = gather_batch(r1, idx)
    v_ = gather_batch(v, idx)
    out = acc
    for j in range(LANE_BATCH):
        if batch_holds(k0, j, lanes, count):
            yj = sign * y_[j] - r_[j] * c
            y[idx[j]] = yj
            out += v_[j] * yj
    return out


@wp.func
def lanczos_shift_batch(
    idx: wp.vec4i,
    k0: int,
    lanes: int,
    count: int,
    c: float,
    y: wp.array(dtype=Any),
    r1: wp.array(dtype=Any),
    r2: wp.array(dtype=Any),
):
    """y −= c·r2, r1 = r2, r2 = y on a lane's batch."""
    y_ = gather_batch(y, idx)
    r_ = gather_batch(r2, idx)
    for j in range(LANE_BATCH):
        if batch_holds(k0, j, lanes, count):
            yj = y_[j] - r_[j] * c
            r1[idx[j]] = r_[j]
            r2[idx[j]] = yj
            y[idx[j]] = yj


@wp.func
def update_batch(
    idx: wp.vec4i,
    k0: int,
    lanes: int,
    count: int,
    oldeps: float,
    delta: float,
    ginv: float,
    phi: float,
    f: float,
    v: wp.array(dtype=Any),
    y: wp.array(dtype=Any),
    w1: wp.array(dtype=Any),
    w2: wp.array(dtype=Any),
    x: wp.array(dtype=Any),
):
    """w_new = (v − ε_old·w2 − δ·w1)/γ (ginv = 1/γ), w2 = w1, w1 = w_new, x += φ·w_new, v = f·y on a lane's batch."""
    a1 = gather_batch(w2, idx)
    a2 = gather_batch(w1, idx)
    v_ = gather_batch(v, idx)
    x_ = gather_batch(x, idx)
    y_ = gather_batch(y, idx)
    for j in range(LANE_BATCH):
        if batch_holds(k0, j, lanes, count):
            wn = (v_[j] - a1[j] * oldeps - a2[j] * delta) * ginv
            w2[idx[j]] = a2[j]
            w1[idx[j]] = wn
            x[idx[j]] = x_[j] + wn * phi
            v[idx[j]] = y_[j] * f


@wp.func
def scale_of(beta: float, beta1: float) -> float:
    """1/β for the next Lanczos vector v = y/β; 0 once β vanished (the world's solve converged)."""
    s = float(0.0)
    if beta > 1.0e-30 * beta1 and beta > 0.0:
        s = 1.0 / beta
    return s


@wp.func
def minres_start(
    w: int,
    lane: int,
    particles: int,
    rs: RowSet,
    by: float,
    b: SaddleVector,
    y: SaddleVector,
    x: SaddleVector,
    r1: SaddleVector,
    r2: SaddleVector,
    w1: SaddleVector,
    w2: SaddleVector,
    v: SaddleVector,
) -> MinresScalars:
    """x = 0, r1 = r2 = b, w1 = w2 = 0 (y = P b on entry, ``by`` the lane's part of b·y, which the preconditioner
    summed as it wrote y); β₁ = √(b·P·b), the Givens state of the first iteration, and the first Lanczos vector
    v = y/β₁."""
    for k in range(lane, particles, world_lanes()):
        i = w * particles + k
        bk = b.v[i]
        x.v[i] = wp.vec3()
        r1.v[i] = bk
        r2.v[i] = bk
        w1.v[i] = wp.vec3()
        w2.v[i] = wp.vec3()
    for k in range(lane, rs.count, world_lanes()):
        i = w * rs.rows + row_index(k, rs)
        b_ = b.l[i]
        x.l[i] = 0.0
        r1.l[i] = b_
        r2.l[i] = b_
        w1.l[i] = 0.0
        w2.l[i] = 0.0
    beta1 = wp.sqrt(wp.max(world_sum(by), 0.0))
    sc = MinresScalars()
    sc.beta = beta1
    sc.beta1 = beta1
    sc.phibar = beta1
    sc.cs = -1.0
    f = scale_of(beta1, beta1)
    for k in range(lane, particles, world_lanes()):
        i = w * particles + k
        v.v[i] = y.v[i] * f
    for k in range(lane, rs.count, world_lanes()):
        i = w * rs.rows + row_index(k, rs)
        v.l[i] = y.l[i] * f
    return sc


@wp.func
def lanczos_factor(sc: MinresScalars) -> float:
    """β/β_old, the factor of r1 in the Lanczos step y −= (β/β_old)·r1; 0 in the first iteration (β_old = 0,
    minres_start)."""
    c = float(0.0)
    if sc.oldb > 0.0:
        c = sc.beta / sc.oldb
    return c


@wp.func
def minres_lanczos(
    w: int,
    lane: int,
    particles: int,
    rs: RowSet,
    row_sign: float,
    c: float,
    vy: float,
    sc: MinresScalars,
    v: SaddleVector,
    y: SaddleVector,
    r1: SaddleVector,
    r2: SaddleVector,
) -> float:
    """The Lanczos recurrence on y = A v: y −= c·r1 (c = lanczos_factor), α = v·y, then y −= (α/β)·r2, r1 = r2,
    r2 = y; returns α. The particle part of y arrives with c·r1 subtracted and ``vy`` is the lane's part of v·y on
    it (the product did both as it wrote y, kernels/saddle.py); the row part arrives multiplied by ``row_sign``
    (−1 when the product left the saddle operator's sign to this function)."""
    lanes = world_lanes()
    free = rs.count
    step = batch_step(lanes)
    acc = vy
    for k0 in range(lane, free, step):
        idx = row_batch(w, k0, lanes, rs)
        acc = lanczos_subtract_batch(acc, idx, k0, lanes, free, row_sign, c, v.l, y.l, r1.l)
    a = world_sum(acc)
    c2 = float(0.0)
    if sc.beta > 0.0:
        c2 = a / sc.beta
    for k0 in range(lane, particles, step):
        lanczos_shift_batch(lane_batch(w * particles, k0, lanes, particles), k0, lanes, particles, c2, y.v, r1.v, r2.v)
    for k0 in range(lane, free, step):
        idx = row_batch(w, k0, lanes, rs)
        lanczos_shift_batch(idx, k0, lanes, free, c2, y.l, r1.l, r2.l)
    return a


@wp.func
def minres_update(
    w: int,
    lane: int,
    particles: int,
    rs: RowSet,
    alfa: float,
    ry: float,
    sc_in: MinresScalars,
    y: SaddleVector,
    v: SaddleVector,
    w1: SaddleVector,
    w2: SaddleVector,
    x: SaddleVector,
) -> MinresScalars:
    """The rest of one iteration (y = P r2 on entry, ``ry`` the lane's part of r2·y, which the preconditioner summed
    as it wrote y): β² = r2·y; the QR update of the Lanczos tridiagonal (one Givens rotation) and the step length φ;
    w_new = (v − ε_old·w2 − δ·w1)/γ, then w2 = w1, w1 = w_new; x += φ·w_new; and the next Lanczos vector v = y/β.
    Returns the updated scalars."""
    sc = sc_in
    beta_old = sc.beta
    lanes = world_lanes()
    free = rs.count
    step = batch_step(lanes)
    beta = wp.sqrt(wp.max(world_sum(ry), 0.0))
    oldeps = sc.eps
    delta = sc.cs * sc.dbar + sc.sn * alfa
    gbar = sc.sn * sc.dbar - sc.cs * alfa
    eps = sc.sn * beta
    dbar = -sc.cs * beta
    gamma = wp.sqrt(gbar * gbar + beta * beta)
    phi = float(0.0)
    cs = sc.cs
    sn = sc.sn
    phibar = sc.phibar
    if beta_old <= 0.0 or gamma <= 0.0:
        # the world's solve had already converged (or its right-hand side was zero): no update
        gamma = 1.0
        sn = 0.0
        phibar = 0.0
    else:
        cs = gbar / gamma
        sn = beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
    sc.alfa = alfa
    sc.oldb = beta_old
    sc.beta = beta
    sc.oldeps = oldeps
    sc.delta = delta
    sc.eps = eps
    sc.dbar = dbar
    sc.gamma = gamma
    sc.cs = cs
    sc.sn = sn
    sc.phi = phi
    sc.phibar = phibar
    ginv = 1.0 / gamma
    f = scale_of(beta, sc.beta1)
    for k0 in range(lane, particles, step):
        idx = lane_batch(w * particles, k0, lanes, particles)
        update_batch(idx, k0, lanes, particles, oldeps, delta, ginv, phi, f, v.v, y.v, w1.v, w2.v, x.v)
    for k0 in range(lane, free, step):
        idx = row_batch(w, k0, lanes, rs)
        update_batch(idx, k0, lanes, free, oldeps, delta, ginv, phi, f, v.l, y.l, w1.l, w2.l, x.l)
    return sc


@wp.func
def store_scalars(sc: MinresScalars, out: wp.array(dtype=float), base: int):
    """The recurrence of one world into out[base : base + SLOTS] (the read-back order of SLOTS)."""
    out[base + BETA] = sc.beta
    out[base + OLDB] = sc.oldb
    out[base + ALFA] = sc.alfa
    out[base + DBAR] = sc.dbar
    out[base + EPS] = sc.eps
    out[base + OLDEPS] = sc.oldeps
    out[base + CS] = sc.cs
    out[base + SN] = sc.sn
    out[base + PHIBAR] = sc.phibar
    out[base + PHI] = sc.phi
    out[base + DELTA] = sc.delta
    out[base + GAMMA] = sc.gamma
    out[base + BETA1] = sc.beta1
