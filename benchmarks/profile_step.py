"""Per-kernel and per-phase profile of the solver step (issue 11): where a step's time goes, on CPU or CUDA.

Every Warp launch (and ``wp.copy``) is timed with a device synchronisation around it and attributed to the innermost
solver phase active at the time: prediction and linearisation, row assembly, MINRES vector work, the matrix-free
product, the preconditioner, updates and line search, the friction cone projection, integration. The profiled step
runs eagerly (no graph capture) so that launches are visible, and each launch pays Python's launch cost and a
synchronisation; the unprofiled ms/step printed first is the default step (a captured CUDA graph on a GPU; on the CPU
eager, or replayed with Warp's CPU capture when SOFTSNAKE_CPU_CAPTURE=1).

    python benchmarks/profile_step.py --scene slab --steps 10
    python benchmarks/profile_step.py --scene snake --steps 6 --device cuda
    python benchmarks/profile_step.py --scene slab --json profile.json
    python benchmarks/profile_step.py --scene snake --steps 4 --replay 200   # + each launch of one MINRES iteration
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import time
from collections import defaultdict

import numpy as np
import warp as wp

PHASES = [
    # (class path, method, phase name); the innermost active phase gets a launch
    ("softsnake.sim.solver:Solver", "_launch_step", "prediction and linearisation"),
    ("softsnake.sim.solver:Solver", "_assemble", "row assembly"),
    ("softsnake.sim.primal:PrimalStep", "assemble", "momentum residual and body blocks"),
    ("softsnake.sim.primal:PrimalStep", "solve", "MINRES vector work"),
    ("softsnake.sim.primal:PrimalStep", "matvec", "matrix-free product"),
    ("softsnake.sim.primal:PrimalStep", "precondition", "preconditioner"),
    ("softsnake.sim.primal:PrimalStep", "apply_update", "update and in-loop projection"),
    ("softsnake.sim.primal:PrimalStep", "backtrack", "line search"),
    ("softsnake.sim.primal:PrimalStep", "project_cones", "final cone projection"),
    ("softsnake.sim.solver:Solver", "_finalize", "integration"),
]


class Profiler:
    """Wraps wp.launch / wp.launch_tiled / wp.copy and the solver phases while active."""

    def __init__(self, device):
        self.device = device
        self.stack: list[str] = []
        self.kernel_time = defaultdict(float)  # (phase, kernel) → s
        self.kernel_calls = defaultdict(int)
        self.enabled = False

    def _timed(self, name: str, fn, *args, **kwargs):
        if not self.enabled:
            return fn(*args, **kwargs)
        wp.synchronize_device(self.device)
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        wp.synchronize_device(self.device)
        key = (self.stack[-1] if self.stack else "outside the solver", name)
        self.kernel_time[key] += time.perf_counter() - t0
        self.kernel_calls[key] += 1
        return out

    @contextlib.contextmanager
    def installed(self):
        import importlib

        originals = {"launch": wp.launch, "launch_tiled": wp.launch_tiled, "copy": wp.copy}

        def launch(kernel, *a, **k):
            return self._timed(getattr(kernel, "key", str(kernel)), originals["launch"], kernel, *a, **k)

        def launch_tiled(kernel, *a, **k):
            return self._timed(getattr(kernel, "key", str(kernel)), originals["launch_tiled"], kernel, *a, **k)

        def copy(*a, **k):
            return self._timed("wp.copy", originals["copy"], *a, **k)

        wp.launch, wp.launch_tiled, wp.copy = launch, launch_tiled, copy
        wrapped = []
        for path, method, phase in PHASES:
            module, cls_name = path.split(":")
            cls = getattr(importlib.import_module(module), cls_name)
            orig = getattr(cls, method)

            def make(orig=orig, phase=phase):
                @functools.wraps(orig)
                def inner(*a, **k):
                    self.stack.append(phase)
                    try:
                        return orig(*a, **k)
                    finally:
                        self.stack.pop()

                return inner

            setattr(cls, method, make())
            wrapped.append((cls, method, orig))
        try:
            yield self
        finally:
            wp.launch, wp.launch_tiled, wp.copy = originals["launch"], originals["launch_tiled"], originals["copy"]
            for cls, method, orig in wrapped:
                setattr(cls, method, orig)


def device_kernel_times(advance, calls: int, device) -> dict[str, tuple[float, int]]:
    """Kernel name → (GPU ms in all, launches) over ``calls`` eager calls of ``advance``, from Warp's CUDA activity
    timing (device-side durations: what each kernel costs inside a captured graph, without the profiler's host
    synchronisations)."""
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


def iteration_launch_times(solver, repeats: int, device) -> list[tuple[str, float]]:
    """(kernel, µs) for each launch of one MINRES iteration of ``solver``'s primal step at its current state: the
    iteration's launches are recorded once (``recorded_launches``) and each command is replayed ``repeats`` times on
    its own, so Python's launch cost (~2 µs per replay) is all that remains of the host side. The replays change the
    solver's vectors: run it after the steps that are measured."""
    from softsnake.sim.primal import PrimalStep, recorded_launches

    primal = next(v for v in vars(solver).values() if isinstance(v, PrimalStep))
    names: list[str] = []
    originals = wp.launch, wp.launch_tiled

    def named(fn):
        def inner(kernel, *a, **k):
            names.append(getattr(kernel, "key", str(kernel)))
            return fn(kernel, *a, **k)

        return inner

    wp.launch, wp.launch_tiled = named(originals[0]), named(originals[1])
    try:
        with recorded_launches() as ops:
            primal._minres_iteration()
    finally:
        wp.launch, wp.launch_tiled = originals
    out = []
    for name, op in zip(names, ops):
        op()
        wp.synchronize_device(device)
        t0 = time.perf_counter()
        for _ in range(repeats):
            op()
        wp.synchronize_device(device)
        out.append((name, 1e6 * (time.perf_counter() - t0) / repeats))
    return out


def make_scene(scene: str, device: str, graph_capture: bool):
    """(advance one step, steps per call, description, solver); the snake advances one frame of its substeps."""
    import softsnake as ss
    from softsnake.scenes import soft_slab_among_obstacles, soft_slab_on_ground, soft_slab_with_rigid_chain

    slabs = {"slab": soft_slab_on_ground, "slab+chain": soft_slab_with_rigid_chain, "slab+obstacles": soft_slab_among_obstacles}
    if scene in slabs:
        builder = slabs[scene]()
        model = builder.finalize(device=device)
        state = model.state()
        solver = ss.Solver(model, dt=1.0 / 120.0, check_finite=False, graph_capture=graph_capture)
        return (lambda: solver.step(state)), 1, f"{scene}: {model.particle_count} particles, {model.tet_count} tets, {model.row_count} rows", solver
    if scene == "snake":
        import dataclasses

        from softsnake.robots.pneumatics import OpenLoopGait
        from softsnake.robots.snake import SnakeConfig
        from softsnake.robots.snake_sim import SnakeSim, gait_targets

        base = SnakeConfig()
        cfg = dataclasses.replace(base, solver=dataclasses.replace(base.solver, graph_capture=graph_capture))
        sim = SnakeSim(worlds=1, device=device, config=cfg)
        gait = OpenLoopGait()

        def frame():
            sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
            sim.step()

        m = sim.model
        return frame, cfg.substeps, f"snake: {m.particle_count} particles, {m.tet_count} tets, {m.body_count} bodies, {m.row_count} rows", sim.solver
    raise SystemExit(f"unknown scene {scene!r} (slab, slab+chain, slab+obstacles, snake)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", default="slab", help="slab, slab+chain, slab+obstacles or snake (default slab)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=10, help="profiled calls (snake: frames of 2 steps)")
    ap.add_argument("--top", type=int, default=25, help="kernels listed")
    ap.add_argument("--json", help="write the profile to this JSON file")
    ap.add_argument("--replay", type=int, default=0, metavar="N", help="also time each launch of one MINRES iteration, replayed N times on its own (no Python launch cost)")
    args = ap.parse_args()
    if args.steps < 1:
        ap.error("--steps must be ≥ 1")
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    device = wp.get_device(args.device)
    # the unprofiled time is that of the default step (a captured graph on CUDA, and on the CPU with
    # SOFTSNAKE_CPU_CAPTURE=1); the profile runs it eagerly
    advance, substeps, title, _ = make_scene(args.scene, args.device, graph_capture=True)
    for _ in range(3):  # compile and settle
        advance()
    wp.synchronize_device(device)
    t0 = time.perf_counter()
    for _ in range(args.steps):
        advance()
    wp.synchronize_device(device)
    clean_ms = 1e3 * (time.perf_counter() - t0) / (args.steps * substeps)
    from softsnake.sim.primal import PrimalStep

    PrimalStep.record_iterations = False  # replayed recorded launches would be invisible to the profiler
    advance, substeps, title, solver = make_scene(args.scene, args.device, graph_capture=False)
    for _ in range(3):
        advance()
    prof = Profiler(device)
    with prof.installed():
        prof.enabled = True
        t0 = time.perf_counter()
        for _ in range(args.steps):
            advance()
        wp.synchronize_device(device)
        profiled_ms = 1e3 * (time.perf_counter() - t0) / (args.steps * substeps)
    n = args.steps * substeps
    total = sum(prof.kernel_time.values())
    print(f"{title}; device {device}; {n} steps")
    print(f"ms/step: {clean_ms:.2f} unprofiled (default step), {profiled_ms:.2f} profiled (eager, {1e3 * total / n:.2f} inside timed launches)")
    phase_time, phase_calls = defaultdict(float), defaultdict(int)
    kernel_time, kernel_calls = defaultdict(float), defaultdict(int)
    for (phase, kernel), t in prof.kernel_time.items():
        phase_time[phase] += t
        phase_calls[phase] += prof.kernel_calls[(phase, kernel)]
        kernel_time[kernel] += t
        kernel_calls[kernel] += prof.kernel_calls[(phase, kernel)]
    print(f"\n{'phase':40s} {'launches/step':>14s} {'ms/step':>9s} {'share':>7s}")
    for phase, t in sorted(phase_time.items(), key=lambda kv: -kv[1]):
        print(f"{phase:40s} {phase_calls[phase] / n:14.1f} {1e3 * t / n:9.3f} {100 * t / total:6.1f}%")
    print(f"\n{'kernel':40s} {'launches/step':>14s} {'ms/step':>9s} {'share':>7s}")
    for kernel, t in sorted(kernel_time.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{kernel:40s} {kernel_calls[kernel] / n:14.1f} {1e3 * t / n:9.3f} {100 * t / total:6.1f}%")
    print(f"{'all':40s} {sum(kernel_calls.values()) / n:14.1f} {1e3 * total / n:9.3f}")
    replayed = iteration_launch_times(solver, args.replay, device) if args.replay > 0 else []
    if replayed:
        print(f"\none MINRES iteration, each launch replayed {args.replay} times on its own")
        for name, us in replayed:
            print(f"{name:40s} {us:9.1f} µs")
        print(f"{'all':40s} {sum(us for _, us in replayed):9.1f} µs")
    device_kernels = device_kernel_times(advance, args.steps, device) if device.is_cuda else {}
    if device_kernels:
        gpu_total = sum(t for t, _ in device_kernels.values())
        print(f"\nGPU time of each kernel (Warp's CUDA activity timing of {n} eager steps; no host synchronisation in between)")
        print(f"{'kernel':40s} {'launches/step':>14s} {'GPU ms/step':>12s} {'µs/launch':>10s} {'share':>7s}")
        for name, (t, calls) in sorted(device_kernels.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"{name[:40]:40s} {calls / n:14.1f} {t / n:12.3f} {1e3 * t / calls:10.1f} {100 * t / gpu_total:6.1f}%")
        print(f"{'all':40s} {sum(c for _, c in device_kernels.values()) / n:14.1f} {gpu_total / n:12.3f}")
    if args.json:
        from softsnake.io.files import write_json_atomic

        write_json_atomic(
            args.json,
            dict(
                scene=title,
                device=str(device),
                steps=n,
                ms_per_step_unprofiled=clean_ms,
                ms_per_step_profiled=profiled_ms,
                phases={p: dict(ms_per_step=1e3 * t / n, launches_per_step=phase_calls[p] / n) for p, t in phase_time.items()},
                kernels={k: dict(ms_per_step=1e3 * t / n, launches_per_step=kernel_calls[k] / n) for k, t in kernel_time.items()},
                gpu_kernels={k: dict(gpu_ms_per_step=t / n, launches_per_step=c / n) for k, (t, c) in device_kernels.items()},
                iteration_launches_us=[dict(kernel=k, us=us) for k, us in replayed],
            ),
        )
    if not np.isfinite(total):
        raise SystemExit("non-finite timings")


if __name__ == "__main__":
    main()
