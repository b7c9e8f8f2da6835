"""Starting Warp for a command: no raw driver lines unless asked, and a notice before first-use kernel compilation."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

import warp as wp

from .model import quiet_warp, resolve_device

_verbose = False


@contextlib.contextmanager
def native_stderr_dropped():
    """Drop what native code writes to the stderr file descriptor inside the block (unless ``init_warp(verbose=True)``
    was called): Warp's driver prints ``Warp CUDA warning/error ...`` lines there, bypassing Python."""
    if _verbose:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def init_warp(verbose: bool = False) -> None:
    """``wp.init()``. Unless ``verbose``, Warp's banner and the lines its native library prints straight to the
    stderr file descriptor (``Warp CUDA warning: Could not find or load the NVIDIA CUDA driver`` on every CPU-only
    machine) are dropped; errors still reach Python as exceptions."""
    global _verbose
    _verbose = bool(verbose)
    if verbose:
        wp.config.quiet = False
        if hasattr(wp, "LOG_INFO"):
            wp.config.log_level = wp.LOG_INFO
    else:
        quiet_warp()
    with native_stderr_dropped():
        wp.init()


def resolve_device_quietly(device: str):
    """``resolve_device`` without the driver's raw lines (``--device cuda`` on a machine without a GPU)."""
    with native_stderr_dropped():
        return resolve_device(device)


def kernels_to_compile(device: str = "cpu") -> list[str]:
    """Names of the softsnake kernel modules that Warp has not compiled for ``device`` yet (kernel cache lookup).

    Uses Warp's module hashing (a private API): on any surprise it returns [] rather than fail the command."""
    try:
        import softsnake.sim.primal  # noqa: F401  (with the solver it imports, every kernel module)
        import softsnake.sim.solver  # noqa: F401
        from warp._src.context import user_modules

        dev = wp.get_device(device)
        block_dim = 1 if dev.is_cpu else None  # CPU launches build with block_dim = 1
        missing = []
        for name, module in list(user_modules.items()):
            if not name.startswith("softsnake") or not module.kernels:
                continue
            folder = os.path.join(wp.config.kernel_cache_dir, module.get_module_identifier(block_dim))
            if not os.path.exists(os.path.join(folder, module._get_compile_output_name(dev, block_dim=block_dim))):
                missing.append(name)
        return missing
    except Exception:  # noqa: BLE001 - a notice must never break a run
        return []


def announce_compilation(device: str = "cpu", stream=None) -> bool:
    """Print one line to stderr when kernels will be compiled on this run (first use); True if it printed."""
    missing = kernels_to_compile(device)
    if missing:
        print(f"softsnake: compiling {len(missing)} Warp kernel modules for {device} on first use (up to a few minutes on a CPU; cached in {wp.config.kernel_cache_dir} for later runs)", file=stream or sys.stderr, flush=True)
    return bool(missing)
