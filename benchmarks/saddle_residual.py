"""How much of the right-hand side MINRES leaves after k iterations on the full snake in the gait (docs/solver.md,
"Preconditioner").

Runs the default gait to ``--seconds`` (h = 1/120 s, 4 × 20), then, in the first Newton iteration of the next step,
assembles the saddle matrix K and the preconditioner P⁻¹ column by column from the kernels (one product per unknown,
~7,500 for the snake) and runs MINRES in NumPy/SciPy with them: the relative residual ‖Kx − b‖/‖b‖ after each
iteration count. ``--attach-jacobi`` gives the attachment rows the particles' Jacobi masses instead of their two-level
compliance (the rows' preconditioner before commit 60bf89f, float64 body blocks kept). The figures for a681b78's
preconditioner (float32 body blocks, Jacobi masses) came from this script as of commit fc0c830, which assembled the
columns itself and so also ran on that checkout with ``PYTHONPATH`` pointing at it (``PrimalStep.dense`` is newer).

    python -P benchmarks/saddle_residual.py [--seconds 1.0] [--iterations 5,10,20,40,80] [--attach-jacobi]
"""

import argparse

import numpy as np
import scipy.sparse.linalg as sla

from softsnake.experiments.gait import default_gait, gait_targets
from softsnake.robots.snake_sim import SnakeSim
from softsnake.sim import primal as sp
from softsnake.sim.model import quiet_warp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="gait time before the measured step [s]")
    ap.add_argument("--iterations", default="5,10,20,40,80", help="MINRES iteration counts")
    ap.add_argument("--attach-jacobi", action="store_true", help="attachment rows with the Jacobi masses")
    a = ap.parse_args()
    quiet_warp()
    sim = SnakeSim(worlds=1)
    solver = sim.solver
    if a.attach_jacobi:
        solver._body_row_data = solver._primal.data_eff
    gait = default_gait()
    for _ in range(int(round(a.seconds * 60))):
        sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
        sim.step()
    captured = {}
    original = sp.PrimalStep.solve

    def capture(self, iterations, it=0):
        if not captured:
            K, index = self.dense(self.matvec)
            P, _ = self.dense(self.precondition)
            b = np.concatenate([self.b[0].numpy().ravel(), self.b[1].numpy()]).astype(np.float64)[index]
            captured.update(K=K, P=P, b=b, particle_dofs=3 * sim.model.particle_count)
        return original(self, iterations, it)

    sp.PrimalStep.solve = capture
    try:
        sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
        sim.step()
    finally:
        sp.PrimalStep.solve = original
    K = 0.5 * (captured["K"] + captured["K"].T)  # symmetric up to float32 round-off
    P = 0.5 * (captured["P"] + captured["P"].T)
    b = captured["b"]
    nv = captured["particle_dofs"]
    print(f"full snake, {a.seconds:g} s into the gait, first Newton iteration: {b.size} unknowns ({nv} particle, {b.size - nv} row)")
    for k in (int(s) for s in a.iterations.split(",")):
        x, _ = sla.minres(K, b, M=P, maxiter=k, rtol=1e-30)
        print(f"MINRES {k:4d} iterations: relative residual {np.linalg.norm(K @ x - b) / np.linalg.norm(b):.2e}")


if __name__ == "__main__":
    main()
