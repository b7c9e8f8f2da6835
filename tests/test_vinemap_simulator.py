"""Hand-checkable geometry of the visibility-graph simulator (Algorithms 1-3)."""

import math

import numpy as np
import pytest
import shapely
from shapely.geometry import LineString, Polygon

from softsnake.vinemap.environment import Environment, nonuniform_environment, uniform_environment
from softsnake.vinemap.simulator import Action, simulate

R = 0.01
SLAB = [[0.1, 0.6], [0.9, 0.6], [0.9, 0.7], [0.1, 0.7]]  # bumpered underside at y = 0.59, corners x = 0.09, 0.91


def slab_env():
    return Environment([SLAB], robot_radius=R, launches=[(0.3, 0.05)])


@pytest.mark.parametrize("deg,direction", [(60.0, +1), (120.0, -1)])
def test_shallow_wall_hit_pivots_at_base_and_slides_to_larger_angle(deg, direction):
    env = Environment([SLAB], robot_radius=R, launches=[(0.5, 0.05)])
    L = 0.65
    dep = simulate(env.scene(), Action((0.5, 0.05), math.radians(deg), L))
    rise = 0.59 - 0.05
    h = np.array([0.5 + rise / math.tan(math.radians(deg)), 0.59])
    tip = np.array([0.5 + direction * math.sqrt(L**2 - rise**2), 0.59])  # |tip - pivot| = L on the wall line
    assert not dep.stuck
    np.testing.assert_allclose(dep.shape, [[0.5, 0.05], tip], atol=1e-9)  # pivot stays the launch point
    assert len(dep.walls) == 1
    np.testing.assert_allclose(dep.walls[0], [h, tip], atol=1e-9)
    # tip moved towards the side where the body makes the obtuse angle with the wall
    assert np.sign(tip[0] - h[0]) == direction
    np.testing.assert_allclose(dep.wall_normals[0], [0, 1], atol=1e-12)  # solid is above the wall
    assert Polygon(dep.swept[0]).area == pytest.approx(0.5 * abs(tip[0] - h[0]) * rise, rel=1e-9)


def test_steep_wall_hit_is_stuck():
    dep = simulate(slab_env().scene(), Action((0.3, 0.05), math.radians(85), 1.0))
    assert dep.stuck
    np.testing.assert_allclose(dep.shape[-1], [0.3 + 0.54 / math.tan(math.radians(85)), 0.59], atol=1e-9)


def test_skims_off_convex_corner():
    L = 0.9
    dep = simulate(slab_env().scene(), Action((0.3, 0.05), math.radians(60), L))
    corner = np.array([0.91, 0.59])
    u = (corner - [0.3, 0.05]) / np.linalg.norm(corner - [0.3, 0.05])
    assert "skim" in dep.events and not dep.stuck
    # leaves the corner along the body direction: final shape is one straight segment through the corner
    np.testing.assert_allclose(dep.shape, [[0.3, 0.05], np.array([0.3, 0.05]) + L * u], atol=1e-9)
    np.testing.assert_allclose(dep.walls[0][1], corner, atol=1e-9)


def test_stuck_in_concave_corner():
    env = Environment([], robot_radius=R, launches=[(0.5, 0.05)])
    dep = simulate(env.scene(), Action((0.5, 0.05), math.radians(30), 1.5))
    # hits the right wall at 60 deg from its tangent (< Eq. 3 critical angle), slides up into the room corner
    assert dep.stuck
    np.testing.assert_allclose(dep.shape[-1], [0.99, 0.99], atol=1e-9)
    np.testing.assert_allclose(
        dep.walls[0], [[0.99, 0.05 + 0.49 * math.tan(math.radians(30))], [0.99, 0.99]], atol=1e-9
    )


def test_concave_obstacle_corner_stops_robot():
    # a U-shaped cup opening downwards; the robot slides along its ceiling into the inner corner
    cup = [[0.3, 0.5], [0.3, 0.8], [0.8, 0.8], [0.8, 0.5], [0.75, 0.5], [0.75, 0.75], [0.35, 0.75], [0.35, 0.5]]
    env = Environment([cup], robot_radius=R, launches=[(0.45, 0.05)])
    dep = simulate(env.scene(), Action((0.45, 0.05), math.radians(70), 1.5))
    assert dep.stuck
    np.testing.assert_allclose(dep.shape[-1], [0.74, 0.74], atol=1e-9)  # inner corner of the bumper


def test_wraps_around_post_swept_by_body():
    # a small post sits inside the triangle swept while the tip slides right along the slab (body rotating clockwise)
    post = [[0.55, 0.40], [0.57, 0.40], [0.57, 0.42], [0.55, 0.42]]
    env = Environment([SLAB, post], robot_radius=R, launches=[(0.3, 0.05)])
    L = 0.87
    dep = simulate(env.scene(), Action((0.3, 0.05), math.radians(65), L))
    B = np.array([0.3, 0.05])
    corners = np.array([[0.54, 0.39], [0.58, 0.39], [0.58, 0.43], [0.54, 0.43]])  # bumper corners
    ang = np.degrees(np.arctan2(*(corners - B).T[::-1]))
    v = corners[np.argmax(np.where(ang < 65, ang, -999))]  # first corner met rotating clockwise from 65 deg
    np.testing.assert_allclose(v, [0.54, 0.43])
    slab_corner = np.array([0.91, 0.59])
    u = (slab_corner - v) / np.linalg.norm(slab_corner - v)
    tip = v + (L - np.linalg.norm(v - B)) * u  # pivots about the post until the slab ends, then skims off
    assert dep.events.count("wrap") == 1 and "skim" in dep.events
    np.testing.assert_allclose(dep.shape, [B, v, tip], atol=1e-9)
    # first wall piece ends where the body line through the post meets the slab
    h2 = B + (0.59 - 0.05) / (v - B)[1] * (v - B)
    np.testing.assert_allclose(dep.walls[0][1], h2, atol=1e-9)
    np.testing.assert_allclose(dep.walls[1], [h2, slab_corner], atol=1e-9)


def _on_visibility_graph(env, dep, act):
    """Interior shape vertices are bumper vertices, the launch point or the turn point; segments are collision-free."""
    sc = env.scene()
    nodes = [np.asarray(act.launch)] + list(sc.verts)
    if dep.turn_point is not None:
        nodes.append(dep.turn_point)
    nodes = np.array(nodes)
    for p in dep.shape[:-1]:
        assert np.min(np.hypot(*(nodes - p).T)) < 1e-7, (p, dep.events)
    solid = shapely.unary_union([Polygon(p) for p in sc.polys[1:]]) if len(sc.polys) > 1 else Polygon()
    inner = Polygon(sc.polys[0]).buffer(1e-7)
    for a, b in zip(dep.shape[:-1], dep.shape[1:]):
        seg = LineString([a, b])
        assert inner.contains(seg)
        if not solid.is_empty:
            assert solid.buffer(-1e-6).intersection(seg).length < 1e-6, (a, b, dep.events)


@pytest.mark.parametrize(
    "gen,seed",
    [(uniform_environment, 0), (uniform_environment, 1), (nonuniform_environment, 0), (nonuniform_environment, 2)],
)
def test_final_shapes_lie_on_visibility_graph(gen, seed):
    env = gen(seed)
    rng = np.random.default_rng(seed)
    for _ in range(60):
        turn = rng.random() < 0.6
        act = Action(
            env.launches[rng.integers(2)],
            rng.uniform(0.1, math.pi - 0.1),
            env.robot_length,
            rng.choice([0.2, 0.4, 0.6]) if turn else None,
            math.radians(rng.choice([-60, -40, -20, 20, 40, 60])) if turn else 0.0,
        )
        dep = simulate(env.scene(), act)
        _on_visibility_graph(env, dep, act)
        assert dep.length <= act.length + 1e-9


def test_turn_before_contact_bends_shape():
    env = Environment([], robot_radius=R, launches=[(0.5, 0.05)])
    act = Action((0.5, 0.05), math.pi / 2, 0.6, 0.5, math.radians(30))
    dep = simulate(env.scene(), act)
    np.testing.assert_allclose(dep.shape[1], [0.5, 0.35], atol=1e-12)
    np.testing.assert_allclose(
        dep.shape[2], [0.5 - 0.3 * math.sin(math.radians(30)), 0.35 + 0.3 * math.cos(math.radians(30))], atol=1e-12
    )


def test_pivot_at_turn_keeps_turn_point_fixed():
    # turn of +40 deg at 0.3 m, heading 135 deg: collision angle 45 deg lies in the Pivot-at-Turn band
    # (33.3 deg from Eq. 13 to about 53.7 deg from Eq. 14 for l_b = 0.3 m, l_a = 0.34 m)
    env = Environment([SLAB], robot_radius=R, launches=[(0.5, 0.05)])
    act = Action((0.5, 0.05), math.radians(95), 0.9, 0.3 / 0.9, math.radians(40))
    dep = simulate(env.scene(), act)
    assert "pivot_at_turn" in dep.events
    T = np.array([0.5, 0.05]) + 0.3 * np.array([math.cos(math.radians(95)), math.sin(math.radians(95))])
    np.testing.assert_allclose(dep.turn_point, T, atol=1e-12)
    np.testing.assert_allclose(dep.shape[1], T, atol=1e-12)
    # the tip then pivots about T towards the turn direction (left) along the wall, length conserved
    assert dep.shape[-1][0] < dep.walls[0][0][0]
    assert dep.length == pytest.approx(0.9, abs=1e-9)
