"""Counting the device work of a block of code: Warp kernel launches, copies and memsets (each one node of a
captured CUDA graph), by wrapping Warp's entry points while the block runs (``softsnake bench``, tests). Copies
between the host and a GPU (``.numpy()`` of a CUDA array: a step's checks read two flags after its graph) are
counted apart, as ``readback``: they are no graph node, and on the CPU, where ``.numpy()`` is a view, there are none."""

from __future__ import annotations

import dataclasses
from collections import Counter
from contextlib import contextmanager

import warp as wp


@contextmanager
def counted_launches():
    """Yields a Counter (kernel name, or ``copy`` / ``memset`` / ``readback``) of the launches made inside the block.
    Count eager calls (no graph replay: a replayed graph is one call); the same kernels run on the CPU, so a CPU count
    is the GPU graph's node count."""
    counts: Counter = Counter()
    launch, launch_tiled, copy = wp.launch, wp.launch_tiled, wp.copy
    zero, fill = wp.array.zero_, wp.array.fill_

    def named(fn, name=None):
        def inner(*args, **kwargs):
            counts[name or getattr(args[0], "key", str(args[0]))] += 1
            return fn(*args, **kwargs)

        return inner

    def copied(dest, src, *args, **kwargs):
        same = wp.get_device(dest.device) == wp.get_device(src.device)
        counts["copy" if same else "readback"] += 1
        return copy(dest, src, *args, **kwargs)

    wp.launch, wp.launch_tiled, wp.copy = named(launch), named(launch_tiled), copied
    wp.array.zero_, wp.array.fill_ = named(zero, "memset"), named(fill, "memset")
    try:
        yield counts
    finally:
        wp.launch, wp.launch_tiled, wp.copy = launch, launch_tiled, copy
        wp.array.zero_, wp.array.fill_ = zero, fill


def launches_per_step(solver, state, control=None, steps: int = 2) -> float:
    """Launches of one ``solver.step`` (mean over ``steps`` eager steps: graph capture is off for them), the read-backs
    after the step not counted (the nodes of the step's graph on a GPU)."""
    config = solver.config
    solver.config = dataclasses.replace(config, graph_capture=False)
    try:
        solver.step(state, control)  # loads the kernels
        with counted_launches() as counts:
            for _ in range(steps):
                solver.step(state, control)
    finally:
        solver.config = config
    return sum(n for k, n in counts.items() if k != "readback") / steps
