"""Gymnasium environments of the pneumatic soft snake: ``SnakeVectorEnv`` (a ``gymnasium.vector.VectorEnv`` over the
worlds of one batched model) and ``SnakeEnv`` (a single ``gymnasium.Env``). docs/learning.md describes both.

One action step is ``action_frames`` control frames of ``config.frame_dt`` (default one frame, 1/60 s): the action,
four numbers in [−1, 1], sets the signed pressure targets a·p_max of the links for those frames, and the chambers
follow through the latency model (Eqs. 10–12). A world that ends its episode is reset on its own (``SnakeSim.
reset_worlds``: the engine's state and carried solver state as built, no model rebuild); the others go on untouched.

Observation (float32), in this order:
    link curvatures (links) [1/m];
    signed chamber pressures p0 − p1 over p_max (links) [-];
    centre-of-mass velocity over the last action step in the snake's heading frame, forward and left (2)
    [body lengths/s];
    heading as (cos, sin) (2) [-];
    the task's goal features (``Task.goal_size``: ``goal`` the goal's forward and left offsets [m], ``heading`` the
    commanded heading relative to the snake's as (cos, sin));
    with ``clock_hz``: (sin, cos) of 2π·clock_hz·t, t the time since the world's reset (2).

Episodes: truncated after ``episode_seconds``; terminated when the world's solve diverged (``SolverConfig(
on_nonfinite="flag")`` restores it and flags it; info ``diverged``), when the snake flipped (the carriages' mean
up-axis tilts more than ``flip_degrees`` from vertical; info ``flipped``) or when the task succeeds (``goal``).

On the CPU, ``processes`` > 1 steps the worlds in that many worker processes (softsnake/robots/snake_pool.py), each a
contiguous share of them: Warp's CPU kernels use one core per batch, and the worlds compute the same bits in any
batch, so the environment gives the same episodes, only on more cores.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_pool import SnakeSimPool
from softsnake.robots.snake_sim import SnakeSim

from .tasks import Task, make_task


@dataclass
class Randomization:
    """Per-world variations drawn uniformly at every reset of a world (None: off, the built value).

    ground_mu: (low, high) friction coefficient of the ground [-]
    latency_scale: (low, high) factor on both latency gains k_i, k_d (clipped to (0, 1]) [-]
    actuation_gain: (low, high) factor on the pressures that reach the actuation lines [-]
    heading: (low, high) initial yaw of the snake [rad]
    """

    ground_mu: tuple | None = None
    latency_scale: tuple | None = None
    actuation_gain: tuple | None = None
    heading: tuple | None = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            r = getattr(self, f.name)
            if r is None:
                continue
            try:
                lo, hi = (float(x) for x in r)
            except (TypeError, ValueError):
                raise ValueError(f"Randomization.{f.name} must be (low, high) or None, got {r!r}") from None
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise ValueError(f"Randomization.{f.name} must be finite with low ≤ high, got {r!r}")
            if f.name != "heading" and lo < 0 or f.name in ("latency_scale", "actuation_gain") and lo <= 0:
                raise ValueError(f"Randomization.{f.name} must be positive, got {r!r}")
            setattr(self, f.name, (lo, hi))

    def draw(self, rng: np.random.Generator, n: int, k_inflate: float, k_deflate: float) -> dict:
        """Keyword arguments of ``SnakeSim.reset_worlds`` for ``n`` worlds (None where off)."""
        pick = {
            f.name: (None if getattr(self, f.name) is None else rng.uniform(*getattr(self, f.name), size=n))
            for f in dataclasses.fields(self)
        }
        scale = pick.pop("latency_scale")
        if scale is not None:
            pick["k_inflate"] = np.minimum(k_inflate * scale, 1.0)
            pick["k_deflate"] = np.minimum(k_deflate * scale, 1.0)
        return pick


def _check_positive(name, v, integer=False):
    ok = not isinstance(v, bool) and isinstance(v, (int, np.integer) if integer else (int, float, np.number))
    if not ok or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be {'an integer' if integer else 'a finite number'} > 0, got {v!r}")


class SnakeWorlds:
    """The batch behind both environments: the snakes, the task, observations, rewards and episode ends, without
    autoreset (the environments decide when to call ``reset``)."""

    def __init__(
        self,
        worlds: int,
        *,
        task="speed",
        config: SnakeConfig | None = None,
        device: str = "cpu",
        episode_seconds: float = 10.0,
        action_frames: int = 1,
        randomization: Randomization | None = None,
        clock_hz: float | None = None,
        flip_degrees: float = 60.0,
        processes: int = 1,
    ):
        _check_positive("worlds", worlds, integer=True)
        _check_positive("processes", processes, integer=True)
        if processes > 1 and device != "cpu":
            raise ValueError(f"processes > 1 runs the worlds in CPU processes: device must be 'cpu', not {device!r}")
        _check_positive("episode_seconds", episode_seconds)
        _check_positive("action_frames", action_frames, integer=True)
        if clock_hz is not None:
            _check_positive("clock_hz", clock_hz)
        _check_positive("flip_degrees", flip_degrees)
        if randomization is not None and not isinstance(randomization, Randomization):
            raise ValueError(f"randomization must be a Randomization or None, got {type(randomization).__name__}")
        cfg = config if config is not None else SnakeConfig()
        if not isinstance(cfg, SnakeConfig):
            raise ValueError(f"config must be a SnakeConfig, got {type(cfg).__name__}")
        cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, on_nonfinite="flag"))
        self.task: Task = make_task(task, worlds)
        # the worlds in this process, or over worker processes on the CPU (the same worlds, bit for bit)
        if processes > 1:
            self.sim = SnakeSimPool(int(worlds), int(processes), cfg)
        else:
            self.sim = SnakeSim(worlds=int(worlds), device=device, config=cfg)
        self.worlds, self.links = int(worlds), self.sim.links
        self.action_frames = int(action_frames)
        self.dt = self.action_frames * cfg.frame_dt
        self.max_steps = max(1, int(round(episode_seconds / self.dt)))
        self.randomization = randomization or Randomization()
        self.clock_hz = clock_hz
        self.min_up = math.cos(math.radians(flip_degrees))
        self.p_max = cfg.p_max_psi
        self.steps = np.zeros(self.worlds, dtype=np.int64)
        self.com = self.sim.com()[:, :2]
        self.velocity = np.zeros((self.worlds, 2))
        self.observation_size = 2 * self.links + 4 + self.task.goal_size + (2 if clock_hz else 0)

    def reset(self, worlds: np.ndarray, rng: np.random.Generator) -> None:
        """Start the episodes of ``worlds`` (indices) with variations and goals drawn from ``rng``."""
        if len(worlds) == 0:
            return
        pn = self.sim.config.pneumatics
        self.sim.reset_worlds(worlds, **self.randomization.draw(rng, len(worlds), pn.k_inflate, pn.k_deflate))
        com, heading = self.sim.com()[:, :2], self.sim.heading()
        self.com[worlds] = com[worlds]
        self.velocity[worlds] = 0.0
        self.steps[worlds] = 0
        self.task.reset(worlds, rng, com[worlds], heading[worlds])

    def observe(self) -> np.ndarray:
        heading = self.sim.heading()
        c, s = np.cos(heading), np.sin(heading)
        v = self.velocity / self.sim.config.body_length
        parts = [
            self.sim.curvatures(),
            self.sim.pressures() / self.p_max,
            np.stack([c * v[:, 0] + s * v[:, 1], -s * v[:, 0] + c * v[:, 1]], axis=1),
            np.stack([c, s], axis=1),
            self.task.goal_observation(self.com, heading),
        ]
        if self.clock_hz:
            phase = 2.0 * math.pi * self.clock_hz * self.sim.world_time
            parts.append(np.stack([np.sin(phase), np.cos(phase)], axis=1))
        return np.concatenate(parts, axis=1).astype(np.float32)

    def check_actions(self, actions) -> np.ndarray:
        a = np.asarray(actions, dtype=np.float64)
        if a.shape != (self.worlds, self.links):
            raise ValueError(f"actions must have shape {(self.worlds, self.links)} (worlds, links), got {a.shape}")
        bad = ~np.isfinite(a) | (np.abs(a) > 1.0 + 1e-6)
        if bad.any():
            w, i = (int(j) for j in np.argwhere(bad)[0])
            raise ValueError(f"action {float(a[w, i])!r} of world {w}, link {i} is not a number in [-1, 1]")
        return np.clip(a, -1.0, 1.0)

    def step(self, actions) -> tuple:
        """Apply ``actions`` (worlds, links) for one action step: (reward, terminated, truncated, info arrays)."""
        a = self.check_actions(actions)
        self.sim.set_pressure_targets(a * self.p_max)
        self.sim.step(self.action_frames)
        before, self.com = self.com, self.sim.com()[:, :2]
        diverged = np.zeros(self.worlds, dtype=bool)
        diverged[sorted(self.sim.diverged_worlds)] = True
        self.velocity = np.where(diverged[:, None], 0.0, (self.com - before) / self.dt)
        reward, success = self.task.reward(before, self.com, self.sim.heading(), self.dt, self.sim.config.body_length)
        up = self._up()
        flipped = up < self.min_up
        reward = np.where(diverged, 0.0, reward)
        self.steps += 1
        terminated = diverged | flipped | success
        truncated = ~terminated & (self.steps >= self.max_steps)
        info = dict(diverged=diverged, flipped=flipped, success=success)
        return reward, terminated, truncated, info

    def close(self) -> None:
        """Stop the worker processes, if the worlds run in any (``processes`` > 1)."""
        if isinstance(self.sim, SnakeSimPool):
            self.sim.close()

    def _up(self) -> np.ndarray:
        """Mean z component of the carriages' up axes (worlds,) [-]: 1 upright, < 0 on its back."""
        q = self.sim.body_poses()[:, self.sim.layout.carriages, 3:].astype(np.float64)
        return (1.0 - 2.0 * (q[..., 0] ** 2 + q[..., 1] ** 2)).mean(axis=1)


def _spaces(core: SnakeWorlds):
    obs = gym.spaces.Box(-np.inf, np.inf, (core.observation_size,), np.float32)
    act = gym.spaces.Box(-1.0, 1.0, (core.links,), np.float32)
    return obs, act


class SnakeVectorEnv(VectorEnv):
    """``num_envs`` snakes as the worlds of one batched model (CPU or CUDA), one task.

    Autoreset: same step (``metadata["autoreset_mode"]``): a world whose episode ended is reset within the step that
    ended it; the observation returned is its first of the new episode, and ``infos["final_obs"][i]`` /
    ``infos["final_info"]`` (masks ``infos["_final_obs"]``, ``infos["_final_info"]``) hold its last one.
    ``reset(options={"reset_mask": mask})`` resets only the masked worlds. Keyword arguments: ``SnakeWorlds``.
    """

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int = 16, **kwargs):
        self.core = SnakeWorlds(num_envs, **kwargs)
        self.num_envs = self.core.worlds
        self.single_observation_space, self.single_action_space = _spaces(self.core)
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._np_random, self._np_random_seed = gym.utils.seeding.np_random(seed)
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; SnakeVectorEnv takes reset_mask")
        if mask is None:
            worlds = np.arange(self.num_envs)
        else:
            mask = np.asarray(mask)
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"reset_mask must be a bool array of shape ({self.num_envs},), got {mask!r}")
            worlds = np.nonzero(mask)[0]
        self.core.reset(worlds, self.np_random)
        return self.core.observe(), {}

    def step(self, actions):
        reward, terminated, truncated, info = self.core.step(actions)
        obs = self.core.observe()
        infos = {k: v for k, v in info.items()}
        infos.update({f"_{k}": np.ones(self.num_envs, dtype=bool) for k in info})
        done = np.nonzero(terminated | truncated)[0]
        if done.size:
            final_obs = np.full(self.num_envs, None, dtype=object)
            for w in done:
                final_obs[w] = obs[w].copy()
            mask = np.zeros(self.num_envs, dtype=bool)
            mask[done] = True
            infos["final_obs"], infos["_final_obs"] = final_obs, mask
            infos["final_info"] = {k: np.where(mask, v, False) for k, v in info.items()}
            infos["final_info"].update({f"_{k}": mask for k in info})
            infos["_final_info"] = mask
            self.core.reset(done, self.np_random)
            obs = self.core.observe()
        return obs, reward.astype(np.float64), terminated, truncated, infos

    def close_extras(self, **kwargs):
        if self.core is not None:
            self.core.close()
        self.core = None


class SnakeEnv(gym.Env):
    """One snake (a one-world ``SnakeWorlds``) as a ``gymnasium.Env``; keyword arguments as ``SnakeVectorEnv``."""

    metadata = {"render_modes": []}

    def __init__(self, **kwargs):
        self.core = SnakeWorlds(1, **kwargs)
        self.observation_space, self.action_space = _spaces(self.core)
        self._done = True

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options:
            raise ValueError(f"SnakeEnv.reset takes no options, got {sorted(options)}")
        self.core.reset(np.array([0]), self.np_random)
        self._done = False
        return self.core.observe()[0], {}

    def step(self, action):
        if self._done:
            raise RuntimeError("SnakeEnv.step after the episode ended: call reset() first")
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (self.core.links,):
            raise ValueError(f"action must have shape ({self.core.links},) (one target per link), got {a.shape}")
        reward, terminated, truncated, info = self.core.step(a[None])
        self._done = bool(terminated[0] or truncated[0])
        info = {k: bool(v[0]) for k, v in info.items()}
        return self.core.observe()[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), info
