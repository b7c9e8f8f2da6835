"""``softsnake vinemap deploy|explore`` through ``softsnake.cli.main`` (exit status, one-line errors, outputs)."""

import argparse
import csv
import json
import os

import numpy as np
import pytest

from softsnake.cli import build_parser, main
from softsnake.vinemap.environment import Environment, load_environment, save_environment


def run(argv):
    return main(argv)


def fails(argv, capsys, match):
    """The command exits 2 with one line on stderr that contains ``match``."""
    assert main(argv) == 2, argv
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and match in err[0], err


@pytest.fixture
def env_file(tmp_path):
    env = Environment(
        [[[0.1, 0.6], [0.9, 0.6], [0.9, 0.7], [0.1, 0.7]], [[0.55, 0.4], [0.57, 0.4], [0.57, 0.42], [0.55, 0.42]]],
        robot_radius=0.01,
    )
    path = tmp_path / "env.json"
    save_environment(env, str(path))
    return str(path)


def test_single_vinemap_subparser_with_nested_commands():
    sub = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)][0]
    assert "vinemap" in sub.choices
    nested = [a for a in sub.choices["vinemap"]._actions if isinstance(a, argparse._SubParsersAction)][0]
    assert set(nested.choices) == {"deploy", "explore"}


def test_deploy_writes_result_and_picture(env_file, tmp_path):
    out = tmp_path / "dep"
    assert (
        run(["vinemap", "deploy", "--env", env_file, "--launch", "0.3,0.05,65", "--length", "0.87", "--out", str(out)])
        == 0
    )
    res = json.loads((out / "result.json").read_text())
    np.testing.assert_allclose(res["shape"][1], [0.54, 0.43], atol=1e-9)  # wraps the post's bumper corner
    assert len(res["walls"]) == 2 and res["swept_area"]
    assert (out / "deployment.png").stat().st_size > 1000
    assert not [f for f in os.listdir(out) if f.startswith(".tmp")]


def test_explore_small_run(env_file, tmp_path):
    out = tmp_path / "exp"
    assert (
        run(
            [
                "vinemap",
                "explore",
                "--env",
                env_file,
                "--deployments",
                "2",
                "--mc-envs",
                "1",
                "--random-repeats",
                "5",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(open(out / "scores.csv")))
    assert len(rows) == 2 and {"mc", "ideal", "random_mean", "random_std"} <= set(rows[0])
    for name in ("belief.png", "mc_environment.png", "scores.png", "environment.json"):
        assert (out / name).exists()
    assert load_environment(str(out / "environment.json")).obstacles[0].shape == (4, 2)


def test_bad_inputs_give_one_line_errors(env_file, tmp_path, capsys):
    o = str(tmp_path / "o")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"obstacles": [[[0, 0], [1, 1], [1, 0], [0, 1]]]}))
    fails(["vinemap", "deploy", "--env", str(bad), "--launch", "0.5,0.05,90", "--out", o], capsys, "self-intersecting")
    fails(["vinemap", "deploy", "--env", env_file, "--launch", "0.5,0.65,90", "--out", o], capsys, "inside obstacle 0")
    for frac in ("0", "1.2", "-0.1"):
        fails(
            ["vinemap", "deploy", "--env", env_file, "--launch", "0.5,0.05,90", f"--turn={frac},30", "--out", o],
            capsys,
            "FRACTION",
        )
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b'{"obst\x00')
    fails(["vinemap", "deploy", "--env", str(garbage), "--launch", "0.5,0.05,90", "--out", o], capsys, "not valid JSON")
    fails(
        ["vinemap", "deploy", "--env", str(tmp_path / "missing.json"), "--launch", "0.5,0.05,90", "--out", o],
        capsys,
        "missing.json",
    )
    fails(["vinemap", "deploy", "--env", env_file, "--launch", "0.5,0.05", "--out", o], capsys, "--launch")
    assert not (tmp_path / "o").exists()
