"""Small scene builders shared by the engine tests."""

import os

import numpy as np

import softsnake as ss

#: device the engine tests run on (CI: cpu; set SOFTSNAKE_TEST_DEVICE=cuda on a GPU machine)
TEST_DEVICE = os.environ.get("SOFTSNAKE_TEST_DEVICE", "cpu")


def block_on_ground(gravity, mu, *, size=0.05, youngs=1.0e6, worlds=1, cells=(1, 1, 1)):
    """A stiff soft block (tet mesh) resting on the ground plane; returns (model, particle ids)."""
    b = ss.ModelBuilder(gravity=gravity)
    mesh = ss.box_tet_mesh((size, size, size), cells, origin=(-size / 2, -size / 2, 0.0))
    ids = b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=youngs, poisson_ratio=0.3)
    b.add_ground_plane(mu=mu)
    return b.finalize(device=TEST_DEVICE, worlds=worlds), ids


def tilted_gravity(theta, axis="x", g=9.81):
    """Gravity of an incline of angle theta [rad] that descends along +axis (the ground stays z-up)."""
    s, c = g * np.sin(theta), -g * np.cos(theta)
    return (s, 0.0, c) if axis == "x" else (0.0, s, c)


def com(state, model, world=0):
    q = state.particle_q.numpy().reshape(model.worlds, model.particle_count, 3)[world]
    return np.average(q, axis=0, weights=model.particle_mass)
