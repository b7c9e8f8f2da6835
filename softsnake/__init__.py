"""softsnake: a GPU-first compliant-constraint physics engine for soft robots, on NVIDIA Warp.

Warp's own messages (start-up banner, one line per kernel module loaded, compiler output) are off while softsnake is
imported; ``softsnake.show_warp_messages()`` turns them on (the command line's ``--verbose``).
"""

__version__ = "0.1.0"


def _kernels_from_source_tree() -> None:
    """Make ``softsnake.kernels`` importable when softsnake is imported from a source checkout (the repository root on
    ``sys.path``: scripts and ``python -m softsnake...`` run there). The design card keeps ``kernels/`` beside
    ``softsnake/``; an installed package has it inside, as ``softsnake/kernels``. The kernels beside this package win
    over an editable install's mapping to another checkout (a git worktree run with ``PYTHONPATH`` on a shared
    environment would otherwise mix its own ``softsnake`` with the other checkout's kernels)."""
    import importlib.util
    import sys
    from pathlib import Path

    here = Path(__file__).resolve().parent
    beside = here.parent / "kernels" / "__init__.py"
    if "softsnake.kernels" in sys.modules or (here / "kernels").is_dir() or not beside.is_file():
        return
    mapped = importlib.util.find_spec("softsnake.kernels")
    if mapped is not None and mapped.origin and Path(mapped.origin).resolve() == beside.resolve():
        return  # an editable install of this checkout maps it already
    spec = importlib.util.spec_from_file_location(
        "softsnake.kernels", beside, submodule_search_locations=[str(beside.parent)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["softsnake.kernels"] = module
    spec.loader.exec_module(module)
    globals()["kernels"] = module  # as the import system binds a loaded subpackage on its parent


_kernels_from_source_tree()

from .sim.warp_runtime import quiet_warp, show_warp_messages  # noqa: E402 (after the kernels are found)

quiet_warp()

from .geometry import TetMesh, box_tet_mesh, read_tet_mesh, tetrahedralize, write_tet_mesh  # noqa: E402
from .robots import (  # noqa: E402
    ChamberPressures,
    OpenLoopGait,
    PneumaticsConfig,
    SnakeConfig,
    SnakeSim,
    VineConfig,
    VineSim,
    build_vine,
)
from .sim import (  # noqa: E402
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
    "show_warp_messages",
]
