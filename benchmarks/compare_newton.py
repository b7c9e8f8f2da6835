"""Error against cost, softsnake next to NVIDIA Newton's VBD solver, on the same meshes (issue 11, target 2).

Four scenes of ``softsnake/validation.py`` at h = 1/120 s, each against an independent reference:

* cantilever (0.1 × 0.01 × 0.01 m, 30×3×3 cubes, E = 5 MPa, clamped, 4 s): |tip / linear-FEM solve of the mesh − 1|;
* stick: 3 cm cube on slope 0.3 with μ = 0.5, 1 s: centre-of-mass drift [m] (Coulomb: it sticks);
* slide: the same cube on slope 0.8 with μ = 0.3: |fitted acceleration − g(sin θ − μ cos θ)| [m/s²];
* drop: 6 cm cube (E = 0.1 MPa) dropped 5 cm with 0.3 m/s sideways onto μ = 0.5 ground, 2 s: deepest penetration [m]
  (a vertex-on-plane contact should not penetrate), with the final largest speed reported next to it (at rest: 0).

softsnake runs at several (Newton × MINRES) budgets, VBD at several iteration counts (one VBD step per h, Newton's
contact defaults; see ``compare_vbd.py`` for its set-up and choices). Each point is (wall-clock ms per step, error),
the first, compiling run of each scene left out; the plot puts one panel per scene, both solvers as curves.

    python benchmarks/compare_newton.py --out benchmarks/compare_newton.json --plot benchmarks/compare_newton.png
    python benchmarks/compare_newton.py --plot-only benchmarks/compare_newton.json --plot benchmarks/compare_newton.png

``newton`` is a bench-only dependency (``pip install newton``); without it only the softsnake curves are computed.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import sys
import time

import numpy as np
import warp as wp

from softsnake.sim.model import quiet_warp
from softsnake import validation as V

HERE = os.path.dirname(os.path.abspath(__file__))
SCENES = ("cantilever", "stick", "slide", "drop")
ERROR_KIND = {
    "cantilever": "|tip / linear FEM − 1|",
    "stick": "drift in 1 s [m]",
    "slide": "|a − Coulomb| [m/s²]",
    "drop": "deepest penetration [m]",
}


def _load_vbd():
    """compare_vbd.py as a module, or None when pip ``newton`` is absent."""
    if importlib.util.find_spec("newton") is None:
        return None
    spec = importlib.util.spec_from_file_location("compare_vbd", os.path.join(HERE, "compare_vbd.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(fn, steps: int):
    t0 = time.perf_counter()
    out = fn()
    return out, 1e3 * (time.perf_counter() - t0) / steps


def softsnake_point(scene: str, newton_iterations: int, linear_iterations: int, *, reference: float) -> dict:
    """One scene at one budget; ms/step is the whole run's wall clock over its steps (read-backs included)."""
    kw = dict(solver_kwargs=dict(newton_iterations=newton_iterations, linear_iterations=linear_iterations))
    h = V.REALTIME["dt"]
    rec = dict(solver="softsnake", budget=f"{newton_iterations}x{linear_iterations}", scene=scene)
    if scene == "cantilever":
        r, ms = _timed(lambda: V.run_cantilever(**kw), round(4.0 / h))
        rec.update(error=abs(r["tip"] / reference - 1.0), tip=r["tip"], swing=r["swing"])
    elif scene in ("stick", "slide"):
        slope, mu = (0.3, 0.5) if scene == "stick" else (0.8, 0.3)
        r, ms = _timed(lambda: V.run_incline(slope, mu, **kw), round(1.0 / h))
        rec.update(error=r["drift"] if scene == "stick" else abs(r["accel"] - r["expected_accel"]), drift=r["drift"], accel=r["accel"])
    else:
        r, ms = _timed(lambda: V.run_drop(**kw), round(2.0 / h))
        rec.update(error=r["penetration"], final_speed=r["max_speed"], finite=r["finite"])
    rec["ms_per_step"] = ms
    return rec


def vbd_point(vbd, scene: str, iterations: int, *, reference: float) -> dict:
    h = V.REALTIME["dt"]
    contact = dict(contact_ke=1.0e3, contact_kd=0.0, friction_epsilon=1.0e-2)  # Newton's defaults (compare_vbd.py)
    rec = dict(solver="newton-vbd", budget=str(iterations), scene=scene)
    if scene == "cantilever":
        r = vbd.run_cantilever(iterations, dt=h, device="cpu", reference=reference)
        rec.update(error=r["error"], tip=r["tip"], swing=r["swing"])
    elif scene in ("stick", "slide"):
        slope, mu = (0.3, 0.5) if scene == "stick" else (0.8, 0.3)
        r = vbd.run_incline(iterations, slope, mu, dt=h, device="cpu", **contact)
        rec.update(error=r["error"], drift=r["drift"], accel=r["accel"])
    else:
        r = vbd_drop(vbd, iterations, dt=h, **contact)
        rec.update(error=r["penetration"], final_speed=r["final_speed"], finite=r["finite"])
    rec["ms_per_step"] = r["ms_per_step"]
    return rec


def vbd_drop(vbd, iterations: int, *, dt: float, contact_ke: float, contact_kd: float, friction_epsilon: float, seconds: float = 2.0, size: float = 0.06, cells: int = 3, youngs: float = 1.0e5, height: float = 0.05, side_speed: float = 0.3, mu: float = 0.5) -> dict:
    """The drop scene of ``softsnake.validation.run_drop`` in VBD (same mesh, material, throw)."""
    import newton

    from softsnake.geometry import box_tet_mesh

    b = newton.ModelBuilder(gravity=(0.0, 0.0, -V.G))
    mesh = box_tet_mesh((size, size, size), (cells, cells, cells), origin=(-size / 2, -size / 2, height))  # = soft_cube(z=height)
    vbd._add_mesh(b, mesh.vertices, mesh.tets, youngs=youngs, poisson=0.3, density=1000.0)
    for i in range(len(mesh.vertices)):
        b.particle_qd[i] = wp.vec3(side_speed, 0.0, 0.0)
    b.add_ground_plane(cfg=newton.ModelBuilder.ShapeConfig(mu=mu, ke=contact_ke, kd=contact_kd))
    sim = vbd.VBDRun(b, iterations=iterations, dt=dt, device="cpu", contact_ke=contact_ke, contact_kd=contact_kd, mu=mu, friction_epsilon=friction_epsilon)
    deepest = 0.0
    for _ in range(round(seconds / dt)):
        sim.step()
        deepest = max(deepest, -float(sim.q()[:, 2].min()))
    v = sim.state_0.particle_qd.numpy()
    return dict(penetration=deepest, final_speed=float(np.abs(v).max()), finite=sim.finite(), ms_per_step=sim.ms_per_step())


def plot(records: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(2, 2, figsize=(9.5, 7.5))
    for ax, scene in zip(axes.ravel(), SCENES):
        for solver, style in (("softsnake", "o-"), ("newton-vbd", "s--")):
            pts = sorted((r["ms_per_step"], max(r["error"], 1e-9), r["budget"]) for r in records if r["scene"] == scene and r["solver"] == solver and np.isfinite(r["error"]))
            if not pts:
                continue
            ms, err, lab = zip(*pts)
            ax.loglog(ms, err, style, label=solver)
            for x, y, t in pts:
                ax.annotate(t, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=7)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(scene)
        ax.set_xlabel("ms per step (CPU)")
        ax.set_ylabel(ERROR_KIND[scene])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budgets", default="1x10,2x10,2x20,4x20,4x40,8x100", help="softsnake Newton x MINRES budgets")
    p.add_argument("--vbd-iterations", default="5,10,20,40", help="VBD iteration counts per step")
    p.add_argument("--scenes", default=",".join(SCENES), help="subset of " + ",".join(SCENES))
    p.add_argument("--out", default=os.path.join("benchmarks", "compare_newton.json"))
    p.add_argument("--plot", help="write the error-vs-cost picture here (PNG)")
    p.add_argument("--plot-only", metavar="JSON", help="only re-plot an earlier run's JSON")
    args = p.parse_args(argv)
    if args.plot_only:
        with open(args.plot_only) as f:
            plot(json.load(f)["records"], args.plot or "compare_newton.png")
        return 0
    scenes = [s.strip() for s in args.scenes.split(",") if s.strip()]
    bad = set(scenes) - set(SCENES)
    if bad:
        p.error(f"unknown scene(s) {sorted(bad)}; choose from {SCENES}")
    budgets = [tuple(int(v) for v in b.split("x")) for b in args.budgets.split(",") if b.strip()]
    quiet_warp()
    wp.init()
    vbd = _load_vbd()
    if vbd is None:
        print("newton not installed (pip install newton): only softsnake's curves", file=sys.stderr)
    reference = V.cantilever_reference()
    records = []
    for scene in scenes:
        softsnake_point(scene, 1, 1, reference=reference)  # compile the kernels outside the timings
        for n, lin in budgets:
            records.append(softsnake_point(scene, n, lin, reference=reference))
            print(f"  softsnake {scene} {n}x{lin}: error {records[-1]['error']:.3g}, {records[-1]['ms_per_step']:.1f} ms/step", file=sys.stderr, flush=True)
        if vbd is not None:
            for it in (int(v) for v in args.vbd_iterations.split(",") if v.strip()):
                records.append(vbd_point(vbd, scene, it, reference=reference))
                print(f"  VBD {scene} {it}: error {records[-1]['error']:.3g}, {records[-1]['ms_per_step']:.1f} ms/step", file=sys.stderr, flush=True)
    print("| scene | error | solver | budget | error value | ms/step |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(f"| {r['scene']} | {ERROR_KIND[r['scene']]} | {r['solver']} | {r['budget']} | {r['error']:.3g} | {r['ms_per_step']:.1f} |")
    meta = dict(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        warp=wp.__version__,
        newton=getattr(sys.modules.get("newton"), "__version__", None),
        machine=platform.platform(),
        dt=V.REALTIME["dt"],
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(meta=meta, records=records), f, indent=1)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    if args.plot:
        plot(records, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
