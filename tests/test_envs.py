"""The learning environments against Gymnasium's contract: ``check_env`` on the single env; the vector env's reset,
step, same-step autoreset (terminal observations), seeding and per-world reset; tasks, terminations and bad input."""

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest

from helpers import TEST_DEVICE
from softsnake.envs import ENV_ID, Randomization, SnakeEnv, SnakeVectorEnv
from softsnake.robots.snake import SnakeConfig

COARSE = SnakeConfig().with_coarse_mesh()


def vector_env(n=3, **kwargs):
    kwargs.setdefault("episode_seconds", 3 / 60)  # three action steps
    return SnakeVectorEnv(n, config=COARSE, device=TEST_DEVICE, **kwargs)


def test_the_single_env_passes_gymnasiums_checker():
    from gymnasium.utils.env_checker import check_env

    env = SnakeEnv(config=COARSE, device=TEST_DEVICE, task="goal", episode_seconds=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unbounded Box and no render modes are warnings, not failures
        check_env(env, skip_render_check=True)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2 * 4 + 4 + 2,) and env.observation_space.contains(obs)


def test_vector_env_reset_step_autoreset_and_final_observations():
    env = vector_env()
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.SAME_STEP
    first, info = env.reset(seed=5)
    assert first.shape == (3, env.single_observation_space.shape[0]) and env.observation_space.contains(first)
    assert not first[:, 8:10].any()  # at rest: zero velocity
    actions = np.tile([[1.0, -1.0, 0.5, -0.5]], (3, 1)).astype(np.float32)
    for k in range(3):
        obs, reward, terminated, truncated, infos = env.step(actions)
        assert reward.shape == (3,) and reward.dtype == np.float64 and not terminated.any()
        if k < 2:
            assert not truncated.any() and "final_obs" not in infos
    assert truncated.all()  # the time limit: truncated, not terminated
    assert infos["_final_obs"].all() and infos["_final_info"].all()
    final = np.stack(infos["final_obs"])
    assert np.abs(final[:, 4:8]).max() > 0.05  # the last observation of the episode: chambers inflated
    np.testing.assert_array_equal(obs, first)  # same step: the returned observation starts the new episode
    obs, *_ = env.step(actions)
    assert not np.array_equal(obs, first)


def test_seeding_reproduces_episodes_bit_for_bit_and_a_new_seed_changes_them():
    rand = Randomization(ground_mu=(0.5, 1.0), latency_scale=(0.8, 1.2), actuation_gain=(0.8, 1.2), heading=(-3, 3))
    runs = []
    for seed in (11, 11, 12):
        env = vector_env(2, task="heading", randomization=rand)
        obs, _ = env.reset(seed=seed)
        trace = [obs]
        for _ in range(4):  # past the autoreset at step 3, which draws from the same generator
            obs, reward, *_ = env.step(np.full((2, 4), 0.7, dtype=np.float32))
            trace += [obs, reward[:, None]]
        runs.append(np.concatenate(trace, axis=None))
    assert np.array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def test_reset_mask_resets_only_the_chosen_worlds():
    env, reference = vector_env(episode_seconds=1.0), vector_env(episode_seconds=1.0)
    a = np.full((3, 4), -0.8, dtype=np.float32)
    for e in (env, reference):
        e.reset(seed=0)
        e.step(a)
    env.reset(options={"reset_mask": np.array([False, True, False])})
    obs, *_ = env.step(a)
    ref, *_ = reference.step(a)
    assert np.array_equal(obs[[0, 2]], ref[[0, 2]])  # the others: as if nothing happened
    assert env.core.steps.tolist() == [2, 1, 2]
    assert not np.array_equal(obs[1], ref[1])


def test_registered_with_gymnasium():
    env = gym.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point", config=COARSE, device=TEST_DEVICE)
    assert env.num_envs == 2
    single = gym.make(ENV_ID, config=COARSE, device=TEST_DEVICE, task="speed")
    assert single.unwrapped.core.task.name == "speed"


def test_a_diverged_world_terminates_and_is_reset():
    """A world the solver flags (here: every speed counts as runaway) ends its episode with ``diverged`` set and no
    reward; the environment resets it and goes on."""
    cfg = SnakeConfig().with_coarse_mesh()
    cfg.solver.max_speed = 1e-6
    env = SnakeVectorEnv(2, config=cfg, device=TEST_DEVICE)
    env.reset(seed=0)
    obs, reward, terminated, truncated, infos = env.step(np.zeros((2, 4), dtype=np.float32))
    assert terminated.all() and infos["final_info"]["diverged"].all() and not reward.any()
    assert np.isfinite(obs).all() and not env.core.sim.solver.diverged_worlds  # reset clears the flag


def test_a_flipped_snake_terminates():
    env = vector_env(2, episode_seconds=1.0)
    env.reset(seed=0)
    sim = env.core.sim
    q = sim.state.body_q.numpy().reshape(2, -1, 7)
    q[1, :, 3:] = [1.0, 0.0, 0.0, 0.0]  # world 1 upside down: 180° about x
    sim.state.body_q.assign(q.reshape(-1, 7))
    _, _, terminated, _, infos = env.step(np.zeros((2, 4), dtype=np.float32))
    assert terminated.tolist() == [False, True] and infos["final_info"]["flipped"].tolist() == [False, True]


def test_goal_task_rewards_progress_and_ends_on_arrival():
    env = vector_env(2, task="goal", episode_seconds=1.0)
    obs, _ = env.reset(seed=3)
    task, core = env.core.task, env.core
    d = np.linalg.norm(task.goal - core.com, axis=1)
    assert np.all((0.2 <= d) & (d <= 0.4))
    np.testing.assert_allclose(np.linalg.norm(obs[:, 12:14], axis=1), d, rtol=1e-5)  # offsets in the snake's frame
    task.goal[1] = core.com[1]  # world 1's goal under its centre of mass
    _, reward, terminated, _, infos = env.step(np.zeros((2, 4), dtype=np.float32))
    assert terminated.tolist() == [False, True] and infos["final_info"]["success"][1] and reward[1] > 0.5


def test_heading_randomisation_turns_the_start_and_the_speed_task_follows_it():
    env = vector_env(2, randomization=Randomization(heading=(math.pi / 2, math.pi / 2)))
    obs, _ = env.reset(seed=0)
    np.testing.assert_allclose(obs[:, 10:12], [[0.0, 1.0]] * 2, atol=1e-6)  # (cos, sin) of the heading
    np.testing.assert_allclose(env.core.task.direction, [[0.0, 1.0]] * 2, atol=1e-6)


def test_worlds_over_worker_processes_give_the_same_episodes_bit_for_bit():
    """``processes`` > 1 steps contiguous shares of the worlds in worker processes (softsnake/robots/snake_pool.py);
    a world computes the same bits in any batch on the CPU, so observations, rewards and episode ends (here with
    per-world randomisation and two same-step autoresets of every world) equal the one-process environment's."""
    if TEST_DEVICE != "cpu":
        pytest.skip("worker processes are a CPU feature")
    randomization = Randomization(ground_mu=(0.5, 1.0), heading=(-1.0, 1.0), latency_scale=(0.8, 1.2))
    runs, ends = {}, 0
    for processes in (1, 2):
        env = vector_env(5, processes=processes, randomization=randomization, clock_hz=2.0)
        rng = np.random.default_rng(0)
        record = [env.reset(seed=3)[0]]
        for _ in range(7):  # three action steps per episode: two autoresets of every world
            obs, reward, terminated, truncated, infos = env.step(rng.uniform(-1.0, 1.0, (5, 4)).astype(np.float32))
            record += [obs, reward, terminated, truncated]
            if "final_obs" in infos:
                record.append(np.stack(list(infos["final_obs"][infos["_final_obs"]])))
                ends += int(infos["_final_obs"].sum())
        env.close()
        runs[processes] = record
    assert ends == 2 * 2 * 5  # both runs saw every world end twice
    assert len(runs[1]) == len(runs[2]) and all(np.array_equal(a, b) for a, b in zip(runs[1], runs[2]))


def test_a_worker_process_failure_is_raised_with_its_traceback():
    if TEST_DEVICE != "cpu":
        pytest.skip("worker processes are a CPU feature")
    from softsnake.robots.snake_pool import SnakeSimPool

    with SnakeSimPool(3, 2, COARSE) as pool:
        assert [count for _, count in pool.shares] == [2, 1] and pool.com().shape == (3, 3)
        with pytest.raises(RuntimeError, match="a worker failed"):
            pool.set_pressure_targets(np.full((3, 4), 1.0e3))  # above p_max: SnakeSim refuses it in the worker
        pool.step(1)  # the pool goes on after a refused command
        assert np.isfinite(pool.com()).all()
    with pytest.raises(ValueError, match="device must be 'cpu'"):
        SnakeVectorEnv(2, config=COARSE, device="cuda", processes=2)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(task="swim"), "unknown task 'swim'"),
        (dict(processes=0), "processes must be an integer > 0"),
        (dict(episode_seconds=0), "episode_seconds must be a finite number > 0"),
        (dict(action_frames=1.5), "action_frames must be an integer > 0"),
        (dict(randomization=dict(ground_mu=(0, 1))), "randomization must be a Randomization"),
        (dict(config="default"), "config must be a SnakeConfig"),
    ],
)
def test_bad_environment_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SnakeVectorEnv(2, config=kwargs.pop("config", COARSE), device=TEST_DEVICE, **kwargs)


@pytest.mark.parametrize(
    "ranges, message",
    [
        (dict(ground_mu=(1.0, 0.5)), "low ≤ high"),
        (dict(actuation_gain=(0.0, 1.0)), "must be positive"),
        (dict(heading=(0, float("inf"))), "finite"),
        (dict(latency_scale=3), r"\(low, high\) or None"),
    ],
)
def test_bad_randomisation_ranges_are_refused(ranges, message):
    with pytest.raises(ValueError, match=message):
        Randomization(**ranges)


def test_bad_actions_and_reset_options_are_refused_and_lose_nothing():
    env = vector_env(2)
    env.reset(seed=0)
    before = env.core.sim.snapshot()
    for actions, message in (
        (np.zeros((3, 4)), r"shape \(2, 4\)"),
        (np.full((2, 4), np.nan), "not a number in"),
        (np.full((2, 4), 1.5), r"action 1.5 of world 0, link 0 is not a number in \[-1, 1\]"),
    ):
        with pytest.raises(ValueError, match=message):
            env.step(actions)
    after = env.core.sim.snapshot()
    assert all(np.array_equal(before[k], after[k]) for k in before)  # nothing stepped
    assert env.core.steps.tolist() == [0, 0]
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"worlds": [0]})
    with pytest.raises(ValueError, match="reset_mask must be a bool array"):
        env.reset(options={"reset_mask": [1, 0]})
    single = SnakeEnv(config=COARSE, device=TEST_DEVICE)
    with pytest.raises(RuntimeError, match="call reset"):
        single.step(np.zeros(4))
    single.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must have shape \(4,\)"):
        single.step(np.zeros(3))
