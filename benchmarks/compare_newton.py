"""Error against cost, softsnake next to NVIDIA Newton's VBD solver on the same meshes, each against an independent
reference (scenes of ``softsnake/validation.py``, h = 1/120 s):

* cantilever (0.1 × 0.01 × 0.01 m, 30×3×3 cubes, E = 5 MPa, clamped, 4 s): |tip / linear-FEM solve of the mesh − 1|;
* stick: 3 cm cube on slope 0.3 with μ = 0.5, 1 s: centre-of-mass drift [m] (Coulomb: it sticks);
* slide: the same cube on slope 0.8 with μ = 0.3: |fitted acceleration − g(sin θ − μ cos θ)| [m/s²];
* drop: 6 cm cube (E = 0.1 MPa) dropped 5 cm with 0.3 m/s sideways onto μ = 0.5 ground, 2 s: deepest penetration [m]
  (a vertex on a plane should not penetrate) and the rest time (after it every particle moves < 1 mm/s).

softsnake runs at Newton × MINRES budgets, VBD (``compare_vbd.py``) at substeps × iterations per h, for the contact
scenes with VBD's friction smoothing at Newton's default 1e-2 m/s and at softsnake's creep speed 1e-4 m/s. All the
configurations of a scene are stepped in alternation, one h each in turn, so a load change on the machine hits them
alike; each one's cost is the wall clock of its step calls alone (between two device synchronisations: softsnake's
``Solver.step``, VBD's collision detection and ``SolverVBD.step`` per substep), the first two steps (kernel loading)
left out; read-backs for the errors happen outside it.

    python -P benchmarks/compare_newton.py --out benchmarks/compare_newton.json --plot benchmarks/compare_newton.png
    python -P benchmarks/compare_newton.py --plot-only benchmarks/compare_newton.json \
        --plot benchmarks/compare_newton.png

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

from softsnake import validation as V
from softsnake.experiments.bench import cpu_model
from softsnake.sim import Solver
from softsnake.sim.model import quiet_warp

HERE = os.path.dirname(os.path.abspath(__file__))
H = V.REALTIME["dt"]
SCENES = {"cantilever": 4.0, "stick": 1.0, "slide": 1.0, "drop": 2.0}  # simulated seconds
ERROR_KIND = {
    "cantilever": "|tip / linear FEM − 1|",
    "stick": "drift in 1 s [m]",
    "slide": "|a − Coulomb| [m/s²]",
    "drop": "deepest penetration [m]",
}
#: the accuracy levels whose cost the comparison reports: 1 % beam error, 1 mm drift, 0.1 mm penetration
TARGETS = {"cantilever": 0.01, "stick": 1e-3, "drop": 1e-4}
INCLINES = {"stick": (0.3, 0.5), "slide": (0.8, 0.3)}
REST_SPEED = 1e-3  # [m/s]


def _load_vbd():
    """compare_vbd.py as a module, or None when pip ``newton`` is absent."""
    if importlib.util.find_spec("newton") is None:
        return None
    spec = importlib.util.spec_from_file_location("compare_vbd", os.path.join(HERE, "compare_vbd.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class SoftsnakeRun:
    """A softsnake model and solver at one budget; ``step()`` times ``Solver.step`` alone, synchronised."""

    def __init__(self, model, newton_iterations: int, linear_iterations: int):
        self.model = model
        self.state = model.state()
        self.solver = Solver(model, dt=H, newton_iterations=newton_iterations, linear_iterations=linear_iterations)
        self.seconds: list[float] = []

    def step(self) -> None:
        wp.synchronize_device(self.model.device)
        t0 = time.perf_counter()
        self.solver.step(self.state)
        wp.synchronize_device(self.model.device)
        self.seconds.append(time.perf_counter() - t0)

    def positions(self) -> np.ndarray:
        return self.state.particle_q.numpy()

    def velocities(self) -> np.ndarray:
        return self.state.particle_qd.numpy()

    def masses(self) -> np.ndarray:
        return self.model.particle_mass


def softsnake_model(scene: str):
    if scene == "cantilever":
        return V.cantilever_model()[0]
    if scene in INCLINES:
        return V.incline_model(*INCLINES[scene])
    return V.drop_model()


def vbd_run(vbd, scene: str, substeps: int, iterations: int, friction_epsilon: float, contact_ke: float):
    kw = dict(iterations=iterations, substeps=substeps, dt=H, contact_ke=contact_ke, friction_epsilon=friction_epsilon)
    if scene == "cantilever":
        return vbd.cantilever(**kw)
    if scene in INCLINES:
        return vbd.incline(*INCLINES[scene], **kw)
    return vbd.drop(**kw)


class Observer:
    """What one run of a scene is scored on, read after each step (outside the timing)."""

    def __init__(self, scene: str, run, reference: float):
        self.scene, self.run, self.reference = scene, run, reference
        self.mass = np.asarray(run.masses(), dtype=np.float64)
        if scene == "cantilever":
            mesh = V.cantilever_mesh()
            self.tip = np.nonzero(mesh.vertices[:, 0] > 0.1 - 1e-9)[0]
            self.z0 = float(mesh.vertices[self.tip, 2].mean())
        self.values = [self.measure(run.positions().astype(np.float64))]  # t = 0
        self.deepest = 0.0
        self.last_moving = 0

    def measure(self, q: np.ndarray) -> float:
        if self.scene == "cantilever":
            return self.z0 - float(q[self.tip, 2].mean())
        return float(np.average(q[:, 0], weights=self.mass))

    def observe(self, k: int) -> None:
        q = self.run.positions().astype(np.float64)
        self.values.append(self.measure(q))
        if self.scene == "drop":
            self.deepest = max(self.deepest, -float(q[:, 2].min()))
            if np.abs(self.run.velocities()).max() >= REST_SPEED:
                self.last_moving = k + 1

    def result(self) -> dict:
        x = np.asarray(self.values)
        t = np.arange(len(x)) * H
        finite = bool(np.isfinite(x).all() and np.isfinite(self.run.positions()).all())
        steps = len(self.run.seconds)
        out = dict(ms_per_step=1e3 * float(np.mean(self.run.seconds[2:])), finite=finite)
        if self.scene == "cantilever":
            tail = x[-round(0.5 / H) :]
            out.update(error=abs(x[-1] / self.reference - 1.0), tip=float(x[-1]), swing=float(tail.max() - tail.min()))
        elif self.scene == "stick":
            out.update(error=abs(x[-1] - x[0]))
        elif self.scene == "slide":
            accel = V.fitted_acceleration(t, x, 0.3)
            out.update(error=abs(accel - V.coulomb_incline_acceleration(*INCLINES["slide"])), accel=accel)
        else:
            rest = None if self.last_moving >= steps else self.last_moving * H
            out.update(error=self.deepest, rest_time=rest, final_speed=float(np.abs(self.run.velocities()).max()))
        if not finite:
            out["error"] = float("inf")
        return out


def run_scene(scene: str, configs: list, reference: float) -> list:
    """Step every configuration of ``scene`` in alternation, one h each in turn; one record per configuration."""
    observers = []
    for meta, make in configs:
        observers.append((meta, Observer(scene, make(), reference)))
    for k in range(round(SCENES[scene] / H)):
        for _, obs in observers:
            obs.run.step()
            obs.observe(k)
    records = []
    for meta, obs in observers:
        records.append(dict(scene=scene, **meta, **obs.result()))
        r = records[-1]
        print(
            f"  {scene} {r['solver']} {r['budget']}: error {r['error']:.3g}, {r['ms_per_step']:.2f} ms/step",
            file=sys.stderr,
            flush=True,
        )
    return records


def first_reaches(records: list) -> dict:
    """Per scene with a target and per solver curve: the least ms/step of a configuration whose error is at most the
    target (None: no configuration reaches it)."""
    out = {}
    for scene, target in TARGETS.items():
        for curve in sorted({r["curve"] for r in records if r["scene"] == scene}):
            ok = [r for r in records if r["scene"] == scene and r["curve"] == curve and r["error"] <= target]
            best = min(ok, key=lambda r: r["ms_per_step"]) if ok else None
            out[f"{scene} {curve}"] = dict(
                target=target, ms_per_step=best and best["ms_per_step"], budget=best and best["budget"]
            )
    return out


def plot(records: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(2, 2, figsize=(11, 8.5))
    styles = ["o-", "s--", "^:", "v-.", "D--"]
    for ax, scene in zip(axes.ravel(), SCENES):
        curves = sorted(
            {r["curve"] for r in records if r["scene"] == scene}, key=lambda c: (not c.startswith("softsnake"), c)
        )
        for curve, style in zip(curves, styles):
            pts = sorted(
                (r["ms_per_step"], max(r["error"], 1e-9), r["budget"])
                for r in records
                if r["scene"] == scene and r["curve"] == curve and np.isfinite(r["error"])
            )
            if not pts:
                continue
            ms, err, _ = zip(*pts)
            ax.loglog(ms, err, style, label=curve, markersize=4)
            if curve.startswith("softsnake"):
                for x, y, t in pts:
                    ax.annotate(t, (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6)
        if scene in TARGETS:
            ax.axhline(TARGETS[scene], color="k", lw=0.6, ls=":")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title(scene)
        ax.set_xlabel("ms per step of h = 1/120 s (CPU, step calls only)")
        ax.set_ylabel(ERROR_KIND[scene])
        ax.grid(True, which="both", alpha=0.3)
        if curves:
            ax.legend(fontsize=7)
    fig.tight_layout()
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)


def _ints(text: str) -> list:
    return [int(v) for v in text.split(",") if v.strip()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--solvers", default="softsnake,newton-vbd", help="softsnake, newton-vbd or both")
    p.add_argument("--budgets", default="1x10,2x10,2x20,4x20,4x40,8x100", help="softsnake Newton x MINRES budgets")
    p.add_argument("--vbd-substeps", default="1,2,5,10", help="VBD steps per h")
    p.add_argument("--vbd-iterations", default="5,10,20", help="VBD iterations per VBD step")
    p.add_argument(
        "--vbd-friction-epsilon", default="1e-2,1e-4", help="VBD friction smoothing speeds [m/s] for the contact scenes"
    )
    p.add_argument(
        "--vbd-contact-ke",
        default="1e3,1e5",
        help="VBD particle-ground contact stiffnesses [N/m] for the contact scenes (1e3: Newton's default)",
    )
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
    solvers = {s.strip() for s in args.solvers.split(",") if s.strip()}
    bad = (set(scenes) - set(SCENES)) | (solvers - {"softsnake", "newton-vbd"})
    if bad:
        p.error(f"unknown scene(s) or solver(s) {sorted(bad)}")
    budgets = [tuple(int(v) for v in b.split("x")) for b in args.budgets.split(",") if b.strip()]
    quiet_warp()
    wp.init()
    vbd = _load_vbd() if "newton-vbd" in solvers else None
    if "newton-vbd" in solvers and vbd is None:
        print("newton not installed (pip install newton): only softsnake's curves", file=sys.stderr)
    reference = V.cantilever_reference()
    records = []
    for scene in scenes:
        configs = []
        if "softsnake" in solvers:
            for n, lin in budgets:
                configs.append(
                    (
                        dict(solver="softsnake", curve="softsnake", budget=f"{n}x{lin}"),
                        lambda n=n, lin=lin, scene=scene: SoftsnakeRun(softsnake_model(scene), n, lin),
                    )
                )
        if vbd is not None:
            contact = (
                [(1e-2, 1e3)]
                if scene == "cantilever"
                else [
                    (float(e), float(k))
                    for k in args.vbd_contact_ke.split(",")
                    for e in args.vbd_friction_epsilon.split(",")
                ]
            )
            for eps, ke in contact:
                curve = "newton-vbd" if scene == "cantilever" else f"newton-vbd, ke {ke:g} N/m, friction ε {eps:g} m/s"
                for s in _ints(args.vbd_substeps):
                    for it in _ints(args.vbd_iterations):
                        meta = dict(
                            solver="newton-vbd", curve=curve, budget=f"{s}x{it}", friction_epsilon=eps, contact_ke=ke
                        )
                        configs.append(
                            (meta, lambda s=s, it=it, eps=eps, ke=ke, scene=scene: vbd_run(vbd, scene, s, it, eps, ke))
                        )
        records += run_scene(scene, configs, reference)
    reached = first_reaches(records)
    print("| scene | error | curve | budget | error value | ms/step |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in records:
        print(
            f"| {r['scene']} | {ERROR_KIND[r['scene']]} | {r['curve']} | {r['budget']} | {r['error']:.3g} "
            f"| {r['ms_per_step']:.2f} |"
        )
    print("\nfirst reaches (least ms/step at or below the target):")
    for key, v in reached.items():
        print(
            f"  {key}: target {v['target']:g}: "
            + (f"{v['ms_per_step']:.2f} ms/step ({v['budget']})" if v["ms_per_step"] is not None else "never")
        )
    meta = dict(
        date=datetime.datetime.now().isoformat(timespec="seconds"),
        warp=wp.__version__,
        newton=getattr(sys.modules.get("newton"), "__version__", None),
        machine=platform.platform(),
        processor=cpu_model(),
        dt=H,
        argv=sys.argv[1:] if argv is None else list(argv),
    )
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(meta=meta, records=records, first_reaches=reached), f, indent=1)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    if args.plot:
        plot(records, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
