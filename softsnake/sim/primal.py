"""The primal-FEM Newton step (docs/solver.md; kernels/primal.py, kernels/minres.py, coarse_space.py).

Tets are elastic forces of the positions; every other row keeps its multiplier. Each Newton iteration evaluates the rows
and the particles' momentum residual at the iterate and solves the saddle-point system for (Δv, Δλ) with preconditioned
MINRES: particles with the two-level (Jacobi + coarse grid) preconditioner of A = M + h(h+β)K, rows with their Schur
diagonal taken with the particles' effective masses 1/A_pp. Rigid bodies stay eliminated (v_b = ṽ_b + M_b⁻¹J_bᵀλ).
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import warp as wp

from softsnake.kernels import block_sums as kbs
from softsnake.kernels import body_precond as kbp
from softsnake.kernels import minres as kmr
from softsnake.kernels import pcr as kpcr
from softsnake.kernels import primal as kp
from softsnake.kernels import rigid as krigid
from softsnake.kernels.data import ModelData

from .coarse_space import build_coarse_space, connected_labels, lame_parameters


def tet_scaled_lame(data: ModelData, h: float) -> np.ndarray:
    """(T, 2): h(h+β)·V·(λ, μ) per tet [N·s²·m]: the Lamé parameters of the tet's linear-elastic stress (kernels/tet.py,
    tet_stiffness_times) times the implicit-Euler factor and the volume, so that the product's constitutive impulse is
    one multiply-add per row (kernels/primal.py, tet_stiffness_product)."""
    lam, mu = lame_parameters(data.tet_youngs.numpy(), data.tet_poisson.numpy())
    scale = h * (h + data.tet_damping.numpy().astype(np.float64)) * data.tet_volume.numpy().astype(np.float64)
    return np.stack([scale * lam, scale * mu], axis=1) if len(lam) else np.zeros((1, 2))


def momentum_body_inv_mass(body_start: np.ndarray, body_particles: np.ndarray, mass: np.ndarray, inv_mass: np.ndarray) -> np.ndarray:
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


@contextmanager
def recorded_launches():
    """Run a block of Warp launches while recording each as a replayable command (``record_cmd=True``); yields the
    list of zero-argument callables that repeat the block. The block runs as usual; only ``wp.launch`` /
    ``wp.launch_tiled`` calls are recorded, so it must contain nothing else that matters."""
    ops: list = []
    real_launch, real_tiled = wp.launch, wp.launch_tiled

    def record(cmd) -> None:
        if cmd is not None:  # None: an empty launch (dim 0), nothing to run
            cmd.launch()
            ops.append(cmd.launch)

    def launch(*args, **kwargs):
        record(real_launch(*args, record_cmd=True, **kwargs))

    def launch_tiled(*args, **kwargs):
        record(real_tiled(*args, record_cmd=True, **kwargs))

    wp.launch, wp.launch_tiled = launch, launch_tiled
    try:
        yield ops
    finally:
        wp.launch, wp.launch_tiled = real_launch, real_tiled


class PrimalStep:
    """Buffers and launches of the primal-FEM step of a :class:`~softsnake.sim.solver.Solver`."""

    #: record one MINRES iteration's launches on the CPU and replay them (benchmarks/profile_step.py turns it off to
    #: see the launches)
    record_iterations = True

    def __init__(self, solver):
        self.s = solver
        m, dev, W = solver.model, solver.model.device, solver.model.worlds
        n = m.particle_count
        data = m.data
        cs = build_coarse_space(
            rest=m._q0[:n],
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
        self.mass = f32(np.where(m.particle_inv_mass_host > 0, m.particle_mass, 0.0))
        self.tet_lame = wp.array(tet_scaled_lame(data, solver.dt).astype(np.float32), dtype=wp.vec2, device=dev)
        self.diag_v = f32(cs.diag)
        # assembly sees the particles' effective inverse masses (Schur diagonals and FB/friction scaling)
        self.data_eff = with_inverse_masses(data, f32(cs.eff_inv_mass))
        # attachment rows (a particle against a rigid body) are preconditioned with the particle's two-level
        # compliance, its body's collective motion included: with the Jacobi mass alone the 25 attachments of a snake
        # link's end face looked ~8× stiffer than they are (docs/solver.md, "Preconditioner")
        self.data_attach = with_inverse_masses(data, f32(cs.two_level_inv_mass))
        self.bodies = cs.body_count
        self.nodes = cs.node_count
        self.use_coarse = 1 if self.nodes > 0 else 0
        self.body_start = i32(cs.body_particle_start)
        self.body_particles = i32(cs.body_particles)
        # momentum balance (balance_momentum): 1/Σm of each soft body without kinematic particles, 0 for the others
        self.body_inv_mass = f32(momentum_body_inv_mass(cs.body_particle_start, cs.body_particles, m.particle_mass, m.particle_inv_mass_host))
        self.body_of_particle = i32(cs.body_of_particle)
        self.rest = wp.array(cs.rest.astype(np.float32), dtype=wp.vec3, device=dev)
        self.node_index = i32(cs.node_index.ravel())
        self.node_weight = f32(cs.node_weight.ravel())
        self.node_start = i32(cs.node_start)
        self.node_particles = i32(cs.node_particles)
        self.node_weights = f32(cs.node_weights)
        self.node_body = i32(cs.node_body if self.nodes else np.zeros(1))
        self.node_first = i32(cs.node_first)
        # the coarse solve reads each body's dense inverse and its part of rc as vec4s (blocks of 4·k nodes)
        self.inverse_start = i32(cs.inverse_start // 4)
        self.inverse = wp.array(np.asarray(cs.inverse if cs.inverse.size else np.zeros(4), dtype=np.float32).reshape(-1, 4), dtype=wp.vec4, device=dev)
        self.rotation = wp.zeros(max(W * self.bodies, 1), dtype=wp.mat33, device=dev)
        self.rc = wp.zeros(max(3 * W * self.nodes, 4), dtype=float, device=dev)
        self.rc4 = wp.array(ptr=self.rc.ptr, dtype=wp.vec4, shape=(self.rc.shape[0] // 4,), device=dev)  # a view of rc
        self.yc = wp.zeros(max(3 * W * self.nodes, 1), dtype=float, device=dev)
        npw, nr = W * n, W * m.row_count
        vec = lambda: wp.zeros(npw, dtype=wp.vec3, device=dev)  # noqa: E731
        row = lambda: wp.zeros(nr, dtype=float, device=dev)  # noqa: E731
        self.v_pred, self.dv, self.mass_xv = vec(), vec(), vec()
        # MINRES vectors (particle part, row part)
        self.b = (vec(), row())
        self.x = (vec(), row())
        self.y = (vec(), row())
        self.v = (vec(), row())
        self.r1 = (vec(), row())
        self.r2 = (vec(), row())
        self.w = (vec(), row())
        self.w2 = (vec(), row())
        self.tet_force = wp.zeros(4 * W * m.tet_count, dtype=wp.vec3, device=dev)  # −J_tᵀC_t⁻¹J_t xv per tet vertex
        self.g = row()  # gathered rows
        self.sc = wp.zeros(W * kmr.SLOTS, dtype=float, device=dev)
        self.alfa = wp.zeros(W, dtype=float, device=dev)
        self.skip = (m.distance_count, 6 * m.tet_count)
        self.free_rows = m.row_count - 6 * m.tet_count  # rows per world that keep a multiplier
        self._iteration_ops = None  # one MINRES iteration's recorded launches (CPU), made by the first solve
        # scaled warm start (scale_warm_start): the carried bilateral multipliers, a probe step, the first merits at
        # s = 1, ½, 0 and the chosen s per world
        bilateral = m.contact_row_start - 6 * m.tet_count + m.body_contact_row_start - m.contact_row_end
        self.scaled_warm_start = solver.config.warm_start > 0.0 and solver.config.warm_start_scaled and bilateral > 0
        if self.scaled_warm_start:
            self.warm_carried, self.warm_step = row(), row()
            self.warm_merit = wp.zeros(3 * W, dtype=float, device=dev)
            self.warm_res = wp.zeros(W, dtype=float, device=dev)  # the assembly's merit (atomic sums), not used
            self.warm_scale = wp.ones(W, dtype=float, device=dev)
        self._setup_body_blocks()

    def _setup_body_blocks(self) -> None:
        """Clusters of bodies that share rows (joints, possible body–body contacts) for the rows' preconditioner."""
        s, m, dev, W = self.s, self.s.model, self.s.model.device, self.s.model.worlds
        nb = m.body_count
        self.has_bodies = nb > 0
        if not self.has_bodies:
            return
        bd = m.body_data
        pairs = [(int(p), int(c)) for p, c in zip(bd.joint_parent.numpy(), bd.joint_child.numpy()) if p >= 0]
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
        bb = kbp.BodyBlocks()
        i32 = lambda a: wp.array(np.asarray(a, dtype=np.int32), dtype=int, device=dev)  # noqa: E731
        bb.body_cluster = i32(cluster)
        bb.body_slot = i32(slot)
        bb.cluster_dofs = i32(dofs)
        bb.cluster_offset = i32(offset[:-1])
        bb.cluster_bodies_start = i32(np.concatenate([[0], np.cumsum([len(mm) for mm in members])]))
        bb.cluster_bodies = i32(np.concatenate(members))
        bb.block_size = int(offset[-1])
        bb.floor = 1.0e-3
        self.bb = bb
        self.clusters = len(members)
        self.H = wp.zeros(W * bb.block_size, dtype=wp.float64, device=dev)
        self.H_work = wp.zeros(W * bb.block_size, dtype=wp.float64, device=dev)
        nr = W * m.row_count
        # u_rows: the body gathers write the same rows (those acting on a body) every time; the others stay 0
        self.row_d, self.t_rows, self.u_rows, self.zero_rows = (wp.zeros(nr, dtype=float, device=dev) for _ in range(4))
        self.zero_particles = wp.zeros(W * m.particle_count, dtype=wp.vec3, device=dev)
        self.f_body = wp.zeros(W * nb, dtype=wp.spatial_vector, device=dev)
        self.imp_body = wp.zeros(W * nb, dtype=wp.spatial_vector, device=dev)

    def _factor_body_blocks(self) -> None:
        """H = M_b + J_bᵀ D⁻¹ J_b per cluster at the current rows, and its Cholesky factors."""
        s, m, dev, W = self.s, self.s.model, self.s.model.device, self.s.model.worlds
        args = [self.bb, s.dt, s.body_x_start, s.body_v]
        self.H.zero_()
        wp.copy(self.row_d, s.diag)
        wp.launch(kbp.body_mass_blocks, dim=W * m.body_count, inputs=[m.body_data, *args, self.H], device=dev)
        if m.attachment_count + m.joint_count > 0:
            wp.launch(kbp.attachment_and_joint_blocks, dim=W * (m.attachment_count + m.joint_count), inputs=[m.data, m.body_data, s.bjac, *args, s.diag, self.row_d, self.H], device=dev)
        if m.body_contact_count > 0:
            wp.launch(kbp.body_contact_blocks, dim=W * m.body_contact_count, inputs=[m.data, m.body_data, s.bjac, *args, s.diag, self.row_d, self.H], device=dev)
        if m.particle_body_count > 0:
            wp.launch(kbp.particle_body_blocks, dim=W * m.particle_body_count, inputs=[m.data, m.body_data, s.jac, *args, s.diag, self.row_d, self.H], device=dev)
        wp.launch(kbp.cluster_cholesky, dim=W * self.clusters, inputs=[self.bb, self.clusters, self.H], device=dev)

    def _precondition_body_rows(self, rl: wp.array, zl: wp.array) -> None:
        """zl = (D + J_b M_b⁻¹ J_bᵀ)⁻¹ rl by the Woodbury identity (kernels/body_precond.py)."""
        s, m, dev, W = self.s, self.s.model, self.s.model.device, self.s.model.worlds
        # t = D⁻¹ r is needed only on the rows that act on bodies, the last block of each world [contact_row_end, R)
        body_rows = m.row_count - m.contact_row_end
        wp.launch(kp.precondition_rows, dim=W * body_rows, inputs=[m.row_count, 0, m.contact_row_end, self.row_d, rl, self.t_rows], device=dev)
        s._scatter_bodies(self.t_rows, self.f_body)
        wp.launch(kbp.cluster_solve, dim=W * self.clusters, inputs=[m.body_data, self.bb, self.clusters, s.dt, s.body_x_start, s.body_v, self.H, self.f_body, self.H_work], outputs=[self.imp_body], device=dev)
        s._gather(self.zero_particles, self.imp_body, self.zero_rows, self.u_rows, particle_rows=False)
        wp.launch(kbp.woodbury_rows, dim=W * self.free_rows, inputs=[m.row_count, *self.skip, rl, self.u_rows, self.row_d, zl], device=dev)

    # ------------------------------------------------------------- operators
    def matvec(self, xv: wp.array, xl: wp.array, yv: wp.array, yl: wp.array, negate_rows: bool = True) -> None:
        """(yv, yl) = [[A, −J_pᵀ], [−J_p, −S]] (xv, xl); with ``negate_rows = False`` yl gets the row part's negative,
        J_p xv + S xl (MINRES folds the sign into its Lanczos step and saves a launch)."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        W = m.worlds
        wp.launch(kp.tet_stiffness_product, dim=W * m.tet_count, inputs=[m.data, s.jac, self.tet_lame, xv], outputs=[self.tet_force], device=dev)
        wp.launch(kp.particle_system_top, dim=W * m.particle_count, inputs=[m.data, s.jac, self.mass, xv, xl, self.tet_force], outputs=[yv, self.mass_xv], device=dev)
        if m.body_count > 0:
            s._scatter_bodies(xl, s.body_impulse)  # J_bᵀ xl
        if negate_rows:
            s._gather(self.mass_xv, s.body_impulse, xl, self.g, skip_tets=1)
            wp.launch(kp.negate_rows, dim=W * self.free_rows, inputs=[m.row_count, *self.skip, self.g, yl], device=dev)
        else:
            s._gather(self.mass_xv, s.body_impulse, xl, yl, skip_tets=1)

    def fit_rotations(self) -> None:
        s, m = self.s, self.s.model
        if self.use_coarse:
            wp.launch(
                kp.fit_body_rotation,
                dim=m.worlds * self.bodies,
                inputs=[m.particle_count, self.bodies, self.body_start, self.body_particles, self.mass, self.rest, s.x_start],
                outputs=[self.rotation],
                device=m.device,
            )

    def precondition(self, rv: wp.array, rl: wp.array, zv: wp.array, zl: wp.array) -> None:
        """(zv, zl) = blockdiag(two-level A⁻¹ approximation, Schur diagonal⁻¹) (rv, rl)."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        W, n = m.worlds, m.particle_count
        if self.use_coarse:
            wp.launch_tiled(
                kbs.coarse_restrict,
                dim=[W * self.nodes],
                inputs=[n, self.nodes, self.bodies, self.node_start, self.node_particles, self.node_weights, self.node_body, self.rotation, rv],
                outputs=[self.rc],
                block_dim=s.sum_block_dim,
                device=dev,
            )
            wp.launch(kp.coarse_solve, dim=3 * W * self.nodes, inputs=[self.nodes, self.node_body, self.node_first, self.inverse_start, self.inverse, self.rc4], outputs=[self.yc], device=dev)
        wp.launch(
            kp.precondition_particles,
            dim=W * n,
            inputs=[n, self.nodes, self.bodies, self.diag_v, self.body_of_particle, self.node_index, self.node_weight, self.rotation, self.use_coarse, self.yc, rv],
            outputs=[zv],
            device=dev,
        )
        if self.has_bodies and self.s.config.body_preconditioner:
            self._precondition_body_rows(rl, zl)
        else:
            wp.launch(kp.precondition_rows, dim=W * self.free_rows, inputs=[m.row_count, *self.skip, s.diag, rl, zl], device=dev)

    def dense(self, apply) -> tuple[np.ndarray, np.ndarray]:
        """The matrix of a linear map on (particle vec3, row) pairs, such as ``matvec`` or ``precondition``, over the
        saddle system's unknowns (particle dofs, then the rows that keep a multiplier) of a one-world model, and their
        positions in the flattened (3·particles + rows) vector. One application per unknown: for diagnostics and
        tests (benchmarks/saddle_residual.py, tests/test_primal.py)."""
        m = self.s.model
        if m.worlds != 1:
            raise ValueError(f"dense() takes a one-world model, this one has {m.worlds}")
        n, R = m.particle_count, m.row_count
        keep = np.ones(R, dtype=bool)
        keep[self.skip[0] : self.skip[0] + self.skip[1]] = False  # the eliminated tet rows
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

    # ------------------------------------------------------------- Newton
    def assemble(self, it: int, scale: wp.array, residual: wp.array) -> None:
        """Rows at the iterate (tets: constitutive impulses) and the particles' momentum residual; residual[w] gets
        Σφ² + Σ|r_v/A_pp|² [m²/s²] and (self.b) the saddle right-hand side."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        s._assemble(it, scale, residual)
        s._scatter(s.lam, s._tet_force)
        wp.launch_tiled(kp.particle_residual, dim=[m.worlds], inputs=[m.particle_count, self.mass, self.diag_v, s.v, self.v_pred, s.impulse], outputs=[self.b[0], residual], block_dim=s.block_dim, device=dev)
        wp.launch(kp.negate_rows, dim=m.worlds * self.free_rows, inputs=[m.row_count, *self.skip, s.rhs, self.b[1]], device=dev)

    def solve(self, iterations: int, it: int = 0) -> None:
        """MINRES on the saddle system; the solution lands in self.x. With SolverConfig.linear_tolerance > 0 a CPU run
        stops once the preconditioned residual of every world fell by that factor."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        W, n, R = m.worlds, m.particle_count, m.row_count
        bd = s.block_dim
        tol = s.config.linear_tolerance
        self.precondition(*self.b, *self.y)
        wp.launch_tiled(kmr.minres_start, dim=[W], inputs=[n, R, *self.skip, *self.b, *self.y, *self.x, *self.r1, *self.r2, *self.w, *self.w2, *self.v, self.sc], block_dim=bd, device=dev)
        done = iterations
        for k in range(iterations):
            if self._iteration_ops is not None:
                for op in self._iteration_ops:  # the recorded launches of one iteration (CPU, eager step)
                    op()
            elif dev.is_cuda or not self.record_iterations:
                self._minres_iteration()  # a CUDA step is replayed as a graph anyway
            else:
                # The launches of one iteration take the same arguments every time (persistent arrays, no
                # iteration index), so they are recorded once (warp.launch(record_cmd=True)) and replayed: that
                # skips most of Python's ~10 µs per launch, ~1,000–1,600 launches per step (docs/solver.md).
                with recorded_launches() as ops:
                    self._minres_iteration()
                self._iteration_ops = ops
            if tol > 0.0 and not dev.is_cuda:
                # on the CPU device arrays are host memory: stop once every world's residual estimate is below tol
                sc = self.sc.numpy().reshape(W, kmr.SLOTS)
                if np.all(sc[:, kmr.PHIBAR] <= tol * sc[:, kmr.BETA1]):
                    done = k + 1
                    break
        wp.launch(kmr.minres_record, dim=W, inputs=[self.sc, done, s._rr[it], s._iters[it]], device=dev)

    def _minres_iteration(self) -> None:
        """One MINRES iteration: two vector launches besides the product and the preconditioner (after y = A v, its
        row part negated, the Lanczos step; after y = P r2 the Givens update, the solution step and the next v)."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        W, n, R, bd = m.worlds, m.particle_count, m.row_count, s.block_dim
        self.matvec(*self.v, *self.y, negate_rows=False)
        wp.launch_tiled(kmr.minres_lanczos, dim=[W], inputs=[n, R, *self.skip, -1.0, self.sc, *self.v, *self.y, *self.r1, *self.r2, self.alfa], block_dim=bd, device=dev)
        self.precondition(*self.r2, *self.y)
        wp.launch_tiled(kmr.minres_update, dim=[W], inputs=[n, R, *self.skip, self.alfa, self.sc, *self.r2, *self.y, *self.v, *self.w, *self.w2, *self.x], block_dim=bd, device=dev)

    def apply_update(self, it: int) -> None:
        """v += Δv, λ += Δλ and the bodies' velocities through M_b⁻¹J_bᵀΔλ (Δ in self.x; kept in s.dlam/self.dv);
        worlds already below ``newton_tolerance`` keep their iterate."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        wp.copy(self.dv, self.x[0])
        wp.copy(s.dlam, self.x[1])
        tol = s.config.newton_tolerance
        if tol > 0.0:
            wp.launch(kp.zero_converged_velocity, dim=m.worlds * m.particle_count, inputs=[m.particle_count, tol * tol, s._res[it], self.dv], device=dev)
            wp.launch(kpcr.zero_converged, dim=m.worlds * m.row_count, inputs=[m.row_count, tol * tol, s._res[it], s.dlam], device=dev)
        wp.launch(kp.add_velocity, dim=m.worlds * m.particle_count, inputs=[self.dv, s.v], device=dev)
        wp.launch(kpcr.add_to, dim=m.worlds * m.row_count, inputs=[s.dlam, s.lam], device=dev)
        # particle friction back onto its cone inside the iteration, the change part of Δλ; no particle is kicked: the
        # next solve balances the change through the whole body. (Contacts on rigid bodies are projected once, after
        # the last iteration: projected in the loop, a wheel's tiny spin inertia turns each change into a spin kick
        # that the next iteration undoes, and the iteration oscillates.)
        if it < s.config.newton_iterations - 1:
            s._project_cones(it, bodies=False)
        self.apply_bodies(s.dlam)

    def project_cones(self, it: int) -> None:
        """After the last iteration, which has no solve after it to balance a projection: the friction impulses are
        projected onto their cones (exact bound on λ), and the change JᵀΔλ (particles and rigid bodies) is carried into
        the next step's prediction (particles in ``start_velocities``, bodies at the start of ``launch_step``) instead
        of kicking single particles or a light wheel with its own mass, so the implicit solve balances it through the
        whole structure and momentum stays consistent over the two steps."""
        s, m = self.s, self.s.model
        s.dlam.zero_()
        s._project_cones(it)
        if m.body_count > 0:
            s._scatter_bodies(s.dlam, s.carried_body_impulse)
        if m.contact_count + m.particle_body_count > 0:
            s._scatter(s.dlam)  # s.impulse = JᵀΔλ per particle (only friction rows are non-zero)
            wp.copy(s.carried_impulse, s.impulse)

    def apply_bodies(self, x: wp.array) -> None:
        s, m = self.s, self.s.model
        if m.body_count > 0:
            s._scatter_bodies(x, s.body_impulse)
            wp.launch(krigid.apply_body_impulses, dim=m.worlds * m.body_count, inputs=[m.body_count, m.body_data, s.body_x_start, s.dt, s.body_impulse, s.body_momentum, s.body_v], device=m.device)

    def backtrack(self, it: int, scale: wp.array) -> None:
        """Halve the last update in worlds whose merit grew, then re-evaluate (skipped where nothing would change,
        Solver.line_search_idle)."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        if s.line_search_idle(it):
            return
        nrows = m.worlds * m.row_count
        wp.launch(kpcr.backtrack_grown, dim=nrows, inputs=[m.row_count, s._res[it], s._res[it - 1], s.dlam], outputs=[s.r], device=dev)
        wp.launch(kpcr.add_to, dim=nrows, inputs=[s.r, s.lam], device=dev)
        self.apply_bodies(s.r)
        wp.launch(kp.backtrack_velocity, dim=m.worlds * m.particle_count, inputs=[m.particle_count, s._res[it], s._res[it - 1], self.dv, s.v], device=dev)
        s._res[it].zero_()
        self.assemble(min(it, s.config.newton_iterations - 1), scale, s._res[it])

    def scale_warm_start(self, scale: wp.array) -> None:
        """The carried bilateral multipliers are kept as s·λ with the s ∈ [0, 1] that minimises the first Newton
        residual of each world (SolverConfig.warm_start_scaled; the dual step does the same through its matrix-free
        product). A reapplied multiplier also reapplies the previous step's truncated-solve error; carried unscaled,
        that error can build up from step to step: the coarse snake at 8 Newton × 20 MINRES grew a velocity mode of
        one link by 15–60 % per frame over 0.2 s and diverged 13.85 s into the gait (docs/solver.md, "Warm start").
        The residual (kernels/primal.py, warm_start_merit: particles and bilateral rows, summed in a fixed order so
        that a GPU's atomics do not move s) is evaluated at s = 1, ½ and 0, two probe steps of −½λ, each through the
        bodies too, and s is the minimum of the parabola through the three, decided per world on the device. Contact
        multipliers are carried as they are."""
        s, m, dev = self.s, self.s.model, self.s.model.device
        W, R = m.worlds, m.row_count
        rows = [R, *self.skip, m.contact_row_start, m.contact_row_end, m.body_contact_row_start]
        wp.launch(kp.bilateral_part, dim=W * R, inputs=[*rows, 1.0, s.lam], outputs=[self.warm_carried], device=dev)
        wp.launch(kp.bilateral_part, dim=W * R, inputs=[*rows, -0.5, s.lam], outputs=[self.warm_step], device=dev)
        merit = [self.warm_merit[k * W : (k + 1) * W] for k in range(3)]  # s = 1, ½, 0
        self.warm_merit.zero_()
        for k in range(3):
            if k > 0:
                wp.launch(kpcr.add_to, dim=W * R, inputs=[self.warm_step, s.lam], device=dev)
                self.apply_bodies(self.warm_step)
            self.assemble(0, scale, self.warm_res)
            wp.launch_tiled(kp.warm_start_merit, dim=[W], inputs=[m.particle_count, R, *self.skip, m.contact_row_start, m.contact_row_end, m.body_contact_row_start, self.diag_v, *self.b], outputs=[merit[k]], block_dim=s.block_dim, device=dev)
        # λ's bilateral rows are now 0 (exactly: two halves of each): add s·λ_carried
        wp.launch(kp.warm_start_parabola, dim=W * R, inputs=[R, *merit, self.warm_carried], outputs=[self.warm_step, self.warm_scale], device=dev)
        wp.launch(kpcr.add_to, dim=W * R, inputs=[self.warm_step, s.lam], device=dev)
        self.apply_bodies(self.warm_step)

    def balance_momentum(self) -> None:
        """Each free soft body's uniform velocity change that removes its net momentum residual (self.b[0], the last
        assembly's Jᵀλ − M(v − ṽ)): the truncated solve's spurious net impulse (SolverConfig.momentum_balance,
        kernels/block_sums.py balance_body_momentum)."""
        s, m = self.s, self.s.model
        if self.bodies == 0 or not s.config.momentum_balance:
            return
        wp.launch_tiled(
            kbs.balance_body_momentum,
            dim=[m.worlds * self.bodies],
            inputs=[m.particle_count, self.bodies, self.body_start, self.body_particles, self.body_inv_mass, self.mass, self.b[0]],
            outputs=[s.v],
            block_dim=s.sum_block_dim,
            device=m.device,
        )

    def launch_step(self, scale: wp.array) -> None:
        """Newton iterations of one step (after the prediction and the linearisation pass)."""
        s, m, cfg, dev = self.s, self.s.model, self.s.config, self.s.model.device
        N, L = cfg.newton_iterations, cfg.linear_iterations
        W = m.worlds
        wp.launch(kp.start_velocities, dim=W * m.particle_count, inputs=[m.particle_count, m.data.particle_inv_mass, s.v_start, s.v, self.v_pred, s.carried_impulse], device=dev)
        if m.body_count > 0:
            # the bodies' part of the last step's cone projection joins their prediction ṽ_b (consumed here)
            wp.launch(krigid.apply_body_impulses, dim=W * m.body_count, inputs=[m.body_count, m.body_data, s.body_x_start, s.dt, s.carried_body_impulse, s.body_momentum, s.body_v], device=dev)
            s.carried_body_impulse.zero_()
        if cfg.warm_start > 0.0 or cfg.contact_warm_start > 0.0:
            self.apply_bodies(s.lam)  # bodies: v_b = ṽ_b + M_b⁻¹J_bᵀλ_carried (tet rows do not act on bodies)
        self.fit_rotations()
        if self.scaled_warm_start:
            self.scale_warm_start(scale)
        tol_sq = cfg.newton_tolerance**2
        for it in range(N):
            self.assemble(it, scale, s._res[it])
            if it > 0:
                self.backtrack(it, scale)
            if tol_sq > 0.0 and not dev.is_cuda and np.all(s._res[it].numpy() <= tol_sq):
                self.balance_momentum()
                return  # every world converged (CPU: device arrays are host memory)
            if self.has_bodies and s.config.body_preconditioner:
                self._factor_body_blocks()  # the rows' preconditioner at the rows this solve sees
            self.solve(L, it)
            self.apply_update(it)
        self.assemble(N, scale, s._res[N])
        self.backtrack(N, scale)
        self.balance_momentum()
