"""The engine slab landing on the ground, softsnake and NVIDIA Newton's VBD side by side on the same mesh: time per
step and penetration.

The slab (0.3 × 0.05 × 0.05 m, 30×5×5 cubes × 6 = 4,500 tets, E = 0.1 MPa, ν = 0.3, 1070 kg/m³; softsnake.scenes
``soft_slab_on_ground``) starts 2 cm above a ground plane with μ = 1 and lands under gravity for 2 s at h = 1/120 s.
softsnake runs its default budget (4 Newton × 20 MINRES), VBD ``--iterations`` Gauss-Seidel iterations in one VBD
step per h (Newton's collision pipeline before it, its soft-contact stiffness ``--contact-ke`` and friction smoothing
``--friction-epsilon``; no material damping in VBD: softsnake's slab has β = 2 ms). Both step calls are timed alone
and synchronised, alternated step by step in one process, so a loaded machine slows both alike; the median over the
steps after the first five is reported. Penetration: the deepest particle below the ground over the run.

    python -P benchmarks/slab_vs_vbd.py [--iterations 10] [--device cpu] [--json out.json]

``newton`` is a bench-only dependency (``pip install newton``).
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time

import numpy as np


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=10, help="VBD iterations per step (default 10)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument(
        "--contact-ke", type=float, default=1.0e3, help="VBD soft-contact stiffness [N/m] (Newton's default)"
    )
    ap.add_argument(
        "--friction-epsilon", type=float, default=1.0e-2, help="VBD friction smoothing speed [m/s] (Newton's default)"
    )
    ap.add_argument("--json", help="also write the result to this JSON file")
    args = ap.parse_args()
    try:
        import newton
        import newton.solvers
    except ImportError:
        print("newton is not installed: pip install newton (bench-only dependency)")
        return 0
    import warp as wp

    import softsnake as ss
    from softsnake.experiments.bench import cpu_model
    from softsnake.geometry import box_tet_mesh
    from softsnake.scenes import soft_slab_on_ground
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    size, cells, drop, youngs, poisson, density = (0.3, 0.05, 0.05), (30, 5, 5), 0.02, 1.0e5, 0.3, 1070.0
    mesh = box_tet_mesh(size, cells, origin=(-size[0] / 2, -size[1] / 2, drop))  # the mesh soft_slab_on_ground builds
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -9.81))
    b.add_soft_mesh(
        pos=wp.vec3(0.0, 0.0, 0.0),
        rot=wp.quat_identity(),
        scale=1.0,
        vel=wp.vec3(0.0, 0.0, 0.0),
        vertices=[wp.vec3(*map(float, v)) for v in mesh.vertices],
        indices=[int(i) for i in mesh.tets.reshape(-1)],
        density=density,
        k_mu=youngs / (2 * (1 + poisson)),
        k_lambda=youngs * poisson / ((1 + poisson) * (1 - 2 * poisson)),
        k_damp=0.0,
        particle_radius=0.0,
    )
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=1.0, ke=args.contact_ke, kd=0.0))
    b.color()
    vm = b.finalize(device=args.device)
    vm.soft_contact_ke, vm.soft_contact_kd, vm.soft_contact_mu = args.contact_ke, 0.0, 1.0
    vbd = newton.solvers.SolverVBD(
        vm,
        iterations=args.iterations,
        friction_epsilon=args.friction_epsilon,
        particle_enable_self_contact=False,
        particle_enable_tile_solve=wp.get_device(args.device).is_cuda,
    )
    states, control = [vm.state(), vm.state()], vm.control()
    pipeline = newton.CollisionPipeline(vm)
    contacts = pipeline.contacts()
    h = 1.0 / 120.0

    def vbd_step() -> None:
        states[0].clear_forces()
        pipeline.collide(states[0], contacts)
        vbd.step(states[0], states[1], control, contacts, h)
        states.reverse()

    model = soft_slab_on_ground().finalize(device=args.device)
    state = model.state()
    solver = ss.Solver(model, dt=h, check_finite=False)
    runs = {
        "softsnake": (lambda: solver.step(state), lambda: state.particle_q),
        "vbd": (vbd_step, lambda: states[0].particle_q),
    }
    seconds = {k: [] for k in runs}
    deepest = {k: 0.0 for k in runs}
    for _ in range(int(round(args.seconds / h))):
        for name, (step, positions) in runs.items():
            wp.synchronize_device(args.device)
            t0 = time.perf_counter()
            step()
            wp.synchronize_device(args.device)
            seconds[name].append(time.perf_counter() - t0)
            deepest[name] = min(deepest[name], float(positions().numpy()[:, 2].min()))
    ms = {k: 1e3 * float(np.median(v[5:])) for k, v in seconds.items()}
    result = dict(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        device=args.device,
        machine=cpu_model(),
        newton=newton.__version__,
        vbd_iterations=args.iterations,
        contact_ke=args.contact_ke,
        friction_epsilon=args.friction_epsilon,
        ms_per_step=ms,
        ratio_softsnake_to_vbd=ms["softsnake"] / ms["vbd"],
        deepest_penetration_mm={k: -1e3 * v for k, v in deepest.items()},
    )
    print(
        f"slab landing, {args.seconds:g} s, {args.device}: softsnake 4 × 20 {ms['softsnake']:.2f} ms/step, VBD "
        f"{args.iterations} it "
        f"{ms['vbd']:.2f} ms/step (softsnake / VBD {result['ratio_softsnake_to_vbd']:.2f}); deepest penetration "
        f"{result['deepest_penetration_mm']['softsnake']:.4f} mm / {result['deepest_penetration_mm']['vbd']:.3f} mm"
    )
    if args.json:
        from softsnake.io.files import write_json_atomic

        write_json_atomic(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
