"""softsnake: a GPU-first compliant-constraint physics engine for soft robots, on NVIDIA Warp."""

from .geometry import TetMesh, box_tet_mesh, read_tet_mesh, tetrahedralize, write_tet_mesh
from .robots import ChamberPressures, OpenLoopGait, PneumaticsConfig, SnakeConfig, SnakeSim, VineConfig, VineSim, build_vine
from .sim import (
    ContactCapacityExceeded,
    Control,
    HingeTorques,
    Model,
    ModelBuilder,
    ShapeType,
    SimulationDiverged,
    Solver,
    SolverConfig,
    State,
    StepDiagnostics,
)

__version__ = "0.1.0"

__all__ = [
    "ChamberPressures",
    "OpenLoopGait",
    "PneumaticsConfig",
    "SnakeConfig",
    "SnakeSim",
    "VineConfig",
    "VineSim",
    "build_vine",
    "HingeTorques",
    "ContactCapacityExceeded",
    "Control",
    "Model",
    "ModelBuilder",
    "ShapeType",
    "SimulationDiverged",
    "Solver",
    "SolverConfig",
    "State",
    "StepDiagnostics",
    "TetMesh",
    "box_tet_mesh",
    "read_tet_mesh",
    "tetrahedralize",
    "write_tet_mesh",
]
