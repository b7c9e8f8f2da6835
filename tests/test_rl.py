"""The Stable-Baselines3 adapter and the PPO example (skipped without the ``[rl]`` extra)."""

import json

import numpy as np
import pytest

from helpers import TEST_DEVICE
from softsnake.envs import SnakeVectorEnv
from softsnake.robots.snake import SnakeConfig

pytest.importorskip("stable_baselines3")


def test_the_adapter_hands_sb3_the_terminal_observations():
    from softsnake.envs.sb3 import SB3VecEnv

    env = SB3VecEnv(
        SnakeVectorEnv(2, config=SnakeConfig().with_coarse_mesh(), device=TEST_DEVICE, episode_seconds=2 / 60)
    )
    env.seed(4)
    first = env.reset()
    assert first.shape == (2, env.observation_space.shape[0])
    env.step(np.zeros((2, 4)))
    obs, reward, done, infos = env.step(np.full((2, 4), 0.5))
    assert done.all() and reward.dtype == np.float32
    for w in range(2):
        assert infos[w]["TimeLimit.truncated"] and infos[w]["terminal_observation"].shape == first[w].shape
        assert not np.array_equal(infos[w]["terminal_observation"], first[w])
    np.testing.assert_array_equal(obs, first)  # reset in the same step, to the seeded start


def test_the_ppo_example_writes_its_learning_curve(tmp_path):
    import importlib.util

    from cli_helpers import ROOT

    spec = importlib.util.spec_from_file_location("train_ppo", ROOT / "examples" / "train_ppo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    argv = ["--worlds", "2", "--timesteps", "64", "--n-steps", "16", "--episode-seconds", "0.2", "--out", tmp_path]
    assert module.main([str(a) for a in argv]) == 0
    rows = (tmp_path / "curve.csv").read_text().splitlines()
    assert rows[0].startswith("timesteps,mean_step_reward") and len(rows) == 1 + 2
    assert json.loads((tmp_path / "summary.json").read_text())["rollouts"] == 2
    assert (tmp_path / "learning_curve.png").stat().st_size > 0
    # the trained policy at the training budget and the two finer ones: one full episode each (0.2 s at 30 Hz)
    evaluated = tmp_path / "eval"
    argv = ["--worlds", "2", "--episode-seconds", "0.2", "--evaluate", tmp_path / "policy.zip", "--out", evaluated]
    assert module.main([str(a) for a in argv]) == 0
    rows = json.loads((evaluated / "evaluation.json").read_text())
    assert [r["steps"] for r in rows] == [6, 6, 6] and all(np.isfinite(r["mean_speed"]) for r in rows)
    assert "kept" in rows[1] and "kept" in rows[2]
