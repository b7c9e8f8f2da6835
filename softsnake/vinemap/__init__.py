"""Geometric vine-robot simulator on visibility graphs and Monte Carlo mapping (Fuentes et al. 2025).

Pure NumPy + shapely; does not need the physics engine. Units: metres and radians (degrees only on the CLI).

* :mod:`.environment` — polygonal environments, JSON files, bumpered scenes, random generators
* :mod:`.kinematics` — critical contact angle (Eq. 3), turn morphologies (Eqs. 12-15), Eq. 30
* :mod:`.simulator` — Algorithms 1-3: :func:`simulate` an :class:`Action` into a :class:`Deployment`
* :mod:`.sensing` — Section 2.4: sensor streams and their inversion to walls
* :mod:`.grid`, :mod:`.mapping` — Section 4: belief (Eq. 31), score (Eqs. 32-33), Monte Carlo mapping loop
"""

from .environment import Environment, load_environment, nonuniform_environment, save_environment, uniform_environment
from .simulator import Action, Deployment, simulate

__all__ = [
    "Environment",
    "load_environment",
    "save_environment",
    "uniform_environment",
    "nonuniform_environment",
    "Action",
    "Deployment",
    "simulate",
]
