"""Batched vine simulation: one model, many worlds (launch angles and bending parameters per world)."""

from __future__ import annotations

import math
import time

import numpy as np

from softsnake.sim import HingeTorques, ModelBuilder, Solver

from .vine import VineConfig, VineHandle, add_circles, add_rectangles, add_wall_segments, build_vine, planar_poses


class VineSim:
    """``worlds`` copies of one vine scene stepped together.

    config: :class:`VineConfig`; rects (x, y, w, h) [m], circles (x, y, r) [m], walls ((x1, y1), (x2, y2)) [m] with
    wall_thickness [m]; headings: per-world launch angles [rad] (default: config.heading everywhere);
    bending_params: per-world hinge-law parameters (worlds, P) (default: from the config); link_angles / link_lengths:
    initial shape (see :func:`build_vine`); growth_velocity: start with the bodies moving at the growth velocities
    (default False: from rest, as the Julia reference); on_nonfinite: "raise" or "flag" (candidate worlds of a fit
    that blow up are flagged, see :attr:`diverged_worlds`). The bending springs are explicit
    (:class:`~softsnake.sim.HingeTorques`), evaluated at the start of every step like F(q_k, v_k) in the originals."""

    def __init__(
        self,
        config: VineConfig,
        *,
        rects=None,
        circles=None,
        walls=None,
        wall_thickness: float | None = None,
        worlds: int = 1,
        headings=None,
        bending_params=None,
        link_angles=None,
        link_lengths=None,
        growth_velocity: bool = False,
        device: str = "cpu",
        extra_shapes=None,
        on_nonfinite: str = "raise",
    ):
        config.validate()
        self.config = config
        if isinstance(worlds, bool) or int(worlds) != worlds or worlds < 1:
            raise ValueError(f"worlds must be an integer ≥ 1, got {worlds!r}")
        W = int(worlds)
        b = ModelBuilder(gravity=(0.0, 0.0, 0.0))
        self.handle: VineHandle = build_vine(b, config, link_angles=link_angles, link_lengths=link_lengths)
        if rects is not None and len(rects):
            add_rectangles(b, rects, mu=config.mu)
        if circles is not None and len(circles):
            add_circles(b, circles, mu=config.mu)
        if walls is not None and len(walls):
            add_wall_segments(
                b, walls, thickness=wall_thickness if wall_thickness is not None else config.radius * 0.2, mu=config.mu
            )
        if extra_shapes is not None:
            extra_shapes(b)
        self.model = b.finalize(device=device, worlds=W)
        self.worlds = W
        self.state = self.model.state()
        self.control = self.model.control()
        h = self.handle
        nb = self.model.body_count
        heads = np.full(W, h.heading) if headings is None else np.asarray(headings, dtype=np.float64).reshape(-1)
        if heads.shape != (W,) or not np.all(np.isfinite(heads)):
            raise ValueError(f"headings must be {W} finite angles [rad]")
        self.headings = heads
        q0 = self.model.body_rest_poses().astype(np.float64)
        qd0 = np.zeros((W, nb, 6))
        o = np.array([h.origin[0], h.origin[1], 0.0])
        for w in range(W):
            a = heads[w] - h.heading
            if a != 0.0:
                c, s = math.cos(a), math.sin(a)
                R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
                q0[w, :, :3] = (q0[w, :, :3] - o) @ R.T + o
                rz = np.array([0.0, 0.0, math.sin(a / 2), math.cos(a / 2)])
                for i in range(nb):
                    q0[w, i, 3:] = _qmul(rz, q0[w, i, 3:])
        if growth_velocity:
            qd0 = self._growth_velocities(q0)
        self.state.body_q.assign(q0.reshape(-1, 7).astype(np.float32))
        self.state.body_qd.assign(qd0.reshape(-1, 6).astype(np.float32))
        params = config.bending_params() if bending_params is None else bending_params
        law = config.bending
        self.torques = HingeTorques(self.model, h.hinges, params, law=law, body_q0=q0)
        # initial link lengths: jitosho rest is straight; the hinge rest angles are relative to a straight vine
        self._straighten_rest(q0)
        self.solver = Solver(
            self.model,
            dt=config.dt,
            newton_iterations=config.newton_iterations,
            linear_iterations=config.linear_iterations,
            warm_start=config.warm_start,
            contact_warm_start=config.warm_start,
            on_nonfinite=on_nonfinite,
        )
        self.time = 0.0
        self.steps = 0
        self.step_seconds = 0.0
        self._targets = self.model.body_data.joint_drive_target
        self._target_np = self._targets.numpy().copy()
        full = 4.0 * config.body_half_length
        slides = h.initial_slide
        self._link_len = slides + 2.0 * config.body_half_length  # analytic link lengths (chen schedule)
        self._full = full
        self.growth_saturated = False

    # ---------------------------------------------------------------- set-up
    def _growth_velocities(self, q0: np.ndarray) -> np.ndarray:
        """Body velocities of rigid growth along the initial link directions (every growing slider at its rate)."""
        h, cfg = self.handle, self.config
        W, nb = q0.shape[:2]
        qd = np.zeros((W, nb, 6))
        rates = np.array(
            [
                cfg.growth_rate if (cfg.preset == "jitosho" or k == self._chen_active_index()) else 0.0
                for k in range(h.link_count)
            ]
        )
        for w in range(W):
            v = np.zeros(3)
            for k in range(h.link_count):
                a, b = h.bodies[2 * k], h.bodies[2 * k + 1]
                th = 2 * math.atan2(q0[w, a, 5], q0[w, a, 6])
                u = np.array([math.cos(th), math.sin(th), 0.0])
                qd[w, a, :3] = v
                v = v + rates[k] * u
                qd[w, b, :3] = v
        return qd

    def _chen_active_index(self) -> int:
        L = self.handle.initial_slide + 2.0 * self.config.body_half_length
        idx = np.nonzero(L < 4.0 * self.config.body_half_length - 1e-12)[0]
        return int(idx[0]) if len(idx) else -1

    def _straighten_rest(self, q0: np.ndarray) -> None:
        """Rest angles: a straight tube (pin hinges 0, base hinge at the launch heading), whatever the initial shape."""
        h = self.handle
        W = self.worlds
        th = planar_poses(q0)[..., 2]
        rest = []
        for w in range(W):
            for p, c in h.hinges:
                tp = self.headings[w] if p < 0 else th[w, p]
                rest.append(_wrap(th[w, c] - tp))
        rest = np.asarray(rest).reshape(W, len(h.hinges))
        if np.any(np.abs(rest) > 1e-9):
            # relative rotation at build minus the bend: rebuild the rest quaternions with a turn of −bend
            self.torques = HingeTorques(
                self.model, h.hinges, self.torques.law_params, law=self.config.bending, body_q0=q0, rest_angles=0.0
            )
            rq = self.torques.rest_rotation.numpy().reshape(W, len(h.hinges), 4).astype(np.float64)
            for w in range(W):
                for k in range(len(h.hinges)):
                    a = -rest[w, k]
                    rq[w, k] = _qmul(rq[w, k], np.array([0.0, 0.0, math.sin(a / 2), math.cos(a / 2)]))
            self.torques.rest_rotation.assign(rq.reshape(-1, 4).astype(np.float32))

    # ------------------------------------------------------------------ steps
    def set_bending_params(self, params) -> None:
        """Per-world hinge-law parameters (worlds, P) or (P,)."""
        self.torques.set_params(params)

    def _update_growth(self) -> None:
        """chen: only the first not-yet-full link grows; the rate is split at the step where it reaches full length."""
        cfg, h = self.config, self.handle
        if cfg.preset != "chen":
            return
        rates = np.zeros(h.link_count)
        remaining = cfg.growth_rate * cfg.dt
        for k in range(h.link_count):
            if remaining <= 0:
                break
            room = self._full - self._link_len[k]
            if room <= 1e-15:
                continue
            dl = min(room, remaining)
            rates[k] = dl / cfg.dt
            self._link_len[k] += dl
            remaining -= dl
        if remaining > 1e-15:
            self.growth_saturated = True
        t = self._target_np
        t[h.prismatic] = rates
        self._targets.assign(t)

    def step(self) -> None:
        t0 = time.perf_counter()
        self._update_growth()
        self.torques.apply(self.state, self.control)
        self.solver.step(self.state, self.control)
        self.time += self.config.dt
        self.steps += 1
        self.step_seconds += time.perf_counter() - t0

    @property
    def diverged_worlds(self) -> set:
        """Worlds whose state became non-finite (with on_nonfinite="flag"; they are restored and keep running)."""
        return set(self.solver.diverged_worlds)

    def poses(self) -> np.ndarray:
        """Planar poses (worlds, bodies, 3): x [m], y [m], θ [rad] (vine bodies base → tip)."""
        q = self.state.body_q.numpy().reshape(self.worlds, self.model.body_count, 7)
        return planar_poses(q[:, self.handle.bodies])

    def contact_points(self, poses: np.ndarray | None = None) -> np.ndarray:
        """Distal end of every link's second body (worlds, links, 2) [m] (the contact points; the last one is the
        tip)."""
        p = self.poses() if poses is None else poses
        d = self.config.body_half_length
        b = p[:, 1::2]
        return b[..., :2] + d * np.stack([np.cos(b[..., 2]), np.sin(b[..., 2])], axis=-1)

    def grown_length(self) -> float:
        """The links' lengths summed [m]: the robot's length from the base along its body (chen: growing as the
        schedule slides each link out; jitosho: the initial slides, which do not change)."""
        return float(np.sum(self._link_len))

    def grown_links(self) -> int:
        """chen: links with non-zero length (jitosho: all)."""
        if self.config.preset != "chen":
            return self.handle.link_count
        return int(np.count_nonzero(self._link_len > 1e-12))

    def centreline(self, world: int = 0, poses: np.ndarray | None = None) -> np.ndarray:
        """Polyline base → tip (K, 2) [m] through the origin, every body's ends (grown links only)."""
        p = (self.poses() if poses is None else poses)[world]
        d = self.config.body_half_length
        pts = [np.asarray(self.handle.origin, dtype=np.float64)]
        for k in range(self.grown_links()):
            for i in (2 * k, 2 * k + 1):
                x, y, th = p[i]
                pts.append(np.array([x + d * math.cos(th), y + d * math.sin(th)]))
        return np.asarray(pts)

    def body_centres(self, world: int = 0, poses: np.ndarray | None = None) -> np.ndarray:
        """Centres (M, 2) [m] of the bodies of grown links (chen: the collapsed links at the tip are left out)."""
        p = (self.poses() if poses is None else poses)[world]
        return p[: 2 * self.grown_links(), :2].copy()

    def rollout(self, steps: int, *, record_every: int = 1, callback=None) -> tuple[np.ndarray, np.ndarray]:
        """Run ``steps`` steps; returns t (T,) [s] and planar poses q (T, worlds, bodies, 3) including t = 0."""
        if isinstance(steps, bool) or int(steps) != steps or steps < 0:
            raise ValueError(f"steps must be an integer ≥ 0, got {steps!r}")
        ts, qs = [self.time], [self.poses()]
        for s in range(int(steps)):
            self.step()
            if (s + 1) % record_every == 0:
                ts.append(self.time)
                qs.append(self.poses())
                if callback is not None:
                    callback(self)
        return np.asarray(ts), np.asarray(qs)


def _qmul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi
