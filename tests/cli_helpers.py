"""Running ``softsnake`` in the test process (``softsnake.cli.main``) or as a subprocess, and checking how it failed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from softsnake.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_ENV = ROOT / "examples" / "vinemap_environment.json"


class _CollectedDuringCtrlC:
    def __del__(self):
        from softsnake import cli as cli_module

        cli_module._raise_interrupt(signal.SIGINT, None)  # the command's handler, as if Ctrl-C came in the destructor


def drop_ctrl_c() -> None:
    """A Ctrl-C that Python drops: its KeyboardInterrupt raised inside a destructor, which Python hands to
    ``sys.unraisablehook`` and goes on (seen in CI, in a Warp array's ``__del__``). Patch ``sys.unraisablehook`` in
    the test, or pytest reports it."""
    dropped = _CollectedDuringCtrlC()
    del dropped


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


def _default_signals():
    """Child-side: default handlers. A job started with `&` by a non-interactive shell (e.g. CI run in the background)
    inherits SIGINT as ignored, and Python then installs no KeyboardInterrupt handler; SIGHUP may be ignored too."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def signal_during_explore(folder: Path, sig: int) -> tuple[int, str]:
    """Start ``softsnake vinemap explore --out folder/D`` in a subprocess, send it ``sig`` once its staging folder
    exists (the command is running), and return its (exit status, stderr)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    argv = ["vinemap", "explore", "--random", "uniform", "--deployments", "100", "--out", str(folder / "D")]
    p = subprocess.Popen(
        [sys.executable, "-P", "-m", "softsnake.cli", *argv],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=_default_signals,
    )
    deadline = time.time() + 60
    while not list(folder.glob(".D.partial-*")) and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    return p.returncode, err


def run_python(code: str, cwd, **env) -> subprocess.CompletedProcess:
    """Run ``python -P -c code`` in ``cwd`` (environment plus ``env``); returns the CompletedProcess (text)."""
    environ = dict(os.environ, PYTHONUNBUFFERED="1", **env)
    return subprocess.run(
        [sys.executable, "-P", "-c", code], cwd=cwd, capture_output=True, text=True, env=environ, timeout=300
    )
