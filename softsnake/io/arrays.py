"""Reading NumPy array files (.npz, .npy) that a user names: every failure is one ValueError naming the file.

``np.load`` raises a zoo of exceptions on damaged input (``BadZipFile`` for a truncated archive, ``EOFError``,
``zlib.error``, a ValueError that suggests ``allow_pickle=True`` for arbitrary bytes). Pickled objects are never loaded:
they can run code.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np

__all__ = ["read_npz", "read_npy"]

_DAMAGED = (zipfile.BadZipFile, EOFError, zlib.error, ValueError, KeyError, IndexError)


def _check_magic(path: Path, what: str, magics: tuple[bytes, ...], kind: str) -> None:
    """ValueError unless the file starts with one of ``magics`` (an unreadable file: ValueError naming it too)."""
    try:
        with open(path, "rb") as f:
            head = f.read(max(len(m) for m in magics))
    except OSError as exc:
        raise ValueError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    if not any(head.startswith(m) for m in magics):
        raise ValueError(f"{what} {str(path)!r} is not a NumPy {kind} file")


def _damaged(what: str, path: Path, exc: BaseException, kind: str) -> ValueError:
    if "allow_pickle" in str(exc):
        return ValueError(f"{what} {str(path)!r} holds Python objects, which are not loaded (only numeric arrays)")
    return ValueError(f"{what} {str(path)!r} is damaged or truncated (not a readable {kind})")


def read_npz(path, what: str) -> dict[str, np.ndarray]:
    """All arrays of the .npz archive ``path``, read eagerly (a truncated member fails here, not later); ``what``
    names the file's role in errors ("checkpoint", "wall-fit data")."""
    p = Path(path)
    _check_magic(p, what, (b"PK\x03\x04", b"PK\x05\x06"), ".npz")
    try:
        with np.load(p, allow_pickle=False) as archive:
            return {name: archive[name] for name in archive.files}
    except (OSError, *_DAMAGED) as exc:
        raise _damaged(what, p, exc, ".npz archive") from None


def read_npy(path, what: str) -> np.ndarray:
    """The array of the .npy file ``path``; ``what`` names the file's role in errors."""
    p = Path(path)
    _check_magic(p, what, (b"\x93NUMPY",), ".npy")
    try:
        return np.load(p, allow_pickle=False)
    except (OSError, *_DAMAGED) as exc:
        raise _damaged(what, p, exc, ".npy file") from None
