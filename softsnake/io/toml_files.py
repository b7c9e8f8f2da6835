"""Reading user TOML files (solver, snake and vine configs, fitted parameters) with errors that name the file."""

from __future__ import annotations

from pathlib import Path

import tomllib


def read_toml(path, what: str) -> dict:
    """Parsed TOML of ``path``; ``what`` names the file's role in the error ("solver config", ...).

    Raises ValueError naming the file when it is missing, a folder, unreadable, or not valid UTF-8 TOML."""
    if not str(path):
        raise ValueError(f"{what}: empty file name")
    p = Path(path)
    try:
        return tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {str(p)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ValueError(f"malformed TOML in {what} {str(p)!r}: {exc}") from None
