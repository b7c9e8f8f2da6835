"""Rigid-body block of the row preconditioner of the primal-FEM saddle system (docs/solver.md).

The multiplier rows see the Schur matrix S = J_p A⁻¹ J_pᵀ + J_b M_b⁻¹ J_bᵀ + C. Its body part couples every row that
acts on the same body (a carriage glued to a link face by dozens of attachments, the joints to its wheels, their ground
contacts), which a diagonal cannot capture. The preconditioner takes S̃ = D + J_b M_b⁻¹ J_bᵀ, with D the rows' own part
(the particle part J_p diag(A)⁻¹ J_pᵀ and the compliance; floored at ε × the body part for hard body-only rows), and
inverts it exactly with the Woodbury identity

    S̃⁻¹ = D⁻¹ − D⁻¹ J_b H⁻¹ J_bᵀ D⁻¹,     H = M_b + J_bᵀ D⁻¹ J_b,

where H is block diagonal over clusters of bodies that share rows (a carriage and its wheels). H is summed per body row
over the bodies' incidence lists, a lane per chunk of a list and then a lane per entry adding the chunks in order (no
atomics: the same H whatever order the lanes run in); each cluster is one small dense Cholesky factorisation per
Newton iteration, done by the lanes of the world one row each, and its inverse
formed from it a column per lane, so that each application in the Krylov solve is a product with one lane per row of
the clusters (a triangular solve is a chain of dependent steps that one lane walks while the block waits).
"""

import warp as wp

from .block import LANE_BATCH, batch_holds, batch_step, gather_batch, lane_batch
from .data import (
    ATTACHMENT,
    BODY_CONTACT,
    PARTICLE_BODY,
    BodyData,
    BodyJacobian,
    Jacobian,
    ModelData,
)
from .friction import contact_slot_off
from .rigid import ang, attachment_row0, body_pose, joint_row0, lin, row_effective_mass, spatial, unit
from .rigid_contact import (
    body_contact_row0,
    body_family_starts,
    body_incidence_entry,
    particle_body_row0,
    particle_body_slot,
    target_body,
)

# Loops stay loops: add_row_terms (dense 6 × 12 row updates) is inlined for every row of every row kind; unrolled,
# the factor's module took ~3 minutes to compile for CUDA.
wp.set_module_options({"max_unroll": 0})


#: six float64 entries: a body's part of a row of H⁻¹ (cluster_inverse_row)
vec6d = wp.types.vector(length=6, dtype=wp.float64)


@wp.struct
class BodyBlocks:
    """Cluster layout (one world): body → cluster and 6-dof slot in it; per cluster its dof count and offset into the
    flattened dense blocks of one world (``block_size`` floats per world)."""

    body_cluster: wp.array(dtype=int)
    body_slot: wp.array(dtype=int)
    cluster_dofs: wp.array(dtype=int)
    cluster_offset: wp.array(dtype=int)
    cluster_bodies_start: wp.array(dtype=int)
    cluster_bodies: wp.array(dtype=int)
    block_size: int
    clusters: int
    max_dofs: int  # the largest cluster's dofs (the factorisation's steps)
    floor: float  # ε: D ≥ ε · (body part) on every body row


@wp.func
def world_mass_times(b: BodyData, body: int, pose: wp.transform, v: wp.spatial_vector) -> wp.spatial_vector:
    """M_b v with the world inertia at ``pose``."""
    R = wp.quat_to_matrix(wp.transform_get_rotation(pose))
    I = R * b.body_inertia[body] * wp.transpose(R)
    m = 0.0
    if b.body_inv_mass[body] > 0.0:
        m = 1.0 / b.body_inv_mass[body]
    return spatial(lin(v) * m, I * ang(v))


# ----------------------------------------------------------------------------------- the rows' body Jacobians
@wp.func
def attachment_row_jacobian(arm: wp.vec3, r: int) -> wp.spatial_vector:
    """Row r (the world axis e_r) of an attachment with lever arm ``arm`` [m]: its body part (e_r, arm × e_r)."""
    ek = unit(r)
    return spatial(ek, wp.cross(arm, ek))


@wp.func
def joint_child_jacobian(bj: BodyJacobian, k: int) -> wp.spatial_vector:
    """Joint row k (world-major, 6 per joint): the child body's part."""
    return spatial(bj.joint_lin[k], bj.joint_ang_child[k])


@wp.func
def joint_parent_jacobian(bj: BodyJacobian, k: int) -> wp.spatial_vector:
    """Joint row k: the parent body's part."""
    return spatial(-bj.joint_lin[k], bj.joint_ang_parent[k])


@wp.func
def contact_row_jacobian(F: wp.mat33, r: int, arm: wp.vec3, sign: float) -> wp.spatial_vector:
    """Row r (t1, t2, n) of a contact frame F seen from a body whose centre lies −arm from the contact point:
    sign · (n_r, arm × n_r) (+1 the feature's body, −1 the target's)."""
    n = wp.vec3(F[r, 0], F[r, 1], F[r, 2])
    return spatial(n * sign, wp.cross(arm, n) * sign)


@wp.func
def set_body_row_d(
    row: int,
    b: BodyData,
    bb: BodyBlocks,
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
    w: int,
    inv_inertia: wp.array(dtype=wp.mat33),
    ba: int,
    ga: wp.spatial_vector,
    bq: int,
    gq: wp.spatial_vector,
):
    """D of one row of world w acting on bodies ba and bq (its diagonal where the body part vanishes) and its weight
    in H, 1/D (0 where the body part vanishes: the row adds nothing to H); ``inv_inertia``: the bodies' world inverse
    inertias at the iterate."""
    part = row_effective_mass(b, ba, w, inv_inertia, lin(ga), ang(ga)) + row_effective_mass(
        b, bq, w, inv_inertia, lin(gq), ang(gq)
    )
    if part > 0.0:
        d = wp.max(diag[row] - part, bb.floor * part)  # the rest, floored at ε × the body part
        row_d[row] = d
        row_weight[row] = 1.0 / d
    else:
        row_d[row] = diag[row]
        row_weight[row] = 0.0


# ------------------------------------------------------------------------------- D of the rows acting on bodies
@wp.func
def attachment_and_joint_row_d(
    tid: int,
    m: ModelData,
    b: BodyData,
    bj: BodyJacobian,
    bb: BodyBlocks,
    inv_inertia: wp.array(dtype=wp.mat33),
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    """D and weight of the rows of attachment or joint ``tid`` (world-major over attachments, then joints)."""
    per_world = b.attachment_count + b.joint_count
    w = tid // per_world
    e = tid - w * per_world
    if e < b.attachment_count:
        i = b.attachment_body[e]
        arm = bj.attachment_arm[w * b.attachment_count + e]
        row0 = attachment_row0(m, b, w, e)
        for r in range(3):
            g = attachment_row_jacobian(arm, r)
            set_body_row_d(row0 + r, b, bb, diag, row_d, row_weight, w, inv_inertia, i, g, -1, wp.spatial_vector())
    else:
        j = e - b.attachment_count
        ip = b.joint_parent[j]
        ic = b.joint_child[j]
        row0 = joint_row0(m, b, w, j)
        for r in range(6):
            k = (w * b.joint_count + j) * 6 + r
            gc = joint_child_jacobian(bj, k)
            gp = joint_parent_jacobian(bj, k)
            set_body_row_d(row0 + r, b, bb, diag, row_d, row_weight, w, inv_inertia, ic, gc, ip, gp)


@wp.func
def body_contact_slot_row_d(
    tid: int,
    m: ModelData,
    b: BodyData,
    bj: BodyJacobian,
    bb: BodyBlocks,
    inv_inertia: wp.array(dtype=wp.mat33),
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    """D and weight of the rows of body contact slot ``tid`` (an empty slot: its diagonal)."""
    w = tid // b.body_contact_count
    k = tid - w * b.body_contact_count
    F = bj.contact_frame[tid]
    row0 = body_contact_row0(m, b, w, k)
    if contact_slot_off(F):
        for r in range(3):
            row_d[row0 + r] = diag[row0 + r]
            row_weight[row0 + r] = 0.0
        return
    f = k // b.target_count
    ia = b.feature_body[f]
    ib = target_body(m, b, k - f * b.target_count)
    for r in range(3):
        ga = contact_row_jacobian(F, r, bj.contact_arm_a[tid], 1.0)
        gb = contact_row_jacobian(F, r, bj.contact_arm_b[tid], -1.0)
        set_body_row_d(row0 + r, b, bb, diag, row_d, row_weight, w, inv_inertia, ia, ga, ib, gb)


@wp.func
def particle_body_slot_row_d(
    tid: int,
    m: ModelData,
    b: BodyData,
    jac: Jacobian,
    bb: BodyBlocks,
    inv_inertia: wp.array(dtype=wp.mat33),
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    row_weight: wp.array(dtype=float),
):
    """D and weight of the rows of particle–body-shape slot ``tid``."""
    w = tid // m.particle_body_count
    k = tid - w * m.particle_body_count
    row0 = particle_body_row0(m, w, k)
    F = jac.pb_frame[tid]
    if contact_slot_off(F):
        for r in range(3):
            row_d[row0 + r] = diag[row0 + r]
            row_weight[row0 + r] = 0.0
        return
    ib = b.body_shape_body[particle_body_slot(m, b, k)[1]]
    for r in range(3):
        g = contact_row_jacobian(F, r, jac.pb_arm[tid], -1.0)
        set_body_row_d(row0 + r, b, bb, diag, row_d, row_weight, w, inv_inertia, ib, g, -1, wp.spatial_vector())


# --------------------------------------------------------------------- H, summed per body row in a fixed order
@wp.func
def load6(a: wp.array(dtype=wp.float64), at: int) -> vec6d:
    """a[at … at + 5], the six loads issued together."""
    return vec6d(a[at], a[at + 1], a[at + 2], a[at + 3], a[at + 4], a[at + 5])


@wp.func
def store6(a: wp.array(dtype=wp.float64), at: int, v: vec6d):
    """a[at … at + 5] = v."""
    a[at] = v[0]
    a[at + 1] = v[1]
    a[at + 2] = v[2]
    a[at + 3] = v[3]
    a[at + 4] = v[4]
    a[at + 5] = v[5]


@wp.func
def terms6(coef: float, g: wp.spatial_vector) -> vec6d:
    """coef · g[k] for k < 6, each product rounded in float32, then widened."""
    return vec6d(
        wp.float64(coef * g[0]),
        wp.float64(coef * g[1]),
        wp.float64(coef * g[2]),
        wp.float64(coef * g[3]),
        wp.float64(coef * g[4]),
        wp.float64(coef * g[5]),
    )


@wp.func
def add_row_terms(
    out: wp.array(dtype=wp.float64),
    first: int,
    bb: BodyBlocks,
    weight: float,
    i: int,
    gi: wp.spatial_vector,
    q: int,
    gq: wp.spatial_vector,
):
    """One row acting on body i (part gi) and q (part gq; −1: none) with weight 1/D: its terms of H's rows (i, a),
    gi[a]/D · (gi, gq), added at the columns of i and q in their cluster (``out[first + a · max_dofs + column]``).
    Each row (i, a) is read whole before it is written (the columns of i and of q never overlap): a GPU lane waits
    for memory once per row of H, where a load after each store waited once per entry."""
    if weight != 0.0:
        oi = 6 * bb.body_slot[i]
        oq = 6 * bb.body_slot[wp.max(q, 0)]
        for a in range(6):
            coef = weight * gi[a]  # each term rounded in float32, as the rows are; the sums in float64
            row = first + a * bb.max_dofs
            at_i = row + oi
            at_q = row + oq
            hi = load6(out, at_i)
            hq = vec6d()
            if q >= 0:
                hq = load6(out, at_q)
            store6(out, at_i, hi + terms6(coef, gi))
            if q >= 0:
                store6(out, at_q, hq + terms6(coef, gq))


@wp.func
def body_block_chunk(
    w: int,
    c: int,
    m: ModelData,
    b: BodyData,
    bj: BodyJacobian,
    jac: Jacobian,
    bb: BodyBlocks,
    row_weight: wp.array(dtype=float),
    partial: wp.array(dtype=wp.float64),
):
    """Σ over chunk c of body i's incidence list of the rows' terms of H's rows (i, 0…5), J_bᵀ D⁻¹ J_b with the
    rows' weights 1/D (set_body_row_d): written in list order, by this lane alone, to partial[(w · chunks + c) · 6 +
    a, :max_dofs], which body_block_entry adds chunk by chunk, so that H is the same sum whatever the lanes (no
    atomics)."""
    chunks = b.body_chunk_start[b.body_count]
    i = b.chunk_body[c]
    first = (w * chunks + c) * 6 * bb.max_dofs
    for k in range(6 * bb.max_dofs):
        partial[first + k] = wp.float64(0.0)
    none = wp.spatial_vector()
    starts = body_family_starts(m)
    for list_entry in range(b.chunk_first[c], b.chunk_end[c]):
        entry = body_incidence_entry(b, list_entry, starts)
        family = entry[0]
        k = entry[1]
        role = entry[2]
        if family == ATTACHMENT:
            arm = bj.attachment_arm[w * b.attachment_count + k]
            row0 = attachment_row0(m, b, w, k)
            for r in range(3):
                g = attachment_row_jacobian(arm, r)
                add_row_terms(partial, first, bb, row_weight[row0 + r], i, g, -1, none)
        elif family == PARTICLE_BODY:
            kk = w * m.particle_body_count + k
            F = jac.pb_frame[kk]
            if not contact_slot_off(F):
                row0 = particle_body_row0(m, w, k)
                for r in range(3):
                    g = contact_row_jacobian(F, r, jac.pb_arm[kk], -1.0)
                    add_row_terms(partial, first, bb, row_weight[row0 + r], i, g, -1, none)
        elif family == BODY_CONTACT:
            kk = w * b.body_contact_count + k
            F = bj.contact_frame[kk]
            if not contact_slot_off(F):
                f = k // b.target_count
                q = b.feature_body[f]  # role 1: this body is the target's, the other the feature's
                if role == 0:
                    q = target_body(m, b, k - f * b.target_count)
                row0 = body_contact_row0(m, b, w, k)
                for r in range(3):
                    ga = contact_row_jacobian(F, r, bj.contact_arm_a[kk], 1.0)
                    gb = contact_row_jacobian(F, r, bj.contact_arm_b[kk], -1.0)
                    if role == 0:
                        add_row_terms(partial, first, bb, row_weight[row0 + r], i, ga, q, gb)
                    else:
                        add_row_terms(partial, first, bb, row_weight[row0 + r], i, gb, q, ga)
        else:
            q = b.joint_child[k]  # role 1: this body is the parent, the other the child
            if role != 1:
                q = b.joint_parent[k]
            row0 = joint_row0(m, b, w, k)
            for r in range(6):
                kr = (w * b.joint_count + k) * 6 + r
                gc = joint_child_jacobian(bj, kr)
                gp = joint_parent_jacobian(bj, kr)
                if role == 1:
                    add_row_terms(partial, first, bb, row_weight[row0 + r], i, gp, q, gc)
                else:
                    add_row_terms(partial, first, bb, row_weight[row0 + r], i, gc, q, gp)


@wp.func
def body_mass_entry(
    b: BodyData,
    i: int,
    w: int,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    h: float,
    a: int,
    c: int,
) -> float:
    """Entry (a, c) of body i's M_b at the iterate's pose: m δ_ac on the linear dofs, the world inertia R I Rᵀ on
    the angular ones (rows a, c of R: r_aᵀ I r_c), 0 between them."""
    if a < 3 and c < 3:
        if a == c and b.body_inv_mass[i] > 0.0:
            return 1.0 / b.body_inv_mass[i]
        return 0.0
    if a < 3 or c < 3:
        return 0.0
    R = wp.quat_to_matrix(wp.transform_get_rotation(body_pose(b, i, w, bx_start, bv, h)))
    ra = wp.vec3(R[a - 3, 0], R[a - 3, 1], R[a - 3, 2])
    rc = wp.vec3(R[c - 3, 0], R[c - 3, 1], R[c - 3, 2])
    return wp.dot(ra, b.body_inertia[i] * rc)


@wp.func
def body_block_entry(
    w: int,
    item: int,
    b: BodyData,
    bb: BodyBlocks,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    partial: wp.array(dtype=wp.float64),
    H: wp.array(dtype=wp.float64),
):
    """H = M_b + J_bᵀ D⁻¹ J_b at row (body dof q, column k of its cluster), item = q · max_dofs + k: the body's mass
    block plus its chunks' partial sums (body_block_chunk) added in order. Every entry of every cluster block is
    written, each by one lane."""
    q = item // bb.max_dofs
    col = item - q * bb.max_dofs
    dof = cluster_dof(b, bb, q)
    n = bb.cluster_dofs[dof[0]]
    if col >= n:
        return
    i = q // 6
    a = q - 6 * i
    acc = wp.float64(0.0)
    o = 6 * bb.body_slot[i]
    if col >= o and col < o + 6:  # M_b: the body's own 6 × 6 block
        acc = wp.float64(body_mass_entry(b, i, w, bx_start, bv, h, a, col - o))
    chunks = b.body_chunk_start[b.body_count]
    stride = 6 * bb.max_dofs  # from one chunk's entry (a, col) to the next's
    at = wp.vec4i(((w * chunks) * 6 + a) * bb.max_dofs + col)
    end = b.body_chunk_start[i + 1]
    for c0 in range(b.body_chunk_start[i], end, batch_step(1)):  # a batch of chunks' loads at a time
        cs = lane_batch(0, c0, 1, end)
        terms = gather_batch(partial, cs * stride + at)
        for j in range(LANE_BATCH):
            if batch_holds(c0, j, 1, end):
                acc += terms[j]
    H[w * bb.block_size + dof[1] + dof[2] * n + col] = acc


@wp.func
def cluster_dof(b: BodyData, bb: BodyBlocks, q: int) -> wp.vec3i:
    """(cluster, its block's offset in a world, local dof) of a world's body dof q = 6·body + component: the lanes
    of a world walk the clusters' dofs by q, each dof of each cluster once."""
    i = q // 6
    c = bb.body_cluster[i]
    return wp.vec3i(c, bb.cluster_offset[c], 6 * bb.body_slot[i] + q - 6 * i)


@wp.func
def cluster_jitter(w: int, c: int, bb: BodyBlocks, H: wp.array(dtype=wp.float64), jitter: wp.array(dtype=wp.float64)):
    """The relative jitter 10⁻¹² × the largest diagonal entry of cluster block c, added to each pivot (it keeps the
    float64 factorisation definite: the hard rows' weights 1/D make H far worse conditioned than float32 resolves)."""
    n = bb.cluster_dofs[c]
    base = w * bb.block_size + bb.cluster_offset[c]
    big = wp.float64(0.0)
    for i0 in range(0, n, batch_step(1)):  # a batch of the diagonal's loads at a time
        ii = lane_batch(0, i0, 1, n)
        d = gather_batch(H, ii * (n + 1) + wp.vec4i(base))
        for j in range(LANE_BATCH):
            if batch_holds(i0, j, 1, n):
                big = wp.max(big, d[j])
    jitter[w * bb.clusters + c] = wp.float64(1.0e-12) * big


@wp.func
def cholesky_scale_column(
    w: int, dof: wp.vec3i, j: int, bb: BodyBlocks, H: wp.array(dtype=wp.float64), jitter: wp.array(dtype=wp.float64)
):
    """Step j of the right-looking Cholesky factorisation H = L Lᵀ, first half, for row i = dof[2] of its cluster:
    L[i, j] = H[i, j] / √(H[j, j] + jitter) for i > j (the pivot is read, not written, in this half)."""
    n = bb.cluster_dofs[dof[0]]
    i = dof[2]
    if j < n and i > j:
        base = w * bb.block_size + dof[1]
        d = wp.sqrt(wp.max(H[base + j * n + j] + jitter[w * bb.clusters + dof[0]], wp.float64(1.0e-300)))
        H[base + i * n + j] = H[base + i * n + j] / d


@wp.func
def cholesky_update_row(
    w: int, dof: wp.vec3i, j: int, bb: BodyBlocks, H: wp.array(dtype=wp.float64), jitter: wp.array(dtype=wp.float64)
):
    """Step j, second half, for row i = dof[2]: the trailing update H[i, k] −= L[i, j] L[k, j] for j < k ≤ i (row i
    is this lane's alone; column j is final), and row j's pivot becomes L[j, j]."""
    n = bb.cluster_dofs[dof[0]]
    i = dof[2]
    if j < n and i >= j:
        base = w * bb.block_size + dof[1]
        if i == j:
            d = wp.sqrt(wp.max(H[base + j * n + j] + jitter[w * bb.clusters + dof[0]], wp.float64(1.0e-300)))
            H[base + j * n + j] = d
        else:
            # a batch of the row's entries and of column j at a time, all loads before the batch's stores (column j
            # and row i's entries right of it never overlap): a GPU lane waits once per batch, not once per entry
            lij = H[base + i * n + j]
            row = wp.vec4i(base + i * n)
            col = wp.vec4i(base + j)
            for k0 in range(j + 1, i + 1, batch_step(1)):
                ks = lane_batch(0, k0, 1, i + 1)
                hik = gather_batch(H, ks + row)
                hkj = gather_batch(H, ks * n + col)
                for a in range(LANE_BATCH):
                    if batch_holds(k0, a, 1, i + 1):
                        H[row[0] + ks[a]] = hik[a] - lij * hkj[a]


@wp.func
def subtract_products(
    t: wp.float64,
    L: wp.array(dtype=wp.float64),
    l0: int,
    l_step: int,
    G: wp.array(dtype=wp.float64),
    g0: int,
    g_step: int,
    first: int,
    end: int,
) -> wp.float64:
    """t − Σ L[l0 + k·l_step] · G[g0 + k·g_step] over k in [first, end), subtracted in order, a batch of four terms'
    loads at a time (a GPU lane waits once per batch, not once per term)."""
    acc = t
    for k0 in range(first, end, batch_step(1)):
        ks = lane_batch(0, k0, 1, end)
        ls = gather_batch(L, ks * l_step + wp.vec4i(l0))
        gs = gather_batch(G, ks * g_step + wp.vec4i(g0))
        for a in range(LANE_BATCH):
            if batch_holds(k0, a, 1, end):
                acc -= ls[a] * gs[a]
    return acc


@wp.func
def cluster_inverse_column(
    w: int,
    dof: wp.vec3i,
    bb: BodyBlocks,
    L: wp.array(dtype=wp.float64),
    G: wp.array(dtype=wp.float64),
    slice_width: int,
    G_lanes: wp.array(dtype=wp.float64),
):
    """Column q = dof[2] of G = H⁻¹ = L⁻ᵀL⁻¹ for its cluster: L z = e_q, then Lᵀ g = z, in place in G's column q
    (one lane per column, so that a preconditioner application is a product, one lane per row). With slices
    (``slice_width`` > 1, kernels/block.py) each final entry G[i, q] is also written to ``G_lanes`` at q·n + i: there
    entry (r, k) lies at k·n + r, so that the application's lanes, a row r each, read consecutive addresses
    (``cluster_inverse_row``). Without, ``G_lanes`` is ``G`` itself and is not written twice."""
    n = bb.cluster_dofs[dof[0]]
    q = dof[2]
    base = w * bb.block_size + dof[1]
    for i in range(n):  # L z = e_q (z_i = 0 above row q): row i of L against G's column q
        t = wp.float64(0.0)
        if i == q:
            t = wp.float64(1.0)
        t = subtract_products(t, L, base + i * n, 1, G, base + q, n, q, i)
        G[base + i * n + q] = t / L[base + i * n + i]
    for ii in range(n):  # Lᵀ g = z: column i of L against G's column q
        i = n - 1 - ii
        t = subtract_products(G[base + i * n + q], L, base + i, n, G, base + q, n, i + 1, n)
        g = t / L[base + i * n + i]
        G[base + i * n + q] = g
        if slice_width > 1:
            G_lanes[base + q * n + i] = g


@wp.func
def cluster_inverse_row(
    w: int,
    q: int,
    b: BodyData,
    bb: BodyBlocks,
    G: wp.array(dtype=wp.float64),
    slice_width: int,
    f: wp.array(dtype=wp.spatial_vector),
    y: wp.array(dtype=float),
):
    """y = H⁻¹ f on body dof q of world w (f = J_bᵀ D⁻¹ r per body; y per body dof, 6 per body): row dof[2] of its
    cluster's H⁻¹ times the cluster's part of f, summed in float64 in the cluster's body order, a batch of bodies at
    a time (kernels/block.py). ``G``: H⁻¹ row-major, or with slices (``slice_width`` > 1) lane-major
    (cluster_inverse_column's ``G_lanes``)."""
    dof = cluster_dof(b, bb, q)
    c = dof[0]
    n = bb.cluster_dofs[c]
    entry = w * bb.block_size + dof[1] + dof[2] * n  # entry (dof[2], 0); entry k lies k·stride further
    stride = 1
    if slice_width > 1:
        entry = w * bb.block_size + dof[1] + dof[2]
        stride = n
    first = bb.cluster_bodies_start[c]
    end = bb.cluster_bodies_start[c + 1]
    acc = wp.float64(0.0)
    for s0 in range(first, end, batch_step(1)):
        slots = lane_batch(0, s0, 1, end)
        fs = gather_batch(f, gather_batch(bb.cluster_bodies, slots) + wp.vec4i(w * b.body_count))
        for j in range(LANE_BATCH):
            k = entry + 6 * stride * (slots[j] - first)
            g = vec6d(
                G[k],
                G[k + stride],
                G[k + 2 * stride],
                G[k + 3 * stride],
                G[k + 4 * stride],
                G[k + 5 * stride],
            )
            if batch_holds(s0, j, 1, end):
                for a in range(6):
                    acc += g[a] * wp.float64(fs[j, a])
    y[w * 6 * b.body_count + q] = float(acc)


@wp.func
def body_mass_times_dofs(
    w: int,
    i: int,
    b: BodyData,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    y: wp.array(dtype=float),
    impulse: wp.array(dtype=wp.spatial_vector),
):
    """M_b y of body i in world w as a body impulse (y per body dof from cluster_inverse_row), which the row
    gathers turn back into the body velocity y (they multiply by M_b⁻¹ at the same pose)."""
    k = w * b.body_count + i
    v = wp.spatial_vector()
    for a in range(6):
        v[a] = y[6 * k + a]
    impulse[k] = world_mass_times(b, i, body_pose(b, i, w, bx_start, bv, h), v)


@wp.func
def woodbury_row(r: float, u: float, d: float) -> float:
    """z = D⁻¹r − D⁻¹u on one row (u = J_b H⁻¹ J_bᵀ D⁻¹r on body rows, 0 elsewhere)."""
    return r / d - u / d
