"""Reading user TOML files (solver, snake and vine configs, fitted parameters) with errors that name the file."""

from __future__ import annotations

import tomllib
from pathlib import Path


def read_toml(path, what: str) -> dict:
    """Parsed TOML of ``path``; ``what`` names the file's role in the error ("solver config", ...).

    Raises ValueError naming the file when it cannot be read or is not valid UTF-8 TOML."""
    p = Path(path)
    try:
        return tomllib.loads(p.read_text())
    except OSError as exc:
        raise ValueError(f"cannot read {what} {str(p)!r}: {exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed TOML in {str(p)!r}: {exc}") from exc
