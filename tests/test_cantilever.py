"""Acceptance 1: clamped cantilever under self-weight vs an independent linear FEM solve and beam theory.

The engine settles the beam dynamically (implicit Euler damps it to the static equilibrium); the reference solves
K u = f on the same mesh with scipy's sparse direct solver. Ratios to Euler-Bernoulli + Timoshenko theory are printed
(run pytest with -s) and must increase with resolution (linear tets are too stiff in bending and converge from below).
"""

import numpy as np
import pytest

import softsnake as ss
from helpers import TEST_DEVICE
from softsnake.reference_fem import cantilever_tip_deflection, linear_fem_displacement

LENGTH, DEPTH, YOUNGS, DENSITY, G = 0.16, 0.02, 1.0e7, 1000.0, 9.81  # L/depth = 8; tip deflection ≈ 1% of L


def beam_mesh(n):
    return ss.box_tet_mesh((LENGTH, DEPTH, DEPTH), (8 * n, n, n))


def settle(mesh, nu, steps, dt=1.0 / 120.0, linear_iterations=20):
    b = ss.ModelBuilder(gravity=(0.0, 0.0, -G))
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=DENSITY, youngs_modulus=YOUNGS, poisson_ratio=nu)
    clamp = np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]
    b.fix_particles(clamp)
    model = b.finalize(device=TEST_DEVICE)
    state = model.state()
    # real-time step, default warm start: the carried multipliers converge the static stress across steps
    solver = ss.Solver(model, dt=dt, newton_iterations=4, linear_iterations=linear_iterations)
    tip = np.nonzero(mesh.vertices[:, 0] > LENGTH - 1e-9)[0]
    late = []
    for k in range(steps):
        solver.step(state)
        if k >= steps - 60:
            late.append(mesh.vertices[tip, 2].mean() - state.particle_q.numpy()[tip, 2].mean())
    return state.particle_q.numpy() - mesh.vertices, clamp, np.ptp(late)


# Both meshes at the paper's budget (4 × 20): the primal FEM step's coarse level carries the clamp's support along the
# beam (the earlier dual solver needed 60 PCR iterations for the 16×2×2 beam; docs/solver.md).
# measured after 2 s at the budget: tip −3.6e-6 / −5.3e-5 of the FEM's, swing over the last 0.5 s 1.7e-4 / 4.7e-5 of
# it. The tip answers round-off: a tet-by-tet elastic product instead of the assembled one (before the coarse
# correction's rotation moved to x⁻ + h·v⁻) gave +4.1e-5 / −6.7e-5 and swings 2.8e-4 / 4.8e-5; each bound is 3× the
# larger of the two
@pytest.mark.parametrize("n, tip_bound, swing_bound", [(1, 1.2e-4, 8.5e-4), (2, 2.0e-4, 1.5e-4)])
def test_cantilever_matches_linear_fem(n, tip_bound, swing_bound):
    mesh = beam_mesh(n)
    u, clamp, swing = settle(mesh, 0.3, 240)
    tip = np.nonzero(mesh.vertices[:, 0] > LENGTH - 1e-9)[0]
    ref = linear_fem_displacement(mesh.vertices, mesh.tets, YOUNGS, 0.3, DENSITY, (0, 0, -G), clamp)
    engine_tip, ref_tip = -u[tip, 2].mean(), -ref[tip, 2].mean()
    beam = cantilever_tip_deflection(LENGTH, DEPTH, DEPTH, YOUNGS, 0.3, DENSITY, G)
    print(
        f"\n{8 * n}x{n}x{n} cubes ({len(mesh.tets)} tets): engine/FEM = {engine_tip / ref_tip:.4f}, FEM/beam = "
        f"{ref_tip / beam:.3f}"
    )
    assert engine_tip == pytest.approx(ref_tip, rel=tip_bound)
    assert swing < swing_bound * ref_tip  # settled: no steady swing over the last 0.5 s


def test_reference_only_linear_tets_converge_toward_beam_theory_and_lock_when_incompressible():
    """A check of the FEM reference alone (no engine): it approaches Euler-Bernoulli + Timoshenko theory from below as
    the mesh is refined, and locks at ν → 1/2."""
    beam = cantilever_tip_deflection(LENGTH, DEPTH, DEPTH, YOUNGS, 0.3, DENSITY, G)
    ratios = []
    for n in (1, 2, 3, 4):
        mesh = beam_mesh(n)
        clamp = np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]
        tip = np.nonzero(mesh.vertices[:, 0] > LENGTH - 1e-9)[0]
        ref = linear_fem_displacement(mesh.vertices, mesh.tets, YOUNGS, 0.3, DENSITY, (0, 0, -G), clamp)
        ratios.append(-ref[tip, 2].mean() / beam)
    print("\nFEM/beam theory at nu=0.3 for 8n x n x n meshes, n=1..4:", np.round(ratios, 3))
    assert np.all(np.diff(ratios) > 0) and ratios[-1] < 1.0
    mesh = beam_mesh(4)
    clamp = np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]
    tip = np.nonzero(mesh.vertices[:, 0] > LENGTH - 1e-9)[0]
    locked = linear_fem_displacement(mesh.vertices, mesh.tets, YOUNGS, 0.4999, DENSITY, (0, 0, -G), clamp)
    beam_inc = cantilever_tip_deflection(LENGTH, DEPTH, DEPTH, YOUNGS, 0.4999, DENSITY, G)
    ratio = -locked[tip, 2].mean() / beam_inc
    print(f"FEM/beam theory at nu=0.4999 (32x4x4): {ratio:.3f}  (volumetric locking)")
    assert ratio < 0.1
