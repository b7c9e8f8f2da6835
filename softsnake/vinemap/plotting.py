"""Matplotlib (Agg) pictures of environments, deployments and beliefs. Files are written atomically."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .environment import Environment, write_atomic  # noqa: E402


def _save(fig, path: str) -> None:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    write_atomic(path, buf.getvalue())


def _draw_env(ax, env: Environment, *, bumper: bool = True, color="0.35") -> None:
    xmin, ymin, xmax, ymax = env.boundary
    ax.plot([xmin, xmax, xmax, xmin, xmin], [ymin, ymin, ymax, ymax, ymin], color="k", lw=1)
    for o in env.obstacles:
        ax.fill(o[:, 0], o[:, 1], color=color, alpha=0.8, lw=0)
    if bumper:
        for p in env.scene().polys[1:]:
            q = np.vstack([p, p[:1]])
            ax.plot(q[:, 0], q[:, 1], color="0.6", lw=0.6, ls="--")
    for p in env.launches:
        ax.plot(*p, marker="^", color="g", ms=7)
    ax.set_aspect("equal")
    ax.set_xlim(xmin - 0.02, xmax + 0.02)
    ax.set_ylim(ymin - 0.02, ymax + 0.02)
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")


def draw_deployments(ax, deps, colors=None) -> None:
    """Swept area (blue-grey), contacted walls (red) and final shapes (black) of deployments."""
    for i, d in enumerate(deps):
        for poly in d.swept:
            ax.fill(poly[:, 0], poly[:, 1], color="#8fa8c8", alpha=0.35, lw=0)
        for w in d.walls:
            ax.plot(w[:, 0], w[:, 1], color="r", lw=2.5)
        c = "k" if colors is None else colors[i]
        ax.plot(d.shape[:, 0], d.shape[:, 1], color=c, lw=1.5, marker="o", ms=2.5)


def plot_deployment(env: Environment, dep, path: str, title: str = "") -> None:
    """Picture of one deployment in its environment."""
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    _draw_env(ax, env)
    draw_deployments(ax, [dep])
    ax.set_title(title or "vine deployment")
    _save(fig, path)


def plot_belief(env: Environment, belief: np.ndarray, path: str, deps=(), title: str = "belief") -> None:
    """Belief grid (0 free .. 1 occupied) with the true obstacles outlined and the deployments drawn."""
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    xmin, ymin, xmax, ymax = env.boundary
    im = ax.imshow(belief.T, origin="lower", extent=(xmin, xmax, ymin, ymax), cmap="Greys", vmin=0, vmax=1)
    for o in env.obstacles:
        q = np.vstack([o, o[:1]])
        ax.plot(q[:, 0], q[:, 1], color="tab:orange", lw=1.2)
    for d in deps:
        ax.plot(d.shape[:, 0], d.shape[:, 1], color="tab:blue", lw=0.8)
    fig.colorbar(im, ax=ax, fraction=0.046, label="P(occupied)")
    ax.set_title(title)
    ax.set_aspect("equal")
    _save(fig, path)


def plot_environment(
    env: Environment, path: str, title: str = "environment", reference: Environment | None = None
) -> None:
    """Picture of an environment (e.g. a Monte Carlo sample), optionally outlining a reference environment."""
    fig, ax = plt.subplots(figsize=(5.5, 5.5))
    _draw_env(ax, env, color="tab:purple")
    if reference is not None:
        for o in reference.obstacles:
            q = np.vstack([o, o[:1]])
            ax.plot(q[:, 0], q[:, 1], color="tab:orange", lw=1.2)
    ax.set_title(title)
    _save(fig, path)


def plot_scores(curves: dict[str, np.ndarray], path: str, band: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """Cumulative score per deployment for each method (Eq. 32)."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, y in curves.items():
        ax.plot(np.arange(1, len(y) + 1), y, label=name, marker=".")
    if band is not None:
        m, s = band
        ax.fill_between(np.arange(1, len(m) + 1), m - s, m + s, color="0.8", alpha=0.6, label="Random ±1σ")
    ax.set_xlabel("deployment")
    ax.set_ylabel("score (Eq. 32)")
    ax.legend()
    ax.grid(alpha=0.3)
    _save(fig, path)
