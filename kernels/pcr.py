"""Jacobi-preconditioned conjugate residual (Saad, Iterative Methods for Sparse Linear Systems, Alg. 6.20 with P = diag⁻¹).

Every world runs its own recurrence: the scalars α, β come from per-world dot products (arrays indexed k·worlds + w), so
worlds never influence each other. A world whose residual fell below tol·‖b‖ is frozen (α = 0) without any host
round trip. Row kernels are launched on (world, lane) pairs: a lane walks the rows lane, lane + lanes, ... of its world
(coalesced on GPUs) and adds its partial dot product with a single atomic, which keeps atomic contention per world low.
With one lane per world (the CPU setting) sums run in a fixed order, so results are bitwise reproducible.
"""

import warp as wp


@wp.kernel
def pcr_init(
    rows_per_world: int,
    lanes: int,
    b: wp.array(dtype=float),
    diag: wp.array(dtype=float),
    x: wp.array(dtype=float),
    r: wp.array(dtype=float),
    z: wp.array(dtype=float),
    rr: wp.array(dtype=float),
):
    """x = 0, r = b, z = P b; rr_0 = b·b."""
    tid = wp.tid()
    w = tid // lanes
    acc = float(0.0)
    for k in range(tid - w * lanes, rows_per_world, lanes):
        i = w * rows_per_world + k
        bi = b[i]
        x[i] = 0.0
        r[i] = bi
        z[i] = bi / diag[i]
        acc += bi * bi
    wp.atomic_add(rr, w, acc)


@wp.kernel
def dot_per_world(
    rows_per_world: int,
    lanes: int,
    a: wp.array(dtype=float),
    b: wp.array(dtype=float),
    out: wp.array(dtype=float),
):
    """out[w] += a·b over the rows of world w."""
    tid = wp.tid()
    w = tid // lanes
    acc = float(0.0)
    for k in range(tid - w * lanes, rows_per_world, lanes):
        i = w * rows_per_world + k
        acc += a[i] * b[i]
    wp.atomic_add(out, w, acc)


@wp.kernel
def pcr_direction(
    rows_per_world: int,
    lanes: int,
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
    """p = z + βp, Ap = Az + βAp with β = (z·Az)_k/(z·Az)_{k−1}; accumulates den_k = Ap·P·Ap."""
    tid = wp.tid()
    w = tid // lanes
    beta = float(0.0)
    if k > 0:
        prev = num[(k - 1) * worlds + w]
        if prev > 0.0:
            beta = num[k * worlds + w] / prev
    acc = float(0.0)
    for j in range(tid - w * lanes, rows_per_world, lanes):
        i = w * rows_per_world + j
        api = Az[i] + beta * Ap[i]
        p[i] = z[i] + beta * p[i]
        Ap[i] = api
        acc += api * api / diag[i]
    wp.atomic_add(den, k * worlds + w, acc)


@wp.kernel
def pcr_update(
    rows_per_world: int,
    lanes: int,
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
    """x += αp, r −= αAp, z −= αP·Ap with α = (z·Az)_k/(Ap·P·Ap)_k; accumulates rr_{k+1} = r·r."""
    tid = wp.tid()
    w = tid // lanes
    lane = tid - w * lanes
    alpha = float(0.0)
    d = den[k * worlds + w]
    if d > 0.0 and rr[k * worlds + w] > tol_sq * rr[w]:
        alpha = num[k * worlds + w] / d
    acc = float(0.0)
    for j in range(lane, rows_per_world, lanes):
        i = w * rows_per_world + j
        api = Ap[i]
        x[i] = x[i] + alpha * p[i]
        ri = r[i] - alpha * api
        r[i] = ri
        z[i] = z[i] - alpha * api / diag[i]
        acc += ri * ri
    wp.atomic_add(rr, (k + 1) * worlds + w, acc)
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
