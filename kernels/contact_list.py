"""The compact particle–shape contact list (issue 11): a fixed capacity of contact slots per world, filled once per step.

Each step starts by choosing the candidate pairs (particle p, static shape s): near at the predicted position x⁻ + h·ṽ
or at the linearisation point x⁻ + h·v⁻ (gap ≤ margin), or still pushing (carried λ_n > 0), for particles with mass.
They fill the world's slots in (particle, shape) order, so each particle's contacts are one contiguous run of slots
(``contact_first``, ``contact_num``, read by the transpose product without atomics). A pair that stays a candidate keeps
its multipliers (t1, t2, n) and its previous normal impulse across the re-listing; a pair that leaves is released.
Pairs beyond the capacity are dropped and counted per world (``overflow``), which the solver reports after the step.

Four launches per step, no host round trip, fixed sizes (graph capture): count candidates per particle, a per-world
running sum (one thread per world, so the order is deterministic), clear the slots, write the list.
"""

import warp as wp

from .contact import shape_bounding_radius, shape_signed_distance
from .data import ContactSettings, Jacobian, ModelData, contact_row0


@wp.func
def carried_slot(old_first: int, old_num: int, old_shape: wp.array(dtype=int), world_slot0: int, s: int) -> int:
    """Slot (within its world) that pair (p, s) held in the previous list, −1 if none; the previous run of p is
    [old_first, old_first + old_num)."""
    for k in range(old_first, old_first + old_num):
        if old_shape[world_slot0 + k] == s:
            return k
    return -1


@wp.func
def contact_candidate(
    m: ModelData,
    contact: ContactSettings,
    h: float,
    x0: wp.vec3,
    v_lin: wp.vec3,
    v: wp.vec3,
    p: int,
    s: int,
    lam_n: float,
) -> bool:
    """Pair (p, s) is a contact candidate for the whole step: near [m] at the predicted position or at the
    linearisation point, or carrying a positive normal impulse λ_n [N s]."""
    if lam_n > 0.0:
        return True
    r = m.particle_radius[p]
    xa = x0 + v * h
    xb = x0 + v_lin * h
    bound = shape_bounding_radius(m.shape_type[s], m.shape_params[s])
    if bound >= 0.0:
        # broadphase: the shape lies inside a sphere of radius `bound` about its position, so both gaps are at least
        # the distance from that sphere to the segment xa–xb (≥ |mid − centre| − |xa − xb|/2 − bound) minus r
        mid = 0.5 * (xa + xb)
        if wp.length(mid - m.shape_pos[s]) - 0.5 * wp.length(xa - xb) - bound - r > contact.margin:
            return False
    gap = shape_signed_distance(m.shape_type[s], m.shape_pos[s], m.shape_rot[s], m.shape_params[s], xa)[0] - r
    gap0 = shape_signed_distance(m.shape_type[s], m.shape_pos[s], m.shape_rot[s], m.shape_params[s], xb)[0] - r
    return wp.min(gap, gap0) <= contact.margin


@wp.func
def listed_slot(
    m: ModelData,
    contact: ContactSettings,
    h: float,
    x0: wp.vec3,
    v_lin: wp.vec3,
    v: wp.vec3,
    lam_prev: wp.array(dtype=float),
    old_first: int,
    old_num: int,
    old_shape: wp.array(dtype=int),
    w: int,
    p: int,
    s: int,
) -> int:
    """−2 if pair (p, s) of world w is no candidate this step, else the slot it held in the previous list (−1: none).
    The one test behind both count_contact_candidates and write_contact_list, so their counts agree."""
    k = carried_slot(old_first, old_num, old_shape, w * m.contact_count, s)
    lam_n = float(0.0)
    if k >= 0:
        lam_n = lam_prev[contact_row0(m, w, k) + 2]
    if contact_candidate(m, contact, h, x0, v_lin, v, p, s, lam_n):
        return k
    return -2


@wp.kernel
def count_contact_candidates(
    # Model:
    m: ModelData,
    contact: ContactSettings,
    h: float,
    # State in:
    x_start: wp.array(dtype=wp.vec3),
    v_lin: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    lam_prev: wp.array(dtype=float),  # the multipliers as carried (previous list's layout)
    old_first: wp.array(dtype=int),
    old_num: wp.array(dtype=int),
    old_shape: wp.array(dtype=int),
    # Out:
    count: wp.array(dtype=int),  # candidates per (world, particle)
):
    tid = wp.tid()
    w = tid // m.particle_count
    p = tid - w * m.particle_count
    c = int(0)
    if m.particle_inv_mass[p] > 0.0:
        for s in range(m.shape_count):
            if listed_slot(m, contact, h, x_start[tid], v_lin[tid], v[tid], lam_prev, old_first[tid], old_num[tid], old_shape, w, p, s) > -2:
                c += 1
    count[tid] = c


@wp.kernel
def contact_list_offsets(
    particles_per_world: int,
    capacity: int,
    count: wp.array(dtype=int),
    # Out:
    offset: wp.array(dtype=int),  # first slot of each (world, particle) run, before clamping to the capacity
    overflow: wp.array(dtype=int),  # per world: candidates that did not fit
):
    """Running sum of the candidate counts within each world (one thread per world: a fixed summation order)."""
    w = wp.tid()
    total = int(0)
    for p in range(particles_per_world):
        offset[w * particles_per_world + p] = total
        total += count[w * particles_per_world + p]
    overflow[w] = wp.max(total - capacity, 0)


@wp.kernel
def clear_contact_slots(
    m: ModelData,
    jac: Jacobian,
    # Out:
    lam: wp.array(dtype=float),
    contact_lam_n_prev: wp.array(dtype=float),
):
    """Empty slot: no pair, zero multipliers and frame."""
    tid = wp.tid()
    w = tid // m.contact_count
    k = tid - w * m.contact_count
    jac.contact_particle[tid] = -1
    jac.contact_shape[tid] = -1
    jac.contact_frame[tid] = wp.mat33()
    contact_lam_n_prev[tid] = 0.0
    row0 = contact_row0(m, w, k)
    for r in range(3):
        lam[row0 + r] = 0.0


@wp.kernel
def write_contact_list(
    # Model:
    m: ModelData,
    contact: ContactSettings,
    h: float,
    # State in:
    x_start: wp.array(dtype=wp.vec3),
    v_lin: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    lam_prev: wp.array(dtype=float),
    lam_n_prev_old: wp.array(dtype=float),
    old_first: wp.array(dtype=int),
    old_num: wp.array(dtype=int),
    old_shape: wp.array(dtype=int),
    offset: wp.array(dtype=int),
    # Out:
    jac: Jacobian,
    lam: wp.array(dtype=float),
    contact_lam_n_prev: wp.array(dtype=float),
):
    """The candidates of (world, particle) into their slots, each with the multipliers it carried (same test as
    count_contact_candidates, so the counts match)."""
    tid = wp.tid()
    w = tid // m.particle_count
    p = tid - w * m.particle_count
    K = m.contact_count
    first = offset[tid]
    slot = first
    if m.particle_inv_mass[p] > 0.0:
        for s in range(m.shape_count):
            k = listed_slot(m, contact, h, x_start[tid], v_lin[tid], v[tid], lam_prev, old_first[tid], old_num[tid], old_shape, w, p, s)
            if k > -2:
                if slot < K:
                    jac.contact_particle[w * K + slot] = p
                    jac.contact_shape[w * K + slot] = s
                    if k >= 0:
                        for r in range(3):
                            lam[contact_row0(m, w, slot) + r] = lam_prev[contact_row0(m, w, k) + r]
                        contact_lam_n_prev[w * K + slot] = lam_n_prev_old[w * K + k]
                slot += 1
    jac.contact_first[tid] = wp.min(first, K)
    jac.contact_num[tid] = wp.min(slot, K) - wp.min(first, K)
