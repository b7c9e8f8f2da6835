"""The solver's kernels against a step recorded before they were rewritten (rewritten
and previous kernels agree within 1e-5 on a recorded step).

tests/data/recorded_snake_step.npz holds a coarse two-world snake 30 frames into the gait (a checkpoint: state,
multipliers, contact list, pressures) and the state one frame (two steps, 4 × 20) later, computed on the CPU at commit
43e9768 (tests/data/make_recorded_step.py); tests/data/recorded_snake_solve.npz holds what the kernels computed in the
first Newton iteration of that frame (right-hand side, matrix-free product, preconditioner, MINRES solution), written
at 4b5edc2, whose kernels give the recorded frame bit for bit. The replay keeps the snake model of the recording
(both chambers' actuation lines on, ``use_recorded_actuation``, and the end sections' redundant rows, which
``SnakeSim.load`` restores for it), which later commits changed on purpose. When the rows' preconditioner changed on
purpose (float64 body blocks, two-level attachment masses), the frame and the first solve were re-recorded from the
same checkpoint (``make_recorded_step.py --rerecord``); the right-hand side, the product and the particles'
preconditioner still matched the 4b5edc2 recording within 1e-5 then. When the solver began to balance each soft
body's momentum at the end of a step (SolverConfig.momentum_balance, 2026-11-25) the frame was re-recorded again; with
the balance switched off the replay still matched the earlier recording, and the first solve's file came out bit for
bit the same. Likewise when the primal step began to scale its carried bilateral multipliers (warm_start_scaled,
2026-11-26): with the scaling off, both tests passed against the earlier recording. When the coarse correction's
soft-body rotations moved from x⁻ to the tets' linearisation point x⁻ + h·v⁻ (2026-11-27), the right-hand side and
the product still matched the recording within 2e-7 of their scale, the particles' preconditioned vector moved by
1.8e-3 and the solution by 1.3e-3; the frame and the first solve were re-recorded.

Optimised kernels (fused launches, reordered or parallel sums) change float32 round-off. The first Newton iteration
is a function of the step's inputs alone, so its quantities must agree within 1e-5 of their scale on the CPU, where
it was recorded (a GPU's own rounding is held to the measured one-ulp spread, as the frame below). The end of the
frame also passes through the friction's stick/slip decisions of 8 Newton iterations, which amplify round-off by
~10⁴ in this scene: a 1-ulp change of the checkpoint moves the velocities by up to ~5e-3 of their scale and the body
poses by ~3e-5, so no reordered sum can meet 1e-5 there. The frame is held to the scene's own round-off
sensitivity instead, measured in the test: no further from the recording than twice what one ulp of the checkpoint's
state moves it."""

import tempfile
from pathlib import Path

import numpy as np

from helpers import TEST_DEVICE, probe_first_linear_solve
from softsnake.experiments.gait import default_gait, gait_targets
from softsnake.robots.pneumatics import PSI
from softsnake.robots.snake_sim import SnakeSim

DATA = Path(__file__).parent / "data"


def recorded_frame(perturb: tuple[str, float] | None = None):
    """The checkpoint's sim, its pressures set for the next frame, and the data; ``perturb`` = (array, f) scales one
    checkpoint array by 1 + f first."""
    with np.load(DATA / "recorded_snake_step.npz") as f:
        data = {k: f[k] for k in f.files}
    arrays = {k[len("checkpoint_") :]: v for k, v in data.items() if k.startswith("checkpoint_")}
    if perturb is not None:
        name, factor = perturb
        arrays[name] = (arrays[name].astype(np.float64) * (1.0 + factor)).astype(arrays[name].dtype)
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = Path(tmp) / "checkpoint.npz"
        np.savez(checkpoint, **arrays)
        sim = SnakeSim.load(checkpoint, device=TEST_DEVICE)
    assert sim.frame == 30
    use_recorded_actuation(sim)
    sim.set_pressure_targets(gait_targets(default_gait(), sim.time, sim.worlds, sim.links))
    return sim, data


def use_recorded_actuation(sim) -> None:
    """The snake model of the recording: until commit 4f59be8 every chamber's actuation lines were on, each at its own
    pressure (ε = 1 + p/Y, float32 as the kernel computed it); since then the vented chamber's are switched off. The
    recording tests the solver's kernels, so the replay keeps the model it was recorded with."""
    chamber = sim.layout.distance_chamber
    actuated = chamber >= 0

    def upload() -> None:
        p = (sim.chamber_pressures().reshape(sim.worlds, -1) * PSI).astype(np.float32)
        scale = np.ones((sim.worlds, chamber.size), dtype=np.float32)
        scale[:, actuated] = np.float32(1.0) + p[:, chamber[actuated]] / np.float32(sim.config.youngs_modulus)
        sim.control.distance_rest_scale.assign(scale.ravel())

    sim._upload_pressures = upload
    upload()


STATE = ("particle_q", "particle_qd", "body_q", "body_qd")


def end_of_frame(sim) -> dict:
    sim.step()
    return {name: getattr(sim.state, name).numpy() for name in STATE}


def ulp_spread(measure, now: dict, arrays) -> dict:
    """Per quantity of ``now``, the largest change that one ulp (1.2e-7) up or down in each checkpoint array of
    ``arrays`` makes to ``measure(sim)`` of the recorded frame: the scene's own float32 round-off sensitivity."""
    spread = {name: 0.0 for name in now}
    for array in arrays:
        for factor in (1.2e-7, -1.2e-7):
            other = measure(recorded_frame((array, factor))[0])
            for name in now:
                spread[name] = max(spread[name], np.abs(other[name] - now[name]).max())
    return spread


#: checkpoint arrays whose one-ulp change bounds what a device's own float32 arithmetic does to the first iteration
ULP_PROBES = ("particle_q", "particle_qd", "body_q", "body_qd", "solver_lam")


def test_first_newton_iteration_matches_the_recorded_kernels():
    """On the CPU, where the recording was made, within 1e-5 of each quantity's scale. A GPU rounds the same kernels
    differently (fused multiply-adds, its own division and square root), and this iteration is ill-conditioned in its
    inputs: one ulp of the checkpoint's positions moves b_v by ~9e-4 of its scale and one ulp of the body poses moves
    the rows' preconditioned vector by ~3e-3 (the stiff rows' large, cancelling impulses). There
    each quantity is held to twice what one ulp up or down in the checkpoint's positions, velocities, poses or
    multipliers moves it, measured here, as the end of the frame is below."""
    sim, _ = recorded_frame()
    now = probe_first_linear_solve(sim)
    with np.load(DATA / "recorded_snake_solve.npz") as f:
        ref = {k: f[k] for k in f.files}
    now = {name: now[name] for name in ref}  # the recorded quantities (the probe also returns A·x)
    spread = {name: 0.0 for name in now}
    if TEST_DEVICE != "cpu":
        spread = ulp_spread(probe_first_linear_solve, now, ULP_PROBES)
    for name, value in now.items():
        scale = np.abs(ref[name]).max()
        assert scale > 0.0, name
        assert spread[name] < 0.02 * scale, f"{name}: one ulp of the checkpoint moved it by {spread[name]:.3g}"
        err = np.abs(value - ref[name]).max()
        tol = max(1e-5 * scale, 2.0 * spread[name])
        assert err <= tol, (
            f"{name}: max difference {err:.3g} against scale {scale:.3g} (one ulp of the checkpoint: "
            f"{spread[name]:.3g})"
        )


def test_one_frame_from_the_recorded_checkpoint_matches_the_recorded_kernels():
    sim, data = recorded_frame()
    now = end_of_frame(sim)
    # how far float32 round-off alone carries the frame: one ulp (1.2e-7) up or down in the checkpoint's positions,
    # particle velocities or body velocities (measured on the CPU: up to 1.6e-6 / 3.2e-3 / 7.4e-6 / 1.1e-3 of the
    # scales of particle_q / particle_qd / body_q / body_qd)
    spread = ulp_spread(end_of_frame, now, ("particle_q", "particle_qd", "body_qd"))
    for name, value in now.items():
        ref = data["after_" + name]
        moved = np.abs(ref - data["checkpoint_" + name]).max()
        assert moved > 0.0, name  # the frame changed it: the comparison below is not vacuous
        scale = np.abs(ref).max()
        assert spread[name] < 0.02 * scale, f"{name}: one ulp of the checkpoint moved it by {spread[name]:.3g}"
        err = np.abs(value - ref).max()
        assert err <= 2.0 * spread[name], (
            f"{name}: max difference {err:.3g}; one ulp of the checkpoint moves it by {spread[name]:.3g}"
        )


#: the recorded step's first linear solve after the budget's 20 MINRES iterations, measured on the CPU at the commit
#: that added this test: ‖b − A·x‖ / ‖b‖ (both worlds' saddle systems, particle and row parts together; the rows' part
#: dominates ‖b‖, 6.5 against 0.0065) and ‖x_v − x_v*‖ / ‖x_v*‖, the particles' velocities against a 400-iteration
#: solve of the same system
RECORDED_MINRES_RESIDUAL = 0.010089
RECORDED_MINRES_VELOCITY_ERROR = 0.39767


def test_minres_after_the_budget_stays_at_its_recorded_accuracy():
    """A guard for the linear solver and its preconditioner: on the recorded snake step, the relative residual of the
    first Newton iteration's linear solve after the budget's 20 MINRES iterations, and its velocities' error against
    a 400-iteration solve, may not grow past 1.5× their recorded values (a preconditioner regression shows here in
    seconds, before it shows in the gait). The residual alone is dominated by the rows: with the coarse correction
    left out of the preconditioner it grew only 1.1× (0.011148) while the velocity error grew 2.2× (0.8746)."""
    sim, _ = recorded_frame()
    assert sim.solver.config.linear_iterations == 20 and sim.solver.config.linear_tolerance == 0.0
    now = probe_first_linear_solve(sim, reference_iterations=400)
    b = np.concatenate([now["b_v"].ravel(), now["b_l"].ravel()]).astype(np.float64)
    r = b - np.concatenate([now["Ax_v"].ravel(), now["Ax_l"].ravel()]).astype(np.float64)
    residual = float(np.linalg.norm(r) / np.linalg.norm(b))
    x, x_ref = now["x_v"].astype(np.float64), now["x_ref_v"].astype(np.float64)
    error = float(np.linalg.norm(x - x_ref) / np.linalg.norm(x_ref))
    print(
        f"\nafter 20 MINRES iterations: relative residual {residual:.6f} (recorded {RECORDED_MINRES_RESIDUAL}), "
        f"velocity error {error:.5f} (recorded {RECORDED_MINRES_VELOCITY_ERROR})"
    )
    assert residual <= 1.5 * RECORDED_MINRES_RESIDUAL, residual
    assert error <= 1.5 * RECORDED_MINRES_VELOCITY_ERROR, error
