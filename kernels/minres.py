"""Preconditioned MINRES for the symmetric saddle-point system of the primal FEM step (kernels/primal.py).

Paige & Saunders (1975), in the form of scipy.sparse.linalg.minres: a Lanczos recurrence with the preconditioner's inner
product and Givens rotations that minimise the residual norm over the Krylov space. It needs only a symmetric operator
(the saddle system is indefinite, so CG and CR do not apply) and a symmetric positive-definite preconditioner.

Every vector is a pair (particle part vec3 per world·particle, row part float per world·row); the rows in the skipped
range (the eliminated tet rows) are never touched and stay zero. Vector kernels are tiled
launches with one block per world, like kernels/pcr.py: per-world scalars, fixed summation order, no atomics, so worlds
never influence each other and results are reproducible. The recurrence scalars of world w live in
``sc[w·SLOTS + slot]``.
"""

import warp as wp

SLOTS = 13
BETA, OLDB, ALFA, DBAR, EPS, OLDEPS, CS, SN, PHIBAR, PHI, DELTA, GAMMA, BETA1 = range(13)


@wp.func
def row_index(k: int, skip_start: int, skip_count: int) -> int:
    """k-th row of a world that is not in the skipped range [skip_start, skip_start + skip_count) (the eliminated tet
    rows, which stay zero in every vector)."""
    if k < skip_start:
        return k
    return k + skip_count


@wp.func
def scale_of(beta: float, beta1: float) -> float:
    """1/β for the next Lanczos vector v = y/β; 0 once β vanished (the world's solve converged)."""
    s = float(0.0)
    if beta > 1.0e-30 * beta1 and beta > 0.0:
        s = 1.0 / beta
    return s


@wp.kernel
def minres_start(
    particles: int,
    rows: int,
    skip_start: int,
    skip_count: int,
    bv: wp.array(dtype=wp.vec3),
    bl: wp.array(dtype=float),
    yv: wp.array(dtype=wp.vec3),
    yl: wp.array(dtype=float),
    xv: wp.array(dtype=wp.vec3),
    xl: wp.array(dtype=float),
    r1v: wp.array(dtype=wp.vec3),
    r1l: wp.array(dtype=float),
    r2v: wp.array(dtype=wp.vec3),
    r2l: wp.array(dtype=float),
    wv: wp.array(dtype=wp.vec3),
    wl: wp.array(dtype=float),
    w2v: wp.array(dtype=wp.vec3),
    w2l: wp.array(dtype=float),
    vv: wp.array(dtype=wp.vec3),
    vl: wp.array(dtype=float),
    sc: wp.array(dtype=float),
):
    """x = 0, r1 = r2 = b, w = w2 = 0 (y = P b on entry); β₁ = √(b·P·b), the Givens state of the first iteration, and
    the first Lanczos vector v = y/β₁."""
    w, lane = wp.tid()
    acc = float(0.0)
    for k in range(lane, particles, wp.block_dim()):
        i = w * particles + k
        b = bv[i]
        xv[i] = wp.vec3()
        r1v[i] = b
        r2v[i] = b
        wv[i] = wp.vec3()
        w2v[i] = wp.vec3()
        acc += wp.dot(b, yv[i])
    for k in range(lane, rows - skip_count, wp.block_dim()):
        i = w * rows + row_index(k, skip_start, skip_count)
        b_ = bl[i]
        xl[i] = 0.0
        r1l[i] = b_
        r2l[i] = b_
        wl[i] = 0.0
        w2l[i] = 0.0
        acc += b_ * yl[i]
    total = wp.tile_sum(wp.tile(acc))
    beta1 = wp.sqrt(wp.max(total[0], 0.0))
    if lane == 0:
        base = w * SLOTS
        for s in range(SLOTS):
            sc[base + s] = 0.0
        sc[base + BETA] = beta1
        sc[base + BETA1] = beta1
        sc[base + PHIBAR] = beta1
        sc[base + CS] = -1.0
    f = scale_of(beta1, beta1)
    for k in range(lane, particles, wp.block_dim()):
        i = w * particles + k
        vv[i] = yv[i] * f
    for k in range(lane, rows - skip_count, wp.block_dim()):
        i = w * rows + row_index(k, skip_start, skip_count)
        vl[i] = yl[i] * f


@wp.kernel
def minres_lanczos(
    particles: int,
    rows: int,
    skip_start: int,
    skip_count: int,
    row_sign: float,
    sc: wp.array(dtype=float),
    vv: wp.array(dtype=wp.vec3),
    vl: wp.array(dtype=float),
    yv: wp.array(dtype=wp.vec3),
    yl: wp.array(dtype=float),
    r1v: wp.array(dtype=wp.vec3),
    r1l: wp.array(dtype=float),
    r2v: wp.array(dtype=wp.vec3),
    r2l: wp.array(dtype=float),
    alfa: wp.array(dtype=float),
):
    """The Lanczos recurrence on y = A v: y −= (β/β_old)·r1 (from the second iteration on: β_old = 0 before), α = v·y, then
    y −= (α/β)·r2, r1 = r2, r2 = y; alfa[w] = α. The row part of y arrives multiplied by ``row_sign`` (−1 when the
    product left the saddle operator's sign to this kernel)."""
    w, lane = wp.tid()
    beta = sc[w * SLOTS + BETA]
    oldb = sc[w * SLOTS + OLDB]
    c = float(0.0)
    if oldb > 0.0:  # β_old is 0 in the first iteration (minres_start)
        c = beta / oldb
    acc = float(0.0)
    for k in range(lane, particles, wp.block_dim()):
        i = w * particles + k
        y = yv[i] - r1v[i] * c
        yv[i] = y
        acc += wp.dot(vv[i], y)
    for k in range(lane, rows - skip_count, wp.block_dim()):
        i = w * rows + row_index(k, skip_start, skip_count)
        y_ = row_sign * yl[i] - r1l[i] * c
        yl[i] = y_
        acc += vl[i] * y_
    total = wp.tile_sum(wp.tile(acc))
    wp.tile_store(alfa, total, offset=w)
    a = total[0]
    c2 = float(0.0)
    if beta > 0.0:
        c2 = a / beta
    for k in range(lane, particles, wp.block_dim()):
        i = w * particles + k
        y = yv[i] - r2v[i] * c2
        r1v[i] = r2v[i]
        r2v[i] = y
        yv[i] = y
    for k in range(lane, rows - skip_count, wp.block_dim()):
        i = w * rows + row_index(k, skip_start, skip_count)
        y_ = yl[i] - r2l[i] * c2
        r1l[i] = r2l[i]
        r2l[i] = y_
        yl[i] = y_


@wp.kernel
def minres_update(
    particles: int,
    rows: int,
    skip_start: int,
    skip_count: int,
    alfa: wp.array(dtype=float),
    sc: wp.array(dtype=float),
    r2v: wp.array(dtype=wp.vec3),
    r2l: wp.array(dtype=float),
    yv: wp.array(dtype=wp.vec3),
    yl: wp.array(dtype=float),
    vv: wp.array(dtype=wp.vec3),
    vl: wp.array(dtype=float),
    wv: wp.array(dtype=wp.vec3),
    wl: wp.array(dtype=float),
    w2v: wp.array(dtype=wp.vec3),
    w2l: wp.array(dtype=float),
    xv: wp.array(dtype=wp.vec3),
    xl: wp.array(dtype=float),
):
    """The rest of one MINRES iteration (y = P r2 on entry): β² = r2·y; the QR update of the Lanczos tridiagonal (one
    Givens rotation) and the step length φ; w_new = (v − ε_old·w1 − δ·w2)/γ with w1 = w2_old, w2 = w_old; x += φ·w_new;
    and the next Lanczos vector v = y/β."""
    w, lane = wp.tid()
    base = w * SLOTS
    # every lane reads the recurrence state before the reduction below; lane 0 writes it back after it
    a = alfa[w]
    beta_old = sc[base + BETA]
    cs = sc[base + CS]
    sn = sc[base + SN]
    dbar = sc[base + DBAR]
    eps = sc[base + EPS]
    phibar = sc[base + PHIBAR]
    beta1 = sc[base + BETA1]
    acc = float(0.0)
    for k in range(lane, particles, wp.block_dim()):
        i = w * particles + k
        acc += wp.dot(r2v[i], yv[i])
    for k in range(lane, rows - skip_count, wp.block_dim()):
        i = w * rows + row_index(k, skip_start, skip_count)
        acc += r2l[i] * yl[i]
    total = wp.tile_sum(wp.tile(acc))
    beta = wp.sqrt(wp.max(total[0], 0.0))
    oldeps = eps
    delta = cs * dbar + sn * a
    gbar = sn * dbar - cs * a
    eps = sn * beta
    dbar = -cs * beta
    gamma = wp.sqrt(gbar * gbar + beta * beta)
    phi = float(0.0)
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
    if lane == 0:
        sc[base + ALFA] = a
        sc[base + OLDB] = beta_old
        sc[base + BETA] = beta
        sc[base + OLDEPS] = oldeps
        sc[base + DELTA] = delta
        sc[base + EPS] = eps
        sc[base + DBAR] = dbar
        sc[base + GAMMA] = gamma
        sc[base + CS] = cs
        sc[base + SN] = sn
        sc[base + PHI] = phi
        sc[base + PHIBAR] = phibar
    ginv = 1.0 / gamma
    f = scale_of(beta, beta1)
    for k in range(lane, particles, wp.block_dim()):
        i = w * particles + k
        w1 = w2v[i]
        w2 = wv[i]
        wn = (vv[i] - w1 * oldeps - w2 * delta) * ginv
        w2v[i] = w2
        wv[i] = wn
        xv[i] = xv[i] + wn * phi
        vv[i] = yv[i] * f
    for k in range(lane, rows - skip_count, wp.block_dim()):
        i = w * rows + row_index(k, skip_start, skip_count)
        w1_ = w2l[i]
        w2_ = wl[i]
        wn_ = (vl[i] - w1_ * oldeps - w2_ * delta) * ginv
        w2l[i] = w2_
        wl[i] = wn_
        xl[i] = xl[i] + wn_ * phi
        vl[i] = yl[i] * f


@wp.kernel
def minres_record(sc: wp.array(dtype=float), done: int, rr: wp.array(dtype=float), iterations: wp.array(dtype=int)):
    """Diagnostics in the solver's PCR layout for one Newton iteration: rr[0] = β₁², rr[done] = φ̄² (the preconditioned
    residual norms before and after, squared) and the iteration count. A solve of more iterations than the layout
    holds (SolverConfig.linear_iterations) records its final residual in the last slot."""
    w = wp.tid()
    base = w * SLOTS
    n = iterations.shape[0]
    rr[w] = sc[base + BETA1] * sc[base + BETA1]
    rr[wp.min(done, rr.shape[0] // n - 1) * n + w] = sc[base + PHIBAR] * sc[base + PHIBAR]
    iterations[w] = done
