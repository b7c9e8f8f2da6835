"""A step is a handful of launches whatever the iteration budget (docs/solver.md, "The step"): every stage is one
launch over the worlds, one thread block per world, and each linear solve runs all its iterations in one launch. The
launches are counted on the CPU by wrapping Warp's entry points (softsnake/sim/launches.py); the same kernels run on a
GPU, where the count is the captured graph's node count."""

import dataclasses

import pytest

import softsnake as ss
from helpers import TEST_DEVICE
from softsnake.scenes import soft_slab_on_ground
from softsnake.sim.launches import counted_launches, launches_per_step


def slab_launches(**config) -> float:
    model = soft_slab_on_ground().finalize(device=TEST_DEVICE)
    state = model.state()
    return launches_per_step(ss.Solver(model, **config), state)


def test_the_slab_takes_18_launches_per_step_whatever_the_linear_budget():
    # predict, collide, linearise, warm start, 4 × (assemble, solve, update), finish, finalise (was ~800)
    assert slab_launches() == 18
    assert slab_launches(linear_iterations=40) == 18
    assert slab_launches(newton_iterations=2) == 12  # three launches per Newton iteration


def test_the_snake_takes_22_launches_per_step_whatever_the_linear_budget():
    # the slab's stages plus the rows' rigid-body preconditioner factorised after each assembly (was ~1,310)
    from test_snake import coarse

    from softsnake.robots.snake_sim import SnakeSim

    for linear in (20, 60):
        cfg = coarse()
        cfg = dataclasses.replace(cfg, solver=dataclasses.replace(cfg.solver, linear_iterations=linear))
        sim = SnakeSim(worlds=2, device=TEST_DEVICE, config=cfg)
        assert launches_per_step(sim.solver, sim.state, sim.control) == 22
        if TEST_DEVICE == "cpu":  # eager (a GPU replays the step as one graph)
            with counted_launches() as frame:
                sim.step()  # per substep: the chambers' pressures to rest-length scales (2 launches), the solver's 22
            assert sum(frame.values()) == cfg.substeps * (2 + 22), frame


@pytest.mark.parametrize("linear", [10, 40])
def test_the_dual_step_takes_the_same_launches_whatever_the_linear_budget(linear):
    # a model without tets runs the dual formulation (Jacobi-PCR on the multipliers) through the same stages
    from softsnake.scenes import demo_scene

    model = demo_scene().finalize(device=TEST_DEVICE)
    solver = ss.Solver(model, fem="dual", linear_iterations=linear)
    assert type(solver.formulation).__name__ == "DualStep"
    assert launches_per_step(solver, model.state()) == 18
