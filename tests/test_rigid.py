"""Issue 3 (part 1): rigid bodies, joints and attachments against analytic references and conservation laws."""

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE
from rigid_helpers import axis_angle_quat, box_inertia, momenta, quat_matrix


def test_hinge_pendulum_period_drift_and_axis():
    g, m, he, theta0, dt = 9.81, 2.0, (0.05, 0.02, 0.2), 0.05, 1.0 / 120.0
    inertia = box_inertia(m, he)
    d = he[2]  # hinge at the centre of the top face
    anchor = np.array([0.0, 0.0, 1.0])
    b = ss.ModelBuilder(gravity=(0.0, 0.0, -g))
    q0 = axis_angle_quat((0, 1, 0), theta0)
    body = b.add_body(anchor + quat_matrix(q0) @ [0, 0, -d], q0, mass=m, inertia=inertia)
    b.add_joint_revolute(-1, body, anchor, (0.0, 1.0, 0.0))
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model, dt=dt, newton_iterations=4, linear_iterations=20)
    n = int(10.0 / dt)
    x = np.empty(n)
    swing = np.empty(n)
    drift = off_axis = 0.0
    for k in range(n):
        solver.step(state)
        bq = state.body_q.numpy()[0]
        R = quat_matrix(bq[3:])
        drift = max(drift, np.linalg.norm(bq[:3] + R @ [0, 0, d] - anchor))
        off_axis = max(off_axis, np.arccos(min(1.0, (R @ [0, 1, 0])[1])))
        x[k] = bq[0]
        swing[k] = np.arctan2(R[0, 2], R[2, 2])
    t = (np.arange(n) + 1) * dt
    down = np.nonzero((x[:-1] > 0) & (x[1:] <= 0))[0]
    crossings = t[down] + dt * x[down] / (x[down] - x[down + 1])
    period = np.mean(np.diff(crossings))
    expected = 2 * np.pi * np.sqrt((inertia[1] + m * d * d) / (m * g * d)) * (1 + theta0**2 / 16)
    # the bodies' integrator keeps the swing (an implicit-Euler pendulum would have lost 78 % of it in 10 s).
    # Measured at the budget: period −1.05e-4, amplitude over the last 0.5 s +2.8e-4, anchor drift 1.2e-7 m, hinge axis
    # off by 0 (one float32 ulp of the rotation's yy entry reads as 2.4e-4 rad), reaction −0.107 % of m·g
    assert period == pytest.approx(expected, rel=3.2e-4)
    assert np.abs(swing[-60:]).max() == pytest.approx(theta0, rel=8.5e-4)
    assert drift < 3.6e-7
    assert off_axis < 3.5e-4
    # the hinge carries the weight (joint reaction impulse / dt, z component of the anchor rows)
    assert solver.joint_impulses()[0, 0, 2] / dt == pytest.approx(m * g, rel=3.2e-3)


def test_free_chain_conserves_momentum():
    b = ss.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    half = [(0.1, 0.03, 0.02), (0.08, 0.04, 0.02), (0.12, 0.02, 0.03)]
    masses = [1.0, 0.7, 1.3]
    inertias = [box_inertia(m, h) for m, h in zip(masses, half)]
    rng = np.random.default_rng(1)
    ids = [
        b.add_body(
            (0.2 * k, 0.0, 0.0),
            mass=masses[k],
            inertia=inertias[k],
            vel=rng.normal(0, 0.3, 3),
            ang_vel=rng.normal(0, 2, 3),
        )
        for k in range(3)
    ]
    b.add_joint_revolute(ids[0], ids[1], (0.1, 0.0, 0.0), (0.0, 0.0, 1.0))
    b.add_joint_revolute(ids[1], ids[2], (0.3, 0.0, 0.0), (0.0, 1.0, 0.0))
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model, dt=1.0 / 120.0, newton_iterations=4, linear_iterations=20)
    solver.step(state)  # the first step projects the random initial velocities onto the joints
    P0, L0 = momenta(state.body_q.numpy(), state.body_qd.numpy(), masses, inertias)
    for _ in range(1000):
        solver.step(state)
    P, L = momenta(state.body_q.numpy(), state.body_qd.numpy(), masses, inertias)
    # float32 round-off after 1000 steps, measured: P 4.0e-7 (CPU), 2.2e-6 (H100, 0173a57); L 3.4e-5, 4.1e-5
    p_bound = 1.2e-6 if TEST_DEVICE == "cpu" else 6.7e-6
    assert np.linalg.norm(P - P0) <= p_bound * np.linalg.norm(P0)
    assert np.linalg.norm(L - L0) <= 1e-4 * np.linalg.norm(L0)


@pytest.mark.parametrize("axis, bound", [(0, 1.4e-3), (1, 0.07), (2, 2.2e-4)])
def test_spinning_asymmetric_body_follows_eulers_equations(axis, bound):
    """Rotation about the largest- and smallest-inertia axes is stable, about the intermediate one it is not
    (Dzhanibekov effect). Reference: Euler's equations I·ω̇ = (I·ω) × ω integrated to 1e-12 (scipy). Measured at the
    budget over 6.25 s: the body-frame direction of L off the reference's by 4.5e-4 / 7.4e-5 about the stable axes; the
    first flip about the intermediate one at 2.433 s against 2.492 s (−2.3 %); |ΔL|/|L| ≤ 2.2e-4."""
    from scipy.integrate import solve_ivp

    inertia = box_inertia(1.0, (0.1, 0.05, 0.02))  # I_x < I_y < I_z
    w0 = np.full(3, 0.05)
    w0[axis] = 5.0
    b = ss.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.add_body((0.0, 0.0, 0.0), mass=1.0, inertia=inertia, ang_vel=w0)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    _, L0 = momenta(state.body_q.numpy(), state.body_qd.numpy(), [1.0], [inertia])
    along, drift = [], 0.0
    for _ in range(750):
        solver.step(state)
        along.append((quat_matrix(state.body_q.numpy()[0, 3:]).T @ (L0 / np.linalg.norm(L0)))[axis])
        _, L = momenta(state.body_q.numpy(), state.body_qd.numpy(), [1.0], [inertia])
        drift = max(drift, np.linalg.norm(L - L0) / np.linalg.norm(L0))
    assert drift < 6.6e-4
    t = np.arange(1, 751) * solver.dt
    exact = solve_ivp(
        lambda _, w: np.cross(inertia * w, w) / inertia, (0.0, t[-1]), w0, t_eval=t, rtol=1e-12, atol=1e-14
    ).y
    exact = (inertia[:, None] * exact)[axis] / np.linalg.norm(inertia[:, None] * exact, axis=0)
    along = np.asarray(along)
    if axis != 1:
        assert np.abs(along - exact).max() < bound
    else:
        assert exact.min() < -0.99 and along.min() < -0.5  # both flip
        flip, expected = t[np.argmax(along < 0)], t[np.argmax(exact < 0)]
        assert flip == pytest.approx(expected, rel=bound)


def test_soft_beam_follows_moving_body_through_attachments():
    b = ss.ModelBuilder()
    carrier = b.add_body(
        (0.0, 0.0, 0.5), mass=0.0, inertia=(1.0, 1.0, 1.0), vel=(0.1, 0.0, 0.05), ang_vel=(0.0, 0.0, 0.5)
    )
    mesh = ss.box_tet_mesh((0.02, 0.02, 0.2), (1, 1, 6), origin=(-0.01, -0.01, 0.28))
    ids = b.add_soft_mesh(mesh.vertices, mesh.tets, density=1070.0, youngs_modulus=2e5, poisson_ratio=0.3, damping=0.01)
    top = ids[mesh.vertices[:, 2] > 0.48 - 1e-9]
    for p in top:
        b.add_attachment(int(p), carrier)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model, dt=1.0 / 120.0, newton_iterations=4, linear_iterations=20)  # the real-time budget
    rest = mesh.vertices[top] - np.array([0.0, 0.0, 0.5])
    for _ in range(120):
        solver.step(state)
    bq = state.body_q.numpy()[0]
    q = state.particle_q.numpy()
    expected = bq[:3] + rest @ quat_matrix(bq[3:]).T
    # measured: the kinematic carrier 3.5e-6 m off where 1 s at its velocity takes it, the attached particles 1.0e-7 m
    # off its rigid transform of their rest offsets (about two float32 ulps of their 0.53 m height); bounds 3×
    assert np.abs(bq[:3] - [0.1, 0.0, 0.55]).max() < 1.1e-5
    assert np.linalg.norm(q[top] - expected, axis=1).max() < 3.1e-7
    assert q[:, 0].mean() > 0.05  # the beam came along


def test_prismatic_motor_reaches_target_rate():
    b = ss.ModelBuilder()
    slider = b.add_body((0.0, 0.0, 1.0), mass=3.0, inertia=box_inertia(3.0, (0.05, 0.05, 0.05)))
    b.add_joint_prismatic(-1, slider, (0.0, 0.0, 1.0), (1.0, 1.0, 0.0), target_velocity=0.3)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    for _ in range(120):
        solver.step(state)
    v = state.body_qd.numpy()[0]
    axis = np.array([1.0, 1.0, 0.0]) / np.sqrt(2)
    # measured: 8.1e-8 relative, 2.8e-6 m/s off the axis, height exact (one float32 ulp of 1 m is 1.2e-7)
    assert np.dot(v[:3], axis) == pytest.approx(0.3, rel=2.4e-7)
    assert np.linalg.norm(v[:3] - np.dot(v[:3], axis) * axis) < 8.4e-6  # held on the axis against gravity
    assert state.body_q.numpy()[0, 2] == pytest.approx(1.0, abs=1.2e-7)


def test_revolute_spring_settles_at_torque_over_stiffness():
    stiffness, torque = 2.0, 0.3  # N m/rad, N m  -> 0.15 rad
    b = ss.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    arm = b.add_body((0.1, 0.0, 0.0), mass=0.5, inertia=box_inertia(0.5, (0.1, 0.02, 0.02)))
    b.add_joint_revolute(-1, arm, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), stiffness=stiffness, damping=0.2)
    model = b.finalize(device=TEST_DEVICE)
    state, control = model.state(), model.control()
    control.body_f.assign(np.array([[0.0, 0.0, 0.0, 0.0, 0.0, torque]], dtype=np.float32))
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    for _ in range(600):
        solver.step(state, control)
    R = quat_matrix(state.body_q.numpy()[0, 3:])
    angle = np.arctan2(R[1, 0], R[0, 0])
    assert angle == pytest.approx(torque / stiffness, rel=3.6e-7)  # measured: exact to float32 (3 ulps allowed)


def test_rigid_batch_matches_single_world():
    def build(worlds):
        b = ss.ModelBuilder()
        base = b.add_body((0.0, 0.0, 1.0), mass=1.0, inertia=box_inertia(1.0, (0.1, 0.1, 0.1)))
        b.add_joint_prismatic(-1, base, (0.0, 0.0, 1.0), (1.0, 0.0, 0.0), stiffness=20.0, damping=1.0)
        link = b.add_body(
            (0.0, 0.0, 0.7), mass=0.5, inertia=box_inertia(0.5, (0.02, 0.02, 0.15)), ang_vel=(0.0, 1.0, 0.0)
        )
        b.add_joint_revolute(base, link, (0.0, 0.0, 0.85), (0.0, 1.0, 0.0))
        return b.finalize(device=TEST_DEVICE, worlds=worlds)

    def run(model, state):
        solver = ss.Solver(model, dt=1.0 / 120.0)
        for _ in range(120):
            solver.step(state)
        return state.body_q.numpy().reshape(model.worlds, -1, 7)

    single = run(build(1), build(1).state())[0]
    model = build(4)
    state = model.state()
    qd = state.body_qd.numpy().reshape(4, 2, 6)
    qd[2, 1, 4] = 2.0  # world 2's link spins faster
    state.body_qd.assign(qd.reshape(-1, 6))
    batch = run(model, state)
    for w in range(4):
        diff = np.abs(batch[w] - single).max()
        assert (diff > 1e-3) if w == 2 else (diff == 0.0), (w, diff)  # the other worlds: the single world's bits


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda b: b.add_body((0, 0, 0), rot=(0, 0, 0, 2), mass=1.0, inertia=(1, 1, 1)), "unit quaternion"),
        (lambda b: b.add_body((0, 0, 0), rot=(0, float("nan"), 0, 1), mass=1.0, inertia=(1, 1, 1)), "rot"),
        (lambda b: b.add_body((0, 0, 0), mass=1.0, inertia=(1, -1, 1)), "positive definite"),
        (lambda b: b.add_body((0, 0, 0), mass=1.0, inertia=[[1, 0.5, 0], [0, 1, 0], [0, 0, 1]]), "symmetric"),
        (lambda b: b.add_body((0, 0, 0), mass=-1.0, inertia=(1, 1, 1)), "mass"),
        (lambda b: b.add_body((0, 0, 0), mass=1.0), "both mass and inertia"),
        (lambda b: (b.add_body((0, 0, 0)), b.finalize()), "neither mass/inertia nor shapes"),
        (lambda b: b.add_shape_box(0, (0.1, 0.1, 0.1), density=-1.0), "density"),
        (lambda b: b.add_shape_sphere(7, 0.1), "unknown body"),
        (lambda b: b.add_attachment(0, 5), "unknown body"),
        (lambda b: b.add_attachment(9, 0), "out of range"),
        (lambda b: b.add_joint_revolute(0, 0, (0, 0, 0), (0, 0, 1)), "itself"),
        (lambda b: b.add_joint_revolute(-1, 3, (0, 0, 0), (0, 0, 1)), "unknown body"),
        (lambda b: b.add_joint_revolute(-2, 0, (0, 0, 0), (0, 0, 1)), "unknown body"),
        (lambda b: b.add_joint_revolute(-1, 0, (0, 0, 0), (0, 0, 0)), "axis"),
        (lambda b: b.add_joint_prismatic(-1, 0, (0, 0, 0), (0, 0, float("nan"))), "axis"),
        (lambda b: b.add_joint_revolute(-1, 0, (0, 0, 0), (0, 0, 1), target_velocity=1.0, stiffness=2.0), "not both"),
        (lambda b: b.add_joint_revolute(-1, 0, (0, 0, 0), (0, 0, 1), stiffness=-2.0), "stiffness"),
    ],
)
def test_rigid_builder_rejects_bad_input(call, match):
    b = ss.ModelBuilder()
    b.add_particle((0, 0, 0))
    b.add_body((0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match=match):
        call(b)


def test_damped_hinge_spins_down_exponentially():
    """A hinge 'motor' with target 0 and damping d is a viscous bearing: I ω̇ = −d ω, so ω decays as exp(−d t / I)
    (implicit Euler: ω_n = ω_0 (1 + d h / I)^−n)."""
    b = ss.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    inertia = np.array([2e-4, 3e-4, 5e-4])  # spin about the body z axis: I = 5e-4 kg m²
    wheel = b.add_body((0.0, 0.0, 0.0), mass=0.2, inertia=inertia, ang_vel=(0.0, 0.0, 10.0))
    tau = 0.5  # time constant I/d [s]
    b.add_joint_revolute(-1, wheel, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0), target_velocity=0.0, damping=inertia[2] / tau)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # h = 1/120 s, 4 Newton × 20
    h = solver.dt
    for _ in range(120):
        solver.step(state)
    omega = state.body_qd.numpy()[0, 3:]
    # measured +1.8e-5 from implicit Euler's (1 + dh/I)^−n (which is 1.7 % above exp(−t/τ) at this step)
    assert omega[2] == pytest.approx(10.0 * (1.0 + h / tau) ** -120, rel=5.4e-5)
    # off-axis spin measured exactly 0 (the hinge rows hold ω_x, ω_y, and nothing else turns the body); the bound is a
    # floor far below one float32 ulp of ω_z (1.2e-7 rad/s at 1.376 rad/s), so any round-off coupling would show
    assert abs(omega[0]) + abs(omega[1]) < 1e-9


def test_a_world_on_a_block_of_lanes_matches_one_lane(monkeypatch):
    """A step whose world is shared by the lanes of a block (block sums, per-lane element loops, barriers, the bodies'
    chunked sums and the preconditioner's row-parallel factorisation: kernels/block.py) agrees with one lane to
    float32 round-off, and two worlds of a batch stay identical. On the CPU the lanes run as fibers (Warp's
    cooperative CPU blocks), swapping at each barrier, so a missing barrier shows as a lane reading what another has
    not written yet: 32 and 64 lanes against 1 after one frame, measured 1.2e-7 m for both (one ulp of Young's
    modulus up / down moves it 1.1e-7 / 1.8e-7), bound 2.3× that; 32 lanes with the linear solve on 64
    (SolverConfig.solve_block_dim), 1.2e-7 too. On a GPU, 32 lanes against 256 after three frames."""
    import dataclasses

    import warp as wp
    from test_snake import coarse

    import softsnake.sim.model as model_module
    from softsnake.robots.snake_sim import SnakeSim

    cuda = TEST_DEVICE != "cpu"
    if not cuda:
        monkeypatch.setattr(wp.config, "enable_cpu_blocks", True)
        monkeypatch.setattr(model_module, "list_chunk", lambda device: 8)  # the GPU's chunks
    # (block lanes, the solve's lanes)
    lanes_compared, frames = (((256, 256), (32, 32)), 3) if cuda else (((1, 1), (32, 32), (64, 64), (32, 64)), 1)
    out = {}
    for lanes in lanes_compared:
        cfg = coarse()
        block_dim, solve_block_dim = (0 if n == 1 else n for n in lanes)
        cfg = dataclasses.replace(
            cfg, solver=dataclasses.replace(cfg.solver, block_dim=block_dim, solve_block_dim=solve_block_dim)
        )
        sim = SnakeSim(worlds=2, device=TEST_DEVICE, config=cfg)
        assert (sim.solver.block_dim, sim.solver.solve_block_dim) == lanes
        sim.set_pressure_targets(np.full(sim.links, 5.0))
        sim.step(frames)
        q = sim.state.particle_q.numpy()
        assert np.array_equal(q[: len(q) // 2], q[len(q) // 2 :])  # the batch's worlds never meet
        out[lanes] = q
    first = lanes_compared[0]
    moved = np.abs(out[first] - SnakeSim(worlds=2, device=TEST_DEVICE, config=coarse()).state.particle_q.numpy()).max()
    assert moved > 1e-4  # the steps moved the snake: the comparison is not vacuous
    bound = 1e-3 * moved if cuda else 2.7e-7
    for lanes in lanes_compared[1:]:
        assert np.abs(out[lanes] - out[first]).max() <= bound, lanes


def test_the_gpus_configuration_runs_the_full_snake_on_the_cpu(monkeypatch):
    """The full snake in the configuration a GPU runs by default, 256 lanes per world (Warp's cooperative CPU blocks),
    the linear solve's tables in slices of 32 rows and the lists summed in chunks of 8, agrees with one lane after one
    frame at 5 psi to float32 round-off: measured 1.37e-6 m (particles) and 7.4e-7 m (body positions), where Young's
    modulus × (1 ± 1e-6) moves one lane's snake 1.6e-6–1.9e-6 m and 4.4e-7–4.8e-7 m; bounds 3× the measurement. The
    lanes test above runs the coarse snake at 32 and 64 lanes; this one the full link meshes, their long incidence and
    coarse-node lists and 256 lanes, before a GPU runs them."""
    if TEST_DEVICE != "cpu":
        pytest.skip("a GPU runs this configuration by default (the lanes test covers it)")
    import dataclasses

    import warp as wp

    import softsnake.sim.model as model_module
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim

    out = []
    for lanes, width in ((1, 0), (256, 32)):
        if lanes > 1:
            monkeypatch.setattr(wp.config, "enable_cpu_blocks", True)
            monkeypatch.setattr(model_module, "list_chunk", lambda device: 8)  # the GPU's chunks
        cfg = SnakeConfig()
        solver = dataclasses.replace(cfg.solver, block_dim=0 if lanes == 1 else lanes, slice_width=width)
        sim = SnakeSim(worlds=1, device=TEST_DEVICE, config=dataclasses.replace(cfg, solver=solver))
        assert (sim.solver.block_dim, sim.solver.solve_block_dim) == (lanes, lanes)
        sim.set_pressure_targets(np.full(sim.links, 5.0))
        sim.step(1)
        out.append((sim.state.particle_q.numpy(), sim.state.body_q.numpy()[:, :3]))
    start = SnakeSim(worlds=1, device=TEST_DEVICE).state.particle_q.numpy()
    assert np.abs(out[0][0] - start).max() > 1e-4  # measured 5.5e-4 m: the frame moved the snake
    assert np.abs(out[1][0] - out[0][0]).max() <= 4.1e-6
    assert np.abs(out[1][1] - out[0][1]).max() <= 2.2e-6


def test_chunked_list_sums_match_whole_lists(monkeypatch):
    """On a GPU the lanes of a world sum each rigid body's J_bᵀx and each coarse node's Pᵀr in chunks of its list
    (softsnake/sim/model.py, list_chunk); the CPU sums whole lists. Forced on the CPU, chunks of 1 and 3 entries give
    the coarse snake's 30 frames the same state up to float32 summation order: measured 1.6e-7 m (particles) and
    5.8e-6 (body poses) at most, against 2.7e-7 / 1.0e-5 from Young's modulus × (1 ± 1e-6); bounds 3× the
    measurement."""
    if TEST_DEVICE != "cpu":
        pytest.skip("a GPU chunks by default (the lanes test covers it)")
    import softsnake.sim.model as model_module
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim

    out = {}
    for chunk in (0, 1, 3):
        monkeypatch.setattr(model_module, "list_chunk", lambda device, chunk=chunk: chunk)
        sim = SnakeSim(worlds=1, device=TEST_DEVICE, config=SnakeConfig().with_coarse_mesh())
        counts = np.diff(sim.solver.model.body_data.body_chunk_start.numpy())
        lengths = np.diff(sim.solver.model.body_data.body_incidence_start.numpy())
        assert np.array_equal(counts, -(-lengths // chunk) if chunk else np.minimum(lengths, 1))
        for _ in range(30):
            sim.step()
        out[chunk] = sim.state.particle_q.numpy(), sim.state.body_q.numpy()
    for chunk in (1, 3):
        assert np.abs(out[chunk][0] - out[0][0]).max() <= 4.7e-7
        assert np.abs(out[chunk][1] - out[0][1]).max() <= 1.75e-5


def test_chunk_lists_cuts_each_list_in_order():
    """softsnake.sim.model.chunk_lists: chunks of at most ``chunk`` entries that cover each list in order, none for an
    empty list; chunk 0 keeps each list whole."""
    from softsnake.sim.model import chunk_lists

    start = np.array([0, 5, 5, 6, 14])
    chunk_start, first, end = chunk_lists(start, 3)
    assert chunk_start.tolist() == [0, 2, 2, 3, 6]
    assert first.tolist() == [0, 3, 5, 6, 9, 12] and end.tolist() == [3, 5, 6, 9, 12, 14]
    chunk_start, first, end = chunk_lists(start, 0)
    assert chunk_start.tolist() == [0, 1, 1, 2, 3] and first.tolist() == [0, 5, 6] and end.tolist() == [5, 6, 14]
