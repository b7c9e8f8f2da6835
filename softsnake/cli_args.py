"""What every ``softsnake`` command shares: a parser whose errors are one line, argument types that check ranges and
paths while the command line is parsed, the memory check of a requested size, and the device check.

A command is registered with ``set_defaults(func=run, check=check, stage="out")``: ``softsnake.cli.main`` parses
(types below), calls ``check(args)`` (everything that needs more than one argument, reads the input files) before any
work, then runs ``func`` with the output folder ``args.<stage>`` staged (``softsnake.io.files.staged_dir``), so an
error or Ctrl-C leaves no partial or empty output behind. Checks raise ValueError; ``main`` prints it as one line.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from pathlib import Path

__all__ = [
    "ArgumentParser",
    "integer",
    "number",
    "numbers",
    "output_folder",
    "output_file",
    "input_path",
    "check_memory",
    "check_device",
    "human_bytes",
    "RunTimeNotice",
]


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors (``softsnake gait: error: argument --seconds: must be > 0, got -1``), exit 2.

    A value that starts with a minus sign and is a number or a comma-separated list of numbers (``--phi -0.3,0,0.3``)
    is read as a value, not as an option."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBERS

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {' '.join(str(message).split())}\n")


_NUMBER = r"\d*\.?\d+(?:[eE][-+]?\d+)?"
_NEGATIVE_NUMBERS = re.compile(rf"^-{_NUMBER}(?:,[-+]?{_NUMBER})*$")


def _type(name: str, parse):
    parse.__name__ = name  # argparse names the type in "invalid <name> value" messages
    return parse


def _range_error(v, lo, hi, lo_open=False, why=None):
    if lo is not None and (v <= lo if lo_open else v < lo):
        return f"must be {'>' if lo_open else '≥'} {lo:g}, got {v:g}"
    if hi is not None and v > hi:
        return f"must be ≤ {hi:g}{f' ({why})' if why else ''}, got {v:g}"
    return None


def integer(lo: int | None = None, hi: int | None = None, *, why: str | None = None):
    """argparse type: an integer in [lo, hi]; ``why`` says in the error where the upper bound comes from."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        err = _range_error(v, lo, hi, why=why)
        if err:
            raise argparse.ArgumentTypeError(err)
        return v

    return _type("integer", parse)


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False, why: str | None = None):
    """argparse type: a finite number in [lo, hi] (``lo_open``: > lo); ``why`` explains the upper bound in the error."""

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
        err = _range_error(v, lo, hi, lo_open, why)
        if err:
            raise argparse.ArgumentTypeError(err)
        return v

    return _type("number", parse)


def numbers(lo: float | None = None, hi: float | None = None, *, why: str | None = None):
    """argparse type: one finite number in [lo, hi], or a comma-separated list of them (one per world): a tuple."""
    one = number(lo, hi, why=why)

    def parse(text: str) -> tuple:
        parts = text.split(",")
        if any(not p.strip() for p in parts):
            raise argparse.ArgumentTypeError(f"must be a number or a comma-separated list of numbers, got {text!r}")
        values = []
        for k, p in enumerate(parts):
            try:
                values.append(one(p.strip()))
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"{exc}" if len(parts) == 1 else f"value {k + 1}: {exc}") from None
        return tuple(values)

    return _type("list", parse)


def _as_type_error(check):
    def parse(text: str):
        try:
            return check(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _output_folder(text: str) -> Path:
    from softsnake.io.files import check_output_dir

    return check_output_dir(text)


def _input_path(text: str) -> str:
    if not text.strip():
        raise ValueError("empty path")
    return text


output_folder = _type("folder", _as_type_error(_output_folder))
"""argparse type: an output folder that can be created (not empty, not under a regular file, writable); not created."""

input_path = _type("path", _as_type_error(_input_path))
"""argparse type: a non-empty input path (its reader checks the rest and names the file)."""


def output_file(suffix: str):
    """argparse type: an output file ending in ``suffix`` whose folder can be created (not created)."""

    def check(text: str) -> Path:
        from softsnake.io.files import check_output_dir

        p = Path(_input_path(text))
        if p.suffix != suffix or not p.stem:
            raise ValueError(f"must be a {suffix} file, got {text!r}")
        if p.is_dir():
            raise ValueError(f"{text!r} is a folder")
        check_output_dir(p.parent)
        return p

    return _type("file", _as_type_error(check))


# ------------------------------------------------------------------------------------------------- sizes, devices
def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024.0
    return f"{n:.3g} PiB"  # pragma: no cover


def available_memory(device: str = "cpu") -> int:
    """Bytes a new allocation can use: free memory of a CUDA device, else MemAvailable of the host."""
    if str(device).startswith("cuda"):
        import warp as wp

        d = wp.get_device(str(device))
        free = getattr(d, "free_memory", 0) or getattr(d, "total_memory", 0)
        if free:
            return int(free)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def check_memory(what: str, nbytes: float, device: str = "cpu") -> None:
    """ValueError when ``what`` needs more than the memory available on ``device`` (``nbytes``: a lower bound)."""
    avail = available_memory(device)
    if not math.isfinite(nbytes) or nbytes > avail:
        raise ValueError(
            f"{what} needs at least {human_bytes(nbytes)} of memory, more than the {human_bytes(avail)} available on "
            f"{device}"
        )


def check_device(device: str) -> str:
    """The Warp device name, or ValueError listing the available ones (``--device cuda`` without a GPU)."""
    from softsnake.sim.warp_runtime import resolve_device_quietly

    resolve_device_quietly(device)
    return device


def model_bytes(*, particles: int, tets: int = 0, distances: int = 0, bodies: int = 0, attachments: int = 0) -> int:
    """A lower bound on the memory of one world of a model [bytes] (device arrays, solver buffers and host copies).

    Measured on the snake (Warp 1.19 CPU, RSS growth per extra world): 1.7 MiB for the full snake (1300 particles,
    4608 tets, then 1456 distances, 15 bodies, 200 attachments) and 0.36 MiB for the coarse one; 200 bytes per element
    with 20 elements per body is below both."""
    return 200 * (particles + tets + distances + attachments + 20 * bodies)


# ------------------------------------------------------------------------------------------------- long runs
class RunTimeNotice:
    """Says once, on stderr, how long a run will take when that is more than ``limit_s`` (an hour).

    Call it with (done, total) after each unit of work (frame, step). The clock starts at the first call, so
    first-use compilation and set-up are not counted; the estimate is made once at least ``probe_units`` more units
    and ``probe_s`` seconds have passed, and printed only if the rest of the run exceeds ``limit_s``."""

    def __init__(
        self,
        prog: str,
        unit: str = "frame",
        *,
        limit_s: float = 3600.0,
        probe_units: int = 3,
        probe_s: float = 0.5,
        clock=None,
        stream=None,
    ):
        import time

        self.prog, self.unit, self.limit_s, self.probe_units, self.probe_s = prog, unit, limit_s, probe_units, probe_s
        self.clock, self.stream = clock or time.perf_counter, stream
        self.start = None
        self.done = False

    def __call__(self, done: int, total: int) -> None:
        if self.done:
            return
        now = self.clock()
        if self.start is None:
            self.start = (done, now)
            return
        units, seconds = done - self.start[0], now - self.start[1]
        if units < self.probe_units or seconds < self.probe_s:
            return
        self.done = True
        per_unit = seconds / units
        remaining = per_unit * (total - done)
        if remaining > self.limit_s:
            import sys

            print(
                f"{self.prog}: this run will take about {human_seconds(remaining)} more ({per_unit:.3g} s per "
                f"{self.unit} over the first {units} {self.unit}s, {total - done} to go); Ctrl-C stops it with "
                "nothing written",
                file=self.stream or sys.stderr,
                flush=True,
            )


def human_seconds(s: float) -> str:
    """A duration for people: ``"3.2 h"``, ``"41 days"``."""
    for size, unit in ((86400.0 * 365, "years"), (86400.0, "days"), (3600.0, "h"), (60.0, "min")):
        if s >= 2 * size if unit in ("years", "days") else s >= size:
            return f"{s / size:.2g} {unit}" if s < 10 * size else f"{s / size:.0f} {unit}"
    return f"{s:.0f} s"
