"""The engine: host-side assembly (ModelBuilder) → device arrays (Model) → per-step data (State, Control) → Solver."""

from .builder import ModelBuilder, ShapeType
from .model import Control, Model, State
from .solver import SimulationDiverged, Solver, SolverConfig, StepDiagnostics

__all__ = [
    "Control",
    "Model",
    "ModelBuilder",
    "ShapeType",
    "SimulationDiverged",
    "Solver",
    "SolverConfig",
    "State",
    "StepDiagnostics",
]
