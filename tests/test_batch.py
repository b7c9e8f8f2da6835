"""Acceptance 6: worlds in one model are independent and identical to single-world runs; the thrown cube they run is
itself checked against Coulomb's impact prediction at the budget."""

import numpy as np
import pytest

import softsnake as ss
import softsnake.validation as V
from helpers import TEST_DEVICE


def build(worlds, mu=(0.4, 0.8), cells=2):
    """A soft 6 cm cube thrown at (0.3, 0.1, 0) m/s from 2 cm above anisotropic ground, and a compliant pendulum."""
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((0.06, 0.06, 0.06), (cells, cells, cells), origin=(-0.03, -0.03, 0.02))
    b.add_soft_mesh(
        mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=1.0e5, poisson_ratio=0.3, vel=(0.3, 0.1, 0.0)
    )
    pin = b.add_particle((0.0, 0.0, 0.3), mass=0.0)
    bob = b.add_particle((0.1, 0.0, 0.3), mass=0.05)
    b.add_distance(pin, bob, compliance=1e-4)
    b.add_ground_plane(mu=mu)
    return b.finalize(device=TEST_DEVICE, worlds=worlds)


def run(model, state, steps=60):
    # the real-time budget, h = 1/120 s, 4 Newton × 20: the cube lands after 7 steps (test below)
    solver = ss.Solver(model, dt=1.0 / 120.0, newton_iterations=4, linear_iterations=20)
    for _ in range(steps):
        solver.step(state)
        cube_speed = np.abs(state.particle_qd.numpy().reshape(model.worlds, model.particle_count, 3)[:, :-2])
        assert cube_speed.max() < 1.0  # physically sane: the cube never moves faster than its throw + fall
    return state.particle_q.numpy().reshape(model.worlds, model.particle_count, 3)


def test_batched_worlds_match_single_world_and_stay_independent():
    single = run(build(1), build(1).state())[0]
    model = build(8)
    same = run(model, model.state())
    for w in range(8):  # a world's block never sees another world: the single world's bits (docs/solver.md)
        assert np.array_equal(same[w], single), w
    # perturb world 3 only: the others still reproduce the single run exactly
    state = model.state()
    q = state.particle_q.numpy().reshape(8, model.particle_count, 3)
    q[3, :-2, 2] += 0.01
    state.particle_q.assign(q.reshape(-1, 3))
    pert = run(model, state)
    for w in range(8):
        diff = np.abs(pert[w] - single).max()
        if w == 3:
            assert diff > 1e-3
        else:
            assert diff == 0.0, w


# measured at the budget over 2 s (h = 1/120 s, 4 × 20): slide of the centre of mass against the point-mass
# prediction, 0.917 / 0.511 mm off (the soft cube's impact spreads over a few steps, and it slides on for ~15 steps
# after the prediction has stopped it at landing: μ·0.63 m/s of normal impulse exceeds the 0.32 m/s throw); deepest
# penetration 1.66 / 4.77 µm; fastest particle at the end 3.1 / 8.7 µm/s; bounds ~3×
@pytest.mark.parametrize(
    "mu, cells, slide_bound, depth_bound, speed_bound",
    [((0.4, 0.8), 2, 2.8e-3, 5.0e-6, 9.4e-6), (0.5, 4, 1.5e-3, 1.4e-5, 2.6e-5)],
)
def test_thrown_cube_lands_and_stops_as_coulomb_predicts(mu, cells, slide_bound, depth_bound, speed_bound):
    """The thrown cube at the budget: at rest after 2 s, no penetration, and its slide against the Coulomb impact
    prediction: a point mass thrown the same way, stepped by implicit Euler with an inelastic contact and the
    maximal-dissipation elliptic cone (validation.implicit_euler_thrown_block)."""
    model = build(1, mu, cells)
    state = model.state()
    solver = ss.Solver(model)
    mass = model.particle_mass[:-2]
    start = np.average(state.particle_q.numpy()[:-2], axis=0, weights=mass)
    deepest = 0.0
    for _ in range(240):
        solver.step(state)
        deepest = max(deepest, -float(state.particle_q.numpy()[:-2, 2].min()))
    slide = np.average(state.particle_q.numpy()[:-2], axis=0, weights=mass)[:2] - start[:2]
    path = V.implicit_euler_thrown_block((0.0, 0.0, 0.02), (0.3, 0.1, 0.0), mu, h=solver.dt, seconds=2.0)
    expected = path[-1, :2] - path[0, :2]
    assert np.linalg.norm(slide - expected) < slide_bound, (slide, expected)
    assert deepest < depth_bound
    assert np.abs(state.particle_qd.numpy()[:-2]).max() < speed_bound


def test_captured_step_replays_the_eager_step_exactly(monkeypatch):
    """A captured step (CUDA graph, or Warp's opt-in CPU capture) must give the eager step's numbers exactly, also
    across a state swap (the graph is re-captured for the new arrays) and a restored checkpoint (the carried
    multipliers live in the solver's own arrays). The graph replays are counted, so the comparison cannot pass by both
    runs being eager: each of the three stretches captures on its first step and replays the rest, 19 + 4 + 19."""
    import warp as wp

    replays = []
    original = wp.capture_launch
    monkeypatch.setattr(wp, "capture_launch", lambda graph, *a, **kw: (replays.append(1), original(graph, *a, **kw))[1])
    results = []
    for capture in (False, True):
        replays.clear()
        model = build(2)
        state = model.state()
        solver = ss.Solver(model, graph_capture=capture, cpu_graph_capture=capture)
        for _ in range(20):
            solver.step(state)
        saved = solver.carried_state()
        other = model.state()
        for _ in range(5):
            solver.step(other)
        solver.restore_carried_state(saved)
        for _ in range(20):
            solver.step(state)
        assert len(replays) == (42 if capture else 0), (capture, len(replays))
        results.append((state.particle_q.numpy(), other.particle_q.numpy()))
    for eager, captured in zip(*results):
        np.testing.assert_array_equal(eager, captured)


def test_a_reset_world_steps_as_in_a_new_model_and_the_others_are_untouched():
    """Solver.reset_worlds + Model.reset_worlds: a world set back mid-run then steps bit for bit as the same world of a
    freshly built model, and the world beside it as if nothing happened (the per-world reset of a learning
    environment)."""
    import softsnake as ss
    from softsnake.scenes import soft_slab_with_rigid_chain

    def steps(solver, state, n):
        for _ in range(n):
            solver.step(state)

    model = soft_slab_with_rigid_chain(cells=(6, 2, 2)).finalize(device=TEST_DEVICE, worlds=2)
    state, solver = model.state(), ss.Solver(model)
    reference_state, reference = model.state(), ss.Solver(model)
    steps(solver, state, 20)
    steps(reference, reference_state, 20)
    solver.reset_worlds([1])
    model.reset_worlds(state, [1])
    steps(solver, state, 15)
    steps(reference, reference_state, 15)
    fresh_state, fresh = model.state(), ss.Solver(model)
    steps(fresh, fresh_state, 15)
    n, nb = model.particle_count, model.body_count
    for name, per in (("particle_q", n), ("particle_qd", n), ("body_q", nb), ("body_qd", nb)):
        now, ref, new = (getattr(st, name).numpy() for st in (state, reference_state, fresh_state))
        assert np.array_equal(now[:per], ref[:per]), name  # world 0 untouched by the reset of world 1
        assert np.array_equal(now[per:], new[per:]), name  # world 1 as in a new model
        assert not np.array_equal(now[per:], ref[per:]), name  # and the reset changed it: not vacuous


def test_per_world_ground_friction_equals_a_model_built_with_it():
    """Control.shape_mu gives each world its own static-shape friction: a cube pushed along the ground in a world
    whose ground has μ = 0.2 slides as in a model built with μ = 0.2, bit for bit, and farther than its neighbour
    on μ = 0.6."""
    import softsnake as ss
    from softsnake import validation as V

    def pushed(mu: float, worlds: int):
        b = ss.ModelBuilder()
        V.soft_cube(b, 0.03, 2, youngs=2e5, vel=(0.5, 0.0, 0.0))
        b.add_ground_plane(mu=mu)
        model = b.finalize(device=TEST_DEVICE, worlds=worlds)
        return model, model.state(), model.control(), ss.Solver(model)

    model, state, control, solver = pushed(0.6, 2)
    mu = control.shape_mu.numpy()
    mu[1] = (0.2, 0.2)  # world 1's ground
    control.shape_mu.assign(mu)
    alone_model, alone, _, alone_solver = pushed(0.2, 1)
    for _ in range(30):
        solver.step(state, control)
        alone_solver.step(alone)
    n = model.particle_count
    q = state.particle_q.numpy()
    assert np.array_equal(q[n:], alone.particle_q.numpy())
    assert q[n:, 0].mean() > q[:n, 0].mean() + 0.01  # the slipperier ground lets it slide farther


def test_copy_worlds_copies_exactly_the_chosen_blocks():
    """The device copy behind reset_worlds: runs of consecutive worlds from a whole array and one block into each
    chosen world; the other worlds keep every value."""
    import warp as wp

    from softsnake.sim.model import copy_worlds, world_indices

    W, rows = 6, 3
    before = np.arange(W * rows * 2, dtype=np.float32).reshape(W * rows, 2)
    source = -before
    chosen = world_indices([4, 0, 1, 4, 3], W)
    for src, expect in (
        (source, lambda w: source[w * rows : (w + 1) * rows]),
        (source[:rows], lambda w: source[:rows]),
    ):
        dst = wp.array(before, dtype=float, device=TEST_DEVICE)
        copy_worlds(dst, wp.array(src, dtype=float, device=TEST_DEVICE), chosen, W)
        got = dst.numpy()
        for w in range(W):
            block = slice(w * rows, (w + 1) * rows)
            assert np.array_equal(got[block], expect(w) if w in chosen else before[block]), w
    with pytest.raises(ValueError, match=r"worlds must lie in \[0, 6\), got \[6\]"):
        world_indices([6], W)
