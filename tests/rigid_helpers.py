"""Helpers for the rigid-body tests: box inertia, quaternion maths, momenta."""

import numpy as np


def box_inertia(mass, half_extents):
    hx, hy, hz = half_extents
    return mass / 3.0 * np.array([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])


def quat_matrix(q):
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def axis_angle_quat(axis, angle):
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    return np.concatenate([axis * np.sin(angle / 2), [np.cos(angle / 2)]])


def momenta(body_q, body_qd, masses, inertias):
    """Total linear and angular (about the origin) momentum of a set of bodies."""
    P = np.zeros(3)
    L = np.zeros(3)
    for q, qd, m, I in zip(body_q, body_qd, masses, inertias):
        R = quat_matrix(q[3:])
        v, w = qd[:3], qd[3:]
        P += m * v
        L += np.cross(q[:3], m * v) + R @ np.diag(I) @ R.T @ w
    return P, L
