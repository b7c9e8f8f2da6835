"""Eq. 3 and the turn-morphology boundaries (Eqs. 13-15) against direct numeric evaluation of the force and moment
balances they come from (Fig. 5 geometry built from explicit vectors, roots found with scipy's brentq)."""

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from softsnake.vinemap.kinematics import (
    body_angle_to_reach,
    boundary_fl_np,
    boundary_pat_fl,
    boundary_pp_pat,
    classify_turn_morphology,
    critical_contact_angle,
)

P = 2.0e4  # pressure [Pa]; cancels out of every boundary


def _cross(a, b):
    return a[0] * b[1] - a[1] * b[0]


def _tip_force(theta_t, theta_c, friction_sign, radius, mu):
    """Wall force on the tip (normal + friction) for a robot heading h = R(theta_t) e_y with the wall tangent at
    theta_c counter-clockwise from h. ``friction_sign=-1``: friction opposes the tip sliding along +t (positive
    rotation); ``+1``: opposes sliding along -t. |N| from the axial force balance with the pressure force P*pi*R^2."""
    h = np.array([-math.sin(theta_t), math.cos(theta_t)])
    c, s = math.cos(theta_c), math.sin(theta_c)
    t = np.array([c * h[0] - s * h[1], s * h[0] + c * h[1]])  # h rotated counter-clockwise by theta_c
    n = np.array([-t[1], t[0]])
    if n @ h > 0:  # normal must point out of the wall, against the growth
        n = -n
    f_dir = friction_sign * mu * t
    # axial balance: P A + N (n.h) + N (f_dir.h) = 0
    N = P * math.pi * radius**2 / -(n @ h + f_dir @ h)
    return N * (n + f_dir)


def _geometry(theta_t, l_b, l_a):
    B = np.zeros(2)
    T = np.array([0.0, l_b])
    C = T + l_a * np.array([-math.sin(theta_t), math.cos(theta_t)])
    return B, T, C


@pytest.mark.parametrize("slenderness", [2.0, 5.0, 20.0, 100.0])
@pytest.mark.parametrize("mu", [0.1, 0.3, 0.6])
def test_eq3_matches_moment_balance(slenderness, mu):
    R = 0.02
    L = slenderness * R
    B, T, C = _geometry(0.0, 0.0, L)

    def residual(theta_c):  # bending moment about the pivot minus the inflated-beam restoring moment (Eq. 1)
        F = _tip_force(0.0, theta_c, -1, R, mu)
        return _cross(C - B, F) - P * math.pi * R**3

    root = brentq(residual, 1e-6, math.pi / 2 - 1e-9)
    assert critical_contact_angle(L, R, mu) == pytest.approx(root, abs=1e-9)
    # shallow contacts pivot (moment exceeds the restoring moment), steep contacts do not
    assert residual(root - 0.05) > 0 > residual(root + 0.05)


@pytest.mark.parametrize("theta_t_deg", [20, 40, 60])
@pytest.mark.parametrize("l_b,l_a", [(0.2, 0.4), (0.4, 0.2), (0.6, 0.3), (0.1, 0.8)])
@pytest.mark.parametrize("mu", [0.3, 0.6])
def test_turn_boundaries_match_balances(theta_t_deg, l_b, l_a, mu):
    R = 0.015
    th = math.radians(theta_t_deg)
    B, T, C = _geometry(th, l_b, l_a)
    mint = P * math.pi * R**3

    # PP | PaT: equal moments of the tip force about B and T (Eq. 11).
    f = lambda c: _cross(C - B, _tip_force(th, c, -1, R, mu)) - _cross(C - T, _tip_force(th, c, -1, R, mu))
    grid = np.linspace(1e-3, math.pi - 1e-3, 400)
    vals = np.array([f(c) for c in grid])
    k = np.flatnonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))
    if boundary_pp_pat(th, mu) > 0:
        root = brentq(f, grid[k[0]], grid[k[0] + 1])
        assert boundary_pp_pat(th, mu) == pytest.approx(root, abs=1e-8)

    # PaT | FL: critical positive moment at B, friction opposing positive rotation (Eqs. 6 and 10).
    g = lambda c: _cross(C - B, _tip_force(th, c, -1, R, mu)) - mint
    vals = np.array([g(c) for c in grid])
    k = np.flatnonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))
    roots = [brentq(g, grid[i], grid[i + 1]) for i in k]
    assert min(abs(r - boundary_pat_fl(th, mu, l_b, l_a, R)) for r in roots) < 1e-8

    # FL | NP: critical negative moment at B, friction opposing negative rotation (Eqs. 6 and 9).
    q = lambda c: _cross(C - B, _tip_force(th, c, +1, R, mu)) + mint
    vals = np.array([q(c) for c in grid])
    k = np.flatnonzero(np.sign(vals[:-1]) != np.sign(vals[1:]))
    roots = [brentq(q, grid[i], grid[i + 1]) for i in k]
    assert min(abs(r - boundary_fl_np(th, mu, l_b, l_a, R)) for r in roots) < 1e-8


def test_zero_turn_reduces_to_straight_robot():
    R, mu, L = 0.015, 0.3, 0.5
    crit = critical_contact_angle(L, R, mu)
    assert boundary_pat_fl(0.0, mu, 0.25, 0.25, R) == pytest.approx(crit, abs=1e-12)
    assert boundary_fl_np(0.0, mu, 0.25, 0.25, R) == pytest.approx(math.pi - crit, abs=1e-12)
    assert boundary_pp_pat(0.0, mu) == pytest.approx(math.atan(1 / mu))


def test_morphology_order_and_friction_widens_locked_band():
    R, lb, la, th = 0.015, 0.3, 0.3, math.radians(40)
    seq = [classify_turn_morphology(math.radians(c), th, 0.3, lb, la, R) for c in range(1, 180)]
    # the four regions appear in the order of Fig. 6 with no interleaving
    order = [m for i, m in enumerate(seq) if i == 0 or m != seq[i - 1]]
    assert order == ["positive_pivot", "pivot_at_turn", "friction_locked", "negative_pivot"]
    width = lambda mu: boundary_fl_np(th, mu, lb, la, R) - boundary_pat_fl(th, mu, lb, la, R)
    assert width(0.6) > width(0.3) > 0


def test_body_angle_to_reach_places_tip_on_destination():
    rng = np.random.default_rng(0)
    for _ in range(200):
        B = rng.uniform(-1, 1, 2)
        lb = rng.uniform(0.05, 0.5)
        tt = rng.uniform(-1.2, 1.2)
        D = B + rng.uniform(0.6, 1.5) * np.array([math.cos(a := rng.uniform(0, 6.28)), math.sin(a)])
        alpha = body_angle_to_reach(B, D, lb, tt)
        assert alpha is not None
        T = B + lb * np.array([math.cos(alpha), math.sin(alpha)])
        v = D - T
        # the post-turn segment points exactly at D
        assert (
            math.atan2(v[1], v[0]) == pytest.approx(math.remainder(alpha + tt, 2 * math.pi), abs=1e-9)
            or abs(math.remainder(math.atan2(v[1], v[0]) - alpha - tt, 2 * math.pi)) < 1e-9
        )
