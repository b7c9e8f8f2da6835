"""Train a PPO policy (Stable-Baselines3) on the snake's vector environment and plot its learning curve.

    pip install '.[rl]'                                   # Stable-Baselines3 and PyTorch
    python examples/train_ppo.py --out runs/ppo           # the short CPU run of docs/learning.md
    python examples/train_ppo.py --device cuda --worlds 256 --timesteps 491520 --out runs/ppo_gpu    # the full run
    python examples/train_ppo.py --worlds 256 --timesteps 491520 --processes 16 --out runs/ppo_cpu  # … on 16 cores
    python examples/train_ppo.py --evaluate runs/ppo/policy.zip --out runs/ppo_eval    # the policy at finer budgets

The task is forward speed (reward: speed along the start heading [body lengths/s] per action step); the policy sees
the observation of docs/learning.md plus a 2 Hz clock (sin, cos), so a linear map of the clock to the four pressure
targets is already a travelling wave. Writes ``curve.csv`` (per rollout: environment steps, mean step reward, mean
return of the episodes that ended), ``learning_curve.png``, ``policy.zip`` and ``summary.json``. ``--evaluate`` runs a
trained policy (deterministic) for one episode at the training budget (4 × 20, h = 1/120 s), at 8 × 40 and at
h = 1/240 s, and writes ``evaluation.json``: a speed the policy keeps at the finer budgets is not an artefact of the
truncated solves or the time step.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--worlds", type=int, default=8, help="snakes in the batch = parallel environments (default 8)")
    p.add_argument("--timesteps", type=int, default=12288, help="environment steps in total (default 12288)")
    p.add_argument("--n-steps", type=int, default=64, help="steps per world per rollout (default 64)")
    p.add_argument("--episode-seconds", type=float, default=4.0, help="episode length [s] (default 4)")
    p.add_argument("--action-frames", type=int, default=2, help="control frames per action (default 2: 30 Hz)")
    p.add_argument("--task", default="speed", choices=("speed", "goal", "heading"))
    p.add_argument("--full", action="store_true", help="the full-resolution snake (default: the coarse one)")
    p.add_argument("--device", default="cpu", help="warp device of the simulation (the policy trains on the CPU)")
    p.add_argument(
        "--processes",
        type=int,
        default=1,
        help="CPU worker processes that step shares of the worlds (default 1; the same episodes on more cores)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--evaluate", type=Path, metavar="POLICY", help="evaluate this policy.zip instead of training")
    args = p.parse_args(argv)
    if args.evaluate is not None and not args.evaluate.is_file():
        p.error(f"--evaluate: no policy file {args.evaluate}")
    for name in ("worlds", "timesteps", "n_steps", "action_frames", "processes"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be ≥ 1")
    if not args.episode_seconds > 0:
        p.error("--episode-seconds must be > 0")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        from stable_baselines3 import PPO
        from stable_baselines3.common.callbacks import BaseCallback
        from stable_baselines3.common.vec_env import VecMonitor
    except ImportError:
        raise SystemExit("train_ppo.py needs Stable-Baselines3: pip install '.[rl]'") from None
    import torch

    from softsnake.envs import SnakeVectorEnv
    from softsnake.envs.sb3 import SB3VecEnv
    from softsnake.robots.snake import SnakeConfig

    torch.set_num_threads(1)  # the policy is tiny; the simulation is the cost
    cfg = SnakeConfig() if args.full else SnakeConfig().with_coarse_mesh()

    def make_env(config):
        return SnakeVectorEnv(
            args.worlds,
            task=args.task,
            config=config,
            device=args.device,
            episode_seconds=args.episode_seconds,
            action_frames=args.action_frames,
            clock_hz=2.0,
            processes=args.processes,
        )

    if args.evaluate is not None:
        return evaluate(args, PPO.load(args.evaluate, device="cpu"), make_env, cfg, SB3VecEnv)
    venv = VecMonitor(SB3VecEnv(make_env(cfg)))
    venv.seed(args.seed)
    curve = []

    class Curve(BaseCallback):
        """Per rollout: environment steps, mean step reward, mean return of the episodes that ended in it."""

        def __init__(self):
            super().__init__()
            self.returns, self.start = [], time.perf_counter()

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.returns.append(info["episode"]["r"])
            return True

        def _on_rollout_end(self) -> None:
            rewards = self.model.rollout_buffer.rewards
            row = dict(
                timesteps=int(self.num_timesteps),
                mean_step_reward=float(np.mean(rewards)),
                mean_episode_return=float(np.mean(self.returns)) if self.returns else float("nan"),
                episodes=len(self.returns),
                wall_s=time.perf_counter() - self.start,
            )
            curve.append(row)
            self.returns = []
            print(
                f"steps {row['timesteps']:7d} | mean step reward {row['mean_step_reward']:+.4f} body lengths/s | "
                f"episodes {row['episodes']:3d} return {row['mean_episode_return']:+.3f} | {row['wall_s']:.0f} s",
                flush=True,
            )

    model = PPO(
        "MlpPolicy",
        venv,
        n_steps=args.n_steps,
        batch_size=min(256, args.n_steps * args.worlds),
        n_epochs=10,
        learning_rate=1e-3,
        gamma=0.98,
        policy_kwargs=dict(net_arch=[64, 64], log_std_init=-0.5),
        seed=args.seed,
        device="cpu",
        verbose=0,
    )
    model.learn(total_timesteps=args.timesteps, callback=Curve())
    write_outputs(args, curve, model)
    return 0


def evaluate(args, policy, make_env, cfg, wrap) -> int:
    """One deterministic episode per budget; the mean reward per step is the mean speed [body lengths/s]."""
    import dataclasses

    finer = dataclasses.replace(cfg.solver, newton_iterations=8, linear_iterations=40)
    budgets = {
        "4x20, h=1/120 s (training)": cfg,
        "8x40, h=1/120 s": dataclasses.replace(cfg, solver=finer),
        "4x20, h=1/240 s": dataclasses.replace(cfg, substeps=2 * cfg.substeps),
    }
    rows = []
    for name, config in budgets.items():
        venv = wrap(make_env(config))
        venv.seed(args.seed)
        obs, total, steps, ended = venv.reset(), np.zeros(args.worlds), 0, {}
        while True:
            action, _ = policy.predict(obs, deterministic=True)
            obs, reward, done, infos = venv.step(action)
            total, steps = total + reward, steps + 1
            if done.any():
                ended = {k: int(sum(bool(i.get(k)) for i in infos)) for k in ("diverged", "flipped")}
                break
        rows.append(dict(budget=name, steps=steps, mean_speed=float(total.mean() / steps), **ended))
        print(f"{name}: mean speed {rows[-1]['mean_speed']:+.4f} body lengths/s over {steps} steps, {ended}")
    for r in rows[1:]:
        r["kept"] = r["mean_speed"] / rows[0]["mean_speed"] if rows[0]["mean_speed"] else float("nan")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "evaluation.json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def write_outputs(args, curve, model) -> None:
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    keys = list(curve[0])
    lines = [",".join(keys)] + [",".join(f"{r[k]:.6g}" for k in keys) for r in curve]
    (out / "curve.csv").write_text("\n".join(lines) + "\n")
    model.save(out / "policy.zip")
    plot_curve(
        curve,
        out / "learning_curve.png",
        f"PPO on SnakeVectorEnv: {args.worlds} worlds, {'full' if args.full else 'coarse'} snake, task {args.task}",
    )
    k = max(1, len(curve) // 4)
    summary = dict(
        args={k: str(v) for k, v in vars(args).items()},
        first_quarter_mean_step_reward=float(np.mean([r["mean_step_reward"] for r in curve[:k]])),
        last_quarter_mean_step_reward=float(np.mean([r["mean_step_reward"] for r in curve[-k:]])),
        rollouts=len(curve),
        wall_s=curve[-1]["wall_s"],
    )
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(
        f"mean step reward: first quarter {summary['first_quarter_mean_step_reward']:+.4f}, last quarter "
        f"{summary['last_quarter_mean_step_reward']:+.4f} body lengths/s; wrote {out}/curve.csv, learning_curve.png"
    )


def plot_curve(curve, path, title: str) -> None:
    """Mean reward per step of each rollout and the mean return of the episodes that ended in it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["timesteps"] for r in curve]
    fig, ax = plt.subplots(figsize=(6.5, 4.0))
    ax.plot(steps, [r["mean_step_reward"] for r in curve], "o-", ms=3, color="tab:blue", label="mean reward per step")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("mean reward per step [body lengths/s]", color="tab:blue")
    ended = [(s, r["mean_episode_return"]) for s, r in zip(steps, curve) if r["episodes"]]
    if ended:
        right = ax.twinx()
        right.plot(*zip(*ended), "s-", ms=4, color="tab:orange", label="episode return")
        right.set_ylabel("mean return of the episodes that ended", color="tab:orange")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
