"""Edges a new user met (bad files, signals, reused output folders, unbounded rates and counts, Warp's chatter) and
the command-line features they missed (--version, --resume, the animation): each test fails without its fix."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from cli_helpers import ROOT, cli, drop_ctrl_c, fails, run_python, signal_during_explore

ASSETS = ROOT / "assets" / "vine"


def only(folder, *names):
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


@pytest.fixture
def damaged(tmp_path):
    """A truncated .npz, random bytes named .npz and .npy, a binary .rects, an empty reference csv."""
    files = {}
    files["truncated"] = tmp_path / "truncated.npz"
    files["truncated"].write_bytes((ASSETS / "jitosho_wall_fit.npz").read_bytes()[:3000])
    noise = np.random.default_rng(0).bytes(2000)
    for name in ("noise.npz", "noise.npy", "noise.rects"):
        files[name] = tmp_path / name
        files[name].write_bytes(noise)
    files["empty.csv"] = tmp_path / "empty.csv"
    files["empty.csv"].write_text("x1,x2,x3\n")
    return files


def test_damaged_npz_and_npy_give_one_line_naming_the_file(tmp_path, damaged, capfd):
    for name in ("truncated", "noise.npz"):
        line = fails(["vine", "fit", "--wall", damaged[name], "--out", tmp_path / "p.toml"], capfd, str(damaged[name]))
        assert "allow_pickle" not in line and "BadZipFile" not in line
    video = tmp_path / "vid"
    video.mkdir()
    (video / "points.npy").write_bytes(damaged["noise.npy"].read_bytes())
    (video / "walls.npy").write_bytes(damaged["noise.npy"].read_bytes())
    line = fails(
        ["vine", "fit", "--video", video, "--out", tmp_path / "p.toml"],
        capfd,
        str(video / "points.npy"),
        "not a NumPy .npy file",
    )
    assert "allow_pickle" not in line
    only(tmp_path, *[p.name for p in damaged.values()], "vid")


def test_damaged_checkpoint_is_a_value_error_naming_it(damaged):
    from softsnake.robots.snake_sim import SnakeSim

    for name, words in (("truncated", "damaged or truncated"), ("noise.npz", "not a NumPy .npz file")):
        with pytest.raises(ValueError, match=words) as err:
            SnakeSim.load(damaged[name])
        assert str(damaged[name]) in str(err.value) and "allow_pickle" not in str(err.value)


def test_binary_rects_and_empty_reference_csv(tmp_path, damaged, capfd):
    fails(
        ["vine", "rollout", "--rects", damaged["noise.rects"], "--out", tmp_path / "D"],
        capfd,
        str(damaged["noise.rects"]),
        "not text",
    )
    line = fails(
        ["vine", "rollout", "--reference", damaged["empty.csv"], "--out", tmp_path / "D"],
        capfd,
        str(damaged["empty.csv"]),
        "no rows",
    )
    assert "site-packages" not in line and "Warning" not in line and "columns" not in line
    assert not (tmp_path / "D").exists()


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_clean_up_like_ctrl_c(tmp_path, sig, code):
    status, err = signal_during_explore(tmp_path, sig)
    assert status == code, err
    assert err.strip().splitlines()[-1] == f"softsnake: stopped by {signal.Signals(sig).name}; no output was written"
    assert "Traceback" not in err
    only(tmp_path)


def test_ignored_hangup_stays_ignored():
    """Under ``nohup`` (SIGHUP ignored) a command keeps running through a hang-up. (Ctrl-C starts at Python's own
    handler here, whatever the test runner inherited: a background job without job control starts with SIGINT
    ignored, which the command keeps ignored as it keeps SIGHUP.)"""
    from softsnake import cli as cli_module

    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with cli_module._stop_on_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is cli_module._raise_stopped
            assert signal.getsignal(signal.SIGINT) is cli_module._raise_interrupt  # Ctrl-C remembered too
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # an ignored Ctrl-C stays ignored too
        with cli_module._stop_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
        signal.signal(signal.SIGINT, previous_int)


def test_output_folder_holds_only_the_last_runs_files(tmp_path, capfd):
    out = tmp_path / "D"
    out.mkdir()
    (out / "notes.txt").write_text("mine")  # the user's own file is kept
    base = ["gait", "--coarse", "--seconds", "0.05", "--quiet", "--no-gif", "--out", out]
    assert cli(base, capfd)[0] == 0
    assert (out / "snake.usdc").exists()
    assert cli(base + ["--usd-format", "usda"], capfd)[0] == 0
    assert (out / "snake.usda").exists() and not (out / "snake.usdc").exists()
    assert cli(base + ["--no-usd"], capfd)[0] == 0
    only(out, ".softsnake-outputs", "notes.txt", "trajectory.npz", "trajectory.png", "summary.json", "checkpoint.npz")


def test_out_where_files_cannot_be_created_names_that_folder(capfd):
    if not os.path.isdir("/proc/self"):
        pytest.skip("no /proc on this system")
    line = fails(["gait", "--coarse", "--out", "/proc/x"], capfd, "'/proc/x'", "'/proc'", "does not accept new files")
    assert not line.endswith("cannot be created or written (No such file or directory)")


def test_rates_and_counts_are_bounded_with_a_reason(tmp_path, capfd):
    fails(["gait", "--coarse", "--omega", "1e12", "--out", tmp_path / "D"], capfd, "--omega", "≤ 15 Hz", "frame")
    fails(["gait", "--coarse", "--omega", "-1", "--out", tmp_path / "D"], capfd, "--omega", "≥ 0")
    fails(["bench", "--coarse", "--frames", "1000000000000"], capfd, "--frames", "≤ 100000", "mean")
    only(tmp_path)


def test_a_run_over_an_hour_says_how_long_first(tmp_path, capfd, monkeypatch):
    from softsnake.robots import snake_sim

    calls = {"n": 0}

    def slow_step(self, frames=1):  # 0.2 s per frame: 6 million frames are ~2 weeks
        calls["n"] += 1
        if calls["n"] > 8:
            raise KeyboardInterrupt
        time.sleep(0.2)
        self.frame += 1
        self.time = self.frame * self.config.frame_dt

    monkeypatch.setattr(snake_sim.SnakeSim, "step", slow_step)
    code, _, err = cli(
        ["gait", "--coarse", "--seconds", "100000", "--quiet", "--no-usd", "--no-gif", "--out", tmp_path / "D"], capfd
    )
    assert code == 130
    assert err[0].startswith("softsnake gait: this run will take about ") and "days" in err[0], err
    assert err[-1] == "softsnake: interrupted; no output was written"
    only(tmp_path)


def test_bench_estimate_comes_before_a_long_bench(monkeypatch, capsys):
    import argparse

    from softsnake.experiments import bench
    from softsnake.experiments import cli as snake_cli

    monkeypatch.setattr(bench, "bench_snakes", lambda *a, **k: {"ms_total": 250.0})
    args = argparse.Namespace(prog="softsnake bench", snake_counts=[1.0, 4.0], frames=100_000, device="cpu", cfg=None)
    snake_cli._bench_time_notice(args)
    assert capsys.readouterr().err.startswith("softsnake bench: this run will take about 14 h")


def test_version_and_linear_solver_named_as_it_runs(capfd):
    import softsnake

    code, out, _ = cli(["--version"], capfd)
    assert code == 0 and out.strip() == f"softsnake {softsnake.__version__}"
    code, out, _ = cli(["info", "--coarse"], capfd)
    assert code == 0 and "4 Newton × 20 MINRES" in out and "PCR" not in out
    code, out, _ = cli(["demo", "--seconds", "0.01", "--quiet"], capfd)
    assert code == 0 and "MINRES iterations" in out and "PCR" not in out
    code, out, _ = cli(["gait", "--help"], capfd)
    assert code == 0 and "MINRES" in out


def test_license_file_matches_the_declared_license():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


QUIET_SCRIPT = """
import softsnake as ss
{switch}
b = ss.ModelBuilder()
b.add_particle((0.0, 0.0, 1.0), mass=1.0)
model = b.finalize(device="cpu")
state = model.state()
ss.Solver(model, dt=0.01).step(state)
print("done")
"""


def test_api_scripts_are_quiet_unless_asked(tmp_path):
    quiet = run_python(QUIET_SCRIPT.format(switch=""), tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "done\n"
    loud = run_python(QUIET_SCRIPT.format(switch="ss.show_warp_messages()"), tmp_path)
    assert loud.returncode == 0 and "Warp" in loud.stdout and "Module softsnake.kernels" in loud.stdout, loud.stdout


IMPORT_FROM_ROOT = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]  # as after `pip install .`
sys.path.insert(0, {root!r})
import softsnake, softsnake.kernels.tet
assert softsnake.__file__.startswith({root!r}), softsnake.__file__
print(softsnake.kernels.tet.__name__)
"""


def test_imports_work_from_the_repository_root():
    r = subprocess.run(
        [sys.executable, "-c", IMPORT_FROM_ROOT.format(root=str(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout.strip() == "softsnake.kernels.tet", r.stderr


IMPORT_BESIDE_ANOTHER_CHECKOUT = """
import importlib.util, sys
from importlib.machinery import PathFinder
class Other:  # an editable install of another checkout, mapping softsnake.kernels to its kernels
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "softsnake.kernels":
            return importlib.util.spec_from_file_location(
                name, {other!r} + "/__init__.py", submodule_search_locations=[{other!r}]
            )
        return None
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()] + [Other]
sys.path.insert(0, {root!r})
import softsnake, softsnake.kernels.tet
print(softsnake.kernels.tet.__file__)
"""


def test_a_checkout_imports_its_own_kernels_beside_another_editable_install(tmp_path):
    """A git worktree run with PYTHONPATH on an environment that has another checkout installed editable: softsnake
    and its kernels both come from the worktree."""
    other = tmp_path / "kernels"
    other.mkdir()
    (other / "__init__.py").write_text("raise ImportError('the other checkout')\n")
    script = IMPORT_BESIDE_ANOTHER_CHECKOUT.format(root=str(ROOT), other=str(other))
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == str(ROOT / "kernels" / "tet.py"), r.stderr


def test_gait_resume_continues_the_run_and_writes_the_animation(tmp_path, capfd):
    from PIL import Image

    common = ["--quiet", "--no-usd"]
    assert cli(["gait", "--coarse", "--seconds", "0.2", *common, "--out", tmp_path / "whole"], capfd)[0] == 0
    assert cli(["gait", "--coarse", "--seconds", "0.1", *common, "--out", tmp_path / "first"], capfd)[0] == 0
    code, out, err = cli(
        [
            "gait",
            "--resume",
            tmp_path / "first" / "checkpoint.npz",
            "--seconds",
            "0.1",
            *common,
            "--json",
            "--out",
            tmp_path / "second",
        ],
        capfd,
    )
    assert code == 0, err
    summary = json.loads(out)
    assert summary["start_seconds"] == pytest.approx(0.1) and summary["seconds"] == pytest.approx(0.2)
    whole, second = (np.load(tmp_path / d / "trajectory.npz") for d in ("whole", "second"))
    assert np.array_equal(whole["com"][-1], second["com"][-1])  # the CPU resumes bit for bit
    assert np.array_equal(whole["t"][-6:], second["t"])
    with Image.open(tmp_path / "whole" / "snake.gif") as gif:
        assert gif.n_frames == 1 + 12 // 4  # 15 fps of 60 Hz frames, and the start
    fails(
        ["gait", "--resume", tmp_path / "first" / "checkpoint.npz", "--coarse", "--out", tmp_path / "x"],
        capfd,
        "--resume",
        "--coarse",
    )


def test_checkpoints_of_another_format_are_refused_in_one_line(tmp_path, capfd):
    from softsnake.robots.snake_sim import CHECKPOINT_VERSION, SnakeSim

    assert (
        cli(
            ["gait", "--coarse", "--seconds", "0.05", "--quiet", "--no-usd", "--no-gif", "--out", tmp_path / "D"], capfd
        )[0]
        == 0
    )
    with np.load(tmp_path / "D" / "checkpoint.npz") as f:
        data = {k: f[k] for k in f.files}
    data["format"] = np.array("softsnake-snake-checkpoint-1")
    np.savez(tmp_path / "old.npz", **data)
    line = fails(
        ["gait", "--resume", tmp_path / "old.npz", "--out", tmp_path / "E"],
        capfd,
        "old.npz",
        "format 1",
        f"format {CHECKPOINT_VERSION} only",
    )
    with pytest.raises(ValueError) as err:
        SnakeSim.load(tmp_path / "old.npz")
    assert str(err.value) in line
    data["format"] = np.array("something else")
    np.savez(tmp_path / "other.npz", **data)
    fails(
        ["gait", "--resume", tmp_path / "other.npz", "--out", tmp_path / "E"], capfd, "not a softsnake snake checkpoint"
    )


def test_a_stop_signal_wrapped_by_python_still_stops_the_command():
    """A SIGTERM that lands in a class body during an import reaches the command as a RuntimeError caused by the stop
    (seen in a loaded CI run: matplotlib's ``__set_name__``); it still ends the command like a stop, exit 143."""
    from softsnake import cli as cli_module

    def command(args):
        try:
            cli_module._raise_stopped(signal.SIGTERM, None)
        except cli_module.Stopped as stop:
            raise RuntimeError("Error calling __set_name__") from stop

    parser = cli_module.build_parser()
    args = parser.parse_args(["info"])
    args.func, args.check = command, (lambda a: None)
    original = cli_module.build_parser

    class Parser:
        def parse_args(self, argv):
            return args

    cli_module.build_parser = lambda: Parser()
    try:
        assert cli_module.main(["info"]) == 143
    finally:
        cli_module.build_parser = original


def swallowed_sigterm() -> None:
    """A SIGTERM that lands inside matplotlib's optional 3-D import: the stop, wrapped by Python in a RuntimeError
    (above), is caught with every Exception and the import goes on."""
    from softsnake import cli as cli_module

    try:
        try:
            cli_module._raise_stopped(signal.SIGTERM, None)
        except cli_module.Stopped as stop:
            raise RuntimeError("Error calling __set_name__") from stop
    except Exception:
        pass  # what matplotlib/projections/__init__.py does with a failed optional import


@pytest.mark.parametrize("swallow, code", [(swallowed_sigterm, 143), (drop_ctrl_c, 130)])
def test_a_stop_signal_swallowed_on_its_way_still_stops_the_command(tmp_path, monkeypatch, swallow, code):
    """Two ways a stop went missing in CI runs: a SIGTERM inside matplotlib's optional 3-D import (exit 0 and a
    complete output), and a Ctrl-C inside a Warp array's ``__del__``, which Python reports and drops (a sweep ran on
    to a complete table). The command still ends like the stop when its work returns, exit 143 or 130, and its
    outputs are not published."""
    from softsnake import cli as cli_module

    def command(args):
        (args.out / "table.csv").write_text("written before the stop was noticed\n")
        swallow()

    args = cli_module.build_parser().parse_args(["info"])
    args.func, args.check, args.stage, args.out = command, (lambda a: None), "out", tmp_path / "D"

    class Parser:
        def parse_args(self, argv):
            return args

    monkeypatch.setattr(cli_module, "build_parser", lambda: Parser())
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: None)
    assert cli_module.main(["info"]) == code
    assert list(tmp_path.iterdir()) == []


def test_bench_writes_no_table_after_a_dropped_ctrl_c(tmp_path, monkeypatch, capfd):
    """``softsnake bench`` writes its table at the end, outside a staged folder: a Ctrl-C that Python dropped during
    the runs (inside a destructor) ends it before the table, exit 130."""
    from softsnake.experiments import bench

    measure = bench.bench_snakes

    def bench_snakes(*args, **kwargs):
        row = measure(*args, **kwargs)
        drop_ctrl_c()
        return row

    monkeypatch.setattr(bench, "bench_snakes", bench_snakes)
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: None)
    table = tmp_path / "bench.csv"
    code, _, err = cli(["bench", "--coarse", "--snakes", "0.25", "--frames", "1", "--json", "--csv", table], capfd)
    assert code == 130 and err[-1] == "softsnake: interrupted; no output was written", err
    assert not table.exists()
