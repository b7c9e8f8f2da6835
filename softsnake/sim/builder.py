"""ModelBuilder: collects particles, constraints, soft meshes and static shapes on the host, then ``finalize`` copies
them to device arrays, replicated over ``worlds`` independent worlds."""

from __future__ import annotations

import enum
import math

import numpy as np

from softsnake.geometry.tetmesh import tet_volumes, validate_tet_mesh

from . import validate as check
from .rigid_builder import RigidBuilderMixin


class ShapeType(enum.IntEnum):
    PLANE = 0
    BOX = 1
    CYLINDER = 2
    SPHERE = 3
    CAPSULE = 4


def _quat_from_z_to(normal: np.ndarray) -> np.ndarray:
    """Shortest-arc unit quaternion (x, y, z, w) rotating +z onto ``normal``."""
    z = np.array([0.0, 0.0, 1.0])
    n = normal / np.linalg.norm(normal)
    c = float(np.dot(z, n))
    if c < -1.0 + 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0])
    axis = np.cross(z, n)
    q = np.array([axis[0], axis[1], axis[2], 1.0 + c])
    return q / np.linalg.norm(q)


def _friction_pair(mu) -> tuple[float, float]:
    """μ as a scalar (isotropic) or a pair (μ1, μ2) along the shape's local x and y axes."""
    arr = np.atleast_1d(np.asarray(mu, dtype=np.float64))
    if arr.size == 1:
        arr = np.repeat(arr, 2)
    if arr.size != 2 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"mu must be a finite number ≥ 0 or a pair of them, got {mu!r}")
    return float(arr[0]), float(arr[1])


class ModelBuilder(RigidBuilderMixin):
    """Host-side description of one world. All quantities in SI units.

    Args:
        gravity: gravitational acceleration [m/s²].
    """

    def __init__(self, gravity=(0.0, 0.0, -9.81)):
        self.gravity = check.finite_vector("gravity", gravity)
        self.particle_q: list[np.ndarray] = []
        self.particle_qd: list[np.ndarray] = []
        self.particle_mass: list[float] = []
        self.particle_radius: list[float] = []
        self.particle_fixed: list[bool] = []
        self.distance_ij: list[tuple[int, int]] = []
        self.distance_rest: list[float] = []
        self.distance_compliance: list[float] = []
        self.distance_damping: list[float] = []
        self.tet_indices: list[np.ndarray] = []
        self.tet_rest_inverse: list[np.ndarray] = []
        self.tet_volume: list[np.ndarray] = []
        self.tet_youngs: list[np.ndarray] = []
        self.tet_poisson: list[np.ndarray] = []
        self.tet_damping: list[np.ndarray] = []
        self.shape_type: list[int] = []
        self.shape_pos: list[np.ndarray] = []
        self.shape_rot: list[np.ndarray] = []
        self.shape_params: list[np.ndarray] = []
        self.shape_mu: list[tuple[float, float]] = []
        self._init_rigid()

    # ------------------------------------------------------------------ counts
    @property
    def particle_count(self) -> int:
        return len(self.particle_q)

    @property
    def distance_count(self) -> int:
        return len(self.distance_ij)

    @property
    def tet_count(self) -> int:
        return sum(len(t) for t in self.tet_indices)

    @property
    def shape_count(self) -> int:
        return len(self.shape_type)

    # --------------------------------------------------------------- particles
    def add_particle(self, pos, vel=(0.0, 0.0, 0.0), mass: float = 1.0, *, radius: float = 0.0) -> int:
        """Add a particle at ``pos`` [m] with velocity ``vel`` [m/s], ``mass`` [kg] (0 → fixed) and contact
        ``radius`` [m]. Returns its index."""
        p = check.finite_vector("pos", pos)
        v = check.finite_vector("vel", vel)
        m = check.non_negative(f"mass of particle {self.particle_count}", mass)
        r = check.non_negative("radius", radius)
        self.particle_q.append(p)
        self.particle_qd.append(v)
        self.particle_mass.append(m)
        self.particle_radius.append(r)
        self.particle_fixed.append(m == 0.0)
        return self.particle_count - 1

    def fix_particles(self, ids) -> None:
        """Make particles kinematic (infinite mass): they keep their velocity (zero unless set) and act as clamps."""
        for i in check.index_list("fix_particles", ids, self.particle_count, distinct=False):
            self.particle_fixed[int(i)] = True

    # ------------------------------------------------------------- constraints
    def add_distance(
        self, i: int, j: int, rest_length: float | None = None, compliance: float = 0.0, *, damping: float = 0.0
    ) -> int:
        """Distance constraint c = |x_i − x_j| − r·s (paper Eq. 3), s the per-world rest-length scale in
        ``Control.distance_rest_scale`` (the actuation hook, ε(p) of Eq. 4; s < 0 switches the constraint off in that
        world).

        rest_length: r [m] (None → current distance); compliance: α [m/N] (0 → rigid); damping: β [s]."""
        ij = check.index_list("add_distance", [i, j], self.particle_count)
        if rest_length is None:
            rest = float(np.linalg.norm(self.particle_q[ij[0]] - self.particle_q[ij[1]]))
        else:
            rest = check.non_negative("rest_length", rest_length)
        self.distance_ij.append((int(ij[0]), int(ij[1])))
        self.distance_rest.append(rest)
        self.distance_compliance.append(check.non_negative("compliance", compliance))
        self.distance_damping.append(check.non_negative("damping", damping))
        return self.distance_count - 1

    def add_soft_mesh(
        self,
        vertices,
        tets,
        *,
        density: float,
        youngs_modulus: float,
        poisson_ratio: float,
        damping: float = 0.0,
        pos=(0.0, 0.0, 0.0),
        vel=(0.0, 0.0, 0.0),
        particle_radius: float = 0.0,
    ) -> np.ndarray:
        """Add a corotational linear-tet soft body (paper Eq. 5) and return its particle indices.

        vertices: (n, 3) rest positions [m] (offset by ``pos``); tets: (m, 4) indices into vertices;
        density [kg/m³]; youngs_modulus [Pa]; poisson_ratio in (−1, 0.5); damping: strain-rate time constant β [s].
        Each tet gives a quarter of its mass to each of its vertices (lumped mass)."""
        rho = check.positive("density", density)
        young = check.positive("youngs_modulus", youngs_modulus)
        nu = check.poisson_ratio(poisson_ratio)
        beta = check.non_negative("damping", damping)
        mesh = validate_tet_mesh(vertices, tets, name="add_soft_mesh")
        verts = mesh.vertices + check.finite_vector("pos", pos)
        vel = check.finite_vector("vel", vel)
        used = np.unique(mesh.tets)
        if used.size != len(verts):
            missing = np.setdiff1d(np.arange(len(verts)), used)
            raise ValueError(f"add_soft_mesh: vertex {int(missing[0])} belongs to no tet")
        vol = tet_volumes(verts, mesh.tets)
        mass = np.zeros(len(verts))
        np.add.at(mass, mesh.tets.reshape(-1), np.repeat(rho * vol / 4.0, 4))
        base = self.particle_count
        for k in range(len(verts)):
            self.add_particle(verts[k], vel, mass[k], radius=particle_radius)
        x = verts[mesh.tets]
        Dm = np.transpose(x[:, 1:] - x[:, :1], (0, 2, 1))  # columns are rest edge vectors
        self.tet_indices.append(mesh.tets + base)
        self.tet_rest_inverse.append(np.linalg.inv(Dm))
        self.tet_volume.append(vol)
        self.tet_youngs.append(np.full(len(vol), young))
        self.tet_poisson.append(np.full(len(vol), nu))
        self.tet_damping.append(np.full(len(vol), beta))
        return np.arange(base, base + len(verts))

    # ------------------------------------------------------------------ shapes
    def add_ground_plane(self, mu=0.5, *, height: float = 0.0, normal=(0.0, 0.0, 1.0)) -> int:
        """Static ground plane through ``height·normal`` [m]. mu: friction coefficient, or (μ1, μ2) along the
        world x and y axes projected on the plane (anisotropic, elliptic cone)."""
        n = check.finite_vector("normal", normal)
        if np.linalg.norm(n) < 1e-12:
            raise ValueError("normal must be non-zero")
        n = n / np.linalg.norm(n)
        h = float(height)
        if not math.isfinite(h):
            raise ValueError(f"height must be finite, got {height!r}")
        return self._add_shape(ShapeType.PLANE, n * h, _quat_from_z_to(n), np.zeros(3), mu)

    def add_shape_box(
        self,
        body: int,
        half_extents,
        *,
        pos=(0.0, 0.0, 0.0),
        rot=(0.0, 0.0, 0.0, 1.0),
        mu=0.5,
        density: float = 1000.0,
        body_contact: bool = True,
        particle_contact: bool = True,
    ) -> int:
        """Box with ``half_extents`` [m] at ``pos`` [m], rotation ``rot`` (quaternion x, y, z, w).

        body = −1: static, in world coordinates; else attached to that body, pose in the body frame, with ``density``
        [kg/m³] for the body's mass properties. mu as in ``add_ground_plane`` (axes: the box's local x, y).
        A body shape always touches the static shapes; ``body_contact`` / ``particle_contact`` (also on the other
        add_shape_* methods) say whether other bodies' shapes / particles collide with it (False: fewer contact rows,
        e.g. for wheels and carriages that only need the ground)."""
        he = check.finite_vector("half_extents", half_extents)
        if np.any(he <= 0):
            raise ValueError(f"half_extents must be > 0, got {he.tolist()}")
        return self._add_any_shape(ShapeType.BOX, body, pos, rot, he, mu, density, (body_contact, particle_contact))

    def add_shape_cylinder(
        self,
        body: int,
        radius: float,
        half_height: float,
        *,
        pos=(0.0, 0.0, 0.0),
        rot=(0.0, 0.0, 0.0, 1.0),
        mu=0.5,
        density: float = 1000.0,
        body_contact: bool = True,
        particle_contact: bool = True,
        rim_contact: bool = True,
    ) -> int:
        """Cylinder of ``radius`` and ``half_height`` [m] around its local z axis (rotate with ``rot``). On a body,
        mu = (μ along the axis, μ across it), e.g. (1.0, 0.05) for a wheel that rolls freely but grips sideways.

        A body's cylinder touches other surfaces at the deepest point of each cap's rim (exact rolling) and, to stand
        on a cap, at 16 rim samples used only against a surface within 45° of facing a cap. ``rim_contact=False``
        leaves the samples out, 16 contact slots (48 rows) fewer per target shape: for a wheel held upright by its
        axle, which never stands on a cap (a body's cylinder only; a static one has no contact features)."""
        params = np.array([check.positive("radius", radius), check.positive("half_height", half_height), 0.0])
        if not isinstance(rim_contact, (bool, np.bool_)):
            raise ValueError(f"rim_contact must be true or false, got {rim_contact!r}")
        if not rim_contact and int(body) == -1:
            raise ValueError("rim_contact=False applies to a cylinder on a body (a static cylinder has no rim samples)")
        return self._add_any_shape(
            ShapeType.CYLINDER, body, pos, rot, params, mu, density, (body_contact, particle_contact, rim_contact)
        )

    def add_shape_sphere(
        self,
        body: int,
        radius: float,
        *,
        pos=(0.0, 0.0, 0.0),
        mu=0.5,
        density: float = 1000.0,
        body_contact: bool = True,
        particle_contact: bool = True,
    ) -> int:
        """Sphere of ``radius`` [m] centred at ``pos``."""
        params = np.array([check.positive("radius", radius), 0.0, 0.0])
        return self._add_any_shape(
            ShapeType.SPHERE, body, pos, (0.0, 0.0, 0.0, 1.0), params, mu, density, (body_contact, particle_contact)
        )

    def add_shape_capsule(
        self,
        body: int,
        radius: float,
        half_height: float,
        *,
        pos=(0.0, 0.0, 0.0),
        rot=(0.0, 0.0, 0.0, 1.0),
        mu=0.5,
        density: float = 1000.0,
        body_contact: bool = True,
        particle_contact: bool = True,
    ) -> int:
        """Capsule: a segment of half length ``half_height`` along the local z axis swept by ``radius`` [m]."""
        params = np.array([check.positive("radius", radius), check.positive("half_height", half_height), 0.0])
        return self._add_any_shape(
            ShapeType.CAPSULE, body, pos, rot, params, mu, density, (body_contact, particle_contact)
        )

    def _add_any_shape(self, kind, body, pos, rot, params, mu, density, contact=(True, True)) -> int:
        pos = check.finite_vector("pos", pos)
        rot = check.unit_quaternion("rot", rot)
        if int(body) == -1:
            return self._add_shape(kind, pos, rot, params, mu)
        b = self._check_body_index("shape", body, allow_world=False)
        return self._add_body_shape(
            kind, b, pos, rot, params, _friction_pair(mu), check.positive("density", density), contact
        )

    def _add_shape(self, kind: ShapeType, pos, rot, params, mu) -> int:
        self.shape_type.append(int(kind))
        self.shape_pos.append(np.asarray(pos, dtype=np.float64))
        self.shape_rot.append(np.asarray(rot, dtype=np.float64))
        self.shape_params.append(np.asarray(params, dtype=np.float64))
        self.shape_mu.append(_friction_pair(mu))
        return self.shape_count - 1

    # ---------------------------------------------------------------- finalize
    def finalize(self, device: str = "cpu", worlds: int = 1, *, contact_capacity: int | None = None):
        """Copy to device arrays and replicate ``worlds`` times. Returns a :class:`~softsnake.sim.model.Model`.

        contact_capacity: particle–static-shape contact slots per world (the compact contact list, docs/solver.md);
        default every pair with one static shape, two per particle with more. A step that finds more contact candidates
        than slots raises :class:`~softsnake.sim.contact_list.ContactCapacityExceeded` with the number it needed."""
        from .model import Model

        if isinstance(worlds, bool) or int(worlds) != worlds or int(worlds) < 1:
            raise ValueError(f"worlds must be an integer ≥ 1, got {worlds!r}")
        if contact_capacity is not None and (
            isinstance(contact_capacity, bool) or int(contact_capacity) != contact_capacity or contact_capacity < 0
        ):
            raise ValueError(f"contact_capacity must be an integer ≥ 0, got {contact_capacity!r}")
        if self.particle_count == 0 and self.body_count == 0:
            raise ValueError("the model has no particles and no bodies")
        return Model.from_builder(self, device=device, worlds=int(worlds), contact_capacity=contact_capacity)
