"""Grid, belief (Eq. 31), score (Eqs. 32-33), Monte Carlo sampling and a reduced mapping run."""

import math

import numpy as np
import pytest
import shapely
from shapely.geometry import Polygon

from softsnake.vinemap.environment import uniform_environment
from softsnake.vinemap.grid import PRIOR, Grid, belief, score, unweighted_score
from softsnake.vinemap.mapping import action_space, explore, sample_mc_environment, simulate_actions


def test_belief_eq31_cases():
    H = np.array([0, 1, 0, 1], bool)
    M = np.array([0, 0, 1, 1], bool)
    np.testing.assert_allclose(belief(H, M), [PRIOR, 1.0, 0.0, 0.5])


def test_score_eq32_prior_zero_rubric_hundred():
    rng = np.random.default_rng(0)
    R = (rng.random(35 * 35) < 0.2).astype(float)
    assert score(np.full(R.shape, PRIOR), R) == pytest.approx(0.0)
    assert score(R, R) == pytest.approx(100.0)
    X = rng.random(R.shape)
    assert unweighted_score(X, R) == pytest.approx(100 * np.mean(1 - np.abs(X - R)))


def test_cover_matches_shapely_overlap():
    g = Grid((0.0, 0.0, 1.0, 1.0), 35)
    boxes = g.cell_boxes()
    rng = np.random.default_rng(3)
    tris = rng.uniform(0, 1, (40, 3, 2))
    got = g.cover(tris, np.arange(40), 40)
    for k, t in enumerate(tris):
        ref = shapely.area(shapely.intersection(boxes, Polygon(t))) > 1e-10
        assert np.array_equal(got[k], ref)


def test_hits_land_in_occupied_cells_and_misses_cover_free_space():
    env = uniform_environment(0)
    g = Grid(env.boundary)
    rub = g.rubric(env.obstacles)
    _, H, M = simulate_actions(env, action_space(env, True), g)
    assert H.any() and M.any()
    assert not (H & (rub == 0)).any()  # wall contacts are always on obstacles
    assert (M & (rub == 0)).sum() > 0.9 * M.sum()  # swept area is mostly free space


def test_action_space_sizes():
    env = uniform_environment(0)
    assert len(action_space(env, False)) == 100
    acts = action_space(env, True)
    assert len(acts) == 570
    assert {a.turn_fraction for a in acts} == {None, 0.2, 0.4, 0.6}
    assert sorted({round(math.degrees(a.turn_angle)) for a in acts}) == [-60, -40, -20, 0, 20, 40, 60]


def test_mc_environment_contains_hits_and_keeps_launch_free():
    env = uniform_environment(1)
    g = Grid(env.boundary)
    _, H, M = simulate_actions(env, action_space(env, False)[::7], g)
    hit, miss = H.any(0), M.any(0)
    rng = np.random.default_rng(0)
    for _ in range(5):
        mc = sample_mc_environment(belief(hit, miss), hit, g, env, rng)
        occ = g.rubric(mc.obstacles)
        assert 1 <= len(mc.obstacles)
        # every hit cell lies in an obstacle unless it had to be cleared around a launch point
        near_launch = np.zeros(g.size, bool)
        for x, y in env.launches:
            near_launch |= (np.abs(np.repeat(g.cx, g.n) - x) < 0.1) & (np.abs(np.tile(g.cy, g.n) - y) < 0.1)
        assert np.all(occ[hit & ~near_launch] == 1)


def test_reduced_mapping_mc_beats_random():
    # Reduced Table 1 check: 2 uniform environments, straight action space, 10 deployments. The paper's ordering, in
    # each environment: the greedy planner that knows the map scores highest, the Monte Carlo planner beats random
    # deployments (measured final scores ideal / MC / random: 47.9 / 37.6 / 26.8 and 46.8 / 39.2 / 31.7).
    for seed in (0, 1):
        env = uniform_environment(seed)
        res = explore(env, action_space(env, False), deployments=10, mc_envs=5, random_repeats=50, seed=seed)
        assert np.all(np.diff(res.ideal) >= -1e-9)  # greedy ideal score never decreases
        assert res.ideal[-1] > res.mc[-1] > res.random_mean[-1], (seed, res.ideal[-1], res.mc[-1], res.random_mean[-1])
