"""Engine throughput on a snake-link-sized soft mesh on the ground (the slab, 4,500 tets; or with a rigid chain, or
among obstacles).

Prints, per world count: ms per step split into the assembly stage and the rest (linear solves, updates), linear
iterations per Newton iteration and their residual reduction, steps/s and world-steps/s. Refuses to report a
non-finite run.

    python benchmarks/bench_engine.py --device cuda --worlds 1,8,64 --steps 100
"""

from __future__ import annotations

import argparse
import datetime
import json
import time

import numpy as np
import warp as wp

import softsnake as ss
from softsnake.experiments.bench import cpu_model
from softsnake.scenes import soft_slab_among_obstacles, soft_slab_on_ground, soft_slab_with_rigid_chain
from softsnake.sim.model import quiet_warp

SCENES = {
    "slab": soft_slab_on_ground,
    "slab+chain": soft_slab_with_rigid_chain,
    "slab+obstacles": soft_slab_among_obstacles,
}


def _sync(device):
    wp.synchronize_device(device)


def bench(
    device: str, worlds: int, steps: int, newton: int, linear: int, dt: float, scene: str = "slab", fem: str = "primal"
) -> dict:
    model = SCENES[scene]().finalize(device=device, worlds=worlds)
    state = model.state()
    solver = ss.Solver(model, dt=dt, newton_iterations=newton, linear_iterations=linear, check_finite=False, fem=fem)
    for _ in range(5):  # compile, capture, settle onto the ground
        solver.step(state)
    _sync(model.device)
    t0 = time.perf_counter()
    for _ in range(steps):
        solver.step(state)
    _sync(model.device)
    total = (time.perf_counter() - t0) / steps
    # assembly share: the assembly stage of one step (newton + 1 assemblies), timed alone
    reps = 20
    _sync(model.device)
    t0 = time.perf_counter()
    for _ in range(reps):
        for _ in range(newton + 1):
            solver.formulation.assemble(0)
    _sync(model.device)
    assembly = (time.perf_counter() - t0) / reps
    q = state.particle_q.numpy()
    if not np.all(np.isfinite(q)):
        raise SystemExit("non-finite state: refusing to report")
    d = solver.diagnostics()
    return {
        "worlds": worlds,
        "particles_per_world": model.particle_count,
        "tets_per_world": model.tet_count,
        "rows_per_world": model.row_count,
        "bodies_per_world": model.body_count,
        "joints_per_world": model.joint_count,
        "attachments_per_world": model.attachment_count,
        "ms_per_step": 1e3 * total,
        "ms_assembly": 1e3 * assembly,
        "ms_solve": 1e3 * max(total - assembly, 0.0),
        "steps_per_s": 1.0 / total,
        "world_steps_per_s": worlds / total,
        "real_time_factor": dt / total,
        "newton_iterations": newton,
        "linear_iterations_per_newton": float(d.linear_iterations.mean()),
        "linear_residual_reduction_median": float(np.median(d.linear_reduction)),
        "newton_residual_first_last_world0": [float(d.residual_norm[0, 0]), float(d.residual_norm[-1, 0])],
        "active_contacts_world0": int(d.active_contacts[0]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--worlds", default="1,4")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--newton", type=int, default=4)
    ap.add_argument("--linear", type=int, default=20)
    ap.add_argument("--dt", type=float, default=1.0 / 120.0)
    ap.add_argument(
        "--scene",
        choices=sorted(SCENES),
        default="slab",
        help="slab: soft mesh on the ground; slab+chain: plus hinged rigid carriages attached to it; "
        "slab+obstacles: among 100 static boxes",
    )
    ap.add_argument("--fem", choices=("primal", "dual"), default="primal", help="solver formulation (docs/solver.md)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    quiet_warp()
    wp.init()
    rows = [bench(a.device, int(w), a.steps, a.newton, a.linear, a.dt, a.scene, a.fem) for w in a.worlds.split(",")]
    dev = wp.get_device(a.device)
    meta = {
        "device": dev.name,
        "date": datetime.date.today().isoformat(),
        "warp": wp.__version__,
        "host": cpu_model(),
        "dt": a.dt,
    }
    if a.json:
        print(json.dumps({"meta": meta, "results": rows}, indent=2))
        return
    print(
        f"device {meta['device']} ({a.device}), warp {meta['warp']}, {meta['date']}, dt={a.dt:.5f} s, {a.newton} "
        f"Newton x {a.linear} linear ({a.fem})"
    )
    r0 = rows[0]
    print(
        f"scene {a.scene}: {r0['particles_per_world']} particles, {r0['tets_per_world']} tets, "
        f"{r0['bodies_per_world']} bodies, {r0['joints_per_world']} joints, {r0['attachments_per_world']} "
        f"attachments, {r0['rows_per_world']} rows per world"
    )
    print("worlds | ms/step | assembly | solve | steps/s | world-steps/s | RTF | lin. it | lin. red. | contacts")
    for r in rows:
        print(
            f"{r['worlds']:6d} | {r['ms_per_step']:7.2f} | {r['ms_assembly']:8.2f} | {r['ms_solve']:5.2f} | "
            f"{r['steps_per_s']:7.1f} | {r['world_steps_per_s']:13.1f} | {r['real_time_factor']:.2f} | "
            f"{r['linear_iterations_per_newton']:6.1f} | {r['linear_residual_reduction_median']:.2e} | "
            f"{r['active_contacts_world0']}"
        )


if __name__ == "__main__":
    main()
