"""Monte Carlo mapping with vine-robot deployments (Fuentes et al. 2025, Section 4).

Each loop (Fig. 13): sample environments from the current belief (cells occupied with probability equal to the
belief, hit cells forced occupied), group 8-connected occupied cells, keep the largest 6-8 groups plus every group
holding a hit cell, replace each group by its convex hull; simulate the whole action space in each sampled
environment; deploy the action with the best mean score (Eq. 32) against the sampled rubrics into the true
environment; update the cumulative hit/miss matrices and belief (Eq. 31). Baselines: Ideal (greedy with the true
environment) and Random (random action sequences, repeated).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np
import shapely
from shapely.geometry import MultiPoint, Polygon, box
from shapely.geometry.polygon import orient

from .environment import Environment
from .grid import Grid, belief, score
from .simulator import Action, simulate

__all__ = ["action_space", "simulate_actions", "sample_mc_environment", "ExploreResult", "explore"]


def action_space(env: Environment, turns: bool) -> list[Action]:
    """The paper's action spaces (Section 4.1.1, 4.2.3).

    Straight: 2 launch positions x 50 launch angles = 100 actions. Turning: 2 x 15 launch angles x (no turn +
    turns at 20/40/60 % of the length with -60..60 deg in 20 deg steps, zero excluded) = 570 actions.
    Launch angles are spread uniformly over the open interval (0, 180) deg [rad internally].
    """
    acts = []
    n_ang = 15 if turns else 50
    angles = np.linspace(0.0, math.pi, n_ang + 2)[1:-1]
    turn_set = [(None, 0.0)]
    if turns:
        turn_set += [(f, math.radians(a)) for f in (0.2, 0.4, 0.6) for a in (-60, -40, -20, 20, 40, 60)]
    for p in env.launches:
        for a in angles:
            for f, ta in turn_set:
                acts.append(Action(tuple(p), float(a), env.robot_length, f, ta))
    return acts


def simulate_actions(env: Environment, actions, grid: Grid):
    """Simulate every action in ``env``; returns ``(deployments, hit, miss)`` with ``(A, n*n)`` masks."""
    sc = env.scene()
    deps = [simulate(sc, a) for a in actions]
    hit, miss = grid.deployment_masks(deps, env.robot_radius, env.obstacles)
    return deps, hit, miss


def _label8(occ: np.ndarray) -> tuple[np.ndarray, int]:
    """8-connected component labels of a boolean ``(n, n)`` array (breadth-first search)."""
    n0, n1 = occ.shape
    lab = np.full(occ.shape, -1, int)
    k = 0
    for i0, j0 in zip(*np.nonzero(occ)):
        if lab[i0, j0] >= 0:
            continue
        lab[i0, j0] = k
        q = deque([(i0, j0)])
        while q:
            i, j = q.popleft()
            for di in (-1, 0, 1):
                for dj in (-1, 0, 1):
                    a, b = i + di, j + dj
                    if 0 <= a < n0 and 0 <= b < n1 and occ[a, b] and lab[a, b] < 0:
                        lab[a, b] = k
                        q.append((a, b))
        k += 1
    return lab, k


def sample_mc_environment(
    bel: np.ndarray, hit: np.ndarray, grid: Grid, template: Environment, rng: np.random.Generator
) -> Environment:
    """One Monte Carlo environment from the belief (Section 4.1.5).

    ``bel``/``hit`` are flat ``(n*n,)`` arrays. The launch positions, robot and boundary are copied from
    ``template``; a square of 3 robot radii around each launch point is kept free so deployments can start.
    """
    n = grid.n
    occ = (rng.random(bel.shape) < bel) | hit.astype(bool)
    occ = occ.reshape(n, n)
    lab, k = _label8(occ)
    hit2 = hit.reshape(n, n).astype(bool)
    sizes = np.bincount(lab[lab >= 0], minlength=k) if k else np.zeros(0, int)
    must = set(np.unique(lab[hit2 & (lab >= 0)]).tolist())
    want = int(rng.integers(6, 9))
    order = [g for g in np.argsort(-sizes, kind="stable") if g not in must]
    chosen = list(must) + order[: max(0, want - len(must))]
    r = template.robot_radius
    keep_out = shapely.union_all([box(x - 3 * r, y - 3 * r, x + 3 * r, y + 3 * r) for x, y in template.launches])
    obstacles = []
    for g in chosen:
        ii, jj = np.nonzero(lab == g)
        corners = np.concatenate(
            [np.stack([grid.x_edges[ii + a], grid.y_edges[jj + b]], axis=1) for a in (0, 1) for b in (0, 1)]
        )
        hull = MultiPoint(corners).convex_hull.difference(keep_out)
        parts = getattr(hull, "geoms", [hull])
        for p in parts:
            if isinstance(p, Polygon) and p.area > 1e-9:
                p = orient(Polygon(p.exterior), sign=-1.0).simplify(1e-9)
                if isinstance(p, Polygon) and p.is_valid and p.area > 1e-9:
                    obstacles.append(np.asarray(p.exterior.coords)[:-1])
    # Launch points must lie outside every obstacle's bumper: drop any obstacle still too close.
    ok = []
    for o in obstacles:
        poly = Polygon(o)
        if all(poly.distance(shapely.Point(p)) >= r * 1.01 for p in template.launches):
            ok.append(o)
    return Environment(
        ok, template.boundary, list(template.launches), template.robot_radius, template.robot_length, template.friction
    )


@dataclass
class ExploreResult:
    """Per-deployment cumulative scores (Eq. 32) of the three policies and what MC chose."""

    mc: np.ndarray  # (D,)
    ideal: np.ndarray  # (D,)
    random_mean: np.ndarray  # (D,)
    random_std: np.ndarray  # (D,)
    mc_actions: list[int] = field(default_factory=list)
    ideal_actions: list[int] = field(default_factory=list)
    belief: np.ndarray | None = None
    mc_env: Environment | None = None
    loop_seconds: list[float] = field(default_factory=list)


def _best(H, M, sims, exclude) -> int:
    """Index of the action with the best mean score (Eq. 32) over ``sims`` = [((hit, miss), rubric), ...] once its
    hits and misses are added to the cumulative ``H``, ``M``; actions in ``exclude`` are skipped."""
    total = np.zeros(len(sims[0][0][0]))
    for (hh, mm), rub in sims:
        total += score(belief(hh | H, mm | M), rub)
    total[list(exclude)] = -np.inf
    return int(np.argmax(total))


def explore(
    env: Environment,
    actions,
    *,
    deployments: int = 20,
    mc_envs: int = 5,
    random_repeats: int = 100,
    grid: Grid | None = None,
    seed: int = 0,
    progress=None,
) -> ExploreResult:
    """Run the MC mapping loop and the Ideal / Random baselines in ``env`` (Section 4.2).

    ``progress``: optional callable ``(step, total, message)`` called after every MC loop (used for tqdm).
    """
    import time

    rng = np.random.default_rng(seed)
    grid = grid or Grid(env.boundary, 35)
    rub = grid.rubric(env.obstacles)
    _, TH, TM = simulate_actions(env, actions, grid)
    A = len(actions)
    D = min(deployments, A)

    # Ideal: greedy with full knowledge of the true environment.
    H = np.zeros(grid.size, bool)
    M = np.zeros(grid.size, bool)
    ideal, ideal_acts = [], []
    for _ in range(D):
        a = _best(H, M, [((TH, TM), rub)], ideal_acts)
        ideal_acts.append(a)
        H |= TH[a]
        M |= TM[a]
        ideal.append(float(score(belief(H, M), rub)))

    # Random: random action sequences without repetition.
    runs = np.zeros((random_repeats, D))
    for r in range(random_repeats):
        order = rng.permutation(A)[:D]
        H = np.cumsum(TH[order], axis=0) > 0
        M = np.cumsum(TM[order], axis=0) > 0
        runs[r] = score(belief(H, M), rub)

    # Monte Carlo loop.
    H = np.zeros(grid.size, bool)
    M = np.zeros(grid.size, bool)
    mc, mc_acts, loop_t = [], [], []
    mc_env = None
    for step in range(D):
        t0 = time.perf_counter()
        bel = belief(H, M)
        sims = []
        for _ in range(mc_envs):
            mc_env = sample_mc_environment(bel, H, grid, env, rng)
            _, hh, mm = simulate_actions(mc_env, actions, grid)
            sims.append(((hh, mm), grid.rubric(mc_env.obstacles)))
        a = _best(H, M, sims, mc_acts)
        loop_t.append(time.perf_counter() - t0)
        mc_acts.append(a)
        H |= TH[a]
        M |= TM[a]
        mc.append(float(score(belief(H, M), rub)))
        if progress is not None:
            progress(step + 1, D, f"MC {mc[-1]:.1f} | ideal {ideal[step]:.1f} | random {runs[:, step].mean():.1f}")
    return ExploreResult(
        np.array(mc),
        np.array(ideal),
        runs.mean(axis=0),
        runs.std(axis=0),
        mc_acts,
        ideal_acts,
        belief(H, M),
        mc_env,
        loop_t,
    )
