"""Pneumatic actuation (paper Eqs. 3–4): chamber gauge pressures → rest-length scales of the actuation constraints."""

import warp as wp

from .schur import DISTANCE_OFF

# forward kernels only: the solver is not differentiated (no adjoint code, half the compile time)
wp.set_module_options({"enable_backward": False})


@wp.kernel
def chamber_rest_scale(
    # Model:
    distances_per_world: int,
    chambers_per_world: int,
    youngs_modulus: float,
    distance_chamber: wp.array(dtype=int),
    # In:
    chamber_pressure: wp.array(dtype=float),
    # Out:
    rest_scale: wp.array(dtype=float),
):
    """Rest-length scale of every distance constraint, one thread per (world, distance constraint): 1 for passive
    constraints (distance_chamber = −1). A link's two chambers (indices 2l and 2l + 1) are antagonists, and only the
    one at the higher gauge pressure carries actuation constraints (paper Sec. V: "only one chamber on the link is
    active at a time"): its constraints get ε = 1 + (p − q)/Y (Eq. 4) with p its pressure and q its antagonist's [Pa],
    the net pressure load, since both push on the link with opposite moment arms; the other chamber's constraints, and
    both at equal pressures, are switched off (DISTANCE_OFF): a vented chamber is an empty cavity, not a spring."""
    tid = wp.tid()
    w = tid // distances_per_world
    c = distance_chamber[tid - w * distances_per_world]
    s = float(1.0)
    if c >= 0:
        p = chamber_pressure[w * chambers_per_world + c]
        q = chamber_pressure[w * chambers_per_world + (c ^ 1)]
        s = DISTANCE_OFF
        if p > q:
            s = 1.0 + (p - q) / youngs_modulus
    rest_scale[tid] = s
