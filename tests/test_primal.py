"""The primal-FEM step (docs/solver.md): its saddle-point operator, preconditioner and coarse space.

MINRES needs a symmetric operator and a symmetric positive-definite preconditioner; both are checked column by column on
a small scene with every row family that can meet a soft body (ground contact with friction, distance rows,
particle–body
attachments, a joint, a rigid body on the ground)."""

import numpy as np
import pytest
import warp as wp

import softsnake as ss
from helpers import TEST_DEVICE
from softsnake.kernels import minres as kmr
from softsnake.kernels import primal as kp
from softsnake.sim.coarse_space import build_coarse_space
from softsnake.sim.lane_layout import sliced_blocks, sliced_rows

pytestmark = pytest.mark.skipif(TEST_DEVICE != "cpu", reason="dense column-by-column checks read device arrays")


def _scene():
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((0.06, 0.02, 0.02), (3, 1, 1), origin=(0.0, -0.01, 0.0))
    ids = b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=2e5, poisson_ratio=0.3)
    b.add_distance(int(ids[0]), int(ids[-1]), compliance=1e-4)
    b.add_ground_plane(mu=0.5)
    body = b.add_body((0.07, 0.0, 0.01))
    b.add_shape_box(body, (0.01, 0.01, 0.01), density=1000.0, mu=0.5)
    wheel = b.add_body((0.07, 0.02, 0.01))
    b.add_shape_box(wheel, (0.005, 0.005, 0.005), density=1000.0, mu=0.5)
    b.add_joint_revolute(body, wheel, (0.07, 0.015, 0.01), (0.0, 1.0, 0.0))
    for v in np.nonzero(mesh.vertices[:, 0] > 0.06 - 1e-9)[0]:
        b.add_attachment(int(ids[v]), body)
    model = b.finalize()
    state = model.state()
    solver = ss.Solver(model)
    for _ in range(3):
        solver.step(state)
    return model, solver


def test_saddle_operator_is_symmetric_and_preconditioner_positive_definite():
    model, solver = _scene()
    primal = solver.formulation
    assert primal is not None and primal.has_bodies
    K, _ = primal.dense(primal.matvec)
    scale = np.abs(K).max()
    assert np.abs(K - K.T).max() < 1.1e-9 * scale  # measured 3.5e-10 of max|K| (this machine, 2026-11-27); bound 3×
    P, _ = primal.dense(primal.precondition)
    # measured 9.1e-8 of max|P| (this machine, 2026-11-27; float32 round-off, under one ulp of the largest entry);
    # bound 3×. Both asymmetries are unchanged to 2 digits with Young's modulus × (1 ± 1e-6)
    assert np.abs(P - P.T).max() < 2.8e-7 * np.abs(P).max()
    assert np.linalg.eigvalsh(0.5 * (P + P.T)).min() > 0.0


def test_minres_solution_matches_a_direct_solve():
    model, solver = _scene()
    primal = solver.formulation
    captured = {}
    solve = type(primal).solve

    def first_system(it, iterations=None):
        # the system of the next step's first Newton iteration, as the solver sets it up, solved with 400 iterations
        if captured:
            return solve(primal, it, iterations)
        K, index = primal.dense(primal.matvec)
        captured.update(
            K=K.astype(np.float64),
            index=index,
            b=np.concatenate([primal.b[0].numpy().ravel(), primal.b[1].numpy()]).astype(np.float64)[index],
        )
        solve(primal, it, 400)
        captured["x"] = np.concatenate([primal.x[0].numpy().ravel(), primal.x[1].numpy()]).astype(np.float64)[index]
        captured["phibar"] = primal.sc.numpy().reshape(model.worlds, kmr.SLOTS)[:, kmr.PHIBAR].copy()

    primal.solve = first_system
    solver.step(model.state())
    del primal.solve
    K, b, x = captured["K"], captured["b"], captured["x"]
    n = model.particle_count
    direct = np.linalg.lstsq(K, b, rcond=None)[0]  # least squares: redundant attachments make K singular
    dv = slice(0, 3 * n)
    assert np.linalg.norm(x[dv] - direct[dv]) < 8.4e-3 * np.linalg.norm(direct[dv])  # measured 2.8e-3
    # 400 iterations against a layout of linear_iterations + 1 slots per Newton iteration: the final residual is
    # recorded in the last slot of this iteration's block (it was written 380 slots past it, outside the array)
    L, W = solver.config.linear_iterations, model.worlds
    phibar = captured["phibar"]
    rr = solver.rr.numpy().reshape(solver.config.newton_iterations, L + 1, W)
    assert np.array_equal(rr[0, L], (phibar * phibar).astype(np.float32)) and np.all(rr[0, L] > 0.0)


def beam_coarse_space(cells, along: int = 30, **kw):
    mesh = ss.box_tet_mesh((0.1, 0.01, 0.01), (along, 3, 3))
    n = len(mesh.vertices)
    ntet = len(mesh.tets)
    x = mesh.vertices[mesh.tets]
    Dm = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1))
    free = np.ones(n, dtype=bool)
    free[mesh.vertices[:, 0] < 1e-9] = False
    cs = build_coarse_space(
        rest=mesh.vertices,
        mass=np.full(n, 1e-5),
        inv_mass=np.where(free, 1e5, 0.0),
        tets=mesh.tets,
        rest_inverse=np.linalg.inv(Dm),
        volume=np.abs(np.linalg.det(Dm)) / 6,
        youngs=np.full(ntet, 5e6),
        poisson=np.full(ntet, 0.3),
        damping=np.zeros(ntet),
        h=1.0 / 120.0,
        cells_long_axis=cells,
        **kw,
    )
    return cs, free


def test_coarse_grid_along_a_slender_body_is_capped_by_its_elements():
    # 12 elements of 8.3 mm along a 100 mm beam, mean tet edge 6.6 mm: by default a coarse cell spans at least two mean
    # edges (⌊100/13.2⌋ = 7 cells, 8 node layers); with coarse_cell_edges = 1 the 12 requested cells fit (13 layers, the
    # clamped end's layer unused); across the 3-element section always one cell (2 × 2 nodes per layer)
    assert beam_coarse_space(12, along=12)[0].node_count == 8 * 2 * 2
    assert beam_coarse_space(12, along=12, long_axis_cell_edges=1.0)[0].node_count == 12 * 2 * 2
    assert beam_coarse_space(4, along=12, long_axis_cell_edges=1.0)[0].node_count == 5 * 2 * 2  # as requested
    with pytest.raises(ValueError, match="coarse_cell_edges"):
        ss.SolverConfig(coarse_cell_edges=0.5)


def test_coarse_space_is_a_partition_of_unity_and_never_finer_than_the_mesh():
    cs, free = beam_coarse_space(4)
    assert cs.body_count == 1
    assert cs.node_count == 5 * 2 * 2  # 4 cells along the beam, 1 across (its 3 elements allow at most 1)
    w = cs.node_weight.sum(axis=1)
    assert np.allclose(w[free], 1.0) and np.all(w[~free] == 0.0)
    assert np.all(cs.diag[~free] == 0.0) and np.all(cs.diag[free] > 0.0)
    # the coarse inverse is a symmetric positive semi-definite block
    inv = cs.inverse.reshape(60, 60)
    assert np.allclose(inv, inv.T, atol=1e-8 * np.abs(inv).max())
    assert np.linalg.eigvalsh(inv).min() > -1e-8 * np.abs(inv).max()


@wp.kernel
def coarse_solve_kernel(
    nodes: int,
    node_body: wp.array(dtype=int),
    node_first: wp.array(dtype=int),
    inverse_start: wp.array(dtype=int),
    inverse: wp.array(dtype=wp.vec4),
    slice_width: int,
    rc: wp.array(dtype=wp.vec4),
    yc: wp.array(dtype=float),
):
    kp.coarse_solve(wp.tid(), nodes, node_body, node_first, inverse_start, inverse, slice_width, rc, yc)


def test_coarse_blocks_are_padded_to_whole_vec4s_and_solved_exactly():
    # two tets sharing a face: 5 particles on 5 corners of one coarse cell, so 5 nodes, padded to 8 with empty nodes
    verts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=float) * 0.01
    tets = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])
    x = verts[tets]
    Dm = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1))
    assert np.all(np.linalg.det(Dm) > 0.0)
    cs = build_coarse_space(
        rest=verts,
        mass=np.full(5, 1e-3),
        inv_mass=np.full(5, 1e3),
        tets=tets,
        rest_inverse=np.linalg.inv(Dm),
        volume=np.abs(np.linalg.det(Dm)) / 6,
        youngs=np.full(2, 1e5),
        poisson=np.full(2, 0.3),
        damping=np.zeros(2),
        h=1.0 / 120.0,
        cells_long_axis=1,
    )
    assert cs.node_count == 8 and list(cs.node_first) == [0, 8]
    used = np.unique(cs.node_index[cs.node_index >= 0])
    assert used.size == 5
    pad = np.setdiff1d(np.arange(8), used)
    assert np.all(cs.node_start[pad + 1] == cs.node_start[pad])  # padded nodes carry no particle
    inv = cs.inverse.reshape(24, 24)
    pad_dofs = (3 * pad[:, None] + np.arange(3)).ravel()
    assert np.all(inv[pad_dofs] == 0.0) and np.all(inv[:, pad_dofs] == 0.0)
    # the kernel's vec4 product against numpy, two worlds, the block's rows whole (width 1) and in slices of 16 and 32
    # rows (SolverConfig.slice_width: the same sums, so the same bits)
    rc = np.random.default_rng(0).normal(size=(2, 24)).astype(np.float32)
    rc[:, pad_dofs] = 0.0
    rcw = wp.array(rc.ravel(), dtype=float)
    out = []
    for width in (1, 16, 32):
        vec4s, starts = sliced_blocks(cs.inverse, cs.inverse_start, width)
        assert len(vec4s) == starts[-1] == 6 * (-(-24 // width) * width)
        yc = wp.zeros(48, dtype=float)
        wp.launch(
            coarse_solve_kernel,
            dim=48,
            inputs=[
                8,
                wp.array(cs.node_body.astype(np.int32), dtype=int),
                wp.array(cs.node_first.astype(np.int32), dtype=int),
                wp.array(starts.astype(np.int32), dtype=int),
                wp.array(vec4s, dtype=wp.vec4),
                width,
                wp.array(ptr=rcw.ptr, dtype=wp.vec4, shape=(12,), device=rcw.device),
            ],
            outputs=[yc],
        )
        out.append(yc.numpy())
    expect = rc.astype(np.float64) @ inv.T
    assert np.allclose(out[0].reshape(2, 24), expect, rtol=1e-5, atol=1e-6 * np.abs(expect).max())
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])
    # a table in slices: entry (r, j) at ((r // w)·L + j)·w + r % w, the last slice padded
    table = np.arange(7 * 3).reshape(7, 3)
    sliced = sliced_rows(table, 4, fill=-1)
    assert sliced.shape == (2 * 4 * 3,)
    for r in range(7):
        for j in range(3):
            assert sliced[((r // 4) * 3 + j) * 4 + r % 4] == table[r, j]
    assert np.sum(sliced == -1) == 3
    with pytest.raises(ValueError, match="power of two"):
        sliced_rows(table, 6)


@pytest.mark.parametrize("fem", ["primal", "dual"])
def test_both_formulations_rest_a_cube_on_the_ground(fem):
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((0.03, 0.03, 0.03), (2, 2, 2))
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=2e5, poisson_ratio=0.3)
    b.add_ground_plane(mu=0.5)
    model = b.finalize()
    state = model.state()
    solver = ss.Solver(model, fem=fem)
    for _ in range(60):
        solver.step(state)
    # measured after 0.5 s at the budget, primal / dual: 0.65 / 0.60 µm/s (one bound, 2.9× / 3.2×), 1.38e-10 /
    # 5.7e-10 m into the ground (each formulation its own bound, 3×)
    assert np.abs(state.particle_qd.numpy()).max() < 1.9e-6
    assert -state.particle_q.numpy()[:, 2].min() < {"primal": 4.2e-10, "dual": 1.7e-9}[fem]


def test_bad_solver_settings():
    with pytest.raises(ValueError, match="fem"):
        ss.SolverConfig(fem="mixed")
    with pytest.raises(ValueError, match="coarse_cells"):
        ss.SolverConfig(coarse_cells=-1)
    for width in (-32, 6, 128):
        with pytest.raises(ValueError, match="slice_width"):
            ss.SolverConfig(slice_width=width)


def test_lane_major_layouts_hold_every_entry_and_leave_the_step_alone():
    """The linear solve's tables in slices of rows (SolverConfig.slice_width; a warp's 32 rows on a GPU): every block of
    the elastic matrix's CSR pattern sits in its row's slot j (kernels/stiffness.py), padding slots hold nothing, the
    upper blocks and their mirrors cover the pattern, and the snake's step (its elastic blocks, coarse nodes and coarse
    and rigid-body inverses all sliced) is the same bit for bit at widths 1, 8 and 32 (260 particles: slices that end
    mid-mesh)."""
    import dataclasses

    from softsnake.robots.snake import SnakeConfig, build_snake
    from softsnake.robots.snake_sim import SnakeSim
    from softsnake.sim.stiffness import block_pattern, sliced_layout

    cfg = SnakeConfig().with_coarse_mesh()
    model = build_snake(cfg)[0].finalize()
    pattern = block_pattern(model.tet_indices, model.particle_count, model.data.tet_rest_inverse.numpy())
    sliced = sliced_layout(pattern, 32)
    filled = np.zeros(sliced.slot_count, dtype=bool)
    for p in range(model.particle_count):
        csr = np.arange(pattern.row_start[p], pattern.row_start[p + 1])
        slots = sliced.row_first[p] + 32 * np.arange(len(csr))
        assert np.array_equal(sliced.col[slots], pattern.col[csr])
        for k, c in zip(slots, csr, strict=True):
            mine = slice(sliced.contrib_start[k], sliced.contrib_start[k + 1])
            theirs = slice(pattern.contrib_start[c], pattern.contrib_start[c + 1])
            assert np.array_equal(sliced.contrib[mine], pattern.contrib[theirs])
        filled[slots] = True
    assert np.all(np.diff(sliced.contrib_start)[~filled] == 0)
    # the step assembles the blocks on and right of the diagonal and writes each one's transpose into its mirror:
    # between them every filled slot once, the mirror of block (i, j) at (j, i) with the same tets in the same order
    row = np.full(sliced.slot_count, -1)
    for p in range(model.particle_count):
        row[sliced.row_first[p] + 32 * np.arange(sliced.row_length[p])] = p
    written = np.concatenate([sliced.upper, sliced.mirror[sliced.mirror != sliced.upper]])
    assert np.array_equal(np.sort(written), np.nonzero(filled)[0])
    assert np.all(sliced.col[sliced.upper] >= row[sliced.upper])
    assert np.array_equal(row[sliced.mirror], sliced.col[sliced.upper])
    assert np.array_equal(sliced.col[sliced.mirror], row[sliced.upper])
    for k, km in zip(sliced.upper, sliced.mirror, strict=True):
        ours = sliced.contrib[sliced.contrib_start[k] : sliced.contrib_start[k + 1]]
        theirs = sliced.contrib[sliced.contrib_start[km] : sliced.contrib_start[km + 1]]
        assert np.array_equal(ours // 16, theirs // 16) and np.array_equal(ours % 4, (theirs // 4) % 4)
    out = []
    for width in (1, 8, 32):
        run = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, slice_width=width))
        sim = SnakeSim(worlds=2, device=TEST_DEVICE, config=run)
        assert sim.solver.formulation.data.stiffness.slice_width == width
        sim.set_pressure_targets(np.full(sim.links, 5.0))
        sim.step(3)
        out.append(sim.state.particle_q.numpy())
    assert np.array_equal(out[0], out[1]) and np.array_equal(out[0], out[2])


def test_empty_contact_slots_stay_out_of_the_solve():
    """The solve leaves out the rows of the contact slots that the step's list left empty (kernels/saddle.py,
    saddle_rows): identity rows with a zero right-hand side, so leaving them out changes nothing. A slab lands and is
    thrown up again, so that slots fill and empty; with one slot per particle (most of them empty) and with as many
    slots as the landing fills, every step is the same bit for bit, and after every step the empty slots' rows hold
    no multiplier (the update, the line search and the cone projection walk the solve's rows alone: the collision
    stage's zeros must stay). Each world leaves out its own empty slots: a batch of the thrown slab beside one left
    on the ground repeats the two single runs bit for bit."""
    from softsnake.scenes import soft_slab_on_ground

    def run(worlds, throw, capacity=None):
        """22 steps; at step 10 the worlds with throw[w] get 1 m/s upwards (the last pair leaves the list 9 steps
        later, 4 cm up). Returns the positions per step, the slots in use per step and world, and the solver."""
        model = soft_slab_on_ground(cells=(7, 2, 3), size=(0.07, 0.02, 0.03), drop=0.002).finalize(
            TEST_DEVICE, worlds=worlds, contact_capacity=capacity
        )
        solver = ss.Solver(model)
        state = model.state()
        n = model.particle_count
        kick = np.repeat(np.array(throw, dtype=np.float32), n)[:, None] * np.array([0.0, 0.0, 1.0], np.float32)
        contact = model.rows["contact"]
        q, used = [], []
        for k in range(22):
            if k == 10:
                state.particle_qd.assign(state.particle_qd.numpy() + kick)
            solver.step(state)
            q.append(state.particle_q.numpy().reshape(worlds, n, 3))
            used.append(solver.contact_list.slots_used().tolist())
            lam = solver.lam.numpy().reshape(worlds, model.row_count)
            for w in range(worlds):
                first_empty = contact.offset + contact.rows_per_element * used[-1][w]
                assert not np.any(lam[w, first_empty : contact.end]), (k, w)
        return np.array(q), np.array(used), solver

    thrown, used, solver = run(1, [True])
    model = solver.model
    # the landing fills 48 of the 96 slots, the flight none
    assert used.max() == 48 and used[-1, 0] == 0 and model.particle_count == 96
    tight, tight_used, _ = run(1, [True], capacity=int(used.max()))
    assert np.array_equal(tight_used, used) and np.array_equal(tight, thrown)
    resting, _, _ = run(1, [False])
    batch, batch_used, _ = run(2, [True, False])
    assert batch_used[-1].tolist() == [0, 48]
    assert np.array_equal(batch[:, 0], thrown[:, 0]) and np.array_equal(batch[:, 1], resting[:, 0])


def test_friction_stays_in_its_cone_while_sliding_and_incomplete_states_are_refused():
    """The primal step projects friction without kicking particles (docs/solver.md, "Friction cone"): the stored
    impulses obey |λ_t| ≤ μ λ_n at the end of every step of a slide; a carried state without the carried impulse
    (saved by an older version) is refused, naming what it lacks."""
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((0.03, 0.03, 0.03), (2, 2, 2))
    b.add_soft_mesh(
        mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=2e5, poisson_ratio=0.3, vel=(0.5, 0.0, 0.0)
    )
    b.add_ground_plane(mu=0.4)
    model = b.finalize()
    state = model.state()
    solver = ss.Solver(model)
    sliding = 0
    for _ in range(20):
        solver.step(state)
        lam_n, lam_t = solver.contact_impulses()
        # measured |λ_t| ≤ 1.0000001 μλ_n (one float32 ulp of 1 over, 1.2e-7) and no friction where λ_n = 0; bound 3×
        assert np.all(np.linalg.norm(lam_t, axis=-1) <= 0.4 * np.maximum(lam_n, 0.0) * (1 + 3.6e-7) + 1e-12)
        sliding += int(np.any(np.linalg.norm(lam_t, axis=-1) > 0.39 * lam_n.max()))
    assert sliding > 5  # the cube really slid (friction at the cone), so the bound was exercised
    saved = solver.carried_state()
    assert "carried_impulse" in saved
    del saved["carried_impulse"]
    with pytest.raises(ValueError, match="carried_impulse"):
        solver.restore_carried_state(saved)


def _add_box_and_wheel(b, corner: int, box_height: float) -> None:
    """Rigid bodies beside a soft cube: a 50 g box carried by the cube's top corner (an attachment) and a wheel on a
    damped hinge of a frame, rolling on the ground (joint and body-contact rows)."""
    box = b.add_body((0.0, 0.0, box_height), mass=0.05, inertia=(2e-5, 2e-5, 2e-5))
    b.add_shape_box(box, (0.01, 0.01, 0.01))
    b.add_attachment(corner, box)
    wheel = b.add_body((0.2, 0.0, 0.03), rot=(0.7071, 0, 0, 0.7071), mass=0.03, inertia=(1e-5, 1e-5, 1.4e-5))
    b.add_shape_cylinder(wheel, 0.03, 0.01, mu=(1.0, 0.05))
    frame = b.add_body((0.2, 0.0, 0.03), mass=0.1, inertia=(1e-4, 1e-4, 1e-4))
    b.add_joint_revolute(frame, wheel, anchor=(0.2, 0.0, 0.03), axis=(0, 1, 0), target_velocity=0.0, damping=3e-5)


@pytest.mark.parametrize("bodies", [False, True], ids=["particles", "rigid_bodies"])
def test_the_line_search_is_decided_per_world(bodies):
    # two worlds thrown different ways, one where the line search halves updates at steps where the other's does not:
    # each world of the batch equals the same world simulated alone, bit for bit (the decision is the world's own);
    # with rigid bodies (a soft cube attached to a box, a wheel on a hinge rolling on the ground) a halved update
    # reaches the bodies through their impulses
    def scene(worlds: int):
        b = ss.ModelBuilder()
        mesh = ss.box_tet_mesh((0.04, 0.04, 0.04), (2, 2, 2))
        b.add_soft_mesh(
            mesh.vertices,
            mesh.tets,
            density=1000.0,
            youngs_modulus=1e5,
            poisson_ratio=0.3,
            pos=(0.0, 0.0, 0.01),
            vel=(0.3, 0.0, -0.2),
        )
        b.add_ground_plane(mu=0.5)
        if bodies:
            _add_box_and_wheel(b, len(mesh.vertices) - 1, box_height=0.07)
        return b.finalize(device=TEST_DEVICE, worlds=worlds)

    def start(model, kinds):
        """Initial state: world w thrown as kind kinds[w] (0: as built; 1: the other way, upward)."""
        state = model.state()
        qd = state.particle_qd.numpy().reshape(len(kinds), -1, 3)
        bqd = state.body_qd.numpy().reshape(len(kinds), -1, 6)
        for w, kind in enumerate(kinds):
            if kind == 1:
                qd[w] *= -1.0
            if bodies:
                bqd[w, 1:, 0] = [0.4, -0.1][kind]  # wheel and frame rolling, at different speeds per world
                bqd[w, 1, 4] = bqd[w, 1, 0] / 0.03
        state.particle_qd.assign(qd.reshape(-1, 3))
        state.body_qd.assign(bqd.reshape(-1, 6))
        return state

    model = scene(2)
    state = start(model, [0, 1])
    solver = ss.Solver(model)
    searched = []
    for _ in range(40):
        solver.step(state)
        searched.append(solver.diagnostics().extras["line_search"])
    searched = np.array(searched)  # (steps, newton, worlds)
    assert np.any(searched[..., 0] != searched[..., 1])  # the worlds decided differently: the comparison is not vacuous
    n, nb = model.particle_count, model.body_count
    for single in (0, 1):
        alone = scene(1)
        s1 = start(alone, [single])
        solver1 = ss.Solver(alone)
        for _ in range(40):
            solver1.step(s1)
        assert np.array_equal(s1.particle_q.numpy(), state.particle_q.numpy()[single * n : (single + 1) * n])
        assert np.array_equal(s1.body_q.numpy(), state.body_q.numpy()[single * nb : (single + 1) * nb])


def _floating_beam_and_block(momentum_balance: bool, steps: int = 60) -> float:
    """A soft beam glued to a rigid block, floating without gravity, set vibrating and spinning with zero net momentum,
    at the real-time budget; returns the largest drift of the total linear momentum over ``steps`` steps, relative to
    Σ m|v| at the start."""
    b = ss.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mesh = ss.box_tet_mesh((0.2, 0.02, 0.02), (20, 2, 2))
    ids = b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=1.0e6, poisson_ratio=0.3)
    block = b.add_body((0.21, 0.01, 0.01))
    b.add_shape_box(block, (0.01, 0.02, 0.02), density=1000.0)
    for v in np.nonzero(mesh.vertices[:, 0] > 0.2 - 1e-9)[0]:
        b.add_attachment(int(ids[v]), block)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    r = state.particle_q.numpy() - state.particle_q.numpy().mean(axis=0)
    m, mb = model.particle_mass, model.body_mass
    v = np.cross([0.0, 0.0, 5.0], r) + 2.0 * r * [1.0, 0.0, 0.0] + np.outer(np.sin(40.0 * r[:, 0]), [0.0, 0.3, 0.0])
    v -= (m[:, None] * v).sum(axis=0) / m.sum()
    state.particle_qd.assign(v.astype(np.float32))
    solver = ss.Solver(model, momentum_balance=momentum_balance)  # h = 1/120 s, 4 × 20

    def momentum():
        return (m[:, None] * state.particle_qd.numpy().astype(np.float64)).sum(axis=0) + (
            mb[:, None] * state.body_qd.numpy().astype(np.float64)[:, :3]
        ).sum(axis=0)

    p0, scale, drift = momentum(), float((m * np.linalg.norm(v, axis=1)).sum()), 0.0
    for _ in range(steps):
        solver.step(state)
        drift = max(drift, float(np.linalg.norm(momentum() - p0)) / scale)
    return drift


def test_momentum_balance_conserves_momentum_at_the_budget():
    """Only internal impulses act (tets, the glue's attachment rows), so the total momentum is conserved. A truncated
    solve balances the block's momentum exactly (it is eliminated) but not the particles': its residual is a spurious
    net impulse. With SolverConfig.momentum_balance each free soft body gets the uniform velocity change that removes
    it (docs/solver.md, "Momentum balance")."""
    assert _floating_beam_and_block(True) < 5.4e-7  # measured 1.8e-7 (float32 round-off); bound 3×
    # measured 8.6e-4, ~5·10³× the balanced drift: the scene does test the balance; bound a third of the measurement
    assert _floating_beam_and_block(False) > 2.9e-4


@pytest.mark.parametrize("clamped", [False, True])
def test_scaled_warm_start_keeps_the_carried_multipliers_that_lower_the_first_residual(clamped):
    # A carried multiplier also carries the last step's solve error (docs/solver.md, "Warm start"): the primal step
    # keeps s·λ of the bilateral ones, s ∈ [0, 1] minimising each world's first merit. A soft cube carrying a box by an
    # attachment and a wheel on a hinge, two worlds; after 30 steps world 0's carried bilateral multipliers are made
    # three times too large. Its first residual must come out no larger than with them as carried or dropped (the
    # dropped ones: s = 0), with s < 1; world 1, untouched, must also do no worse than either. Clamped: one of the
    # cube's bottom corners is kinematic (its A_pp is 0, which once made the merit NaN and left s at 1).
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((0.04, 0.04, 0.04), (2, 2, 2))
    b.add_soft_mesh(
        mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=1e5, poisson_ratio=0.3, pos=(0.0, 0.0, 0.001)
    )
    if clamped:
        b.fix_particles([int(np.lexsort(np.asarray(mesh.vertices).T)[0])])  # the corner of lowest z, then y, then x
    b.add_ground_plane(mu=0.5)
    _add_box_and_wheel(b, len(mesh.vertices) - 1, box_height=0.06)
    model = b.finalize(device=TEST_DEVICE, worlds=2)
    state = model.state()
    solver = ss.Solver(model)
    assert solver.config.warm_start_scaled
    for _ in range(30):
        solver.step(state)
    saved = {k: getattr(state, k).numpy().copy() for k in ("particle_q", "particle_qd", "body_q", "body_qd")}
    carried = solver.carried_state()
    R = model.row_count
    r = np.arange(2 * R) % R
    bilateral = np.zeros(2 * R, dtype=bool)
    for first, end in model.rows.rows_of_kind("bilateral"):
        bilateral |= (r >= first) & (r < end)
    assert np.abs(carried["lam"][bilateral]).max() > 0.0
    carried["lam"][bilateral & (np.arange(2 * R) < R)] *= 3.0

    def first_residual(scaled: bool, keep: float):
        s = ss.Solver(model, warm_start_scaled=scaled)
        c = {k: v.copy() for k, v in carried.items()}
        c["lam"][bilateral] *= keep
        s.restore_carried_state(c)
        for k, v in saved.items():
            getattr(state, k).assign(v)
        s.step(state)
        d = s.diagnostics()
        return d.residual_norm[0], d.extras.get("warm_start_scale")

    scaled, scale = first_residual(True, 1.0)
    as_carried, _ = first_residual(False, 1.0)
    dropped, _ = first_residual(False, 0.0)
    assert scale[0] < 0.9 and 0.0 <= scale.min() and scale.max() <= 1.0
    assert np.all(scaled <= np.minimum(as_carried, dropped) * 1.001), (scaled, as_carried, dropped, scale)


def test_phase_timers_count_every_phase_and_leave_the_step_alone():
    """SolverConfig.phase_timing: each world's block counts its clock cycles in every phase of the linear solve and
    of the other stages that it tells apart (the GPU profile of benchmarks/profile_step.py; the CPU's time-stamp
    counter here), and the step's results are those of a step without the timers, bit for bit (the timers add
    barriers and clock reads only; the step has no sum whose order depends on the lanes' timing, docs/solver.md)."""
    import dataclasses

    from softsnake.kernels.saddle import SOLVE_PHASES, STEP_PHASES
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim

    out = {}
    for timing in (False, True):
        cfg = SnakeConfig().with_coarse_mesh()
        cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, phase_timing=timing))
        sim = SnakeSim(worlds=2, device=TEST_DEVICE, config=cfg)
        sim.set_pressure_targets(np.full(sim.links, 5.0))
        sim.step(3)
        out[timing] = sim.state.particle_q.numpy(), sim.solver.diagnostics().extras
    assert np.array_equal(out[False][0], out[True][0])
    assert "solve_phase_cycles" not in out[False][1]
    cycles = out[True][1]["solve_phase_cycles"]
    assert list(cycles) == list(SOLVE_PHASES)
    steps = out[True][1]["step_phase_cycles"]
    assert list(steps) == list(STEP_PHASES)
    for name, per_world in {**cycles, **steps}.items():
        assert per_world.shape == (2,) and np.all(per_world > 0), name


def test_gpu_experiment_knobs_refuse_bad_values(monkeypatch):
    """SOFTSNAKE_CUDA_MAX_REGISTERS, SOFTSNAKE_WORLD_BLOCKS and SOFTSNAKE_LANE_BATCH (kernels/block.py) give clear
    errors for bad values, a world spread over a thread-block cluster is refused where there is no Hopper GPU, and so
    is a solve block whose lanes' registers exceed a block's."""
    import softsnake.sim.solver as solver_module
    from softsnake.kernels import block

    for name, value, call in (
        ("SOFTSNAKE_CUDA_MAX_REGISTERS", "eight", block.stage_register_cap),
        ("SOFTSNAKE_CUDA_MAX_REGISTERS", "300", block.stage_register_cap),
        ("SOFTSNAKE_WORLD_BLOCKS", "3", block.world_blocks_from_environment),
        ("SOFTSNAKE_LANE_BATCH", "2", block.gpu_lane_batch_from_environment),
    ):
        monkeypatch.setenv(name, value)
        with pytest.raises(ValueError, match=name):
            call()
        monkeypatch.delenv(name)
    monkeypatch.setenv("SOFTSNAKE_CUDA_MAX_REGISTERS", "128")
    assert block.stage_register_cap() == {"cuda_max_registers": 128}
    monkeypatch.setenv("SOFTSNAKE_WORLD_BLOCKS", "8")
    assert block.world_blocks_from_environment() == 8
    monkeypatch.setenv("SOFTSNAKE_LANE_BATCH", "1")
    assert block.gpu_lane_batch_from_environment() == 1 and block.GPU_LANE_BATCH == 4  # read at import
    model, _ = _scene()
    monkeypatch.setattr(solver_module, "WORLD_BLOCKS", 8)
    if TEST_DEVICE == "cpu":
        with pytest.raises(ValueError, match="thread-block cluster"):
            ss.Solver(model)
    monkeypatch.setattr(solver_module, "WORLD_BLOCKS", 1)
    with pytest.raises(ValueError, match="solve_block_dim"):
        ss.SolverConfig(solve_block_dim=384)
    if TEST_DEVICE != "cpu":  # 512 lanes need the stage kernels capped at 128 registers (not set in the tests)
        with pytest.raises(ValueError, match="SOFTSNAKE_CUDA_MAX_REGISTERS=128"):
            ss.Solver(model, config=ss.SolverConfig(solve_block_dim=512))
