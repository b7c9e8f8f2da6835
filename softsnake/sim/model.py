"""Model (immutable device arrays for all worlds), State (positions and velocities) and Control (inputs)."""

from __future__ import annotations

import numpy as np
import warp as wp

from softsnake.kernels.data import LIST_CHUNK, BodyData, ModelData, RowLayout, vec8i

from .rows import ROW_FAMILIES, RowTable


def quiet_warp() -> None:
    """Silence Warp's start-up banner and per-module load messages (warnings and errors still show)."""
    wp.config.quiet = True  # Warp < 1.10
    if hasattr(wp, "LOG_WARNING"):
        wp.config.log_level = wp.LOG_WARNING


def resolve_device(device) -> wp.context.Device:
    """Warp device from a name ("cpu", "cuda", "cuda:0") with a clear error when it is not available."""
    wp.init()
    name = str(device)
    try:
        return wp.get_device(name)
    except Exception as exc:  # warp raises RuntimeError/ValueError depending on the case
        available = ", ".join(d.alias for d in wp.get_devices())
        raise ValueError(f"unknown or unavailable device {name!r} (available: {available})") from exc


def row_layout(table: RowTable) -> RowLayout:
    """The kernels' copy of the row-family table (kernels/data.py, RowLayout)."""
    layout = RowLayout()
    starts = [f.offset for f in table] + [table.row_count]
    elements = [f.element_offset for f in table] + [table.element_count]
    per = [f.rows_per_element for f in table] + [0]
    assert len(starts) == len(ROW_FAMILIES) + 1 == 8
    layout.row_start = vec8i(*starts)
    layout.element_start = vec8i(*elements)
    layout.rows_per_element = vec8i(*per)
    return layout


def world_indices(worlds, world_count: int, who: str = "") -> np.ndarray:
    """Sorted unique world indices from ``worlds`` (an index or a sequence), each checked to lie in
    [0, world_count); the ValueError names ``who`` when given."""
    chosen = np.unique(np.asarray(worlds, dtype=np.int64).ravel())
    if chosen.size and (chosen.min() < 0 or chosen.max() >= world_count):
        prefix = f"{who}: " if who else ""
        raise ValueError(f"{prefix}worlds must lie in [0, {world_count}), got {chosen.tolist()}")
    return chosen


def copy_worlds(dst: wp.array, src: wp.array, worlds: np.ndarray, world_count: int) -> None:
    """Copy the blocks of ``worlds`` (sorted indices) from ``src`` into ``dst`` on the device, no host round trip.

    dst: a world-major contiguous array of ``world_count`` equal blocks; src: the same layout, or one block that is
    copied into every chosen world. One device copy per run of consecutive worlds (per world from a single block)."""
    block = dst.size // world_count
    one = src.size == block
    if not one and src.size != dst.size:
        raise ValueError(f"copy_worlds: source of {src.size} elements for {world_count} blocks of {block}")
    if one:
        for w in worlds:
            wp.copy(dst, src, dest_offset=int(w) * block, count=block)
        return
    cuts = np.flatnonzero(np.diff(worlds) != 1) + 1
    for run in np.split(worlds, cuts):
        if run.size:
            start = int(run[0]) * block
            wp.copy(dst, src, dest_offset=start, src_offset=start, count=run.size * block)


def list_chunk(device) -> int:
    """Entries of a list that one lane sums (a rigid body's incidences: kernels/world_rows.py, scatter_world_bodies; a
    coarse node's particles: kernels/saddle.py): LIST_CHUNK on a GPU, where a body glued by dozens of rows or a
    node over a hundred particles would keep one lane walking its list while the block waits; 0 (each list whole, in
    order) on the CPU, whose block has one lane."""
    return LIST_CHUNK if wp.get_device(device).is_cuda else 0


def chunk_lists(start: np.ndarray, chunk: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR lists (list i is entries [start[i], start[i + 1])) cut into chunks of ``chunk`` entries (0: each list one
    chunk; an empty list none): (chunk_start, per list its chunks [chunk_start[i], chunk_start[i + 1]); chunk_first,
    chunk_end, the entries [chunk_first[c], chunk_end[c]) of chunk c)."""
    start = np.asarray(start, dtype=np.int64)
    lengths = np.diff(start)
    chunk = chunk or max(int(lengths.max(initial=0)), 1)
    firsts = [np.arange(start[i], start[i + 1], chunk) for i in range(lengths.size)]
    counts = np.array([f.size for f in firsts], dtype=np.int64)
    chunk_first = np.concatenate(firsts + [np.zeros(0, dtype=np.int64)])
    chunk_end = np.minimum(chunk_first + chunk, np.repeat(start[1:], counts))
    return np.concatenate([[0], np.cumsum(counts)]), chunk_first, chunk_end


class State:
    """Time-varying data of all worlds, world-major: entry w·n + i is particle (body) i of world w.

    particle_q: positions [m], particle_qd: velocities [m/s] (vec3, worlds·particles);
    body_q: poses (transform: position [m], quaternion x, y, z, w), body_qd: (linear [m/s], angular [rad/s]) velocity
    in the world frame (spatial_vector), worlds·bodies."""

    def __init__(self, particle_q: wp.array, particle_qd: wp.array, body_q: wp.array, body_qd: wp.array):
        self.particle_q = particle_q
        self.particle_qd = particle_qd
        self.body_q = body_q
        self.body_qd = body_qd

    def copy(self) -> "State":
        return State(
            wp.clone(self.particle_q), wp.clone(self.particle_qd), wp.clone(self.body_q), wp.clone(self.body_qd)
        )

    def assign(self, other: "State") -> None:
        for name in ("particle_q", "particle_qd", "body_q", "body_qd"):
            wp.copy(getattr(self, name), getattr(other, name))


class Control:
    """Inputs of all worlds.

    particle_f: external force per particle [N] (vec3, worlds·n); distance_rest_scale: per-world multiplier of each
    distance constraint's rest length (1 = unactuated; the pneumatic actuation sets ε(p) = 1 + p/Y here; a negative
    value,
    e.g. ``kernels.schur.DISTANCE_OFF``, switches the constraint off in that world: no force, its multiplier released);
    body_f: external (force [N], torque [N m]) per body about its centre of mass, world frame (spatial_vector);
    shape_mu: friction coefficients (μ along the shape's t1, t2) of every static shape in every world (vec2,
    worlds·shapes; starts at the built values), e.g. a different ground per world."""

    def __init__(self, particle_f: wp.array, distance_rest_scale: wp.array, body_f: wp.array, shape_mu: wp.array):
        self.particle_f = particle_f
        self.distance_rest_scale = distance_rest_scale
        self.body_f = body_f
        self.shape_mu = shape_mu


def default_contact_capacity(particles: int, shapes: int) -> int:
    """Default particle–shape contact slots per world: every pair when there is at most one static shape, else room for
    every particle to touch two shapes at once (the ground and an obstacle)."""
    return particles * min(shapes, 2)


class Model:
    """Device-side model of ``worlds`` identical worlds (built by :meth:`ModelBuilder.finalize`)."""

    def __init__(self):
        raise TypeError("use ModelBuilder.finalize() to create a Model")

    @classmethod
    def from_builder(cls, b, *, device, worlds: int, contact_capacity: int | None = None) -> "Model":
        self = object.__new__(cls)
        dev = resolve_device(device)
        self.device = dev
        self.list_chunk = list_chunk(dev)  # entries of a list that one lane sums (list_chunk)
        self.worlds = worlds
        self.gravity = wp.vec3(*b.gravity)
        n = b.particle_count
        self.particle_count = n
        self.distance_count = b.distance_count
        self.tet_count = b.tet_count
        self.shape_count = b.shape_count
        self.contact_count = (
            default_contact_capacity(n, b.shape_count) if contact_capacity is None else int(contact_capacity)
        )
        self.element_count = self.distance_count + self.tet_count + self.contact_count
        self.body_count = b.body_count
        self.attachment_count = len(b.attachments)
        self.joint_count = len(b.joints)
        from .rigid_builder import body_shape_features

        self.body_shape_count = len(b.body_shapes)
        self.features = [(s["body"], k) + f for k, s in enumerate(b.body_shapes) for f in body_shape_features(s)]
        self.feature_count = len(self.features)
        # body shapes that other bodies' features / particles collide with (add_shape_*(body_contact=,
        # particle_contact=))
        self.target_body_shapes = [k for k, s in enumerate(b.body_shapes) if s.get("body_contact", True)]
        self.particle_target_shapes = [k for k, s in enumerate(b.body_shapes) if s.get("particle_contact", True)]
        self.target_count = self.shape_count + len(self.target_body_shapes)
        self.body_contact_count = self.feature_count * self.target_count
        self.particle_body_count = n * len(self.particle_target_shapes)
        #: the row-family table: where each family's rows and elements begin in a world (softsnake/sim/rows.py)
        self.rows = RowTable(
            dict(
                distance=self.distance_count,
                tet=self.tet_count,
                contact=self.contact_count,
                attachment=self.attachment_count,
                joint=self.joint_count,
                body_contact=self.body_contact_count,
                particle_body=self.particle_body_count,
            )
        )
        self.row_count = self.rows.row_count

        mass = np.asarray(b.particle_mass, dtype=np.float64)
        fixed = np.asarray(b.particle_fixed, dtype=bool)
        inv_mass = np.where(fixed | (mass <= 0.0), 0.0, 1.0 / np.where(mass > 0.0, mass, 1.0))
        self.particle_mass = mass
        self.particle_inv_mass_host = inv_mass
        self._q0 = np.tile(np.asarray(b.particle_q, dtype=np.float32), (worlds, 1))
        self._qd0 = np.tile(np.asarray(b.particle_qd, dtype=np.float32), (worlds, 1))
        self._qd0[np.tile(fixed, worlds)] = 0.0
        self._initial = None  # the built State on the device, made by the first reset_worlds

        def arr(values, dtype, shape_tail=()):
            a = np.asarray(
                values, dtype=np.float32 if dtype in (float, wp.vec3, wp.mat33, wp.quat, wp.vec2) else np.int32
            )
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
        d.attachment_count = self.attachment_count
        d.particle_body_count = self.particle_body_count
        d.layout = row_layout(self.rows)
        d.particle_inv_mass = arr(inv_mass, float)
        d.particle_radius = arr(b.particle_radius, float)
        (start, codes), (tet_start, tet_codes) = self._incidence(b, n)
        d.particle_incidence_start = arr(start, int)
        d.particle_incidence = arr(codes, int)
        d.particle_tet_start = arr(tet_start, int)
        d.particle_tet = arr(tet_codes, int)
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
        self.body_data = self._body_data(b, arr)
        nb = self.body_count
        self._body_q0 = np.tile(np.asarray(b.body_q, dtype=np.float32).reshape(nb, 7), (worlds, 1))
        self._body_qd0 = np.tile(np.asarray(b.body_qd, dtype=np.float32).reshape(nb, 6), (worlds, 1))
        # host copies of topology for users and writers
        self.tet_indices = cat(b.tet_indices, (4,)).astype(np.int32)
        self.distance_pairs = ij
        return self

    def _body_data(self, b, arr) -> BodyData:
        bd = BodyData()
        bd.body_count = self.body_count
        bd.attachment_count = self.attachment_count
        bd.joint_count = self.joint_count
        masses, inertias = b.resolved_body_mass_properties()
        mass = np.asarray(masses, dtype=np.float64)
        inertia = np.asarray(inertias, dtype=np.float64).reshape(-1, 3, 3)
        inv_mass = np.where(mass > 0, 1.0 / np.where(mass > 0, mass, 1.0), 0.0)
        inv_inertia = np.array(
            [np.linalg.inv(I) if mb > 0 else np.zeros((3, 3)) for I, mb in zip(inertia, mass)]
        ).reshape(-1, 3, 3)
        self.body_mass = mass
        self.body_inertia = inertia
        bd.body_inv_mass = arr(inv_mass, float)
        bd.body_inertia = arr(inertia, wp.mat33, (3, 3))
        bd.body_inv_inertia = arr(inv_inertia, wp.mat33, (3, 3))
        att = b.attachments
        bd.attachment_particle = arr([a[0] for a in att], int)
        bd.attachment_body = arr([a[1] for a in att], int)
        bd.attachment_offset = arr(np.reshape([a[2] for a in att], (-1, 3)), wp.vec3, (3,))
        bd.attachment_compliance = arr([a[3] for a in att], float)
        J = b.joints

        def col(key, dtype=float, tail=()):
            vals = [j[key] for j in J]
            if tail:
                vals = np.reshape(vals, (-1, *tail))
            return arr(vals, dtype, tail)

        bd.joint_type = col("type", int)
        bd.joint_parent = col("parent", int)
        bd.joint_child = col("child", int)
        bd.joint_anchor_parent = col("anchor_parent", wp.vec3, (3,))
        bd.joint_anchor_child = col("anchor_child", wp.vec3, (3,))
        bd.joint_axis_parent = col("axis_parent", wp.vec3, (3,))
        bd.joint_axis_child = col("axis_child", wp.vec3, (3,))
        bd.joint_perp1_parent = col("perp1", wp.vec3, (3,))
        bd.joint_perp2_parent = col("perp2", wp.vec3, (3,))
        bd.joint_rest_rotation = col("rest_rotation", wp.quat, (4,))
        bd.joint_rest_slide = col("rest_slide")
        bd.joint_compliance = col("compliance")
        bd.joint_drive_mode = col("drive_mode", int)
        bd.joint_drive_target = col("drive_target")
        bd.joint_drive_compliance = col("drive_compliance")
        bd.joint_drive_damping = col("drive_damping")
        S = b.body_shapes
        bd.body_shape_type = arr([s["type"] for s in S], int)
        bd.body_shape_body = arr([s["body"] for s in S], int)
        bd.body_shape_pos = arr(np.reshape([s["pos"] for s in S], (-1, 3)), wp.vec3, (3,))
        bd.body_shape_rot = arr(np.reshape([s["rot"] for s in S], (-1, 4)), wp.quat, (4,))
        bd.body_shape_params = arr(np.reshape([s["params"] for s in S], (-1, 3)), wp.vec3, (3,))
        bd.body_shape_mu = arr(np.reshape([s["mu"] for s in S], (-1, 2)), wp.vec2, (2,))
        F = self.features
        bd.feature_count = self.feature_count
        bd.target_count = self.target_count
        bd.target_body_shape = arr(self.target_body_shapes, int)
        bd.particle_target_shape = arr(self.particle_target_shapes, int)
        bd.body_contact_count = self.body_contact_count
        bd.feature_body = arr([f[0] for f in F], int)
        bd.feature_shape = arr([f[1] for f in F], int)
        bd.feature_point = arr(np.reshape([f[2] for f in F], (-1, 3)), wp.vec3, (3,))
        bd.feature_axis = arr(np.reshape([f[3] for f in F], (-1, 3)), wp.vec3, (3,))
        bd.feature_radius = arr([f[4] for f in F], float)
        bd.feature_kind = arr([f[5] for f in F], int)
        # body incidence (code = 4·element + role), elements numbered by the row-family table
        first_att = self.rows["attachment"].element_offset
        first_joint = self.rows["joint"].element_offset
        bodies, codes = [], []
        for k, a in enumerate(att):
            bodies.append(a[1])
            codes.append(4 * (first_att + k))
        for j, jt in enumerate(J):
            if jt["parent"] >= 0:
                bodies.append(jt["parent"])
                codes.append(4 * (first_joint + j) + 1)
            bodies.append(jt["child"])
            codes.append(4 * (first_joint + j) + 2)
        first_contact = self.rows["body_contact"].element_offset
        for fi, feat in enumerate(self.features):
            for t in range(self.target_count):
                slot = fi * self.target_count + t
                target_body = -1 if t < self.shape_count else S[self.target_body_shapes[t - self.shape_count]]["body"]
                if target_body == feat[0]:
                    continue
                bodies.append(feat[0])
                codes.append(4 * (first_contact + slot))
                if target_body >= 0:
                    bodies.append(target_body)
                    codes.append(4 * (first_contact + slot) + 1)
        for slot in range(self.particle_body_count):
            bodies.append(S[self.particle_target_shapes[slot % len(self.particle_target_shapes)]]["body"])
            codes.append(4 * (self.rows["particle_body"].element_offset + slot) + 1)
        start, order = self._csr(np.asarray(bodies, dtype=np.int64), np.asarray(codes, dtype=np.int64), self.body_count)
        bd.body_incidence_start = arr(start, int)
        bd.body_incidence = arr(np.asarray(codes, dtype=np.int64)[order], int)
        # each list cut into chunks that lanes of a world sum side by side (list_chunk)
        chunk_start, chunk_first, chunk_end = chunk_lists(start, self.list_chunk)
        self.body_chunks = int(chunk_start[-1])  # chunks of all bodies' lists, per world
        bd.body_chunk_start, bd.chunk_first, bd.chunk_end = (arr(a, int) for a in (chunk_start, chunk_first, chunk_end))
        bd.chunk_body = arr(np.repeat(np.arange(self.body_count), np.diff(chunk_start)), int)
        return bd

    @staticmethod
    def _csr(owners: np.ndarray, codes: np.ndarray, count: int):
        order = np.lexsort((codes, owners))
        start = np.zeros(count + 1, dtype=np.int64)
        np.add.at(start, owners + 1, 1)
        return np.cumsum(start), order

    def _incidence(self, b, n: int):
        """CSR lists of the constraint elements acting on each particle: all but tets (code = 4·element + local
        vertex), and tets (code = 4·tet + local vertex), each sorted by code per particle."""
        particles, codes = [], []
        ij = np.asarray(b.distance_ij, dtype=np.int64).reshape(-1, 2)
        e = np.arange(len(ij))
        for local in (0, 1):
            particles.append(ij[:, local])
            codes.append(4 * e + local)
        tets = np.concatenate(b.tet_indices).astype(np.int64) if b.tet_indices else np.zeros((0, 4), np.int64)
        tet_codes = 4 * np.arange(len(tets))[:, None] + np.arange(4)[None, :]
        tet_start, tet_order = self._csr(tets.ravel(), tet_codes.ravel(), n)
        # contact slots are not listed: the step's compact list gives each particle its run of slots
        particles.append(
            np.asarray([a[0] for a in b.attachments], dtype=np.int64)
        )  # attachments follow the particle families
        codes.append(4 * (self.rows["attachment"].element_offset + np.arange(len(b.attachments))))
        pb = np.arange(self.particle_body_count)  # particle p against its k-th body-shape target: slot p·targets + k
        particles.append(pb // max(len(self.particle_target_shapes), 1))
        codes.append(4 * (self.rows["particle_body"].element_offset + pb))
        particles, codes = np.concatenate(particles), np.concatenate(codes)
        start, order = self._csr(particles, codes, n)
        return (start, codes[order]), (tet_start, tet_codes.ravel()[tet_order])

    # ---------------------------------------------------------------- factories
    def particle_rest_positions(self) -> np.ndarray:
        """(particles, 3) built positions of one world [m] (host copy)."""
        return self._q0[: self.particle_count].copy()

    def body_rest_poses(self) -> np.ndarray:
        """(worlds, bodies, 7) built body poses (position, quaternion x, y, z, w) of every world (host copy)."""
        return self._body_q0.reshape(self.worlds, self.body_count, 7).copy()

    def state(self) -> State:
        """New State at the built initial positions and velocities."""
        return State(
            wp.array(self._q0.reshape(-1, 3), dtype=wp.vec3, device=self.device),
            wp.array(self._qd0.reshape(-1, 3), dtype=wp.vec3, device=self.device),
            wp.array(self._body_q0, dtype=wp.transform, device=self.device),
            wp.array(self._body_qd0, dtype=wp.spatial_vector, device=self.device),
        )

    def reset_worlds(self, state: State, worlds) -> None:
        """Set the worlds ``worlds`` (indices) of ``state`` back to the built initial positions and velocities,
        leaving the other worlds untouched (pair with ``Solver.reset_worlds``); device copies only."""
        chosen = world_indices(worlds, self.worlds)
        if self._initial is None:
            self._initial = self.state()
        for name in ("particle_q", "particle_qd", "body_q", "body_qd"):
            copy_worlds(getattr(state, name), getattr(self._initial, name), chosen, self.worlds)

    def control(self) -> Control:
        """New Control: zero external forces, unit rest-length scales."""
        return Control(
            wp.zeros(self.worlds * self.particle_count, dtype=wp.vec3, device=self.device),
            wp.ones(self.worlds * self.distance_count, dtype=float, device=self.device),
            wp.zeros(self.worlds * self.body_count, dtype=wp.spatial_vector, device=self.device),
            self.shape_friction(),
        )

    def shape_friction(self) -> wp.array:
        """The built static shapes' friction coefficients for every world (worlds·shapes, vec2): Control.shape_mu's
        start value."""
        mu = self.data.shape_mu.numpy().reshape(-1, 2)
        return wp.array(np.tile(mu, (self.worlds, 1)).reshape(-1, 2), dtype=wp.vec2, device=self.device)

    def __repr__(self) -> str:
        return (
            f"Model(worlds={self.worlds}, particles={self.particle_count}, distances={self.distance_count}, "
            f"tets={self.tet_count}, shapes={self.shape_count}, bodies={self.body_count}, joints={self.joint_count}, "
            f"attachments={self.attachment_count}, body shapes={self.body_shape_count}, rows/world={self.row_count}, "
            f"device={self.device})"
        )
