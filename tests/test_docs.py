"""Docs that cannot rot: every fenced Python block of README.md and docs/*.md runs, alone, and every ``softsnake``
command of their bash blocks runs through ``softsnake.cli.main``; the README stays short, the docs cite only what a
user can open (no commit hashes, no files outside the repository, no missing paths), and every section of
benchmarks/RESULTS.md says how to reproduce it.

Substitutions: in Python blocks, integer step counts ``range(N)`` and ``.rollout(N)`` are cut to
``SOFTSNAKE_DOC_STEPS`` (default 2); shell commands get ``--coarse`` and short durations (``SHORT`` below), paths
under ``assets/`` point into this repository and optional ``[...]`` flags are dropped. Blocks and commands run in an
empty temporary folder, commands in the order the docs give them (a later one may read an earlier one's output).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from cli_helpers import ROOT
from softsnake.cli import main

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
STEPS = int(os.environ.get("SOFTSNAKE_DOC_STEPS", "2"))


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
    "optimize": {
        "--generations": "1",
        "--popsize": "2",
        "--seconds": "0.1",
        "--settle": "0.05",
        "--no-check": None,
        "--coarse": None,
        "--quiet": None,
    },
    "sweep": {"--seconds": "0.1", "--settle": "0.05", "--processes": "0", "--quiet": None},
}


def docs_commands() -> list[str]:
    """Every ``softsnake ...`` command of the bash blocks of the README and docs/*.md, in that order, each once
    (continuations joined, comments dropped)."""
    commands = []
    for doc in DOCS:
        for block in code_blocks(doc, "bash"):
            for line in block.replace("\\\n", " ").splitlines():
                line = re.sub(r"\s#.*$", "", line).strip()
                for part in line.split("&&"):
                    if part.strip().startswith("softsnake "):
                        commands.append(" ".join(part.split()))
    return list(dict.fromkeys(commands))


def shorten(command: str) -> list[str]:
    argv = shlex.split(re.sub(r"\[[^\]]*\]", "", command))[1:]
    name = argv[1] if argv[0] in ("vine", "vinemap") else argv[0]
    for flag, value in SHORT.get(name, {}).items():
        if flag == "--coarse" and "--resume" in argv:
            continue  # a resumed run keeps the checkpoint's snake
        if flag in argv:
            if value is not None:
                argv[argv.index(flag) + 1] = value
        else:
            argv += [flag] if value is None else [flag, value]
    return [str(ROOT / a) if a.startswith(("assets/", "examples/")) else a for a in argv]


COMMANDS = docs_commands()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("readme")


def test_readme_lists_the_commands():
    names = {shlex.split(c)[1] for c in COMMANDS}
    assert {"gait", "info", "curvature", "step-response", "bench", "vine"} <= names, names


#: the files each command writes into its --out folder
OUTPUTS = {
    "gait": ("trajectory.npz", "trajectory.png", "summary.json", "checkpoint.npz"),
    "curvature": ("curvature.csv", "curvature.png"),
    "step-response": ("step_response.npz", "step_response.png"),
    "rollout": ("rollout.npz", "rollout.png", "summary.json"),
    "replay": ("replay.npz", "replay.json", "replay.png"),
    "batch": ("batch.json", "batch.png"),
    "optimize": ("best_gait.json", "convergence.csv", "convergence.png", "summary.json"),
    "sweep": ("sweep.csv", "sweep.png"),
}


def check_outputs(name: str, argv: list[str], stdout: str) -> None:
    import json

    import numpy as np

    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    for f in OUTPUTS.get(name, ()):
        assert (out / f).stat().st_size > 0, out / f
    if name == "gait":
        flags = ("--omega", "--alpha", "--phi", "--amplitude")
        lists = [argv[argv.index(f) + 1].split(",") for f in flags if f in argv]
        worlds = max([1, *map(len, lists)])  # a comma-separated list gives one world per value
        assert np.load(out / "trajectory.npz")["com"].shape[1:] == (worlds, 3)
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
def test_docs_command_runs(command, workdir, monkeypatch, capfd):
    argv = shorten(command)
    monkeypatch.chdir(workdir)
    code = main(argv)
    stdout, err = capfd.readouterr()
    assert code == 0, (argv, err)
    check_outputs(argv[1] if argv[0] == "vine" else argv[0], argv, stdout)


# ------------------------------------------------------------------------------------------------ what docs may cite
#: a commit hash: 7–40 hex digits with at least one digit and one letter, standing alone
HASH = re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
#: a path inside the repository, as the docs write them in backticks
REPO_PATH = re.compile(r"`((?:assets|benchmarks|docs|examples|kernels|softsnake|tests)/[\w./-]*\w)`")


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_docs_cite_only_what_a_user_can_open(doc):
    text = doc.read_text()
    assert not HASH.findall(text), f"{doc.name}: commit hashes {HASH.findall(text)[:5]} (history belongs in git)"
    assert "solver notes" not in text and "shared/" not in text, doc.name
    missing = [p for p in REPO_PATH.findall(text) if not (ROOT / p).exists() and not any(ROOT.glob(p))]
    assert not missing, f"{doc.name} names files that do not exist: {missing}"


def test_results_sections_say_how_to_reproduce_them():
    """Every table section of benchmarks/RESULTS.md names its command, device and date."""
    text = (ROOT / "benchmarks" / "RESULTS.md").read_text()
    sections = re.split(r"^## ", text, flags=re.M)[1:]
    assert sections
    for section in sections:
        title = section.splitlines()[0]
        if "|" not in section:
            continue  # a section without a table (an index, notes)
        for field in ("Command:", "Device:", "Date:"):
            assert field in section, f"RESULTS.md section {title!r} lacks {field}"
