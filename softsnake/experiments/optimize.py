"""Gait optimisation with CMA-ES (the ``cma`` package): each generation's candidate gaits run as the worlds of one
batched snake, reset between generations with ``SnakeSim.reset_worlds`` (no model rebuild).

A candidate is a vector in the unit cube, mapped linearly onto the bounds of the optimised gait parameters (ω, α, φ,
A of Eq. 9); the others stay at the paper's values. Objectives:

- ``speed``: mean planar speed of the centre of mass over [settle, seconds] [body lengths/s], maximised;
- ``goal``: planar distance from the centre of mass at the end to a goal point placed relative to the start [m],
  minimised.

A world that diverges (``SolverConfig(on_nonfinite="flag")``) scores the worst value of its generation minus a
margin, so CMA-ES moves away from it. Every world of a batch gives the bits of a single-world run, so a gait's score
does not depend on which generation or slot it was evaluated in.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from softsnake.robots.pneumatics import GAIT_PARAMETERS, OpenLoopGait
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim

#: default search box of each gait parameter: ω [Hz], α [rad], φ [-], A [psi]
DEFAULT_BOUNDS = {"omega_hz": (0.25, 4.0), "alpha": (0.0, math.pi), "phi": (-0.5, 0.5), "amplitude_psi": (2.0, 8.0)}
OBJECTIVES = ("speed", "goal")


@dataclass
class GaitObjective:
    """What a gait is scored on (see the module docstring).

    seconds: simulated time of each evaluation [s]; settle: start of the speed window [s] (the start-up from rest is
    left out); goal: (x, y) of the goal relative to the start centre of mass [m] (objective ``goal``)."""

    kind: str = "speed"
    seconds: float = 6.0
    settle: float = 2.0
    goal: tuple = (0.3, 0.0)

    def __post_init__(self):
        if self.kind not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {self.kind!r}")
        for name in ("seconds", "settle"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name} must be a finite number ≥ 0 [s], got {v!r}")
        if self.seconds <= self.settle:
            raise ValueError(
                f"seconds ({self.seconds:g}) must exceed settle ({self.settle:g}): the speed window is empty"
            )
        g = np.asarray(self.goal, dtype=float)
        if g.shape != (2,) or not np.isfinite(g).all():
            raise ValueError(f"goal must be two finite numbers (x, y) [m], got {self.goal!r}")
        self.goal = tuple(float(x) for x in g)

    @property
    def maximise(self) -> bool:
        return self.kind == "speed"

    def unit(self) -> str:
        return "body lengths/s" if self.kind == "speed" else "m"


@dataclass
class Evaluation:
    """Scores of a batch of gaits: ``score`` (worlds,) in the objective's unit (NaN: diverged), speed over the window
    (worlds,) [body lengths/s], final distance to the goal (worlds,) [m], planar displacement of the centre of mass
    over the run (worlds, 2) [m] and heading change (worlds,) [rad, counter-clockwise positive]."""

    score: np.ndarray
    speed: np.ndarray
    goal_distance: np.ndarray
    diverged: np.ndarray
    displacement: np.ndarray
    turn: np.ndarray


def evaluate_gaits(sim: SnakeSim, gait: OpenLoopGait, objective: GaitObjective, progress=None) -> Evaluation:
    """Reset every world of ``sim`` and run world w with ``gait.world(w)`` for ``objective.seconds``; score it."""
    if gait.worlds not in (None, sim.worlds):
        raise ValueError(f"the gait has values for {gait.worlds} worlds, the simulation {sim.worlds}")
    sim.reset_worlds(np.arange(sim.worlds))
    dt = sim.config.frame_dt
    frames, settle = int(round(objective.seconds / dt)), int(round(objective.settle / dt))
    start, heading = sim.com()[:, :2], sim.heading()
    at_settle, turn = start, np.zeros(sim.worlds)
    for k in range(frames):
        sim.set_pressure_targets(gait(float(sim.world_time[0]), sim.worlds, sim.links))
        sim.step()
        now = sim.heading()
        turn += np.angle(np.exp(1j * (now - heading)))  # unwrapped frame by frame
        heading = now
        if k + 1 == settle:
            at_settle = sim.com()[:, :2]
        if progress is not None:
            progress(k + 1, frames)
    end = sim.com()[:, :2]
    diverged = np.zeros(sim.worlds, dtype=bool)
    diverged[sorted(sim.solver.diverged_worlds)] = True
    diverged |= ~np.isfinite(end).all(axis=1)
    window = (frames - settle) * dt
    speed = np.linalg.norm(end - at_settle, axis=1) / window / sim.config.body_length
    distance = np.linalg.norm(end - (start + np.asarray(objective.goal)), axis=1)
    score = np.where(diverged, np.nan, speed if objective.kind == "speed" else distance)
    return Evaluation(score, speed, distance, diverged, end - start, turn)


@dataclass
class OptimizeResult:
    """What ``optimize_gait`` found: the best gait and score, and per generation the best, mean and worst scores and
    the evaluations (simulated gaits) used so far."""

    best_gait: OpenLoopGait
    best_score: float
    generations: list = field(default_factory=list)  # dicts: generation, evaluations, best, mean, worst, best_so_far
    evaluations: int = 0
    parameters: tuple = ()
    bounds: dict = field(default_factory=dict)


def _bounds(parameters, bounds) -> dict:
    chosen = {}
    for name in parameters:
        if name not in GAIT_PARAMETERS:
            raise ValueError(f"unknown gait parameter {name!r}; choose from {', '.join(GAIT_PARAMETERS)}")
        lo, hi = (bounds or {}).get(name, DEFAULT_BOUNDS[name])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"bounds of {name} must be finite with low < high, got ({lo!r}, {hi!r})")
        chosen[name] = (float(lo), float(hi))
    if not chosen:
        raise ValueError("give at least one gait parameter to optimise")
    if len(set(parameters)) != len(parameters):
        raise ValueError(f"gait parameters repeat: {', '.join(parameters)}")
    return chosen


def _gaits(x: np.ndarray, box: dict, base: OpenLoopGait) -> OpenLoopGait:
    """The per-world gait of candidates x (n, d) in the unit cube."""
    values = {k: getattr(base, k) for k in GAIT_PARAMETERS}
    for j, (name, (lo, hi)) in enumerate(box.items()):
        values[name] = list(lo + np.clip(x[:, j], 0.0, 1.0) * (hi - lo))
    return OpenLoopGait(**values, p_max_psi=base.p_max_psi)


def optimize_gait(
    *,
    config: SnakeConfig | None = None,
    objective: GaitObjective | None = None,
    parameters=("omega_hz", "alpha", "amplitude_psi"),
    bounds: dict | None = None,
    generations: int = 10,
    popsize: int = 8,
    sigma0: float = 0.25,
    seed: int = 1,
    device: str = "cpu",
    start: OpenLoopGait | None = None,
    progress=None,
    on_generation=None,
) -> OptimizeResult:
    """CMA-ES over the gait ``parameters`` within ``bounds`` ({name: (low, high)}, default ``DEFAULT_BOUNDS``),
    starting from ``start`` (default: the paper's gait), ``popsize`` gaits per generation as worlds of one batch.

    ``progress(done, total)`` counts frames; ``on_generation(record)`` gets each generation's record."""
    import cma

    objective = objective or GaitObjective()
    for name, v, low in (("generations", generations, 1), ("popsize", popsize, 2), ("seed", seed, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} must be an integer ≥ {low}, got {v!r}")
    if not (isinstance(sigma0, (int, float)) and math.isfinite(sigma0) and 0 < sigma0 <= 1):
        raise ValueError(f"sigma0 must be in (0, 1] (a fraction of each parameter's range), got {sigma0!r}")
    box = _bounds(tuple(parameters), bounds)
    base = start or OpenLoopGait()
    if base.worlds is not None:
        raise ValueError("start must be a single gait")
    cfg = config or SnakeConfig().with_coarse_mesh()
    cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, on_nonfinite="flag"))
    x0 = [min(max((getattr(base, k) - lo) / (hi - lo), 0.0), 1.0) for k, (lo, hi) in box.items()]
    options = {"bounds": [0.0, 1.0], "popsize": int(popsize), "seed": int(seed), "verbose": -9}
    if len(box) == 1:
        x0.append(0.5)  # cma needs two dimensions: a dummy coordinate that no gait reads
    es = cma.CMAEvolutionStrategy(x0, float(sigma0), options)
    sim = SnakeSim(worlds=int(popsize), device=device, config=cfg)
    frames = int(round(objective.seconds / cfg.frame_dt))
    result = OptimizeResult(base, math.nan, parameters=tuple(box), bounds=box)
    sign = -1.0 if objective.maximise else 1.0
    best_value = math.inf
    for g in range(int(generations)):
        x = np.asarray(es.ask())
        gait = _gaits(x, box, base)

        def frame_progress(done, total, g=g):
            if progress is not None:
                progress(g * frames + done, int(generations) * frames)

        ev = evaluate_gaits(sim, gait, objective, progress=frame_progress)
        loss = sign * ev.score
        finite = np.isfinite(loss)
        worst = np.max(loss[finite]) if finite.any() else 0.0
        loss = np.where(finite, loss, worst + 1.0)  # a diverged gait is worse than every finite one
        es.tell(list(x), loss.tolist())
        result.evaluations += len(loss)
        k = int(np.argmin(loss))
        if finite[k] and loss[k] < best_value:
            best_value, result.best_gait, result.best_score = float(loss[k]), gait.world(k), float(ev.score[k])
        scores = ev.score[finite]
        record = dict(
            generation=g + 1,
            evaluations=result.evaluations,
            best=float(sign * np.min(sign * scores)) if scores.size else math.nan,
            mean=float(np.mean(scores)) if scores.size else math.nan,
            worst=float(sign * np.max(sign * scores)) if scores.size else math.nan,
            best_so_far=result.best_score,
            diverged=int((~finite).sum()),
            sigma=float(es.sigma),
        )
        result.generations.append(record)
        if on_generation is not None:
            on_generation(record)
    return result


def compare_gaits(
    gaits, *, config: SnakeConfig, objective: GaitObjective, device: str = "cpu", progress=None
) -> Evaluation:
    """Score the single gaits ``gaits`` side by side (one world each) under ``config``'s budget."""
    cfg = dataclasses.replace(config, solver=dataclasses.replace(config.solver, on_nonfinite="flag"))
    sim = SnakeSim(worlds=len(gaits), device=device, config=cfg)
    return evaluate_gaits(sim, OpenLoopGait.stack(gaits), objective, progress=progress)


def plot_convergence(result: OptimizeResult, path, *, reference: float | None = None, unit: str = "", title=""):
    """Best, mean and best-so-far score per generation against evaluations, with the reference (paper) gait."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from softsnake.io.files import save_figure_atomic

    ev = [r["evaluations"] for r in result.generations]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.plot(ev, [r["mean"] for r in result.generations], "o-", ms=3, label="generation mean")
    ax.plot(ev, [r["best"] for r in result.generations], "s-", ms=3, label="generation best")
    ax.plot(ev, [r["best_so_far"] for r in result.generations], "-", lw=2, label="best so far")
    if reference is not None:
        ax.axhline(reference, color="k", ls="--", label="paper's gait")
    ax.set_xlabel("evaluations (simulated gaits)")
    ax.set_ylabel(unit)
    ax.set_title(title or "CMA-ES on the gait", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = save_figure_atomic(fig, path, dpi=110)
    plt.close(fig)
    return out
