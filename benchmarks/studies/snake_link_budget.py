"""Settled curvature of one full-resolution snake link at 4, 5, 6 and 8 psi for a solver budget, next to the static
references of the same link model without gravity, ground or wheels: linearised
(``softsnake.reference_fem.link_static_curvature``) and exact (``softsnake.reference_link.held_link_static``). Ramp
0.5 s, hold to 1.5 s (``seconds=T``: to T s); prints the curvature every 0.1 s (one world per pressure).
``youngs_scale=s`` multiplies the link's Young's modulus (s = 1 ± 1e-6 shows the run's float32 round-off sensitivity).

    python benchmarks/studies/snake_link_budget.py                                       # default 4 × 20
    python benchmarks/studies/snake_link_budget.py seconds=4                             # hold to 4 s
    python benchmarks/studies/snake_link_budget.py newton_iterations=8 linear_iterations=100
    python benchmarks/studies/snake_link_budget.py warm_start=0.0                        # cold start
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np


def main(argv: list[str]) -> None:
    from softsnake.reference_fem import link_static_curvature
    from softsnake.reference_link import held_link_static
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    base = SnakeConfig()
    overrides, seconds, youngs_scale = {}, 1.5, 1.0
    for arg in argv:
        key, _, value = arg.partition("=")
        if key == "seconds":
            seconds = float(value)
            continue
        if key == "youngs_scale":
            youngs_scale = float(value)
            continue
        old = getattr(base.solver, key)
        overrides[key] = (value == "1") if isinstance(old, bool) else type(old)(value)
    pressures = np.array([4.0, 5.0, 6.0, 8.0])
    pneumatics = dataclasses.replace(base.pneumatics, latency=False, p_max_psi=10.0, supply_psi=10.0)
    cfg = dataclasses.replace(
        base,
        links=1,
        pneumatics=pneumatics,
        solver=dataclasses.replace(base.solver, **overrides),
        youngs_modulus=base.youngs_modulus * youngs_scale,
    )
    sim = SnakeSim(worlds=pressures.size, device="cpu", config=cfg)
    print("psi      ", pressures)
    print("linearised", np.round([link_static_curvature(cfg, p) for p in pressures], 3))
    print("exact     ", np.round([held_link_static(cfg, p, increments=16)["curvature"] for p in pressures], 3))
    for k in range(round(seconds * 60)):
        sim.set_pressure_targets(pressures[:, None] * min(1.0, sim.time / 0.5))
        sim.step()
        if k % 6 == 5:
            print(f"t = {sim.time:.2f} s ", np.round(sim.curvatures()[:, 0], 3), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
