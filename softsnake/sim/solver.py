"""Non-smooth Newton solver (paper Sec. IV-D) with two formulations of the per-iteration linear solve.

Default, ``fem = "primal"`` (docs/solver.md, softsnake/sim/primal.py): tets are elastic forces of the positions, every
other row keeps its multiplier, and each Newton iteration solves the saddle-point system of particle velocities and
multipliers with preconditioned MINRES. ``fem = "dual"`` (and every model without tets) is the paper's form described
below.

One dual step of size h (solver notes §1, §6):
  1. predict ṽ = v⁻ + h(g + M⁻¹f); take every Jacobian at x⁻ + h·v⁻; warm-start the multipliers and apply
     v = ṽ + M⁻¹Jᵀλ;
  2. for each Newton iteration: evaluate every row at x = x⁻ + h v with the step's fixed Jacobians (distance,
     corotational tet, FB contact, friction fixed point; a chord Newton method), halve the last update where it made
     ‖φ‖² grow, solve [J M⁻¹ Jᵀ + C] Δλ = b with Jacobi-PCR, λ += Δλ, v += M⁻¹JᵀΔλ;
  3. project friction impulses left outside their cone, x⁺ = x⁻ + h v⁺, and check the state is finite and bounded.
All worlds run in the same launches with per-world scalars, so they never influence each other; there is no host
round trip inside the Newton loop (on CUDA the whole step is captured as one graph).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import warp as wp

from softsnake.io.toml_files import read_toml
from softsnake.kernels import block_sums as kbs
from softsnake.kernels import friction as kfriction
from softsnake.kernels import integrate as kint
from softsnake.kernels import pcr as kpcr
from softsnake.kernels import rigid as krigid
from softsnake.kernels import rigid_contact as kbc
from softsnake.kernels import schur as kschur
from softsnake.kernels.data import BodyJacobian, ContactSettings, Jacobian

from .contact_list import ContactCapacityExceeded, ContactList
from .model import Control, Model, State


class SimulationDiverged(FloatingPointError):
    """A step produced non-finite positions or velocities, or runaway speeds; the state was restored to the start of that step."""

    def __init__(self, worlds):
        self.worlds = list(worlds)
        super().__init__(
            f"simulation diverged (non-finite state or speed above SolverConfig.max_speed) in world(s) {self.worlds}; the state was restored to the start "
            "of the step. Reduce the time step, raise newton/linear iterations, or check the model parameters."
        )

    def __reduce__(self):
        # rebuilt from the worlds, not the message (a process pool pickles it back to the caller)
        return (type(self), (self.worlds,))


#: Warp replays captured graphs on the CPU from 1.13 on, with tiled kernels (the solver's reductions) from 1.14 on
CPU_CAPTURE = tuple(int(p) for p in wp.config.version.split(".")[:2]) >= (1, 14)


@dataclass
class SolverConfig:
    """Solver settings (defaults: the paper's fixed budget, 4 Newton × 20 PCR iterations per step)."""

    newton_iterations: int = 4
    linear_iterations: int = 20
    #: stop a world's PCR when ‖r‖ ≤ linear_tolerance·‖b‖ (0: always run the full budget)
    linear_tolerance: float = 0.0
    #: skip a world's remaining Newton updates once its residual norm ≤ this [m/s] (0: off)
    newton_tolerance: float = 0.0
    #: factor applied to the previous step's bilateral multipliers as a start value (0: cold start). The carried
    #: multipliers are re-applied through the new step's Jacobians, so a body at rest starts each step in equilibrium.
    warm_start: float = 1.0
    #: factor applied to the previous step's contact impulses (normal and friction) as a start value
    contact_warm_start: float = 1.0
    #: scale the carried bilateral multipliers by the s ∈ [0, 1] that minimises the first residual (robust when the
    #: linear solves are truncated far from convergence; both formulations, diagnostics().extras["warm_start_scale"]
    #: for the primal one); off: reapply them as they are
    warm_start_scaled: bool = True
    #: contacts farther than this are not solved [m]
    contact_margin: float = 0.01
    #: floor on ∂φ/∂a of the FB normal rows
    fb_min_derivative: float = 1.0e-3
    #: FB smoothing [m/s]
    fb_smoothing: float = 1.0e-6
    #: creep speed [m/s] that regularises static friction (a sticking contact slips at most this fast)
    friction_stick_velocity: float = 1.0e-4
    #: friction-row weight (× Delassus diagonal) that switches friction off for contacts without normal impulse
    friction_free_weight: float = 1.0e4
    #: kept for old config files: the residual after the last iteration is now always evaluated (the line search needs it)
    diagnostics: bool = True
    #: check for non-finite state after every step (one small device→host copy per step)
    check_finite: bool = True
    #: a world whose particle or body speed exceeds this [m/s] (or angular speed 100× it [rad/s]) has diverged even if
    #: its values are still finite (0: off)
    max_speed: float = 100.0
    #: "raise": restore the state and raise SimulationDiverged; "flag": restore only the bad worlds and record them
    on_nonfinite: str = "raise"
    #: replay the step as a captured CUDA graph on GPU devices (one graph launch per step)
    graph_capture: bool = True
    #: also on the CPU, with Warp's CPU capture (Warp >= 1.14): it removes the Python cost of ~1,000–1,600 launches per
    #: step (1.1× faster for one snake, 1.6× for one link, now that eager MINRES iterations replay recorded launches),
    #: but is off by default: Warp marks it experimental, and two full test runs crashed inside its capture code (a
    #: heap overwrite by a test, since fixed, is a likely cause; benchmarks/RESULTS.md). The environment variable
    #: SOFTSNAKE_CPU_CAPTURE=1 turns it on by default. A CPU run with a tolerance > 0 always runs eagerly (its early
    #: exits read the residuals between launches).
    cpu_graph_capture: bool = field(default_factory=lambda: os.environ.get("SOFTSNAKE_CPU_CAPTURE", "") == "1")
    #: "primal": tets are elastic forces of the positions and each Newton iteration solves the saddle-point system of
    #: particle velocities and the other rows' multipliers with two-level-preconditioned MINRES (docs/solver.md);
    #: "dual": tets are compliant rows like the others, solved with Jacobi-PCR on the multipliers
    fem: str = "primal"
    #: coarse-grid cells along each soft body's longest axis for the primal preconditioner (0: Jacobi only)
    coarse_cells: int = 4
    #: least length of a coarse cell along a soft body's longest axis, in mean element edges (other axes: 2); 1 lets a
    #: slender body such as the snake link have a coarse node every ~1.5 cross-sections (SnakeConfig)
    coarse_cell_edges: float = 2.0
    #: primal FEM: precondition the rows that act on rigid bodies with the bodies' exact mass coupling (Woodbury)
    body_preconditioner: bool = True
    #: primal FEM: after the last Newton iteration, give each free soft body (no kinematic particles) the uniform
    #: velocity change that makes its momentum change equal the impulses on it. A truncated linear solve leaves a
    #: momentum residual whose sum acts as a spurious external force (a few mN on the snake, as large as its gait's
    #: net thrust; docs/solver.md, "Momentum balance"); off: keep the truncated solve's velocities
    momentum_balance: bool = True

    def __post_init__(self):
        for name in ("newton_iterations", "linear_iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
        for name in ("linear_tolerance", "newton_tolerance", "warm_start", "contact_warm_start", "contact_margin", "max_speed", "fb_min_derivative", "fb_smoothing", "friction_free_weight", "friction_stick_velocity"):
            v = float(getattr(self, name))
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number ≥ 0, got {getattr(self, name)!r}")
        if self.fem not in ("primal", "dual"):
            raise ValueError(f"fem must be 'primal' or 'dual', got {self.fem!r}")
        if isinstance(self.coarse_cells, bool) or int(self.coarse_cells) != self.coarse_cells or self.coarse_cells < 0:
            raise ValueError(f"coarse_cells must be an integer ≥ 0, got {self.coarse_cells!r}")
        if isinstance(self.coarse_cell_edges, bool) or not np.isfinite(float(self.coarse_cell_edges)) or self.coarse_cell_edges < 1.0:
            raise ValueError(f"coarse_cell_edges must be a finite number ≥ 1, got {self.coarse_cell_edges!r}")
        if self.on_nonfinite not in ("raise", "flag"):
            raise ValueError(f"on_nonfinite must be 'raise' or 'flag', got {self.on_nonfinite!r}")

    @classmethod
    def from_toml(cls, path) -> "SolverConfig":
        """Read a ``[solver]`` table (or top-level keys) from a TOML file."""
        p = Path(path)
        data = read_toml(p, "solver config")
        table = renamed_settings(data.get("solver", data), where=str(p))
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ValueError(f"unknown solver setting(s) in {str(p)!r}: {', '.join(unknown)}")
        return cls(**table)


#: settings renamed since earlier versions (old name → new name); configs and checkpoints with the old name still load
RENAMED_SETTINGS = {"cuda_graph": "graph_capture"}


def renamed_settings(table: dict, where: str = "solver settings") -> dict:
    """``table`` with old setting names replaced by their new ones (RENAMED_SETTINGS); both at once is an error."""
    if not isinstance(table, dict):
        return table  # the caller's field check reports it
    out = dict(table)
    for old, new in RENAMED_SETTINGS.items():
        if old in out:
            if new in out:
                raise ValueError(f"{where}: give {new!r} or its old name {old!r}, not both")
            out[new] = out.pop(old)
    return out


@dataclass
class StepDiagnostics:
    """Per-world diagnostics of the last step (numpy arrays, first axis = Newton iteration where it applies)."""

    residual_norm: np.ndarray  # (newton+1, worlds): ‖φ‖ before each Newton iteration and after the last [m/s]
    linear_iterations: np.ndarray  # (newton, worlds): PCR iterations used
    linear_reduction: np.ndarray  # (newton, worlds): ‖r_final‖/‖b‖ of each PCR solve
    active_contacts: np.ndarray  # (worlds,): contacts with positive normal impulse after the last iteration
    extras: dict = field(default_factory=dict)


class Solver:
    """Compliant-constraint non-smooth Newton solver.

    Args:
        model: the Model to simulate.
        dt: time step h [s].
        newton_iterations, linear_iterations: iteration budgets (override ``config``).
        config: SolverConfig; keyword overrides of its fields are accepted too.
    """

    def __init__(self, model: Model, dt: float = 1.0 / 120.0, newton_iterations: int | None = None, linear_iterations: int | None = None, *, config: SolverConfig | None = None, **overrides):
        if not isinstance(model, Model):
            raise ValueError("Solver needs a Model (ModelBuilder.finalize())")
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be a finite number > 0, got {dt!r}")
        cfg = dataclasses.replace(config or SolverConfig(), **renamed_settings(overrides))
        if newton_iterations is not None:
            cfg = dataclasses.replace(cfg, newton_iterations=newton_iterations)
        if linear_iterations is not None:
            cfg = dataclasses.replace(cfg, linear_iterations=linear_iterations)
        self.model = model
        self.dt = dt
        self.config = cfg
        self._graph = None
        self._graph_key = None
        # threads per world (one block each) for the row reductions of PCR; the CPU runs one thread per block
        self.block_dim = (1024 if model.worlds < 64 else 256) if model.device.is_cuda else 1
        # lanes per output of the list sums in kernels/block_sums.py (J_bᵀx per body, the coarse restriction per node)
        self.sum_block_dim = 32 if model.device.is_cuda else 1
        self._allocate()
        self.diverged_worlds: set[int] = set()
        self._primal = None
        self._assembly_data = model.data
        self._body_row_data = model.data  # the attachment rows' preconditioner masses (primal: two-level)
        if cfg.fem == "primal" and model.tet_count > 0:
            from .primal import PrimalStep

            self._primal = PrimalStep(self)
            self._assembly_data = self._primal.data_eff
            self._body_row_data = self._primal.data_attach

    # ----------------------------------------------------------------- buffers
    def _allocate(self):
        m, dev, W = self.model, self.model.device, self.model.worlds
        N, L = self.config.newton_iterations, self.config.linear_iterations
        nrows = W * m.row_count
        self.lam = wp.zeros(nrows, dtype=float, device=dev)
        self.rhs, self.diag, self.dlam, self.r, self.z, self.p, self.Az, self.Ap = (
            wp.zeros(nrows, dtype=float, device=dev) for _ in range(8)
        )
        jac = Jacobian()
        jac.distance_dir = wp.zeros(W * m.distance_count, dtype=wp.vec3, device=dev)
        jac.tet_rotation = wp.zeros(W * m.tet_count, dtype=wp.mat33, device=dev)
        jac.contact_frame = wp.zeros(W * m.contact_count, dtype=wp.mat33, device=dev)
        jac.row_compliance = wp.zeros(nrows, dtype=float, device=dev)
        npb = W * m.particle_body_count
        jac.pb_frame = wp.zeros(npb, dtype=wp.mat33, device=dev)
        jac.pb_arm = wp.zeros(npb, dtype=wp.vec3, device=dev)
        jac.pb_mu = wp.zeros(npb, dtype=wp.vec2, device=dev)
        self.particle_body_lam_n_prev = wp.zeros(npb, dtype=float, device=dev)
        self.jac = jac
        cs = ContactSettings()
        cs.margin = self.config.contact_margin
        cs.da_min = self.config.fb_min_derivative
        cs.smoothing = self.config.fb_smoothing
        cs.free_weight = self.config.friction_free_weight
        cs.stick_velocity = self.config.friction_stick_velocity
        self.contact_settings = cs
        np_ = W * m.particle_count
        self.x_start = wp.zeros(np_, dtype=wp.vec3, device=dev)
        self.v_start = wp.zeros(np_, dtype=wp.vec3, device=dev)
        self.v = wp.zeros(np_, dtype=wp.vec3, device=dev)
        self.impulse = wp.zeros(np_, dtype=wp.vec3, device=dev)
        self.carried_impulse = wp.zeros(np_, dtype=wp.vec3, device=dev)  # primal: last projection's JᵀΔλ, next step
        self.contact_lam_n_prev = wp.zeros(W * m.contact_count, dtype=float, device=dev)
        self.contact_list = ContactList(self)
        # per-world scalars: one block per Newton iteration (zeroed once per step)
        self.num = wp.zeros(N * (L + 1) * W, dtype=float, device=dev)
        self.den = wp.zeros(N * L * W, dtype=float, device=dev)
        self.rr = wp.zeros(N * (L + 1) * W, dtype=float, device=dev)
        self.res_sq = wp.zeros((N + 1) * W, dtype=float, device=dev)
        self.pcr_iters = wp.zeros(N * W, dtype=int, device=dev)
        self.active = wp.zeros(N * W, dtype=int, device=dev)
        self.nonfinite = wp.zeros(W, dtype=int, device=dev)
        self._scratch_res = wp.zeros(W, dtype=float, device=dev)
        self._warm_bd = wp.zeros(W, dtype=float, device=dev)
        self._warm_dd = wp.zeros(W, dtype=float, device=dev)

        def blocks(a, size):
            return [a[i * size : (i + 1) * size] for i in range(N)]

        self._num = blocks(self.num, (L + 1) * W)
        self._den = blocks(self.den, L * W)
        self._rr = blocks(self.rr, (L + 1) * W)
        self._iters = blocks(self.pcr_iters, W)
        self._res = [self.res_sq[i * W : (i + 1) * W] for i in range(N + 1)]
        nb = W * m.body_count
        self.body_x_start = wp.zeros(nb, dtype=wp.transform, device=dev)
        self.body_v_start = wp.zeros(nb, dtype=wp.spatial_vector, device=dev)
        self.body_v = wp.zeros(nb, dtype=wp.spatial_vector, device=dev)
        self.body_impulse = wp.zeros(nb, dtype=wp.spatial_vector, device=dev)
        self.body_momentum = wp.zeros(nb, dtype=wp.vec3, device=dev)  # world angular momentum of the step's iterate
        self.carried_body_impulse = wp.zeros(nb, dtype=wp.spatial_vector, device=dev)  # primal: as carried_impulse
        bj = BodyJacobian()
        bj.attachment_arm = wp.zeros(W * m.attachment_count, dtype=wp.vec3, device=dev)
        bj.joint_lin, bj.joint_ang_parent, bj.joint_ang_child = (wp.zeros(W * m.joint_count * 6, dtype=wp.vec3, device=dev) for _ in range(3))
        nbc = W * m.body_contact_count
        bj.contact_frame = wp.zeros(nbc, dtype=wp.mat33, device=dev)
        bj.contact_arm_a, bj.contact_arm_b = (wp.zeros(nbc, dtype=wp.vec3, device=dev) for _ in range(2))
        bj.contact_mu = wp.zeros(nbc, dtype=wp.vec2, device=dev)
        bj.contact_point = wp.zeros(nbc, dtype=wp.vec4, device=dev)
        self.bjac = bj
        self.body_contact_lam_n_prev = wp.zeros(nbc, dtype=float, device=dev)
        self._dummy_f = wp.zeros(np_, dtype=wp.vec3, device=dev)
        self._zero_wrench = wp.zeros(nb, dtype=wp.spatial_vector, device=dev)
        self._unit_scale = wp.ones(W * m.distance_count, dtype=float, device=dev)
        # J_tᵀλ_t per tet and vertex, written by the primal FEM assembly (kernels/primal.py)
        self._tet_force = wp.zeros(max(4 * W * m.tet_count, 1), dtype=wp.vec3, device=dev)

    # ------------------------------------------------------------------- steps
    def step(self, state: State, control: Control | None = None) -> None:
        """Advance ``state`` in place by dt. ``control`` supplies external forces and rest-length scales."""
        force = control.particle_f if control is not None else self._dummy_f
        scale = control.distance_rest_scale if control is not None else self._unit_scale
        wrench = control.body_f if control is not None else self._zero_wrench
        m = self.model
        if state.particle_q.shape[0] != m.worlds * m.particle_count:
            raise ValueError("state does not belong to this model (wrong particle count)")
        use_graph = self._use_graph()
        if use_graph:
            key = (state.particle_q.ptr, state.particle_qd.ptr, state.body_q.ptr, state.body_qd.ptr, force.ptr, scale.ptr, wrench.ptr, self.dt)
            if self._graph is None or self._graph_key != key:
                # this step runs eagerly (which also loads the kernel modules); the capture only records the launches
                self._launch_step(state, force, scale, wrench)
                with wp.ScopedCapture(device=self.model.device) as cap:
                    self._launch_step(state, force, scale, wrench)
                self._graph, self._graph_key = cap.graph, key
            else:
                wp.capture_launch(self._graph)
        else:
            self._launch_step(state, force, scale, wrench)
        self._check_step(state)

    def _use_graph(self) -> bool:
        cfg, dev = self.config, self.model.device
        if not cfg.graph_capture:
            return False
        if dev.is_cuda:
            return True
        return cfg.cpu_graph_capture and CPU_CAPTURE and cfg.linear_tolerance <= 0.0 and cfg.newton_tolerance <= 0.0

    def _check_step(self, state: State) -> None:
        """After a step: a full contact list always raises; non-finite or runaway worlds per ``check_finite``."""
        full = self.contact_list.overflowing_worlds()
        if full:
            self._restore_step_start(state, all_worlds=1)
            raise ContactCapacityExceeded(full, self.model.contact_count)
        if not self.config.check_finite:
            return
        bad = np.nonzero(self.nonfinite.numpy())[0]
        if bad.size == 0:
            return
        self._restore_step_start(state, all_worlds=1 if self.config.on_nonfinite == "raise" else 0)
        if self.config.on_nonfinite == "raise":
            raise SimulationDiverged(bad.tolist())
        self.diverged_worlds.update(int(b) for b in bad)

    def _restore_step_start(self, state: State, all_worlds: int) -> None:
        """Positions and velocities back to the start of the step, in every world (all_worlds = 1) or in the worlds
        flagged non-finite; those worlds restart their multipliers cold."""
        m = self.model
        wp.launch(kint.restore_particles, dim=m.worlds * m.particle_count, inputs=[m.particle_count, all_worlds, self.nonfinite, self.x_start, self.v_start], outputs=[state.particle_q, state.particle_qd], device=m.device)
        wp.launch(krigid.restore_bodies, dim=m.worlds * m.body_count, inputs=[m.body_count, all_worlds, self.nonfinite, self.body_x_start, self.body_v_start], outputs=[state.body_q, state.body_qd], device=m.device)
        if m.row_count > 0:
            # a rejected world restarts cold; in "flag" mode the other worlds keep their carried multipliers
            wp.launch(kint.reset_multipliers, dim=m.worlds * m.row_count, inputs=[m.row_count, all_worlds, self.nonfinite, self.lam], device=m.device)
        self.nonfinite.zero_()

    def _matvec(self, x: wp.array, y: wp.array, dot_out: wp.array) -> None:
        """y = (J M⁻¹ Jᵀ + C) x and dot_out[w] += x·y per world."""
        m = self.model
        self._scatter(x)
        self._gather(self.impulse, self.body_impulse, x, y)
        wp.launch_tiled(kpcr.dot_per_world, dim=[m.worlds], inputs=[m.row_count, x, y, dot_out], block_dim=self.block_dim, device=m.device)

    def _gather(self, particle_impulse: wp.array, body_impulse: wp.array, x: wp.array, y: wp.array, *, skip_tets: int = 0, particle_rows: bool = True) -> None:
        """y = J M⁻¹ (particle_impulse, body_impulse) + C x over the row families: the particle families (distance, tet
        unless ``skip_tets``, contact) when ``particle_rows``, and every row family that acts on a body."""
        m = self.model
        dev = m.device
        particle_elements = (m.element_count - (m.tet_count if skip_tets else 0)) if particle_rows else 0
        body_rows = m.attachment_count + m.joint_count + m.body_contact_count + m.particle_body_count
        if body_rows == 0:
            if particle_elements > 0:
                wp.launch(kschur.gather_rows, dim=m.worlds * particle_elements, inputs=[m.data, self.jac, self.dt, particle_impulse, x, skip_tets], outputs=[y], device=dev)
            return
        wp.launch(
            kbc.gather_row_families,
            dim=m.worlds * (particle_elements + body_rows),
            inputs=[m.worlds, particle_elements, skip_tets, m.data, m.body_data, self.bjac, self.jac, self.dt, self.body_x_start, self.body_v, particle_impulse, body_impulse, x],
            outputs=[y],
            device=dev,
        )

    def _scatter(self, x: wp.array, tet_force: wp.array | None = None) -> None:
        """Per-particle and per-body impulses Jᵀx; with ``tet_force`` the tets' part is read from it (primal step)."""
        m = self.model
        use = 0 if tet_force is None else 1
        wp.launch(kschur.scatter_impulses, dim=m.worlds * m.particle_count, inputs=[m.data, self.jac, x, self._tet_force if tet_force is None else tet_force, use], outputs=[self.impulse], device=m.device)
        if m.body_count > 0:
            self._scatter_bodies(x, self.body_impulse)

    def _scatter_bodies(self, x: wp.array, impulse: wp.array) -> None:
        """impulse = J_bᵀx per rigid body (one block of ``sum_block_dim`` lanes per body)."""
        m = self.model
        wp.launch_tiled(kbs.scatter_body_impulses, dim=[m.worlds * m.body_count], inputs=[m.data, m.body_data, self.bjac, self.jac, x], outputs=[impulse], block_dim=self.sum_block_dim, device=m.device)

    def _assemble(self, newton_iteration: int, scale: wp.array, residual: wp.array, linearise: int = 0) -> None:
        """Rows at the current iterate (linearise = 0), or the step's Jacobians at x⁻ + h·v⁻ (linearise = 1)."""
        m = self.model
        if m.particle_body_count > 0:
            wp.launch(
                kbc.assemble_particle_body_contacts,
                dim=m.worlds * m.particle_body_count,
                inputs=[self._assembly_data, m.body_data, self.contact_settings, self.dt, newton_iteration, linearise, self.x_start, self.v_start, self.v, self.body_x_start, self.body_v_start, self.body_v, self.particle_body_lam_n_prev],
                outputs=[self.lam, self.jac, self.rhs, self.diag, residual],
                device=m.device,
            )
        if m.body_contact_count > 0:
            wp.launch(
                kbc.assemble_body_contacts,
                dim=m.worlds * m.body_contact_count,
                inputs=[self._assembly_data, m.body_data, self.contact_settings, self.dt, newton_iteration, linearise, self.body_x_start, self.body_v_start, self.body_v, self.body_contact_lam_n_prev],
                outputs=[self.lam, self.bjac, self.jac.row_compliance, self.rhs, self.diag, residual],
                device=m.device,
            )
        if m.attachment_count + m.joint_count > 0:
            # attachment and joint Jacobians are taken at x⁻ inside this kernel (fixed for the step); in the
            # linearisation pass only those Jacobians matter, the rows are written again by the first iteration
            wp.launch(
                krigid.assemble_body_rows,
                dim=m.worlds * (m.attachment_count + m.joint_count),
                inputs=[self._body_row_data, m.body_data, self.dt, self.x_start, self.v, self.body_x_start, self.body_v, self.lam],
                outputs=[self.bjac, self.jac.row_compliance, self.rhs, self.diag, residual],
                device=m.device,
            )
        wp.launch(
            kschur.assemble_rows,
            dim=m.worlds * m.element_count,
            inputs=[self._assembly_data, self.contact_settings, self.dt, newton_iteration, linearise, 1 if self._primal is not None else 0, self.x_start, self.v_start, self.v, scale, self.contact_lam_n_prev],
            outputs=[self.lam, self.jac, self.rhs, self.diag, residual, self._tet_force],
            device=m.device,
        )

    def _apply(self, x: wp.array) -> None:
        """v += M⁻¹ Jᵀ x."""
        m = self.model
        self._scatter(x)
        wp.launch(kint.apply_impulses, dim=m.worlds * m.particle_count, inputs=[m.particle_count, m.data.particle_inv_mass, self.impulse, self.v], device=m.device)
        if m.body_count > 0:
            wp.launch(krigid.apply_body_impulses, dim=m.worlds * m.body_count, inputs=[m.body_count, m.body_data, self.body_x_start, self.dt, self.body_impulse, self.body_momentum, self.body_v], device=m.device)

    def _launch_step(self, state: State, force: wp.array, scale: wp.array, wrench: wp.array) -> None:
        m, cfg, dev, W = self.model, self.config, self.model.device, self.model.worlds
        N, L = cfg.newton_iterations, cfg.linear_iterations
        nrows = W * m.row_count
        wp.launch(
            kint.predict_particles,
            dim=W * m.particle_count,
            inputs=[m.particle_count, m.data.particle_inv_mass, m.gravity, self.dt, state.particle_q, state.particle_qd, force],
            outputs=[self.x_start, self.v_start, self.v],
            device=dev,
        )
        wp.launch(
            krigid.predict_bodies,
            dim=W * m.body_count,
            inputs=[m.body_count, m.body_data, m.gravity, self.dt, state.body_q, state.body_qd, wrench],
            outputs=[self.body_x_start, self.body_v_start, self.body_v, self.body_momentum],
            device=dev,
        )
        for a in (self.num, self.den, self.rr, self.res_sq, self.pcr_iters, self.active):
            a.zero_()
        if m.row_count == 0:
            self._finalize(state)
            return
        wp.launch(kint.start_multipliers, dim=nrows, inputs=[m.row_count, m.contact_row_start, m.contact_row_end, m.body_contact_row_start, cfg.warm_start, cfg.contact_warm_start, self.lam], device=dev)
        # warm start (notes §10): the carried impulses (contacts with their friction state) are applied through this
        # step's Jacobians, which stay fixed for the step, so v = ṽ + M⁻¹Jᵀλ holds from the first iteration on and a
        # body at rest in equilibrium starts the step at zero residual
        self.contact_list.relist()
        self._assemble(0, scale, self._scratch_res, linearise=1)
        if self._primal is not None:
            self._primal.launch_step(scale)
            self._primal.project_cones(N - 1)
            self._finalize(state)
            return
        if cfg.warm_start > 0.0 and cfg.warm_start_scaled:
            # Contact impulses are applied as carried. The bilateral ones are applied as s·λ with the s ∈ [0, 1]
            # that minimises the P-norm of the first residual along them (φ(s) = φ₀ + s·Aλ, exact for linear rows): a
            # reapplied impulse also reapplies the previous step's solve error, which a truncated solve on stiff rows
            # cannot always remove (measured: the carried λ alone diverges on the snake link at 4 × 20); with s the
            # start is never worse than a cold one, and s → 1 as the solves converge.
            rows = [m.row_count, m.contact_row_start, m.contact_row_end, m.body_contact_row_start]
            wp.copy(self.p, self.lam)
            wp.launch(kint.start_multipliers, dim=nrows, inputs=[*rows, 0.0, 1.0, self.lam], device=dev)
            wp.launch(kint.start_multipliers, dim=nrows, inputs=[*rows, 1.0, 0.0, self.p], device=dev)
            self._apply(self.lam)
            self._assemble(0, scale, self._scratch_res)
            self._matvec(self.p, self.Ap, self._scratch_res)
            wp.launch_tiled(kpcr.warm_start_dots, dim=[W], inputs=[m.row_count, self.rhs, self.Ap, self.diag, self._warm_bd, self._warm_dd], block_dim=self.block_dim, device=dev)
            wp.launch(kpcr.scale_warm_start, dim=nrows, inputs=[m.row_count, self._warm_bd, self._warm_dd, self.p, self.lam], device=dev)
            self._apply(self.p)
        elif cfg.warm_start > 0.0 or cfg.contact_warm_start > 0.0:
            self._apply(self.lam)
        tol_sq = cfg.linear_tolerance**2
        # On the CPU, device arrays are host memory: converged solves can stop early at no transfer cost.
        host_exit = not dev.is_cuda
        converged_early = False
        for it in range(N):
            num, den, rr, iters = self._num[it], self._den[it], self._rr[it], self._iters[it]
            self._assemble(it, scale, self._res[it])
            if it > 0:
                self._backtrack(it, scale)
            if host_exit and cfg.newton_tolerance > 0.0 and np.all(self._res[it].numpy() <= cfg.newton_tolerance**2):
                converged_early = True
                break
            wp.launch_tiled(kpcr.pcr_init, dim=[W], inputs=[m.row_count, self.rhs, self.diag, self.dlam, self.r, self.z, rr], block_dim=self.block_dim, device=dev)
            self._matvec(self.z, self.Az, num)
            for k in range(L):
                wp.launch_tiled(kpcr.pcr_direction, dim=[W], inputs=[m.row_count, W, k, self.z, self.Az, self.diag, num, self.p, self.Ap, den], block_dim=self.block_dim, device=dev)
                wp.launch_tiled(
                    kpcr.pcr_update,
                    dim=[W],
                    inputs=[m.row_count, W, k, tol_sq, self.diag, num, den, self.p, self.Ap, self.dlam, self.r, self.z, rr, iters],
                    block_dim=self.block_dim,
                    device=dev,
                )
                if host_exit and tol_sq > 0.0:
                    rr_np = rr.numpy()
                    if np.all(rr_np[(k + 1) * W : (k + 2) * W] <= tol_sq * rr_np[:W]):
                        break
                if k + 1 < L:
                    self._matvec(self.z, self.Az, num[(k + 1) * W : (k + 2) * W])
            if cfg.newton_tolerance > 0.0:
                wp.launch(kpcr.zero_converged, dim=nrows, inputs=[m.row_count, cfg.newton_tolerance**2, self._res[it], self.dlam], device=dev)
            wp.launch(kpcr.add_to, dim=nrows, inputs=[self.dlam, self.lam], device=dev)
            self._apply(self.dlam)
        # the budget never ends on an update that made the residual grow
        self._assemble(N, scale, self._res[N])
        if not converged_early:
            self._backtrack(N, scale)
        if m.contact_count + m.body_contact_count + m.particle_body_count > 0:
            self.dlam.zero_()
            self._project_cones(N - 1)
            self._apply(self.dlam)
        self._finalize(state)

    def line_search_idle(self, it: int) -> bool:
        """True where the host can see that the line search after Newton iteration ``it`` has nothing to do: an eager
        CPU step (device arrays are host memory, no transfer) in which no world's merit grew. The search then changes
        nothing (λ += 0, v −= 0; a zero impulse leaves a rigid body exactly as it is, ``apply_body_impulses``) and
        assembling the rows again gives the same rows, so it is skipped: the same bits, and a world's result never
        depends on whether another world's merit grew. On a GPU, or while a CPU graph is captured, it always runs, per
        world on the device."""
        dev = self.model.device
        if dev.is_cuda or dev.is_capturing:
            return False
        return not bool(np.any(self._res[it].numpy() > self._res[it - 1].numpy()))

    def _backtrack(self, it: int, scale: wp.array) -> None:
        """Globalisation (notes §10): where the last Newton update made the merit ‖φ‖² grow, take back half of it and
        re-evaluate the rows (per world, on the device; ``self.dlam`` still holds the last update)."""
        if self.line_search_idle(it):
            return
        m, dev = self.model, self.model.device
        nrows = m.worlds * m.row_count
        wp.launch(kpcr.backtrack_grown, dim=nrows, inputs=[m.row_count, self._res[it], self._res[it - 1], self.dlam], outputs=[self.r], device=dev)
        wp.launch(kpcr.add_to, dim=nrows, inputs=[self.r, self.lam], device=dev)
        self._apply(self.r)
        self._res[it].zero_()
        self._assemble(min(it, self.config.newton_iterations - 1), scale, self._res[it])

    def _project_cones(self, it: int, bodies: bool = True) -> None:
        """Friction impulses left outside their cone by the truncated fixed point are projected onto it; each change is
        added to self.dlam for the caller to apply (dual step: zeroed before, then M⁻¹Jᵀ like every other impulse;
        primal step: docs/solver.md, "Friction cone"). ``bodies = False`` leaves the contacts on rigid bodies alone.
        Contacts with a positive normal impulse are counted at diagnostics row ``it``."""
        m, W, dev = self.model, self.model.worlds, self.model.device
        if bodies and m.body_contact_count > 0:
            wp.launch(kbc.project_body_friction, dim=W * m.body_contact_count, inputs=[m.data, m.body_data, self.bjac, it, W, self.lam, self.body_contact_lam_n_prev], outputs=[self.dlam, self.active], device=dev)
        if bodies and m.particle_body_count > 0:
            wp.launch(kbc.project_particle_body_friction, dim=W * m.particle_body_count, inputs=[m.data, self.jac, it, W, self.lam, self.particle_body_lam_n_prev], outputs=[self.dlam, self.active], device=dev)
        if m.contact_count > 0:
            wp.launch(kfriction.project_friction, dim=W * m.contact_count, inputs=[m.data, self.jac, it, W, self.lam, self.dlam, self.contact_lam_n_prev, self.active], device=dev)

    def _finalize(self, state: State) -> None:
        m, W = self.model, self.model.worlds
        wp.launch(kint.finalize_particles, dim=W * m.particle_count, inputs=[m.particle_count, self.dt, self.config.max_speed, self.x_start, self.v], outputs=[state.particle_q, state.particle_qd, self.nonfinite], device=m.device)
        wp.launch(krigid.finalize_bodies, dim=W * m.body_count, inputs=[m.body_count, self.dt, self.config.max_speed, self.body_x_start, self.body_v], outputs=[state.body_q, state.body_qd, self.nonfinite], device=m.device)

    # ---------------------------------------------------------- checkpoints
    def _carried_arrays(self) -> dict:
        """Solver arrays whose values carry over from one step to the next (start values, friction weights, the
        previous tet rotations); with the State they make a step reproducible bit for bit."""
        return dict(
            lam=self.lam,
            contact_lam_n_prev=self.contact_lam_n_prev,
            body_contact_lam_n_prev=self.body_contact_lam_n_prev,
            particle_body_lam_n_prev=self.particle_body_lam_n_prev,
            tet_rotation=self.jac.tet_rotation,
            carried_impulse=self.carried_impulse,
            carried_body_impulse=self.carried_body_impulse,
            **self.contact_list.carried_arrays(),
        )

    def carried_state(self) -> dict:
        """Host copies of the carried solver arrays (see :meth:`restore_carried_state`)."""
        return {k: a.numpy().copy() for k, a in self._carried_arrays().items()}

    def restore_carried_state(self, arrays: dict) -> None:
        """Restore what :meth:`carried_state` returned (same model size), e.g. when resuming from a checkpoint. A state
        saved before ``carried_impulse`` / ``carried_body_impulse`` existed (its solver applied those impulses within the
        step) restores them as zero."""
        list_keys = self.contact_list.carried_arrays().keys()
        dense = not any(k in arrays for k in list_keys)
        if dense:
            self.contact_list.restore_dense()  # saved before the compact contact list (one slot per particle and shape)
        for k, a in self._carried_arrays().items():
            if k in ("carried_impulse", "carried_body_impulse") and k not in arrays:
                a.zero_()
                continue
            if k in list_keys and dense:
                continue
            v = np.asarray(arrays[k])
            want = a.numpy().shape
            if v.shape != want:
                raise ValueError(f"solver state {k!r} has shape {v.shape}, this model needs {want}")
            a.assign(v.astype(a.numpy().dtype))

    # ------------------------------------------------------------- read-backs
    def diagnostics(self) -> StepDiagnostics:
        """Diagnostics of the last step (copies a few small arrays to the host)."""
        W, N, L = self.model.worlds, self.config.newton_iterations, self.config.linear_iterations
        rr = self.rr.numpy().reshape(N, L + 1, W)
        iters = self.pcr_iters.numpy().reshape(N, W)
        final = np.take_along_axis(rr, iters[:, None, :], axis=1)[:, 0, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            red = np.where(rr[:, 0, :] > 0, np.sqrt(final / rr[:, 0, :]), 0.0)
        res = np.sqrt(self.res_sq.numpy().reshape(N + 1, W))
        return StepDiagnostics(
            residual_norm=res,
            linear_iterations=iters,
            linear_reduction=red,
            active_contacts=self.active.numpy().reshape(N, W)[-1].copy(),
            extras=self._diagnostic_extras(),
        )

    def _diagnostic_extras(self) -> dict:
        """warm_start_scale: (worlds,) the s the primal step kept of the carried bilateral multipliers (1 = all)."""
        primal = self._primal
        if primal is not None and primal.scaled_warm_start:
            return dict(warm_start_scale=primal.warm_scale.numpy().copy())
        return {}

    def contact_impulses(self) -> tuple[np.ndarray, np.ndarray]:
        """Normal impulses (worlds, particles, shapes) [N·s] and friction impulses (worlds, particles, shapes, 2) [N·s]
        (along the shape's tangent axes t1, t2) of the last step."""
        lam = self.contact_list.dense_impulses()
        return lam[..., 2].copy(), lam[..., :2].copy()

    def tet_stress(self) -> np.ndarray:
        """Per-tet stress from the multipliers, σ = −λ/(V·h) in Voigt order (tensor shear) [Pa], shape (worlds, tets, 6)."""
        m = self.model
        lam = self.lam.numpy().reshape(m.worlds, m.row_count)[:, m.distance_count : m.contact_row_start]
        vol = m.data.tet_volume.numpy()
        return -lam.reshape(m.worlds, m.tet_count, 6) / (vol[None, :, None] * self.dt)

    def attachment_impulses(self) -> np.ndarray:
        """Attachment reaction impulses (worlds, attachments, 3) [N·s], acting on the body (the particle gets −λ);
        divide by dt for forces."""
        m = self.model
        lam = self.lam.numpy().reshape(m.worlds, m.row_count)[:, m.contact_row_end : m.contact_row_end + 3 * m.attachment_count]
        return lam.reshape(m.worlds, m.attachment_count, 3).copy()

    def joint_impulses(self) -> np.ndarray:
        """Joint row impulses (worlds, joints, 6) [N·s or N·m·s] in the row order of kernels/rigid.py (revolute: anchor
        x, y, z, two alignment rows, drive)."""
        m = self.model
        start = m.contact_row_end + 3 * m.attachment_count
        lam = self.lam.numpy().reshape(m.worlds, m.row_count)[:, start : start + 6 * m.joint_count]
        return lam.reshape(m.worlds, m.joint_count, 6).copy()

    def body_contact_impulses(self) -> tuple[np.ndarray, np.ndarray]:
        """Normal (worlds, features, targets) and friction (…, 2) impulses [N·s] of the body-contact slots."""
        m = self.model
        lam = self.lam.numpy().reshape(m.worlds, m.row_count)[:, m.body_contact_row_start : m.particle_body_row_start]
        lam = lam.reshape(m.worlds, m.feature_count, m.target_count, 3)
        return lam[..., 2].copy(), lam[..., :2].copy()
