"""Model (immutable device arrays for all worlds), State (positions and velocities) and Control (inputs)."""

from __future__ import annotations

import numpy as np
import warp as wp

from softsnake.kernels.data import ModelData


def resolve_device(device) -> wp.context.Device:
    """Warp device from a name ("cpu", "cuda", "cuda:0") with a clear error when it is not available."""
    wp.init()
    name = str(device)
    try:
        return wp.get_device(name)
    except Exception as exc:  # warp raises RuntimeError/ValueError depending on the case
        available = ", ".join(d.alias for d in wp.get_devices())
        raise ValueError(f"unknown or unavailable device {name!r} (available: {available})") from exc


class State:
    """Time-varying particle data of all worlds, world-major: entry w·n + i is particle i of world w.

    particle_q: positions [m], particle_qd: velocities [m/s]; warp arrays of vec3, shape (worlds·n,)."""

    def __init__(self, particle_q: wp.array, particle_qd: wp.array):
        self.particle_q = particle_q
        self.particle_qd = particle_qd

    def copy(self) -> "State":
        return State(wp.clone(self.particle_q), wp.clone(self.particle_qd))

    def assign(self, other: "State") -> None:
        wp.copy(self.particle_q, other.particle_q)
        wp.copy(self.particle_qd, other.particle_qd)


class Control:
    """Inputs of all worlds.

    particle_f: external force per particle [N] (vec3, worlds·n); distance_rest_scale: per-world multiplier of each
    distance constraint's rest length (1 = unactuated; the pneumatic actuation sets ε(p) = 1 + p/Y here)."""

    def __init__(self, particle_f: wp.array, distance_rest_scale: wp.array):
        self.particle_f = particle_f
        self.distance_rest_scale = distance_rest_scale


class Model:
    """Device-side model of ``worlds`` identical worlds (built by :meth:`ModelBuilder.finalize`)."""

    def __init__(self):
        raise TypeError("use ModelBuilder.finalize() to create a Model")

    @classmethod
    def from_builder(cls, b, *, device, worlds: int) -> "Model":
        self = object.__new__(cls)
        dev = resolve_device(device)
        self.device = dev
        self.worlds = worlds
        self.gravity = wp.vec3(*b.gravity)
        n = b.particle_count
        self.particle_count = n
        self.distance_count = b.distance_count
        self.tet_count = b.tet_count
        self.shape_count = b.shape_count
        self.contact_count = n * b.shape_count
        self.row_count = self.distance_count + 6 * self.tet_count + 3 * self.contact_count
        self.bilateral_row_count = self.distance_count + 6 * self.tet_count
        self.element_count = self.distance_count + self.tet_count + self.contact_count

        mass = np.asarray(b.particle_mass, dtype=np.float64)
        fixed = np.asarray(b.particle_fixed, dtype=bool)
        inv_mass = np.where(fixed | (mass <= 0.0), 0.0, 1.0 / np.where(mass > 0.0, mass, 1.0))
        self.particle_mass = mass
        self.particle_inv_mass_host = inv_mass
        self._q0 = np.tile(np.asarray(b.particle_q, dtype=np.float32), (worlds, 1))
        self._qd0 = np.tile(np.asarray(b.particle_qd, dtype=np.float32), (worlds, 1))
        self._qd0[np.tile(fixed, worlds)] = 0.0

        def arr(values, dtype, shape_tail=()):
            a = np.asarray(values, dtype=np.float32 if dtype in (float, wp.vec3, wp.mat33, wp.quat, wp.vec2) else np.int32)
            if a.size == 0:
                a = np.zeros((0, *shape_tail), dtype=a.dtype)
            return wp.array(a, dtype=dtype, device=dev)

        def cat(parts, tail):
            return np.concatenate(parts) if parts else np.zeros((0, *tail))

        d = ModelData()
        d.particle_count = n
        d.distance_count = self.distance_count
        d.tet_count = self.tet_count
        d.shape_count = self.shape_count
        d.contact_count = self.contact_count
        d.row_count = self.row_count
        d.element_count = self.element_count
        d.particle_inv_mass = arr(inv_mass, float)
        d.particle_radius = arr(b.particle_radius, float)
        start, codes = self._incidence(b, n)
        d.particle_incidence_start = arr(start, int)
        d.particle_incidence = arr(codes, int)
        ij = np.asarray(b.distance_ij, dtype=np.int32).reshape(-1, 2)
        d.distance_i = arr(ij[:, 0], int)
        d.distance_j = arr(ij[:, 1], int)
        d.distance_rest = arr(b.distance_rest, float)
        d.distance_compliance = arr(b.distance_compliance, float)
        d.distance_damping = arr(b.distance_damping, float)
        d.tet_indices = arr(cat(b.tet_indices, (4,)), wp.vec4i, (4,))
        d.tet_rest_inverse = arr(cat(b.tet_rest_inverse, (3, 3)), wp.mat33, (3, 3))
        d.tet_volume = arr(cat(b.tet_volume, ()), float)
        d.tet_youngs = arr(cat(b.tet_youngs, ()), float)
        d.tet_poisson = arr(cat(b.tet_poisson, ()), float)
        d.tet_damping = arr(cat(b.tet_damping, ()), float)
        d.shape_type = arr(b.shape_type, int)
        d.shape_pos = arr(np.reshape(b.shape_pos, (-1, 3)), wp.vec3, (3,))
        d.shape_rot = arr(np.reshape(b.shape_rot, (-1, 4)), wp.quat, (4,))
        d.shape_params = arr(np.reshape(b.shape_params, (-1, 3)), wp.vec3, (3,))
        d.shape_mu = arr(np.reshape(b.shape_mu, (-1, 2)), wp.vec2, (2,))
        self.data = d
        # host copies of topology for users and writers
        self.tet_indices = cat(b.tet_indices, (4,)).astype(np.int32)
        self.distance_pairs = ij
        return self

    def _incidence(self, b, n: int):
        """CSR lists of the constraint elements acting on each particle (code = 4·element + local vertex)."""
        particles, codes = [], []
        ij = np.asarray(b.distance_ij, dtype=np.int64).reshape(-1, 2)
        e = np.arange(len(ij))
        for local in (0, 1):
            particles.append(ij[:, local])
            codes.append(4 * e + local)
        tets = np.concatenate(b.tet_indices).astype(np.int64) if b.tet_indices else np.zeros((0, 4), np.int64)
        e = self.distance_count + np.arange(len(tets))
        for local in range(4):
            particles.append(tets[:, local])
            codes.append(4 * e + local)
        cp = np.repeat(np.arange(n), self.shape_count)  # contact slot p·shapes + s belongs to particle p
        particles.append(cp)
        codes.append(4 * (self.distance_count + self.tet_count + np.arange(len(cp))))
        particles, codes = np.concatenate(particles), np.concatenate(codes)
        order = np.lexsort((codes, particles))
        start = np.zeros(n + 1, dtype=np.int64)
        np.add.at(start, particles + 1, 1)
        return np.cumsum(start), codes[order]

    # ---------------------------------------------------------------- factories
    def state(self) -> State:
        """New State at the built initial positions and velocities."""
        return State(
            wp.array(self._q0, dtype=wp.vec3, device=self.device),
            wp.array(self._qd0, dtype=wp.vec3, device=self.device),
        )

    def control(self) -> Control:
        """New Control: zero external forces, unit rest-length scales."""
        return Control(
            wp.zeros(self.worlds * self.particle_count, dtype=wp.vec3, device=self.device),
            wp.ones(self.worlds * self.distance_count, dtype=float, device=self.device),
        )

    def __repr__(self) -> str:
        return (
            f"Model(worlds={self.worlds}, particles={self.particle_count}, distances={self.distance_count}, "
            f"tets={self.tet_count}, shapes={self.shape_count}, rows/world={self.row_count}, device={self.device})"
        )
