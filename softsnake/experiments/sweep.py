"""Parameter sweeps over the snake's gait, model and solver settings (``softsnake sweep SPEC.toml``; docs/learning.md).

A spec is a TOML file:

    [sweep]
    mode = "grid"            # or "random" (then: samples = N, seed = S)
    seconds = 5.0            # simulated time of each point [s]
    settle = 1.0             # speed measured from this time on [s]
    coarse = true            # the coarse link mesh
    config = "snake.toml"    # optional base snake configuration (relative to the spec)
    worlds_per_batch = 16    # points that share a model run as worlds of one batch, at most this many

    [gait]                   # OpenLoopGait: omega_hz, alpha, phi, amplitude_psi
    phi = [-0.3, 0.0, 0.3]   # a list: the grid's values (random: choices)
    omega_hz = 2.0           # a number: fixed
    [snake]                  # SnakeConfig fields, e.g. mu = [0.5, 1.0]
    [pneumatics]             # PneumaticsConfig fields, e.g. latency = [true, false]
    [solver]                 # SolverConfig fields, e.g. newton_iterations = [4, 8]

In random mode a parameter may also be ``{low = a, high = b}`` (uniform). Points with equal [snake], [pneumatics]
and [solver] values share a model: they run as the worlds of one batch (each world gives the bits of a single-world
run, so batching changes no number). Batches run in-process, over local processes or as Ray tasks; each finished
batch is saved at once under ``batches/`` of the output folder, so an interrupted sweep resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from softsnake.robots.pneumatics import GAIT_PARAMETERS, OpenLoopGait, PneumaticsConfig
from softsnake.robots.snake import SnakeConfig
from softsnake.sim import SolverConfig

TABLES = ("gait", "snake", "pneumatics", "solver")
SWEEP_KEYS = {"mode", "samples", "seed", "seconds", "settle", "coarse", "config", "worlds_per_batch"}
MAX_POINTS = 100_000
METRICS = ("speed_body_lengths_per_s", "displacement_x_m", "displacement_y_m", "turn_rad", "diverged")


def _fields(table: str) -> set:
    if table == "gait":
        return set(GAIT_PARAMETERS)
    cls = {"snake": SnakeConfig, "pneumatics": PneumaticsConfig, "solver": SolverConfig}[table]
    return {f.name for f in dataclasses.fields(cls)} - {"pneumatics", "solver"}


@dataclass
class SweepSpec:
    """A checked sweep spec (see the module docstring); ``points`` lists every point as {"table.key": value}."""

    text: str
    mode: str
    seconds: float
    settle: float
    worlds_per_batch: int
    base: SnakeConfig
    swept: list  # "table.key" names of the varied parameters, in spec order
    points: list
    source: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]


def _number(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)


def load_spec(path, *, seconds: float | None = None, settle: float | None = None) -> SweepSpec:
    """Read and check a sweep spec; ValueError naming the file and the key for anything wrong. Every point's gait and
    configuration are built once here, so a bad value is reported before any simulation. ``seconds`` and ``settle``
    [s] replace the spec's values (quick looks); they become part of the spec's text that the output folder keeps."""
    from softsnake.io.toml_files import read_toml

    path = Path(path)
    data = read_toml(path, "sweep spec")
    src = str(path)
    text = path.read_text()
    overrides = {k: v for k, v in (("seconds", seconds), ("settle", settle)) if v is not None}
    if overrides and isinstance(data.get("sweep", {}), dict):
        data["sweep"] = {**data.get("sweep", {}), **overrides}
        text += "".join(f"\n# softsnake sweep --{k} {v!r} replaced [sweep] {k}" for k, v in overrides.items()) + "\n"
    unknown = sorted(set(data) - {"sweep", *TABLES})
    if unknown:
        raise ValueError(f"{src}: unknown table(s) {', '.join(unknown)}; a spec has [sweep], {', '.join(TABLES)}")
    head = data.get("sweep", {})
    if not isinstance(head, dict):
        raise ValueError(f"{src}: [sweep] must be a table")
    bad = sorted(set(head) - SWEEP_KEYS)
    if bad:
        raise ValueError(f"{src} [sweep]: unknown key(s) {', '.join(bad)}; known: {', '.join(sorted(SWEEP_KEYS))}")
    mode = head.get("mode", "grid")
    if mode not in ("grid", "random"):
        raise ValueError(f'{src} [sweep] mode: must be "grid" or "random", got {mode!r}')
    seconds, settle = head.get("seconds", 5.0), head.get("settle", 1.0)
    for key, v in (("seconds", seconds), ("settle", settle)):
        if not _number(v) or v < 0 or (key == "seconds" and v <= 0):
            raise ValueError(f"{src} [sweep] {key}: must be a finite number {'>' if key == 'seconds' else '≥'} 0 [s]")
    if settle >= seconds:
        raise ValueError(f"{src} [sweep]: settle ({settle:g} s) must be below seconds ({seconds:g} s)")
    wpb = head.get("worlds_per_batch", 16)
    if isinstance(wpb, bool) or not isinstance(wpb, int) or wpb < 1:
        raise ValueError(f"{src} [sweep] worlds_per_batch: must be an integer ≥ 1, got {wpb!r}")
    coarse = head.get("coarse", False)
    if not isinstance(coarse, bool):
        raise ValueError(f"{src} [sweep] coarse: must be true or false, got {coarse!r}")
    base = SnakeConfig()
    if "config" in head:
        if not isinstance(head["config"], str):
            raise ValueError(f"{src} [sweep] config: must be a path, got {head['config']!r}")
        base = SnakeConfig.from_toml(path.parent / head["config"])
    if coarse:
        base = base.with_coarse_mesh()

    fixed, varied = {}, {}
    for table in TABLES:
        values = data.get(table, {})
        if not isinstance(values, dict):
            raise ValueError(f"{src}: [{table}] must be a table")
        extra = sorted(set(values) - _fields(table))
        if extra:
            raise ValueError(
                f"{src} [{table}]: unknown key(s) {', '.join(extra)}; known: {', '.join(sorted(_fields(table)))}"
            )
        for key, v in values.items():
            name = f"{table}.{key}"
            if isinstance(v, list):
                if not v:
                    raise ValueError(f"{src} [{table}] {key}: an empty list")
                varied[name] = v
            elif isinstance(v, dict):
                if mode != "random":
                    raise ValueError(f'{src} [{table}] {key}: {{low, high}} ranges need mode = "random"; give a list')
                if set(v) != {"low", "high"} or not all(_number(x) for x in v.values()) or not v["low"] < v["high"]:
                    raise ValueError(f"{src} [{table}] {key}: a range is {{low = a, high = b}} with numbers a < b")
                varied[name] = v
            else:
                fixed[name] = v

    if mode == "grid":
        count = math.prod(len(v) for v in varied.values())
        if count > MAX_POINTS:
            raise ValueError(f"{src}: the grid has {count} points, more than {MAX_POINTS}")
        points = [dict(zip(varied, combo)) for combo in itertools.product(*varied.values())]
        for key in ("samples", "seed"):
            if key in head:
                raise ValueError(f'{src} [sweep] {key}: only for mode = "random"')
    else:
        samples, seed = head.get("samples"), head.get("seed", 0)
        if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_POINTS:
            raise ValueError(
                f"{src} [sweep] samples: random mode needs an integer in [1, {MAX_POINTS}], got {samples!r}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"{src} [sweep] seed: must be an integer ≥ 0, got {seed!r}")
        rng = np.random.default_rng(seed)
        points = []
        for _ in range(samples):
            point = {}
            for name, v in varied.items():
                if isinstance(v, dict):
                    point[name] = float(rng.uniform(v["low"], v["high"]))
                else:
                    point[name] = v[int(rng.integers(len(v)))]
            points.append(point)
    points = [{**fixed, **p} for p in points]
    spec = SweepSpec(text, mode, float(seconds), float(settle), wpb, base, list(varied), points, src)
    for i, point in enumerate(points):
        try:
            point_gait(spec, point)
            point_config(spec, point)
        except ValueError as exc:
            raise ValueError(f"{src}: point {i} ({_describe(point, spec.swept)}): {exc}") from None
    return spec


def _describe(point: dict, names) -> str:
    return ", ".join(f"{k} = {point[k]}" for k in names) or "the only point"


def point_gait(spec: SweepSpec, point: dict) -> OpenLoopGait:
    values = {k.split(".", 1)[1]: v for k, v in point.items() if k.startswith("gait.")}
    for k, v in values.items():
        if not _number(v):
            raise ValueError(f"gait {k} must be a number, got {v!r}")
    return OpenLoopGait(**values, p_max_psi=spec.base.p_max_psi)


def _model_values(point: dict) -> dict:
    return {k: v for k, v in point.items() if not k.startswith("gait.")}


def point_config(spec: SweepSpec, point: dict) -> SnakeConfig:
    tables = spec.base.to_dict()
    for name, v in _model_values(point).items():
        table, key = name.split(".", 1)
        tables[table][key] = v
    return SnakeConfig.from_dict(tables, source="the point's configuration")


@dataclass
class Batch:
    """Points that share a model, run as the worlds of one SnakeSim: ``key`` names its file under ``batches/``."""

    key: str
    points: list  # point indices
    config: dict  # SnakeConfig tables
    gaits: list  # dicts of OpenLoopGait parameters
    seconds: float
    settle: float


def batches(spec: SweepSpec) -> list:
    """The spec's points grouped by model (in order of first appearance), in chunks of ``worlds_per_batch``."""
    groups: dict = {}
    for i, point in enumerate(spec.points):
        groups.setdefault(json.dumps(_model_values(point), sort_keys=True), []).append(i)
    out = []
    for g, members in enumerate(groups.values()):
        config = point_config(spec, spec.points[members[0]]).to_dict()
        for c in range(0, len(members), spec.worlds_per_batch):
            chunk = members[c : c + spec.worlds_per_batch]
            gaits = [point_gait(spec, spec.points[i]).as_dict() for i in chunk]
            out.append(
                Batch(f"{g:04d}-{c // spec.worlds_per_batch:04d}", chunk, config, gaits, spec.seconds, spec.settle)
            )
    return out


def run_batch(batch: Batch, device: str = "cpu") -> dict:
    """Simulate one batch; returns {"key", "rows": [{"point", metrics...}]} (plain Python values, picklable)."""
    from softsnake.experiments.optimize import GaitObjective, evaluate_gaits
    from softsnake.robots.snake_sim import SnakeSim

    cfg = SnakeConfig.from_dict(batch.config, source=f"batch {batch.key}")
    cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, on_nonfinite="flag"))
    sim = SnakeSim(worlds=len(batch.points), device=device, config=cfg)
    gait = OpenLoopGait.stack([OpenLoopGait(**g) for g in batch.gaits])
    ev = evaluate_gaits(sim, gait, GaitObjective("speed", batch.seconds, batch.settle))
    rows = []
    for w, point in enumerate(batch.points):
        bad = bool(ev.diverged[w])
        rows.append(
            dict(
                point=point,
                speed_body_lengths_per_s=math.nan if bad else float(ev.speed[w]),
                displacement_x_m=math.nan if bad else float(ev.displacement[w, 0]),
                displacement_y_m=math.nan if bad else float(ev.displacement[w, 1]),
                turn_rad=math.nan if bad else float(ev.turn[w]),
                diverged=bad,
            )
        )
    return dict(key=batch.key, rows=rows)


# ------------------------------------------------------------------------------------------------------ execution
class SweepFolder:
    """The output folder of a sweep: ``spec.toml`` (the spec it runs), ``batches/KEY.json`` (finished batches), and
    at the end the table and plot. A folder that holds another spec is refused."""

    def __init__(self, path, spec: SweepSpec):
        self.path, self.spec = Path(path), spec
        saved = self.path / "spec.toml"
        if saved.exists():
            if saved.read_text() != spec.text:
                raise ValueError(
                    f"{str(self.path)!r} holds another sweep (its spec.toml differs from {spec.source!r}); give a new "
                    "--out, or the same spec to resume it"
                )
        elif self.path.exists() and any(self.path.iterdir()):
            raise ValueError(f"{str(self.path)!r} is not empty and holds no sweep; give a new --out")

    def start(self) -> None:
        from softsnake.io.files import write_text_atomic

        if not (self.path / "spec.toml").exists():
            write_text_atomic(self.path / "spec.toml", self.spec.text)

    def done(self) -> set:
        folder = self.path / "batches"
        return {p.stem for p in folder.glob("*.json")} if folder.is_dir() else set()

    def save(self, result: dict) -> None:
        from softsnake.io.files import write_json_atomic

        write_json_atomic(self.path / "batches" / f"{result['key']}.json", result)

    def results(self) -> dict:
        out = {}
        for p in sorted((self.path / "batches").glob("*.json")):
            try:
                out[p.stem] = json.loads(p.read_text())
            except (OSError, ValueError) as exc:
                raise ValueError(f"{str(p)!r} is damaged ({exc}); delete it and run the sweep again") from None
        return out


def run_sweep(
    spec: SweepSpec,
    out,
    *,
    processes: int = 1,
    ray_address: str | None = None,
    device: str = "cpu",
    on_batch=None,
) -> tuple:
    """Run the batches of ``spec`` not yet saved in ``out``: in this process (``processes`` = 0), over ``processes``
    local processes, or as Ray tasks on the cluster at ``ray_address`` ("local": a new local cluster). Each finished
    batch is saved at once; ``on_batch(done, total)`` after each. Returns (rows sorted by point, batches computed)."""
    folder = SweepFolder(out, spec)
    folder.start()
    todo = [b for b in batches(spec) if b.key not in folder.done()]
    total = len(batches(spec))
    finished = total - len(todo)
    if on_batch is not None:
        on_batch(finished, total)

    def record(result):
        nonlocal finished
        folder.save(result)
        finished += 1
        if on_batch is not None:
            on_batch(finished, total)

    if todo and ray_address is not None:
        _run_on_ray(todo, ray_address, device, record)
    elif todo and processes > 0:
        _run_on_processes(todo, processes, device, record)
    else:
        for b in todo:
            record(run_batch(b, device))
    rows = [dict(row) for result in folder.results().values() for row in result["rows"]]
    rows.sort(key=lambda r: r["point"])
    return rows, len(todo)


def _quiet_worker() -> None:
    """Worker processes leave Ctrl-C to the parent, which stops them (no traceback per worker)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_on_processes(todo, processes, device, record) -> None:
    import functools
    import multiprocessing

    # spawn: a fresh interpreter per worker (Warp's runtime is not fork-safe once initialised)
    pool = multiprocessing.get_context("spawn").Pool(processes, initializer=_quiet_worker)
    try:
        for result in pool.imap_unordered(functools.partial(run_batch, device=device), todo):
            record(result)
    except BaseException:
        pool.terminate()  # an interruption stops the running batches at once; the saved ones stay
        raise
    else:
        pool.close()
    finally:
        pool.join()


@contextlib.contextmanager
def kept_signal_handlers():
    """Restore the SIGINT and SIGTERM handlers after the block (in the main thread), whatever it installed."""
    import signal
    import threading

    main = threading.current_thread() is threading.main_thread()
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _run_on_ray(todo, address, device, record) -> None:
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs Ray: pip install 'softsnake[sweep]'") from None
    started = not ray.is_initialized()
    if started:
        with kept_signal_handlers():  # Ray installs its own SIGTERM handler; the command's stays
            ray.init(address=None if address == "local" else address, log_to_driver=False, include_dashboard=False)
    try:
        task = ray.remote(num_cpus=1)(run_batch)
        pending = [task.remote(b, device) for b in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            record(ray.get(done[0]))
    finally:
        if started:
            ray.shutdown()


# --------------------------------------------------------------------------------------------------------- table
def table_columns(spec: SweepSpec, rows) -> dict:
    """Columns of the result table: point, every parameter that is set in the spec, then the metrics."""
    names = list(dict.fromkeys(k for p in spec.points for k in p))
    cols = {"point": [r["point"] for r in rows]}
    for n in names:
        cols[n] = [spec.points[r["point"]].get(n) for r in rows]
    for m in METRICS:
        cols[m] = [r[m] for r in rows]
    return cols


def write_table(spec: SweepSpec, rows, path) -> Path:
    """The results as CSV (floats as Python's shortest round-trip text) or Parquet (``.parquet``, needs pyarrow)."""
    from softsnake.io.files import atomic_path, write_text_atomic

    cols = table_columns(spec, rows)
    path = Path(path)
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ValueError("a .parquet table needs pyarrow: pip install 'softsnake[sweep]'") from None
        with atomic_path(path) as tmp:
            pq.write_table(pa.table(cols), tmp)
        return path

    def text(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v)
        return str(v)

    lines = [",".join(cols)] + [",".join(text(c[i]) for c in cols.values()) for i in range(len(rows))]
    return write_text_atomic(path, "\n".join(lines) + "\n")


def plot_sweep(spec: SweepSpec, rows, path) -> Path:
    """Speed against the first swept parameter, one line per combination of the others (at most 12 labelled)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from softsnake.io.files import save_figure_atomic

    speed = np.array([r["speed_body_lengths_per_s"] for r in rows], dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    if not spec.swept:
        ax.bar([0], speed)
        ax.set_xticks([])
    else:
        x_name, rest = spec.swept[0], spec.swept[1:]
        groups: dict = {}
        for r, v in zip(rows, speed):
            p = spec.points[r["point"]]
            groups.setdefault(tuple(p[k] for k in rest), []).append((p[x_name], v))
        for i, (label, pts) in enumerate(groups.items()):
            pts.sort(key=lambda t: (isinstance(t[0], str), t[0]))
            xs, ys = zip(*pts)
            name = ", ".join(f"{k.split('.', 1)[1]}={v}" for k, v in zip(rest, label)) if i < 12 else None
            ax.plot(xs, ys, "o-" if spec.mode == "grid" else "o", ms=4, label=name)
        ax.set_xlabel(x_name)
        if rest:
            ax.legend(fontsize=7)
    ax.set_ylabel(f"speed over {spec.settle:g}–{spec.seconds:g} s [body lengths/s]")
    ax.set_title(f"sweep: {len(rows)} points ({spec.mode})", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out = save_figure_atomic(fig, path, dpi=110)
    plt.close(fig)
    return out
