"""Preconditioned MINRES for the symmetric saddle-point system of the primal FEM step (kernels/step_primal.py).

Paige & Saunders (1975), in the form of scipy.sparse.linalg.minres: a Lanczos recurrence with the preconditioner's inner
product and Givens rotations that minimise the residual norm over the Krylov space. It needs only a symmetric operator
(the saddle system is indefinite, so CG and CR do not apply) and a symmetric positive-definite preconditioner.

Every vector is a pair (particle part vec3 per world·particle, row part float per world·row); the rows in the skipped
range (the eliminated tet rows) are never touched and stay zero. The functions here are the vector work of one
iteration for one world, shared by the lanes of its block (kernels/block.py): each lane walks the same indices in
every loop, reductions are block sums in a fixed order, and the recurrence scalars (``MinresScalars``) are identical
in every lane. The whole solve runs in one launch (``step_primal.newton_solve``).
"""

import warp as wp

from .block import LANE_BATCH, batch_holds, gather_batch, lane_batch, world_lanes, world_sum

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


@wp.func
def row_index(k: int, skip_start: int, skip_count: int) -> int:
    """k-th row of a world that is not in the skipped range [skip_start, skip_start + skip_count) (the eliminated tet
    rows, which stay zero in every vector)."""
    if k < skip_start:
        return k
    return k + skip_count


@wp.func
def row_batch(w: int, rows: int, k0: int, lanes: int, count: int, skip_start: int, skip_count: int) -> wp.vec4i:
    """World w's row indices of a lane's next batch (``lane_batch``) in the loop over its ``count`` rows outside the
    skipped range: rows row_index(k0 + j·lanes), the slots past the last row repeating it."""
    last = count - 1
    base = w * rows
    return wp.vec4i(
        base + row_index(k0, skip_start, skip_count),
        base + row_index(wp.min(k0 + lanes, last), skip_start, skip_count),
        base + row_index(wp.min(k0 + 2 * lanes, last), skip_start, skip_count),
        base + row_index(wp.min(k0 + 3 * lanes, last), skip_start, skip_count),
    )


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
    rows: int,
    skip_start: int,
    skip_count: int,
    b: SaddleVector,
    y: SaddleVector,
    x: SaddleVector,
    r1: SaddleVector,
    r2: SaddleVector,
    w1: SaddleVector,
    w2: SaddleVector,
    v: SaddleVector,
) -> MinresScalars:
    """x = 0, r1 = r2 = b, w1 = w2 = 0 (y = P b on entry); β₁ = √(b·P·b), the Givens state of the first iteration,
    and the first Lanczos vector v = y/β₁."""
    acc = float(0.0)
    for k in range(lane, particles, world_lanes()):
        i = w * particles + k
        bk = b.v[i]
        x.v[i] = wp.vec3()
        r1.v[i] = bk
        r2.v[i] = bk
        w1.v[i] = wp.vec3()
        w2.v[i] = wp.vec3()
        acc += wp.dot(bk, y.v[i])
    for k in range(lane, rows - skip_count, world_lanes()):
        i = w * rows + row_index(k, skip_start, skip_count)
        b_ = b.l[i]
        x.l[i] = 0.0
        r1.l[i] = b_
        r2.l[i] = b_
        w1.l[i] = 0.0
        w2.l[i] = 0.0
        acc += b_ * y.l[i]
    beta1 = wp.sqrt(wp.max(world_sum(acc), 0.0))
    sc = MinresScalars()
    sc.beta = beta1
    sc.beta1 = beta1
    sc.phibar = beta1
    sc.cs = -1.0
    f = scale_of(beta1, beta1)
    for k in range(lane, particles, world_lanes()):
        i = w * particles + k
        v.v[i] = y.v[i] * f
    for k in range(lane, rows - skip_count, world_lanes()):
        i = w * rows + row_index(k, skip_start, skip_count)
        v.l[i] = y.l[i] * f
    return sc


@wp.func
def minres_lanczos(
    w: int,
    lane: int,
    particles: int,
    rows: int,
    skip_start: int,
    skip_count: int,
    row_sign: float,
    sc: MinresScalars,
    v: SaddleVector,
    y: SaddleVector,
    r1: SaddleVector,
    r2: SaddleVector,
) -> float:
    """The Lanczos recurrence on y = A v: y −= (β/β_old)·r1 (from the second iteration on: β_old = 0 before),
    α = v·y, then y −= (α/β)·r2, r1 = r2, r2 = y; returns α. The row part of y arrives multiplied by ``row_sign``
    (−1 when the product left the saddle operator's sign to this function)."""
    c = float(0.0)
    if sc.oldb > 0.0:  # β_old is 0 in the first iteration (minres_start)
        c = sc.beta / sc.oldb
    lanes = world_lanes()
    free = rows - skip_count
    acc = float(0.0)
    for k0 in range(lane, particles, LANE_BATCH * lanes):
        idx = lane_batch(w * particles, k0, lanes, particles)
        ys = gather_batch(y.v, idx)
        rs = gather_batch(r1.v, idx)
        vs = gather_batch(v.v, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, particles):
                yk = ys[j] - rs[j] * c
                y.v[idx[j]] = yk
                acc += wp.dot(vs[j], yk)
    for k0 in range(lane, free, LANE_BATCH * lanes):
        idx = row_batch(w, rows, k0, lanes, free, skip_start, skip_count)
        ys_ = gather_batch(y.l, idx)
        rs_ = gather_batch(r1.l, idx)
        vs_ = gather_batch(v.l, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, free):
                y_ = row_sign * ys_[j] - rs_[j] * c
                y.l[idx[j]] = y_
                acc += vs_[j] * y_
    a = world_sum(acc)
    c2 = float(0.0)
    if sc.beta > 0.0:
        c2 = a / sc.beta
    for k0 in range(lane, particles, LANE_BATCH * lanes):
        idx = lane_batch(w * particles, k0, lanes, particles)
        ys = gather_batch(y.v, idx)
        rs = gather_batch(r2.v, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, particles):
                yk = ys[j] - rs[j] * c2
                r1.v[idx[j]] = rs[j]
                r2.v[idx[j]] = yk
                y.v[idx[j]] = yk
    for k0 in range(lane, free, LANE_BATCH * lanes):
        idx = row_batch(w, rows, k0, lanes, free, skip_start, skip_count)
        ys_ = gather_batch(y.l, idx)
        rs_ = gather_batch(r2.l, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, free):
                y_ = ys_[j] - rs_[j] * c2
                r1.l[idx[j]] = rs_[j]
                r2.l[idx[j]] = y_
                y.l[idx[j]] = y_
    return a


@wp.func
def minres_update(
    w: int,
    lane: int,
    particles: int,
    rows: int,
    skip_start: int,
    skip_count: int,
    alfa: float,
    sc_in: MinresScalars,
    r2: SaddleVector,
    y: SaddleVector,
    v: SaddleVector,
    w1: SaddleVector,
    w2: SaddleVector,
    x: SaddleVector,
) -> MinresScalars:
    """The rest of one iteration (y = P r2 on entry): β² = r2·y; the QR update of the Lanczos tridiagonal (one Givens
    rotation) and the step length φ; w_new = (v − ε_old·w2 − δ·w1)/γ, then w2 = w1, w1 = w_new; x += φ·w_new; and the
    next Lanczos vector v = y/β. Returns the updated scalars."""
    sc = sc_in
    beta_old = sc.beta
    lanes = world_lanes()
    free = rows - skip_count
    acc = float(0.0)
    for k0 in range(lane, particles, LANE_BATCH * lanes):
        idx = lane_batch(w * particles, k0, lanes, particles)
        rs = gather_batch(r2.v, idx)
        ys = gather_batch(y.v, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, particles):
                acc += wp.dot(rs[j], ys[j])
    for k0 in range(lane, free, LANE_BATCH * lanes):
        idx = row_batch(w, rows, k0, lanes, free, skip_start, skip_count)
        rs_ = gather_batch(r2.l, idx)
        ys_ = gather_batch(y.l, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, free):
                acc += rs_[j] * ys_[j]
    beta = wp.sqrt(wp.max(world_sum(acc), 0.0))
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
    for k0 in range(lane, particles, LANE_BATCH * lanes):
        idx = lane_batch(w * particles, k0, lanes, particles)
        a1 = gather_batch(w2.v, idx)
        a2 = gather_batch(w1.v, idx)
        vs = gather_batch(v.v, idx)
        xs = gather_batch(x.v, idx)
        ys = gather_batch(y.v, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, particles):
                wn = (vs[j] - a1[j] * oldeps - a2[j] * delta) * ginv
                w2.v[idx[j]] = a2[j]
                w1.v[idx[j]] = wn
                x.v[idx[j]] = xs[j] + wn * phi
                v.v[idx[j]] = ys[j] * f
    for k0 in range(lane, free, LANE_BATCH * lanes):
        idx = row_batch(w, rows, k0, lanes, free, skip_start, skip_count)
        a1_ = gather_batch(w2.l, idx)
        a2_ = gather_batch(w1.l, idx)
        vs_ = gather_batch(v.l, idx)
        xs_ = gather_batch(x.l, idx)
        ys_ = gather_batch(y.l, idx)
        for j in range(LANE_BATCH):
            if batch_holds(k0, j, lanes, free):
                wn_ = (vs_[j] - a1_[j] * oldeps - a2_[j] * delta) * ginv
                w2.l[idx[j]] = a2_[j]
                w1.l[idx[j]] = wn_
                x.l[idx[j]] = xs_[j] + wn_ * phi
                v.l[idx[j]] = ys_[j] * f
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
