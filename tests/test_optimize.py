"""``softsnake optimize``: CMA-ES over the gait with generations as batches; its bookkeeping, its re-run check and its
answers to bad input."""

import json

import numpy as np
import pytest

from cli_helpers import cli, fails
from helpers import TEST_DEVICE
from softsnake.experiments.optimize import GaitObjective, compare_gaits, optimize_gait
from softsnake.robots.pneumatics import OpenLoopGait
from softsnake.robots.snake import SnakeConfig

COARSE = SnakeConfig().with_coarse_mesh()


def test_generations_count_evaluations_and_the_best_gait_scores_the_same_when_re_run():
    objective = GaitObjective("speed", seconds=0.2, settle=0.1)
    records = []
    result = optimize_gait(
        config=COARSE, objective=objective, generations=2, popsize=3, device=TEST_DEVICE, on_generation=records.append
    )
    assert result.evaluations == 6 and [r["evaluations"] for r in records] == [3, 6]
    assert result.best_score == max(r["best"] for r in records) == records[-1]["best_so_far"]
    lo, hi = result.bounds["omega_hz"]
    assert lo <= result.best_gait.omega_hz <= hi and result.best_gait.phi == 0.0  # phi not optimised
    # the best gait re-run alone, beside the paper's, gives its score bit for bit (worlds are independent)
    again = compare_gaits([OpenLoopGait(), result.best_gait], config=COARSE, objective=objective, device=TEST_DEVICE)
    assert again.score[1] == result.best_score


def test_the_command_writes_the_best_gait_the_curve_and_both_budgets(tmp_path, capfd):
    out = tmp_path / "opt"
    argv = ["optimize", "--coarse", "--generations", "1", "--popsize", "2", "--seconds", "0.2", "--settle", "0.1"]
    code, stdout, err = cli([*argv, "--check-newton", "5", "--check-linear", "24", "--out", out, "--quiet"], capfd)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["evaluations"] == 2 and set(summary["checks"]) == {"optimised", "finer"}
    assert summary["checks"]["finer"]["newton_iterations"] == 5
    assert summary["checks"]["optimised"]["best"] == summary["best_score"]
    assert "advantage_kept" in summary["checks"]["finer"] or summary["checks"]["optimised"]["advantage"] <= 0
    assert (out / "convergence.csv").read_text().startswith("generation,evaluations,best,mean")
    assert (out / "convergence.png").stat().st_size > 0 and "run it: softsnake gait --omega" in stdout


def test_the_goal_objective_scores_distance_to_the_goal():
    objective = GaitObjective("goal", seconds=0.2, settle=0.1, goal=(0.3, 0.0))
    ev = compare_gaits([OpenLoopGait(), OpenLoopGait(phi=0.3)], config=COARSE, objective=objective, device=TEST_DEVICE)
    assert np.allclose(ev.score, ev.goal_distance) and np.all(np.abs(ev.score - 0.3) < 0.02)  # barely moved yet


@pytest.mark.parametrize(
    "extra, needles",
    [
        (["--parameters", "omega,speed"], ("unknown gait parameter(s) 'speed'",)),
        (["--parameters", "omega,omega"], ("named twice",)),
        (["--omega-range", "0,20"], ("--omega-range must lie in [0, 15] Hz",)),
        (["--amplitude-range", "1,9"], ("--amplitude-range must lie in [0, p_max = 8] psi",)),
        (["--omega-range", "2,1"], ("LOW < HIGH",)),
        (["--parameters", "alpha", "--omega-range", "1,2"], ("--omega-range is given but omega is not in",)),
        (["--parameters", "phi", "--phi-range", "-2,0"], ("--phi-range must lie in [-1, 1]",)),
        (["--seconds", "1", "--settle", "2"], ("must exceed settle",)),
        (["--goal", "1"], ("two finite numbers x,y",)),
        (["--popsize", "1"], ("--popsize", "must be ≥ 2")),
        (["--objective", "height"], ("--objective", "invalid choice")),
    ],
)
def test_bad_optimizer_input_is_refused_and_nothing_is_written(extra, needles, tmp_path, capfd):
    fails(["optimize", "--coarse", *extra, "--out", tmp_path / "out"], capfd, *needles)
    assert not (tmp_path / "out").exists()


def test_bad_objectives_and_bounds_raise_value_errors():
    with pytest.raises(ValueError, match="objective must be one of speed, goal"):
        GaitObjective("height")
    with pytest.raises(ValueError, match="goal must be two finite numbers"):
        GaitObjective("goal", goal=(1.0, float("nan")))
    with pytest.raises(ValueError, match="unknown gait parameter 'beta'"):
        optimize_gait(parameters=("beta",), config=COARSE)
    with pytest.raises(ValueError, match="bounds of alpha must be finite with low < high"):
        optimize_gait(parameters=("alpha",), bounds={"alpha": (1.0, 1.0)}, config=COARSE)
    with pytest.raises(ValueError, match="popsize must be an integer ≥ 2"):
        optimize_gait(popsize=1, config=COARSE)
