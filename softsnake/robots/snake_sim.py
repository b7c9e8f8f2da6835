"""SnakeSim: batched simulation of the pneumatic soft snake (many independent snakes in one model).

Per control step (one frame = ``config.substeps`` solver steps of h = frame_dt/substeps): the chamber pressures move
toward the targets through the latency model (Eqs. 10–12, once per solver step), a kernel turns them into rest-length
scales ε = 1 + (p − q)/Y of the actuation constraints of each link's higher-pressure chamber (Eq. 4; the antagonist
at q is switched off, Sec. V), and the solver advances every world.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import warp as wp

from softsnake.io.files import write_npz_atomic
from softsnake.kernels import actuation as kact
from softsnake.sim import Solver
from softsnake.sim.model import world_indices

from .pneumatics import PSI, ChamberPressures
from .snake import SnakeConfig, build_snake

#: the checkpoint layout this version writes and reads; bumped whenever the saved arrays or their meaning change (older
#: files are refused with one line: resume them with the softsnake version that wrote them)
CHECKPOINT_VERSION = 2
CHECKPOINT_FORMAT = f"softsnake-snake-checkpoint-{CHECKPOINT_VERSION}"


def _version() -> str:
    from softsnake import __version__

    return __version__


def _heading(quat_xyzw: np.ndarray) -> np.ndarray:
    """Yaw [rad] of a body's local x axis projected on the ground, for (..., 4) quaternions (x, y, z, w)."""
    x, y, z, w = (quat_xyzw[..., k] for k in range(4))
    return np.arctan2(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z))


class SnakeSim:
    """``worlds`` independent snakes on flat ground.

    Args:
        worlds: number of snakes simulated together (≥ 1).
        device: Warp device ("cpu", "cuda", "cuda:0", …).
        config: SnakeConfig (default: the documented defaults).
    """

    def __init__(self, worlds: int = 1, device: str = "cpu", config: SnakeConfig | None = None):
        if isinstance(worlds, bool) or not isinstance(worlds, (int, np.integer)) or worlds < 1:
            raise ValueError(f"worlds must be an integer ≥ 1, got {worlds!r}")
        self.config = config if config is not None else SnakeConfig()
        if not isinstance(self.config, SnakeConfig):
            raise ValueError(f"config must be a SnakeConfig, got {type(self.config).__name__}")
        self.worlds = int(worlds)
        builder, self.layout = build_snake(self.config)
        slots = math.ceil(self.config.contact_slot_fraction * builder.particle_count) * min(builder.shape_count, 1)
        self.model = builder.finalize(
            device=device, worlds=self.worlds, contact_capacity=slots
        )  # unknown device → ValueError
        self.device = self.model.device
        self.state = self.model.state()
        self.control = self.model.control()
        self.solver = Solver(self.model, dt=self.config.h, config=self.config.solver)
        cfg = self.config
        self.links = cfg.links
        self._pressures = ChamberPressures(self.worlds, cfg.links, cfg.pneumatics)
        self._targets = np.zeros((self.worlds, cfg.links))
        self._chamber_pa = wp.zeros(self.worlds * cfg.links * 2, dtype=float, device=self.device)
        self._distance_chamber = wp.array(self.layout.distance_chamber, dtype=int, device=self.device)
        self.time = 0.0
        self.frame = 0
        #: frames each world has run since it was last reset (``reset_worlds``) or built (worlds,)
        self.world_frame = np.zeros(self.worlds, dtype=np.int64)
        #: per-world factor on the chamber pressures that reach the actuation lines (worlds,) [-]: 1 is the model of
        #: docs/snake.md; learning environments randomise it (``reset_worlds``)
        self.actuation_gain = np.ones(self.worlds)
        self.total_mass = float(self.model.particle_mass.sum() + self.model.body_mass.sum())
        self._upload_pressures()

    # ------------------------------------------------------------------ control
    def set_pressure_targets(self, targets_psi) -> None:
        """Signed pressure targets [psi] per link, shape (worlds, links) or (links,) for all worlds; a > 0 inflates
        chamber 0 (bends the link toward +y, positive curvature), a < 0 chamber 1. |a| ≤ p_max."""
        a = np.asarray(targets_psi, dtype=np.float64)
        if a.shape == (self.links,):
            a = np.broadcast_to(a, (self.worlds, self.links))
        self._targets = self._pressures.validate_targets(a).copy()

    def step(self, frames: int = 1) -> None:
        """Advance ``frames`` control steps (each ``config.substeps`` solver steps of ``config.h``)."""
        if isinstance(frames, bool) or int(frames) != frames or frames < 0:
            raise ValueError(f"frames must be an integer ≥ 0, got {frames!r}")
        h = self.config.h
        for _ in range(int(frames)):
            for _ in range(self.config.substeps):
                self._pressures.step(self._targets, h)
                self._upload_pressures()
                self.solver.step(self.state, self.control)
            self.frame += 1
            self.world_frame += 1
            self.time = self.frame * self.config.frame_dt

    @property
    def diverged_worlds(self) -> set[int]:
        """Worlds the solver flagged as diverged and restored (``SolverConfig.on_nonfinite = "flag"``)."""
        return self.solver.diverged_worlds

    @property
    def world_time(self) -> np.ndarray:
        """Time each world has run since it was last reset or built (worlds,) [s]."""
        return self.world_frame * self.config.frame_dt

    def reset_worlds(
        self, worlds, *, heading=None, ground_mu=None, actuation_gain=None, k_inflate=None, k_deflate=None
    ):
        """Start the worlds ``worlds`` (indices) afresh, leaving the others untouched: the engine's state and carried
        solver state as built (``Model.reset_worlds``, ``Solver.reset_worlds``), chambers vented, targets 0, their
        frame count 0. With every option left at None a reset world then steps bit for bit as the same world of a
        newly built SnakeSim.

        Per-world variations (a number for all chosen worlds or one value per chosen world; None: as built):
            heading: yaw of the whole snake about its centre of mass [rad] (the built snake heads along +x)
            ground_mu: friction coefficient of the ground in these worlds (``Control.shape_mu``; a wheel's contact
                takes the geometric mean √(μ_wheel·μ_ground))
            actuation_gain: factor on the chamber pressures that reach the actuation lines [-], > 0
            k_inflate, k_deflate: latency gains k_i, k_d of Eqs. 11–12, in (0, 1]

        The variations live in this object and ``control`` only: checkpoints (``save``) do not carry them.
        """
        chosen = world_indices(worlds, self.worlds, "SnakeSim.reset_worlds")
        if chosen.size == 0:
            return

        def per_world(name, values, default, lowest=-np.inf, strict=False):
            v = np.broadcast_to(default if values is None else np.asarray(values, dtype=np.float64), chosen.shape)
            if not np.isfinite(v).all() or ((v <= lowest) if strict else (v < lowest)).any():
                bound = "" if lowest == -np.inf else f" and {'>' if strict else '≥'} {lowest:g}"
                raise ValueError(
                    f"SnakeSim.reset_worlds: {name} must be finite{bound}, got {np.asarray(values).tolist()}"
                )
            return np.array(v, dtype=np.float64)

        yaw = per_world("heading", heading, 0.0)
        mu = per_world("ground_mu", ground_mu, 0.0, lowest=0.0)
        gain = per_world("actuation_gain", actuation_gain, 1.0, lowest=0.0, strict=True)
        self._pressures.set_latency_gains(chosen, k_inflate, k_deflate)  # checks before the engine is touched
        self.solver.reset_worlds(chosen)
        self.model.reset_worlds(self.state, chosen)
        self._pressures.reset(chosen)
        self._targets[chosen] = 0.0
        self.world_frame[chosen] = 0
        self.actuation_gain[chosen] = gain
        built = self.model.shape_friction().numpy().reshape(self.worlds, -1, 2)
        friction = self.control.shape_mu.numpy().reshape(self.worlds, -1, 2)
        friction[chosen] = built[chosen] if ground_mu is None else mu[:, None, None]
        self.control.shape_mu.assign(friction.reshape(-1, 2))
        turned = yaw != 0.0
        if turned.any():
            self._turn_worlds(chosen[turned], yaw[turned])
        self._upload_pressures()

    def _turn_worlds(self, worlds: np.ndarray, yaw: np.ndarray) -> None:
        """Rotate the snakes of ``worlds`` (at rest, as built) by ``yaw`` [rad] about the vertical through their
        centre of mass."""
        x, bq = self.particle_positions().copy(), self.body_poses().copy()
        v = self.state.particle_qd.numpy().reshape(self.worlds, -1, 3).copy()
        bv = self.state.body_qd.numpy().reshape(self.worlds, -1, 6).copy()
        centre = self.com()[:, :2]
        c, s = np.cos(yaw), np.sin(yaw)
        rot = np.zeros((len(worlds), 3, 3))
        rot[:, 0, 0], rot[:, 0, 1], rot[:, 1, 0], rot[:, 1, 1], rot[:, 2, 2] = c, -s, s, c, 1.0
        for k, w in enumerate(worlds):
            for points in (x[w], bq[w, :, :3]):
                points[:, :2] -= centre[w]
                points[:] = points @ rot[k].T
                points[:, :2] += centre[w]
            for vectors in (v[w], bv[w, :, :3], bv[w, :, 3:]):
                vectors[:] = vectors @ rot[k].T
            # q' = q_z(yaw) ⊗ q, quaternions (x, y, z, w)
            qz, qw = np.sin(0.5 * yaw[k]), np.cos(0.5 * yaw[k])
            q = bq[w, :, 3:].astype(np.float64)
            bq[w, :, 3:] = np.stack(
                [
                    qw * q[:, 0] - qz * q[:, 1],
                    qw * q[:, 1] + qz * q[:, 0],
                    qw * q[:, 2] + qz * q[:, 3],
                    qw * q[:, 3] - qz * q[:, 2],
                ],
                axis=1,
            )
        self.state.particle_q.assign(x.reshape(-1, 3).astype(np.float32))
        self.state.body_q.assign(bq.reshape(-1, 7).astype(np.float32))
        self.state.particle_qd.assign(v.reshape(-1, 3))
        self.state.body_qd.assign(bv.reshape(-1, 6))

    def _upload_pressures(self) -> None:
        pa = self._pressures.values * PSI * self.actuation_gain[:, None, None]
        self._chamber_pa.assign(pa.reshape(-1).astype(np.float32))
        m = self.model
        wp.launch(
            kact.chamber_rest_scale,
            dim=self.worlds * m.distance_count,
            inputs=[
                m.distance_count,
                2 * self.links,
                float(self.config.youngs_modulus),
                self._distance_chamber,
                self._chamber_pa,
            ],
            outputs=[self.control.distance_rest_scale],
            device=self.device,
        )

    # ------------------------------------------------------------- read-backs
    def pressures(self) -> np.ndarray:
        """Signed link pressures p0 − p1 (worlds, links) [psi]."""
        return self._pressures.signed()

    def chamber_pressures(self) -> np.ndarray:
        """Gauge pressure of every chamber (worlds, links, 2) [psi]."""
        return self._pressures.values

    def particle_positions(self) -> np.ndarray:
        """(worlds, particles, 3) [m]."""
        return self.state.particle_q.numpy().reshape(self.worlds, self.model.particle_count, 3)

    def body_poses(self) -> np.ndarray:
        """(worlds, bodies, 7): position [m] and quaternion (x, y, z, w)."""
        return self.state.body_q.numpy().reshape(self.worlds, self.model.body_count, 7)

    def com(self) -> np.ndarray:
        """Centre of mass of each snake (worlds, 3) [m]."""
        x = self.particle_positions().astype(np.float64)
        bq = self.body_poses().astype(np.float64)
        s = np.einsum("wpk,p->wk", x, self.model.particle_mass) + np.einsum(
            "wbk,b->wk", bq[:, :, :3], self.model.body_mass
        )
        return s / self.total_mass

    def carriage_headings(self) -> np.ndarray:
        """Yaw of every carriage's x axis (worlds, links + 1) [rad], tail → head."""
        return _heading(self.body_poses()[:, self.layout.carriages, 3:].astype(np.float64))

    def heading(self) -> np.ndarray:
        """Mean yaw of the carriages (worlds,) [rad] (circular mean)."""
        psi = self.carriage_headings()
        return np.arctan2(np.sin(psi).mean(axis=1), np.cos(psi).mean(axis=1))

    def curvatures(self) -> np.ndarray:
        """Curvature of each link (worlds, links) [1/m]: the yaw change between the carriages at its ends over the
        link length, as the paper measures it (Sec. VI-A). Positive: bends toward +y (chamber 0 inflated)."""
        psi = self.carriage_headings()
        d = np.angle(np.exp(1j * (psi[:, 1:] - psi[:, :-1])))
        return d / self.config.link_length

    # ------------------------------------------------------------ checkpoints
    def snapshot(self) -> dict:
        """Host copies of everything a step depends on: time, pressures, targets, the engine state and the solver's
        carried arrays (``restore`` puts them back; ``save`` writes them with the config). For in-memory rollouts from
        one state, e.g. the same frame at several solver budgets (benchmarks/studies/snake_step_error.py)."""
        arrays = dict(
            meta=np.array(
                json.dumps(dict(worlds=self.worlds, frame=self.frame, world_frame=self.world_frame.tolist()))
            ),
            chamber_pressures=self._pressures.values,
            targets=self._targets.copy(),
            particle_q=self.state.particle_q.numpy().copy(),
            particle_qd=self.state.particle_qd.numpy().copy(),
            body_q=self.state.body_q.numpy().copy(),
            body_qd=self.state.body_qd.numpy().copy(),
        )
        arrays.update({"solver_" + k: v for k, v in self.solver.carried_state().items()})
        return arrays

    def restore(self, snapshot: dict) -> None:
        """Put back what :meth:`snapshot` returned (or a checkpoint's arrays) into this simulation, whose model must
        have the same size (its solver budget may differ). ValueError on a mismatch of worlds or state shapes, raised
        before anything is assigned."""
        meta = json.loads(str(snapshot["meta"]))
        if meta["worlds"] != self.worlds:
            raise ValueError(f"the snapshot has {meta['worlds']} worlds, this simulation {self.worlds}")
        names = ("particle_q", "particle_qd", "body_q", "body_qd")
        for name in names:
            want, got = getattr(self.state, name).shape, np.shape(snapshot[name])
            if tuple(got[:1]) != tuple(want[:1]):
                raise ValueError(f"the snapshot's {name} has shape {got}, this model has {want[0]} entries")
        self._pressures.set_state(snapshot["chamber_pressures"])
        self._targets = np.asarray(snapshot["targets"], dtype=np.float64).copy()
        for name in names:
            getattr(self.state, name).assign(snapshot[name])
        self.solver.restore_carried_state(
            {k[len("solver_") :]: v for k, v in snapshot.items() if k.startswith("solver_")}
        )
        self.frame = int(meta["frame"])
        self.world_frame[:] = meta.get("world_frame", self.frame)
        self.time = self.frame * self.config.frame_dt
        self._upload_pressures()

    def save(self, path) -> Path:
        """Write a checkpoint (.npz, atomically): config, time, pressures, targets, the engine state and the solver's
        carried arrays. ``SnakeSim.load`` resumes it bit-identically on the same device type."""
        path = Path(path)
        arrays = dict(
            format=np.array(CHECKPOINT_FORMAT),
            softsnake_version=np.array(_version()),
            config_toml=np.array(self.config.to_toml()),
            **self.snapshot(),
        )
        return write_npz_atomic(path, **arrays)

    @classmethod
    def load(cls, path, device: str | None = None, *, solver=None) -> "SnakeSim":
        """Resume a checkpoint written by :meth:`save` (on ``device``, default the CPU; ``solver``: a SolverConfig to
        continue with instead of the saved one, e.g. another iteration budget). ValueError naming the file when it is
        unreadable, damaged, not a snake checkpoint or written in another checkpoint format."""
        data, config, meta = read_checkpoint(path)
        if solver is not None:
            config = dataclasses.replace(config, solver=solver)
        sim = cls(worlds=meta["worlds"], device=device or "cpu", config=config)
        missing = sorted(set(sim.snapshot()) - set(data))
        if missing:
            raise ValueError(f"checkpoint {str(path)!r} lacks {', '.join(missing)}")
        sim.restore(data)
        return sim

    def __repr__(self) -> str:
        c = self.layout.counts
        return (
            f"SnakeSim(worlds={self.worlds}, device={self.device}, particles/snake={c['particles']}, "
            f"tets/snake={c['tets']}, h={self.config.h:.5f} s × {self.config.substeps} per frame)"
        )


def read_checkpoint(path) -> tuple[dict, SnakeConfig, dict]:
    """The arrays of checkpoint ``path``, the SnakeConfig they were written with and their metadata (``worlds``,
    ``frame``), without building the snake. ValueError naming the file when it is unreadable, damaged, not a snake
    checkpoint or written in another checkpoint format."""
    import tomllib

    from softsnake.io.arrays import read_npz

    data = read_npz(path, "checkpoint")
    check_checkpoint_format(data, path)
    try:
        table = tomllib.loads(str(data["config_toml"]))
        meta = json.loads(str(data["meta"]))
        meta["worlds"] = int(meta["worlds"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"checkpoint {str(path)!r} is damaged: {exc}") from None
    if isinstance(table.get("snake"), dict):
        # written in this format before SnakeConfig.wheel_rim_contacts existed: its wheels had the rim samples
        table["snake"].setdefault("wheel_rim_contacts", True)
    return data, SnakeConfig.from_dict(table, source=str(path)), meta


def check_checkpoint_format(data: dict, path) -> None:
    """ValueError unless the arrays ``data`` of file ``path`` are a snake checkpoint in this version's format: a file
    of another format is refused with one line (no conversion is attempted)."""
    found = str(data.get("format", ""))
    if found == CHECKPOINT_FORMAT:
        return
    prefix = CHECKPOINT_FORMAT.rsplit("-", 1)[0] + "-"
    if not found.startswith(prefix):
        raise ValueError(f"{str(path)!r} is not a softsnake snake checkpoint")
    raise ValueError(
        f"checkpoint {str(path)!r} has format {found.removeprefix(prefix)}; softsnake {_version()} reads format "
        f"{CHECKPOINT_VERSION} only (resume it with the version that wrote it, or start the run again)"
    )


def gait_targets(gait, t: float, worlds: int, links: int) -> np.ndarray:
    """Targets (worlds, links) [psi] of one gait or a list of per-world gaits at time t [s]."""
    if isinstance(gait, (list, tuple)):
        if len(gait) != worlds:
            raise ValueError(f"{len(gait)} gaits given for {worlds} worlds")
        return np.stack([g.targets(t, links) for g in gait])
    return np.broadcast_to(gait.targets(t, links), (worlds, links))
