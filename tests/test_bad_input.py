"""Bad input raises a clear ValueError; divergence raises instead of continuing silently."""

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE

CUBE = ss.box_tet_mesh((0.1, 0.1, 0.1), (1, 1, 1))


def soft(**kw):
    args = dict(density=1000.0, youngs_modulus=1e5, poisson_ratio=0.3)
    args.update(kw)
    return args


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda b: b.add_particle((0, 0, 0), mass=-1.0), "mass"),
        (lambda b: b.add_particle((0, 0, 0), mass=float("nan")), "mass"),
        (lambda b: b.add_particle((0, float("nan"), 0)), "pos"),
        (lambda b: b.add_distance(0, 5), "out of range"),
        (lambda b: b.add_distance(0, 0), "repeated"),
        (lambda b: b.add_distance(0, 1, compliance=-1.0), "compliance"),
        (lambda b: b.add_distance(0, 1, compliance=float("nan")), "compliance"),
        (lambda b: b.fix_particles([7]), "out of range"),
        (lambda b: b.add_soft_mesh(CUBE.vertices, CUBE.tets, **soft(youngs_modulus=-1.0)), "youngs_modulus"),
        (lambda b: b.add_soft_mesh(CUBE.vertices, CUBE.tets, **soft(poisson_ratio=0.5)), "poisson_ratio"),
        (lambda b: b.add_soft_mesh(CUBE.vertices, CUBE.tets, **soft(poisson_ratio=float("nan"))), "poisson_ratio"),
        (lambda b: b.add_soft_mesh(CUBE.vertices, CUBE.tets, **soft(density=0.0)), "density"),
        (lambda b: b.add_soft_mesh(CUBE.vertices, CUBE.tets + 100, **soft()), "out of range"),
        (lambda b: b.add_soft_mesh(CUBE.vertices, np.array([[0, 1, 1, 2]]), **soft()), "repeats"),
        (
            lambda b: b.add_soft_mesh(
                np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]), np.array([[0, 1, 2, 3]]), **soft()
            ),
            "degenerate",
        ),
        (
            lambda b: b.add_soft_mesh(CUBE.vertices, np.vstack([CUBE.tets, CUBE.tets[:1, [0, 2, 1, 3]]]), **soft()),
            "inverted",
        ),
        (lambda b: b.add_shape_box(3, (0.1, 0.1, 0.1)), "unknown body"),
        (lambda b: b.add_shape_box(-1, (0.1, -0.1, 0.1)), "half_extents"),
        (lambda b: b.add_shape_cylinder(-1, 0.1, 0.1, rot=(0, 0, 0, 2)), "unit quaternion"),
        (lambda b: b.add_ground_plane(mu=-0.1), "mu"),
        (lambda b: b.finalize(worlds=0), "worlds"),
        (lambda b: b.finalize(device="tpu"), "device"),
    ],
)
def test_builder_rejects_bad_input(call, match):
    b = ss.ModelBuilder()
    b.add_particle((0, 0, 0))
    b.add_particle((1, 0, 0))
    with pytest.raises(ValueError, match=match):
        call(b)


def test_unreadable_and_malformed_mesh_files(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        ss.read_tet_mesh(tmp_path / "missing.vtu")
    bad = tmp_path / "bad.vtu"
    bad.write_text("this is not a mesh")
    with pytest.raises(ValueError, match="cannot read"):
        ss.read_tet_mesh(bad)


def test_tet_mesh_roundtrip(tmp_path):
    path = tmp_path / "cube.vtu"
    ss.write_tet_mesh(path, CUBE)
    back = ss.read_tet_mesh(path)
    assert np.allclose(back.vertices, CUBE.vertices) and np.array_equal(back.tets, CUBE.tets)


def test_solver_settings_are_validated(tmp_path):
    b = ss.ModelBuilder()
    b.add_particle((0, 0, 0))
    model = b.finalize(device=TEST_DEVICE)
    for kw in (
        {"dt": -0.01},
        {"dt": float("nan")},
        {"newton_iterations": 0},
        {"linear_iterations": 2.5},
        {"on_nonfinite": "ignore"},
    ):
        with pytest.raises(ValueError):
            ss.Solver(model, **kw)
    toml = tmp_path / "solver.toml"
    toml.write_text("[solver]\nnewton_iterations = [")
    with pytest.raises(ValueError, match="malformed TOML"):
        ss.SolverConfig.from_toml(toml)
    toml.write_text("[solver]\nnewton_iterations = 6\nlinear_iterations = 30\n")
    assert ss.SolverConfig.from_toml(toml).newton_iterations == 6


def test_nonfinite_state_raises_and_restores():
    b = ss.ModelBuilder()
    a = b.add_particle((0, 0, 0), mass=1.0)
    c = b.add_particle((0.1, 0, 0), mass=1.0)
    b.add_distance(a, c)
    model = b.finalize(device=TEST_DEVICE, worlds=2)
    state = model.state()
    solver = ss.Solver(model, dt=0.01)
    solver.step(state)
    before = state.particle_q.numpy().copy()
    control = model.control()
    f = np.zeros((4, 3), dtype=np.float32)
    f[3, 0] = np.inf  # world 1 gets an infinite force
    control.particle_f.assign(f)
    with pytest.raises(ss.SimulationDiverged, match=r"\[1\]"):
        solver.step(state, control)
    assert np.array_equal(state.particle_q.numpy(), before)  # nothing lost
    flagging = ss.Solver(model, dt=0.01, on_nonfinite="flag")
    flagging.step(state, control)
    assert flagging.diverged_worlds == {1}
    q = state.particle_q.numpy()
    assert np.all(np.isfinite(q)) and not np.array_equal(q[:2], before[:2])  # world 0 advanced


def test_finite_runaway_is_caught_as_divergence():
    """A blow-up is caught while its values are still finite: a speed far beyond any physical scale of the scene."""
    b = ss.ModelBuilder()
    b.add_particle((0, 0, 0), mass=1.0)
    model = b.finalize(device=TEST_DEVICE, worlds=2)
    state = model.state()
    control = model.control()
    f = np.zeros((2, 3), dtype=np.float32)
    f[1, 0] = 1.0e6  # 1e6 m/s² for 0.01 s: 1e4 m/s, finite but no physics
    control.particle_f.assign(f)
    solver = ss.Solver(model, dt=0.01)
    before = state.particle_q.numpy().copy()
    with pytest.raises(ss.SimulationDiverged, match=r"\[1\]"):
        solver.step(state, control)
    assert np.array_equal(state.particle_q.numpy(), before)
    relaxed = ss.Solver(model, dt=0.01, max_speed=0.0)  # off
    relaxed.step(state, control)
    assert np.isfinite(state.particle_q.numpy()).all()


def test_step_errors_survive_a_process_pool():
    """A sweep in worker processes gets the error back pickled: the same worlds, counts and message, not the message
    re-read as the world list."""
    import pickle

    from softsnake.sim.contact_list import ContactCapacityExceeded

    for err in (ss.SimulationDiverged([0, 3]), ContactCapacityExceeded({2: 7}, 5)):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and vars(back) == vars(err)


def test_flagged_world_restarts_cold_and_the_others_keep_their_multipliers():
    b = ss.ModelBuilder()
    pivot = b.add_particle((0, 0, 0), mass=0.0)
    bob = b.add_particle((0.1, 0, 0), mass=1.0)
    b.add_distance(pivot, bob)  # a pendulum: the rod carries an impulse every step
    model = b.finalize(device=TEST_DEVICE, worlds=2)
    state, control = model.state(), model.control()
    solver = ss.Solver(model, dt=0.01, on_nonfinite="flag")
    solver.step(state)
    f = np.zeros((4, 3), dtype=np.float32)
    f[3, 0] = np.inf
    control.particle_f.assign(f)
    solver.step(state, control)
    assert solver.diverged_worlds == {1}
    lam = solver.lam.numpy().reshape(2, -1)
    assert lam[1, 0] == 0.0 and lam[0, 0] != 0.0
