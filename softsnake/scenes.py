"""Built-in scenes used by the demo command, the benchmarks and the docs."""

from __future__ import annotations

import numpy as np

from .geometry import box_tet_mesh
from .sim import ModelBuilder


def soft_slab_on_ground(
    cells=(30, 5, 5), size=(0.3, 0.05, 0.05), *, youngs=1.0e5, poisson=0.3, density=1070.0, mu=1.0, drop=0.02
):
    """A soft silicone-like slab (snake-link sized; default 1116 particles / 4500 tets) just above a ground plane."""
    b = ModelBuilder()
    mesh = box_tet_mesh(size, cells, origin=(-size[0] / 2, -size[1] / 2, drop))
    b.add_soft_mesh(
        mesh.vertices, mesh.tets, density=density, youngs_modulus=youngs, poisson_ratio=poisson, damping=0.002
    )
    b.add_ground_plane(mu=mu)
    return b


def demo_scene():
    """Default demo: a soft cube thrown onto the ground toward a static box, next to a particle pendulum."""
    b = ModelBuilder()
    mesh = box_tet_mesh((0.08, 0.08, 0.08), (3, 3, 3), origin=(-0.04, -0.04, 0.15))
    b.add_soft_mesh(
        mesh.vertices,
        mesh.tets,
        density=1070.0,
        youngs_modulus=1.0e5,
        poisson_ratio=0.3,
        damping=0.002,
        vel=(0.2, 0.0, 0.0),
    )
    b.add_shape_box(-1, (0.05, 0.2, 0.03), pos=(0.25, 0.0, 0.03), mu=0.6)  # an obstacle the cube slides toward
    pivot = b.add_particle((-0.2, 0.0, 0.4), mass=0.0)
    bob = b.add_particle((-0.2 + 0.15 * np.sin(0.5), 0.0, 0.4 - 0.15 * np.cos(0.5)), mass=0.05)
    b.add_distance(pivot, bob)
    b.add_ground_plane(mu=0.8)
    return b


def soft_slab_with_rigid_chain(cells=(30, 5, 5), size=(0.3, 0.05, 0.05), carriages=4, **slab_kwargs):
    """The soft slab with a chain of rigid carriages on top, hinged to each other (axis z) and attached to the slab's
    top particles under them: a snake-like mix of soft, rigid, joint and attachment rows."""
    b = soft_slab_on_ground(cells, size, **slab_kwargs)
    top = np.nonzero(np.isclose(np.asarray(b.particle_q)[:, 2], max(q[2] for q in b.particle_q)))[0]
    xs = np.asarray(b.particle_q)[top, 0]
    z = max(q[2] for q in b.particle_q) + 0.01
    spacing = size[0] / carriages
    half = np.array([0.4 * spacing, 0.02, 0.01])
    mass = 0.05
    inertia = (
        mass / 3.0 * np.array([half[1] ** 2 + half[2] ** 2, half[0] ** 2 + half[2] ** 2, half[0] ** 2 + half[1] ** 2])
    )
    bodies = []
    for k in range(carriages):
        cx = -size[0] / 2 + spacing * (k + 0.5)
        body = b.add_body((cx, 0.0, z), mass=mass, inertia=inertia)
        for p in top[np.abs(xs - cx) < half[0]]:
            b.add_attachment(int(p), body)
        if bodies:
            b.add_joint_revolute(bodies[-1], body, (cx - spacing / 2, 0.0, z), (0.0, 0.0, 1.0))
        bodies.append(body)
    return b


def soft_slab_among_obstacles(obstacles: int = 100, cells=(30, 5, 5), size=(0.3, 0.05, 0.05), **slab_kwargs):
    """The soft slab on the ground among ``obstacles`` static boxes (2 cm posts on a grid around it, none touching
    it): a contact-scaling scene. Its contact rows come from the step's compact contact list, so they grow with the
    contacts, not with particles × shapes."""
    b = soft_slab_on_ground(cells, size, **slab_kwargs)
    side = int(np.ceil(np.sqrt(obstacles + 1)))
    placed = 0
    for i in range(side + 2):
        for j in range(side + 2):
            if placed == obstacles:
                return b
            x = (i - (side + 1) / 2) * 0.12
            y = (j - (side + 1) / 2) * 0.12
            if abs(x) < size[0] / 2 + 0.05 and abs(y) < size[1] / 2 + 0.05:
                continue  # keep the slab's own patch clear
            b.add_shape_box(-1, (0.01, 0.01, 0.02), pos=(x, y, 0.02), mu=0.5)
            placed += 1
    return b
