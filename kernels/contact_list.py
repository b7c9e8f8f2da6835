"""The compact particle–shape contact list: a fixed capacity of contact slots per world, filled once per step.

Each step starts by choosing the candidate pairs (particle p, static shape s): near at the predicted position x⁻ + h·ṽ
or at the linearisation point x⁻ + h·v⁻ (gap ≤ margin), or still pushing (carried λ_n > 0), for particles with mass.
They fill the world's slots in (particle, shape) order, so each particle's contacts are one contiguous run of slots
(``contact_first``, ``contact_num``, read by the transpose product without atomics). A pair that stays a candidate keeps
its multipliers (t1, t2, n) and its previous normal impulse across the re-listing; a pair that leaves is released.
Pairs beyond the capacity are dropped and counted per world (``overflow``), which the solver reports after the step.

One stage of the step (kernels/step_common.py, ``collide``), per world, no host round trip, fixed sizes (graph
capture): count candidates per particle, a running sum over the world's particles (in particle order, so the list is
deterministic), clear the slots, write the list (the count and the write are one function, so they enumerate the
same pairs).

Finding the candidates: with few shapes every particle tests every shape (a bounding sphere first). With many
(``softsnake/sim/contact_list.py``, ``BVH_MIN_SHAPES``) a BVH over the bounded shapes' boxes returns the shapes near
the particle's path this step; planes are always tested, and so are the pairs of the previous list that lie outside
that box (they can stay candidates through a carried λ_n > 0). The same pair test decides in both cases, and each
particle's run is sorted by shape afterwards, so the list is the same as the full scan's.
"""

import warp as wp

from .contact import shape_bounding_radius, shape_signed_distance
from .data import ContactSettings, ModelData, StepData, contact_row0

# forward kernels only: the solver is not differentiated (no adjoint code, half the compile time)
wp.set_module_options({"enable_backward": False})


@wp.struct
class ShapeBvh:
    """BVH over the bounded static shapes (item → shape), the unbounded ones (planes) listed apart; ``active`` = 0:
    scan every shape instead."""

    active: int
    id: wp.uint64
    item_shape: wp.array(dtype=int)
    unbounded: wp.array(dtype=int)


@wp.struct
class ContactListData:
    """The collision stage's buffers (softsnake/sim/contact_list.py): the previous list (to carry multipliers of the
    pairs that stay), per-particle candidate counts and first slots, the per-world overflow count and the shape BVH."""

    old_shape: wp.array(dtype=int)
    old_first: wp.array(dtype=int)
    old_num: wp.array(dtype=int)
    old_lam_n: wp.array(dtype=float)
    lam_prev: wp.array(dtype=float)
    count: wp.array(dtype=int)
    offset: wp.array(dtype=int)
    overflow: wp.array(dtype=int)
    bvh: ShapeBvh


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
def listed_slot(tid: int, m: ModelData, s: StepData, c: ContactListData, shape: int) -> int:
    """−2 if pair (particle, ``shape``) of (world, particle) ``tid`` is no candidate this step, else the slot it held
    in the previous list (−1: none). The one test behind list_contact_candidates' count and write passes, so they
    agree."""
    w = tid // m.particle_count
    p = tid - w * m.particle_count
    k = carried_slot(c.old_first[tid], c.old_num[tid], c.old_shape, w * m.contact_count, shape)
    lam_n = float(0.0)
    if k >= 0:
        lam_n = c.lam_prev[contact_row0(m, w, k) + 2]
    if contact_candidate(m, s.contact, s.h, s.x_start[tid], s.v_start[tid], s.v[tid], p, shape, lam_n):
        return k
    return -2


@wp.func
def query_box(m: ModelData, contact: ContactSettings, h: float, x0: wp.vec3, v_lin: wp.vec3, v: wp.vec3, p: int):
    """(low, high) corners of the box around the particle's two positions of the step (x⁻ + h·ṽ, x⁻ + h·v⁻), widened by
    its radius and the contact margin [m]: a shape with a gap ≤ margin at either position has a point inside it."""
    xa = x0 + v * h
    xb = x0 + v_lin * h
    e = m.particle_radius[p] + contact.margin
    low = wp.vec3(wp.min(xa[0], xb[0]) - e, wp.min(xa[1], xb[1]) - e, wp.min(xa[2], xb[2]) - e)
    high = wp.vec3(wp.max(xa[0], xb[0]) + e, wp.max(xa[1], xb[1]) + e, wp.max(xa[2], xb[2]) + e)
    return low, high


@wp.func
def shape_box_meets(m: ModelData, s: int, low: wp.vec3, high: wp.vec3) -> bool:
    """The box of shape s's bounding sphere overlaps [low, high] (False for unbounded shapes). The BVH's boxes are
    these boxes slightly enlarged, so every shape this accepts is among a BVH query's results."""
    bound = shape_bounding_radius(m.shape_type[s], m.shape_params[s])
    if bound < 0.0:
        return False
    c = m.shape_pos[s]
    for a in range(3):
        if c[a] + bound < low[a] or c[a] - bound > high[a]:
            return False
    return True


@wp.kernel
def shape_bounds(
    # Model:
    m: ModelData,
    # Out:
    bound: wp.array(dtype=float),
):
    """Bounding radius of every static shape (−1: unbounded), for building the BVH on the host with the very radii
    that shape_box_meets uses."""
    s = wp.tid()
    bound[s] = shape_bounding_radius(m.shape_type[s], m.shape_params[s])


@wp.func
def contact_list_offsets(
    w: int,
    particles_per_world: int,
    capacity: int,
    count: wp.array(dtype=int),
    offset: wp.array(dtype=int),
    overflow: wp.array(dtype=int),
):
    """Running sum of the candidate counts within world w (``offset``: first slot of each particle's run, before
    clamping to the capacity; ``overflow[w]``: candidates that did not fit)."""
    total = int(0)
    for p in range(particles_per_world):
        offset[w * particles_per_world + p] = total
        total += count[w * particles_per_world + p]
    overflow[w] = wp.max(total - capacity, 0)


@wp.func
def clear_contact_slot(tid: int, m: ModelData, s: StepData):
    """Slot ``tid`` (world-major) emptied: no pair, zero multipliers and frame."""
    w = tid // m.contact_count
    k = tid - w * m.contact_count
    s.jac.contact_particle[tid] = -1
    s.jac.contact_shape[tid] = -1
    s.jac.contact_frame[tid] = wp.mat33()
    s.contact_lam_n_prev[tid] = 0.0
    row0 = contact_row0(m, w, k)
    for r in range(3):
        s.lam[row0 + r] = 0.0


@wp.func
def fill_slot(m: ModelData, s: StepData, c: ContactListData, w: int, p: int, shape: int, k: int, slot: int):
    """Pair (p, ``shape``) into ``slot`` of world w (nothing beyond the capacity) with what its previous slot k
    carried (k < 0: a new pair, zero multipliers as cleared)."""
    K = m.contact_count
    if slot < K:
        s.jac.contact_particle[w * K + slot] = p
        s.jac.contact_shape[w * K + slot] = shape
        if k >= 0:
            for r in range(3):
                s.lam[contact_row0(m, w, slot) + r] = c.lam_prev[contact_row0(m, w, k) + r]
            s.contact_lam_n_prev[w * K + slot] = c.old_lam_n[w * K + k]


@wp.func
def sort_run_by_shape(m: ModelData, s: StepData, w: int, begin: int, end: int):
    """Insertion sort of one particle's slots [begin, end) by shape index, moving each pair's multipliers with it: the
    order of the full scan (runs are a few slots long)."""
    K = m.contact_count
    for i in range(begin + 1, end):
        j = i
        while j > begin:
            a = w * K + j - 1
            b = w * K + j
            if s.jac.contact_shape[a] <= s.jac.contact_shape[b]:
                break
            ts = s.jac.contact_shape[a]
            s.jac.contact_shape[a] = s.jac.contact_shape[b]
            s.jac.contact_shape[b] = ts
            tl = s.contact_lam_n_prev[a]
            s.contact_lam_n_prev[a] = s.contact_lam_n_prev[b]
            s.contact_lam_n_prev[b] = tl
            ra = contact_row0(m, w, j - 1)
            rb = contact_row0(m, w, j)
            for r in range(3):
                t = s.lam[ra + r]
                s.lam[ra + r] = s.lam[rb + r]
                s.lam[rb + r] = t
            j -= 1


@wp.func
def take_candidate(tid: int, m: ModelData, s: StepData, c: ContactListData, shape: int, slot: int, write: int) -> int:
    """If pair (particle, ``shape``) of (world, particle) ``tid`` is a candidate: write it into ``slot`` with what it
    carried (write = 1) and return the next slot; else ``slot``."""
    w = tid // m.particle_count
    p = tid - w * m.particle_count
    k = listed_slot(tid, m, s, c, shape)
    if k > -2:
        if write != 0:
            fill_slot(m, s, c, w, p, shape, k, slot)
        return slot + 1
    return slot


@wp.func
def list_contact_candidates(tid: int, m: ModelData, s: StepData, c: ContactListData, write: int):
    """The candidates of (world, particle) ``tid``, each with the multipliers it carried (``c``: the previous list's
    layout and multipliers). Called twice per step with one enumeration, to count (write = 0: ``c.count``) and then
    to write them from ``c.offset`` on (write = 1), so the counts match the slots."""
    w = tid // m.particle_count
    p = tid - w * m.particle_count
    K = m.contact_count
    first = int(0)
    if write != 0:
        first = c.offset[tid]
    slot = first
    if m.particle_inv_mass[p] > 0.0 and c.bvh.active == 0:
        for shape in range(m.shape_count):
            slot = take_candidate(tid, m, s, c, shape, slot, write)
    elif m.particle_inv_mass[p] > 0.0:
        low, high = query_box(m, s.contact, s.h, s.x_start[tid], s.v_start[tid], s.v[tid], p)
        for u in range(c.bvh.unbounded.shape[0]):
            slot = take_candidate(tid, m, s, c, c.bvh.unbounded[u], slot, write)
        query = wp.bvh_query_aabb(c.bvh.id, low, high)
        item = int(0)
        while wp.bvh_query_next(query, item):
            shape = c.bvh.item_shape[item]
            if shape_box_meets(m, shape, low, high):
                slot = take_candidate(tid, m, s, c, shape, slot, write)
        # the previous list's pairs outside the box: they stay candidates while they carry λ_n > 0
        f0 = c.old_first[tid]
        for kk in range(f0, f0 + c.old_num[tid]):
            shape = c.old_shape[w * K + kk]
            if shape_bounding_radius(m.shape_type[shape], m.shape_params[shape]) >= 0.0 and not shape_box_meets(
                m, shape, low, high
            ):
                slot = take_candidate(tid, m, s, c, shape, slot, write)
        if write != 0:
            sort_run_by_shape(m, s, w, wp.min(first, K), wp.min(slot, K))
    if write != 0:
        s.jac.contact_first[tid] = wp.min(first, K)
        s.jac.contact_num[tid] = wp.min(slot, K) - wp.min(first, K)
    else:
        c.count[tid] = slot
