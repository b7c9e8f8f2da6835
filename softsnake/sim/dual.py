"""The dual formulation of the Newton step (the paper's form; kernels/step_dual.py): every row, tets included, keeps
its multiplier, and each Newton iteration solves [J M⁻¹ Jᵀ + C] Δλ = b with Jacobi-preconditioned conjugate residual
(PCR), then applies v += M⁻¹JᵀΔλ. It runs every model without tets and, with ``SolverConfig.fem = "dual"``, the
others.
"""

from __future__ import annotations

import warp as wp

from softsnake.kernels import step_dual as kstep


class DualStep:
    """The dual formulation of a :class:`~softsnake.sim.solver.Solver`: warm start, Newton stages and finish."""

    #: the tets' multipliers are unknowns of the solve, carried from step to step like the other bilateral rows'
    carries_tet_multipliers = True

    def __init__(self, solver):
        self.s = solver
        m, dev, W = solver.model, solver.model.device, solver.model.worlds
        rows = lambda: wp.zeros(W * m.row_count, dtype=float, device=dev)  # noqa: E731
        d = kstep.DualData()
        d.r, d.z, d.p, d.Az, d.Ap = (rows() for _ in range(5))
        cfg = solver.config
        d.warm_scaled = 1 if cfg.warm_start > 0.0 and cfg.warm_start_scaled else 0
        self.data = d
        # the rows are assembled with the model's own masses
        self.rows_data = m.data
        self.attachment_data = m.data

    def warm_start(self) -> None:
        """Carried impulses through this step's Jacobians, the bilateral ones scaled (kernels/step_dual.py)."""
        s = self.s
        s.launch(kstep.warm_start, s.model.data, s.model.body_data, s.data, self.data)

    def assemble(self, it: int) -> None:
        """Rows at the iterate; the line search on the last update (it > 0)."""
        s = self.s
        s.launch(kstep.newton_assemble, s.model.data, s.model.body_data, s.data, it)

    def solve(self, it: int, iterations: int | None = None) -> None:
        """PCR, ``iterations`` (default: the budget) in one launch; Δλ lands in the solver's ``dlam``."""
        s = self.s
        n = s.config.linear_iterations if iterations is None else int(iterations)
        s.launch(
            kstep.newton_solve, s.model.data, s.model.body_data, s.data, self.data, it, n, block_dim=s.solve_block_dim
        )

    def update(self, it: int) -> None:
        """λ += Δλ, v += M⁻¹JᵀΔλ."""
        s = self.s
        s.launch(kstep.newton_update, s.model.data, s.model.body_data, s.data, it)

    def finish(self) -> None:
        """Last assembly and line search, cone projection applied through M⁻¹Jᵀ."""
        s = self.s
        s.launch(kstep.finish, s.model.data, s.model.body_data, s.data)

    def diagnostic_extras(self) -> dict:
        return {}
