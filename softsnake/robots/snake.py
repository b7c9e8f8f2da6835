"""The pneumatic soft snake of Gasoto et al. 2019 (Sec. III, V): configuration and model assembly.

Four soft Ecoflex links (tet meshes with two chambers, :mod:`softsnake.robots.snake_link`) joined by five rigid
carriages
through particle attachments; each carriage rides on two passive wheels (revolute joints), which give the anisotropic
ground friction of a real snake's scales (rolls along the body, grips sideways). Counts for the defaults: 15 bodies,
1300 particles, 1316 distance constraints, 4608 tets, 10 joints, 200 attachments (paper Table I: 15, 1504, 1460, 4536,
10, 217; see :func:`snake_counts`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from softsnake.io.toml_files import read_toml
from softsnake.sim import ModelBuilder, SolverConfig

from .pneumatics import PneumaticsConfig
from .snake_link import LinkMesh, link_mesh

#: paper Table I, one snake
PAPER_TABLE_I = dict(bodies=15, particles=1504, distance_constraints=1460, tets=4536, joints=10, attachments=217)


@dataclass
class SnakeConfig:
    """Every parameter of the simulated snake, with its source. Lengths [m], masses [kg], moduli [Pa], time [s].

    Dimensions are not in the paper: they are chosen for the published robot family (a 4-module pneumatic snake about
    0.5 m long, links of about 40 mm diameter) and documented in docs/snake.md.
    """

    links: int = 4  # paper Sec. V-A
    link_length: float = 0.09  # soft link between the caps
    link_radius: float = 0.02  # 40 mm diameter
    sections: int = 13  # cross-sections per link (paper Sec. V)
    inner_ring: int = 8  # particles on the inner ring of a cross-section (outer ring: twice as many)
    #: Ecoflex 00-30 Young's modulus (paper Sec. V)
    youngs_modulus: float = 66243.0
    #: the paper's 0.4999 locks linear tets (docs/formulation.md, "Locking"): 0.45 keeps the link bendable with the
    #: same Y
    poisson_ratio: float = 0.45
    density: float = 1070.0  # Ecoflex 00-30 [kg/m³]
    #: strain-rate damping time constant β of the tets [s] (silicone internal damping)
    material_damping: float = 0.005
    #: chamber cross-section area A_c [m²] (≈ 12 mm chamber diameter): the actuation constraints of one chamber have a
    #: combined stiffness A_c·Y over one segment, so a blocked chamber at pressure p pushes with p·A_c (Eq. 4)
    chamber_area: float = 1.13e-4
    #: the two chambers are air, not rubber: the link's tets get the density and the bending stiffness of the hollow
    #: section (chambers of area A_c with their axes at half the link radius, walls of equal thickness to the centre
    #: layer and to the surface): ρ × (1 − 2A_c/πR²) and Young's modulus × I_hollow/I_solid, the second moments of area
    #: about the inextensible centre plane (``link_material``; 0.820 and 0.804 for the defaults). The mesh itself stays
    #: solid (paper Sec. V) and the actuation lines keep the material's Y (Eq. 4). False: tets of the solid material
    chamber_voids: bool = True
    carriage_length: float = 0.035  # rigid cap pair + electronics plate, along the body
    carriage_width: float = 0.05
    carriage_height: float = 0.04
    carriage_mass: float = 0.05
    wheel_radius: float = 0.03  # the axle height: keeps the soft links 10 mm above the ground
    wheel_width: float = 0.01
    #: viscous loss of each wheel hinge [N m s/rad] (bearing and rolling resistance; a wheel rolling at ω loses
    #: wheel_damping·ω² of power). Documented estimate (docs/snake.md): rolling resistance of a hard plastic wheel on a
    #: hard floor, C_rr ≈ 0.005, at ~1 N per wheel and r = 0.03 m is 1.5e-4 N m, i.e. 3e-5 N m s/rad at the ~5 rad/s
    #: the wheels turn at in the gait (ball-bearing losses neglected). 0: free wheels.
    wheel_damping: float = 3.0e-5
    #: distance between the two wheel centres of a carriage: with half-track/axle height = 1.7 > μ a carriage slides
    #: sideways before it can tip over (a 64 mm track let the tail whip the snake onto its side)
    wheel_track: float = 0.10
    #: a solid ABS wheel of this size (ρ ≈ 1050 kg/m³) is 30 g; much lighter wheels on their hinges make the contact
    #: problem ill-conditioned at h = 1/120 s (10 g wheels: the gait diverged within 1 s)
    wheel_mass: float = 0.03
    #: friction coefficient of every contact (paper Sec. VI: μ = 1)
    mu: float = 1.0
    #: particle–ground contact slots per snake as a fraction of its particles (the compact contact list,
    #: docs/solver.md):
    #: the links ride ~10 mm above the ground on the wheels, and in the gait at most 52 of the 1300 particles come
    #: within
    #: the contact margin, so a quarter leaves a wide reserve and removes three quarters of the idle contact rows; a
    #: step
    #: that needs more raises ContactCapacityExceeded (1: a slot for every particle)
    contact_slot_fraction: float = 0.25
    #: keep the redundant hard rows of each link (``LinkMesh.hard_pairs``: the perimeter rows inside the two end
    #: sections, which the carriages hold rigid, and the three inner layer fibres' last rows): a null space of the
    #: multiplier system whose self-stress the equilibrium does not determine; for replaying recordings of a model that
    #: had them (tests/data/recorded_snake_step.npz)
    attached_section_rows: bool = False
    #: give the wheels the rim samples that let a cylinder stand on a cap (ModelBuilder.add_shape_cylinder's
    #: rim_contact): an upright wheel never uses them, and leaving them out removes 160 of the snake's 220 rigid-body
    #: contact slots (480 rows of every linear solve) and changes no step; checkpoints written before this option
    #: existed had them (SnakeSim.load restores them for such files)
    wheel_rim_contacts: bool = False
    #: control step [s]: one frame of ``substeps`` solver steps; the paper's h = 0.0083 s = 1/120 s, 2 per 1/60 s frame
    frame_dt: float = 1.0 / 60.0
    substeps: int = 2
    pneumatics: PneumaticsConfig = field(default_factory=PneumaticsConfig)
    #: solver settings; the link's coarse grid has 8 cells along the link (one per ~1.5 cross-sections) instead of the
    #: engine's default 4, which brings the held link and the coarse snake's gait closer to a converged solve for ~10 %
    #: more time (docs/snake.md)
    solver: SolverConfig = field(default_factory=lambda: SolverConfig(coarse_cells=8, coarse_cell_edges=1.0))

    def __post_init__(self):
        for name in (
            "link_length",
            "link_radius",
            "youngs_modulus",
            "density",
            "chamber_area",
            "carriage_length",
            "carriage_width",
            "carriage_height",
            "carriage_mass",
            "wheel_radius",
            "wheel_width",
            "wheel_track",
            "wheel_mass",
            "frame_dt",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise ValueError(f"SnakeConfig.{name} must be a finite number > 0, got {v!r}")
        for name in ("material_damping", "mu", "wheel_damping"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise ValueError(f"SnakeConfig.{name} must be a finite number ≥ 0, got {v!r}")
        for name in ("attached_section_rows", "chamber_voids", "wheel_rim_contacts"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"SnakeConfig.{name} must be true or false, got {getattr(self, name)!r}")
        if self.chamber_voids and self.chamber_area >= math.pi * self.link_radius**2 / 4:
            raise ValueError(
                f"SnakeConfig.chamber_area {self.chamber_area!r} m² leaves no wall: with chamber_voids a chamber's "
                f"diameter must be below the link radius (area < πR²/4 = {math.pi * self.link_radius**2 / 4:.4g} "
                "m²)"
            )
        f = self.contact_slot_fraction
        if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0.0 < f <= 1.0:
            raise ValueError(f"SnakeConfig.contact_slot_fraction must be a number in (0, 1], got {f!r}")
        for name, low in (("links", 1), ("sections", 2), ("substeps", 1), ("inner_ring", 4)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"SnakeConfig.{name} must be an integer ≥ {low}, got {v!r}")
        if not -1.0 < self.poisson_ratio < 0.5:
            raise ValueError(f"SnakeConfig.poisson_ratio must be in (−1, 0.5), got {self.poisson_ratio!r}")
        if self.wheel_radius <= self.link_radius or self.wheel_radius <= self.carriage_height / 2:
            raise ValueError(
                "SnakeConfig.wheel_radius must exceed link_radius and carriage_height/2 (only the wheels touch the "
                "ground)"
            )
        if self.wheel_track / 2 - self.wheel_width / 2 <= self.carriage_width / 2:
            raise ValueError(
                "SnakeConfig.wheel_track must leave the wheels outside the carriage (track − wheel_width > "
                "carriage_width)"
            )
        if isinstance(self.pneumatics, dict):
            self.pneumatics = PneumaticsConfig(**self.pneumatics)
        if isinstance(self.solver, dict):
            self.solver = SolverConfig(**self.solver)

    # ------------------------------------------------------------------ derived
    @property
    def h(self) -> float:
        """Solver time step [s]."""
        return self.frame_dt / self.substeps

    @property
    def body_length(self) -> float:
        """Nose-to-tail length [m] (links and carriages)."""
        return self.links * self.link_length + (self.links + 1) * self.carriage_length

    @property
    def p_max_psi(self) -> float:
        return self.pneumatics.p_max_psi

    def with_coarse_mesh(self) -> "SnakeConfig":
        """The same snake with the coarse link mesh (5 cross-sections of 13 particles): quick runs and studies
        (``--coarse`` of the CLI, the benchmarks)."""
        return dataclasses.replace(self, sections=5, inner_ring=4)

    # --------------------------------------------------------------------- TOML
    @classmethod
    def from_toml(cls, path) -> "SnakeConfig":
        """Read a config: top-level keys (or a ``[snake]`` table) are SnakeConfig fields; ``[pneumatics]`` and
        ``[solver]`` tables set PneumaticsConfig and SolverConfig fields. Unknown keys are errors."""
        return cls.from_dict(read_toml(path, "snake config"), source=str(Path(path)))

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "config") -> "SnakeConfig":
        """Config from the tables of a TOML file (see :meth:`from_toml`); ValueError naming ``source``, the table and
        the key for an unknown key, a value of the wrong type or out of range."""
        from softsnake.io.user_files import check_fields, describe

        if not isinstance(data, dict):
            raise ValueError(f"{source} must be a table of settings, got {describe(data)}")
        data = dict(data)
        table = dict(check_fields(data.pop("snake", {}), cls, where=f"{source} [snake]", skip=("pneumatics", "solver")))
        top = {k: v for k, v in data.items() if k not in ("pneumatics", "solver")}
        table.update(check_fields(top, cls, where=source, skip=("pneumatics", "solver")))
        pneu = check_fields(data.get("pneumatics", {}), PneumaticsConfig, where=f"{source} [pneumatics]")
        solver = check_fields(data.get("solver", {}), SolverConfig, where=f"{source} [solver]")
        try:
            return cls(**table, pneumatics=PneumaticsConfig(**pneu), solver=dataclasses.replace(cls().solver, **solver))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: {exc}") from None

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in ("pneumatics", "solver")}
        return dict(snake=d, pneumatics=dataclasses.asdict(self.pneumatics), solver=dataclasses.asdict(self.solver))

    def to_toml(self) -> str:
        """TOML text that ``from_toml`` reads back to an equal config."""

        def value(v):
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, str):
                return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            return repr(v)

        lines = []
        for table, values in self.to_dict().items():
            lines.append(f"[{table}]")
            lines += [f"{k} = {value(v)}" for k, v in values.items()]
            lines.append("")
        return "\n".join(lines)


@dataclass(frozen=True)
class SnakeLayout:
    """Index map of one snake inside its builder (world-local indices)."""

    link: LinkMesh
    link_particles: list  # per link: (n,) particle indices
    carriages: list  # body indices, tail → head along +x
    wheels: list  # body indices (2 per carriage)
    distance_chamber: np.ndarray  # (distance constraints,) link·2 + chamber for actuation constraints, −1 otherwise
    counts: dict


def actuation_compliance(config: SnakeConfig, mesh: LinkMesh) -> float:
    """Compliance [m/N] of one actuation constraint: one chamber's actuation constraints in parallel have stiffness
    A_c·Y per segment, so each has k = A_c·Y / (lines·segment) (Eq. 4)."""
    segment = config.link_length / (config.sections - 1)
    lines = int(np.count_nonzero(mesh.actuation_chamber == 0)) // (config.sections - 1)
    return segment * lines / (config.chamber_area * config.youngs_modulus)


def link_material(config: SnakeConfig) -> tuple[float, float]:
    """Young's modulus [Pa] and density [kg/m³] of the link's tets. With ``chamber_voids`` the solid mesh stands for
    the hollow link: two circular chambers of area A_c whose axes lie at d = R/2 from the centre plane (the
    inextensible layer, the neutral plane of bending) take out 2A_c of the section's πR² and
    2(πr⁴/4 + A_c d²) of its second moment πR⁴/4 (parallel-axis theorem, r² = A_c/π), so
    ρ_eff = ρ (1 − 2A_c/πR²) and Y_eff = Y · I_hollow / I_solid: the mesh then has the hollow section's mass and
    Euler–Bernoulli bending stiffness. Without it, the material's own Y and ρ."""
    c = config
    if not c.chamber_voids:
        return c.youngs_modulus, c.density
    R, A = c.link_radius, c.chamber_area
    d = R / 2
    solid = math.pi * R**4 / 4
    hollow = solid - 2 * (A * A / (4 * math.pi) + A * d * d)  # πr⁴/4 = A²/(4π)
    return c.youngs_modulus * hollow / solid, c.density * (1 - 2 * A / (math.pi * R**2))


def build_snake(config: SnakeConfig) -> tuple[ModelBuilder, SnakeLayout]:
    """A builder holding one snake on a ground plane (μ = config.mu). The snake lies along +x, carriage 0 at the
    tail end (x = 0) … carriage ``links`` at the head; link i joins carriage i and i+1."""
    c = config
    b = ModelBuilder()
    mesh = link_mesh(c.link_length, c.link_radius, c.sections, c.inner_ring)
    z0 = c.wheel_radius  # axle height = link axis height
    pitch = c.link_length + c.carriage_length
    half = np.array([c.carriage_length, c.carriage_width, c.carriage_height]) / 2
    carriage_density = c.carriage_mass / (8 * half.prod())
    wheel_density = c.wheel_mass / (math.pi * c.wheel_radius**2 * c.wheel_width)
    wheel_rot = (math.sin(math.pi / 4), 0.0, 0.0, math.cos(math.pi / 4))  # cylinder axis (local z) → world −y
    b.add_ground_plane(mu=c.mu)
    carriages, wheels = [], []
    for k in range(c.links + 1):
        x = k * pitch + c.carriage_length / 2
        body = b.add_body((x, 0.0, z0))
        b.add_shape_box(body, half, mu=c.mu, density=carriage_density, body_contact=False, particle_contact=False)
        carriages.append(body)
        for side in (-1.0, 1.0):
            y = side * c.wheel_track / 2
            wheel = b.add_body((x, y, z0), rot=wheel_rot)
            b.add_shape_cylinder(
                wheel,
                c.wheel_radius,
                c.wheel_width / 2,
                mu=c.mu,
                density=wheel_density,
                body_contact=False,
                particle_contact=False,
                rim_contact=c.wheel_rim_contacts,
            )
            drive = dict(target_velocity=0.0, damping=c.wheel_damping) if c.wheel_damping > 0 else {}
            b.add_joint_revolute(body, wheel, (x, y, z0), (0.0, 1.0, 0.0), **drive)
            wheels.append(wheel)
    act_compliance = actuation_compliance(c, mesh)
    link_youngs, link_density = link_material(c)
    link_particles, chamber = [], []
    for i in range(c.links):
        x0 = i * pitch + c.carriage_length
        ids = b.add_soft_mesh(
            mesh.vertices,
            mesh.tets,
            density=link_density,
            youngs_modulus=link_youngs,
            poisson_ratio=c.poisson_ratio,
            damping=c.material_damping,
            pos=(x0, 0.0, z0),
        )
        link_particles.append(ids)
        last = mesh.section.max()
        for a, d in mesh.hard_pairs(keep_redundant=c.attached_section_rows):
            b.add_distance(int(ids[a]), int(ids[d]), compliance=0.0)
            chamber.append(-1)
        for (a, d), ch in zip(mesh.actuation_pairs, mesh.actuation_chamber):
            b.add_distance(int(ids[a]), int(ids[d]), compliance=act_compliance)
            chamber.append(2 * i + int(ch))
        for v in np.nonzero(mesh.section == 0)[0]:
            b.add_attachment(int(ids[v]), carriages[i])
        for v in np.nonzero(mesh.section == last)[0]:
            b.add_attachment(int(ids[v]), carriages[i + 1])
    counts = dict(
        bodies=b.body_count,
        particles=b.particle_count,
        distance_constraints=b.distance_count,
        tets=b.tet_count,
        joints=len(b.joints),
        attachments=len(b.attachments),
    )
    layout = SnakeLayout(mesh, link_particles, carriages, wheels, np.asarray(chamber, dtype=np.int32), counts)
    return b, layout


def snake_counts(config: SnakeConfig | None = None) -> dict:
    """Model sizes of one snake next to paper Table I: {name: (ours, paper, relative difference)}."""
    _, layout = build_snake(config or SnakeConfig())
    return {k: (v, PAPER_TABLE_I[k], v / PAPER_TABLE_I[k] - 1.0) for k, v in layout.counts.items()}
