"""Open-loop gait runs (paper Sec. VI-B, Fig. 7): trajectories of the centre of mass, pressures and curvatures, with
outputs as .npz, a plot, an animated top view (GIF) and an animated USD stage."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from softsnake.io.files import save_figure_atomic, write_npz_atomic
from softsnake.robots.pneumatics import OpenLoopGait
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim, gait_targets


@dataclass
class Trajectory:
    """Per-frame records of a gait run (T frames, N worlds); ``t0`` is the time the run started at (0, or the time of
    the checkpoint it resumed), ``com0`` / ``heading0`` the state then."""

    t: np.ndarray  # (T,) [s] time at the end of each frame
    com: np.ndarray  # (T, N, 3) [m]
    pressure: np.ndarray  # (T, N, links) signed [psi]
    curvature: np.ndarray  # (T, N, links) [1/m]
    heading: np.ndarray  # (T, N) mean carriage yaw, unwrapped over time [rad]
    body_length: float  # [m]

    def displacement(self) -> np.ndarray:
        """Planar COM displacement from the start (N, 2) [m]."""
        return self.com[-1, :, :2] - self.com0[:, :2]

    def speed_body_lengths(self, start: float = 0.0) -> np.ndarray:
        """Mean planar COM speed (N,) [body lengths / s] over the run, or from the first frame at or after ``start`` [s]
        to the end (leaving out the start-up from rest)."""
        if start <= self.t0:
            return np.linalg.norm(self.displacement(), axis=1) / (self.t[-1] - self.t0) / self.body_length
        i = int(np.searchsorted(self.t, start))
        if i >= len(self.t) - 1:
            raise ValueError(f"start={start} s leaves fewer than two frames of a {self.t[-1]:.3f} s run")
        d = self.com[-1, :, :2] - self.com[i, :, :2]
        return np.linalg.norm(d, axis=1) / (self.t[-1] - self.t[i]) / self.body_length

    def window_speed(self, a: float, b: float) -> np.ndarray:
        """Mean planar COM speed (N,) [body lengths / s] over the window [a, b] [s]: from the start state (a ≤ 0) or the
        first frame at ``a`` to the first frame at ``b`` (the last frame if the run ends first), over b − a."""
        start = self.com0 if a <= self.t0 else self.com[np.searchsorted(self.t, a - 1e-9)]
        end = self.com[min(np.searchsorted(self.t, b - 1e-9), len(self.t) - 1)]
        return np.linalg.norm((end - start)[:, :2], axis=1) / (b - a) / self.body_length

    com0: np.ndarray = None  # (N, 3) COM at t0 [m]
    heading0: np.ndarray = None  # (N,) heading at t0 [rad]
    t0: float = 0.0  # [s]

    def turn(self) -> np.ndarray:
        """Heading change over the run (N,) [rad]; positive = counter-clockwise (toward +y when heading +x)."""
        return self.heading[-1] - self.heading0

    def save(self, path, **extra) -> Path:
        """Write the records as .npz (atomically), with ``extra`` arrays beside them (e.g. the per-world gait)."""
        return write_npz_atomic(
            path,
            t=self.t,
            com=self.com,
            pressure=self.pressure,
            curvature=self.curvature,
            heading=self.heading,
            com0=self.com0,
            t0=np.float64(self.t0),
            body_length=np.float64(self.body_length),
            **extra,
        )


def run_gait(
    gait,
    seconds: float,
    *,
    worlds: int = 1,
    config: SnakeConfig | None = None,
    device: str = "cpu",
    sim: SnakeSim | None = None,
    frame_callback=None,
    progress=None,
) -> Trajectory:
    """Run an open-loop gait (one OpenLoopGait for all worlds, or a list of one per world) for ``seconds`` [s].

    ``frame_callback(sim)`` is called after every frame (e.g. a USD writer); ``progress(done, total)`` for a display.
    A ``sim`` given here continues from its time (a resumed checkpoint continues its gait where it stopped)."""
    if not np.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    if isinstance(gait, (list, tuple)):
        worlds = len(gait)
    sim = sim or SnakeSim(worlds=worlds, device=device, config=config)
    links, frames = sim.links, int(round(seconds / sim.config.frame_dt))
    if frames < 1:
        raise ValueError(f"seconds={seconds} is shorter than one frame ({sim.config.frame_dt} s)")
    com0, heading0, t0 = sim.com(), sim.heading(), sim.time
    t = np.empty(frames)
    heading = np.empty((frames, sim.worlds))
    com = np.empty((frames, sim.worlds, 3))
    pressure = np.empty((frames, sim.worlds, links))
    curvature = np.empty((frames, sim.worlds, links))
    for k in range(frames):
        sim.set_pressure_targets(gait_targets(gait, sim.time, sim.worlds, links))
        sim.step()
        t[k], com[k], pressure[k], curvature[k] = sim.time, sim.com(), sim.pressures(), sim.curvatures()
        previous = heading[k - 1] if k else heading0
        heading[k] = previous + np.angle(np.exp(1j * (sim.heading() - previous)))  # unwrapped
        if frame_callback is not None:
            frame_callback(sim)
        if progress is not None:
            progress(k + 1, frames)
    return Trajectory(t, com, pressure, curvature, heading, sim.config.body_length, com0, heading0, t0)


def plot_trajectory(traj: Trajectory, path, *, labels=None, title: str = "") -> Path:
    """COM paths (top view), signed pressures and curvatures of world 0 over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5))
    labels = labels or [f"snake {w}" for w in range(traj.com.shape[1])]
    for w in range(traj.com.shape[1]):
        d = np.concatenate([traj.com0[None, w, :2], traj.com[:, w, :2]]) - traj.com0[w, :2]
        ax[0].plot(d[:, 0], d[:, 1], label=labels[w])
        ax[0].plot(d[-1, 0], d[-1, 1], "o", color=ax[0].lines[-1].get_color())
    ax[0].set_aspect("equal", adjustable="datalim")
    ax[0].set_xlabel("x [m]")
    ax[0].set_ylabel("y [m]")
    ax[0].set_title("centre of mass (top view)")
    ax[0].legend(fontsize=8)
    for i in range(traj.pressure.shape[2]):
        ax[1].plot(traj.t, traj.pressure[:, 0, i], label=f"link {i}")
        ax[2].plot(traj.t, traj.curvature[:, 0, i], label=f"link {i}")
    ax[1].set_xlabel("t [s]")
    ax[1].set_ylabel("signed pressure [psi]")
    ax[1].set_title(f"pressures ({labels[0]})")
    ax[2].set_xlabel("t [s]")
    ax[2].set_ylabel("curvature [1/m]")
    ax[2].set_title(f"link curvatures ({labels[0]})")
    ax[1].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = save_figure_atomic(fig, path, dpi=110)
    plt.close(fig)
    return out


class SnakeUsdRecorder:
    """Frame callback that records every snake's soft surfaces and rigid parts into a USD stage (world w under
    ``snake_w``), saved atomically on :meth:`close`."""

    def __init__(self, path, sim: SnakeSim, *, every: int = 1):
        from softsnake.geometry.surface import surface_triangles
        from softsnake.io.usd import UsdAnimationWriter

        self.sim, self.every, self.count = sim, max(1, int(every)), 0
        self.writer = UsdAnimationWriter(path, fps=1.0 / (sim.config.frame_dt * self.every))
        cfg = sim.config
        tris = surface_triangles(sim.layout.link.tets)
        half = np.array([cfg.carriage_length, cfg.carriage_width, cfg.carriage_height]) / 2
        for w in range(sim.worlds):
            for i in range(sim.links):
                self.writer.add_soft_mesh(f"snake_{w}_link_{i}", tris)
            for k in range(len(sim.layout.carriages)):
                self.writer.add_box(f"snake_{w}_carriage_{k}", half)
            for k in range(len(sim.layout.wheels)):
                self.writer.add_cylinder(f"snake_{w}_wheel_{k}", cfg.wheel_radius, cfg.wheel_width / 2)
        self(sim, force=True)

    def __call__(self, sim: SnakeSim, force: bool = False) -> None:
        if not force and (sim.frame % self.every):
            return
        x, bq = sim.particle_positions(), sim.body_poses()
        soft, rigid = {}, {}
        for w in range(sim.worlds):
            for i, ids in enumerate(sim.layout.link_particles):
                soft[f"snake_{w}_link_{i}"] = x[w, ids]
            for k, b in enumerate(sim.layout.carriages):
                rigid[f"snake_{w}_carriage_{k}"] = (bq[w, b, :3], bq[w, b, 3:])
            for k, b in enumerate(sim.layout.wheels):
                rigid[f"snake_{w}_wheel_{k}"] = (bq[w, b, :3], bq[w, b, 3:])
        self.writer.write_frame(sim.time, soft_points=soft, rigid_poses=rigid)

    def close(self) -> Path:
        return self.writer.close()

    def discard(self) -> None:
        self.writer.discard()


class SnakeAnimation:
    """Frame callback that records snake 0 seen from above (its particles and carriages, on the ground plane) and
    saves it as an animated GIF (matplotlib's Pillow writer) at about ``fps`` frames per second of simulated time."""

    def __init__(self, sim: SnakeSim, *, fps: float = 15.0):
        self.every = max(1, round(1.0 / (fps * sim.config.frame_dt)))
        self.fps = 1.0 / (self.every * sim.config.frame_dt)
        self.carriages = np.asarray(sim.layout.carriages)
        self.times, self.particles, self.bodies = [], [], []
        self(sim, force=True)

    def __call__(self, sim: SnakeSim, force: bool = False) -> None:
        if not force and (sim.frame % self.every):
            return
        self.times.append(sim.time)
        self.particles.append(sim.particle_positions()[0, :, :2].copy())
        self.bodies.append(sim.body_poses()[0, self.carriages, :2].copy())

    def save(self, path, *, title: str = "") -> Path:
        """Write the animation to ``path`` (.gif) atomically."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.animation import FuncAnimation, PillowWriter

        from softsnake.io.files import atomic_path

        xy = np.concatenate([np.concatenate(self.particles), np.concatenate(self.bodies)])
        lo, hi = xy.min(axis=0) - 0.05, xy.max(axis=0) + 0.05
        span = hi - lo
        fig, ax = plt.subplots(figsize=(5.0, float(np.clip(5.0 * span[1] / span[0] + 1.2, 2.4, 5.0))))
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.set_xlabel("x [m]")
        ax.set_ylabel("y [m]")
        ax.grid(alpha=0.3)
        ax.set_title(f"snake 0 from above: link particles (orange), carriages (black)\n{title}", fontsize=7)
        soft = ax.plot([], [], ".", ms=1.5, color="tab:orange")[0]  # link particles
        rigid = ax.plot([], [], "s", ms=4, color="0.2")[0]  # carriages
        clock = ax.text(0.02, 0.95, "", transform=ax.transAxes, fontsize=8, va="top")
        fig.tight_layout()

        def draw(k):
            soft.set_data(self.particles[k][:, 0], self.particles[k][:, 1])
            rigid.set_data(self.bodies[k][:, 0], self.bodies[k][:, 1])
            clock.set_text(f"t = {self.times[k]:.2f} s")
            return soft, rigid, clock

        animation = FuncAnimation(fig, draw, frames=len(self.times), blit=True)
        with atomic_path(path) as tmp:
            animation.save(tmp, writer=PillowWriter(fps=self.fps), dpi=90)
        plt.close(fig)
        return Path(path)


def default_gait() -> OpenLoopGait:
    """The paper's gait (Sec. VI-B): ω = 2 Hz, α = π/2, φ = 0, A = p_max = 8 psi."""
    return OpenLoopGait()
