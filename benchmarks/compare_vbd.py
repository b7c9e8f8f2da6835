"""NVIDIA Newton's VBD solver set up on the scenes of ``softsnake/validation.py`` (same meshes, materials, gravity,
throws and durations), for the side-by-side of ``compare_newton.py``, which runs and times them next to softsnake.

    python -P benchmarks/compare_newton.py --solvers newton-vbd      # VBD's curves alone

``newton`` is a bench-only dependency (``pip install newton``); ``compare_newton.py`` says so and runs softsnake alone
when it is absent.

Material: Newton's VBD tets take Lamé parameters (k_mu, k_lambda) and use the stable Neo-Hookean energy whose
small-strain limit is linear elasticity with those Lamé parameters, so they are computed from (E, ν) as usual. No
material damping (k_damp = 0), as in softsnake's validation scenes.

Time stepping: a step of h = 1/120 s is split into ``substeps`` VBD steps of h/substeps, each with ``iterations``
Gauss-Seidel sweeps and collision detection before it, as Newton's own examples do (its soft-body examples run
10 substeps × 10 iterations per 1/60 s frame: VBD steps of 1/600 s, here 5 substeps of h).

Contact: VBD's particle-ground contact is a penalty force on each vertex (particle radius 0, as in softsnake: the
vertex itself touches the plane). Its stiffness is the mean of the particle side's ``model.soft_contact_ke`` and the
ground shape's ``ke``; both are set to ``contact_ke`` (Newton's default ``soft_contact_ke`` is 1e3 N/m), with no
contact damping. The friction coefficient is the geometric mean of ``model.soft_contact_mu`` and the ground's ``mu``;
both are set to the scene's μ so the pair gets exactly μ. VBD's friction is IPC-style smoothed Coulomb friction,
linear below a slip speed ``friction_epsilon`` (Newton's default 1e-2 m/s; softsnake's friction is regularised by a
creep speed of 1e-4 m/s, ``SolverConfig.friction_stick_velocity``, so the comparison runs both values).

Clamp: the x = 0 vertices are made kinematic the way Newton's own ``fix_left`` does it (zero mass, ACTIVE flag
cleared).
"""

from __future__ import annotations

import time

import numpy as np
import warp as wp

try:
    import newton
    import newton.solvers
except ImportError:  # compare_newton.py checks for the package before importing this module
    newton = None

from softsnake import validation as V
from softsnake.geometry import box_tet_mesh

SOLVER = "newton-vbd"


def lame(youngs: float, poisson: float) -> tuple[float, float]:
    """Lamé parameters (μ, λ) [Pa] from Young's modulus and Poisson's ratio."""
    mu = youngs / (2.0 * (1.0 + poisson))
    lam = youngs * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
    return mu, lam


def _add_mesh(builder, vertices, tets, *, youngs: float, poisson: float, density: float, vel=(0.0, 0.0, 0.0)) -> None:
    k_mu, k_lambda = lame(youngs, poisson)
    builder.add_soft_mesh(
        pos=wp.vec3(0.0, 0.0, 0.0),
        rot=wp.quat_identity(),
        scale=1.0,
        vel=wp.vec3(*vel),
        vertices=[wp.vec3(*map(float, v)) for v in vertices],
        indices=[int(i) for i in np.asarray(tets).reshape(-1)],
        density=density,
        k_mu=k_mu,
        k_lambda=k_lambda,
        k_damp=0.0,
        particle_radius=0.0,
    )


class VBDRun:
    """A finalized Newton model + VBD solver (+ collision pipeline if the model has shapes). ``step()`` advances h in
    ``substeps`` VBD steps and adds its wall clock, between two device synchronisations and around the collision and
    solver calls only, to ``seconds``."""

    def __init__(
        self,
        builder,
        *,
        iterations: int,
        dt: float,
        substeps: int = 1,
        device: str = "cpu",
        contact_ke: float | None = None,
        mu: float | None = None,
        friction_epsilon: float = 1e-2,
    ):
        builder.color()  # VBD's Gauss-Seidel runs over the graph colouring; finalize() does not colour
        self.model = builder.finalize(device=device)
        self.dt = dt
        self.substeps = substeps
        if contact_ke is not None:
            self.model.soft_contact_ke = contact_ke
            self.model.soft_contact_kd = 0.0
            self.model.soft_contact_mu = mu
        self.solver = newton.solvers.SolverVBD(
            self.model,
            iterations=iterations,
            friction_epsilon=friction_epsilon,
            particle_enable_self_contact=False,
            particle_enable_tile_solve=wp.get_device(device).is_cuda,  # tiled kernel for GPUs; plain one on CPU
        )
        self.state_0 = self.model.state()
        self.state_1 = self.model.state()
        self.control = self.model.control()
        if self.model.shape_count:
            self.pipeline = newton.CollisionPipeline(self.model)
            self.contacts = self.pipeline.contacts()
        else:
            self.pipeline = self.contacts = None
        self.seconds: list[float] = []

    def step(self) -> None:
        wp.synchronize_device(self.model.device)
        t0 = time.perf_counter()
        for _ in range(self.substeps):
            self.state_0.clear_forces()
            if self.pipeline is not None:
                self.pipeline.collide(self.state_0, self.contacts)
            self.solver.step(self.state_0, self.state_1, self.control, self.contacts, self.dt / self.substeps)
            self.state_0, self.state_1 = self.state_1, self.state_0
        wp.synchronize_device(self.model.device)
        self.seconds.append(time.perf_counter() - t0)

    def positions(self) -> np.ndarray:
        return self.state_0.particle_q.numpy()

    def velocities(self) -> np.ndarray:
        return self.state_0.particle_qd.numpy()

    def masses(self) -> np.ndarray:
        return self.model.particle_mass.numpy()


def cantilever(*, iterations: int, substeps: int, dt: float, **_contact) -> VBDRun:
    """``validation.cantilever_model`` in VBD: the same mesh and material, clamped at x = 0."""
    mesh = V.cantilever_mesh()
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -V.G))
    _add_mesh(b, mesh.vertices, mesh.tets, youngs=5.0e6, poisson=0.3, density=1000.0)
    for i in np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]:  # kinematic, zero mass (as Newton's fix_left)
        b.particle_mass[int(i)] = 0.0
        b.particle_flags[int(i)] = int(b.particle_flags[int(i)]) & ~int(newton.ParticleFlags.ACTIVE)
    return VBDRun(b, iterations=iterations, dt=dt, substeps=substeps)


def incline(
    slope: float, mu: float, *, iterations: int, substeps: int, dt: float, contact_ke: float, friction_epsilon: float
) -> VBDRun:
    """``validation.incline_model`` in VBD: the 3 cm cube (2×2×2 cells, E = 0.2 MPa) on tilted-gravity ground."""
    b = newton.ModelBuilder(gravity=V.incline_gravity(slope))
    mesh = box_tet_mesh((0.03, 0.03, 0.03), (2, 2, 2), origin=(-0.015, -0.015, 0.0))  # = validation.soft_cube
    _add_mesh(b, mesh.vertices, mesh.tets, youngs=2.0e5, poisson=0.3, density=1000.0)
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=mu, ke=contact_ke, kd=0.0))
    return VBDRun(
        b,
        iterations=iterations,
        dt=dt,
        substeps=substeps,
        contact_ke=contact_ke,
        mu=mu,
        friction_epsilon=friction_epsilon,
    )


def drop(*, iterations: int, substeps: int, dt: float, contact_ke: float, friction_epsilon: float) -> VBDRun:
    """``validation.drop_model`` in VBD: the 6 cm cube (3×3×3 cells, E = 0.1 MPa) dropped 5 cm at 0.3 m/s sideways."""
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -V.G))
    mesh = box_tet_mesh((0.06, 0.06, 0.06), (3, 3, 3), origin=(-0.03, -0.03, 0.05))  # = soft_cube(z=0.05)
    _add_mesh(b, mesh.vertices, mesh.tets, youngs=1.0e5, poisson=0.3, density=1000.0, vel=(0.3, 0.0, 0.0))
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=0.5, ke=contact_ke, kd=0.0))
    return VBDRun(
        b,
        iterations=iterations,
        dt=dt,
        substeps=substeps,
        contact_ke=contact_ke,
        mu=0.5,
        friction_epsilon=friction_epsilon,
    )


if __name__ == "__main__":
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from compare_newton import main

    sys.exit(main(["--solvers", SOLVER, *sys.argv[1:]]))
