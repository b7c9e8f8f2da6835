"""The compact particle–shape contact list (contacts that scale): contact rows grow with the contacts, not
with particles × shapes; the list's capacity never changes the answer; a full list is reported, not silently cut."""

import numpy as np
import pytest

import softsnake as ss
import softsnake.validation as V
from helpers import TEST_DEVICE

H = 1.0 / 120.0


def cube_among_posts(posts: int, *, vel=(0.0, 0.0, 0.0), z: float = 0.0, wall: bool = False):
    """A 4 cm soft cube on the ground among ``posts`` static 2 cm boxes on a grid (none within 10 cm of it), with an
    optional wall (a box with its face at x = 5 cm), a sphere and a cylinder beside it."""
    b = ss.ModelBuilder()
    V.soft_cube(b, 0.04, 3, youngs=1e5, z=z, vel=vel, damping=0.002)
    b.add_ground_plane(mu=0.4)
    if wall:
        b.add_shape_box(-1, (0.01, 0.05, 0.03), pos=(0.06, 0.0, 0.03), mu=0.3)
        b.add_shape_sphere(-1, 0.015, pos=(0.0, 0.06, 0.01), mu=0.2)
        b.add_shape_cylinder(-1, 0.01, 0.03, pos=(-0.06, 0.0, 0.03))
    for k in range(posts):
        ang = 2 * np.pi * k / max(posts, 1)
        b.add_shape_box(-1, (0.01, 0.01, 0.02), pos=(0.15 * np.cos(ang), 0.15 * np.sin(ang), 0.02))
    return b


def run(builder, steps, **finalize):
    model = builder.finalize(device=TEST_DEVICE, **finalize)
    state = model.state()
    solver = ss.Solver(model)  # the real-time default: h = 1/120 s, 4 Newton × 20 MINRES
    for _ in range(steps):
        solver.step(state)
    return model, state, solver


def test_rows_grow_with_contacts_not_shapes_and_the_ground_carries_the_weight():
    few, many = cube_among_posts(2).finalize(device=TEST_DEVICE), cube_among_posts(60).finalize(device=TEST_DEVICE)
    assert many.shape_count == few.shape_count + 58
    assert many.row_count == few.row_count  # two slots per particle, whatever the number of shapes
    model, state, solver = run(cube_among_posts(60), 120)
    ln, _ = solver.contact_impulses()
    assert ln.shape == (1, model.particle_count, model.shape_count)
    # at rest, the ground's normal impulses carry the weight over the step (measured to −3.1e-7); the posts carry
    # nothing; the fastest particle at 1.9 µm/s; bounds 3×
    assert ln[0, :, 0].sum() == pytest.approx(model.particle_mass.sum() * 9.81 * H, rel=9.2e-7)
    assert np.all(ln[0, :, 1:] == 0.0)
    assert np.abs(state.particle_qd.numpy()).max() < 5.6e-6


def test_capacity_does_not_change_the_answer_and_the_wall_stops_the_cube():
    scene = lambda: cube_among_posts(8, vel=(0.6, 0.1, 0.0), z=0.001, wall=True)  # noqa: E731
    n = scene().particle_count
    runs = [run(scene(), 40, contact_capacity=c) for c in (None, n * scene().shape_count)]
    (m0, s0, v0), (m1, s1, v1) = runs
    assert m0.row_count < m1.row_count
    # the unused slots of the larger list add nothing: the same bits (measured: 0.0 apart)
    assert np.array_equal(s0.particle_q.numpy(), s1.particle_q.numpy())
    assert np.array_equal(v0.contact_impulses()[0], v1.contact_impulses()[0])
    q = s0.particle_q.numpy()
    assert q[:, 0].max() < 0.05 + 1.6e-4  # the wall's face: the cube hit it and stopped (measured 55 µm into it)
    ln, _ = v0.contact_impulses()
    assert (ln[0, :, 1] > 0).sum() == 16  # it rests against the wall on its whole 4 × 4-node face


def test_a_full_contact_list_raises_and_restores_the_step():
    model = cube_among_posts(3).finalize(device=TEST_DEVICE, contact_capacity=5)
    state = model.state()
    q0 = state.particle_q.numpy().copy()
    solver = ss.Solver(model)
    with pytest.raises(ss.ContactCapacityExceeded, match=r"contact_capacity=\d+") as err:
        solver.step(state)
    assert err.value.capacity == 5
    assert err.value.needed[0] >= 16  # the cube's bottom face
    assert np.array_equal(state.particle_q.numpy(), q0)


@pytest.mark.parametrize("capacity", [-1, 1.5, True, "8"])
def test_bad_capacity_is_a_clear_error(capacity):
    with pytest.raises((ValueError, TypeError), match="contact_capacity"):
        cube_among_posts(2).finalize(device=TEST_DEVICE, contact_capacity=capacity)


def test_carried_list_resumes_bit_for_bit_and_a_state_without_the_list_is_refused():
    scene = lambda: cube_among_posts(2, vel=(0.6, 0.1, 0.0), z=0.001, wall=True)  # noqa: E731
    model, state, solver = run(scene(), 6)
    saved, start = solver.carried_state(), state.copy()
    for _ in range(4):
        solver.step(state)
    again = ss.Solver(model)
    resumed = start.copy()
    again.restore_carried_state(saved)
    for _ in range(4):
        again.step(resumed)
    assert np.array_equal(resumed.particle_q.numpy(), state.particle_q.numpy())
    # a solver state without the contact list (the dense layout of versions before it) is refused, naming what is
    # missing
    old = {k: v for k, v in saved.items() if not k.startswith("contact_") or k == "contact_lam_n_prev"}
    with pytest.raises(ValueError, match="contact_first"):
        ss.Solver(model).restore_carried_state(old)


def _cube_on_a_bed_of_posts(bvh_min_shapes, monkeypatch, steps=30):
    """A soft cube settling on 36 small posts and a sphere (particles touching up to several shapes at once)."""
    import softsnake.sim.contact_list as contact_list

    monkeypatch.setattr(contact_list, "BVH_MIN_SHAPES", bvh_min_shapes)
    b = ss.ModelBuilder()
    V.soft_cube(b, 0.04, 4, youngs=1e5, z=0.035, vel=(0.05, 0.02, 0.0))
    b.add_ground_plane(mu=0.4)
    for i in range(6):
        for j in range(6):
            b.add_shape_box(-1, (0.004, 0.004, 0.015), pos=(-0.03 + 0.012 * i, -0.03 + 0.012 * j, 0.015), mu=0.5)
    b.add_shape_sphere(-1, 0.01, pos=(0.0, 0.0, 0.035), mu=0.3)
    model = b.finalize(device=TEST_DEVICE, contact_capacity=400)
    state = model.state()
    solver = ss.Solver(model)
    for _ in range(steps):
        solver.step(state)
    normal, _ = solver.contact_impulses()
    return solver, state, normal


def test_bvh_broadphase_gives_the_list_of_the_full_scan(monkeypatch):
    """With a BVH over the shapes (the default from BVH_MIN_SHAPES bounded shapes on) the candidates, their slot order
    and so the whole run are those of testing every particle against every shape."""
    scan, scan_state, scan_normal = _cube_on_a_bed_of_posts(10**9, monkeypatch)
    bvh, bvh_state, bvh_normal = _cube_on_a_bed_of_posts(1, monkeypatch)
    assert scan.contact_list.data.bvh.active == 0 and bvh.contact_list.data.bvh.active == 1
    assert (
        (bvh_normal > 0).sum(axis=2) > 1
    ).sum() >= 5  # particles pressing on two shapes at once: the runs are sorted
    assert (bvh_normal[..., 1:37] > 0).any()  # the posts carry the cube
    np.testing.assert_array_equal(bvh_state.particle_q.numpy(), scan_state.particle_q.numpy())
    np.testing.assert_array_equal(bvh_normal, scan_normal)
    assert _cube_on_a_bed_of_posts(16, monkeypatch, steps=1)[0].contact_list.data.bvh.active == 1  # 37 bounded shapes
