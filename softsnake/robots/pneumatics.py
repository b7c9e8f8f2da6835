"""Pneumatic actuation of the soft snake: chamber-pressure latency (Gasoto et al. 2019, Eqs. 10-12) and the
open-loop serpentine gait (Eq. 9).

Pressures in this module are gauge pressures in psi, as in the paper (1 psi = ``PSI`` Pa); times are in seconds.
Everything is plain NumPy and batched over worlds, so one object drives all worlds of a batched model.

Chamber model (paper Sec. III and V-A)
--------------------------------------
Each link has two antagonistic chambers fed from a common supply through 3-2 valves. A signed link command ``a`` [psi]
inflates chamber 0 towards ``a`` when ``a > 0`` (positive bending) and chamber 1 towards ``|a|`` when ``a < 0``
(negative
bending); the other chamber is vented (target 0). Per published step ``h_ref = 0.0083 s`` each chamber pressure ``p``
follows Eq. 12:

    inflating (target > p):  p <- p + p_s * dp**2 * k_i,  dp = (target - p) / p_s        (Eq. 11, orifice flow Eq. 10)
    deflating (target < p):  p <- p - min(p * k_d, T_p)

with both updates clamped at the target (the discrete map can overshoot for large gains or steps; the continuous
response never crosses it).

Time-step consistency
---------------------
Eq. 12 is a map tied to ``h_ref``. We read it as forward Euler, with step ``h_ref``, of the continuous model
``dp/dt = D(p) / h_ref``, where ``D(p)`` is the Eq. 12 increment. For a simulation step ``dt`` we take
``n = max(1, round(dt / h_ref))`` Euler sub-steps of length ``dt / n``, i.e. each sub-step adds ``(dt / n) / h_ref``
times the Eq. 12 increment. At ``dt == h_ref`` this is exactly Eq. 12; at other ``dt`` it is a first-order approximation
of the same continuous response (error O(dt), see tests/test_snake_pneumatics.py for the bound), and integer multiples
of ``h_ref`` reproduce the published map step for step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from softsnake.sim.model import world_indices

PSI = 6894.757
"""Pascal per psi [Pa/psi]."""

_TARGET_SLACK = 1e-9  # [psi] round-off allowed above p_max in commanded targets


def _is_finite_number(x) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


@dataclass
class PneumaticsConfig:
    """Constants of the chamber-pressure latency model (Eqs. 11-12; values from the paper's Section VI-B).

    k_inflate: inflation damping k_i in (0, 1] [-]
    k_deflate: deflation damping k_d in (0, 1] [-]
    threshold_psi: deflation threshold T_p, the largest pressure drop per reference step [psi]
    reference_dt: the step h the constants were fitted for [s]
    supply_psi: supply pressure p_s [psi]; must be >= p_max_psi so that |dp| <= 1 in Eq. 11
    p_max_psi: largest chamber target pressure accepted [psi]
    latency: False makes each chamber pressure equal its target instantly (the "no latency" run of Fig. 7)
    """

    k_inflate: float = 0.23
    k_deflate: float = 0.23
    threshold_psi: float = 0.68
    reference_dt: float = 0.0083
    supply_psi: float = 10.0
    p_max_psi: float = 8.0
    latency: bool = True

    def __post_init__(self):
        for name in ("k_inflate", "k_deflate"):
            v = getattr(self, name)
            if not _is_finite_number(v) or not (0.0 < float(v) <= 1.0):
                raise ValueError(f"PneumaticsConfig.{name} must be in (0, 1], got {v!r}")
        for name in ("threshold_psi", "reference_dt", "supply_psi", "p_max_psi"):
            v = getattr(self, name)
            if not _is_finite_number(v) or float(v) <= 0.0:
                raise ValueError(f"PneumaticsConfig.{name} must be a positive finite number, got {v!r}")
        if float(self.supply_psi) < float(self.p_max_psi):
            raise ValueError(
                f"PneumaticsConfig.supply_psi ({self.supply_psi!r} psi) must be >= p_max_psi ({self.p_max_psi!r} psi): "
                "a chamber cannot be filled above the supply pressure"
            )
        if not isinstance(self.latency, (bool, np.bool_)):
            raise ValueError(f"PneumaticsConfig.latency must be True or False, got {self.latency!r}")


def chamber_targets(targets_signed_psi: np.ndarray) -> np.ndarray:
    """Split signed link commands (..., links) [psi] into per-chamber targets (..., links, 2) [psi].

    Antagonistic valves (paper Sec. III): a > 0 fills chamber 0 to a and vents chamber 1; a < 0 fills chamber 1 to |a|
    and vents chamber 0; a == 0 vents both.
    """
    a = np.asarray(targets_signed_psi, dtype=np.float64)
    return np.stack([np.maximum(a, 0.0), np.maximum(-a, 0.0)], axis=-1)


class ChamberPressures:
    """Gauge pressures [psi] of the two chambers of every link in every world, shape (worlds, links, 2).

    Chamber 0 bends its link the positive way, chamber 1 the negative way; ``signed()`` gives p0 - p1 per link.
    All chambers start vented (0 psi).
    """

    def __init__(self, worlds: int, links: int, config: PneumaticsConfig | None = None):
        for name, v in (("worlds", worlds), ("links", links)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"ChamberPressures: {name} must be a positive integer, got {v!r}")
        self.worlds = int(worlds)
        self.links = int(links)
        self.config = config if config is not None else PneumaticsConfig()
        if not isinstance(self.config, PneumaticsConfig):
            raise ValueError(f"ChamberPressures: config must be a PneumaticsConfig, got {type(self.config).__name__}")
        self._p = np.zeros((self.worlds, self.links, 2), dtype=np.float64)
        #: per-world latency gains k_i, k_d (worlds,) [-]; start at the config's values (randomised by learning envs)
        self.k_inflate = np.full(self.worlds, float(self.config.k_inflate))
        self.k_deflate = np.full(self.worlds, float(self.config.k_deflate))

    def set_latency_gains(self, worlds, k_inflate=None, k_deflate=None) -> None:
        """Give the worlds ``worlds`` (indices) their own latency gains k_i, k_d in (0, 1] (a number for all of them
        or one per world; None: the config's value)."""
        chosen = world_indices(worlds, self.worlds, "ChamberPressures.set_latency_gains")
        for name, values in (("k_inflate", k_inflate), ("k_deflate", k_deflate)):
            v = np.broadcast_to(
                float(getattr(self.config, name)) if values is None else np.asarray(values, dtype=np.float64),
                chosen.shape,
            )
            bad = ~np.isfinite(v) | (v <= 0.0) | (v > 1.0)
            if bad.any():
                raise ValueError(f"ChamberPressures.{name} must be in (0, 1], got {float(v[bad][0])!r}")
            getattr(self, name)[chosen] = v

    @property
    def shape(self) -> tuple[int, int, int]:
        return self._p.shape

    @property
    def values(self) -> np.ndarray:
        """Copy of the chamber pressures (worlds, links, 2) [psi]."""
        return self._p.copy()

    def state(self) -> np.ndarray:
        """Copy of the chamber pressures (worlds, links, 2) [psi], for checkpoints."""
        return self._p.copy()

    def set_state(self, pressures_psi) -> None:
        """Restore chamber pressures (worlds, links, 2) [psi] from a checkpoint; each must lie in [0, supply_psi]."""
        p = np.asarray(pressures_psi, dtype=np.float64)
        if p.shape != self._p.shape:
            raise ValueError(f"ChamberPressures.set_state: expected shape {self._p.shape}, got {p.shape}")
        bad = ~np.isfinite(p) | (p < 0.0) | (p > self.config.supply_psi)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"ChamberPressures.set_state: pressure {float(p[idx])!r} psi at (world, link, chamber) {idx} "
                f"is not in [0, {self.config.supply_psi}] psi"
            )
        self._p[...] = p

    def reset(self, worlds=None) -> None:
        """Vent every chamber (all pressures 0 psi) of every world, or of the worlds ``worlds`` (indices) only."""
        if worlds is None:
            self._p[...] = 0.0
        else:
            self._p[world_indices(worlds, self.worlds, "ChamberPressures.reset")] = 0.0

    def signed(self) -> np.ndarray:
        """Signed link pressure p0 - p1, shape (worlds, links) [psi]."""
        return self._p[..., 0] - self._p[..., 1]

    def validate_targets(self, targets_signed_psi) -> np.ndarray:
        """Checked signed targets (worlds, links) [psi]: right shape, finite, |a| ≤ p_max; else ValueError."""
        a = np.asarray(targets_signed_psi, dtype=np.float64)
        if a.shape != (self.worlds, self.links):
            raise ValueError(
                f"ChamberPressures.step: targets must have shape (worlds, links) = {(self.worlds, self.links)}, got "
                f"{a.shape}"
            )
        nonfinite = ~np.isfinite(a)
        if nonfinite.any():
            w, i = (int(j) for j in np.argwhere(nonfinite)[0])
            raise ValueError(
                f"ChamberPressures.step: target {float(a[w, i])!r} psi at world {w}, link {i} is not finite"
            )
        over = np.abs(a) > self.config.p_max_psi + _TARGET_SLACK
        if over.any():
            w, i = (int(j) for j in np.argwhere(over)[0])
            raise ValueError(
                f"ChamberPressures.step: target {float(a[w, i])!r} psi at world {w}, link {i} exceeds p_max = "
                f"{self.config.p_max_psi} psi"
            )
        return a

    def step(self, targets_signed_psi, dt: float) -> np.ndarray:
        """Advance all chamber pressures by ``dt`` [s] towards the signed link targets (worlds, links) [psi].

        Returns a copy of the new pressures (worlds, links, 2) [psi]. See the module docstring for the sub-stepping.
        """
        if not _is_finite_number(dt) or float(dt) <= 0.0:
            raise ValueError(f"ChamberPressures.step: dt must be a positive finite time [s], got {dt!r}")
        target = chamber_targets(self.validate_targets(targets_signed_psi))
        cfg = self.config
        if not cfg.latency:
            self._p[...] = target
            return self._p.copy()

        dt = float(dt)
        h = float(cfg.reference_dt)
        ps = float(cfg.supply_psi)
        n = max(1, int(math.floor(dt / h + 0.5)))  # round half up (Python's round() rounds half to even)
        scale = (dt / n) / h  # Euler sub-step length in units of h; exactly 1.0 when dt is an integer multiple of h
        p = self._p
        k_i, k_d = self.k_inflate[:, None, None], self.k_deflate[:, None, None]
        for _ in range(n):
            inflating = target > p
            deflating = target < p
            # Eq. 11: normalised pressure gap; Eq. 12 (inflation): orifice flow ~ gap^2 (Eq. 10).
            dp = (target - p) / ps
            p_infl = np.minimum(p + scale * (ps * dp * dp * k_i), target)
            # Eq. 12 (deflation): proportional venting, capped at T_p per reference step.
            p_defl = np.maximum(p - scale * np.minimum(p * k_d, cfg.threshold_psi), target)
            p = np.where(inflating, p_infl, np.where(deflating, p_defl, p))
        self._p[...] = np.maximum(p, 0.0)
        return self._p.copy()


#: the gait parameters that may take one value per world
GAIT_PARAMETERS = ("omega_hz", "alpha", "phi", "amplitude_psi")


@dataclass
class OpenLoopGait:
    """Open-loop serpentine gait of Eq. 9: a_i(t) = clamp(sin(2 pi omega t + alpha i) + phi, -1, 1) * A  [psi].

    omega_hz: oscillation frequency omega [Hz] (>= 0)
    alpha: phase lag between consecutive links [rad]
    phi: offset in [-1, 1]; nonzero phi keeps one side inflated longer and turns the snake
    amplitude_psi: amplitude A in [0, p_max_psi] [psi]
    p_max_psi: largest allowed chamber pressure [psi]

    Each of omega_hz, alpha, phi and amplitude_psi is one number (the same gait in every world) or a sequence of one
    value per world (all sequences of the same length; numbers are shared by every world): one object then drives a
    batch of different gaits, and world w gets exactly the targets of ``gait.world(w)`` (the same float64 operations).

    The defaults are the paper's forward-locomotion run (Sec. VI-B): omega = 2 Hz, alpha = pi/2, phi = 0, A = p_max = 8
    psi.
    """

    omega_hz: float = 2.0
    alpha: float = math.pi / 2
    phi: float = 0.0
    amplitude_psi: float = 8.0
    p_max_psi: float = 8.0

    def __post_init__(self):
        if not _is_finite_number(self.p_max_psi) or float(self.p_max_psi) <= 0.0:
            raise ValueError(f"OpenLoopGait.p_max_psi must be a positive finite pressure [psi], got {self.p_max_psi!r}")
        lengths = {}
        for name in GAIT_PARAMETERS:
            v = getattr(self, name)
            if isinstance(v, (str, bytes)) or np.ndim(v) > 1:
                raise ValueError(f"OpenLoopGait.{name} must be a number or a sequence of numbers, got {v!r}")
            if np.ndim(v) == 1:
                values = list(v)
                if not values:
                    raise ValueError(f"OpenLoopGait.{name} is an empty sequence (give one value per world)")
                for w, x in enumerate(values):
                    self._check(name, x, f"OpenLoopGait.{name}[{w}]")
                lengths[name] = len(values)
                object.__setattr__(self, name, np.array([float(x) for x in values], dtype=np.float64))
            else:
                self._check(name, v, f"OpenLoopGait.{name}")
        if len(set(lengths.values())) > 1:
            given = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            raise ValueError(f"OpenLoopGait: per-world sequences must have the same length, got {given}")
        self._worlds = next(iter(lengths.values()), None)

    def _check(self, name: str, x, label: str) -> None:
        """ValueError naming ``label`` unless ``x`` is a valid value of parameter ``name``."""
        if name == "omega_hz" and (not _is_finite_number(x) or float(x) < 0.0):
            raise ValueError(f"{label} must be a finite frequency >= 0 Hz, got {x!r}")
        if name == "alpha" and not _is_finite_number(x):
            raise ValueError(f"{label} must be a finite phase lag [rad], got {x!r}")
        if name == "phi" and (not _is_finite_number(x) or not (-1.0 <= float(x) <= 1.0)):
            raise ValueError(f"{label} must be in [-1, 1], got {x!r}")
        if name == "amplitude_psi":
            if not _is_finite_number(x) or float(x) < 0.0:
                raise ValueError(f"{label} must be a finite pressure >= 0 psi, got {x!r}")
            if float(x) > float(self.p_max_psi):
                raise ValueError(f"{label} = {x!r} psi is above p_max = {self.p_max_psi!r} psi")

    @property
    def worlds(self) -> int | None:
        """Number of per-world values, or None when every parameter is one number (the gait of any batch)."""
        return self._worlds

    @classmethod
    def stack(cls, gaits) -> "OpenLoopGait":
        """One per-world gait from a sequence of single gaits (world w runs ``gaits[w]``); all share p_max."""
        gaits = list(gaits)
        if not gaits or any(not isinstance(g, cls) or g.worlds is not None for g in gaits):
            raise ValueError("OpenLoopGait.stack needs a non-empty sequence of single (scalar) OpenLoopGaits")
        p_max = {float(g.p_max_psi) for g in gaits}
        if len(p_max) > 1:
            raise ValueError(f"OpenLoopGait.stack: the gaits have different p_max_psi {sorted(p_max)}")
        return cls(**{k: [getattr(g, k) for g in gaits] for k in GAIT_PARAMETERS}, p_max_psi=p_max.pop())

    def world(self, w: int) -> "OpenLoopGait":
        """The single gait that world ``w`` runs."""
        if self._worlds is None:
            return self
        if not (0 <= int(w) < self._worlds):
            raise ValueError(f"OpenLoopGait.world: w must lie in [0, {self._worlds}), got {w!r}")
        pick = {k: getattr(self, k) for k in GAIT_PARAMETERS}
        return OpenLoopGait(**{k: float(v[w]) if np.ndim(v) else v for k, v in pick.items()}, p_max_psi=self.p_max_psi)

    def as_dict(self) -> dict:
        """The parameters as plain numbers or lists (JSON- and TOML-friendly)."""
        return {
            k: (getattr(self, k).tolist() if np.ndim(getattr(self, k)) else float(getattr(self, k)))
            for k in (*GAIT_PARAMETERS, "p_max_psi")
        }

    def targets(self, t: float, links: int = 4) -> np.ndarray:
        """Signed link pressures a_i(t), i = 0..links-1 [psi] (Eq. 9) at time ``t`` [s]: shape (links,), or
        (worlds, links) for a per-world gait."""
        if not _is_finite_number(t):
            raise ValueError(f"OpenLoopGait: time t must be finite [s], got {t!r}")
        if isinstance(links, bool) or not isinstance(links, (int, np.integer)) or links < 1:
            raise ValueError(f"OpenLoopGait: links must be a positive integer, got {links!r}")
        i = np.arange(int(links), dtype=np.float64)
        if self._worlds is None:
            s = np.sin(2.0 * math.pi * float(self.omega_hz) * float(t) + float(self.alpha) * i) + float(self.phi)
            return np.clip(s, -1.0, 1.0) * float(self.amplitude_psi)

        def column(name):  # (worlds, 1): each world's value, in the same float64 arithmetic as the scalar gait
            return np.broadcast_to(np.asarray(getattr(self, name), dtype=np.float64), (self._worlds,))[:, None]

        omega, alpha, phi, amplitude = (column(k) for k in GAIT_PARAMETERS)
        s = np.sin(2.0 * math.pi * omega * float(t) + alpha * i) + phi
        return np.clip(s, -1.0, 1.0) * amplitude

    def __call__(self, t: float, worlds: int, links: int = 4) -> np.ndarray:
        """The targets of every world, shape (worlds, links) [psi]."""
        if isinstance(worlds, bool) or not isinstance(worlds, (int, np.integer)) or worlds < 1:
            raise ValueError(f"OpenLoopGait: worlds must be a positive integer, got {worlds!r}")
        if self._worlds is not None:
            if int(worlds) != self._worlds:
                raise ValueError(f"OpenLoopGait has values for {self._worlds} worlds, not {worlds}")
            return self.targets(t, links)
        return np.tile(self.targets(t, links), (int(worlds), 1))
