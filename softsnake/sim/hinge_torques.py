"""Explicit hinge torques between bodies (torsion springs with linear, wrinkling or MLP moment laws).

The engine's joint drives (``add_joint_revolute(stiffness=...)``) are implicit, linear compliance rows. Some models are
written with the bending torque evaluated explicitly at the start of the step (the planar vine simulators: Jitosho et
al. 2021 Eq. 7–9; Chen et al. 2025 Eq. 3) or with a nonlinear moment law (Comer–Levy wrinkling). :class:`HingeTorques`
computes such torques on the device, per world with per-world parameters, and writes them into ``Control.body_f``.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import warp as wp

from softsnake.kernels import hinge_torque as kh

from .rigid_builder import quat_conjugate, quat_multiply, quat_to_matrix
from .model import Control, Model, State

#: moment laws and their parameter names (per world, in this order)
LAWS = {
    "linear": ("stiffness", "damping"),
    "wrinkling": ("m_full", "eps_crit", "damping"),
    "mlp": ("damping",) + tuple(f"w1_{j}" for j in range(10)) + tuple(f"b1_{j}" for j in range(10)) + tuple(f"w2_{j}" for j in range(10)) + ("b2",),
}
_LAW_CODE = {"linear": 0, "wrinkling": 1, "mlp": 2}


def wrinkling_moment_np(theta, m_full: float, eps_crit: float) -> np.ndarray:
    """Restoring moment magnitude [N m] at bending angle θ [rad] (host reference of the kernel; Chen et al. Eqs. 1–2,
    linear below the wrinkling onset θ_c = 2·asin(ε_crit)). m_full = π·P·R³ [N m] (P pressure [Pa], R tube radius [m])."""
    th = np.abs(np.asarray(theta, dtype=np.float64))
    onset = 2.0 * np.arcsin(eps_crit)
    s = np.sin(np.minimum(th, np.pi) / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        g0 = np.arccos(np.clip(2.0 * eps_crit / np.maximum(s, 1e-300) - 1.0, -1.0, 1.0))
        wr = m_full * (np.sin(2 * g0) + 2 * np.pi - 2 * g0) / (4 * (np.sin(g0) + (np.pi - g0) * np.cos(g0)))
    return np.where(th < onset, 0.5 * m_full * th / onset, wr)


class HingeTorques:
    """Torsion springs about hinge axes, applied explicitly (from the state at the start of the step).

    hinges: (parent, child) body pairs (parent −1: the world); axis: hinge axis in the world frame at the model's
    initial pose (one for all, or one per hinge); the rest angle of each hinge is its initial relative rotation plus
    ``rest_angles`` [rad]. law: "linear", "wrinkling" or "mlp" (see :data:`LAWS` and kernels/hinge_torque.py);
    params: (worlds, P) or (P,) per-world parameters in SI units. ``callable`` instead of a law: a host function
    ``moment(theta, rate, params) -> tau`` on (worlds, hinges) arrays (slow path: two device copies per step)."""

    def __init__(self, model: Model, hinges: Sequence[tuple[int, int]], params, *, law: str | Callable = "linear", axis=(0.0, 0.0, 1.0), rest_angles=None, body_q0: np.ndarray | None = None):
        self.model = model
        pairs = np.asarray(hinges, dtype=np.int64).reshape(-1, 2)
        if len(pairs) == 0:
            raise ValueError("HingeTorques needs at least one hinge")
        nb = model.body_count
        if np.any(pairs[:, 1] < 0) or np.any(pairs >= nb) or np.any(pairs[:, 0] < -1):
            raise ValueError(f"hinge body indices must be in [-1, {nb - 1}] (child ≥ 0), got {pairs.tolist()}")
        if np.any(pairs[:, 0] == pairs[:, 1]):
            raise ValueError("a hinge cannot connect a body to itself")
        self.hinge_count = len(pairs)
        self.callable = law if callable(law) else None
        if self.callable is None and law not in LAWS:
            raise ValueError(f"unknown hinge torque law {law!r} (choose {', '.join(LAWS)} or pass a callable)")
        self.law = "callable" if self.callable is not None else law
        W = model.worlds
        q0 = np.asarray(model.body_rest_poses() if body_q0 is None else body_q0, dtype=np.float64)
        if q0.size == nb * 7:
            q0 = np.tile(q0.reshape(1, nb, 7), (W, 1, 1))
        if q0.size != W * nb * 7:
            raise ValueError(f"body_q0 must hold {nb} poses (or {W}·{nb}, one set per world)")
        q0 = q0.reshape(W, nb, 7)
        axes = np.broadcast_to(np.asarray(axis, dtype=np.float64), (self.hinge_count, 3)).copy()
        norms = np.linalg.norm(axes, axis=1)
        if np.any(norms < 1e-9) or not np.all(np.isfinite(axes)):
            raise ValueError("hinge axes must be finite and non-zero")
        axes /= norms[:, None]
        rest = np.zeros(self.hinge_count) if rest_angles is None else np.broadcast_to(np.asarray(rest_angles, dtype=np.float64), (self.hinge_count,))
        if not np.all(np.isfinite(rest)):
            raise ValueError("rest_angles must be finite")
        ident = np.array([0.0, 0.0, 0.0, 1.0])
        # rest pose (per world, hinge) = initial relative rotation followed by a rotation r about the hinge axis;
        # the axis is stored in the child frame (from world 0: the hinge axis is the same in every world's body frame)
        rest_q, axis_c = [], []
        for (p, c), a, r in zip(pairs, axes, rest):
            axis_c.append(quat_to_matrix(q0[0, c, 3:]).T @ a)
        for w in range(W):
            for (p, c), a_c, r in zip(pairs, axis_c, rest):
                qp = q0[w, p, 3:] if p >= 0 else ident
                turn = np.concatenate([np.sin(r / 2) * a_c, [np.cos(r / 2)]])
                rest_q.append(quat_multiply(quat_multiply(quat_conjugate(qp), q0[w, c, 3:]), turn))
        dev = model.device
        self.parent = wp.array(pairs[:, 0].astype(np.int32), dtype=int, device=dev)
        self.child = wp.array(pairs[:, 1].astype(np.int32), dtype=int, device=dev)
        self.rest_rotation = wp.array(np.asarray(rest_q, dtype=np.float32), dtype=wp.quat, device=dev)
        self.axis_child = wp.array(np.asarray(axis_c, dtype=np.float32), dtype=wp.vec3, device=dev)
        self.angles = wp.zeros(model.worlds * self.hinge_count, dtype=float, device=dev)
        self._zero_params = wp.zeros(model.worlds, dtype=float, device=dev)
        self._pairs = pairs
        self.set_params(params)

    @property
    def param_count(self) -> int:
        return self._params_np.shape[1]

    @property
    def law_params(self) -> np.ndarray:
        """(worlds, P) the laws' parameters per world (a host copy; ``params`` is the device array)."""
        return self._params_np.copy()

    def set_params(self, params) -> None:
        """Per-world parameters: (worlds, P) or (P,) (same for all worlds)."""
        p = np.asarray(params, dtype=np.float64)
        W = self.model.worlds
        if p.ndim == 1:
            p = np.tile(p, (W, 1))
        if p.ndim != 2 or p.shape[0] != W:
            raise ValueError(f"hinge torque params must have shape (P,) or ({W}, P), got {p.shape}")
        if self.callable is None and p.shape[1] != len(LAWS[self.law]):
            raise ValueError(f"law {self.law!r} takes {len(LAWS[self.law])} parameters ({', '.join(LAWS[self.law][:4])}...), got {p.shape[1]}")
        if not np.all(np.isfinite(p)):
            raise ValueError("hinge torque params must be finite")
        if self.law == "linear" and np.any(p < 0):
            raise ValueError("linear hinge stiffness and damping must be ≥ 0")
        if self.law == "wrinkling" and (np.any(p[:, 0] < 0) or np.any(p[:, 1] <= 0) or np.any(p[:, 1] >= 1) or np.any(p[:, 2] < 0)):
            raise ValueError("wrinkling hinge params need m_full ≥ 0, 0 < eps_crit < 1, damping ≥ 0")
        self._params_np = p
        self.params = wp.array(p.ravel().astype(np.float32), dtype=float, device=self.model.device)

    def apply(self, state: State, control: Control) -> None:
        """Overwrite ``control.body_f`` with the hinge torques of ``state`` (all worlds)."""
        m = self.model
        control.body_f.zero_()
        if self.callable is not None:
            self._apply_host(state, control)
            return
        wp.launch(
            kh.hinge_torques,
            dim=m.worlds * self.hinge_count,
            inputs=[m.body_count, self.hinge_count, self.parent, self.child, self.rest_rotation, self.axis_child, _LAW_CODE[self.law], self.param_count, self.params, state.body_q, state.body_qd],
            outputs=[self.angles, control.body_f],
            device=m.device,
        )

    def hinge_angles(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        """(θ, θ̇) of every hinge, shape (worlds, hinges) [rad, rad/s] (host computation)."""
        m, W, H = self.model, self.model.worlds, self.hinge_count
        q = state.body_q.numpy().reshape(W, m.body_count, 7).astype(np.float64)
        qd = state.body_qd.numpy().reshape(W, m.body_count, 6).astype(np.float64)
        rest = self.rest_rotation.numpy().astype(np.float64)
        ac = self.axis_child.numpy().astype(np.float64)
        th, rate = np.zeros((W, H)), np.zeros((W, H))
        for k, (p, c) in enumerate(self._pairs):
            qc = q[:, c, 3:]
            qp = q[:, p, 3:] if p >= 0 else np.tile([0.0, 0.0, 0.0, 1.0], (W, 1))
            for w in range(W):
                d = quat_multiply(quat_conjugate(quat_multiply(qp[w], rest[w * H + k])), qc[w])
                if d[3] < 0:
                    d = -d
                th[w, k] = 2 * np.arctan2(d[:3] @ ac[k], d[3])
                axis = quat_to_matrix(qc[w]) @ ac[k]
                wpar = qd[w, p, 3:] if p >= 0 else np.zeros(3)
                rate[w, k] = (qd[w, c, 3:] - wpar) @ axis
        return th, rate

    def _apply_host(self, state: State, control: Control) -> None:
        m, W = self.model, self.model.worlds
        th, rate = self.hinge_angles(state)
        tau = np.asarray(self.callable(th, rate, self._params_np), dtype=np.float64)
        if tau.shape != th.shape or not np.all(np.isfinite(tau)):
            raise ValueError(f"hinge moment callable must return finite values of shape {th.shape}, got {tau.shape}")
        q = state.body_q.numpy().reshape(W, m.body_count, 7).astype(np.float64)
        f = np.zeros((W, m.body_count, 6))
        ac = self.axis_child.numpy().astype(np.float64)
        for k, (p, c) in enumerate(self._pairs):
            for w in range(W):
                t = tau[w, k] * (quat_to_matrix(q[w, c, 3:]) @ ac[k])
                f[w, c, 3:] += t
                if p >= 0:
                    f[w, p, 3:] -= t
        control.body_f.assign(f.reshape(-1, 6).astype(np.float32))
