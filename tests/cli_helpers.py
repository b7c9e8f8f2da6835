"""Running ``softsnake`` in the test process (``softsnake.cli.main``) or as a subprocess, and checking how it failed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from softsnake.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_ENV = ROOT / "examples" / "vinemap_environment.json"


def cli(argv, capfd):
    """(exit status, stdout, stderr lines) of ``softsnake argv`` run through ``main`` (fd-level capture, so lines
    that native code writes to the stderr descriptor are seen too)."""
    capfd.readouterr()
    code = main([str(a) for a in argv])
    out, err = capfd.readouterr()
    return code, out, answer_lines(err)


def answer_lines(stderr: str) -> list[str]:
    """The non-blank lines of a command's stderr, without the first-use compile notice that a cold Warp kernel cache
    adds (tests/test_cli_rows.py row 16): not part of any command's answer."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("softsnake: compiling")]


def fails(argv, capfd, *needles):
    """Assert ``softsnake argv`` exits 2 with exactly one line on stderr containing every needle; returns the line."""
    code, _, err = cli(argv, capfd)
    assert code == 2, (argv, code, err)
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    for n in needles:
        assert n in err[0], (n, err[0])
    return err[0]


def run_softsnake(args, *, cwd=None, timeout=120, **popen):
    """Run ``python -m softsnake.cli args`` as a subprocess; returns the CompletedProcess (text)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-P", "-m", "softsnake.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **popen,
    )
