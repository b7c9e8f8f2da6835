"""Derivative-free fitting with batched worlds: every candidate parameter set of a generation is one world of a model,
so a generation costs one batched rollout (one launch sequence).

:func:`cma_es` minimises ``loss(X) -> (P,)`` over a population X (P, n) in a box; it is seeded (reproducible) and
reports its cost (rollouts, launches, wall time). The problem interface (:class:`FitProblem`) also has an optional
``gradient`` hook so a gradient-based optimiser can use the same problems once the solver provides exact gradients."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np


@dataclass
class FitProblem:
    """Parameters ``names`` in a box [lower, upper] (in the optimiser's coordinates, e.g. log10 of a stiffness);
    loss(X (P, n)) -> (P,) costs; to_physical maps optimiser coordinates to the physical parameter dict."""

    names: tuple
    lower: np.ndarray
    upper: np.ndarray
    loss: Callable[[np.ndarray], np.ndarray]
    to_physical: Callable[[np.ndarray], dict]
    gradient: Callable | None = None  # gradient(x) -> (loss, dloss/dx) when available (not yet: solver gradients)


@dataclass
class FitResult:
    x: np.ndarray
    loss: float
    params: dict
    rollouts: int  # candidate rollouts (worlds) simulated
    launches: int  # batched rollouts (one per generation)
    seconds: float
    history: list = field(default_factory=list)  # best loss per generation
    per_video: dict = field(default_factory=dict)  # problem-specific breakdown of the final loss
    batch_loss: float = math.nan  # best loss as evaluated inside the batched generation


def cma_es(
    problem: FitProblem,
    *,
    x0=None,
    sigma0: float = 0.3,
    popsize: int = 16,
    generations: int = 20,
    seed: int = 0,
    tol: float = 1e-10,
    verbose: bool = False,
) -> FitResult:
    """(μ/μ_w, λ)-CMA-ES (Hansen's standard settings) in the unit box of ``problem``; candidates outside the box are
    clipped to it. sigma0 is relative to the box width. Returns the best candidate seen."""
    lo, hi = np.asarray(problem.lower, float), np.asarray(problem.upper, float)
    if lo.shape != hi.shape or np.any(hi <= lo):
        raise ValueError("fit bounds must satisfy lower < upper")
    if popsize < 2 or generations < 1:
        raise ValueError("popsize must be ≥ 2 and generations ≥ 1")
    n = len(lo)
    rng = np.random.default_rng(seed)
    to_x = lambda u: lo + np.clip(u, 0.0, 1.0) * (hi - lo)
    m = np.full(n, 0.5) if x0 is None else (np.asarray(x0, float) - lo) / (hi - lo)
    sigma = float(sigma0)
    lam = int(popsize)
    mu = lam // 2
    w = np.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
    w /= w.sum()
    mueff = 1.0 / np.sum(w**2)
    cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n)
    cs = (mueff + 2) / (n + mueff + 5)
    c1 = 2 / ((n + 1.3) ** 2 + mueff)
    cmu = min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) ** 2 + mueff))
    damps = 1 + 2 * max(0.0, math.sqrt((mueff - 1) / (n + 1)) - 1) + cs
    chin = math.sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n))
    pc, ps, C = np.zeros(n), np.zeros(n), np.eye(n)
    best_u, best_f = m.copy(), math.inf
    t0 = time.perf_counter()
    rollouts = launches = 0
    history = []
    for g in range(generations):
        evals, B = np.linalg.eigh(C)
        D = np.sqrt(np.maximum(evals, 1e-20))
        z = rng.standard_normal((lam, n))
        y = z @ (B * D).T
        U = m + sigma * y
        Uc = np.clip(U, 0.0, 1.0)
        f = np.asarray(problem.loss(to_x(Uc)), dtype=np.float64)
        rollouts += lam
        launches += 1
        f = np.where(np.isfinite(f), f, np.inf)
        order = np.argsort(f)
        if f[order[0]] < best_f:
            best_f, best_u = float(f[order[0]]), Uc[order[0]].copy()
        history.append(best_f)
        if verbose:
            print(f"  generation {g + 1}: best {best_f:.6g}, sigma {sigma:.3g}")
        ysel = (Uc[order[:mu]] - m) / sigma  # clipped steps (keeps the mean inside the box)
        m_old = m
        m = m + sigma * (w @ ysel)
        Cinvsqrt = B @ np.diag(1 / D) @ B.T
        ps = (1 - cs) * ps + math.sqrt(cs * (2 - cs) * mueff) * (Cinvsqrt @ (m - m_old) / sigma)
        hsig = np.linalg.norm(ps) / math.sqrt(1 - (1 - cs) ** (2 * (g + 1))) / chin < 1.4 + 2 / (n + 1)
        pc = (1 - cc) * pc + hsig * math.sqrt(cc * (2 - cc) * mueff) * (m - m_old) / sigma
        C = (1 - c1 - cmu) * C + c1 * (np.outer(pc, pc) + (1 - hsig) * cc * (2 - cc) * C) + cmu * (ysel.T * w) @ ysel
        C = (C + C.T) / 2
        sigma *= math.exp((cs / damps) * (np.linalg.norm(ps) / chin - 1))
        if sigma * math.sqrt(max(evals.max(), 1e-30)) < tol:
            break
    x = to_x(best_u)
    return FitResult(x, best_f, problem.to_physical(x), rollouts, launches, time.perf_counter() - t0, history)
