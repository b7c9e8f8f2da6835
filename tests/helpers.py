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


def probe_first_linear_solve(sim, reference_iterations: int = 0) -> dict:
    """Step ``sim`` once and return what the primal step's kernels computed in its first Newton iteration: the saddle
    right-hand side b (particle and row parts), the matrix-free product A·b, the preconditioner applied to b, and the
    MINRES solution x of the first linear solve and its product A·x (tests/test_recorded_step.py), and with
    ``reference_iterations`` the solution x_ref of the same system after that many iterations (the rest of the step
    then continues from it). These are functions of the step's
    inputs alone: unlike the velocities at the end of a frame, they do not pass through the friction's stick/slip
    decisions, which amplify float32 round-off ~10⁴-fold in the snake (a 1-ulp change of the checkpoint moves its
    end-of-frame velocities by ~1e-3 of their scale)."""
    import warp as wp

    from softsnake.sim.primal import PrimalStep

    primal = sim.solver.formulation
    assert isinstance(primal, PrimalStep)
    out: dict = {}
    original = PrimalStep.solve

    def solve(self, it, iterations=None):
        if self is primal and not out:
            pv, pl = (wp.zeros_like(a) for a in primal.b)
            zv, zl = (wp.zeros_like(a) for a in primal.b)
            primal.matvec(*primal.b, pv, pl)
            primal.precondition(*primal.b, zv, zl)
            out.update(
                b_v=primal.b[0].numpy().copy(),
                b_l=primal.b[1].numpy().copy(),
                Ab_v=pv.numpy(),
                Ab_l=pl.numpy(),
                Pb_v=zv.numpy(),
                Pb_l=zl.numpy(),
            )
            original(self, it, iterations)
            out.update(x_v=primal.x[0].numpy().copy(), x_l=primal.x[1].numpy().copy())
            av, al = (wp.zeros_like(a) for a in primal.b)
            primal.matvec(*primal.x, av, al)
            out.update(Ax_v=av.numpy(), Ax_l=al.numpy())
            if reference_iterations:
                original(self, it, reference_iterations)
                out.update(x_ref_v=primal.x[0].numpy().copy(), x_ref_l=primal.x[1].numpy().copy())
            return None
        return original(self, it, iterations)

    PrimalStep.solve = solve
    try:
        sim.step()
    finally:
        PrimalStep.solve = original
    return out
