"""Acceptance 5: resting contact of a soft cube on the ground and of particles on static boxes and cylinders."""

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE


def test_soft_cube_rests_on_ground_with_small_penetration():
    size = 0.1
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((size, size, size), (3, 3, 3), origin=(-size / 2, -size / 2, 0.05))
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=1070.0, youngs_modulus=2.0e5, poisson_ratio=0.3, damping=0.002)
    b.add_ground_plane(mu=0.5)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # the real-time default: h = 1/120 s, 4 Newton × 20 PCR
    for _ in range(180):  # 1.5 s: fall 5 cm, impact, settle
        solver.step(state)
    q, v = state.particle_q.numpy(), state.particle_qd.numpy()
    assert -q[:, 2].min() < 2.3e-10  # penetration [m]: measured 7.8e-11 (FB contact at the budget); bound 3×
    assert np.abs(v).max() < 2.3e-5  # at rest [m/s]: measured 7.7e-6
    assert solver.diagnostics().active_contacts[0] == 16  # the lower face's 4 × 4 vertices, all of them in contact


@pytest.mark.parametrize(
    "shape, top",
    [
        ("box", 0.2 + 0.05),  # box centred at z = 0.2 with half height 0.05
        ("cylinder_upright", 0.2 + 0.08),  # flat end face
        ("cylinder_lying", 0.2 + 0.06),  # curved face, axis along x
    ],
)
def test_particle_rests_on_static_shape(shape, top):
    b = ss.ModelBuilder()
    p = b.add_particle((0.0, 0.0, top + 0.05), mass=0.1)
    if shape == "box":
        b.add_shape_box(-1, (0.1, 0.1, 0.05), pos=(0.0, 0.0, 0.2), mu=0.5)
    elif shape == "cylinder_upright":
        b.add_shape_cylinder(-1, 0.06, 0.08, pos=(0.0, 0.0, 0.2), mu=0.5)
    else:
        s = np.sqrt(0.5)
        b.add_shape_cylinder(-1, 0.06, 0.2, pos=(0.0, 0.0, 0.2), rot=(0.0, s, 0.0, s), mu=0.5)
    b.add_ground_plane(mu=0.5)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    solver = ss.Solver(model)  # the real-time budget: h = 1/120 s, 4 Newton × 20
    for _ in range(120):
        solver.step(state)
    x = state.particle_q.numpy()[p]
    # on the face: measured at most 3.0e-8 m off (one float32 ulp of 0.25 m) and 2.9e-10 m sideways
    assert x[2] == pytest.approx(top, abs=9e-8)
    assert np.abs(x[:2]).max() < 9e-10
    ln, _ = solver.contact_impulses()
    assert ln[0, p, 0] == pytest.approx(
        0.1 * 9.81 * solver.dt, rel=4.5e-5
    )  # the shape carries the weight: measured ≤ 1.5e-5
