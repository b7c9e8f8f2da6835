"""Robot builders and their actuation: pneumatic chamber pressures and gaits (snake builders live here too)."""

from .pneumatics import PSI, ChamberPressures, OpenLoopGait, PneumaticsConfig, chamber_targets

__all__ = [
    "PSI",
    "ChamberPressures",
    "OpenLoopGait",
    "PneumaticsConfig",
    "chamber_targets",
]
