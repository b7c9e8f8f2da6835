"""Multi-snake benchmark (paper Sec. VI-C, Table II): ms per frame (2 solver sub-steps) for a quarter snake (one
link), one snake and several snakes simulated together while the default gait runs."""

from __future__ import annotations

import dataclasses
import platform
import time

import numpy as np
import warp as wp

from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim
from softsnake.sim.launches import launches_per_step

from .gait import default_gait

#: paper Table II (GTX 1080 Ti): snakes → (assembly, solve, total) ms per frame
PAPER_TABLE_II = {
    0.25: (0.74, 4.96, 5.70),
    1: (1.11, 10.52, 11.63),
    2: (1.41, 25.06, 26.47),
    3: (2.33, 31.90, 34.23),
    4: (3.41, 43.12, 46.53),
    5: (5.59, 50.41, 56.00),
    6: (6.19, 58.63, 64.82),
    7: (6.45, 66.95, 73.4),
    8: (7.37, 79.73, 87.10),
    9: (8.48, 86.89, 95.37),
    10: (10.31, 95.57, 105.88),
}

SUBSTEPS_PER_FRAME = 2  # as in Table II


def parse_snakes(text: str) -> list[float]:
    """'0.25,1,2,4' → [0.25, 1, 2, 4]; 0.25 is one link, others must be whole snakes."""
    try:
        values = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError as exc:
        raise ValueError(f"--snakes must be a comma-separated list of numbers, got {text!r}") from exc
    if not values:
        raise ValueError("--snakes is empty")
    for v in values:
        if not (v == 0.25 or (np.isfinite(v) and v >= 1 and v == int(v))):
            raise ValueError(f"snake counts must be 0.25 (one link) or whole numbers ≥ 1, got {v}")
    return values


def bench_snakes(
    snakes: float, frames: int = 20, *, device: str = "cpu", config: SnakeConfig | None = None, warmup: int = 3
) -> dict:
    """Time ``frames`` frames of ``snakes`` snakes (0.25 = a single link between two carriages)."""
    if frames < 1:
        raise ValueError(f"frames must be ≥ 1, got {frames}")
    base = config or SnakeConfig()
    cfg = dataclasses.replace(
        base,
        links=1 if snakes == 0.25 else base.links,
        substeps=SUBSTEPS_PER_FRAME,
        frame_dt=SUBSTEPS_PER_FRAME * base.h,
    )
    cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, check_finite=False))
    worlds = max(1, int(snakes))
    sim = SnakeSim(worlds=worlds, device=device, config=cfg)
    gait = default_gait()
    links = sim.links

    def frame():
        sim.set_pressure_targets(np.clip(gait.targets(sim.time, links), -cfg.p_max_psi, cfg.p_max_psi))
        sim.step()

    for _ in range(warmup):  # compile kernels, capture the CUDA graph
        frame()
    wp.synchronize_device(sim.device)
    t0 = time.perf_counter()
    for _ in range(frames):
        frame()
    wp.synchronize_device(sim.device)
    total = (time.perf_counter() - t0) / frames
    solver = sim.solver
    reps = 10
    t0 = time.perf_counter()
    for _ in range(reps):  # the assembly stage of one frame (rows and right-hand side), timed alone
        for _ in range(SUBSTEPS_PER_FRAME * cfg.solver.newton_iterations):
            solver.formulation.assemble(0)
    wp.synchronize_device(sim.device)
    assembly = (time.perf_counter() - t0) / reps
    launches = launches_per_step(solver, sim.state, sim.control)
    com = sim.com()
    if not np.all(np.isfinite(com)):
        raise FloatingPointError("non-finite state during the benchmark: refusing to report")
    sim_seconds = cfg.frame_dt
    memory_mb, memory_kind = peak_memory(sim.device)
    return dict(
        snakes=snakes,
        worlds=worlds,
        device=str(sim.device),
        particles=sim.model.particle_count * worlds,
        tets=sim.model.tet_count * worlds,
        rows_per_world=sim.model.row_count,
        substeps_per_frame=SUBSTEPS_PER_FRAME,
        h=cfg.h,
        newton_iterations=cfg.solver.newton_iterations,
        linear_iterations=cfg.solver.linear_iterations,
        launches_per_step=launches,
        ms_assembly=1e3 * assembly,
        ms_solve=1e3 * max(total - assembly, 0.0),
        ms_total=1e3 * total,
        ms_per_snake=1e3 * total / max(snakes, 1) if snakes >= 1 else None,
        steps_per_s=SUBSTEPS_PER_FRAME / total,
        snake_steps_per_s=worlds * SUBSTEPS_PER_FRAME / total if snakes >= 1 else None,
        real_time_factor=sim_seconds / total,
        peak_memory_mb=memory_mb,
        memory_kind=memory_kind,
        paper_ms_total=PAPER_TABLE_II.get(snakes, (None, None, None))[2],
        com_world0=com[0].tolist(),  # the first snake's centre of mass at the end [m] (runs compared by it)
    )


def cpu_model() -> str:
    """This machine's processor as /proc/cpuinfo names it (e.g. "AMD EPYC 7B13"), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def peak_memory(device) -> tuple[float, str]:
    """(MB, what it is): the CUDA memory pool's high-water mark on a GPU; on the CPU the process's peak resident set
    (everything the process ever held, Python and compiled kernels included, so an upper bound for the model)."""
    if device.is_cuda:
        return wp.get_mempool_used_mem_high(device) / 2**20, "CUDA mempool high-water mark"
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return (rss / 2**20 if sys.platform == "darwin" else rss / 2**10), "process peak RSS"


CSV_FIELDS = (
    "snakes",
    "worlds",
    "device",
    "ms_total",
    "ms_assembly",
    "ms_solve",
    "ms_per_snake",
    "steps_per_s",
    "snake_steps_per_s",
    "real_time_factor",
    "peak_memory_mb",
    "memory_kind",
    "paper_ms_total",
    "launches_per_step",
)


def bench_csv(rows: list[dict]) -> str:
    """The rows as CSV text (empty cells for missing values)."""
    lines = [",".join(CSV_FIELDS)]
    for r in rows:
        cells = []
        for k in CSV_FIELDS:
            v = r.get(k)
            cells.append("" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v)))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def plot_bench(rows: list[dict], path) -> None:
    """ms per frame and snake-steps/s against the snake count (log-log), the paper's Table II next to it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    whole = [r for r in rows if r["snakes"] >= 1]  # snake-steps/s: the ¼ row (one link) is no snake
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    n = [r["snakes"] for r in whole]
    a.loglog(
        [r["snakes"] for r in rows],
        [r["ms_total"] for r in rows],
        "o-",
        label=f"softsnake ({rows[0]['device'] if rows else ''})",
    )
    paper = sorted((k, v[2]) for k, v in PAPER_TABLE_II.items())
    a.loglog([k for k, _ in paper], [v for _, v in paper], "s--", label="paper (GTX 1080 Ti)")
    a.axhline(1e3 * SUBSTEPS_PER_FRAME / 120.0, color="gray", lw=0.8, ls=":", label="real time (frame = 2 × 1/120 s)")
    a.set_xlabel("snakes simulated together (¼: one link)")
    a.set_ylabel("ms per frame")
    a.legend(fontsize=8)
    b.loglog(n, [r["snake_steps_per_s"] for r in whole], "o-")
    b.axhline(12000, color="gray", lw=0.8, ls=":", label="100 snakes in real time")
    b.set_xlabel("snakes simulated together")
    b.set_ylabel("snake-steps per second")
    b.legend(fontsize=8)
    for ax in (a, b):
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    from softsnake.io.files import save_figure_atomic

    save_figure_atomic(fig, path, dpi=110)
    plt.close(fig)
