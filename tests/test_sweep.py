"""``softsnake sweep``: the same table locally (process pool), in-process and through a local Ray cluster; an
interrupted sweep resumes without redoing finished batches; bad specs are refused with the file and key named."""

import os
import signal
import subprocess
import sys
import time

import pytest

from cli_helpers import cli, drop_ctrl_c, fails
from softsnake.experiments.sweep import kept_signal_handlers, load_spec, run_sweep, write_table

SPEC = """
[sweep]
mode = "grid"
seconds = 0.3
settle = 0.1
coarse = true
worlds_per_batch = 2

[gait]
phi = [-0.3, 0.3]
omega_hz = 2.5

[snake]
mu = [0.6, 0.8, 1.0]
"""


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The spec and its table from the default local run (one worker process)."""
    folder = tmp_path_factory.mktemp("sweep")
    spec = folder / "spec.toml"
    spec.write_text(SPEC)
    from softsnake.cli import main

    assert main(["sweep", str(spec), "--out", str(folder / "local"), "--quiet"]) == 0
    return spec, (folder / "local" / "sweep.csv").read_text()


def test_the_table_has_every_point_and_its_metrics(local):
    spec, table = local
    lines = table.splitlines()
    assert lines[0] == (
        "point,gait.omega_hz,gait.phi,snake.mu,speed_body_lengths_per_s,displacement_x_m,displacement_y_m,turn_rad,"
        "diverged"
    )
    assert len(lines) == 1 + 6 and all(line.endswith(",false") for line in lines[1:])
    assert len(load_spec(spec).points) == 6


def test_a_local_ray_cluster_gives_the_same_table(local, tmp_path):
    ray = pytest.importorskip("ray")
    spec_path, table = local
    with kept_signal_handlers():  # Ray's own SIGTERM handler would outlive this test in the worker process
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        spec = load_spec(spec_path)
        rows, computed = run_sweep(spec, tmp_path / "ray", ray_address="local")
    finally:
        ray.shutdown()
    assert computed == 3
    write_table(spec, rows, tmp_path / "ray.csv")
    assert (tmp_path / "ray.csv").read_text() == table


def test_an_interrupted_sweep_resumes_without_redoing_finished_batches(local, tmp_path, capfd):
    spec, table = local
    out = tmp_path / "resumed"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(
        [sys.executable, "-P", "-m", "softsnake.cli", "sweep", str(spec), "--out", str(out), "--processes", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 120
    while not (out / "batches" / "0000-0000.json").exists() and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    saved = len(list((out / "batches").glob("*.json")))
    if p.returncode == 0:
        pytest.skip("the sweep finished before the signal arrived (a very fast machine)")
    assert p.returncode == 130, err
    assert f"{saved} of 3 batches are saved" in err and "run the same command to resume" in err
    assert not (out / "sweep.csv").exists()  # no table that looks complete
    code, stdout, _ = cli(["sweep", spec, "--out", out, "--processes", "0", "--quiet"], capfd)
    assert code == 0 and f"resumed: {saved} of 3 batches were already done" in stdout
    assert (out / "sweep.csv").read_text() == table


def test_a_ctrl_c_dropped_during_a_batch_stops_the_sweep_after_it(local, tmp_path, capfd, monkeypatch):
    """A Ctrl-C that Python drops (raised inside a destructor, as a Warp array's ``__del__`` in a CI run) stops the
    sweep at the end of the batch it came in: that batch saved, no table, exit 130 (softsnake.cli.raise_if_stopped)."""
    from softsnake.experiments import sweep as sweep_module

    run_batch = sweep_module.run_batch

    def interrupted_batch(batch, device="cpu"):
        result = run_batch(batch, device)
        drop_ctrl_c()
        return result

    monkeypatch.setattr(sweep_module, "run_batch", interrupted_batch)
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: None)
    spec, _ = local
    out = tmp_path / "out"
    code, _, err = cli(["sweep", spec, "--out", out, "--processes", "0", "--quiet"], capfd)
    assert code == 130 and any("interrupted; 1 of 3 batches are saved" in line for line in err), err
    assert len(list((out / "batches").glob("*.json"))) == 1 and not (out / "sweep.csv").exists()


def test_a_folder_of_another_sweep_is_refused(local, tmp_path, capfd):
    spec, _ = local
    out = tmp_path / "out"
    out.mkdir()
    (out / "spec.toml").write_text("[sweep]\n")
    fails(["sweep", spec, "--out", out], capfd, "holds another sweep")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    fails(["sweep", spec, "--out", tmp_path / "full"], capfd, "not empty and holds no sweep")


@pytest.mark.parametrize(
    "text, needles",
    [
        ("[sweep]\nmode = 'spiral'\n", ("[sweep] mode", "grid")),
        ("[gait]\nspeed = [1, 2]\n", ("[gait]: unknown key(s) speed",)),
        ("[robot]\nx = 1\n", ("unknown table(s) robot",)),
        ("[gait]\nphi = []\n", ("[gait] phi: an empty list",)),
        ("[gait]\nphi = {low = -0.5, high = 0.5}\n", ('need mode = "random"',)),
        ("[sweep]\nmode = 'random'\n[gait]\nphi = {low = -0.5, high = 0.5}\n", ("samples: random mode needs",)),
        ("[sweep]\nmode = 'random'\nsamples = 3\n[gait]\nphi = {low = 0.5, high = -0.5}\n", ("a < b",)),
        ("[gait]\nphi = [0.0, 2.0]\n", ("point 1 (gait.phi = 2.0)", "must be in [-1, 1]")),
        ("[snake]\nmu = [1.0, -1.0]\n", ("point 1 (snake.mu = -1.0)", "mu")),
        ("[solver]\nnewton_iterations = [4, 'many']\n", ("point 1", "newton_iterations")),
        ("[sweep]\nseconds = 1.0\nsettle = 2.0\n", ("settle (2 s) must be below seconds",)),
        ("[sweep]\nsamples = 4\n", ('samples: only for mode = "random"',)),
        ("[gait\n", ("sweep spec",)),
    ],
)
def test_bad_specs_are_refused_with_the_file_and_key_named(text, needles, tmp_path, capfd):
    spec = tmp_path / "bad.toml"
    spec.write_text(text)
    fails(["sweep", spec, "--out", tmp_path / "out"], capfd, "bad.toml", *needles)
    assert not (tmp_path / "out").exists()  # nothing written


def test_a_random_sweep_draws_the_same_points_from_the_same_seed(tmp_path):
    spec = tmp_path / "random.toml"
    spec.write_text(
        "[sweep]\nmode = 'random'\nsamples = 5\nseed = 3\n[gait]\nomega_hz = {low = 0.5, high = 3.0}\n"
        "alpha = [1.0, 1.5]\n"
    )
    a, b = load_spec(spec), load_spec(spec)
    assert a.points == b.points and len(a.points) == 5
    assert all(0.5 <= p["gait.omega_hz"] <= 3.0 and p["gait.alpha"] in (1.0, 1.5) for p in a.points)
