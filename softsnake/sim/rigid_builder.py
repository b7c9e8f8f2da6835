"""Builder methods for rigid bodies, particle–body attachments and joints (mixed into ModelBuilder)."""

from __future__ import annotations

import numpy as np

from . import validate as check


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
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


def quat_conjugate(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


def perpendicular_pair(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing ``axis`` to a right-handed orthonormal frame."""
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    b1 = np.cross(axis, helper)
    b1 /= np.linalg.norm(b1)
    return b1, np.cross(axis, b1)


JOINT_REVOLUTE, JOINT_PRISMATIC, JOINT_FIXED = 0, 1, 2
DRIVE_FREE, DRIVE_MOTOR, DRIVE_SPRING = 0, 1, 2


class RigidBuilderMixin:
    """Rigid-body part of :class:`~softsnake.sim.builder.ModelBuilder`."""

    def _init_rigid(self):
        self.body_q: list[np.ndarray] = []  # (7,) position, quaternion xyzw
        self.body_qd: list[np.ndarray] = []  # (6,) linear, angular velocity
        self.body_mass: list[float] = []
        self.body_inertia: list[np.ndarray] = []
        self.attachments: list[tuple[int, int, np.ndarray, float]] = []
        self.joints: list[dict] = []
        self.body_shapes: list[dict] = []

    @property
    def body_count(self) -> int:
        return len(self.body_q)

    def add_body(
        self, pos, rot=(0.0, 0.0, 0.0, 1.0), mass=None, inertia=None, *, vel=(0.0, 0.0, 0.0), ang_vel=(0.0, 0.0, 0.0)
    ) -> int:
        """Rigid body at ``pos`` [m] with orientation ``rot`` (unit quaternion x, y, z, w).

        mass [kg] (0 → kinematic: moves only with its given velocity); inertia [kg m²] about the centre of mass in the
        body frame: three principal moments or a symmetric positive-definite 3×3 matrix. With mass = inertia = None both
        come from the body's shapes (their densities), about the body origin, which is taken as the centre of mass.
        vel [m/s], ang_vel [rad/s] (world frame)."""
        p = check.finite_vector("pos", pos)
        q = check.unit_quaternion("rot", rot)
        if (mass is None) != (inertia is None):
            raise ValueError("give both mass and inertia, or neither (then they come from the body's shapes)")
        if mass is None:
            self.body_q.append(np.concatenate([p, q]))
            self.body_qd.append(
                np.concatenate([check.finite_vector("vel", vel), check.finite_vector("ang_vel", ang_vel)])
            )
            self.body_mass.append(None)
            self.body_inertia.append(None)
            return self.body_count - 1
        m = check.non_negative(f"mass of body {self.body_count}", mass)
        inertia = np.asarray(inertia, dtype=np.float64)
        if inertia.shape == (3,):
            inertia = np.diag(inertia)
        if inertia.shape != (3, 3) or not np.all(np.isfinite(inertia)):
            raise ValueError(f"inertia of body {self.body_count} must be 3 principal moments or a finite 3x3 matrix")
        if not np.allclose(inertia, inertia.T, atol=1e-12 * max(1.0, np.abs(inertia).max())):
            raise ValueError(f"inertia of body {self.body_count} is not symmetric")
        if m > 0 and np.linalg.eigvalsh(inertia).min() <= 0:
            raise ValueError(f"inertia of body {self.body_count} is not positive definite")
        self.body_q.append(np.concatenate([p, q]))
        self.body_qd.append(np.concatenate([check.finite_vector("vel", vel), check.finite_vector("ang_vel", ang_vel)]))
        self.body_mass.append(m)
        self.body_inertia.append(inertia)
        return self.body_count - 1

    def _check_body_index(self, name: str, body: int, *, allow_world: bool) -> int:
        b = int(body)
        if b != body or b < (-1 if allow_world else 0) or b >= self.body_count:
            world = ", or -1 for the world" if allow_world else ""
            raise ValueError(f"{name}: unknown body index {body} (bodies: {self.body_count}{world})")
        return b

    def _body_frame(self, body: int) -> tuple[np.ndarray, np.ndarray]:
        if body < 0:
            return np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0])
        q = self.body_q[body]
        return q[:3], q[3:]

    def _add_body_shape(self, kind, body, pos, rot, params, mu, density, contact=(True, True, True)) -> int:
        """``contact``: (body_contact, particle_contact[, rim_contact]) as in ModelBuilder.add_shape_cylinder."""
        body_contact, particle_contact, rim_contact = (bool(c) for c in (*contact, True)[:3])
        self.body_shapes.append(
            dict(
                type=int(kind),
                body=body,
                pos=pos,
                rot=rot,
                params=np.asarray(params, dtype=np.float64),
                mu=mu,
                density=density,
                body_contact=body_contact,
                particle_contact=particle_contact,
                rim_contact=rim_contact,
            )
        )
        return len(self.body_shapes) - 1

    def resolved_body_mass_properties(self) -> tuple[list[float], list[np.ndarray]]:
        """Masses and inertias, filling bodies built without them from their shapes (parallel-axis theorem)."""
        masses, inertias = list(self.body_mass), list(self.body_inertia)
        for i in range(self.body_count):
            if masses[i] is not None:
                continue
            shapes = [s for s in self.body_shapes if s["body"] == i]
            if not shapes:
                raise ValueError(f"body {i} has neither mass/inertia nor shapes to compute them from")
            m, I = 0.0, np.zeros((3, 3))
            for s in shapes:
                ms, Is = shape_mass_properties(s["type"], s["params"], s["density"])
                R = quat_to_matrix(s["rot"])
                d = s["pos"]
                m += ms
                I += R @ Is @ R.T + ms * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
            masses[i], inertias[i] = m, I
        return masses, inertias

    def add_attachment(self, particle: int, body: int, compliance: float = 0.0) -> int:
        """Attach ``particle`` to ``body`` at its current relative position (paper Eq. 6); compliance [m/N]."""
        p = int(check.index_list("add_attachment particle", [particle], self.particle_count)[0])
        b = self._check_body_index("add_attachment", body, allow_world=False)
        pos, q = self._body_frame(b)
        offset = quat_to_matrix(q).T @ (self.particle_q[p] - pos)
        self.attachments.append((p, b, offset, check.non_negative("compliance", compliance)))
        return len(self.attachments) - 1

    def _add_joint(
        self, kind, parent, child, anchor, axis, *, target_velocity, stiffness, damping, rest, compliance
    ) -> int:
        pa = self._check_body_index("joint parent", parent, allow_world=True)
        ch = self._check_body_index("joint child", child, allow_world=False)
        if pa == ch:
            raise ValueError(f"a joint cannot connect body {ch} to itself")
        anchor = check.finite_vector("anchor", anchor)
        axis = check.finite_vector("axis", axis)
        if np.linalg.norm(axis) < 1e-9:
            raise ValueError("axis must be non-zero")
        axis = axis / np.linalg.norm(axis)
        if target_velocity is not None and stiffness:
            raise ValueError(
                "a joint drive is either a velocity motor (target_velocity) or a spring (stiffness), not both"
            )
        if target_velocity is not None:
            mode, target, drive_compliance, beta = (
                DRIVE_MOTOR,
                float(target_velocity),
                0.0,
                check.non_negative("damping", damping),
            )
            if not np.isfinite(target):
                raise ValueError(f"target_velocity must be finite, got {target_velocity!r}")
        elif stiffness:
            k = check.positive("stiffness", stiffness)
            mode, target, drive_compliance, beta = (
                DRIVE_SPRING,
                float(rest),
                1.0 / k,
                check.non_negative("damping", damping) / k,
            )
        else:
            mode, target, drive_compliance, beta = DRIVE_FREE, 0.0, 0.0, 0.0
        pp, pq = self._body_frame(pa)
        cp, cq = self._body_frame(ch)
        Rp, Rc = quat_to_matrix(pq), quat_to_matrix(cq)
        axis_p = Rp.T @ axis
        b1, b2 = perpendicular_pair(axis_p)
        self.joints.append(
            dict(
                type=kind,
                parent=pa,
                child=ch,
                anchor_parent=Rp.T @ (anchor - pp),
                anchor_child=Rc.T @ (anchor - cp),
                axis_parent=axis_p,
                axis_child=Rc.T @ axis,
                perp1=b1,
                perp2=b2,
                rest_rotation=quat_multiply(quat_conjugate(pq), cq),
                rest_slide=0.0,
                compliance=check.non_negative("compliance", compliance),
                drive_mode=mode,
                drive_target=target,
                drive_compliance=drive_compliance,
                drive_damping=beta,
            )
        )
        return len(self.joints) - 1

    def add_joint_revolute(
        self,
        parent: int,
        child: int,
        anchor,
        axis,
        *,
        target_velocity=None,
        stiffness: float = 0.0,
        damping: float = 0.0,
        rest_angle: float = 0.0,
        compliance: float = 0.0,
    ) -> int:
        """Hinge between ``parent`` (−1: world) and ``child`` through ``anchor`` [m] about ``axis`` (world frame at
        build).

        Optional drive on the hinge angle: a velocity motor (``target_velocity`` [rad/s]) or a spring (``stiffness``
        [N m/rad], ``damping`` [N m s/rad], ``rest_angle`` [rad] from the built pose). A motor with ``damping`` > 0 is
        a viscous servo, torque = damping·(target − ω); ``target_velocity=0`` with damping is bearing friction.
        compliance: of the 5 locked rows."""
        return self._add_joint(
            JOINT_REVOLUTE,
            parent,
            child,
            anchor,
            axis,
            target_velocity=target_velocity,
            stiffness=stiffness,
            damping=damping,
            rest=rest_angle,
            compliance=compliance,
        )

    def add_joint_prismatic(
        self,
        parent: int,
        child: int,
        anchor,
        axis,
        *,
        target_velocity=None,
        stiffness: float = 0.0,
        damping: float = 0.0,
        rest_slide: float = 0.0,
        compliance: float = 0.0,
    ) -> int:
        """Slider along ``axis`` (world frame at build) through ``anchor`` [m]; drive: motor [m/s] or spring [N/m]."""
        return self._add_joint(
            JOINT_PRISMATIC,
            parent,
            child,
            anchor,
            axis,
            target_velocity=target_velocity,
            stiffness=stiffness,
            damping=damping,
            rest=rest_slide,
            compliance=compliance,
        )

    def add_joint_fixed(self, parent: int, child: int, anchor=None, *, compliance: float = 0.0) -> int:
        """Weld ``child`` to ``parent`` (−1: world) at ``anchor`` [m] (default: the child's position)."""
        ch = self._check_body_index("joint child", child, allow_world=False)
        if anchor is None:
            anchor = self.body_q[ch][:3]
        return self._add_joint(
            JOINT_FIXED,
            parent,
            child,
            anchor,
            (0.0, 0.0, 1.0),
            target_velocity=None,
            stiffness=0.0,
            damping=0.0,
            rest=0.0,
            compliance=compliance,
        )


def shape_mass_properties(kind: int, params: np.ndarray, density: float) -> tuple[float, np.ndarray]:
    """Mass [kg] and inertia about the shape's centre in its own frame [kg m²] (solid shapes, axis = local z)."""
    if kind == 1:  # box
        hx, hy, hz = params
        m = density * 8 * hx * hy * hz
        return m, m / 3 * np.diag([hy * hy + hz * hz, hx * hx + hz * hz, hx * hx + hy * hy])
    if kind == 3:  # sphere
        r = params[0]
        m = density * 4 / 3 * np.pi * r**3
        return m, np.eye(3) * 0.4 * m * r * r
    r, hh = params[0], params[1]
    mc = density * np.pi * r * r * 2 * hh
    Ic = np.diag([mc * (3 * r * r + 4 * hh * hh) / 12, mc * (3 * r * r + 4 * hh * hh) / 12, mc * r * r / 2])
    if kind == 2:  # cylinder
        return mc, Ic
    # capsule: cylinder + two hemispheres (parallel axis to their centroids, 3r/8 from the flat faces)
    ms = density * 4 / 3 * np.pi * r**3
    d = hh + 3 * r / 8
    Is_axis = 0.4 * ms * r * r
    Is_perp = 0.4 * ms * r * r - ms * (3 * r / 8) ** 2 + ms * d * d
    return mc + ms, Ic + np.diag([Is_perp, Is_perp, Is_axis])


def body_shape_features(shape: dict) -> list[tuple[np.ndarray, np.ndarray, float, int]]:
    """Contact features of a body shape in the body frame: (point, axis, radius, kind); kind 0 = point with radius,
    kind 1 = cylinder cap whose deepest rim point is found per contact (point = cap centre, axis = cylinder axis),
    kind 2 = cylinder rim sample, used only against surfaces facing the cap (it would duplicate the kind-1 point when
    the cylinder lies on its side, and duplicated contact points let the friction cone split arbitrarily: creep)."""
    R = quat_to_matrix(shape["rot"])
    c = shape["pos"]
    kind, p = shape["type"], shape["params"]
    z = R[:, 2]
    if kind == 3:
        return [(c, z, p[0], 0)]
    if kind == 4:
        return [(c + s * p[1] * z, z, p[0], 0) for s in (-1, 1)]
    if kind == 1:
        # corners rounded by 5% of the smallest half extent: an inset point with that radius keeps the box surface but
        # gives aligned stacked boxes a well-defined face normal where corners meet (point-vs-box is ambiguous there)
        rho = 0.05 * float(np.min(p))
        corners = np.array(np.meshgrid([-1, 1], [-1, 1], [-1, 1])).T.reshape(-1, 3)
        return [(c + R @ (s * (p - rho)), z, rho, 0) for s in corners]
    # cylinder: two cap supports (exact rolling) + 8 rim samples per cap (stable standing on a cap, see kind 2; left
    # out with rim_contact=False)
    feats = [(c + s * p[1] * z, z, p[0], 1) for s in (-1, 1)]
    for s in (-1, 1) if shape.get("rim_contact", True) else ():
        for a in np.linspace(0, 2 * np.pi, 8, endpoint=False):
            feats.append((c + R @ np.array([p[0] * np.cos(a), p[0] * np.sin(a), s * p[1]]), z, 0.0, 2))
    return feats
