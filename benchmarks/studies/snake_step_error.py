"""The solver budget's one-frame error in the snake's gait: from the same states, one frame at each budget against a
converged reference.

Runs the straight gait (ω = 2 Hz, α = π/2, A = 8 psi, latency on) at the default budget to ``--seconds``, then takes
``--samples`` states ``--spacing`` frames apart. From each state every budget advances one frame (``substeps`` solver
steps) and is compared with the reference budget from the same state (``SnakeSim.snapshot`` / ``restore``). Per
budget it prints

- the forward bias: Σ (d − d_ref)·f / Σ d_ref·f over the samples, with d the centre of mass's horizontal displacement
  over the frame and f the snake's heading: the one-frame estimate of the budget's relative error in the gait speed;
- the RMS of |d − d_ref| over the RMS of |d_ref| (scatter of the displacement, any direction);
- the relative RMS error of the links' curvature change over the frame (the body wave the gait is made of);
- the relative RMS error of the rigid bodies' velocities (carriages and wheels, linear and angular parts together)
  and of the particles' velocities against the reference's.

A frame's error does not accumulate here (every budget restarts from the reference's start state), so this separates
the solver's local error from the divergence of whole trajectories (benchmarks/studies/snake_gait_sensitivity.py).
Budgets:
``NxL`` (N Newton × L MINRES iterations), ``NxL:TOL`` (with ``linear_tolerance`` TOL, CPU), or a schedule ``a/b/c/d``
(MINRES iterations per Newton iteration; the solve of this process's simulation for it is patched, a study switch).

    python -P benchmarks/studies/snake_step_error.py [--full] [--seconds 10] [--samples 24] [--spacing 5] \\
        [--budget 4x20 --budget 4x40 ...] [--reference 8x200:1e-6] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

from softsnake.experiments.gait import default_gait, gait_targets
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim
from softsnake.sim.model import quiet_warp

DEFAULT_BUDGETS = ("4x20", "4x40", "8x100:1e-5", "15/20/20/25", "10/20/20/30", "5/20/20/35")


@dataclasses.dataclass(frozen=True)
class Budget:
    name: str
    newton: int
    linear: int
    tolerance: float = 0.0
    schedule: tuple[int, ...] = ()


def parse_budget(text: str) -> Budget:
    """``NxL``, ``NxL:TOL`` or ``a/b/c/...`` → Budget; ValueError on another form."""
    t = text.strip()
    try:
        if "/" in t:
            schedule = tuple(int(k) for k in t.split("/"))
            if min(schedule) < 1:
                raise ValueError
            return Budget(t, len(schedule), max(schedule), 0.0, schedule)
        head, _, tol = t.partition(":")
        n, x, lin = head.partition("x")
        b = Budget(t, int(n), int(lin), float(tol) if tol else 0.0)
        if not x or b.newton < 1 or b.linear < 1 or not 0.0 <= b.tolerance < 1.0:
            raise ValueError
        return b
    except ValueError:
        raise ValueError(f"budget {text!r} is not NxL, NxL:TOL or a/b/c/... with positive counts") from None


def budget_sim(config: SnakeConfig, budget: Budget) -> SnakeSim:
    """A one-world snake whose solver runs ``budget`` (a schedule patches this simulation's MINRES counts)."""
    solver = dataclasses.replace(
        config.solver,
        newton_iterations=budget.newton,
        linear_iterations=budget.linear,
        linear_tolerance=budget.tolerance,
    )
    sim = SnakeSim(worlds=1, config=dataclasses.replace(config, solver=solver))
    if budget.schedule:
        primal = sim.solver.formulation
        solve = type(primal).solve
        primal.solve = lambda it, iterations=None: solve(primal, it, budget.schedule[it])
    return sim


def one_frame(sim: SnakeSim, snapshot: dict, targets: np.ndarray) -> dict:
    """From ``snapshot``, one frame: the COM's displacement and the velocities at its end."""
    sim.restore(snapshot)
    sim.set_pressure_targets(targets)
    start, kappa = sim.com()[0], sim.curvatures()[0]
    sim.step()
    return dict(
        d=(sim.com()[0] - start)[:2],
        dkappa=sim.curvatures()[0] - kappa,
        body_qd=sim.state.body_qd.numpy().astype(np.float64).ravel(),
        particle_qd=sim.state.particle_qd.numpy().astype(np.float64).ravel(),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="the default link mesh instead of the coarse one")
    ap.add_argument("--seconds", type=float, default=10.0, help="gait time before the first sample [s] (default 10)")
    ap.add_argument("--samples", type=int, default=24, help="sampled states (default 24)")
    ap.add_argument(
        "--spacing", type=int, default=5, help="frames between samples (default 5: 24 samples span two gait cycles)"
    )
    ap.add_argument(
        "--budget", action="append", help=f"a budget to compare (repeatable; default {' '.join(DEFAULT_BUDGETS)})"
    )
    ap.add_argument("--reference", default="8x200:1e-6", help="the reference budget (default 8x200:1e-6)")
    ap.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    a = ap.parse_args()
    if not a.seconds >= 0.0 or a.samples < 1 or a.spacing < 1:
        ap.error("--seconds must be ≥ 0, --samples and --spacing ≥ 1")
    try:
        budgets = [parse_budget(b) for b in (a.budget or DEFAULT_BUDGETS)]
        reference = parse_budget(a.reference)
    except ValueError as exc:
        ap.error(str(exc))
    quiet_warp()
    config = SnakeConfig() if a.full else SnakeConfig().with_coarse_mesh()
    sim = SnakeSim(worlds=1, config=config)
    ref_sim = budget_sim(config, reference)
    sims = [budget_sim(config, b) for b in budgets]
    gait = default_gait()
    wall = time.perf_counter()
    while sim.time < a.seconds - 1e-9:
        sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
        sim.step()
    rows = {b.name: dict(dd=[], forward_err=[], forward_ref=[], dkappa=[], body=[], particle=[]) for b in budgets}
    ref_body, ref_particle, ref_d, ref_dkappa = [], [], [], []
    for k in range(a.samples):
        snapshot, targets = sim.snapshot(), gait_targets(gait, sim.time, 1, sim.links)
        psi = float(sim.heading()[0])
        f = np.array([np.cos(psi), np.sin(psi)])
        ref = one_frame(ref_sim, snapshot, targets)
        ref_body.append(ref["body_qd"])
        ref_particle.append(ref["particle_qd"])
        ref_d.append(ref["d"])
        ref_dkappa.append(ref["dkappa"])
        for b, s in zip(budgets, sims):
            out = one_frame(s, snapshot, targets)
            r = rows[b.name]
            r["dd"].append(out["d"] - ref["d"])
            r["forward_err"].append(float((out["d"] - ref["d"]) @ f))
            r["forward_ref"].append(float(ref["d"] @ f))
            r["dkappa"].append(out["dkappa"] - ref["dkappa"])
            r["body"].append(out["body_qd"] - ref["body_qd"])
            r["particle"].append(out["particle_qd"] - ref["particle_qd"])
        for _ in range(a.spacing):
            sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
            sim.step()
        print(f"\rsample {k + 1}/{a.samples}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    rms = lambda x: float(np.sqrt(np.mean(np.square(x))))  # noqa: E731
    mesh = "full" if a.full else "coarse"
    print(
        f"{mesh} snake, {a.samples} states from {a.seconds:g} s every {a.spacing} frames; reference {reference.name}; "
        f"one frame per state ({time.perf_counter() - wall:.0f} s)"
    )
    print(
        f"{'budget':<14} {'forward bias':>13} {'COM scatter':>12} {'dκ/frame':>10} {'bodies v':>10} {'particles v':>12}"
    )
    summary = {}
    for b in budgets:
        r = rows[b.name]
        bias = float(np.sum(r["forward_err"]) / np.sum(r["forward_ref"]))
        scatter = rms(np.linalg.norm(r["dd"], axis=1)) / rms(np.linalg.norm(ref_d, axis=1))
        dkappa = rms(r["dkappa"]) / rms(ref_dkappa)
        body = rms(r["body"]) / rms(ref_body)
        particle = rms(r["particle"]) / rms(ref_particle)
        summary[b.name] = dict(
            forward_bias=bias,
            com_scatter=scatter,
            curvature_change_error=dkappa,
            body_velocity_error=body,
            particle_velocity_error=particle,
        )
        print(
            f"{b.name:<14} {100 * bias:>+12.1f}% {100 * scatter:>11.1f}% {100 * dkappa:>9.2f}% {100 * body:>9.2f}% "
            f"{100 * particle:>11.2f}%"
        )
    if a.json:
        from softsnake.io.files import write_json_atomic

        write_json_atomic(
            a.json,
            dict(
                mesh=mesh,
                seconds=a.seconds,
                samples=a.samples,
                spacing=a.spacing,
                reference=reference.name,
                budgets=summary,
            ),
        )


if __name__ == "__main__":
    main()
