"""The engine: host-side assembly (ModelBuilder) → device arrays (Model) → per-step data (State, Control) → Solver."""

from .builder import ModelBuilder, ShapeType
from .contact_list import ContactCapacityExceeded
from .hinge_torques import HingeTorques, wrinkling_moment_np
from .model import Control, Model, State
from .solver import SimulationDiverged, Solver, SolverConfig, StepDiagnostics

__all__ = [
    "ContactCapacityExceeded",
    "Control",
    "HingeTorques",
    "Model",
    "ModelBuilder",
    "ShapeType",
    "SimulationDiverged",
    "Solver",
    "SolverConfig",
    "State",
    "StepDiagnostics",
    "wrinkling_moment_np",
]
