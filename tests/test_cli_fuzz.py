"""Property-based fuzzing (Hypothesis) of the command-line parsers and the user-file loaders.

Random argument vectors and random or mutated input files must end in exit 0 or exit 2 with exactly one line on
stderr: never a traceback, never a hang. Only the parse-and-check path runs (``main(argv, check_only=True)``), so no
model is ever built and each example takes milliseconds. Examples: ``SOFTSNAKE_FUZZ_EXAMPLES`` per test (default
300 + 300); the example sequence is fixed (derandomised) so CI is reproducible, ``SOFTSNAKE_FUZZ_RANDOM=1`` explores.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import time
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cli_helpers import EXAMPLE_ENV, ROOT  # noqa: E402
from softsnake.cli import build_parser, main  # noqa: E402

EXAMPLES = int(os.environ.get("SOFTSNAKE_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not os.environ.get("SOFTSNAKE_FUZZ_RANDOM"),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RUNS = {"count": 0, "seconds": 0.0, "exit 0": 0, "exit 2": 0}


def leaves(parser, prefix=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [(prefix, parser)]
    return [leaf for a in subs for name, child in a.choices.items() for leaf in leaves(child, (*prefix, name))]


LEAVES = leaves(build_parser())
FLAGS = {
    prefix: sorted(s for a in p._actions for s in a.option_strings if s not in ("-h", "--help")) for prefix, p in LEAVES
}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A working folder with a regular file, a folder and valid example inputs; examples run inside it."""
    root = tmp_path_factory.mktemp("fuzz")
    (root / "file").write_text("x")
    (root / "dir").mkdir()
    from softsnake.robots.snake import SnakeConfig

    (root / "snake.toml").write_text(SnakeConfig().to_toml())
    (root / "env.json").write_text(EXAMPLE_ENV.read_text())
    (root / "scene.rects").write_text("2 -20 10 3\n# comment\n5 -30 4 4\n")
    (root / "vine.toml").write_text('[vine]\npreset = "chen"\nlinks = 10\nstiffness = 0.05\norigin = [0.0, 0.0]\n')
    (root / "params.toml").write_text(
        '[fit]\nmodel = "linear"\nradius_px = 12.0\nsubsteps = 1\n\n[params]\nstiffness = 0.03\ndamping = 1e-5\n'
    )
    old = Path.cwd()
    os.chdir(root)
    yield root
    os.chdir(old)


def run_checked(argv) -> None:
    """Run the parse-and-check path; assert exit 0, or exit 2 with one line on stderr and no traceback."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv), check_only=True)
    RUNS["count"] += 1
    RUNS["seconds"] += time.perf_counter() - t0
    lines = err.getvalue().splitlines()
    assert code in (0, 2), (argv, code, lines)
    RUNS[f"exit {code}"] += 1
    assert "Traceback" not in err.getvalue()
    if code == 2:
        assert len(lines) == 1 and "error" in lines[0], (argv, lines)
    else:
        assert lines == [], (argv, lines)


# ----------------------------------------------------------------------------------------------- argument vectors
WORDS = st.text(alphabet=st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), max_size=12)
VALUES = st.one_of(
    st.sampled_from(
        [
            "0",
            "1",
            "-1",
            "2",
            "0.05",
            "1e9",
            "1e300",
            "-1e-300",
            "nan",
            "inf",
            "-inf",
            "",
            " ",
            "0x10",
            "1,2",
            "0.3333,0.03,80",
            "0.5,30",
            "1,2,3,4",
            "cpu",
            "cuda",
            "cuda:7",
            "tpu",
            "uniform",
            "nonuniform",
            "linear",
            "wrinkling",
            "jitosho",
            "chen",
            "usda",
            "0.25,1",
            "0.25,,1",
            "0.5",
        ]
    ),
    st.sampled_from(
        [
            "file",
            "file/sub",
            "dir",
            "dir/new/out",
            "missing.json",
            "snake.toml",
            "env.json",
            "scene.rects",
            "vine.toml",
            "params.toml",
            "out.toml",
            "dir/p.toml",
            ".",
        ]
    ),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    WORDS,
)


@st.composite
def argument_vectors(draw):
    if draw(st.integers(0, 9)) == 0:  # sometimes anything at all
        return draw(
            st.lists(st.one_of(VALUES, st.sampled_from(["gait", "vinemap", "vine", "--out", "--help"])), max_size=6)
        )
    prefix, _ = draw(st.sampled_from(LEAVES))
    argv = list(prefix)
    for _ in range(draw(st.integers(0, 7))):
        flag = draw(st.sampled_from(FLAGS[prefix] or ["--x"]))
        argv.append(flag)
        argv += draw(st.lists(VALUES, min_size=0, max_size=2))
    if draw(st.booleans()) and "--out" in FLAGS[prefix]:
        argv += ["--out", draw(st.sampled_from(["dir/run", "new/run", "file/run", "out.toml", "dir"]))]
    return argv


@FUZZ
@given(argv=argument_vectors())
def test_random_argument_vectors_fail_cleanly(sandbox, argv):
    run_checked(argv)


# ---------------------------------------------------------------------------------------------------- input files
LOADERS = {  # file name → the command that reads it (the file's path replaces {})
    "snake.toml": ["gait", "--config", "{}", "--out", "dir/g"],
    "env.json": ["vinemap", "deploy", "--env", "{}", "--launch", "0.3333,0.03,80", "--out", "dir/v"],
    "scene.rects": ["vine", "rollout", "--rects", "{}", "--seconds", "0.05", "--out", "dir/r"],
    "vine.toml": ["vine", "batch", "--config", "{}", "--vines", "2", "--out", "dir/b"],
    "params.toml": [
        "vine",
        "replay",
        "--video",
        str(ROOT / "assets" / "vine" / "real_video" / "vid1"),
        "--params",
        "{}",
        "--out",
        "dir/p",
    ],
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated_files(draw):
    name = draw(st.sampled_from(sorted(LOADERS)))
    kind = draw(st.sampled_from(["bytes", "lines", "json"] if name.endswith(".json") else ["bytes", "lines", "value"]))
    return name, kind, draw(st.randoms(use_true_random=False)), draw(JSON_VALUES), draw(st.binary(max_size=8))


def mutate(text: str, kind: str, rnd, value, junk: bytes) -> bytes:
    data = text.encode()
    if kind == "bytes":  # flip, insert or delete a few bytes
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b) + 1)
            op = rnd.randrange(3)
            if op == 0 and i < len(b):
                b[i] = rnd.randrange(256)
            elif op == 1:
                b[i:i] = junk or b"\xff"
            elif i < len(b):
                del b[i]
        return bytes(b)
    lines = text.splitlines()
    i = rnd.randrange(len(lines))
    if kind == "lines":  # drop, duplicate or misspell a line's key
        op = rnd.randrange(3)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        else:
            lines[i] = lines[i][::-1] if rnd.random() < 0.3 else lines[i].replace("_", "", 1).replace("e", "a", 1)
        return "\n".join(lines).encode()
    if kind == "json":  # replace one value, or add a key, in the parsed JSON
        obj = json.loads(text)
        key = rnd.choice(sorted(obj) + ["robot_lenght"])
        obj[key] = value
        return json.dumps(obj).encode()
    # "value": replace the value of one `key = value` line of a TOML file with a random TOML-ish value
    keyed = [j for j, line in enumerate(lines) if "=" in line] or [i]
    j = rnd.choice(keyed)
    literal = json.dumps(value) if not isinstance(value, dict) else "{}"
    lines[j] = lines[j].split("=", 1)[0] + "= " + literal
    return "\n".join(lines).encode()


@FUZZ
@given(case=mutated_files())
def test_mutated_input_files_fail_cleanly(sandbox, case):
    name, kind, rnd, value, junk = case
    text = (sandbox / name).read_text()
    path = sandbox / f"mutated_{name}"
    path.write_bytes(mutate(text, kind, rnd, value, junk))
    run_checked([a.replace("{}", str(path)) for a in LOADERS[name]])


def test_the_unmutated_files_are_accepted(sandbox):
    """The fuzzed files start valid: the commands accept them (so the fuzz reaches past the first check)."""
    for name, argv in LOADERS.items():
        if name == "params.toml":
            continue  # needs a real video folder for the run, but the check accepts it:
        code = main([a.replace("{}", name) for a in argv], check_only=True)
        assert code == 0, name
    assert main([a.replace("{}", "params.toml") for a in LOADERS["params.toml"]], check_only=True) == 0


def test_fuzz_budget():
    """≥ 500 examples in ≤ 60 s; runs after the two fuzz tests above (file order)."""
    if RUNS["count"] == 0:
        pytest.skip("the fuzz tests did not run in this session")
    assert RUNS["count"] >= 500 or EXAMPLES < 250, RUNS
    assert RUNS["seconds"] <= 60.0, RUNS
    assert RUNS["exit 0"] >= 10 and RUNS["exit 2"] >= 100, RUNS  # both the accepting and the refusing paths are reached
    print(f"fuzz: {RUNS}")
