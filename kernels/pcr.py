"""Jacobi-preconditioned conjugate residual (Saad, Iterative Methods for Sparse Linear Systems, Alg. 6.20 with P = diag⁻¹).

Every world runs its own recurrence: the scalars α, β come from per-world dot products (arrays indexed k·worlds + w), so
worlds never influence each other. A world whose residual fell below tol·‖b‖ is frozen (α = 0) without any host
round trip. Row kernels are tiled launches with one block per world: the threads of a block walk the rows lane,
lane + block_dim, ... of their world (coalesced on GPUs) and the block reduces its partial dot products with a tile sum.
There are no atomics, so results are reproducible run to run and a world's result does not depend on the other worlds
(on the CPU a block has one thread and sums run in row order).
"""

import warp as wp


@wp.kernel
def pcr_init(
    rows_per_world: int,
    b: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    x: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
    rr: wp.array(dtype=float),
):
    """x = 0, r = b, z = P b; rr_0 = b·b."""
    w, lane = wp.tid()
    acc = float(0.0)
    for k in range(lane, rows_per_world, wp.block_dim()):
        i = w * rows_per_world + k
        bi = b[i]
        x[i] = 0.0
        r[i] = bi
        z[i] = bi / diag[i]
        acc += bi * bi
    wp.tile_store(rr, wp.tile_sum(wp.tile(acc)), offset=w)


@wp.kernel
def dot_per_world(
    rows_per_world: int,
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """out[w] = a·b over the rows of world w."""
    w, lane = wp.tid()
    acc = float(0.0)
    for k in range(lane, rows_per_world, wp.block_dim()):
        i = w * rows_per_world + k
        acc += a[i] * b[i]
    wp.tile_store(out, wp.tile_sum(wp.tile(acc)), offset=w)


@wp.kernel
def pcr_direction(
    rows_per_world: int,
    worlds: int,
    k: int,
    z: wp.array(dtype=float),
    Az: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    num: wp.array(dtype=float),
    p: wp.array(dtype=float),
    Ap: wp.array(dtype=float),
    den: wp.array(dtype=float),
):
    """p = z + βp, Ap = Az + βAp with β = (z·Az)_k/(z·Az)_{k−1}; den_k = Ap·P·Ap."""
    w, lane = wp.tid()
    beta = float(0.0)
    if k > 0:
        prev = num[(k - 1) * worlds + w]
        if prev > 0.0:
            beta = num[k * worlds + w] / prev
    acc = float(0.0)
    for j in range(lane, rows_per_world, wp.block_dim()):
        i = w * rows_per_world + j
        api = Az[i] + beta * Ap[i]
        p[i] = z[i] + beta * p[i]
        Ap[i] = api
        acc += api * api / diag[i]
    wp.tile_store(den, wp.tile_sum(wp.tile(acc)), offset=k * worlds + w)


@wp.kernel
def pcr_update(
    rows_per_world: int,
    worlds: int,
    k: int,
    tol_sq: float,
    diag: wp.array(dtype=float),
    num: wp.array(dtype=float),
    den: wp.array(dtype=float),
    p: wp.array(dtype=float),
    Ap: wp.array(dtype=float),
    x: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
    rr: wp.array(dtype=float),
    iterations: wp.array(dtype=int),
):
    """x += αp, r −= αAp, z −= αP·Ap with α = (z·Az)_k/(Ap·P·Ap)_k; rr_{k+1} = r·r."""
    w, lane = wp.tid()
    alpha = float(0.0)
    d = den[k * worlds + w]
    if d > 0.0 and rr[k * worlds + w] > tol_sq * rr[w]:
        alpha = num[k * worlds + w] / d
    acc = float(0.0)
    for j in range(lane, rows_per_world, wp.block_dim()):
        i = w * rows_per_world + j
        api = Ap[i]
        x[i] = x[i] + alpha * p[i]
        ri = r[i] - alpha * api
        r[i] = ri
        z[i] = z[i] - alpha * api / diag[i]
        acc += ri * ri
    wp.tile_store(rr, wp.tile_sum(wp.tile(acc)), offset=(k + 1) * worlds + w)
    if alpha != 0.0 and lane == 0:
        iterations[w] = iterations[w] + 1


@wp.kernel
def add_to(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    """y += x."""
    i = wp.tid()
    y[i] = y[i] + x[i]


@wp.kernel
def zero_converged(rows_per_world: int, tol_sq: float, residual_sq: wp.array(dtype=float), x: wp.array(dtype=float)):
    """Drop the Newton update of worlds whose residual was already below the Newton tolerance."""
    i = wp.tid()
    if residual_sq[i // rows_per_world] <= tol_sq:
        x[i] = 0.0


@wp.kernel
def warm_start_dots(
    rows_per_world: int,
    b: wp.array(dtype=float),
    d: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    bd: wp.array(dtype=float),
    dd: wp.array(dtype=float),
):
    """Per world: bd = b·P·d and dd = d·P·d (P = diag⁻¹), the P-weighted dot products of the warm-start scale."""
    w, lane = wp.tid()
    acc_bd = float(0.0)
    acc_dd = float(0.0)
    for k in range(lane, rows_per_world, wp.block_dim()):
        i = w * rows_per_world + k
        di = d[i]
        acc_bd += b[i] * di / diag[i]
        acc_dd += di * di / diag[i]
    wp.tile_store(bd, wp.tile_sum(wp.tile(acc_bd)), offset=w)
    wp.tile_store(dd, wp.tile_sum(wp.tile(acc_dd)), offset=w)


@wp.kernel
def scale_warm_start(rows_per_world: int, bd: wp.array(dtype=float), dd: wp.array(dtype=float), carried: wp.array(dtype=float), lam: wp.array(dtype=float)):
    """carried ← s·carried and λ += carried, with s = clamp(b·P·d / d·P·d, 0, 1), d = A·carried: the multiple of
    the carried multipliers that minimises the P-norm of the first Newton residual (exact for linear rows)."""
    i = wp.tid()
    w = i // rows_per_world
    s = float(0.0)
    if dd[w] > 0.0:
        s = wp.clamp(bd[w] / dd[w], 0.0, 1.0)
    c = s * carried[i]
    carried[i] = c
    lam[i] = lam[i] + c


@wp.kernel
def backtrack_grown(rows_per_world: int, residual_new: wp.array(dtype=float), residual_old: wp.array(dtype=float), update: wp.array(dtype=float), out: wp.array(dtype=float)):
    """out = −½·update in worlds whose squared residual grew with that update (merit ‖φ‖²), else 0: the step-halving
    of a backtracking line search, decided per world on the device."""
    i = wp.tid()
    w = i // rows_per_world
    if residual_new[w] > residual_old[w]:
        out[i] = -0.5 * update[i]
    else:
        out[i] = 0.0
