"""The primal-FEM formulation of the Newton step (docs/solver.md; kernels/step_primal.py, kernels/primal.py,
kernels/minres.py, coarse_space.py): its data and the launches of its stages.

Tets are elastic forces of the positions; every other row keeps its multiplier. Each Newton iteration evaluates the rows
and the particles' momentum residual at the iterate and solves the saddle-point system for (Δv, Δλ) with preconditioned
MINRES: particles with the two-level (Jacobi + coarse grid) preconditioner of A = M + h(h+β)K, rows with their Schur
diagonal taken with the particles' effective masses 1/A_pp. Rigid bodies stay eliminated (v_b = ṽ_b + M_b⁻¹J_bᵀλ).
"""

from __future__ import annotations

import numpy as np
import warp as wp

from softsnake.kernels import body_precond as kbp
from softsnake.kernels import minres as kmr
from softsnake.kernels import saddle as ksaddle
from softsnake.kernels import step_body_blocks as kblocks
from softsnake.kernels import step_primal as kstep
from softsnake.kernels.data import ModelData
from softsnake.kernels.stiffness import StiffnessPattern

from .coarse_space import build_coarse_space, connected_labels, lame_parameters
from .lane_layout import sliced_blocks, sliced_rows
from .model import chunk_lists
from .stiffness import block_pattern, sliced_layout


def tet_scaled_lame(data: ModelData, h: float) -> np.ndarray:
    """(T, 2): h(h+β)·V·(λ, μ) per tet [N·s²·m]: the Lamé parameters of the tet's linear-elastic stress (kernels/tet.py,
    tet_stiffness_times) times the implicit-Euler factor and the volume, so that the product's constitutive impulse is
    one multiply-add per row (kernels/stiffness.py, the blocks λ' r_a r_bᵀ + μ'((g_a·g_b) I + r_b r_aᵀ))."""
    lam, mu = lame_parameters(data.tet_youngs.numpy(), data.tet_poisson.numpy())
    scale = h * (h + data.tet_damping.numpy().astype(np.float64)) * data.tet_volume.numpy().astype(np.float64)
    return np.stack([scale * lam, scale * mu], axis=1) if len(lam) else np.zeros((1, 2))


def momentum_body_inv_mass(
    body_start: np.ndarray, body_particles: np.ndarray, mass: np.ndarray, inv_mass: np.ndarray
) -> np.ndarray:
    """(bodies,) 1/Σm [1/kg] of each soft body (CSR body_start/body_particles) whose particles are all free, 0 for a
    body with a kinematic particle (held by it: no uniform correction) — PrimalStep.balance_momentum."""
    out = np.zeros(max(len(body_start) - 1, 1))
    for c in range(len(body_start) - 1):
        ids = np.asarray(body_particles[body_start[c] : body_start[c + 1]])
        if ids.size and np.all(np.asarray(inv_mass)[ids] > 0):
            out[c] = 1.0 / float(np.sum(np.asarray(mass, dtype=np.float64)[ids]))
    return out


def with_inverse_masses(data: ModelData, inv_mass: wp.array) -> ModelData:
    """A copy of ``data`` (the same device arrays) whose particles have the inverse masses ``inv_mass`` [1/kg]. A new
    struct: copy.copy would share the ctypes storage with ``data``."""
    out = ModelData()
    for name in ModelData.vars:
        setattr(out, name, getattr(data, name))
    out.particle_inv_mass = inv_mass
    return out


class PrimalStep:
    """The primal formulation of a :class:`~softsnake.sim.solver.Solver`: warm start, Newton stages and finish."""

    #: the tets' multipliers are not carried from step to step: each assembly sets them from the positions
    carries_tet_multipliers = False

    def __init__(self, solver):
        self.s = solver
        m, dev, W = solver.model, solver.model.device, solver.model.worlds
        n = m.particle_count
        data = m.data
        cs = build_coarse_space(
            rest=m.particle_rest_positions(),
            mass=m.particle_mass,
            inv_mass=m.particle_inv_mass_host,
            tets=m.tet_indices,
            rest_inverse=data.tet_rest_inverse.numpy(),
            volume=data.tet_volume.numpy(),
            youngs=data.tet_youngs.numpy(),
            poisson=data.tet_poisson.numpy(),
            damping=data.tet_damping.numpy(),
            h=solver.dt,
            cells_long_axis=solver.config.coarse_cells,
            long_axis_cell_edges=solver.config.coarse_cell_edges,
        )
        f32 = lambda a: wp.array(np.asarray(a, dtype=np.float32), dtype=float, device=dev)  # noqa: E731
        i32 = lambda a: wp.array(np.asarray(a, dtype=np.int32), dtype=int, device=dev)  # noqa: E731
        vec = lambda: wp.zeros(W * n, dtype=wp.vec3, device=dev)  # noqa: E731
        row = lambda: wp.zeros(W * m.row_count, dtype=float, device=dev)  # noqa: E731
        p = ksaddle.PrimalData()
        # assembly sees the particles' effective inverse masses (Schur diagonals and FB/friction scaling); attachment
        # rows (a particle against a rigid body) the particle's two-level compliance, its body's collective motion
        # included: with the Jacobi mass alone the 25 attachments of a snake link's end face looked ~8× stiffer than
        # they are (docs/solver.md, "Preconditioner")
        self.rows_data = with_inverse_masses(data, f32(cs.eff_inv_mass))
        self.attachment_data = with_inverse_masses(data, f32(cs.two_level_inv_mass))
        p.m_rows = self.rows_data
        p.m_attach = self.attachment_data
        p.mass = f32(np.where(m.particle_inv_mass_host > 0, m.particle_mass, 0.0))
        p.tet_lame = wp.array(tet_scaled_lame(data, solver.dt).astype(np.float32), dtype=wp.vec2, device=dev)
        width = solver.config.slice_width or (32 if dev.is_cuda else 1)
        pattern = sliced_layout(block_pattern(m.tet_indices, n, data.tet_rest_inverse.numpy()), width)
        sp = StiffnessPattern()
        sp.slots_per_world, sp.slice_width = pattern.slot_count, pattern.width
        sp.row_first, sp.row_length, sp.col = i32(pattern.row_first), i32(pattern.row_length), i32(pattern.col)
        sp.contrib_start, sp.contrib = i32(pattern.contrib_start), i32(pattern.contrib)
        sp.contrib_gg = f32(pattern.contrib_gg)
        sp.upper_count, sp.upper, sp.mirror = len(pattern.upper), i32(pattern.upper), i32(pattern.mirror)
        sp.blocks = wp.zeros(9 * max(W * pattern.slot_count, 1), dtype=float, device=dev)
        sp.block_matrices = wp.array(ptr=sp.blocks.ptr, dtype=wp.mat33, shape=(sp.blocks.shape[0] // 9,), device=dev)
        sp.rotated = wp.zeros(max(4 * W * m.tet_count, 1), dtype=wp.vec3, device=dev)
        p.stiffness = sp
        p.slice_width = width
        p.diag_v = f32(cs.diag)
        self.bodies = cs.body_count
        self.nodes = cs.node_count
        p.soft_bodies = self.bodies
        p.nodes = self.nodes
        p.use_coarse = 1 if self.nodes > 0 else 0
        p.body_start = i32(cs.body_particle_start)
        p.body_particles = i32(cs.body_particles)
        # momentum balance: 1/Σm of each soft body without kinematic particles, 0 for the others
        p.body_inv_mass = f32(
            momentum_body_inv_mass(cs.body_particle_start, cs.body_particles, m.particle_mass, m.particle_inv_mass_host)
        )
        p.body_of_particle = i32(cs.body_of_particle)
        p.rest = wp.array(cs.rest.astype(np.float32), dtype=wp.vec3, device=dev)
        p.node_index = i32(sliced_rows(cs.node_index, width, fill=-1))  # (kernels/primal.py, precondition_particle)
        p.node_weight = f32(sliced_rows(cs.node_weight, width))
        p.node_particles = i32(cs.node_particles)
        p.node_weights = f32(cs.node_weights)
        chunk_start, chunk_first, chunk_end = chunk_lists(cs.node_start, m.list_chunk)
        p.node_chunk_start, p.node_chunk_first, p.node_chunk_end = (
            i32(a if a.size else np.zeros(1)) for a in (chunk_start, chunk_first, chunk_end)
        )
        p.node_chunk_sum = wp.zeros(max(W * int(chunk_start[-1]), 1), dtype=wp.vec3, device=dev)
        p.node_body = i32(cs.node_body if self.nodes else np.zeros(1))
        p.node_first = i32(cs.node_first)
        # the coarse solve reads each body's dense inverse and its part of rc as vec4s (blocks of 4·k nodes)
        inverse, inverse_start = sliced_blocks(cs.inverse, cs.inverse_start, width)  # (kernels/primal.py, coarse_solve)
        p.inverse_start = i32(inverse_start)
        p.inverse = wp.array(inverse, dtype=wp.vec4, device=dev)
        p.rotation = wp.zeros(max(W * self.bodies, 1), dtype=wp.mat33, device=dev)
        self._rc = wp.zeros(max(3 * W * self.nodes, 4), dtype=float, device=dev)
        p.rc = self._rc
        p.rc4 = wp.array(ptr=self._rc.ptr, dtype=wp.vec4, shape=(self._rc.shape[0] // 4,), device=dev)  # a view of rc
        p.yc = wp.zeros(max(3 * W * self.nodes, 1), dtype=float, device=dev)
        # the eliminated tet rows; the rows of empty contact slots, after them, are left out per world and step
        # (kernels/saddle.py, saddle_rows)
        assert m.rows["tet"].end <= m.rows["contact"].offset, "saddle_rows needs the tet rows before the contact rows"
        p.skip_start, p.skip_count = m.rows["tet"].offset, m.rows["tet"].rows
        p.v_pred, p.dv, p.mass_xv = vec(), vec(), vec()
        p.g = row()
        # MINRES vectors (particle part, row part)
        for name in ("b", "x", "y", "v", "r1", "r2", "w1", "w2"):
            vec_ = kmr.SaddleVector()
            vec_.v, vec_.l = vec(), row()
            setattr(p, name, vec_)
        self.b = (p.b.v, p.b.l)  # the saddle right-hand side of the last assembly
        self.x = (p.x.v, p.x.l)  # the last linear solve's solution
        p.sc = wp.zeros(W * kmr.SLOTS, dtype=float, device=dev)
        self.sc = p.sc  # the last solve's MINRES recurrence per world (kernels/minres.py SLOTS)
        # scaled warm start: the carried bilateral multipliers, a probe step, the scratch merit and s per world
        bilateral = sum(f.rows for f in m.rows if f.kind == "bilateral")
        cfg = solver.config
        self.scaled_warm_start = cfg.warm_start > 0.0 and cfg.warm_start_scaled and bilateral > 0
        p.warm_scaled = 1 if self.scaled_warm_start else 0
        p.warm_carried, p.warm_step = row(), row()
        p.warm_res = solver.data.scratch_residual
        p.warm_scale = wp.ones(W, dtype=float, device=dev)
        self.warm_scale = p.warm_scale
        p.momentum_balance = 1 if cfg.momentum_balance else 0
        p.phase_timing = 1 if cfg.phase_timing else 0
        phases = len(ksaddle.SOLVE_PHASES) + len(ksaddle.STEP_PHASES)
        p.phase_cycles = wp.zeros(W * phases, dtype=wp.int64, device=dev)
        self.has_bodies = m.body_count > 0
        self._setup_body_blocks(p)
        self.data = p

    def _setup_body_blocks(self, p) -> None:
        """Clusters of bodies that share rows (joints, possible body–body contacts) for the rows' preconditioner."""
        m, dev, W = self.s.model, self.s.model.device, self.s.model.worlds
        nb = m.body_count
        p.body_blocks = 1 if self.has_bodies and self.s.config.body_preconditioner else 0
        bb = kbp.BodyBlocks()
        i32 = lambda a: wp.array(np.asarray(a, dtype=np.int32), dtype=int, device=dev)  # noqa: E731
        cluster = np.zeros(0, dtype=np.int32)
        members: list = []
        if nb > 0:
            bd = m.body_data
            pairs = [(int(a), int(c)) for a, c in zip(bd.joint_parent.numpy(), bd.joint_child.numpy()) if a >= 0]
            if m.body_contact_count > 0 and m.target_count > m.shape_count:
                shape_body = bd.body_shape_body.numpy()
                target_bodies = [int(shape_body[k]) for k in bd.target_body_shape.numpy()]
                pairs += [(int(fb), tb) for fb in set(bd.feature_body.numpy().tolist()) for tb in target_bodies]
            cluster = connected_labels(nb, pairs).astype(np.int32)
            members = [np.nonzero(cluster == c)[0].tolist() for c in range(int(cluster.max()) + 1)]
        slot = np.zeros(nb, dtype=np.int32)
        for mem in members:
            slot[mem] = np.arange(len(mem))
        dofs = np.array([6 * len(mem) for mem in members], dtype=np.int32)
        offset = np.concatenate([[0], np.cumsum(dofs.astype(np.int64) ** 2)]).astype(np.int32)
        bb.body_cluster = i32(cluster)
        bb.body_slot = i32(slot)
        bb.cluster_dofs = i32(dofs)
        bb.cluster_offset = i32(offset[:-1])
        bb.cluster_bodies_start = i32(np.concatenate([[0], np.cumsum([len(mm) for mm in members])]))
        bb.cluster_bodies = i32(np.concatenate(members) if members else np.zeros(0))
        bb.block_size = int(offset[-1])
        bb.clusters = len(members)
        bb.max_dofs = int(dofs.max(initial=0))
        bb.floor = 1.0e-3
        p.bb = bb
        size = max(W * bb.block_size, 1)
        p.H, p.H_inv = (wp.zeros(size, dtype=wp.float64, device=dev) for _ in range(2))
        # with slices the factor writes H⁻¹ lane-major too, and the preconditioner reads that; without, H⁻¹ itself
        # (kernels/body_precond.py)
        p.H_inv_lanes = wp.zeros(size, dtype=wp.float64, device=dev) if p.slice_width > 1 else p.H_inv
        p.H_jitter = wp.zeros(max(W * bb.clusters, 1), dtype=wp.float64, device=dev)
        p.H_chunk = wp.zeros(max(W * m.body_chunks * 6 * bb.max_dofs, 1), dtype=wp.float64, device=dev)
        p.y_body = wp.zeros(max(6 * W * nb, 1), dtype=float, device=dev)
        nr = W * m.row_count
        # u_rows: the body gathers write the same rows (those acting on a body) every time; the others stay 0
        p.row_d, p.t_rows, p.u_rows, p.zero_rows = (wp.zeros(nr, dtype=float, device=dev) for _ in range(4))
        p.zero_particles = wp.zeros(W * m.particle_count, dtype=wp.vec3, device=dev)
        p.f_body = wp.zeros(max(W * nb, 1), dtype=wp.spatial_vector, device=dev)
        p.imp_body = wp.zeros(max(W * nb, 1), dtype=wp.spatial_vector, device=dev)

    # ------------------------------------------------------------- stages
    def _stage(self, kernel, *extra, block_dim: int = 0) -> None:
        s = self.s
        s.launch(kernel, s.model.data, s.model.body_data, s.data, self.data, *extra, block_dim=block_dim)

    def warm_start(self) -> None:
        """v = v⁻, the carried impulses, the soft bodies' rotations, the scaled warm start (kernels/step_primal.py)."""
        self._stage(kstep.warm_start)

    def assemble(self, it: int) -> None:
        """Rows and saddle right-hand side at the iterate; the line search on the last update (it > 0); with rigid
        bodies, the rows' preconditioner factorised at those rows."""
        self._stage(kstep.newton_assemble, it)
        if self.data.body_blocks:
            self._stage(kblocks.factor_body_blocks)

    def solve(self, it: int, iterations: int | None = None) -> None:
        """MINRES, ``iterations`` (default: the budget) in one launch."""
        s = self.s
        n = s.config.linear_iterations if iterations is None else int(iterations)
        self._stage(kstep.newton_solve, it, n, block_dim=s.solve_block_dim)

    def update(self, it: int) -> None:
        """v += Δv, λ += Δλ (bodies through J_bᵀΔλ); the in-loop friction cone projection."""
        self._stage(kstep.newton_update, it)

    def finish(self) -> None:
        """Last assembly and line search, momentum balance, cone projection carried to the next step."""
        self._stage(kstep.finish)

    def diagnostic_extras(self) -> dict:
        extras = {}
        if self.scaled_warm_start:
            extras["warm_start_scale"] = self.warm_scale.numpy().copy()
        if self.data.phase_timing:
            cycles = self.data.phase_cycles.numpy().reshape(self.s.model.worlds, -1).T.copy()
            solve = len(ksaddle.SOLVE_PHASES)
            extras["solve_phase_cycles"] = dict(zip(ksaddle.SOLVE_PHASES, cycles[:solve]))
            extras["step_phase_cycles"] = dict(zip(ksaddle.STEP_PHASES, cycles[solve:]))
        return extras

    # ------------------------------------------------------------- operators
    def _saddle(self, v: wp.array, l: wp.array) -> kmr.SaddleVector:
        out = kmr.SaddleVector()
        out.v, out.l = v, l
        return out

    def matvec(self, xv: wp.array, xl: wp.array, yv: wp.array, yl: wp.array, negate_rows: bool = True) -> None:
        """(yv, yl) = [[A, −J_pᵀ], [−J_p, −S]] (xv, xl) at the current rows, every world (one launch)."""
        self._stage(kstep.saddle_product, self._saddle(xv, xl), 1 if negate_rows else 0, self._saddle(yv, yl))

    def precondition(self, rv: wp.array, rl: wp.array, zv: wp.array, zl: wp.array) -> None:
        """(zv, zl) = blockdiag(two-level A⁻¹ approximation, rows' preconditioner) (rv, rl), every world (one
        launch)."""
        self._stage(kstep.saddle_preconditioner, self._saddle(rv, rl), self._saddle(zv, zl))

    def dense(self, apply) -> tuple[np.ndarray, np.ndarray]:
        """The matrix of a linear map on (particle vec3, row) pairs, such as ``matvec`` or ``precondition``, over the
        saddle system's unknowns (particle dofs, then its rows: not the eliminated tet rows, not the rows of the contact
        slots this step left empty) of a one-world model, and their positions in the flattened (3·particles + rows)
        vector. One application per unknown: for diagnostics and
        tests."""
        m = self.s.model
        if m.worlds != 1:
            raise ValueError(f"dense() takes a one-world model, this one has {m.worlds}")
        n, R = m.particle_count, m.row_count
        keep = np.ones(R, dtype=bool)
        tet, contact = m.rows["tet"], m.rows["contact"]
        keep[tet.offset : tet.end] = False  # the eliminated tet rows
        used = int(self.s.contact_list.slots_used()[0])
        keep[contact.offset + contact.rows_per_element * used : contact.end] = False  # empty slots (saddle_rows)
        index = np.concatenate([np.arange(3 * n), 3 * n + np.nonzero(keep)[0]])
        xv, yv = (wp.zeros(n, dtype=wp.vec3, device=m.device) for _ in range(2))
        xl, yl = (wp.zeros(R, dtype=float, device=m.device) for _ in range(2))
        cols = []
        for j in index:
            e = np.zeros(3 * n + R, dtype=np.float32)
            e[j] = 1.0
            xv.assign(e[: 3 * n].reshape(n, 3))
            xl.assign(e[3 * n :])
            apply(xv, xl, yv, yl)
            cols.append(np.concatenate([yv.numpy().ravel(), yl.numpy()])[index])
        return np.array(cols, dtype=np.float64).T, index  # float64: a solve with it in NumPy keeps its precision
