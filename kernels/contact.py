"""Particle–shape signed distance and the Fischer-Burmeister normal row (docs/formulation.md §4).

Shapes have a pose (position, rotation) and parameters: plane: normal = R·ẑ through the position; box: half extents;
cylinder and capsule: (radius, half height, —) along their local z axis; sphere: (radius, —, —).
"""

import warp as wp

from .types import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_CYLINDER, SHAPE_PLANE, SHAPE_SPHERE


@wp.func
def shape_signed_distance(shape_type: int, pos: wp.vec3, rot: wp.quat, params: wp.vec3, x: wp.vec3) -> wp.vec4:
    """(signed distance [m] (negative = penetration), outward unit normal at the closest point (world))."""
    if shape_type == SHAPE_PLANE:
        n = wp.quat_rotate(rot, wp.vec3(0.0, 0.0, 1.0))
        return wp.vec4(wp.dot(n, x - pos), n[0], n[1], n[2])
    gap = float(0.0)
    xl = wp.quat_rotate_inv(rot, x - pos)
    nl = wp.vec3(0.0, 0.0, 1.0)
    if shape_type == SHAPE_BOX:
        q = wp.vec3(wp.abs(xl[0]) - params[0], wp.abs(xl[1]) - params[1], wp.abs(xl[2]) - params[2])
        qo = wp.vec3(wp.max(q[0], 0.0), wp.max(q[1], 0.0), wp.max(q[2], 0.0))
        outside = wp.length(qo)
        if outside > 0.0:
            gap = outside
            nl = wp.vec3(wp.sign(xl[0]) * qo[0], wp.sign(xl[1]) * qo[1], wp.sign(xl[2]) * qo[2]) / outside
        else:
            # inside: push out through the nearest face
            if q[0] >= q[1] and q[0] >= q[2]:
                gap = q[0]
                nl = wp.vec3(wp.sign(xl[0]), 0.0, 0.0)
            elif q[1] >= q[2]:
                gap = q[1]
                nl = wp.vec3(0.0, wp.sign(xl[1]), 0.0)
            else:
                gap = q[2]
                nl = wp.vec3(0.0, 0.0, wp.sign(xl[2]))
    elif shape_type == SHAPE_SPHERE or shape_type == SHAPE_CAPSULE:
        # distance to the core segment (a point for the sphere) minus the radius
        zc = float(0.0)
        if shape_type == SHAPE_CAPSULE:
            zc = wp.clamp(xl[2], -params[1], params[1])
        dv = xl - wp.vec3(0.0, 0.0, zc)
        dl = wp.length(dv)
        gap = dl - params[0]
        if dl > 1.0e-12:
            nl = dv / dl
    elif shape_type == SHAPE_CYLINDER:
        r = wp.sqrt(xl[0] * xl[0] + xl[1] * xl[1])
        radial = wp.vec3(1.0, 0.0, 0.0)
        if r > 1.0e-12:
            radial = wp.vec3(xl[0] / r, xl[1] / r, 0.0)
        axial = wp.vec3(0.0, 0.0, wp.sign(xl[2]))
        dr = r - params[0]
        dz = wp.abs(xl[2]) - params[1]
        if dr > 0.0 and dz > 0.0:
            d = wp.sqrt(dr * dr + dz * dz)
            gap = d
            nl = (radial * dr + axial * dz) / d
        elif dr > dz:
            gap = dr
            nl = radial
        else:
            gap = dz
            nl = axial
    n = wp.quat_rotate(rot, nl)
    return wp.vec4(gap, n[0], n[1], n[2])


@wp.func
def shape_bounding_radius(shape_type: int, params: wp.vec3) -> float:
    """Radius [m] of a sphere about the shape's position that encloses it (−1 for a plane, which has none)."""
    if shape_type == SHAPE_BOX:
        return wp.length(params)
    if shape_type == SHAPE_SPHERE:
        return params[0]
    if shape_type == SHAPE_CAPSULE:
        return params[0] + params[1]
    if shape_type == SHAPE_CYLINDER:
        return wp.sqrt(params[0] * params[0] + params[1] * params[1])
    return -1.0


@wp.func
def tangent_basis(n: wp.vec3, rot: wp.quat) -> wp.mat33:
    """Rows (t1, t2, n): t1 is the shape's local x axis projected on the tangent plane (local y if degenerate), so that
    anisotropic friction coefficients (μ1, μ2) act along axes fixed in the shape frame."""
    a = wp.quat_rotate(rot, wp.vec3(1.0, 0.0, 0.0))
    t1 = a - n * wp.dot(a, n)
    if wp.length(t1) < 1.0e-3:
        a = wp.quat_rotate(rot, wp.vec3(0.0, 1.0, 0.0))
        t1 = a - n * wp.dot(a, n)
    t1 = wp.normalize(t1)
    t2 = wp.cross(n, t1)
    return wp.mat33(t1[0], t1[1], t1[2], t2[0], t2[1], t2[2], n[0], n[1], n[2])


@wp.func
def fischer_burmeister_row(a: float, lam: float, r: float, da_min: float, smoothing: float) -> wp.vec3:
    """Linearised φ(a, b) = a + b − √(a²+b²) with a = gap/h [m/s], b = r·λ_n, r the Delassus diagonal.

    Divided by ∂φ/∂a (clamped ≥ da_min) so the Schur matrix stays symmetric (docs/formulation.md §4). Returns
    (effective compliance (∂φ/∂b·r)/(∂φ/∂a), right-hand side −φ/(∂φ/∂a) [m/s], residual φ [m/s])."""
    b = r * lam
    rho = wp.sqrt(a * a + b * b + smoothing * smoothing)
    phi = a + b - rho
    da = wp.max(1.0 - a / rho, da_min)
    db = wp.max(1.0 - b / rho, 0.0)
    return wp.vec3(db * r / da, -phi / da, phi)
