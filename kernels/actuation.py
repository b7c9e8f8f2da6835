"""Pneumatic actuation (paper Eqs. 3–4): chamber gauge pressures → rest-length scales of the actuation constraints."""

import warp as wp


@wp.kernel
def chamber_rest_scale(
    distances_per_world: int,
    chambers_per_world: int,
    youngs_modulus: float,
    distance_chamber: wp.array(dtype=int),
    chamber_pressure: wp.array(dtype=float),
    # Out:
    rest_scale: wp.array(dtype=float),
):
    """scale = ε(p) = 1 + p/Y (Eq. 4) for an actuation constraint of a chamber at gauge pressure p [Pa], 1 for
    passive constraints (distance_chamber = −1). One thread per (world, distance constraint)."""
    tid = wp.tid()
    w = tid // distances_per_world
    c = distance_chamber[tid - w * distances_per_world]
    s = float(1.0)
    if c >= 0:
        s = 1.0 + chamber_pressure[w * chambers_per_world + c] / youngs_modulus
    rest_scale[tid] = s
