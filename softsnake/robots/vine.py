"""Planar soft growing (vine) robots as chains of rigid bodies: config, presets and the builder.

Two published models, both built from the engine's parts (bodies, revolute joints about z, prismatic joints with a
velocity motor for growth, spheres for contact, :class:`~softsnake.sim.HingeTorques` for the bending moment):

- ``jitosho`` (Jitosho et al. 2021, "A dynamics simulator for soft growing robots"): every link is two bodies joined
  by a prismatic joint that grows at the commanded rate (Sec. II-E), links are joined by pin joints, the first body is
  pinned to the origin; one contact sphere of the tube radius at the distal end of each link's second body (Sec. II-D);
  linear torsional spring-damper at every pin joint, explicit in the step (Eq. 7–9).
- ``chen`` (Chen et al. 2025, "Physics-grounded differentiable simulation for soft growing robots"): fixed-length links,
  only the distal link grows (g_distal), a new link starts when it reaches full length; ``links`` is the maximum
  link count (fixed array sizes). Not-yet-grown links are collapsed to zero length at the tip (their prismatic
  joint is at its lower end, slide = −2d, and locked by a zero-rate motor) and are released one by one. Bending:
  ``linear``, ``wrinkling`` (Comer–Levy moment with ε_crit, linear below the onset; Chen Eqs. 1–2), ``mlp`` or a
  user callable.

Planar: bodies stay in the x–y plane because every joint is a hinge about z or a slider in the plane; there is no
gravity in the vine scenes (the robot lies on a table). Contact is frictionless (μ = 0) as in both originals.
Obstacles: :func:`add_rectangles`, :func:`add_circles`, :func:`add_wall_segments` (static boxes / cylinders).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from softsnake.io.toml_files import read_toml

#: half height [m] of the static obstacle prisms along z (the vine lies in z = 0)
OBSTACLE_HALF_HEIGHT = 0.1

BENDING_LAWS = ("linear", "wrinkling", "mlp")


@dataclass
class VineConfig:
    """Vine robot model (SI units). Use :meth:`preset` for the published settings.

    preset: "jitosho" or "chen" (topology and growth scheme, see the module docstring).
    links: number of links (jitosho) or maximum number of links (chen).
    half_length: d [m], half the length of each body (jitosho: the initial link length is 4d; chen: link_length/4).
    link_length: chen full link length d_segment [m] (ignored by jitosho).
    initial_links: chen links fully grown at t = 0 (the rest are collapsed at the tip).
    radius: tube radius [m] (radius of the contact spheres).
    mass [kg], inertia [kg m²] (about z) of every body.
    heading: launch angle θ0 [rad] from the x axis; base at ``origin`` (x, y) [m].
    growth_rate: jitosho: rate of every prismatic joint [m/s]; chen: tip growth rate g_distal [m/s].
    bending: "linear", "wrinkling" or "mlp" (hinge moment law); stiffness [N m/rad] and damping [N m s/rad] of the
    torsion springs; m_full = π·P·R³ [N m] and eps_crit for wrinkling (or pressure [Pa] with eps_poly: ε_crit(P) =
    Σ eps_poly[i]·(P/1 kPa)^i); mlp_params (31 numbers: w1[10], b1[10], w2[10], b2) for "mlp".
    base_spring: spring-damper at the base pin too (rest angle = heading).
    mu: friction coefficient of the contacts (0 in both originals).
    dt [s], newton_iterations, linear_iterations, warm_start: the step and the solver budget used with this model.
    """

    preset: str = "jitosho"
    links: int = 25
    half_length: float = 3.0e-3
    link_length: float = 0.0
    initial_links: int = 1
    radius: float = 7.5e-3
    mass: float = 0.002
    inertia: float = 5.0e-6
    heading: float = math.radians(-52.0)
    origin: tuple = (0.0, 0.0)
    growth_rate: float = 8.2e-3
    bending: str = "linear"
    stiffness: float = 0.03
    damping: float = 1.0e-5
    m_full: float = 0.0
    eps_crit: float = 0.1
    pressure: float = 0.0
    eps_poly: tuple = ()
    mlp_params: tuple = ()
    base_spring: bool = True
    mu: float = 0.0
    dt: float = 1.0 / 90.0
    newton_iterations: int = 4
    linear_iterations: int = 50
    warm_start: float = 1.0

    def __post_init__(self):
        self.validate()

    @classmethod
    def preset_config(cls, name: str, **overrides) -> "VineConfig":
        """The documented preset ``name`` ("jitosho" or "chen") with ``overrides``."""
        if name not in PRESETS:
            raise ValueError(f"unknown vine preset {name!r} (choose {', '.join(PRESETS)})")
        base = dict(PRESETS[name])
        unknown = sorted(set(overrides) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise ValueError(f"unknown VineConfig field(s): {', '.join(unknown)}")
        base.update(overrides)
        return cls(**base)

    @classmethod
    def from_toml(cls, path, **overrides) -> "VineConfig":
        """Read a ``[vine]`` table (or top-level keys): ``preset`` picks the defaults, the other keys override them.
        A key that is not a VineConfig field raises ValueError naming the file and the key."""
        data = read_toml(path, "vine config")
        table = dict(data.get("vine", data))
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(table) - known)
        if unknown:
            where = "[vine] table" if "vine" in data else "top level"
            raise ValueError(
                f"unknown vine setting(s) in {str(path)!r} ({where}): {', '.join(unknown)} (VineConfig fields: "
                f"{', '.join(sorted(known))})"
            )
        table.update(overrides)
        name = table.pop("preset", "jitosho")
        for k in ("origin", "eps_poly", "mlp_params"):
            if k in table:
                table[k] = tuple(table[k])
        return cls.preset_config(name, **table)

    def to_dict(self) -> dict:
        return {
            f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in dataclasses.fields(self)
        }

    def validate(self) -> None:
        if self.preset not in PRESETS:
            raise ValueError(f"unknown vine preset {self.preset!r} (choose {', '.join(PRESETS)})")
        if isinstance(self.links, bool) or int(self.links) != self.links or self.links < 1:
            raise ValueError(f"links must be an integer ≥ 1, got {self.links!r}")
        self.links = int(self.links)
        for name in ("half_length", "radius", "mass", "inertia", "dt"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        for name in ("growth_rate", "stiffness", "damping", "m_full", "mu", "pressure", "warm_start"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
            if v < 0:
                what = "growth (retraction is not modelled)" if name == "growth_rate" else name
                raise ValueError(f"negative {what}: {name} = {v!r}")
        if not (math.isfinite(self.heading)):
            raise ValueError(f"heading must be finite, got {self.heading!r}")
        if len(self.origin) != 2 or not all(math.isfinite(float(c)) for c in self.origin):
            raise ValueError(f"origin must be two finite numbers (x, y), got {self.origin!r}")
        if not callable(self.bending) and self.bending not in BENDING_LAWS:
            raise ValueError(f"unknown bending model {self.bending!r} (choose {', '.join(BENDING_LAWS)} or a callable)")
        if self.bending == "wrinkling" and not (0.0 < self.effective_eps_crit() < 1.0):
            raise ValueError(f"eps_crit must be in (0, 1), got {self.effective_eps_crit()!r}")
        if self.bending == "mlp" and len(self.mlp_params) not in (0, 31):
            raise ValueError(
                f"mlp_params must have 31 numbers (w1[10], b1[10], w2[10], b2), got {len(self.mlp_params)}"
            )
        for name in ("newton_iterations", "linear_iterations"):
            v = getattr(self, name)
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ValueError(f"{name} must be an integer ≥ 1, got {v!r}")
        k0 = self.small_angle_stiffness()
        if k0 is not None and k0 * self.dt**2 / self.inertia > EXPLICIT_BENDING_LIMIT:
            raise ValueError(
                f"the explicit bending step is unstable with these settings: small-angle stiffness × dt² / inertia = "
                f"{k0:.3g} × {self.dt:.3g}² / {self.inertia:.3g} = {k0 * self.dt**2 / self.inertia:.3g} (stable below "
                "~1; "
                f"{EXPLICIT_BENDING_LIMIT:g} is the single-hinge limit): raise inertia, or lower dt or the stiffness"
            )
        if self.preset == "chen":
            if not (math.isfinite(self.link_length) and self.link_length > 0):
                raise ValueError(f"chen preset needs link_length > 0 [m], got {self.link_length!r}")
            if (
                isinstance(self.initial_links, bool)
                or int(self.initial_links) != self.initial_links
                or not (1 <= self.initial_links <= self.links)
            ):
                raise ValueError(
                    f"initial_links must be an integer in [1, links={self.links}], got {self.initial_links!r}"
                )

    # ----------------------------------------------------------------- derived
    @property
    def body_half_length(self) -> float:
        """d [m] of each body (chen: a quarter of the link length, so a full link is two abutting bodies)."""
        return self.link_length / 4.0 if self.preset == "chen" else self.half_length

    def small_angle_stiffness(self) -> float | None:
        """k0 [N m/rad]: the hinge law's stiffness at θ = 0, the largest tangent stiffness of the linear and wrinkling
        laws (wrinkling: m_full/(4·asin ε_crit), from M(θ) = m_full·θ/(4·asin ε_crit) below the onset); None for the
        MLP and callable laws, whose stiffness is not known in advance."""
        if self.bending == "linear":
            return float(self.stiffness)
        if self.bending == "wrinkling":
            return self.effective_m_full() / (4.0 * math.asin(self.effective_eps_crit()))
        return None

    def effective_eps_crit(self) -> float:
        if self.eps_poly:
            x = self.pressure / 1000.0
            return float(sum(c * x**i for i, c in enumerate(self.eps_poly)))
        return float(self.eps_crit)

    def effective_m_full(self) -> float:
        """π·P·R³ [N m] (from pressure when m_full is 0)."""
        return float(self.m_full) if self.m_full > 0 else math.pi * self.pressure * self.radius**3

    def bending_params(self) -> np.ndarray:
        """Per-world parameter vector of the hinge law (see softsnake.sim.hinge_torques.LAWS)."""
        if callable(self.bending):
            return np.array([self.stiffness, self.damping])
        if self.bending == "linear":
            return np.array([self.stiffness, self.damping])
        if self.bending == "wrinkling":
            return np.array([self.effective_m_full(), self.effective_eps_crit(), self.damping])
        mlp = np.asarray(self.mlp_params, dtype=np.float64) if self.mlp_params else default_mlp_params(self.stiffness)
        return np.concatenate([[self.damping], mlp])


def default_mlp_params(stiffness: float) -> np.ndarray:
    """MLP weights whose odd part starts as the linear spring k·θ for small θ (w1 = 1, b1 = 0, w2 = k/10)."""
    w1 = np.linspace(0.5, 1.5, 10)
    return np.concatenate([w1, np.zeros(10), stiffness / w1.sum() * np.ones(10), [0.0]])


#: k0·Δt²/I above which the explicit bending step diverges even for a single hinge (symplectic Euler: ω·Δt < 2); a
#: chain of hinges needs less (the video fits keep ≤ 0.3), so this only rejects settings that cannot run
EXPLICIT_BENDING_LIMIT = 4.0

PRESETS: dict[str, dict] = {
    # Julia reference settings (assets/vine/README.md) converted from the original mm-based units to SI (mass unit
    # kept): lengths × 1e-3; inertia 5 → 5e-6 kg m², K = 30000 → 0.03 N m/rad, C = 10 → 1e-5 N m s/rad (mm² → m²); mass
    # 0.002 kg;
    # 25 links, θ0 = −52°, tube diameter 15 mm, Δt = 1/90 s, growth 205/25 mm/s per prismatic joint.
    "jitosho": dict(
        preset="jitosho",
        links=25,
        half_length=3.0e-3,
        radius=7.5e-3,
        mass=0.002,
        inertia=5.0e-6,
        heading=math.radians(-52.0),
        growth_rate=8.2e-3,
        bending="linear",
        stiffness=0.03,
        damping=1.0e-5,
        dt=1.0 / 90.0,
        newton_iterations=4,
        linear_iterations=50,
        warm_start=1.0,
    ),
    # Chen et al. 2025: 67 mm LDPE tube (R = 33.5 mm), link length = tube diameter (sphere diameter = d_segment),
    # 40 maximum links (their Fig. 1); masses of a 2-mil LDPE tube (≈0.65 g per link, split over two bodies);
    # wrinkling bending with m_full = π·P·R³ at P = 2 kPa and ε_crit = 0.1 as starting values (fit them to data).
    # Inertia: an effective value, as in the original, which fits it: the bending step is explicit, and the tube's own
    # 1e-7 kg m² would make it unstable (k0·Δt²/I ≈ 2000 with the small-angle stiffness k0 = 0.59 N m/rad); 2.2e-3 kg m²
    # puts it at k0·Δt²/I = 0.3, the margin the video fits use (docs/vine.md, "Stability bound").
    "chen": dict(
        preset="chen",
        links=40,
        link_length=0.067,
        half_length=0.067 / 4,
        initial_links=1,
        radius=0.0335,
        mass=3.3e-4,
        inertia=2.2e-3,
        heading=math.radians(-90.0),
        growth_rate=0.05,
        bending="wrinkling",
        stiffness=0.05,
        damping=1.0e-4,
        m_full=0.0,
        pressure=2000.0,
        eps_crit=0.1,
        dt=1.0 / 30.0,
        newton_iterations=4,
        linear_iterations=50,
        warm_start=1.0,
    ),
}


@dataclass
class VineHandle:
    """What :func:`build_vine` added: body ids (base → tip, two per link), joints, hinges and contact shapes."""

    config: VineConfig
    bodies: np.ndarray  # (2·links,) body ids
    prismatic: np.ndarray  # (links,) joint ids of the growing sliders
    pins: np.ndarray  # (links,) joint ids: base pin, then link k−1 → k
    hinges: list  # (parent, child) body pairs of the bending springs (base first when base_spring)
    contact_shapes: np.ndarray  # (links,) body-shape ids of the contact spheres
    origin: np.ndarray = field(default_factory=lambda: np.zeros(2))
    heading: float = 0.0
    initial_slide: np.ndarray = field(default_factory=lambda: np.zeros(0))  # centre distance a_k→b_k at t = 0 [m]

    @property
    def link_count(self) -> int:
        return len(self.prismatic)


def _rot_z(theta: float) -> tuple:
    return (0.0, 0.0, math.sin(theta / 2.0), math.cos(theta / 2.0))


def build_vine(
    builder, config: VineConfig, *, origin=None, heading: float | None = None, link_angles=None, link_lengths=None
) -> VineHandle:
    """Add a vine robot to ``builder`` (a :class:`~softsnake.sim.ModelBuilder` with zero gravity).

    origin (x, y) [m] and heading [rad] default to the config's. link_angles (links,) [rad] and link_lengths (links,)
    [m] optionally give a bent/grown initial shape (jitosho: length of each link = 2d + centre distance of its two
    bodies; chen: every link is then taken as grown). Returns a :class:`VineHandle`; the bending springs are not
    engine rows: attach them with :class:`~softsnake.sim.HingeTorques` over ``handle.hinges`` (VineSim does)."""
    if not isinstance(config, VineConfig):
        raise TypeError("config must be a VineConfig")
    config.validate()
    o = np.asarray(config.origin if origin is None else origin, dtype=np.float64)
    if o.shape != (2,) or not np.all(np.isfinite(o)):
        raise ValueError(f"origin must be two finite numbers, got {origin!r}")
    th0 = float(config.heading if heading is None else heading)
    if not math.isfinite(th0):
        raise ValueError(f"heading must be finite, got {heading!r}")
    L = config.links
    d = config.body_half_length
    if link_angles is None:
        angles = np.full(L, th0)
    else:
        angles = np.asarray(link_angles, dtype=np.float64)
        if angles.shape != (L,) or not np.all(np.isfinite(angles)):
            raise ValueError(f"link_angles must be {L} finite angles")
    if config.preset == "chen":
        full = 4.0 * d
        if link_lengths is None:
            lengths = np.where(np.arange(L) < config.initial_links, full, 0.0)
        else:
            lengths = np.asarray(link_lengths, dtype=np.float64)
        slides = lengths - 2.0 * d  # chen: collapsed link = −2d, full link = +2d
    else:
        lengths = np.full(L, 4.0 * d) if link_lengths is None else np.asarray(link_lengths, dtype=np.float64)
        slides = lengths - 2.0 * d
    if (
        lengths.shape != (L,)
        or not np.all(np.isfinite(lengths))
        or np.any(lengths < (0.0 if config.preset == "chen" else 2.0 * d))
    ):
        raise ValueError(f"link_lengths must be {L} finite lengths ≥ {'0' if config.preset == 'chen' else '2d'} [m]")
    m, I = config.mass, config.inertia
    inertia = (I, I, I)
    z = (0.0, 0.0, 1.0)
    bodies, prism, pins, shapes = [], [], [], []
    start = np.array([o[0], o[1], 0.0])
    for k in range(L):
        u = np.array([math.cos(angles[k]), math.sin(angles[k]), 0.0])
        rot = _rot_z(angles[k])
        a = builder.add_body(start + d * u, rot, mass=m, inertia=inertia)
        b = builder.add_body(start + (d + slides[k]) * u, rot, mass=m, inertia=inertia)
        prev = -1 if k == 0 else bodies[-1]
        pins.append(builder.add_joint_revolute(prev, a, start, z))
        rate = config.growth_rate if (config.preset == "jitosho" or k == _first_growing(config, lengths)) else 0.0
        prism.append(builder.add_joint_prismatic(a, b, start + d * u, u, target_velocity=rate))
        shapes.append(
            builder.add_shape_sphere(
                b, config.radius, pos=(d, 0.0, 0.0), mu=config.mu, body_contact=False, particle_contact=False
            )
        )
        bodies += [a, b]
        start = start + lengths[k] * u
    hinges = ([(-1, bodies[0])] if config.base_spring else []) + [
        (bodies[2 * k - 1], bodies[2 * k]) for k in range(1, L)
    ]
    return VineHandle(
        config,
        np.asarray(bodies),
        np.asarray(prism),
        np.asarray(pins),
        hinges,
        np.asarray(shapes),
        o,
        th0,
        slides.copy(),
    )


def _first_growing(config: VineConfig, lengths: np.ndarray) -> int:
    """chen: index of the link that grows first (the first one not at full length)."""
    not_full = np.nonzero(lengths < 4.0 * config.body_half_length - 1e-12)[0]
    return int(not_full[0]) if len(not_full) else -1


# ------------------------------------------------------------------ obstacles
def _check_rows(name: str, arr, width: int) -> np.ndarray:
    a = np.asarray(arr, dtype=np.float64)
    if a.size == 0:
        return a.reshape(0, width)
    if a.ndim == 1 and a.size == width:
        a = a.reshape(1, width)
    if a.ndim != 2 or a.shape[1] != width or not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite rows of {width} numbers, got shape {np.shape(arr)}")
    return a


def add_rectangles(builder, rects, *, mu: float = 0.0) -> list[int]:
    """Static axis-aligned rectangles, rows (x, y, w, h) [m]: lower-left corner, width, height (w, h > 0)."""
    r = _check_rows("rectangles", rects, 4)
    if np.any(r[:, 2:] <= 0):
        bad = int(np.nonzero(np.any(r[:, 2:] <= 0, axis=1))[0][0])
        raise ValueError(f"rectangle {bad} has non-positive width or height: {r[bad].tolist()}")
    return [
        builder.add_shape_box(-1, (w / 2, h / 2, OBSTACLE_HALF_HEIGHT), pos=(x + w / 2, y + h / 2, 0.0), mu=mu)
        for x, y, w, h in r
    ]


def add_rotated_rectangle(builder, center, width: float, height: float, angle: float, *, mu: float = 0.0) -> int:
    """Static rectangle of ``width`` (along its local y) × ``height`` (along its local x) [m] centred at ``center``,
    rotated by ``angle`` [rad] (the wall of the Jitosho wall-growth experiment)."""
    if not (width > 0 and height > 0):
        raise ValueError(f"rectangle width and height must be > 0, got {width}, {height}")
    return builder.add_shape_box(
        -1, (height / 2, width / 2, OBSTACLE_HALF_HEIGHT), pos=(center[0], center[1], 0.0), rot=_rot_z(angle), mu=mu
    )


def add_circles(builder, circles, *, mu: float = 0.0) -> list[int]:
    """Static circles, rows (x, y, r) [m] (cylinders along z)."""
    c = _check_rows("circles", circles, 3)
    if np.any(c[:, 2] <= 0):
        raise ValueError(f"circle radius must be > 0, got {c[:, 2].tolist()}")
    return [builder.add_shape_cylinder(-1, r, OBSTACLE_HALF_HEIGHT, pos=(x, y, 0.0), mu=mu) for x, y, r in c]


def add_wall_segments(builder, segments, *, thickness: float, mu: float = 0.0) -> list[int]:
    """Static line-segment walls ((x1, y1), (x2, y2)) [m] as thin boxes of ``thickness`` centred on the segment
    (the wall faces are thickness/2 from the line; the ends are flat)."""
    s = _check_rows(
        "wall segments", np.asarray(segments, dtype=np.float64).reshape(-1, 4) if np.size(segments) else [], 4
    )
    if not thickness > 0:
        raise ValueError(f"wall thickness must be > 0, got {thickness!r}")
    ids = []
    for k, (x1, y1, x2, y2) in enumerate(s):
        length = math.hypot(x2 - x1, y2 - y1)
        if length <= 0:
            raise ValueError(f"wall segment {k} has zero length: {[x1, y1, x2, y2]}")
        ang = math.atan2(y2 - y1, x2 - x1)
        ids.append(
            builder.add_shape_box(
                -1,
                (length / 2, thickness / 2, OBSTACLE_HALF_HEIGHT),
                pos=((x1 + x2) / 2, (y1 + y2) / 2, 0.0),
                rot=_rot_z(ang),
                mu=mu,
            )
        )
    return ids


def planar_poses(body_q: np.ndarray) -> np.ndarray:
    """(…, 7) body poses → (…, 3) planar (x, y, θ) [m, m, rad] (rotation about z)."""
    q = np.asarray(body_q, dtype=np.float64)
    th = 2.0 * np.arctan2(q[..., 5], q[..., 6])
    return np.stack([q[..., 0], q[..., 1], (th + np.pi) % (2 * np.pi) - np.pi], axis=-1)
