"""``softsnake vinemap deploy|explore`` through the sub-parser registration used by softsnake/cli.py."""

import argparse
import csv
import json
import os

import numpy as np
import pytest

from softsnake.vinemap.cli import add_commands
from softsnake.vinemap.environment import Environment, load_environment, save_environment


def run(argv):
    parser = argparse.ArgumentParser(prog="softsnake")
    sub = parser.add_subparsers(dest="command")
    add_commands(sub)
    args = parser.parse_args(argv)
    return args.func(args)


@pytest.fixture
def env_file(tmp_path):
    env = Environment([[[0.1, 0.6], [0.9, 0.6], [0.9, 0.7], [0.1, 0.7]], [[0.55, 0.4], [0.57, 0.4], [0.57, 0.42],
                                                                          [0.55, 0.42]]], robot_radius=0.01)
    path = tmp_path / "env.json"
    save_environment(env, str(path))
    return str(path)


def test_single_vinemap_subparser_with_nested_commands():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command")
    add_commands(sub)
    assert list(sub.choices) == ["vinemap"]
    nested = [a for a in sub.choices["vinemap"]._actions if isinstance(a, argparse._SubParsersAction)][0]
    assert set(nested.choices) == {"deploy", "explore"}


def test_deploy_writes_result_and_picture(env_file, tmp_path):
    out = tmp_path / "dep"
    assert run(["vinemap", "deploy", "--env", env_file, "--launch", "0.3,0.05,65", "--length", "0.87",
                "--out", str(out)]) == 0
    res = json.loads((out / "result.json").read_text())
    np.testing.assert_allclose(res["shape"][1], [0.54, 0.43], atol=1e-9)  # wraps the post's bumper corner
    assert len(res["walls"]) == 2 and res["swept_area"]
    assert (out / "deployment.png").stat().st_size > 1000
    assert not [f for f in os.listdir(out) if f.startswith(".tmp")]


def test_explore_small_run(env_file, tmp_path):
    out = tmp_path / "exp"
    assert run(["vinemap", "explore", "--env", env_file, "--deployments", "2", "--mc-envs", "1",
                "--random-repeats", "5", "--out", str(out)]) == 0
    rows = list(csv.DictReader(open(out / "scores.csv")))
    assert len(rows) == 2 and {"mc", "ideal", "random_mean", "random_std"} <= set(rows[0])
    for name in ("belief.png", "mc_environment.png", "scores.png", "environment.json"):
        assert (out / name).exists()
    assert load_environment(str(out / "environment.json")).obstacles[0].shape == (4, 2)


def test_bad_inputs_raise_clear_value_errors(env_file, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"obstacles": [[[0, 0], [1, 1], [1, 0], [0, 1]]]}))
    with pytest.raises(ValueError, match="self-intersecting"):
        run(["vinemap", "deploy", "--env", str(bad), "--launch", "0.5,0.05,90", "--out", str(tmp_path / "o")])
    with pytest.raises(ValueError, match="inside obstacle 0"):
        run(["vinemap", "deploy", "--env", env_file, "--launch", "0.5,0.65,90", "--out", str(tmp_path / "o")])
    for frac in ("0", "1.2", "-0.1"):
        with pytest.raises(ValueError, match="turn fraction"):
            run(["vinemap", "deploy", "--env", env_file, "--launch", "0.5,0.05,90", f"--turn={frac},30",
                 "--out", str(tmp_path / "o")])
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"{\"obst\x00")
    with pytest.raises(ValueError, match="not valid JSON"):
        run(["vinemap", "deploy", "--env", str(garbage), "--launch", "0.5,0.05,90", "--out", str(tmp_path / "o")])
    with pytest.raises(FileNotFoundError):
        run(["vinemap", "deploy", "--env", str(tmp_path / "missing.json"), "--launch", "0.5,0.05,90",
             "--out", str(tmp_path / "o")])
    with pytest.raises(ValueError, match="--launch"):
        run(["vinemap", "deploy", "--env", env_file, "--launch", "0.5,0.05", "--out", str(tmp_path / "o")])
