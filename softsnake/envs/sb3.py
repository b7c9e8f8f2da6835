"""``SnakeVectorEnv`` as a Stable-Baselines3 ``VecEnv`` (the ``[rl]`` extra): SB3 batches its environments with its
own VecEnv API, whose autoreset matches the same-step mode of ``SnakeVectorEnv``; this adapter passes the batch
through without copies per world and hands SB3 the final observations as ``terminal_observation``."""

from __future__ import annotations

import numpy as np

try:
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError("softsnake.envs.sb3 needs Stable-Baselines3: pip install 'softsnake[rl]'") from exc

from .snake_env import SnakeVectorEnv


class SB3VecEnv(VecEnv):
    """Stable-Baselines3 view of a ``SnakeVectorEnv`` (seeds via ``seed(s)``, as SB3 does)."""

    def __init__(self, env: SnakeVectorEnv):
        if not isinstance(env, SnakeVectorEnv):
            raise ValueError(f"SB3VecEnv wraps a SnakeVectorEnv, got {type(env).__name__}")
        self.env = env
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self._actions = None

    def reset(self):
        seeds = [s for s in getattr(self, "_seeds", []) if s is not None]
        obs, _ = self.env.reset(seed=seeds[0] if seeds else None)
        if hasattr(self, "_reset_seeds"):
            self._reset_seeds()
        return obs

    def step_async(self, actions) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self):
        obs, reward, terminated, truncated, infos = self.env.step(np.clip(self._actions, -1.0, 1.0))
        done = terminated | truncated
        out = [{} for _ in range(self.num_envs)]
        for w in np.nonzero(done)[0]:
            out[w]["terminal_observation"] = infos["final_obs"][w]
            out[w]["TimeLimit.truncated"] = bool(truncated[w] and not terminated[w])
            for key in ("diverged", "flipped", "success"):
                out[w][key] = bool(infos["final_info"][key][w])
        return obs, reward.astype(np.float32), done, out

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self.env, attr_name)] * len(self._indices(indices))

    def set_attr(self, attr_name, value, indices=None) -> None:
        setattr(self.env, attr_name, value)

    def env_method(self, method_name, *args, indices=None, **kwargs):
        raise NotImplementedError("SnakeVectorEnv's worlds share one model: call methods on SB3VecEnv.env")

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * len(self._indices(indices))

    def _indices(self, indices):
        if indices is None:
            return range(self.num_envs)
        return [indices] if isinstance(indices, int) else indices
