"""Warp's messages and start-up: quiet unless asked (``show_warp_messages``), no raw driver lines in a command's
output, and a progress count while the kernels compile on first use (``compile_kernels``)."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed

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


def show_warp_messages(show: bool = True) -> None:
    """Show (``show=True``) or hide Warp's own messages: its start-up banner, a line per kernel module loaded or
    compiled, and (in commands) its driver's lines. softsnake hides them by default, from ``import softsnake`` on;
    warnings and errors always show. The command line's ``--verbose`` calls this."""
    global _verbose
    _verbose = bool(show)
    if show:
        wp.config.quiet = False
        if hasattr(wp, "LOG_INFO"):
            wp.config.log_level = wp.LOG_INFO
    else:
        quiet_warp()


def init_warp(verbose: bool = False) -> None:
    """``wp.init()`` for a command. Unless ``verbose``, Warp's banner and the lines its native library prints straight
    to the stderr file descriptor (``Warp CUDA warning: Could not find or load the NVIDIA CUDA driver`` on every
    CPU-only machine) are dropped; errors still reach Python as exceptions."""
    show_warp_messages(verbose)
    with native_stderr_dropped():
        wp.init()


def resolve_device_quietly(device: str):
    """``resolve_device`` without the driver's raw lines (``--device cuda`` on a machine without a GPU)."""
    with native_stderr_dropped():
        return resolve_device(device)


def _engine_modules() -> dict:
    """Warp's registry of the softsnake modules that hold kernels (importing the solver imports every kernel module)."""
    from warp._src.context import user_modules

    import softsnake.sim.primal  # noqa: F401
    import softsnake.sim.solver  # noqa: F401

    return {name: m for name, m in list(user_modules.items()) if name.startswith("softsnake") and m.kernels}


#: the modules whose kernels run one thread block per world, launched at SolverConfig.block_dim lanes
STAGE_MODULES = ("step_common", "step_primal", "step_body_blocks", "step_dual")


def module_identifiers(stage_block_dims=()) -> dict[str, dict[int, str]]:
    """Warp's kernel cache folder of each softsnake kernel module imported so far (the solver's at least), by short
    name and block size: every module at its default block size (256), the stage modules also at each of
    ``stage_block_dims`` (1: a CPU build). Uses Warp's module hashing (a private API).

    Warp hashes a module variant on first use and keeps that hash for the process, and the stage modules' hashes
    depend on what was built before in it: step_primal's changes once step_dual's kernels were generated, and the
    other way round (``wp.static`` expressions resolve during code generation). Called before any kernel is built,
    this fixes each listed variant at the hash a fresh process computes, the folder benchmarks/precompile_cuda.py
    compiles into."""
    out: dict[str, dict[int, str]] = {}
    for name, module in _engine_modules().items():
        short = name.rsplit(".", 1)[-1]
        dims = {module.options["block_dim"], *(stage_block_dims if short in STAGE_MODULES else ())}
        out[short] = {dim: module.get_module_identifier(dim) for dim in sorted(dims)}
    return out


def kernels_to_compile(device: str = "cpu") -> list[str]:
    """Names of the softsnake kernel modules that Warp has not compiled for ``device`` yet (kernel cache lookup).

    Uses Warp's module hashing (a private API): on any surprise it returns [] rather than fail the command."""
    try:
        dev = wp.get_device(device)
        block_dim = 1 if dev.is_cpu else None  # CPU launches build with block_dim = 1
        missing = []
        for name, module in _engine_modules().items():
            folder = os.path.join(wp.config.kernel_cache_dir, module.get_module_identifier(block_dim))
            if not os.path.exists(os.path.join(folder, module._get_compile_output_name(dev, block_dim=block_dim))):
                missing.append(name)
        return missing
    except Exception:  # noqa: BLE001 - a notice must never break a run
        return []


def compile_kernels(device: str = "cpu", *, bar: bool = True, stream=None, workers: int | None = None) -> int:
    """Compile the engine's kernel modules that are not in Warp's kernel cache for ``device`` yet, before a run needs
    them: one line on stderr, then a count of the modules done (``bar=False``: the line only). ``workers`` modules
    compile at once (default: up to four, at most one per core). Returns how many were compiled (0: all cached,
    nothing printed)."""
    from tqdm import tqdm

    missing = kernels_to_compile(device)
    if not missing:
        return 0
    stream = stream or sys.stderr
    print(
        f"softsnake: compiling {len(missing)} Warp kernel modules for {device} on first use (a few minutes on a CPU; "
        f"cached in {wp.config.kernel_cache_dir} for later runs)",
        file=stream,
        flush=True,
    )
    modules = _engine_modules()
    count = dict(total=len(missing), desc="softsnake: compiling", unit="module", mininterval=0, leave=False)
    with tqdm(file=stream, disable=not bar, **count) as progress:
        workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            jobs = [pool.submit(wp.load_module, modules[name], device=device, max_workers=0) for name in missing]
            for job in as_completed(jobs):
                job.result()
                progress.update()
    return len(missing)
