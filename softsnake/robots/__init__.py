"""Robot builders and their actuation: the pneumatic soft snake (config, model, batched simulator), chamber pressures
with the latency model, and the open-loop gait."""

from .pneumatics import PSI, ChamberPressures, OpenLoopGait, PneumaticsConfig, chamber_targets
from .snake import PAPER_TABLE_I, SnakeConfig, SnakeLayout, build_snake, snake_counts
from .snake_pool import SnakeSimPool
from .snake_sim import SnakeSim
from .vine import (
    VineConfig,
    VineHandle,
    add_circles,
    add_rectangles,
    add_rotated_rectangle,
    add_wall_segments,
    build_vine,
)
from .vine_sim import VineSim

__all__ = [
    "PAPER_TABLE_I",
    "PSI",
    "ChamberPressures",
    "OpenLoopGait",
    "PneumaticsConfig",
    "SnakeConfig",
    "SnakeLayout",
    "SnakeSim",
    "SnakeSimPool",
    "VineConfig",
    "VineHandle",
    "VineSim",
    "add_circles",
    "add_rectangles",
    "add_rotated_rectangle",
    "add_wall_segments",
    "build_vine",
    "build_snake",
    "chamber_targets",
    "snake_counts",
]
