"""Per-stage profile of the solver step, on CPU or CUDA: where a step's time goes, and how many launches it takes.

Each stage of the step (softsnake/sim/solver.py: predict, collide, linearise, warm start, per Newton iteration
assemble / body blocks / solve / update, finish, finalise) is one kernel over the worlds, so the per-kernel table is
the per-stage table. Every launch is timed with a device synchronisation around it (the profiled step runs eagerly);
the unprofiled ms/step printed first is the default step (a captured CUDA graph on a GPU). On a GPU the kernels' own
device times (Warp's CUDA activity timing, no host synchronisation in between) are listed too, and the phases of the
linear solve and of the stages around it (SolverConfig.phase_timing: the clock cycles between barriers, per MINRES
iteration and per step).

    python -P benchmarks/profile_step.py --scene slab --steps 10
    python -P benchmarks/profile_step.py --scene snake --steps 6 --device cuda --json profile.json
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections import defaultdict

import numpy as np
import warp as wp

from softsnake.sim.launches import counted_launches


def timed_launches(device):
    """A context manager that times every launch (synchronised) by kernel name: yields {name: [seconds, calls]}."""
    import contextlib

    @contextlib.contextmanager
    def ctx():
        table: dict = defaultdict(lambda: [0.0, 0])
        launch, launch_tiled = wp.launch, wp.launch_tiled

        def timed(fn):
            def inner(kernel, *a, **k):
                wp.synchronize_device(device)
                t0 = time.perf_counter()
                out = fn(kernel, *a, **k)
                wp.synchronize_device(device)
                entry = table[getattr(kernel, "key", str(kernel))]
                entry[0] += time.perf_counter() - t0
                entry[1] += 1
                return out

            return inner

        wp.launch, wp.launch_tiled = timed(launch), timed(launch_tiled)
        try:
            yield table
        finally:
            wp.launch, wp.launch_tiled = launch, launch_tiled

    return ctx()


def make_scene(scene: str, device: str, graph_capture: bool, phase_timing: bool = False, **solver_options):
    """(advance one call, steps per call, description, solver); the snake advances one frame of its substeps.
    ``phase_timing``: the solver counts the clock cycles of its linear solve's phases (SolverConfig.phase_timing);
    ``solver_options``: other SolverConfig fields (e.g. slice_width)."""
    import softsnake as ss
    from softsnake.scenes import soft_slab_among_obstacles, soft_slab_on_ground, soft_slab_with_rigid_chain

    slabs = {
        "slab": soft_slab_on_ground,
        "slab+chain": soft_slab_with_rigid_chain,
        "slab+obstacles": soft_slab_among_obstacles,
    }
    if scene in slabs:
        model = slabs[scene]().finalize(device=device)
        state = model.state()
        solver = ss.Solver(
            model,
            dt=1.0 / 120.0,
            check_finite=False,
            graph_capture=graph_capture,
            phase_timing=phase_timing,
            **solver_options,
        )
        return (
            (lambda: solver.step(state)),
            1,
            f"{scene}: {model.particle_count} particles, {model.tet_count} tets, {model.row_count} rows",
            solver,
        )
    if scene == "snake":
        from softsnake.robots.pneumatics import OpenLoopGait
        from softsnake.robots.snake import SnakeConfig
        from softsnake.robots.snake_sim import SnakeSim, gait_targets

        base = SnakeConfig()
        cfg = dataclasses.replace(
            base,
            solver=dataclasses.replace(
                base.solver, graph_capture=graph_capture, phase_timing=phase_timing, **solver_options
            ),
        )
        sim = SnakeSim(worlds=1, device=device, config=cfg)
        gait = OpenLoopGait()

        def frame():
            sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
            sim.step()

        m = sim.model
        return (
            frame,
            cfg.substeps,
            f"snake: {m.particle_count} particles, {m.tet_count} tets, {m.body_count} bodies, {m.row_count} rows",
            sim.solver,
        )
    raise SystemExit(f"unknown scene {scene!r} (slab, slab+chain, slab+obstacles, snake)")


def device_kernel_times(advance, calls: int, device) -> dict[str, tuple[float, int]]:
    """Kernel name → (GPU ms in all, launches) over ``calls`` eager calls of ``advance`` (Warp's CUDA activity
    timing)."""
    wp.synchronize_device(device)
    wp.timing_begin(cuda_filter=wp.TIMING_KERNEL | wp.TIMING_MEMCPY | wp.TIMING_MEMSET)
    for _ in range(calls):
        advance()
    results = wp.timing_end()
    out: dict[str, list] = defaultdict(lambda: [0.0, 0])
    for r in results:
        name = r.name.removeprefix("forward kernel ").split(" ")[0]
        out[name][0] += r.elapsed
        out[name][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def solve_phases(scene: str, device: str, calls: int, **solver_options) -> dict:
    """Where the linear solve's time goes, phase by phase (SolverConfig.phase_timing: clock cycles that lane 0 of
    each world's block counts between barriers): per phase its share of the solve and its cycles per MINRES
    iteration, over ``calls`` calls after three to settle, and the bytes an iteration moves (solve_bytes);
    ``solver_options`` as make_scene's."""
    advance, substeps, title, solver = make_scene(scene, device, False, True, **solver_options)
    for _ in range(3):
        advance()
    extras = solver.diagnostics().extras
    before = {**extras["solve_phase_cycles"], **extras["step_phase_cycles"]}
    iterations = 0
    for _ in range(calls):
        advance()
        # MINRES iterations of the call's steps (its last step's count, every step of a call runs the same budget)
        iterations += substeps * int(solver.diagnostics().linear_iterations.sum())
    extras = solver.diagnostics().extras
    cycles = {k: float((v - before[k]).sum()) for k, v in extras["solve_phase_cycles"].items()}
    total = sum(cycles.values())
    # the other stages' phases per world and step (the step's worlds run side by side, one block each)
    steps = calls * substeps * solver.model.worlds
    step_cycles = {k: float((v - before[k]).sum()) / steps for k, v in extras["step_phase_cycles"].items()}
    return dict(
        scene=title,
        iterations=iterations,
        phases={k: dict(share=c / total, cycles_per_iteration=c / max(iterations, 1)) for k, c in cycles.items()},
        step_phases={k: dict(cycles_per_step=c) for k, c in step_cycles.items()},
        solve_bytes=solve_bytes(solver),
        block_row_balance=block_row_balance(solver),
    )


#: how many times one MINRES iteration reads or writes each particle's and each row's entry of the solve's vectors
#: (kernels/saddle.py, kernels/minres.py): the product's x, r1, y and M x; the Lanczos shift's y, r2, r1, r2, y; the
#: preconditioner's r and z; the update's w2, w1, v, x, y, w2, w1, x, v; for the rows also the Lanczos subtraction's
#: y, r1, v, y, the product's y and the rows' preconditioner's u and D
VECTOR_PASSES_PARTICLES, VECTOR_PASSES_ROWS = 20, 26
#: the vectors a world's solve holds from one iteration to the next: MINRES's eight (b, x, y, v, r1, r2, w1, w2) and
#: the product's M x for the particles; the same eight, the product's g and the rows' preconditioner's t, u and D for
#: the rows
HELD_VECTORS_PARTICLES, HELD_VECTORS_ROWS = 9, 12


def solve_bytes(solver) -> dict | None:
    """Bytes one world's MINRES iteration reads or writes through the L2 cache, an estimate from the primal step's
    array sizes (the default formulation) after its last step: the elastic blocks and their columns (each block read
    once), the coarse level's dense inverse, the nodes' (particle, weight) lists and the particles' (node, weight)
    prolongation, the solve's vectors (VECTOR_PASSES_*, none of them kept in L1 between phases) and the rigid-body
    preconditioner's H⁻¹ rows (float64). Left out: gathers of a vector that the same phase reads or wrote (the
    blocks' x, the lists' r, the prolongation's y_c: L1 hits for the most part), the rows' Jacobians and the bodies'
    incidence lists (a few tens of kB for the snake). Divided by one multiprocessor's streaming rate
    (benchmarks/latency_floor.py, the stream case) it is the iteration's bandwidth floor on one block. The coarse
    level's tables and the prolongation are the model's, read by every world alike; the rest is each world's own:
    ``per_world`` is the part of ``total`` a batch moves once per world, ``working_set`` the bytes of that data (the
    held vectors, HELD_VECTORS_*, once each), which a batch's worlds in flight hold in the L2 cache or re-read from
    memory every iteration. None for the dual formulation."""
    d = getattr(solver.formulation, "data", None)
    if not hasattr(d, "stiffness"):  # the dual formulation
        return None
    m = solver.model
    contact = m.rows["contact"]
    unused = m.contact_count - int(solver.contact_list.slots_used()[0]) if m.contact_count else 0
    rows = m.row_count - d.skip_count - unused * contact.rows_per_element
    out = dict(
        elastic_blocks=40 * int(d.stiffness.row_length.numpy().sum()),  # 9 floats and the column per block
        coarse_inverse=16 * d.inverse.shape[0] * d.use_coarse,  # vec4 rows of the soft bodies' dense A_c⁻¹
        coarse_lists=8 * d.node_particles.shape[0] * d.use_coarse,
        prolongation=8 * 8 * m.particle_count * d.use_coarse,
        vectors=12 * m.particle_count * VECTOR_PASSES_PARTICLES + 4 * rows * VECTOR_PASSES_ROWS,
        body_preconditioner=8 * d.H_inv_lanes.shape[0] // m.worlds * d.body_blocks,
    )
    out["total"] = sum(out.values())
    out["per_world"] = out["elastic_blocks"] + out["vectors"] + out["body_preconditioner"]
    held = 12 * m.particle_count * HELD_VECTORS_PARTICLES + 4 * rows * HELD_VECTORS_ROWS
    out["working_set"] = out["elastic_blocks"] + held + out["body_preconditioner"]
    out["solve_rows"] = rows
    return out


def block_row_balance(solver, lanes=(32, 64, 128, 256, 512, 1024)) -> dict | None:
    """How evenly the product's particle loop spreads its elastic block rows over a world's lanes on a GPU: lane l
    walks particles l, l + lanes, … (kernels/saddle.py, saddle_product_world), each one's block row in batches of
    GPU_LANE_BATCH blocks (kernels/block.py: two dependent round trips per batch), and the phase waits for its
    busiest lane. Per lane count: the busiest lane's blocks and batches and the mean lane's. None for the dual
    formulation."""
    from softsnake.kernels.block import GPU_LANE_BATCH

    d = getattr(solver.formulation, "data", None)
    if not hasattr(d, "stiffness"):
        return None
    length = d.stiffness.row_length.numpy()
    batches = -(-length // GPU_LANE_BATCH)
    out = {}
    for n in lanes:
        lane = np.arange(len(length)) % n
        blocks = np.bincount(lane, weights=length, minlength=n)
        trips = np.bincount(lane, weights=batches, minlength=n)
        out[n] = dict(
            busiest_blocks=int(blocks.max()),
            mean_blocks=float(blocks.mean()),
            busiest_batches=int(trips.max()),
            mean_batches=float(trips.mean()),
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="slab", help="slab, slab+chain, slab+obstacles or snake (default slab)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=10, help="profiled calls (snake: frames of 2 steps)")
    ap.add_argument("--json", help="write the profile to this JSON file")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be ≥ 1")
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    device = wp.get_device(args.device)
    advance, substeps, title, _ = make_scene(args.scene, args.device, graph_capture=True)
    for _ in range(3):  # compile and settle
        advance()
    wp.synchronize_device(device)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        advance()
    wp.synchronize_device(device)
    clean_ms = 1e3 * (time.perf_counter() - t0) / (args.steps * substeps)
    advance, substeps, title, solver = make_scene(args.scene, args.device, graph_capture=False)
    for _ in range(3):
        advance()
    n = args.steps * substeps
    with counted_launches() as counts:
        advance()
    launches = sum(counts.values()) / substeps
    with timed_launches(device) as table:
        t0 = time.perf_counter()
        for _ in range(args.steps):
            advance()
        wp.synchronize_device(device)
        profiled_ms = 1e3 * (time.perf_counter() - t0) / n
    total = sum(t for t, _ in table.values())
    print(f"{title}; device {device}; {n} steps; {launches:.0f} launches per step (control included)")
    print(
        f"ms/step: {clean_ms:.2f} unprofiled (default step), {profiled_ms:.2f} profiled (eager, synchronised launches)"
    )
    print(f"\n{'stage kernel':32s} {'launches/step':>14s} {'ms/step':>9s} {'share':>7s}")
    for name, (t, calls) in sorted(table.items(), key=lambda kv: -kv[1][0]):
        print(f"{name:32s} {calls / n:14.1f} {1e3 * t / n:9.3f} {100 * t / total:6.1f}%")
    print(f"{'all':32s} {sum(c for _, c in table.values()) / n:14.1f} {1e3 * total / n:9.3f}")
    device_kernels = device_kernel_times(advance, args.steps, device) if device.is_cuda else {}
    if device_kernels:
        gpu_total = sum(t for t, _ in device_kernels.values())
        print("\nGPU time of each kernel (Warp's CUDA activity timing of eager steps)")
        print(f"{'kernel':32s} {'launches/step':>14s} {'GPU ms/step':>12s} {'µs/launch':>10s} {'share':>7s}")
        for name, (t, calls) in sorted(device_kernels.items(), key=lambda kv: -kv[1][0]):
            print(
                f"{name[:32]:32s} {calls / n:14.1f} {t / n:12.3f} {1e3 * t / calls:10.1f} {100 * t / gpu_total:6.1f}%"
            )
        print(f"{'all':32s} {sum(c for _, c in device_kernels.values()) / n:14.1f} {gpu_total / n:12.3f}")
    phases = solve_phases(args.scene, args.device, args.steps)
    print(f"\nThe linear solve by phase ({phases['iterations']} MINRES iterations; lane 0's clock between barriers)")
    print(f"{'phase':24s} {'share':>7s} {'cycles/iteration':>17s}")
    for name, ph in phases["phases"].items():
        print(f"{name:24s} {100 * ph['share']:6.1f}% {ph['cycles_per_iteration']:17.0f}")
    traffic = phases["solve_bytes"]
    if traffic:
        rows = traffic["solve_rows"]
        print(f"\nBytes per MINRES iteration and world (estimate, {rows} rows in the solve): ", end="")
        print(", ".join(f"{k} {v / 1e3:.0f} kB" for k, v in traffic.items() if k != "solve_rows"))
        print("(per_world: the part each world of a batch moves itself; working_set: the bytes of that data)")
    balance = phases["block_row_balance"]
    if balance:
        print("\nThe product's block rows over a GPU world's lanes (busiest lane against the mean lane)")
        print(f"{'lanes':>6s} {'blocks':>16s} {'batches':>16s}")
        for n, b in balance.items():
            print(
                f"{n:6d} {b['busiest_blocks']:7d} / {b['mean_blocks']:6.1f} {b['busiest_batches']:7d} / "
                f"{b['mean_batches']:6.1f}"
            )
    print("\nThe other stages by phase (lane 0's clock between barriers, per world and step)")
    print(f"{'phase':24s} {'cycles/step':>17s}")
    for name, ph in phases["step_phases"].items():
        print(f"{name:24s} {ph['cycles_per_step']:17.0f}")
    if args.json:
        from softsnake.io.files import write_json_atomic

        write_json_atomic(
            args.json,
            dict(
                scene=title,
                device=str(device),
                steps=n,
                launches_per_step=launches,
                ms_per_step_unprofiled=clean_ms,
                ms_per_step_profiled=profiled_ms,
                kernels={k: dict(ms_per_step=1e3 * t / n, launches_per_step=c / n) for k, (t, c) in table.items()},
                gpu_kernels={
                    k: dict(gpu_ms_per_step=t / n, launches_per_step=c / n) for k, (t, c) in device_kernels.items()
                },
                solve_phases=phases,
            ),
        )
    if not np.isfinite(total):
        raise SystemExit("non-finite timings")


if __name__ == "__main__":
    main()
