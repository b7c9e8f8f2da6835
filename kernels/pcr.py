"""Jacobi-preconditioned conjugate residual (Saad, Iterative Methods for Sparse Linear Systems, Alg. 6.20 with P = diag⁻¹).

Every world runs its own recurrence: the scalars α, β come from per-world dot products (arrays indexed k·worlds + w), so
worlds never influence each other. A world whose residual fell below tol·‖b‖ is frozen (α = 0) without any host
round trip. Kernels work on flat row arrays of length worlds·rows_per_world.
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
    i = wp.tid()
    w = i // rows_per_world
    bi = b[i]
    x[i] = 0.0
    r[i] = bi
    z[i] = bi / diag[i]
    if bi != 0.0:
        wp.atomic_add(rr, w, bi * bi)


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
    """p = z + βp, Ap = Az + βAp with β = (z·Az)_k/(z·Az)_{k−1}; accumulates den_k = Ap·P·Ap."""
    i = wp.tid()
    w = i // rows_per_world
    beta = float(0.0)
    if k > 0:
        prev = num[(k - 1) * worlds + w]
        if prev > 0.0:
            beta = num[k * worlds + w] / prev
    pi = z[i] + beta * p[i]
    api = Az[i] + beta * Ap[i]
    p[i] = pi
    Ap[i] = api
    if api != 0.0:
        wp.atomic_add(den, k * worlds + w, api * api / diag[i])


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
    """x += αp, r −= αAp, z −= αP·Ap with α = (z·Az)_k/(Ap·P·Ap)_k; accumulates rr_{k+1} = r·r."""
    i = wp.tid()
    w = i // rows_per_world
    rr_k = rr[k * worlds + w]
    alpha = float(0.0)
    d = den[k * worlds + w]
    if d > 0.0 and rr_k > tol_sq * rr[w]:
        alpha = num[k * worlds + w] / d
    api = Ap[i]
    x[i] = x[i] + alpha * p[i]
    ri = r[i] - alpha * api
    r[i] = ri
    z[i] = z[i] - alpha * api / diag[i]
    if ri != 0.0:
        wp.atomic_add(rr, (k + 1) * worlds + w, ri * ri)
    if alpha != 0.0 and i == w * rows_per_world:
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
