"""One test per reported command-line failure (rows 1–21; more edges in tests/test_cli_edges.py). Every user error is
exit 2 with one line on stderr naming the argument, file or key, before any work and without leaving an output folder
behind."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys

import numpy as np
import pytest

from cli_helpers import EXAMPLE_ENV, ROOT, answer_lines, cli, fails, run_softsnake, signal_during_explore
from softsnake.cli import build_parser


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if a snake or engine model is built (the error must come before any work)."""
    from softsnake.robots import snake_sim
    from softsnake.sim.builder import ModelBuilder

    def refuse(*a, **k):
        raise AssertionError("a model was built before the arguments were checked")

    monkeypatch.setattr(snake_sim.SnakeSim, "__init__", refuse)
    monkeypatch.setattr(ModelBuilder, "finalize", refuse)


def only(tmp_path, *names):
    """tmp_path holds exactly ``names`` (no output folder, no staging folder left)."""
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_row01_empty_out_path(tmp_path, capfd, no_model):
    fails(["gait", "--coarse", "--seconds", "0.1", "--out", ""], capfd, "--out", "empty path")
    for argv in (
        ["vinemap", "deploy", "--env", EXAMPLE_ENV, "--launch", "0.3,0.03,90", "--out", ""],
        ["demo", "--out", ""],
        ["vine", "fit", "--wall", "w.npz", "--out", ""],
    ):
        fails(argv, capfd, "--out")


def test_row02_interrupt_gives_one_line_130_and_no_output(tmp_path, capfd, monkeypatch):
    from softsnake.robots import snake_sim

    earlier = tmp_path / "D"
    earlier.mkdir()
    (earlier / "trajectory.npz").write_bytes(b"earlier run")
    original, calls = snake_sim.SnakeSim.step, {"n": 0}

    def interrupted(self, frames=1):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        original(self, frames)

    monkeypatch.setattr(snake_sim.SnakeSim, "step", interrupted)
    for out in (tmp_path / "new" / "D", earlier):
        code, _, err = cli(["gait", "--coarse", "--seconds", "1", "--quiet", "--no-usd", "--out", out], capfd)
        assert code == 130 and err == ["softsnake: interrupted; no output was written"], err
    only(tmp_path, "D")  # tmp_path/new was created for the staging folder and removed again
    assert [p.name for p in earlier.iterdir()] == ["trajectory.npz"] and (
        earlier / "trajectory.npz"
    ).read_bytes() == b"earlier run"


def test_row02_sigint_during_vinemap_explore(tmp_path):
    """A real Ctrl-C (SIGINT) in a subprocess: one line, exit 130, no output folder."""
    code, err = signal_during_explore(tmp_path, signal.SIGINT)
    assert code == 130, err
    assert err.strip().splitlines()[-1] == "softsnake: interrupted; no output was written" and "Traceback" not in err
    only(tmp_path)


def test_row03_sizes_beyond_memory_are_refused_before_any_work(tmp_path, capfd, no_model):
    fails(["bench", "--snakes", "1e9", "--frames", "2"], capfd, "--snakes", "memory")
    fails(["gait", "--worlds", "1000000000", "--out", tmp_path / "D"], capfd, "--worlds", "memory")
    fails(["gait", "--coarse", "--seconds", "1e12", "--out", tmp_path / "D"], capfd, "--seconds", "memory")
    fails(["demo", "--worlds", "1000000000", "--out", tmp_path / "D"], capfd, "--worlds", "memory")
    fails(["vine", "batch", "--vines", "1000000000", "--out", tmp_path / "D"], capfd, "vine", "memory")
    only(tmp_path)


def test_row04_out_under_a_regular_file(tmp_path, capfd, no_model):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    fails(
        ["vinemap", "deploy", "--env", EXAMPLE_ENV, "--launch", "0.3333,0.03,80", "--out", blocker / "sub"],
        capfd,
        "--out",
        "not a folder",
    )
    fails(["demo", "--out", blocker / "sub"], capfd, "--out", "not a folder")
    fails(["demo", "--out", blocker], capfd, "--out", "not a folder")
    fails(["vine", "fit", "--wall", "w.npz", "--out", blocker / "p.toml"], capfd, "--out", "not a folder")
    only(tmp_path, "file")


def test_row05_row06_explore_counts_must_be_positive(tmp_path, capfd):
    fails(
        ["vinemap", "explore", "--random", "uniform", "--mc-envs", "0", "--out", tmp_path / "D"],
        capfd,
        "--mc-envs",
        "≥ 1",
    )
    fails(
        ["vinemap", "explore", "--random", "uniform", "--random-repeats", "0", "--out", tmp_path / "D"],
        capfd,
        "--random-repeats",
        "≥ 1",
    )
    only(tmp_path)


def test_row07_row08_curvature_sweep_must_cover_the_fit(tmp_path, capfd, no_model):
    fails(["curvature", "--coarse", "--step-psi", "50", "--out", tmp_path / "D"], capfd, "--step-psi", "at least 3")
    fails(["curvature", "--coarse", "--max-psi", "0.5", "--out", tmp_path / "D"], capfd, "--max-psi", "p_max")
    fails(
        ["curvature", "--coarse", "--max-psi", "1e300", "--step-psi", "1e-300", "--out", tmp_path / "D"],
        capfd,
        "memory",
    )
    only(tmp_path)


def test_row09_vinemap_outputs_have_ordinary_file_modes(tmp_path, capfd):
    old = os.umask(0o022)
    try:
        code, _, _ = cli(
            ["vinemap", "deploy", "--env", EXAMPLE_ENV, "--launch", "0.3333,0.03,80", "--out", tmp_path / "dep"], capfd
        )
        assert code == 0
        code, _, _ = cli(
            [
                "vinemap",
                "explore",
                "--env",
                EXAMPLE_ENV,
                "--deployments",
                "1",
                "--mc-envs",
                "1",
                "--random-repeats",
                "2",
                "--out",
                tmp_path / "exp",
            ],
            capfd,
        )
        assert code == 0
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "dep").iterdir()] + [p for p in (tmp_path / "exp").iterdir()]
    assert len(files) == 2 + 5 + 2  # and each folder's list of its outputs (softsnake.io.files.OUTPUTS_LIST)
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {"0o644"}
    assert stat.S_IMODE((tmp_path / "dep").stat().st_mode) == 0o755


def test_row10_misspelt_environment_key(tmp_path, capfd):
    env = json.loads(EXAMPLE_ENV.read_text())
    env["robot_lenght"] = env.pop("robot_length")
    bad = tmp_path / "env.json"
    bad.write_text(json.dumps(env))
    fails(
        ["vinemap", "deploy", "--env", bad, "--launch", "0.3333,0.03,80", "--out", tmp_path / "D"],
        capfd,
        str(bad),
        "'robot_lenght'",
        "robot_length",
    )
    env = json.loads(EXAMPLE_ENV.read_text())
    env["friction"] = "high"
    bad.write_text(json.dumps(env))
    fails(["vinemap", "explore", "--env", bad, "--out", tmp_path / "D"], capfd, str(bad), "'friction'", "number")
    only(tmp_path, "env.json")


def test_row11_config_type_error_names_file_table_and_key(tmp_path, capfd, no_model):
    cfg = tmp_path / "snake.toml"
    cfg.write_text('[solver]\nnewton_iterations = "four"\n')
    line = fails(
        ["gait", "--config", cfg, "--out", tmp_path / "D"],
        capfd,
        str(cfg),
        "[solver]",
        "'newton_iterations'",
        "integer",
        '"four"',
    )
    assert line.startswith("softsnake gait: error:")
    cfg.write_text("[pneumatics]\nlatency = 1\n")
    fails(["info", "--config", cfg], capfd, "[pneumatics]", "'latency'", "true or false")
    vine = tmp_path / "vine.toml"
    vine.write_text("[vine]\nlinks = 10\nstifness = 0.1\n")
    fails(["vine", "rollout", "--config", vine, "--out", tmp_path / "D"], capfd, str(vine), "'stifness'", "stiffness")


def test_row12_seed_error_names_the_argument(tmp_path, capfd):
    fails(
        ["vinemap", "explore", "--random", "uniform", "--seed", "-1", "--out", tmp_path / "D"],
        capfd,
        "argument --seed",
        "≥ 0",
    )
    fails(
        ["vinemap", "explore", "--random", "uniform", "--seed", "x", "--out", tmp_path / "D"],
        capfd,
        "argument --seed",
        "integer",
    )


def test_row13_too_short_run_is_refused_before_building(tmp_path, capfd, no_model):
    fails(["gait", "--seconds", "0.001", "--out", tmp_path / "D"], capfd, "--seconds", "one frame")
    fails(["step-response", "--seconds", "0.001", "--out", tmp_path / "D"], capfd, "--seconds", "one frame")
    fails(["demo", "--seconds", "0.001", "--dt", "0.01", "--out", tmp_path / "D"], capfd, "--seconds", "one step")
    only(tmp_path)


def test_row14_out_of_range_values_are_errors_not_silently_changed(tmp_path, capfd, no_model):
    fails(["gait", "--usd-every", "0", "--out", tmp_path / "D"], capfd, "--usd-every", "≥ 1")
    fails(
        ["vinemap", "explore", "--random", "uniform", "--deployments", "101", "--out", tmp_path / "D"],
        capfd,
        "--deployments",
        "≤ 100",
    )
    fails(
        ["vinemap", "explore", "--random", "uniform", "--turns", "--deployments", "571", "--out", tmp_path / "D"],
        capfd,
        "--deployments",
        "≤ 570",
    )
    only(tmp_path)


def test_row15_no_raw_warp_driver_lines(tmp_path):
    import warp as wp

    r = run_softsnake(["demo", "--seconds", "0.01", "--quiet"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not answer_lines(r.stderr), r.stderr
    if not wp.is_cuda_available():
        r = run_softsnake(["gait", "--device", "cuda", "--out", tmp_path / "D"], cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.splitlines() == [
            "softsnake gait: error: unknown or unavailable device 'cuda' (available: cpu)"
        ], r.stderr
        r = run_softsnake(["gait", "--device", "cuda", "--verbose", "--out", tmp_path / "D"], cwd=tmp_path)
        assert r.returncode == 2 and "Warp" in r.stderr  # --verbose shows the driver's lines
    only(tmp_path)


def test_row16_first_use_compilation_is_announced_and_counted(tmp_path, monkeypatch, capsys):
    import warp as wp

    from softsnake.sim import warp_runtime
    from softsnake.sim.warp_runtime import compile_kernels, kernels_to_compile

    compile_kernels("cpu")  # compiles (or finds) the engine's kernels
    capsys.readouterr()
    assert not kernels_to_compile("cpu")
    assert compile_kernels("cpu") == 0 and not capsys.readouterr().err  # all cached: silent
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path))  # an empty cache: everything is to compile
    assert "softsnake.kernels.step_primal" in kernels_to_compile("cpu")
    two = {
        k: v
        for k, v in warp_runtime._engine_modules().items()
        if k in ("softsnake.kernels.actuation", "softsnake.kernels.integrate")
    }
    monkeypatch.setattr(warp_runtime, "_engine_modules", lambda: two)  # compile two small modules, not all
    assert compile_kernels("cpu") == 2
    err = capsys.readouterr().err
    assert err.startswith("softsnake: compiling 2 Warp kernel modules") and "first use" in err
    assert "2/2" in err  # the count while they compile
    monkeypatch.setattr(wp.config, "kernel_cache_dir", str(tmp_path / "again"))
    assert compile_kernels("cpu", bar=False, workers=1) == 2 and "/2" not in capsys.readouterr().err  # the line only


def test_row17_docs_python_blocks_are_self_contained(tmp_path, monkeypatch):
    from test_docs import code_blocks, run_python_block

    blocks = code_blocks(ROOT / "docs" / "engine.md", "python")
    rigid = [b for b in blocks if "add_joint_revolute" in b]
    assert rigid, "the Rigid bodies block"
    monkeypatch.chdir(tmp_path)
    run_python_block(rigid[0])  # alone, in a fresh namespace


def test_row18_readme_numbers_point_to_their_commands(tmp_path, capfd):
    readme = (ROOT / "README.md").read_text()
    results = readme[readme.index("## Results") :]
    assert "benchmarks/RESULTS.md" in results[: results.index("\n## ", 5)]
    code, out, _ = cli(
        ["gait", "--coarse", "--seconds", "0.05", "--no-usd", "--no-gif", "--quiet", "--json", "--out", tmp_path / "g"],
        capfd,
    )
    assert code == 0
    summary = json.loads(out)
    assert np.shape(summary["displacement_m"]) == (1, 2) and len(summary["speed_body_lengths_per_s"]) == 1


def test_row19_info_output_loads_with_config(tmp_path, capfd):
    from softsnake.robots.snake import SnakeConfig

    code, out, _ = cli(["info"], capfd)
    assert code == 0 and "Table I" in out
    path = tmp_path / "info.toml"
    path.write_text(out)
    assert SnakeConfig.from_toml(path) == SnakeConfig()
    code, out2, err = cli(["info", "--config", path], capfd)
    assert code == 0 and out2 == out, err


def test_row20_example_environment_and_gitignore(tmp_path, capfd):
    from softsnake.vinemap.environment import load_environment

    env = load_environment(str(EXAMPLE_ENV))
    assert len(env.obstacles) == 2
    assert "examples/vinemap_environment.json" in (ROOT / "docs" / "vinemap.md").read_text()
    assert re.search(r"^/?runs/$", (ROOT / ".gitignore").read_text(), re.M)
    code, out, _ = cli(
        ["vinemap", "deploy", "--env", EXAMPLE_ENV, "--launch", "0.3333,0.03,80", "--out", tmp_path / "dep"], capfd
    )
    assert code == 0 and json.loads((tmp_path / "dep" / "result.json").read_text())["shape"]


def test_row21_every_command_is_registered_and_vinemap_import_errors_surface(monkeypatch):
    import argparse

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {"demo", "gait", "curvature", "step-response", "bench", "info", "vine", "vinemap"} <= set(sub.choices)
    monkeypatch.setitem(sys.modules, "softsnake.vinemap.cli", None)  # the import now fails
    with pytest.raises(ImportError):
        build_parser()
    sources = "".join(p.read_text() for p in (ROOT / "softsnake").rglob("*.py"))
    assert "engine-info" not in sources
    # the end-to-end runs of demo, curvature, step-response, info, bench, vinemap and vine: tests/test_cli_commands.py
