"""Docs that cannot rot: every fenced Python block of README.md and docs/*.md runs, alone, and every ``softsnake``
command of the README runs through ``softsnake.cli.main``.

Documented substitutions (README, "Docs are tested"): in Python blocks, integer step counts ``range(N)`` and
``.rollout(N)`` are cut to ``SOFTSNAKE_DOC_STEPS`` (default 2); shell commands get ``--coarse`` and short durations
(``SHORT`` below), the vine data paths point at ``shared/data/vine`` and optional ``[...]`` flags are dropped. Blocks
run in an empty temporary folder.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from cli_helpers import ROOT
from conftest import require_vine_data, vine_data_dir
from softsnake.cli import main

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STEPS = int(os.environ.get("SOFTSNAKE_DOC_STEPS", "2"))
DATA = vine_data_dir() or ROOT / "assets" / "vine"  # conftest.vine_data_dir: where the vine data lives


def code_blocks(path: Path, lang: str) -> list[str]:
    """The fenced blocks of ``path`` opened with ```` ```lang ````."""
    return re.findall(rf"^```{lang}\n(.*?)^```", path.read_text(), flags=re.S | re.M)


def run_python_block(source: str) -> dict:
    """Execute a docs block in a fresh namespace, with step counts cut to STEPS; returns the namespace."""
    short = re.sub(r"\b(range|rollout)\((\d+)\)", lambda m: f"{m[1]}({min(int(m[2]), STEPS)})", source)
    namespace = {"__name__": "__docs__"}
    exec(compile(short, "<docs block>", "exec"), namespace)
    return namespace


PY_BLOCKS = [(p.relative_to(ROOT).as_posix(), i, b) for p in DOCS for i, b in enumerate(code_blocks(p, "python"))]


@pytest.mark.parametrize("doc, index, source", PY_BLOCKS, ids=[f"{d}#{i}" for d, i, _ in PY_BLOCKS])
def test_python_block_runs_alone(doc, index, source, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run_python_block(source)


# ------------------------------------------------------------------------------------------------ shell commands
#: short runs of the README's commands: flag → value (a command keeps its own flags otherwise)
SHORT = {
    "gait": {"--seconds": "0.05", "--coarse": None, "--no-usd": None, "--quiet": None},
    "curvature": {"--seconds": "0.5", "--max-psi": "8", "--step-psi": "4", "--coarse": None, "--quiet": None},
    "step-response": {"--seconds": "0.05", "--coarse": None, "--quiet": None},
    "bench": {"--snakes": "0.25", "--frames": "1", "--coarse": None},
    "info": {"--coarse": None},
    "rollout": {"--seconds": "0.05"},
    "batch": {"--seconds": "0.05", "--vines": "2"},
    "fit": {"--popsize": "2", "--generations": "1", "--quiet": None},
}


def readme_commands() -> list[str]:
    """Every ``softsnake ...`` command of the README's bash blocks (continuations joined, comments dropped)."""
    commands = []
    for block in code_blocks(ROOT / "README.md", "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s#.*$", "", line).strip()
            for part in line.split("&&"):
                if part.strip().startswith("softsnake "):
                    commands.append(" ".join(part.split()))
    return commands


def shorten(command: str) -> list[str]:
    argv = shlex.split(re.sub(r"\[[^\]]*\]", "", command))[1:]
    name = argv[1] if argv[0] in ("vine", "vinemap") else argv[0]
    for flag, value in SHORT.get(name, {}).items():
        if flag in argv:
            if value is not None:
                argv[argv.index(flag) + 1] = value
        else:
            argv += [flag] if value is None else [flag, value]
    data = {"FILE.rects": DATA / "julia_rollouts" / "rectangles_1.rects", **{f"vid{k}": DATA / "real_video" / f"vid{k}" for k in range(1, 5)}}
    return [str(data[a]) if a in data else a.replace("shared/data/vine", str(DATA)) for a in argv]


COMMANDS = readme_commands()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


def test_readme_lists_the_commands():
    names = {shlex.split(c)[1] for c in COMMANDS}
    assert {"gait", "info", "curvature", "step-response", "bench", "vine"} <= names, names


#: the files each command writes into its --out folder
OUTPUTS = {
    "gait": ("trajectory.npz", "trajectory.png", "summary.json"),
    "curvature": ("curvature.csv", "curvature.png"),
    "step-response": ("step_response.npz", "step_response.png"),
    "rollout": ("rollout.npz", "rollout.png", "summary.json"),
    "replay": ("replay.npz", "replay.json", "replay.png"),
    "batch": ("batch.json", "batch.png"),
}


def check_outputs(name: str, argv: list[str], stdout: str) -> None:
    import json

    import numpy as np

    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    for f in OUTPUTS.get(name, ()):
        assert (out / f).stat().st_size > 0, out / f
    if name == "gait":
        assert np.load(out / "trajectory.npz")["com"].shape[1:] == (1, 3)
        assert json.loads((out / "summary.json").read_text())["speed_body_lengths_per_s"]
    elif name == "curvature":
        rows = (out / "curvature.csv").read_text().splitlines()
        assert rows[0] == "pressure_psi,curvature_per_m" and len(rows) == 1 + 5
    elif name == "step-response":
        assert np.load(out / "step_response.npz")["inflate_pressure"].shape[1] == 5
    elif name == "bench":
        assert "snakes  0.25" in stdout and "steps/s" in stdout and "peak" in stdout
        for flag in ("--csv", "--plot"):
            if flag in argv:
                assert Path(argv[argv.index(flag) + 1]).stat().st_size > 0
        if "--csv" in argv:
            rows = Path(argv[argv.index("--csv") + 1]).read_text().splitlines()
            assert rows[0].startswith("snakes,worlds,device,ms_total") and len(rows) == 2
    elif name == "info":
        assert "Table I" in stdout and "[solver]" in stdout
    elif name == "fit":
        from softsnake.experiments.vine_cli import read_params_toml

        assert read_params_toml(out)[1]
    elif name == "batch":
        assert json.loads((out / "batch.json").read_text())["vines"] == 2


def _marked(command: str):
    """The video fit (30 s on one CPU core) and the replay that reads its output are ``slow`` (see README, Testing)."""
    return pytest.param(command, marks=pytest.mark.slow) if "--video" in command else command


@pytest.mark.parametrize("command", [_marked(c) for c in COMMANDS])
def test_readme_command_runs(command, workdir, monkeypatch, capfd):
    argv = shorten(command)
    if argv[0] == "vine":
        require_vine_data()  # skipped without the data, but failed under CI=true
    monkeypatch.chdir(workdir)
    code = main(argv)
    stdout, err = capfd.readouterr()
    assert code == 0, (argv, err)
    check_outputs(argv[1] if argv[0] == "vine" else argv[0], argv, stdout)
