"""Tasks of the snake environments: what a world is rewarded for, what it sees of its goal, and when it has succeeded.

Every task works on whole batches: arrays with a leading world axis. Positions [m], headings [rad], speeds
[body lengths/s], rewards per action step. A task keeps its per-world goal in its own arrays; ``reset`` draws new goals
for the worlds being reset from the environment's random generator.
"""

from __future__ import annotations

import math

import numpy as np


def _wrap(angle: np.ndarray) -> np.ndarray:
    """Angle in (−π, π] [rad]."""
    return np.angle(np.exp(1j * np.asarray(angle)))


class Task:
    """Base class: no goal, no reward. ``goal_size`` entries are appended to the observation."""

    name = "task"
    goal_size = 0

    def __init__(self, worlds: int):
        self.worlds = int(worlds)

    def reset(self, worlds: np.ndarray, rng: np.random.Generator, com: np.ndarray, heading: np.ndarray) -> None:
        """Draw the goals of ``worlds`` (their start centre of mass (n, 2) [m] and heading (n,) [rad] given)."""

    def goal_observation(self, com: np.ndarray, heading: np.ndarray) -> np.ndarray:
        """(worlds, goal_size) goal features in the snake's own frame."""
        return np.zeros((self.worlds, 0))

    def reward(self, com_before: np.ndarray, com: np.ndarray, heading: np.ndarray, dt: float, body_length: float):
        """(reward (worlds,), success (worlds,) bool) of one action step of ``dt`` [s]."""
        raise NotImplementedError


class ForwardSpeed(Task):
    """Run straight ahead: the reward is the centre of mass's speed along the heading the world started with
    [body lengths/s], averaged over the action step. No goal, no success: episodes end by the time limit."""

    name = "speed"

    def __init__(self, worlds: int):
        super().__init__(worlds)
        self.direction = np.tile([1.0, 0.0], (self.worlds, 1))

    def reset(self, worlds, rng, com, heading):
        self.direction[worlds] = np.stack([np.cos(heading), np.sin(heading)], axis=1)

    def reward(self, com_before, com, heading, dt, body_length):
        v = np.einsum("wk,wk->w", com - com_before, self.direction) / dt / body_length
        return v, np.zeros(self.worlds, dtype=bool)


class ReachGoal(Task):
    """Reach a goal point: drawn at a distance in ``distance`` [m] from the start and a bearing within ±``bearing``
    [rad] of the start heading. Reward: the decrease of the distance to the goal per second [body lengths/s], plus
    ``bonus`` on arrival (distance < ``radius`` [m]), which ends the episode (terminated). The goal is observed as
    (forward, left) offsets in the snake's heading frame [m]."""

    name = "goal"
    goal_size = 2

    def __init__(self, worlds: int, *, distance=(0.2, 0.4), bearing=math.pi / 4, radius=0.05, bonus=1.0):
        super().__init__(worlds)
        lo, hi = distance
        if not (0 < lo <= hi and math.isfinite(hi)):
            raise ValueError(f"ReachGoal: distance must be (low, high) with 0 < low ≤ high [m], got {distance!r}")
        if not (math.isfinite(bearing) and 0 <= bearing <= math.pi):
            raise ValueError(f"ReachGoal: bearing must be in [0, π] [rad], got {bearing!r}")
        if not (math.isfinite(radius) and radius > 0):
            raise ValueError(f"ReachGoal: radius must be > 0 [m], got {radius!r}")
        self.distance, self.bearing, self.radius, self.bonus = (float(lo), float(hi)), float(bearing), radius, bonus
        self.goal = np.zeros((self.worlds, 2))

    def reset(self, worlds, rng, com, heading):
        n = len(worlds)
        r = rng.uniform(*self.distance, size=n)
        b = heading + rng.uniform(-self.bearing, self.bearing, size=n)
        self.goal[worlds] = com + r[:, None] * np.stack([np.cos(b), np.sin(b)], axis=1)

    def goal_observation(self, com, heading):
        d = self.goal - com
        c, s = np.cos(heading), np.sin(heading)
        return np.stack([c * d[:, 0] + s * d[:, 1], -s * d[:, 0] + c * d[:, 1]], axis=1)

    def reward(self, com_before, com, heading, dt, body_length):
        before = np.linalg.norm(self.goal - com_before, axis=1)
        after = np.linalg.norm(self.goal - com, axis=1)
        reached = after < self.radius
        return (before - after) / dt / body_length + self.bonus * reached, reached


class FollowHeading(Task):
    """Move along a commanded heading, drawn within ±``spread`` [rad] of the start heading: the reward is the speed of
    the centre of mass along that heading [body lengths/s]. Observed as (cos, sin) of the commanded heading relative to
    the snake's. No success: episodes end by the time limit."""

    name = "heading"
    goal_size = 2

    def __init__(self, worlds: int, *, spread=math.pi / 2):
        super().__init__(worlds)
        if not (math.isfinite(spread) and 0 <= spread <= math.pi):
            raise ValueError(f"FollowHeading: spread must be in [0, π] [rad], got {spread!r}")
        self.spread = float(spread)
        self.target = np.zeros(self.worlds)

    def reset(self, worlds, rng, com, heading):
        self.target[worlds] = _wrap(heading + rng.uniform(-self.spread, self.spread, size=len(worlds)))

    def goal_observation(self, com, heading):
        d = self.target - heading
        return np.stack([np.cos(d), np.sin(d)], axis=1)

    def reward(self, com_before, com, heading, dt, body_length):
        u = np.stack([np.cos(self.target), np.sin(self.target)], axis=1)
        return np.einsum("wk,wk->w", com - com_before, u) / dt / body_length, np.zeros(self.worlds, dtype=bool)


TASKS = {t.name: t for t in (ForwardSpeed, ReachGoal, FollowHeading)}


def make_task(task, worlds: int) -> Task:
    """A task object for ``worlds`` worlds from its name (``speed``, ``goal``, ``heading``) or a Task class."""
    if isinstance(task, str):
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
        return TASKS[task](worlds)
    if isinstance(task, type) and issubclass(task, Task):
        return task(worlds)
    raise ValueError(f"task must be one of {', '.join(TASKS)} or a Task subclass, got {task!r}")
