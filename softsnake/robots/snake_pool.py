"""The worlds of a snake batch spread over CPU worker processes.

Warp's CPU kernels step a batch's worlds one after another on one core, so a ``SnakeSim`` of many worlds uses one core
however many the machine has. ``SnakeSimPool`` holds the same worlds as ``processes`` SnakeSims of contiguous shares
of them, each in a worker process of its own (spawned: Warp's runtime is not fork-safe), and steps them side by side.
A world computes the same bits in any batch on the CPU (docs/engine.md, "Many worlds"), so the pool's worlds are the
worlds of one SnakeSim, only faster; it offers the part of SnakeSim's interface that the learning environments use
(softsnake/envs), with every read-back gathered from the workers once per step or reset.
"""

from __future__ import annotations

import multiprocessing
import traceback

import numpy as np

from .snake import SnakeConfig


def _shares(worlds: int, processes: int) -> list[tuple[int, int]]:
    """(first world, count) of each process's contiguous share, as even as they divide."""
    bounds = np.linspace(0, worlds, processes + 1).round().astype(int)
    return [(int(a), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:])]


def _read(sim) -> dict:
    """What the environments read from a SnakeSim after a step or reset (one message per worker)."""
    return dict(
        com=sim.com(),
        heading=sim.heading(),
        curvatures=sim.curvatures(),
        pressures=sim.pressures(),
        body_poses=sim.body_poses(),
        world_frame=sim.world_frame.copy(),
        diverged=sorted(sim.diverged_worlds),
    )


def _worker(connection, worlds: int, config: SnakeConfig) -> None:
    """One share of the worlds: a SnakeSim on the CPU that answers the pool's commands until "close"."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it closes the workers
    from .snake_sim import SnakeSim

    try:
        sim = SnakeSim(worlds=worlds, device="cpu", config=config)
        connection.send(("ok", _read(sim)))
    except Exception:  # noqa: BLE001 - reported to the parent, which raises it
        connection.send(("error", traceback.format_exc()))
        return
    while True:
        try:
            command, args = connection.recv()
        except EOFError:  # the parent went away without closing the pool
            return
        if command == "close":
            return
        try:
            if command == "targets":
                sim.set_pressure_targets(args)
            elif command == "step":
                sim.step(args)
            elif command == "reset":
                local, options = args
                sim.reset_worlds(local, **options)
            connection.send(("ok", _read(sim) if command != "targets" else None))
        except Exception:  # noqa: BLE001 - reported to the parent, which raises it
            connection.send(("error", traceback.format_exc()))


class SnakeSimPool:
    """``worlds`` snakes on the CPU, stepped in ``processes`` worker processes (each a SnakeSim of a contiguous share
    of the worlds). The read-backs (``com``, ``heading``, ``curvatures``, ``pressures``, ``body_poses``) and
    ``world_time`` are those of one SnakeSim of all the worlds; close the pool (``close``, or use it as a context
    manager) to stop the workers."""

    def __init__(self, worlds: int, processes: int, config: SnakeConfig | None = None):
        if isinstance(worlds, bool) or not isinstance(worlds, (int, np.integer)) or worlds < 1:
            raise ValueError(f"worlds must be an integer ≥ 1, got {worlds!r}")
        if isinstance(processes, bool) or not isinstance(processes, (int, np.integer)) or processes < 1:
            raise ValueError(f"processes must be an integer ≥ 1, got {processes!r}")
        self.config = config if config is not None else SnakeConfig()
        if not isinstance(self.config, SnakeConfig):
            raise ValueError(f"config must be a SnakeConfig, got {type(self.config).__name__}")
        from .snake import build_snake

        self.worlds, self.links = int(worlds), self.config.links
        self.layout = build_snake(self.config)[1]
        self.shares = _shares(self.worlds, min(int(processes), self.worlds))
        context = multiprocessing.get_context("spawn")
        self._connections, self._processes = [], []
        try:
            for _, count in self.shares:
                parent, child = context.Pipe()
                process = context.Process(target=_worker, args=(child, count, self.config), daemon=True)
                process.start()
                child.close()
                self._connections.append(parent)
                self._processes.append(process)
            self._gather()
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- commands
    def _send(self, command: str, per_share) -> None:
        for connection, args in zip(self._connections, per_share):
            connection.send((command, args))

    def _gather(self) -> None:
        """Every worker's answer to the last command; the read-backs joined in world order."""
        answers, failures = [], []
        for k, connection in enumerate(self._connections):
            try:
                status, value = connection.recv()
            except EOFError:
                status, value = "error", f"worker {k} stopped (exit code {self._processes[k].exitcode})"
            (failures if status == "error" else answers).append(value)
        if failures:
            raise RuntimeError(f"SnakeSimPool: a worker failed:\n{failures[0]}")
        if answers and answers[0] is not None:
            self._view = {key: np.concatenate([a[key] for a in answers]) for key in answers[0] if key != "diverged"}
            self.diverged_worlds = {first + w for (first, _), a in zip(self.shares, answers) for w in a["diverged"]}

    def set_pressure_targets(self, targets_psi) -> None:
        """Signed pressure targets [psi], shape (worlds, links) or (links,), as SnakeSim.set_pressure_targets."""
        a = np.asarray(targets_psi, dtype=np.float64)
        if a.shape == (self.links,):
            a = np.broadcast_to(a, (self.worlds, self.links))
        if a.shape != (self.worlds, self.links):
            raise ValueError(f"pressure targets must have shape {(self.worlds, self.links)}, got {a.shape}")
        self._send("targets", [a[first : first + count] for first, count in self.shares])
        self._gather()

    def step(self, frames: int = 1) -> None:
        """Advance every world ``frames`` control steps, the shares side by side."""
        if isinstance(frames, bool) or int(frames) != frames or frames < 0:
            raise ValueError(f"frames must be an integer ≥ 0, got {frames!r}")
        self._send("step", [int(frames)] * len(self.shares))
        self._gather()

    def reset_worlds(self, worlds, **variations) -> None:
        """SnakeSim.reset_worlds for the pool: each share resets its own worlds, with their values of each variation
        (a number, or one value per chosen world)."""
        from softsnake.sim.model import world_indices

        chosen = world_indices(worlds, self.worlds, "SnakeSimPool.reset_worlds")
        per_share = []
        for first, count in self.shares:
            mine = (chosen >= first) & (chosen < first + count)
            options = {}
            for name, value in variations.items():
                v = np.asarray(value) if value is not None else None
                options[name] = v[mine] if v is not None and v.ndim > 0 else value
            per_share.append((chosen[mine] - first, options))
        self._send("reset", per_share)
        self._gather()

    def close(self) -> None:
        """Stop the workers (idempotent)."""
        for connection in self._connections:
            try:
                connection.send(("close", None))
            except (BrokenPipeError, OSError):
                pass
        for process in self._processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
        self._connections, self._processes = [], []

    def __enter__(self) -> "SnakeSimPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --------------------------------------------------------------- read-backs
    @property
    def world_time(self) -> np.ndarray:
        """Time each world has run since it was last reset or built (worlds,) [s]."""
        return self._view["world_frame"] * self.config.frame_dt

    def com(self) -> np.ndarray:
        """Centre of mass of each snake (worlds, 3) [m]."""
        return self._view["com"]

    def heading(self) -> np.ndarray:
        """Mean yaw of the carriages (worlds,) [rad]."""
        return self._view["heading"]

    def curvatures(self) -> np.ndarray:
        """Curvature of each link (worlds, links) [1/m]."""
        return self._view["curvatures"]

    def pressures(self) -> np.ndarray:
        """Signed link pressures p0 − p1 (worlds, links) [psi]."""
        return self._view["pressures"]

    def body_poses(self) -> np.ndarray:
        """(worlds, bodies, 7): position [m] and quaternion (x, y, z, w)."""
        return self._view["body_poses"]
