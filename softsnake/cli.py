"""Command-line interface: ``softsnake <command> ...``.

Each feature area registers its own sub-commands through an ``add_commands(subparsers)`` function, so this module
stays a thin dispatcher (engine demo here, ``softsnake.experiments.cli`` for the snake, ``softsnake.vinemap.cli`` for
the geometric vine simulator, ``softsnake.experiments.vine_cli`` for the dynamic vine robots).

Every command runs the same way (``main``): parse (argument types check ranges and paths, ``softsnake.cli_args``),
``check(args)`` (checks across arguments, input files, device, memory) before any work, then the command with its
output folder staged (nothing partial or empty is left behind by an error, Ctrl-C, SIGTERM or SIGHUP). User errors
are one line on stderr and exit 2; a signal is one line and exit 128 + its number (SIGINT 130, SIGTERM 143, SIGHUP 129).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

from softsnake.cli_args import ArgumentParser

#: exit status of an interrupted command (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 128 + signal.SIGINT


class Stopped(BaseException):
    """A command stopped by SIGTERM or SIGHUP; unwinds like KeyboardInterrupt, so staged outputs are removed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = int(signum)


#: the stop signals (Ctrl-C included) received during the running command: library code that catches every Exception
#: (e.g. matplotlib's optional 3-D import) can swallow a Stopped that Python wrapped, and Python drops a
#: KeyboardInterrupt raised inside a destructor (a Warp array's ``__del__``), so a command also checks this at its end
#: and a long one between its batches (raise_if_stopped)
_received: list[int] = []


def _raise_stopped(signum, frame):
    _received.append(int(signum))
    raise Stopped(signum)


def _raise_interrupt(signum, frame):
    """Ctrl-C: Python's KeyboardInterrupt, remembered."""
    _received.append(int(signum))
    raise KeyboardInterrupt


def raise_if_stopped() -> None:
    """Raise again the KeyboardInterrupt or Stopped of a signal the running command received but that was swallowed
    on its way (nothing when none came)."""
    if not _received:
        return
    if _received[0] == signal.SIGINT:
        raise KeyboardInterrupt
    raise Stopped(_received[0])


def _stop_behind(exc: BaseException | None) -> Stopped | None:
    """The Stopped that ``exc`` is or that caused it: a signal that arrives inside an import or a class body can reach
    the command wrapped in another exception (Python's ``__set_name__`` wraps it in a RuntimeError)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Stopped):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@contextlib.contextmanager
def _stop_on_signals():
    """SIGTERM (what a cluster scheduler or ``kill`` sends) and SIGHUP (a closed terminal) end a command the way Ctrl-C
    does, and all three are remembered (raise_if_stopped). A signal the caller ignores (``nohup``) stays ignored; the
    previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {}
    _received.clear()
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            saved[sig] = signal.signal(sig, _raise_stopped)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        saved[signal.SIGINT] = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def _leaf_parsers(parser: argparse.ArgumentParser):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield parser
    for action in subs:
        for child in dict.fromkeys(action.choices.values()):  # aliases map to the same parser
            yield from _leaf_parsers(child)


def build_parser() -> argparse.ArgumentParser:
    from softsnake import __version__
    from softsnake.demo import add_commands as engine_commands
    from softsnake.experiments.cli import add_commands as snake_commands
    from softsnake.experiments.vine_cli import add_commands as vine_commands
    from softsnake.vinemap.cli import add_commands as vinemap_commands

    parser = ArgumentParser(
        prog="softsnake", description="softsnake: GPU-first compliant-constraint physics engine for soft robots."
    )
    parser.add_argument("--version", action="version", version=f"softsnake {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in (engine_commands, snake_commands, vine_commands, vinemap_commands):
        add(sub)
    for leaf in _leaf_parsers(parser):
        if leaf is not parser:
            leaf.add_argument("--verbose", action="store_true", help="show Warp's start-up and driver messages")
            leaf.set_defaults(prog=leaf.prog)  # errors name the command, as the parser's own do
    return parser


def _error_line(args, exc: BaseException) -> str:
    return f"{getattr(args, 'prog', None) or 'softsnake'}: error: " + " ".join(str(exc).split())


def _run(args, check_only: bool) -> int:
    from softsnake.io.files import staged_dir

    if getattr(args, "uses_warp", True):
        from softsnake.sim.warp_runtime import init_warp

        init_warp(verbose=getattr(args, "verbose", False))
    if getattr(args, "check", None):
        args.check(args)
    if check_only:
        return 0
    device = getattr(args, "device", None)
    if device is not None:
        from softsnake.sim.warp_runtime import compile_kernels

        compile_kernels(device, bar=not getattr(args, "quiet", False))
    stage = getattr(args, "stage", None)
    final = getattr(args, stage, None) if stage else None
    args.out_final = final  # the folder the user named, for messages; args.<stage> becomes the staging folder
    if final is None:
        status = int(args.func(args) or 0)
        if status == 0:  # (a command that ends otherwise, e.g. a sweep stopped between batches, said so itself)
            raise_if_stopped()
        return status
    with staged_dir(final) as tmp:
        setattr(args, stage, tmp)
        status = int(args.func(args) or 0)
        raise_if_stopped()  # before the outputs are published
        return status


def main(argv: list[str] | None = None, *, check_only: bool = False) -> int:
    """Run ``softsnake`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit status.

    check_only: parse and check the arguments and input files, then return 0 without doing any work (the fuzz
    tests use it). Exit 2: a user error (one line on stderr); 130, 143, 129: stopped by SIGINT (Ctrl-C), SIGTERM,
    SIGHUP, with nothing written."""
    with _stop_on_signals():
        return _main(argv, check_only)


def _main(argv, check_only: bool) -> int:
    args = None
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help (0) or a parse error, already printed as one line (2)
            return exc.code if isinstance(exc.code, int) else 2
        if not getattr(args, "func", None):
            print(f"{parser.prog}: error: give a command (softsnake --help lists them)", file=sys.stderr)
            return 2
        return _run(args, check_only)
    except BrokenPipeError:  # e.g. `softsnake info | head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (ValueError, OSError) as exc:
        if _stop_behind(exc) is not None:
            return _stopped(_stop_behind(exc))
        print(_error_line(args, exc), file=sys.stderr)
        return 2
    except FloatingPointError as exc:  # SimulationDiverged: the run's settings are unstable, said in one line
        print(f"softsnake: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("softsnake: interrupted; no output was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Stopped as stop:
        return _stopped(stop)
    except Exception as exc:  # a stop signal wrapped by Python (inside an import, a class body); anything else: a bug
        if _stop_behind(exc) is None:
            raise
        return _stopped(_stop_behind(exc))


def _stopped(stop: Stopped) -> int:
    print(f"softsnake: stopped by {signal.Signals(stop.signum).name}; no output was written", file=sys.stderr)
    return 128 + stop.signum


if __name__ == "__main__":  # pragma: no cover
    # ``python -m softsnake.cli`` runs this file as __main__; the commands import softsnake.cli, a second copy whose
    # signal record and Stopped class must be the ones in use
    from softsnake.cli import main as package_main

    sys.exit(package_main())
