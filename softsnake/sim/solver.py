"""Non-smooth Newton solver (paper Sec. IV-D): one step of size h as a pipeline of stages (docs/solver.md),

    predict → collide → linearise → warm start → Newton iterations [assemble + line search, solve, update]
    → finish (last assembly, line search, cone projection) → finalise,

each stage one launch over the worlds with one thread block per world (kernels/block.py), so a step is a handful of
launches whatever the iteration budget, worlds never influence each other, and there is no host round trip inside
a step (on CUDA the whole step is replayed as one captured graph).

Two formulations share the skeleton and differ in the warm start, the Newton stages and the finish:
``fem = "primal"`` (default, softsnake/sim/primal.py): tets are elastic forces of the positions, every other row keeps
its multiplier, and each Newton iteration solves the saddle-point system of particle velocities and multipliers with
preconditioned MINRES; ``fem = "dual"`` (and every model without tets, softsnake/sim/dual.py) is the paper's form:
every row keeps its multiplier and each iteration solves [J M⁻¹ Jᵀ + C] Δλ = b with Jacobi-PCR.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import warp as wp

from softsnake.io.toml_files import read_toml
from softsnake.kernels import integrate as kint
from softsnake.kernels import rigid as krigid
from softsnake.kernels import step_common as kstep
from softsnake.kernels.block import STAGE_MODULE_OPTIONS, WORLD_BLOCKS
from softsnake.kernels.data import BodyJacobian, ContactSettings, Jacobian, StepData

from .contact_list import ContactCapacityExceeded, ContactList
from .model import Control, Model, State, copy_worlds, world_indices


class SimulationDiverged(FloatingPointError):
    """A step produced non-finite positions or velocities, or runaway speeds; the state was restored to the start of
    that step.
    """

    def __init__(self, worlds):
        self.worlds = list(worlds)
        super().__init__(
            f"simulation diverged (non-finite state or speed above SolverConfig.max_speed) in world(s) "
            f"{self.worlds}; the state was restored to the start "
            "of the step. Reduce the time step, raise newton/linear iterations, or check the model parameters."
        )

    def __reduce__(self):
        # rebuilt from the worlds, not the message (a process pool pickles it back to the caller)
        return (type(self), (self.worlds,))


#: Warp replays captured graphs on the CPU from 1.13 on, with tiled kernels (the solver's reductions) from 1.14 on
CPU_CAPTURE = tuple(int(p) for p in wp.config.version.split(".")[:2]) >= (1, 14)


#: the block sizes SolverConfig.block_dim takes (0: automatic)
BLOCK_DIMS = (0, 32, 64, 128, 256)
#: the block sizes SolverConfig.solve_block_dim takes (0: block_dim)
SOLVE_BLOCK_DIMS = (*BLOCK_DIMS, 512, 1024)


@dataclass
class SolverConfig:
    """Solver settings (defaults: the paper's fixed budget, 4 Newton × 20 linear iterations per step)."""

    newton_iterations: int = 4
    linear_iterations: int = 20
    #: stop a world's linear solve once its residual fell by this factor (MINRES: preconditioned residual; PCR:
    #: ‖r‖ ≤ linear_tolerance·‖b‖); 0: always run the full budget
    linear_tolerance: float = 0.0
    #: a world whose residual norm is ≤ this [m/s] makes no further Newton updates in the step (0: off)
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
    #: check for non-finite state after every step (one small device→host copy per step)
    check_finite: bool = True
    #: a world whose particle or body speed exceeds this [m/s] (or angular speed 100× it [rad/s]) has diverged even if
    #: its values are still finite (0: off)
    max_speed: float = 100.0
    #: "raise": restore the state and raise SimulationDiverged; "flag": restore only the bad worlds and record them
    on_nonfinite: str = "raise"
    #: replay the step as a captured CUDA graph on GPU devices (one graph launch per step)
    graph_capture: bool = True
    #: also on the CPU, with Warp's CPU capture (Warp >= 1.14; marked experimental by Warp, so off by default; the
    #: environment variable SOFTSNAKE_CPU_CAPTURE=1 turns it on). A step is ~20 launches, so it saves little.
    cpu_graph_capture: bool = field(default_factory=lambda: os.environ.get("SOFTSNAKE_CPU_CAPTURE", "") == "1")
    #: lanes of the thread block that runs one world on a GPU (kernels/block.py; 0: 256); the CPU runs one lane. At
    #: most 256: the stages' registers and the collision stage's shared memory leave no room for more
    block_dim: int = 0
    #: lanes of the block that runs one world's linear solve (the Newton iterations' solve stage; 0: block_dim). Up
    #: to 1024, as the solve takes no large shared tiles; above 256 lanes the stage kernels' registers must be capped
    #: at 65,536 / lanes (SOFTSNAKE_CUDA_MAX_REGISTERS, kernels/block.py), spilling the rest. A GPU experiment: the
    #: solve is ~80 % of a GPU step and bound by one multiprocessor's latency (benchmarks/gpu_check.py, blocks)
    solve_block_dim: int = 0
    #: primal FEM: rows per slice of the linear solve's lane-major layouts (0: automatic, a warp's 32 on a GPU, 1 on
    #: the CPU). Where each lane walks a list of its own (a particle's row of elastic blocks and its coarse nodes, a
    #: coarse dof's or a rigid-body dof's row of a dense inverse), a slice of that many rows stores their j-th
    #: entries side by side, so that a warp's lanes read consecutive addresses; 1 keeps each row's entries together,
    #: as a CPU core reads fastest. A power of two; the step is the same bit for bit at any width
    slice_width: int = 0
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
    #: primal FEM: count each world's clock cycles in the phases of the linear solve and of the other stages since
    #: the solver was built (kernels/saddle.py, SOLVE_PHASES and STEP_PHASES; each phase then ends at a barrier of its
    #: own), read from ``diagnostics().extras["solve_phase_cycles"]`` and ``["step_phase_cycles"]``: where a GPU's
    #: time per iteration and per step goes (benchmarks/profile_step.py)
    phase_timing: bool = False

    def __post_init__(self):
        for name in ("newton_iterations", "linear_iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
        for name in (
            "linear_tolerance",
            "newton_tolerance",
            "warm_start",
            "contact_warm_start",
            "contact_margin",
            "max_speed",
            "fb_min_derivative",
            "fb_smoothing",
            "friction_free_weight",
            "friction_stick_velocity",
        ):
            v = float(getattr(self, name))
            if not np.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number ≥ 0, got {getattr(self, name)!r}")
        if self.fem not in ("primal", "dual"):
            raise ValueError(f"fem must be 'primal' or 'dual', got {self.fem!r}")
        if isinstance(self.block_dim, bool) or self.block_dim not in BLOCK_DIMS:
            raise ValueError(f"block_dim must be 0 (automatic), 32, 64, 128 or 256, got {self.block_dim!r}")
        if isinstance(self.solve_block_dim, bool) or self.solve_block_dim not in SOLVE_BLOCK_DIMS:
            raise ValueError(
                f"solve_block_dim must be 0 (block_dim), 32, 64, 128, 256, 512 or 1024, got {self.solve_block_dim!r}"
            )
        if isinstance(self.slice_width, bool) or self.slice_width not in (0, 1, 2, 4, 8, 16, 32, 64):
            raise ValueError(f"slice_width must be 0 (automatic) or a power of two up to 64, got {self.slice_width!r}")
        if isinstance(self.coarse_cells, bool) or int(self.coarse_cells) != self.coarse_cells or self.coarse_cells < 0:
            raise ValueError(f"coarse_cells must be an integer ≥ 0, got {self.coarse_cells!r}")
        if (
            isinstance(self.coarse_cell_edges, bool)
            or not np.isfinite(float(self.coarse_cell_edges))
            or self.coarse_cell_edges < 1.0
        ):
            raise ValueError(f"coarse_cell_edges must be a finite number ≥ 1, got {self.coarse_cell_edges!r}")
        if self.on_nonfinite not in ("raise", "flag"):
            raise ValueError(f"on_nonfinite must be 'raise' or 'flag', got {self.on_nonfinite!r}")

    @classmethod
    def from_toml(cls, path) -> "SolverConfig":
        """Read a ``[solver]`` table (or top-level keys) from a TOML file."""
        p = Path(path)
        data = read_toml(p, "solver config")
        table = data.get("solver", data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            raise ValueError(f"unknown solver setting(s) in {str(p)!r}: {', '.join(unknown)}")
        return cls(**table)


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

    def __init__(
        self,
        model: Model,
        dt: float = 1.0 / 120.0,
        newton_iterations: int | None = None,
        linear_iterations: int | None = None,
        *,
        config: SolverConfig | None = None,
        **overrides,
    ):
        if not isinstance(model, Model):
            raise ValueError("Solver needs a Model (ModelBuilder.finalize())")
        dt = float(dt)
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be a finite number > 0, got {dt!r}")
        cfg = dataclasses.replace(config or SolverConfig(), **overrides)
        if newton_iterations is not None:
            cfg = dataclasses.replace(cfg, newton_iterations=newton_iterations)
        if linear_iterations is not None:
            cfg = dataclasses.replace(cfg, linear_iterations=linear_iterations)
        self.model = model
        self.dt = dt
        self.config = cfg
        self._graph = None
        self._graph_key = None
        #: lanes of the block that runs one world (kernels/block.py); the CPU runs one lane per block
        # the CPU runs one lane per block, or block_dim lanes as fibers when Warp's cooperative CPU blocks are on
        # (wp.config.enable_cpu_blocks: ~50× slower; tests run the GPU's lane code that way, kernels/block.py)
        cpu_lanes = cfg.block_dim if cfg.block_dim and wp.config.enable_cpu_blocks else 1
        self.block_dim = (cfg.block_dim or 256) if model.device.is_cuda else cpu_lanes
        #: lanes of the block that runs one world's linear solve (SolverConfig.solve_block_dim)
        lanes_allowed = model.device.is_cuda or wp.config.enable_cpu_blocks
        self.solve_block_dim = cfg.solve_block_dim if cfg.solve_block_dim and lanes_allowed else self.block_dim
        cap = STAGE_MODULE_OPTIONS.get("cuda_max_registers", 255)
        if model.device.is_cuda and self.solve_block_dim * cap > 65536:
            raise ValueError(
                f"solve_block_dim = {self.solve_block_dim} lanes of up to {cap} registers each exceed a block's "
                f"65,536: set SOFTSNAKE_CUDA_MAX_REGISTERS={65536 // self.solve_block_dim}"
                " (or less) before importing softsnake"
            )
        if WORLD_BLOCKS > 1 and not (model.device.is_cuda and model.device.arch >= 90):
            raise ValueError(
                f"SOFTSNAKE_WORLD_BLOCKS={WORLD_BLOCKS} spreads a world over a thread-block cluster, which needs a GPU "
                f"of compute capability 9.0 or newer; {model.device} has none: unset it"
            )
        self.data = self._allocate()
        self.diverged_worlds: set[int] = set()
        self._fresh_world = None  # one world's carried arrays as built, for reset_worlds
        self.contact_list = ContactList(self)
        if cfg.fem == "primal" and model.tet_count > 0:
            from .primal import PrimalStep

            self.formulation = PrimalStep(self)
        else:
            from .dual import DualStep

            self.formulation = DualStep(self)

    # ----------------------------------------------------------------- buffers
    def _allocate(self) -> StepData:
        m, dev, W, cfg = self.model, self.model.device, self.model.worlds, self.config
        N, L = cfg.newton_iterations, cfg.linear_iterations
        nrows = W * m.row_count
        np_, nb = W * m.particle_count, W * m.body_count
        rows = lambda: wp.zeros(nrows, dtype=float, device=dev)  # noqa: E731
        s = StepData()
        s.worlds = W
        s.h = self.dt
        s.gravity = m.gravity
        s.max_speed = cfg.max_speed
        s.warm_start = cfg.warm_start
        s.contact_warm_start = cfg.contact_warm_start
        s.newton_iterations = N
        s.linear_iterations = L
        s.linear_tolerance = cfg.linear_tolerance
        s.newton_tolerance = cfg.newton_tolerance
        cs = ContactSettings()
        cs.margin = cfg.contact_margin
        cs.da_min = cfg.fb_min_derivative
        cs.smoothing = cfg.fb_smoothing
        cs.free_weight = cfg.friction_free_weight
        cs.stick_velocity = cfg.friction_stick_velocity
        s.contact = cs
        s.x_start, s.v_start, s.v, s.impulse, s.carried_impulse = (
            wp.zeros(np_, dtype=wp.vec3, device=dev) for _ in range(5)
        )
        s.body_x_start = wp.zeros(nb, dtype=wp.transform, device=dev)
        s.body_v_start, s.body_v, s.body_impulse, s.carried_body_impulse = (
            wp.zeros(nb, dtype=wp.spatial_vector, device=dev) for _ in range(4)
        )
        s.body_momentum = wp.zeros(nb, dtype=wp.vec3, device=dev)
        s.body_inv_inertia = wp.zeros(nb, dtype=wp.mat33, device=dev)
        s.body_chunk_sum = wp.zeros(max(W * m.body_chunks, 1), dtype=wp.spatial_vector, device=dev)
        s.lam, s.dlam, s.rhs, s.diag, s.back = (rows() for _ in range(5))
        s.contact_lam_n_prev = wp.zeros(W * m.contact_count, dtype=float, device=dev)
        s.body_contact_lam_n_prev = wp.zeros(W * m.body_contact_count, dtype=float, device=dev)
        s.particle_body_lam_n_prev = wp.zeros(W * m.particle_body_count, dtype=float, device=dev)
        s.tet_force = wp.zeros(max(4 * W * m.tet_count, 1), dtype=wp.vec3, device=dev)
        jac = Jacobian()
        jac.distance_dir = wp.zeros(W * m.distance_count, dtype=wp.vec3, device=dev)
        jac.tet_rotation = wp.zeros(W * m.tet_count, dtype=wp.mat33, device=dev)
        jac.contact_frame = wp.zeros(W * m.contact_count, dtype=wp.mat33, device=dev)
        jac.row_compliance = rows()
        npb = W * m.particle_body_count
        jac.pb_frame = wp.zeros(npb, dtype=wp.mat33, device=dev)
        jac.pb_arm = wp.zeros(npb, dtype=wp.vec3, device=dev)
        jac.pb_mu = wp.zeros(npb, dtype=wp.vec2, device=dev)
        s.jac = jac  # the contact list's arrays are set by ContactList
        bj = BodyJacobian()
        bj.attachment_arm = wp.zeros(W * m.attachment_count, dtype=wp.vec3, device=dev)
        bj.joint_lin, bj.joint_ang_parent, bj.joint_ang_child = (
            wp.zeros(W * m.joint_count * 6, dtype=wp.vec3, device=dev) for _ in range(3)
        )
        nbc = W * m.body_contact_count
        bj.contact_frame = wp.zeros(nbc, dtype=wp.mat33, device=dev)
        bj.contact_arm_a, bj.contact_arm_b = (wp.zeros(nbc, dtype=wp.vec3, device=dev) for _ in range(2))
        bj.contact_mu = wp.zeros(nbc, dtype=wp.vec2, device=dev)
        bj.contact_point = wp.zeros(nbc, dtype=wp.vec4, device=dev)
        s.bjac = bj
        s.residual_sq = wp.zeros((N + 1) * W, dtype=float, device=dev)
        s.scratch_residual = wp.zeros(W, dtype=float, device=dev)
        s.linear_rr = wp.zeros(N * (L + 1) * W, dtype=float, device=dev)
        s.linear_iters = wp.zeros(N * W, dtype=int, device=dev)
        s.active_contacts = wp.zeros(N * W, dtype=int, device=dev)
        s.line_searches = wp.zeros((N + 1) * W, dtype=int, device=dev)
        s.nonfinite = wp.zeros(W, dtype=int, device=dev)
        # inputs of a call (set by step): a zero force and unit rest-length scales when there is no Control
        self._no_force = wp.zeros(np_, dtype=wp.vec3, device=dev)
        self._unit_scale = wp.ones(W * m.distance_count, dtype=float, device=dev)
        self._no_wrench = wp.zeros(nb, dtype=wp.spatial_vector, device=dev)
        self._built_friction = m.shape_friction()
        return s

    # the step's buffers under their read-back names (diagnostics, checkpoints, tests)
    lam = property(lambda self: self.data.lam)
    rr = property(lambda self: self.data.linear_rr)
    res_sq = property(lambda self: self.data.residual_sq)
    pcr_iters = property(lambda self: self.data.linear_iters)
    active = property(lambda self: self.data.active_contacts)
    nonfinite = property(lambda self: self.data.nonfinite)
    carried_impulse = property(lambda self: self.data.carried_impulse)
    jac = property(lambda self: self.data.jac)

    # ------------------------------------------------------------------- steps
    def step(self, state: State, control: Control | None = None) -> None:
        """Advance ``state`` in place by dt. ``control`` supplies external forces and rest-length scales."""
        m = self.model
        if state.particle_q.shape[0] != m.worlds * m.particle_count:
            raise ValueError("state does not belong to this model (wrong particle count)")
        s = self.data
        s.particle_q, s.particle_qd, s.body_q, s.body_qd = (
            state.particle_q,
            state.particle_qd,
            state.body_q,
            state.body_qd,
        )
        s.particle_f = control.particle_f if control is not None else self._no_force
        s.distance_scale = control.distance_rest_scale if control is not None else self._unit_scale
        s.body_f = control.body_f if control is not None else self._no_wrench
        s.shape_mu = control.shape_mu if control is not None else self._built_friction
        if self._use_graph():
            inputs = (
                s.particle_q,
                s.particle_qd,
                s.body_q,
                s.body_qd,
                s.particle_f,
                s.distance_scale,
                s.body_f,
                s.shape_mu,
            )
            key = tuple(a.ptr for a in inputs)
            if self._graph is None or self._graph_key != key:
                # this step runs eagerly (which also loads the kernel modules); the capture only records the launches
                self._launch_step()
                with wp.ScopedCapture(device=m.device) as cap:
                    self._launch_step()
                self._graph, self._graph_key = cap.graph, key
            else:
                wp.capture_launch(self._graph)
        else:
            self._launch_step()
        self._check_step(state)

    def launch(self, kernel, *inputs, block_dim: int = 0) -> None:
        """One stage: ``kernel`` over the worlds, WORLD_BLOCKS blocks of ``block_dim`` lanes per world (0: the
        solver's)."""
        wp.launch_tiled(
            kernel,
            dim=[self.model.worlds * WORLD_BLOCKS],
            inputs=list(inputs),
            block_dim=block_dim or self.block_dim,
            device=self.model.device,
        )

    def _launch_step(self) -> None:
        """The stages of one step (docs/solver.md, "The step")."""
        m, s, f = self.model, self.data, self.formulation
        self.launch(kstep.predict, m.data, m.body_data, s, int(f.carries_tet_multipliers))  # x⁻, ṽ; λ's start
        if m.row_count > 0:
            self.contact_list.collide()  # the step's contacts: the particle–shape list, every contact's frame
            self.launch(kstep.linearise, f.rows_data, f.attachment_data, m.body_data, s)  # the other rows' Jacobians
            f.warm_start()  # carried impulses applied through this step's Jacobians
            for it in range(self.config.newton_iterations):
                f.assemble(it)  # rows at the iterate, and the line search on the last update
                f.solve(it)  # the linear solve, all its iterations in one launch
                f.update(it)  # v, λ += the update
            f.finish()  # last assembly and line search, cone projection
        self.launch(kstep.finalize, m.data, m.body_data, s)  # x⁺ = x⁻ + h v⁺, finite check

    def _use_graph(self) -> bool:
        cfg, dev = self.config, self.model.device
        if not cfg.graph_capture:
            return False
        if dev.is_cuda:
            return True
        return cfg.cpu_graph_capture and CPU_CAPTURE

    def _check_step(self, state: State) -> None:
        """After a step: a full contact list always raises; non-finite or runaway worlds per ``check_finite``."""
        full = self.contact_list.overflowing_worlds()
        if full:
            self._restore_step_start(state, all_worlds=1)
            raise ContactCapacityExceeded(full, self.model.contact_count)
        if not self.config.check_finite:
            return
        bad = np.nonzero(self.data.nonfinite.numpy())[0]
        if bad.size == 0:
            return
        self._restore_step_start(state, all_worlds=1 if self.config.on_nonfinite == "raise" else 0)
        if self.config.on_nonfinite == "raise":
            raise SimulationDiverged(bad.tolist())
        self.diverged_worlds.update(int(b) for b in bad)

    def _restore_step_start(self, state: State, all_worlds: int) -> None:
        """Positions and velocities back to the start of the step, in every world (all_worlds = 1) or in the worlds
        flagged non-finite; those worlds restart their multipliers cold."""
        m, s = self.model, self.data
        wp.launch(
            kint.restore_particles,
            dim=m.worlds * m.particle_count,
            inputs=[m.particle_count, all_worlds, s.nonfinite, s.x_start, s.v_start],
            outputs=[state.particle_q, state.particle_qd],
            device=m.device,
        )
        wp.launch(
            krigid.restore_bodies,
            dim=m.worlds * m.body_count,
            inputs=[m.body_count, all_worlds, s.nonfinite, s.body_x_start, s.body_v_start],
            outputs=[state.body_q, state.body_qd],
            device=m.device,
        )
        if m.row_count > 0:
            # a rejected world restarts cold; in "flag" mode the other worlds keep their carried multipliers
            wp.launch(
                kint.reset_multipliers,
                dim=m.worlds * m.row_count,
                inputs=[m.row_count, all_worlds, s.nonfinite, s.lam],
                device=m.device,
            )
        s.nonfinite.zero_()

    # ---------------------------------------------------------- checkpoints
    def _carried_arrays(self) -> dict:
        """Solver arrays whose values carry over from one step to the next (start values, friction weights, the
        previous tet rotations); with the State they make a step reproducible bit for bit."""
        s = self.data
        return dict(
            lam=s.lam,
            contact_lam_n_prev=s.contact_lam_n_prev,
            body_contact_lam_n_prev=s.body_contact_lam_n_prev,
            particle_body_lam_n_prev=s.particle_body_lam_n_prev,
            tet_rotation=s.jac.tet_rotation,
            carried_impulse=s.carried_impulse,
            carried_body_impulse=s.carried_body_impulse,
            **self.contact_list.carried_arrays(),
        )

    def carried_state(self) -> dict:
        """Host copies of the carried solver arrays (see :meth:`restore_carried_state`)."""
        return {k: a.numpy().copy() for k, a in self._carried_arrays().items()}

    def restore_carried_state(self, arrays: dict) -> None:
        """Restore what :meth:`carried_state` returned (same model size), e.g. when resuming from a checkpoint."""
        missing = sorted(set(self._carried_arrays()) - set(arrays))
        if missing:
            raise ValueError(f"solver state lacks {', '.join(missing)} (saved by another version of softsnake?)")
        for k, a in self._carried_arrays().items():
            v = np.asarray(arrays[k])
            want = a.numpy().shape
            if v.shape != want:
                raise ValueError(f"solver state {k!r} has shape {v.shape}, this model needs {want}")
            a.assign(v.astype(a.numpy().dtype))

    def reset_worlds(self, worlds) -> None:
        """Give the worlds ``worlds`` (indices) the carried solver state of a freshly built solver (zero multipliers,
        an empty contact list, nothing carried), leaving the other worlds untouched; with their State set back too
        (``Model.reset_worlds``), those worlds then step exactly as in a new model. Device copies only."""
        W = self.model.worlds
        chosen = world_indices(worlds, W)
        if chosen.size == 0:
            return
        carried = self._carried_arrays()
        if self._fresh_world is None:  # one world's carried arrays as built, uploaded once
            self._fresh_world = {
                name: wp.zeros((a.shape[0] // W, *a.shape[1:]), dtype=a.dtype, device=a.device)
                for name, a in carried.items()
            }
            for name in ("contact_particle", "contact_shape"):  # an empty contact list; everything else is zero
                self._fresh_world[name].fill_(-1)
        for name, a in carried.items():
            copy_worlds(a, self._fresh_world[name], chosen, W)
        self.diverged_worlds.difference_update(int(w) for w in chosen)

    # ------------------------------------------------------------- read-backs
    def diagnostics(self) -> StepDiagnostics:
        """Diagnostics of the last step (copies a few small arrays to the host)."""
        W, N, L = self.model.worlds, self.config.newton_iterations, self.config.linear_iterations
        rr = self.rr.numpy().reshape(N, L + 1, W)
        iters = np.minimum(self.pcr_iters.numpy().reshape(N, W), L)
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
        """line_search: (newton, worlds) 1 where the line search halved the update of Newton iteration k (its merit
        grew); and the formulation's own (primal: warm_start_scale, (worlds,) the s kept of the carried bilateral
        multipliers, 1 = all)."""
        W, N = self.model.worlds, self.config.newton_iterations
        searched = self.data.line_searches.numpy().reshape(N + 1, W)[1:].copy()
        return dict(line_search=searched, **self.formulation.diagnostic_extras())

    def contact_impulses(self) -> tuple[np.ndarray, np.ndarray]:
        """Normal impulses (worlds, particles, shapes) [N·s] and friction impulses (worlds, particles, shapes, 2) [N·s]
        (along the shape's tangent axes t1, t2) of the last step."""
        lam = self.contact_list.dense_impulses()
        return lam[..., 2].copy(), lam[..., :2].copy()

    def _family_multipliers(self, name: str) -> np.ndarray:
        """(worlds, elements, rows per element) multipliers of one row family (the row-family table)."""
        m = self.model
        return m.rows.slice(self.lam.numpy().reshape(m.worlds, m.row_count), name).copy()

    def tet_stress(self) -> np.ndarray:
        """Per-tet stress from the multipliers, σ = −λ/(V·h) in Voigt order (tensor shear) [Pa], shape (worlds, tets,
        6).
        """
        vol = self.model.data.tet_volume.numpy()
        return -self._family_multipliers("tet") / (vol[None, :, None] * self.dt)

    def attachment_impulses(self) -> np.ndarray:
        """Attachment reaction impulses (worlds, attachments, 3) [N·s], acting on the body (the particle gets −λ);
        divide by dt for forces."""
        return self._family_multipliers("attachment")

    def joint_impulses(self) -> np.ndarray:
        """Joint row impulses (worlds, joints, 6) [N·s or N·m·s] in the row order of kernels/rigid.py (revolute: anchor
        x, y, z, two alignment rows, drive)."""
        return self._family_multipliers("joint")

    def body_contact_impulses(self) -> tuple[np.ndarray, np.ndarray]:
        """Normal (worlds, features, targets) and friction (…, 2) impulses [N·s] of the body-contact slots."""
        m = self.model
        lam = self._family_multipliers("body_contact").reshape(m.worlds, m.feature_count, m.target_count, 3)
        return lam[..., 2].copy(), lam[..., :2].copy()
