"""Newton convergence at the real-time budget: residual ‖φ‖ against Newton iteration and against wall time.

Four scenes (public API only, so the same script runs on an older checkout for a before/after comparison):
stick incline (3 cm soft cube, slope 0.3, μ = 0.5, 1 s), cantilever (100×10×10 mm, 30×3×3 cubes, E = 5 MPa, 2 s),
frictional drop (6 cm soft cube from 5 cm with 0.3 m/s sideways, μ = 0.5, 2 s) and the snake link at 8 psi (1.5 s),
all at h = 1/120 s, 4 Newton × 20 linear iterations. For each: the residual before every Newton iteration and after the
last (median
over the second half of the run), ms/step, and the scene's error against its reference.

    python benchmarks/convergence.py --label after --out runs/convergence_after.json
    python benchmarks/convergence.py --label dual --solver fem=dual --out runs/convergence_dual.json
    python benchmarks/convergence.py --plot runs/convergence_before.json runs/convergence_after.json
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import platform
import sys
import time

import numpy as np

H = 1.0 / 120.0
#: extra SolverConfig settings from --solver key=value (e.g. fem=dual); empty on the default
OVERRIDES: dict = {}


def _solver(ss, model):
    return ss.Solver(model, dt=H, newton_iterations=4, linear_iterations=20, **OVERRIDES)


def _run(solver, state, steps, measure):
    res, wall = [], 0.0
    for k in range(steps):
        t0 = time.perf_counter()
        solver.step(state)
        wall += time.perf_counter() - t0
        res.append(solver.diagnostics().residual_norm[:, 0])
        measure(k)
    return np.asarray(res), 1e3 * wall / steps


def scene_stick(ss):
    b = ss.ModelBuilder(gravity=(9.81 * np.sin(np.arctan(0.3)), 0.0, -9.81 * np.cos(np.arctan(0.3))))
    mesh = ss.box_tet_mesh((0.03, 0.03, 0.03), (2, 2, 2), origin=(-0.015, -0.015, 0.0))
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=2e5, poisson_ratio=0.3)
    b.add_ground_plane(mu=0.5)
    model = b.finalize()
    state = model.state()
    x0 = state.particle_q.numpy()[:, 0].mean()
    res, ms = _run(_solver(ss, model), state, 120, lambda k: None)
    return res, ms, dict(error=abs(state.particle_q.numpy()[:, 0].mean() - x0), error_kind="drift [m] (reference 0)")


def _cantilever(ss):
    sys.path.insert(0, "tests")
    try:
        from softsnake.reference_fem import linear_fem_displacement
    except ImportError:
        from reference import linear_fem_displacement  # older checkouts keep it in tests/
    mesh = ss.box_tet_mesh((0.1, 0.01, 0.01), (30, 3, 3))
    clamp = np.nonzero(mesh.vertices[:, 0] < 1e-9)[0]
    tip = np.nonzero(mesh.vertices[:, 0] > 0.1 - 1e-9)[0]
    b = ss.ModelBuilder()
    b.add_soft_mesh(mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=5e6, poisson_ratio=0.3)
    b.fix_particles(clamp)
    model = b.finalize()
    state = model.state()
    res, ms = _run(_solver(ss, model), state, 240, lambda k: None)
    ref = -linear_fem_displacement(mesh.vertices, mesh.tets, 5e6, 0.3, 1000.0, (0, 0, -9.81), clamp)[tip, 2].mean()
    tip_defl = mesh.vertices[tip, 2].mean() - state.particle_q.numpy()[tip, 2].mean()
    return res, ms, dict(error=abs(tip_defl / ref - 1.0), error_kind="|tip/linear FEM − 1| after 2 s")


def scene_drop(ss):
    b = ss.ModelBuilder()
    mesh = ss.box_tet_mesh((0.06, 0.06, 0.06), (3, 3, 3), origin=(-0.03, -0.03, 0.05))
    b.add_soft_mesh(
        mesh.vertices, mesh.tets, density=1000.0, youngs_modulus=1e5, poisson_ratio=0.3, vel=(0.3, 0.0, 0.0)
    )
    b.add_ground_plane(mu=0.5)
    model = b.finalize()
    state = model.state()
    deepest = [0.0]

    def measure(k):
        deepest[0] = max(deepest[0], -float(state.particle_q.numpy()[:, 2].min()))

    res, ms = _run(_solver(ss, model), state, 240, measure)
    return res, ms, dict(error=deepest[0], error_kind="max penetration [m] (bound 3e-3)")


def scene_snake_link(ss):
    cfg = ss.SnakeConfig()
    cfg = dataclasses.replace(
        cfg,
        links=1,
        pneumatics=dataclasses.replace(cfg.pneumatics, latency=False),
        solver=dataclasses.replace(cfg.solver, **OVERRIDES),
    )
    sim = ss.SnakeSim(worlds=1, config=cfg)
    res, wall = [], 0.0
    frames = 90
    for _ in range(frames):
        sim.set_pressure_targets(np.array([[8.0 * min(1.0, sim.time / 0.5)]]))
        t0 = time.perf_counter()
        sim.step()
        wall += time.perf_counter() - t0
        res.append(sim.solver.diagnostics().residual_norm[:, 0])
    kappa = float(sim.curvatures()[0, 0])
    from softsnake.reference_link import held_link_static

    # the 8-psi static curvature of this link model, solved exactly without gravity, ground or wheels [1/m]
    reference = held_link_static(cfg, 8.0, increments=16)["curvature"]
    return (
        np.asarray(res),
        1e3 * wall / (frames * cfg.substeps),
        dict(
            error=abs(kappa / reference - 1.0),
            error_kind=f"|κ(8 psi)/{reference:.3f} − 1| (exact static solution of the link model)",
            curvature=kappa,
        ),
    )


SCENES = {
    "stick incline": scene_stick,
    "cantilever": _cantilever,
    "frictional drop": scene_drop,
    "snake link 8 psi": scene_snake_link,
}


def measure(label: str, out: str) -> None:
    import warp as wp

    wp.config.quiet = True
    import softsnake as ss

    try:
        ss.sim.model.quiet_warp()
    except AttributeError:
        pass
    results = {}
    for name, fn in SCENES.items():
        try:
            res, ms, err = fn(ss)
            late = res[len(res) // 2 :]
            err = {k: (float(v) if not isinstance(v, str) else v) for k, v in err.items()}
            results[name] = dict(
                residual=np.median(late, axis=0).tolist(),
                ms_per_step=float(ms),
                finite=bool(np.isfinite(res).all()),
                **err,
            )
        except Exception as exc:  # a diverged run is a result too
            results[name] = dict(failed=f"{type(exc).__name__}: {str(exc)[:120]}")
        print(label, name, {k: v for k, v in results[name].items()}, flush=True)
    from softsnake.experiments.bench import cpu_model

    meta = dict(
        label=label,
        date=datetime.date.today().isoformat(),
        machine=cpu_model(),
        python=platform.python_version(),
    )
    from softsnake.io.files import write_json_atomic

    write_json_atomic(out, dict(meta=meta, scenes=results), indent=1)


def plot(paths: list[str], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [json.load(open(p)) for p in paths]
    fig, axes = plt.subplots(2, len(SCENES), figsize=(4 * len(SCENES), 6.5))
    for j, name in enumerate(SCENES):
        for run in runs:
            r = run["scenes"].get(name, {})
            if "residual" not in r:
                continue
            res = np.asarray(r["residual"])
            it = np.arange(len(res))
            lbl = f"{run['meta']['label']} (err {r['error']:.3g})"
            axes[0, j].semilogy(it, res, "o-", label=lbl)
            axes[1, j].semilogy(it * r["ms_per_step"] / (len(res) - 1), res, "o-", label=lbl)
        axes[0, j].set_title(name)
        axes[0, j].set_xlabel("Newton iteration")
        axes[1, j].set_xlabel("wall time into the step [ms]")
        axes[0, j].legend(fontsize=7)
    axes[0, 0].set_ylabel("median ‖φ‖ [m/s]")
    axes[1, 0].set_ylabel("median ‖φ‖ [m/s]")
    fig.suptitle("h = 1/120 s, 4 Newton × 20 linear iterations, CPU")
    fig.tight_layout()
    from softsnake.io.files import save_figure_atomic

    save_figure_atomic(fig, out, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="current")
    ap.add_argument("--out", default="runs/convergence.json")
    ap.add_argument("--plot", nargs="+", help="JSON files from earlier runs → the --png picture")
    ap.add_argument("--png", default="runs/convergence.png")
    ap.add_argument("--solver", nargs="*", default=[], help="SolverConfig overrides key=value (e.g. fem=dual)")
    a = ap.parse_args()
    if a.solver:
        from softsnake.sim.solver import SolverConfig

        defaults = SolverConfig()
        for item in a.solver:  # typed like the default, as benchmarks/snake_link_budget.py does
            key, _, value = item.partition("=")
            default = getattr(defaults, key)
            OVERRIDES[key] = (value in ("1", "true", "True")) if isinstance(default, bool) else type(default)(value)
    if a.plot:
        plot(a.plot, a.png)
    else:
        measure(a.label, a.out)


if __name__ == "__main__":
    main()
