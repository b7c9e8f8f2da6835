"""Same validation scenes in NVIDIA Newton's VBD solver, for tabling next to softsnake's numbers.

Runs the cantilever and the incline scenes of ``softsnake/validation.py`` (same mesh, material, gravity, h = 1/120 s,
duration and post-processing) in ``newton.solvers.SolverVBD`` at several VBD iteration counts, and prints, per scene
and iteration count, the error against the same independent reference softsnake is checked against plus the
wall-clock ms per step:

* cantilever (0.1 × 0.01 × 0.01 m, 30×3×3 cubes × 6 tets, E = 5 MPa, ν = 0.3, clamped at x = 0, 4 s): mean tip
  deflection vs the sparse linear-FEM solve ``cantilever_reference()``, and the tip swing over the last 0.5 s;
* incline, 3 cm cube (2×2×2 cubes, E = 0.2 MPa) on the ground with tilted gravity, 1 s: slope 0.3 / μ = 0.5 must stick
  (error = centre-of-mass drift), slope 0.8 / μ = 0.3 must slide at g(sin θ − μ cos θ) (error = |fitted a − that|).

``newton`` is a bench-only dependency (``pip install newton``); without it the script says so and exits 0.

    python benchmarks/compare_vbd.py --iterations 5,10,20,40 --out benchmarks/compare_vbd.json

Material: Newton's VBD tets take Lamé parameters (k_mu, k_lambda) and use the stable Neo-Hookean energy whose
small-strain limit is linear elasticity with those Lamé parameters, so they are computed from (E, ν) as usual. No
material damping (k_damp = 0), as in softsnake's validation scenes.

Contact: VBD's particle-ground contact is a penalty force on each vertex (particle radius 0, as in softsnake: the
vertex itself touches the plane). Its stiffness is the mean of the particle side's ``model.soft_contact_ke`` and the
ground shape's ``ke``; both are set to ``--contact-ke`` (default 1e3 N/m, Newton's default ``soft_contact_ke``), with
no contact damping (``--contact-kd`` 0). VBD ramps the per-contact penalty from 1e2 N/m towards that stiffness
(AVBD-style, solver defaults). The friction coefficient is the geometric mean of ``model.soft_contact_mu`` and the
ground's ``mu``; both are set to the scene's μ so the pair gets exactly μ. VBD's friction is IPC-style smoothed
Coulomb friction, linear below a slip speed ``--friction-epsilon`` (default Newton's 1e-2 m/s), so a "sticking" body
creeps. The incline results depend strongly on these choices (stiffer contact gives VBD far too much friction:
with 1e5 N/m the sliding cube stops); the defaults are the best of the settings we tried, not tuned per row.

Cantilever: at h = 1/120 s VBD's Gauss-Seidel sweeps are far from converged on this stiff, slender beam (the beam
behaves tens of times too soft). This is convergence, not set-up: on a coarse 10×1×1 version of the beam, one step of
h = 0.05 s run to 2e5 iterations reproduces the linear-FEM backward-Euler step to 1e-4 (checked while writing this).

Clamp: the x = 0 vertices are made kinematic the way Newton's own ``fix_left`` does it (zero mass, ACTIVE flag
cleared). ``--substeps N`` splits each h into N VBD steps (Newton's examples substep); the default is 1 so that the
rows compare with softsnake at the same h. ms/step is wall clock per h (collision detection included), the first
step (kernel load) left out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

try:
    import newton
    import newton.solvers
except ImportError:
    print("newton not installed: pip install newton (bench-only dependency)")
    sys.exit(0)

import warp as wp

from softsnake.geometry import box_tet_mesh
from softsnake.sim.model import quiet_warp
from softsnake.validation import G, REALTIME, cantilever_mesh, cantilever_reference, incline_gravity

SOLVER = "newton-vbd"


def lame(youngs: float, poisson: float) -> tuple[float, float]:
    """Lamé parameters (μ, λ) [Pa] from Young's modulus and Poisson's ratio."""
    mu = youngs / (2.0 * (1.0 + poisson))
    lam = youngs * poisson / ((1.0 + poisson) * (1.0 - 2.0 * poisson))
    return mu, lam


def _add_mesh(builder, vertices, tets, *, youngs: float, poisson: float, density: float) -> None:
    k_mu, k_lambda = lame(youngs, poisson)
    builder.add_soft_mesh(
        pos=wp.vec3(0.0, 0.0, 0.0),
        rot=wp.quat_identity(),
        scale=1.0,
        vel=wp.vec3(0.0, 0.0, 0.0),
        vertices=[wp.vec3(*map(float, v)) for v in vertices],
        indices=[int(i) for i in np.asarray(tets).reshape(-1)],
        density=density,
        k_mu=k_mu,
        k_lambda=k_lambda,
        k_damp=0.0,
        particle_radius=0.0,
    )


class VBDRun:
    """A finalized Newton model + VBD solver (+ collision pipeline if the model has shapes), stepped at dt, each step
    optionally split into ``substeps`` VBD steps of dt/substeps (as Newton's examples do), collision detection before
    each of them."""

    def __init__(self, builder, *, iterations: int, dt: float, device: str, substeps: int = 1, contact_ke: float | None = None, contact_kd: float = 0.0, mu: float | None = None, friction_epsilon: float = 1e-2):
        builder.color()  # VBD's Gauss-Seidel runs over the graph colouring; finalize() does not colour
        self.model = builder.finalize(device=device)
        self.dt = dt
        self.substeps = substeps
        if contact_ke is not None:
            self.model.soft_contact_ke = contact_ke
            self.model.soft_contact_kd = contact_kd
            self.model.soft_contact_mu = mu
        self.solver = newton.solvers.SolverVBD(
            self.model,
            iterations=iterations,
            friction_epsilon=friction_epsilon,
            particle_enable_self_contact=False,
            particle_enable_tile_solve=wp.get_device(device).is_cuda,  # tiled kernel for GPUs; plain one on CPU
        )
        self.state_0 = self.model.state()
        self.state_1 = self.model.state()
        self.control = self.model.control()
        if self.model.shape_count:
            self.pipeline = newton.CollisionPipeline(self.model)
            self.contacts = self.pipeline.contacts()
        else:
            self.pipeline = self.contacts = None
        self.mass = self.model.particle_mass.numpy()
        self.step_seconds: list[float] = []

    def step(self) -> None:
        t0 = time.perf_counter()
        for _ in range(self.substeps):
            self.state_0.clear_forces()
            if self.pipeline is not None:
                self.pipeline.collide(self.state_0, self.contacts)
            self.solver.step(self.state_0, self.state_1, self.control, self.contacts, self.dt / self.substeps)
            self.state_0, self.state_1 = self.state_1, self.state_0
        wp.synchronize_device(self.model.device)
        self.step_seconds.append(time.perf_counter() - t0)

    def q(self) -> np.ndarray:
        return self.state_0.particle_q.numpy()

    def com(self) -> np.ndarray:
        return np.average(self.q(), axis=0, weights=self.mass)

    def ms_per_step(self) -> float:
        """Mean wall-clock ms per step, the first step (kernel compile/load, first allocations) left out."""
        t = self.step_seconds[1:] or self.step_seconds
        return 1e3 * float(np.mean(t))

    def finite(self) -> bool:
        return bool(np.isfinite(self.state_0.particle_q.numpy()).all() and np.isfinite(self.state_0.particle_qd.numpy()).all())


def run_cantilever(iterations: int, *, dt: float, device: str, substeps: int = 1, reference: float, seconds: float = 4.0, youngs: float = 5.0e6, poisson: float = 0.3, density: float = 1000.0, size=(0.1, 0.01, 0.01), cells=(30, 3, 3)) -> dict:
    mesh = cantilever_mesh(cells, size)  # = box_tet_mesh(size, cells), the mesh softsnake and the reference use
    b = newton.ModelBuilder(gravity=(0.0, 0.0, -G))
    _add_mesh(b, mesh.vertices, mesh.tets, youngs=youngs, poisson=poisson, density=density)
    for i in np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]:  # clamp: kinematic, zero mass (as Newton's fix_left)
        b.particle_mass[int(i)] = 0.0
        b.particle_flags[int(i)] = int(b.particle_flags[int(i)]) & ~int(newton.ParticleFlags.ACTIVE)
    sim = VBDRun(b, iterations=iterations, dt=dt, device=device, substeps=substeps)
    tip = np.nonzero(mesh.vertices[:, 0] > size[0] - 1e-9)[0]
    z0 = float(mesh.vertices[tip, 2].mean())
    n = int(round(seconds / dt))
    tail = max(1, int(round(0.5 / dt)))
    history = []
    for k in range(n):
        sim.step()
        if k >= n - tail:
            history.append(z0 - float(sim.q()[tip, 2].mean()))
    last = np.asarray(history)
    deflection = float(last[-1])
    ratio = deflection / reference
    return dict(
        scene="cantilever",
        solver=SOLVER,
        iterations=iterations,
        error=abs(ratio - 1.0),
        error_kind="abs(tip deflection / linear-FEM reference - 1)",
        ms_per_step=sim.ms_per_step(),
        finite=sim.finite() and bool(np.isfinite(last).all()),
        tip=deflection,
        reference_tip=reference,
        ratio=ratio,
        swing=float(last.max() - last.min()),
        steps=n,
        substeps=sim.substeps,
    )


def run_incline(iterations: int, slope: float, mu: float, *, dt: float, device: str, substeps: int = 1, contact_ke: float, contact_kd: float, friction_epsilon: float, seconds: float = 1.0, size: float = 0.03, cells: int = 2, youngs: float = 2.0e5, poisson: float = 0.3, density: float = 1000.0) -> dict:
    b = newton.ModelBuilder(gravity=incline_gravity(slope))
    mesh = box_tet_mesh((size, size, size), (cells, cells, cells), origin=(-size / 2, -size / 2, 0.0))  # = soft_cube()
    _add_mesh(b, mesh.vertices, mesh.tets, youngs=youngs, poisson=poisson, density=density)
    cfg = newton.ModelBuilder.ShapeConfig(mu=mu, ke=contact_ke, kd=contact_kd)
    b.add_ground_plane(cfg=cfg)
    sim = VBDRun(b, iterations=iterations, dt=dt, device=device, substeps=substeps, contact_ke=contact_ke, contact_kd=contact_kd, mu=mu, friction_epsilon=friction_epsilon)
    n = int(round(seconds / dt))
    x = np.empty(n + 1)
    x[0] = sim.com()[0]
    for k in range(n):
        sim.step()
        x[k + 1] = sim.com()[0]
    t = np.arange(n + 1) * dt
    theta = np.arctan(slope)
    expected = max(G * (np.sin(theta) - mu * np.cos(theta)), 0.0)
    late = t >= 0.3 * seconds
    accel = float(2.0 * np.polyfit(t[late], x[late], 2)[0])
    drift = float(abs(x[-1] - x[0]))
    z_min = float(sim.q()[:, 2].min())
    rec = dict(
        solver=SOLVER,
        iterations=iterations,
        ms_per_step=sim.ms_per_step(),
        finite=sim.finite() and bool(np.isfinite(x).all()),
        slope=slope,
        mu=mu,
        drift=drift,
        accel=accel,
        expected_accel=expected,
        final_z_min=z_min,
        steps=n,
        substeps=sim.substeps,
    )
    if expected == 0.0:
        rec.update(scene=f"incline-stick(slope={slope},mu={mu})", error=drift, error_kind="COM drift over 1 s [m] (reference: sticks, 0)")
    else:
        rec.update(scene=f"incline-slide(slope={slope},mu={mu})", error=abs(accel - expected), error_kind=f"abs(fitted accel - {expected:.3f}) [m/s^2]")
    return rec


def _fmt(v, spec):
    return format(v, spec) if np.isfinite(v) else "nan"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iterations", default="5,10,20,40", help="comma-separated VBD iteration counts per step")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dt", type=float, default=REALTIME["dt"], help="time step [s] (softsnake's real-time budget)")
    p.add_argument("--substeps", type=int, default=1, help="VBD steps per time step (default 1: one VBD step of h)")
    p.add_argument("--contact-ke", type=float, default=1.0e3, help="VBD particle-ground contact stiffness [N/m]")
    p.add_argument("--contact-kd", type=float, default=0.0, help="VBD particle-ground contact damping [N·s/m]")
    p.add_argument("--friction-epsilon", type=float, default=1.0e-2, help="VBD friction smoothing slip speed [m/s]")
    p.add_argument("--scenes", default="cantilever,stick,slide", help="subset of cantilever,stick,slide")
    p.add_argument("--out", default=os.path.join("benchmarks", "compare_vbd.json"))
    args = p.parse_args(argv)

    quiet_warp()
    wp.init()
    iters = [int(s) for s in args.iterations.split(",") if s.strip()]
    scenes = {s.strip() for s in args.scenes.split(",")}
    records = []

    if "cantilever" in scenes:
        ref = cantilever_reference()
        for it in iters:
            records.append(run_cantilever(it, dt=args.dt, device=args.device, substeps=args.substeps, reference=ref))
            print(f"  done cantilever, {it} iterations", file=sys.stderr, flush=True)
    for name, slope, mu in (("stick", 0.3, 0.5), ("slide", 0.8, 0.3)):
        if name in scenes:
            for it in iters:
                records.append(run_incline(it, slope, mu, dt=args.dt, device=args.device, substeps=args.substeps, contact_ke=args.contact_ke, contact_kd=args.contact_kd, friction_epsilon=args.friction_epsilon))
                print(f"  done incline {name}, {it} iterations", file=sys.stderr, flush=True)

    print(f"Newton {newton.__version__} SolverVBD, warp {wp.__version__}, device {args.device}, h = {args.dt:.6g} s in {args.substeps} VBD step(s), "
          f"contact ke = {args.contact_ke:g} N/m, kd = {args.contact_kd:g} N·s/m, friction epsilon = {args.friction_epsilon:g} m/s")
    print()
    print("| scene | VBD steps per h | VBD iterations | result | error | error kind | ms/step | finite |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in records:
        if r["scene"] == "cantilever":
            result = f"tip {_fmt(1e3 * r['tip'], '.4f')} mm, ratio {_fmt(r['ratio'], '.3f')}, swing {_fmt(1e3 * r['swing'], '.4f')} mm"
        elif r["scene"].startswith("incline-stick"):
            result = f"drift {_fmt(1e3 * r['drift'], '.3f')} mm"
        else:
            result = f"a {_fmt(r['accel'], '.3f')} (ref {r['expected_accel']:.3f}) m/s²"
        print(f"| {r['scene']} | {r['substeps']} | {r['iterations']} | {result} | {_fmt(r['error'], '.3g')} | {r['error_kind']} | {r['ms_per_step']:.2f} | {r['finite']} |")

    meta = dict(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        newton=newton.__version__,
        warp=wp.__version__,
        device=args.device,
        machine=platform.platform(),
        dt=args.dt,
        substeps=args.substeps,
        contact_ke=args.contact_ke,
        contact_kd=args.contact_kd,
        friction_epsilon=args.friction_epsilon,
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, records=records), f, indent=1)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
