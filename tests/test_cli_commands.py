"""Every sub-command runs end to end through ``softsnake.cli.main``: the README's commands in tests/test_docs.py,
vinemap deploy/explore in tests/test_vinemap_cli.py, demo here; this module also checks that none is left out."""

from __future__ import annotations

import argparse

import numpy as np

from cli_helpers import cli
from softsnake.cli import build_parser


def leaf_commands(parser=None, prefix=()):
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [" ".join(prefix)]
    return [c for a in subs for name, child in a.choices.items() for c in leaf_commands(child, (*prefix, name))]


def test_demo_writes_positions(tmp_path, capfd):
    code, out, err = cli(["demo", "--seconds", "0.02", "--quiet", "--worlds", "2", "--out", tmp_path / "d"], capfd)
    assert code == 0, err
    z = np.load(tmp_path / "d" / "demo.npz")
    assert z["particle_q"].shape[0] == 5 and z["t"].shape == (5,) and np.all(np.isfinite(z["particle_q"]))
    assert "steps/s" in out and "wrote" in out and str(tmp_path / "d") in out


def test_every_command_has_an_end_to_end_test():
    from test_docs import COMMANDS

    covered = {" ".join(c.split()[1:3]) if c.split()[1] == "vine" else c.split()[1] for c in COMMANDS}
    covered |= {"demo", "vinemap deploy", "vinemap explore"}  # here and in tests/test_vinemap_cli.py
    assert set(leaf_commands()) <= covered, set(leaf_commands()) - covered
