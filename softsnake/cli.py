"""Command-line interface: ``softsnake <command> ...``.

Each feature area registers its own sub-commands through an ``add_commands(subparsers)`` function, so this module
stays a thin dispatcher (engine demo here, ``softsnake.experiments.cli`` for the snake, ``softsnake.vinemap.cli`` for the geometric vine simulator,
``softsnake.experiments.vine_cli`` for the dynamic vine robots).
"""

from __future__ import annotations

import argparse
import sys


def _add_engine_commands(sub: argparse._SubParsersAction) -> None:
    from softsnake.demo import add_commands

    add_commands(sub)


def _add_snake_commands(sub: argparse._SubParsersAction) -> None:
    from softsnake.experiments.cli import add_commands

    add_commands(sub)


def _add_vine_commands(sub: argparse._SubParsersAction) -> None:
    from softsnake.experiments.vine_cli import add_commands

    add_commands(sub)


def _add_vinemap_commands(sub: argparse._SubParsersAction) -> None:
    try:
        from softsnake.vinemap.cli import add_commands
    except ImportError:  # vinemap not built yet
        return
    add_commands(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="softsnake",
        description="softsnake: GPU-first compliant-constraint physics engine for soft robots.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_engine_commands(sub)
    _add_snake_commands(sub)
    _add_vine_commands(sub)
    _add_vinemap_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, PermissionError) as exc:
        print(f"softsnake: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
