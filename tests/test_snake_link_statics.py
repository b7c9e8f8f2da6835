"""One snake link, held as a static reference holds it, against the exact static solution of the same model.

``validation.run_held_link`` simulates exactly the link ``build_snake`` builds (mesh, hollow-section material, hard
layer and perimeter rows, actuation rows) without gravity, ground or wheels, its first cross-section fixed and its last
one on a free rigid body; ``reference_link.held_link_static`` solves that model's static equilibrium in float64 with
nothing linearised (corotated tets, finite rotation of the end, nonlinear rows). The simulated curvature is the mean
over 1.5–2 s (pressure ramped over 0.5 s).

The link model has a defect these tests expose: in reduced coordinates 3 of its hard layer rows are redundant (the
five inextensible fibres on the centre plane all end on the rigid end section, which leaves them 2 independent axial
conditions), so the rows carry a self-stress (17–20 N on the coarse link, 5–7 N on the full one, against ~0.8 N of
actuation force at 1 psi) that the first-order, linearised solve (``reference_fem.link_static_curvature``, 0.5404 and
0.5641 1/(m·psi)) does not see, and the exact equilibrium is not unique: the full link at 1 psi settles at 0.4886,
0.4892 or 0.5247 1/m depending on the path of loading. The budget's truncated solves hardly move the multipliers
(MINRES reduces the residual by 0.3 % per Newton iteration here) and land near the linearised answer; richer budgets
move toward the exact one but the multipliers then drift in the rows' null space and the link never settles. Leaving
out the three inner fibres' rows of the last segment makes the exact solution unique (coarse 0.5418, full 0.5681
1/(m·psi) at 1 psi, within 0.3 / 0.7 % of the linearised one; measured with this reference), and the budget then
lands on it: coarse +0.00 / +0.00 %, full −0.03 / −0.58 % at 1 / 8 psi, coarse at 4 × 100 +0.00 / +0.00 % (measured
with those three rows taken out of ``LinkMesh.hard_pairs``, which both this test's model and its reference use). The
link is then softer at 8 psi (coarse 4.400 against 3.709 1/m with the rows), so the fix changes the snake: the chamber
area (fitted to the curvature slope, docs/snake.md) and the snake's results are to be re-measured with it.
"""

import numpy as np
import pytest

import softsnake.validation as V
from softsnake.reference_link import _corotated_tet_hessians, held_link_static
from softsnake.robots.snake import SnakeConfig

LINKS = {"coarse": SnakeConfig(sections=5, inner_ring=4), "full": SnakeConfig()}
PRESSURES = (1.0, 8.0)
#: loading increments of the reference (the full link's equilibrium depends on them; these converge)
INCREMENTS = {1.0: 2, 8.0: 16}


def settled(link: str, **solver_kwargs) -> dict:
    r = V.run_held_link(LINKS[link], PRESSURES, seconds=2.0, solver_kwargs=solver_kwargs)
    tail = r["curvature"][-60:]  # 1.5–2 s
    return {
        p: (float(tail[:, w].mean()), float(tail[:, w].min()), float(tail[:, w].max())) for w, p in enumerate(PRESSURES)
    }


@pytest.fixture(scope="module")
def budget():
    return {link: settled(link) for link in LINKS}


def reference(link: str, psi: float) -> float:
    return held_link_static(LINKS[link], psi, increments=INCREMENTS[psi])["curvature"]


# measured at the budget (mean over 1.5–2 s; range) against the reference:
#   coarse  1 psi: 0.5353 (0.5345–0.5361) against 0.4604: +16.3 %
#   coarse  8 psi: 3.7088 (3.673–3.775) against 3.6928: +0.43 % (+0.51 % before the assembled elastic product)
#   full    1 psi: 0.5617 (0.5608–0.5627) against 0.5247: +7.1 % (and +14.8 % from the other equilibrium, 0.4892)
#   full    8 psi: 4.2737 (4.258–4.288) against 4.1063: +4.1 %
GAP = (
    "the budget stays near the linearised answer of a link model whose redundant layer rows carry a self-stress "
    "(module docstring)"
)


@pytest.mark.parametrize(
    "link, psi",
    [
        pytest.param(
            "coarse", 1.0, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason="+16.3 %: " + GAP)
        ),
        ("coarse", 8.0),
        pytest.param("full", 1.0, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason="+7.1 %: " + GAP)),
        pytest.param("full", 8.0, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason="+4.1 %: " + GAP)),
    ],
)
def test_held_link_at_the_budget_matches_the_exact_static_solution(budget, link, psi):
    simulated, low, high = budget[link][psi]
    expected = reference(link, psi)
    print(f"\n{link} link at {psi:g} psi: {simulated:.4f} ({low:.4f}–{high:.4f}) against {expected:.4f} 1/m")
    assert simulated == pytest.approx(expected, rel=0.015), (simulated, expected)  # coarse 8 psi: +0.43 % measured


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="4 × 100 on the coarse link: +0.69 % / +1.1 % (mean 0.4636 / 3.7332) and it swings over "
    "0.449–0.475 / 3.714–3.753 1/m after 1.5 s: the redundant rows' multipliers drift (module docstring)",
)
def test_held_link_with_converged_solves_settles_at_the_exact_static_solution():
    # 4 × 100 converges each step's linear solves (residual reduced 250-fold in the first Newton iteration); the bound
    # is 0.5 %. Only the coarse link: the full one at a converged budget takes minutes.
    converged = settled("coarse", linear_iterations=100)
    for psi in PRESSURES:
        mean, low, high = converged[psi]
        expected = reference("coarse", psi)
        assert mean == pytest.approx(expected, rel=0.005) and (high - low) < 0.01 * expected, (
            psi,
            converged[psi],
            expected,
        )


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="the link model's exact static equilibrium is not unique: full link at 1 psi 0.4892 1/m "
    "loaded in one increment, 0.5247 in two (module docstring)",
)
def test_reference_only_the_link_model_has_one_static_equilibrium():
    """A check of the reference and the model, not the engine: the equilibrium must not depend on the loading path."""
    one, two = (held_link_static(LINKS["full"], 1.0, increments=k)["curvature"] for k in (1, 2))
    assert one == pytest.approx(two, rel=1e-6)


def test_reference_only_corotated_tet_hessian_matches_finite_differences():
    """A check of the reference alone: the exact Hessian of the corotated energy (held_link_static's Newton matrix)
    against central differences of its gradient V·R·σ(S − I)·Dm⁻ᵀ, at a stretched and rotated tet; it equals the
    linear-elastic stiffness at rest."""
    from softsnake.reference_fem import linear_tet_element_stiffness

    X = np.array([[0.0, 0.0, 0.0], [1.0, 0.1, 0.0], [0.2, 1.0, 0.1], [0.1, 0.2, 1.0]]) * 0.01
    tets = np.array([[0, 1, 2, 3]])
    youngs, nu = 1.0e5, 0.45
    lam, mu = youngs * nu / ((1 + nu) * (1 - 2 * nu)), youngs / (2 * (1 + nu))
    Dm_inv = np.linalg.inv((X[1:] - X[0]).T)[None]
    volume = np.array([abs(np.linalg.det((X[1:] - X[0]).T)) / 6.0])

    def polar(x):
        F = (x[1:] - x[0]).T @ Dm_inv[0]
        U, _, Vt = np.linalg.svd(F)
        R = U @ Vt
        return F, R, R.T @ F

    def gradient(x):
        F, R, S = polar(x)
        eps = 0.5 * (S + S.T) - np.eye(3)
        G = volume[0] * R @ (lam * np.trace(eps) * np.eye(3) + 2 * mu * eps) @ Dm_inv[0].T
        return np.concatenate([-G.sum(axis=1), G.T.ravel()])

    def hessian(x):
        F, R, S = polar(x)
        return _corotated_tet_hessians(F[None], R[None], S[None], volume, Dm_inv, lam, mu)[0]

    assert (
        np.abs(hessian(X) - linear_tet_element_stiffness(X, tets, youngs, nu)[0]).max()
        < 1e-12 * np.abs(hessian(X)).max()
    )
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    Q *= np.sign(np.linalg.det(Q))
    x = (X + 0.002 * rng.normal(size=X.shape)) @ Q.T
    step = 1e-7
    fd = np.stack(
        [(gradient(x + d.reshape(4, 3)) - gradient(x - d.reshape(4, 3))) / (2 * step) for d in step * np.eye(12)],
        axis=1,
    )
    # measured 1.1e-10: the central differences' own truncation error, of order (step / tet size)² = 1e-10; bound 3×
    assert np.abs(hessian(x) - fd).max() < 3.3e-10 * np.abs(fd).max()
