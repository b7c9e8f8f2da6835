"""Robot builders and their actuation: the pneumatic soft snake (config, model, batched simulator), chamber pressures
with the latency model, and the open-loop gait."""

from .pneumatics import PSI, ChamberPressures, OpenLoopGait, PneumaticsConfig, chamber_targets
from .snake import PAPER_TABLE_I, SnakeConfig, SnakeLayout, build_snake, snake_counts
from .snake_sim import SnakeSim

__all__ = [
    "PAPER_TABLE_I",
    "PSI",
    "ChamberPressures",
    "OpenLoopGait",
    "PneumaticsConfig",
    "SnakeConfig",
    "SnakeLayout",
    "SnakeSim",
    "build_snake",
    "chamber_targets",
    "snake_counts",
]
