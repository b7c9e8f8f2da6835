"""Atomic file writers: every output goes to a temporary file in the destination folder and is renamed into place
(``os.replace``, atomic on POSIX and Windows within one filesystem) only once it is complete. An interrupted or failing
run therefore leaves either the previous file or nothing, never a truncated file that looks complete.

Temporary files are hidden (leading dot), end in ``.tmp<suffix>`` (so format-sniffing writers such as USD and
matplotlib still see the right extension), and are removed if the write raises.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import numpy as np


def ensure_writable_dir(path) -> Path:
    """Create folder ``path`` (with parents) if needed and check a file can be created in it.

    Raises ValueError("output folder ... is not writable") when it cannot be created (e.g. a parent is a file) or
    written (read-only folder or filesystem). Returns the folder as a Path.
    """
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # Probe by creating a file: os.access() is wrong for root, ACLs and read-only mounts.
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise ValueError(f"output folder {str(folder)!r} is not writable ({e.strerror or e})") from e
    return folder


def check_output_dir(path) -> Path:
    """Check, without creating anything, that folder ``path`` exists or can be created and written: not empty, not a
    regular file, no regular file among its parents, the nearest existing parent writable. ValueError otherwise."""
    text = str(path)
    if not text.strip():
        raise ValueError("empty path")
    folder = Path(text)
    try:
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{text!r} exists and is not a folder")
        parent = Path(os.path.abspath(folder))
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise ValueError(f"{text!r} is under {str(parent)!r}, a file, not a folder")
    except OSError as e:
        raise ValueError(f"{text!r} cannot be created or written ({e.strerror or e})") from None
    try:
        with tempfile.TemporaryFile(dir=parent):  # probe: os.access() is wrong for root, ACLs and read-only mounts
            pass
    except OSError as e:
        where = "it" if parent == Path(os.path.abspath(folder)) else f"its parent folder {str(parent)!r}"
        raise ValueError(f"{text!r} cannot be written: {where} does not accept new files ({e.strerror or e})") from None
    return folder


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path``, on exception it is deleted.

    suffix: extension the temporary file ends with (default: the suffix of ``path``, e.g. ".usda"), for writers that
    pick their format from the file name.

    The body may write the temporary path by name (it exists, empty, when yielded). The parent folder is created.
    """
    final = Path(path)
    if suffix is None:
        suffix = final.suffix
    parent = ensure_writable_dir(final.parent)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.stem}.", suffix=f".tmp{suffix}", dir=parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        if not tmp.exists():
            raise OSError(f"atomic write of {str(final)!r}: the writer removed its temporary file {str(tmp)!r}")
        # mkstemp creates 0600 files; give the result the permissions an ordinary open() would.
        os.chmod(tmp, 0o666 & ~_umask())
        with open(tmp, "rb") as f:  # flush to disk before the rename, so a crash cannot expose an empty file
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def write_npz_atomic(path, **arrays) -> Path:
    """Write ``arrays`` as a compressed .npz to ``path`` atomically; returns the final path."""
    final = Path(path)
    with atomic_path(final, ".npz") as tmp:
        with open(tmp, "wb") as f:  # a file object: np.savez would append ".npz" to other names
            np.savez_compressed(f, **arrays)
    return final


def write_text_atomic(path, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns the final path."""
    final = Path(path)
    with atomic_path(final) as tmp:
        with open(tmp, "w", encoding=encoding, newline="") as f:
            f.write(text)
    return final


def _json_default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serializable")


def write_json_atomic(path, obj, *, indent: int | None = 2, sort_keys: bool = False) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (NumPy arrays/scalars and Paths are converted); returns the path.

    The object is serialised before anything is written, so an unserialisable object leaves no file behind.
    """
    text = json.dumps(obj, indent=indent, sort_keys=sort_keys, default=_json_default) + "\n"
    return write_text_atomic(path, text)


def save_figure_atomic(fig, path, **savefig_kwargs) -> Path:
    """Save a matplotlib figure to ``path`` atomically; keyword arguments go to ``Figure.savefig``.

    The format comes from the extension of ``path`` unless ``format=`` is given. Figures made with
    ``matplotlib.figure.Figure()`` (no pyplot) render through Agg and need no display.
    """
    final = Path(path)
    if "format" not in savefig_kwargs and final.suffix:
        savefig_kwargs["format"] = final.suffix.lstrip(".").lower()
    with atomic_path(final) as tmp:
        fig.savefig(tmp, **savefig_kwargs)
    return final


def _publish_modes(folder: Path) -> None:
    """Give everything under ``folder`` the modes an ordinary open()/mkdir() would (mkstemp/mkdtemp make 0600/0700)."""
    mask = _umask()
    os.chmod(folder, 0o777 & ~mask)
    for root, dirs, files in os.walk(folder):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o777 & ~mask)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 & ~mask)


#: the list of files a command wrote into its output folder (hidden, one name per line): the next run into the same
#: folder removes those it does not write again, so the folder holds only the files of the run that wrote it
OUTPUTS_LIST = ".softsnake-outputs"


def _outputs_of_earlier_run(folder: Path) -> list[str]:
    try:
        names = (folder / OUTPUTS_LIST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    return [n for n in names if n and n == Path(n).name and n not in (".", "..")]  # plain names inside the folder


@contextlib.contextmanager
def staged_dir(path) -> Iterator[Path]:
    """Yield an empty hidden staging folder for the outputs of folder ``path``; when the body ends normally its files
    move into ``path`` (created if needed) with the modes of ordinary files (0644 under umask 022). Files of the same
    name are replaced, and the files an earlier command wrote there (its ``OUTPUTS_LIST``) that this one did not write
    are removed; files the user put there are kept. When the body raises (also KeyboardInterrupt) the staging folder
    and any parent folders made for it are removed: ``path`` is left as it was, or not created.
    """
    final = Path(path)
    absolute = Path(os.path.abspath(final))
    made = []  # folders this call created, deepest last
    if absolute.is_dir():
        home, prefix = absolute, ".softsnake-partial-"
    else:
        home, prefix = absolute.parent, f".{absolute.name}.partial-"
        missing = []
        p = home
        while not p.exists():
            missing.append(p)
            p = p.parent
        for p in reversed(missing):
            p.mkdir()
            made.append(p)
    stage = None
    try:
        stage = Path(tempfile.mkdtemp(prefix=prefix, dir=home))
        yield stage
        written = sorted(entry.name for entry in stage.iterdir())
        (stage / OUTPUTS_LIST).write_text("".join(f"{name}\n" for name in written), encoding="utf-8")
        _publish_modes(stage)
        if home is absolute:
            stale = set(_outputs_of_earlier_run(absolute)) - set(written)
            for entry in sorted(stage.iterdir()):
                target = absolute / entry.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                os.replace(entry, target)
            stage.rmdir()
            for name in stale:
                target = absolute / name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target, ignore_errors=True)
                else:
                    with contextlib.suppress(FileNotFoundError):
                        target.unlink()
        else:
            os.rename(stage, absolute)  # atomic: the folder appears complete or not at all
    except BaseException:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        for p in reversed(made):
            with contextlib.suppress(OSError):
                p.rmdir()
        raise
