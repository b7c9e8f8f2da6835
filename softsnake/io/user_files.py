"""Strict reading of user files (TOML configs, JSON environments): every error names the file, the key and what was
expected, and unknown keys are errors (a misspelt key must not be silently ignored).

``check_fields`` checks one table against the fields of a dataclass (types from its annotations); the dataclass's own
``__post_init__`` still checks ranges. ``read_json`` is the JSON counterpart of ``toml_files.read_toml``.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import typing
from pathlib import Path

__all__ = ["check_fields", "check_keys", "read_json", "describe"]


def describe(value) -> str:
    """A short description of a value for an error message: ``"four" (a string)``."""
    kind = {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "a list",
        dict: "a table",
    }.get(type(value), type(value).__name__)
    text = json.dumps(value) if isinstance(value, (str, int, float, bool)) else repr(value)
    return f"{text[:60]}{'…' if len(text) > 60 else ''} ({kind})"


def check_keys(values: dict, allowed, *, where: str) -> None:
    """Raise ValueError for the first key of ``values`` not in ``allowed``, with a close match if there is one."""
    allowed = sorted(allowed)
    for key in values:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else f" (known keys: {', '.join(allowed)})"
            raise ValueError(f"{where}: unknown key '{key}'{hint}")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _type_error(where: str, key: str, expected: str, value) -> ValueError:
    return ValueError(f"{where}: '{key}' must be {expected}, got {describe(value)}")


def _check_value(value, annotation, *, where: str, key: str) -> None:
    origin = typing.get_origin(annotation)
    if annotation is bool:
        if not isinstance(value, bool):
            raise _type_error(where, key, "true or false", value)
    elif annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _type_error(where, key, "an integer", value)
    elif annotation is float:
        if not _is_number(value):
            raise _type_error(where, key, "a finite number", value)
    elif annotation is str:
        if not isinstance(value, str):
            raise _type_error(where, key, "a string", value)
    elif annotation is tuple or origin is tuple or annotation is list or origin is list:
        if not isinstance(value, (list, tuple)) or not all(_is_number(v) for v in value):
            raise _type_error(where, key, "a list of finite numbers", value)
    # other annotations (nested dataclasses, unions, callables): left to the dataclass's own checks


def check_fields(values, cls, *, where: str, skip=()) -> dict:
    """Check ``values`` (one table of a user file) against the fields of dataclass ``cls``: a mapping, no unknown
    keys (fields in ``skip`` count as unknown), each value of the field's annotated type. ``where`` names the file and
    table ("snake.toml [solver]"). Returns ``values`` as a dict."""
    if not isinstance(values, dict):
        raise ValueError(f"{where} must be a table of settings, got {describe(values)}")
    names = {f.name for f in dataclasses.fields(cls)} - set(skip)
    check_keys(values, names, where=where)
    hints = typing.get_type_hints(cls)
    for key, value in values.items():
        _check_value(value, hints.get(key), where=where, key=key)
    return dict(values)


def read_json(path, what: str):
    """Parsed JSON of ``path``; ``what`` names the file's role. ValueError naming the file when it is missing, a
    folder, unreadable, not UTF-8 or not JSON (including NaN/Infinity, which are not JSON)."""
    p = Path(path)
    if not str(path):
        raise ValueError(f"{what}: empty file name")

    def no_constants(name):
        raise ValueError(f"{name} is not a JSON value")

    try:
        return json.loads(p.read_text(encoding="utf-8"), parse_constant=no_constants)
    except OSError as exc:
        raise ValueError(f"cannot read {what} {str(p)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {str(p)!r} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise ValueError(f"{what} {str(p)!r} is not valid JSON: {exc}") from None
