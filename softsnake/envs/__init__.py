"""Learning environments of the soft snake (Gymnasium): a vector environment over the worlds of one batched model and
a single environment, with tasks and per-world randomisation (docs/learning.md).

Importing this package registers ``softsnake/Snake-v0`` with Gymnasium: ``gymnasium.make("softsnake/Snake-v0",
task="goal")`` gives a ``SnakeEnv``, ``gymnasium.make_vec("softsnake/Snake-v0", num_envs=64,
vectorization_mode="vector_entry_point")`` a ``SnakeVectorEnv``."""

import gymnasium as _gym

from .snake_env import Randomization, SnakeEnv, SnakeVectorEnv, SnakeWorlds
from .tasks import TASKS, FollowHeading, ForwardSpeed, ReachGoal, Task, make_task

ENV_ID = "softsnake/Snake-v0"

if ENV_ID not in _gym.registry:
    _gym.register(
        id=ENV_ID,
        entry_point="softsnake.envs.snake_env:SnakeEnv",
        vector_entry_point="softsnake.envs.snake_env:SnakeVectorEnv",
        disable_env_checker=True,
    )

__all__ = [
    "ENV_ID",
    "TASKS",
    "FollowHeading",
    "ForwardSpeed",
    "Randomization",
    "ReachGoal",
    "SnakeEnv",
    "SnakeVectorEnv",
    "SnakeWorlds",
    "Task",
    "make_task",
]
