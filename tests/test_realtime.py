"""The solver at the paper's real-time budget (h = 1/120 s, 4 Newton × 20 linear iterations, default settings: primal
FEM, warm start on).

Every scene compares with an independent reference: Coulomb's law for the incline and the slide to a stop, rest and
penetration bounds for a frictional impact, a rigid stack that must stay put, an independent linear-FEM solve for a
clamped stiff beam. The scenes live in
``softsnake.validation`` (shared with ``benchmarks/convergence.py``)."""

import numpy as np
import pytest
from helpers import TEST_DEVICE

import softsnake as ss
import softsnake.validation as V

pytestmark = pytest.mark.skipif(TEST_DEVICE != "cpu", reason="validation scenes are built on the CPU")


@pytest.mark.parametrize("slope, dt", [(0.3, 1.0 / 120.0), (0.3, 1.0 / 60.0), (0.45, 1.0 / 120.0)])
def test_soft_cube_sticks_below_the_friction_angle(slope, dt):
    r = V.run_incline(slope, 0.5, solver_kwargs=dict(dt=dt))
    assert r["drift"] < 1e-3, r["drift"]


@pytest.mark.parametrize("slope, mu", [(0.8, 0.3), (0.55, 0.5)])
def test_soft_cube_slides_with_coulomb_acceleration(slope, mu):
    r = V.run_incline(slope, mu)
    assert r["accel"] == pytest.approx(r["expected_accel"], rel=0.10)


def test_pushed_cube_stops_after_the_coulomb_distance():
    r = V.run_slide_to_stop(v0=0.5, mu=0.4)
    assert r["distance"] == pytest.approx(r["expected"], rel=0.15)  # v0²/(2μg) = 31.9 mm
    assert r["speed"] < 1e-3


def test_frictional_impact_of_a_soft_cube_is_stable_and_comes_to_rest():
    r = V.run_drop(seconds=2.0, size=0.06, cells=3, youngs=1.0e5, height=0.05, side_speed=0.3, mu=0.5)
    assert r["finite"]
    assert r["penetration"] < 3e-3
    assert r["max_speed"] < 1e-3
    assert r["height"] == pytest.approx(0.06, rel=0.05)  # still standing on a face, not tipped onto an edge


@pytest.mark.parametrize(
    "dt, linear_iterations, rel",
    [(1.0 / 120.0, 20, 0.10), (0.02, 40, 0.05)],
    ids=["h=1/120,4x20", "h=20ms,4x40"],
)
def test_stiff_cantilever_holds_its_static_deflection(dt, linear_iterations, rel):
    # 100×10×10 mm, E = 5 MPa, 30×3×3 cubes (1620 tets): the scene the dual solver left 40× too soft at this budget
    ref = V.cantilever_reference()
    r = V.run_cantilever(seconds=2.0, solver_kwargs=dict(dt=dt, linear_iterations=linear_iterations))
    print(f"\ncantilever h={dt:.4f} 4x{linear_iterations}: tip/reference = {r['tip'] / ref:.4f}, swing/reference = {r['swing'] / ref:.2e}")
    assert r["tip"] == pytest.approx(ref, rel=rel)
    assert r["swing"] < 0.01 * ref  # at rest: no steady swing over the last 0.5 s
    # and it stays put (criterion 3): < 1 µm/s mean speed over the next 0.5 s, each step starting at round-off residual
    solver, state = r["solver"], r["state"]
    x0 = state.particle_q.numpy().copy()
    start = []
    for _ in range(round(0.5 / dt)):
        solver.step(state)
        start.append(solver.diagnostics().residual_norm[0, 0])
    assert np.abs(state.particle_q.numpy() - x0).max() / 0.5 < 1e-6
    assert max(start) / np.sqrt(solver.model.row_count) < 1e-5


def test_offset_box_stack_stays_stacked_for_ten_seconds():
    r = V.run_box_stack(seconds=10.0, count=3, offset=0.003)
    assert r["sink"] < 1e-3
    assert r["height_error"] < 1e-3
    assert r["shift"] < 0.02  # each box still rests on the one below (half extent 0.05 m; built with 3 mm offsets)


def test_warm_started_body_at_rest_stays_at_rest_with_round_off_residual():
    b = ss.ModelBuilder()
    V.soft_cube(b, 0.06, 3, youngs=1.0e5)
    b.add_ground_plane(mu=0.5)
    model = b.finalize()
    state = model.state()
    solver = ss.Solver(model, dt=1.0 / 120.0)
    assert solver.config.warm_start == 1.0 and solver.config.contact_warm_start == 1.0
    for _ in range(480):  # 4 s: the squashed cube's base spreads against friction for ~3 s (creep at the stick speed)
        solver.step(state)
    x0 = state.particle_q.numpy().copy()
    start, speed = [], []
    for _ in range(60):
        solver.step(state)
        start.append(solver.diagnostics().residual_norm[0, 0])
        speed.append(np.abs(state.particle_qd.numpy()).max())
    rows = model.row_count
    # per-row start residual at float32 round-off of c/h (positions ~1e-7 relative → ~1e-5 m/s per row)
    assert max(start) / np.sqrt(rows) < 1e-4
    # at rest: < 1 µm/s over 0.5 s; a single step moves at most ~2 ulp of a 6 cm coordinate (1 ulp/step = 0.9 µm/s)
    assert np.abs(state.particle_q.numpy() - x0).max() / 0.5 < 1e-6
    assert max(speed) < 2e-6


def _stop_error(kw):
    r = V.run_slide_to_stop(v0=0.5, mu=0.4, seconds=0.3, solver_kwargs=kw)
    h = kw.get("dt", V.REALTIME["dt"])
    # implicit Euler stops after v0/(μgh) steps having moved v0²/(2μg) − v0·h/2: the discrete Coulomb reference
    return abs(r["distance"] - (r["expected"] - 0.5 * h / 2.0))


@pytest.mark.parametrize(
    "scene",
    [
        lambda kw: V.run_incline(0.45, 0.5, seconds=0.3, solver_kwargs=kw)["drift"],
        _stop_error,
        lambda kw: V.run_drop(seconds=0.3, solver_kwargs=kw)["penetration"],
    ],
    ids=["stick", "stop", "drop"],
)
def test_raising_the_budget_never_makes_a_scene_worse(scene):
    # the rich budgets are caps: a linear solve that converged (residual 1e-6 of its start) stops early on the CPU
    errors = [scene(dict(newton_iterations=n, linear_iterations=l, linear_tolerance=1e-6 if l > 20 else 0.0)) for n, l in ((4, 20), (8, 200), (8, 400))]
    for cheap, rich in zip(errors, errors[1:]):
        assert rich <= cheap * 1.1 + 2e-4, errors
