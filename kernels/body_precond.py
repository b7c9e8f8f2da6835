"""Rigid-body block of the row preconditioner of the primal-FEM saddle system (docs/solver.md).

The multiplier rows see the Schur matrix S = J_p A⁻¹ J_pᵀ + J_b M_b⁻¹ J_bᵀ + C. Its body part couples every row that
acts on the same body (a carriage glued to a link face by dozens of attachments, the joints to its wheels, their ground
contacts), which a diagonal cannot capture. The preconditioner takes S̃ = D + J_b M_b⁻¹ J_bᵀ, with D the rows' own part
(the particle part J_p diag(A)⁻¹ J_pᵀ and the compliance; floored at ε × the body part for hard body-only rows), and
inverts it exactly with the Woodbury identity

    S̃⁻¹ = D⁻¹ − D⁻¹ J_b H⁻¹ J_bᵀ D⁻¹,     H = M_b + J_bᵀ D⁻¹ J_b,

where H is block diagonal over clusters of bodies that share rows (a carriage and its wheels), so each cluster is one
small dense Cholesky factorisation per Newton iteration, done by the lanes of the world one row each, and its inverse
formed from it a column per lane, so that each application in the Krylov solve is a product with one lane per row of
the clusters (a triangular solve is a chain of dependent steps that one lane walks while the block waits).
"""

import warp as wp

from .data import BodyData, BodyJacobian, Jacobian, ModelData
from .friction import contact_slot_off
from .rigid import ang, attachment_row0, body_pose, joint_row0, lin, row_effective_mass, spatial, unit
from .rigid_contact import body_contact_row0, particle_body_row0

# Loops stay loops: add_row (four dense 6×6 block updates) is inlined for every row of every row kind; unrolled, this
# module took ~3 minutes to compile for CUDA.
wp.set_module_options({"max_unroll": 0})


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


@wp.func
def add_block(
    H: wp.array(dtype=wp.float64),
    bb: BodyBlocks,
    w: int,
    bi: int,
    gi: wp.spatial_vector,
    bj: int,
    gj: wp.spatial_vector,
    s: float,
):
    """H[bi, bj] += s · gi gjᵀ (both bodies in the same cluster)."""
    c = bb.body_cluster[bi]
    n = bb.cluster_dofs[c]
    base = w * bb.block_size + bb.cluster_offset[c]
    oi = 6 * bb.body_slot[bi]
    oj = 6 * bb.body_slot[bj]
    for a in range(6):
        for k in range(6):
            wp.atomic_add(H, base + (oi + a) * n + oj + k, wp.float64(s * gi[a] * gj[k]))


@wp.func
def add_row(
    H: wp.array(dtype=wp.float64),
    bb: BodyBlocks,
    b: BodyData,
    w: int,
    row: int,
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    ba: int,
    pa: wp.transform,
    ga: wp.spatial_vector,
    bq: int,
    pq: wp.transform,
    gq: wp.spatial_vector,
):
    """One row acting on bodies ba (and bq, −1: none) with Jacobian parts ga, gq: D of the row and its H terms."""
    part = row_effective_mass(b, ba, pa, lin(ga), ang(ga)) + row_effective_mass(b, bq, pq, lin(gq), ang(gq))
    if part <= 0.0:
        row_d[row] = diag[row]
        return
    d = wp.max(diag[row] - part, bb.floor * part)
    row_d[row] = d
    s = 1.0 / d
    if ba >= 0:
        add_block(H, bb, w, ba, ga, ba, ga, s)
    if bq >= 0:
        add_block(H, bb, w, bq, gq, bq, gq, s)
        if ba >= 0:
            add_block(H, bb, w, ba, ga, bq, gq, s)
            add_block(H, bb, w, bq, gq, ba, ga, s)


@wp.func
def body_mass_block(
    tid: int,
    b: BodyData,
    bb: BodyBlocks,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    H: wp.array(dtype=wp.float64),
):
    """H[i, i] += M_b of body ``tid`` (world-major; world inertia at the iterate's pose); H was zeroed."""
    w = tid // b.body_count
    i = tid - w * b.body_count
    pose = body_pose(b, i, w, bx_start, bv, h)
    for a in range(6):
        e = wp.spatial_vector()
        e[a] = 1.0
        col = world_mass_times(b, i, pose, e)
        c = bb.body_cluster[i]
        n = bb.cluster_dofs[c]
        base = w * bb.block_size + bb.cluster_offset[c]
        o = 6 * bb.body_slot[i]
        for k in range(6):
            wp.atomic_add(H, base + (o + k) * n + o + a, wp.float64(col[k]))


@wp.func
def attachment_and_joint_block(
    tid: int,
    m: ModelData,
    b: BodyData,
    bj: BodyJacobian,
    bb: BodyBlocks,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    H: wp.array(dtype=wp.float64),
):
    """The H terms and D of attachment or joint ``tid`` (world-major over attachments, then joints)."""
    per_world = b.attachment_count + b.joint_count
    w = tid // per_world
    e = tid - w * per_world
    if e < b.attachment_count:
        i = b.attachment_body[e]
        pose = body_pose(b, i, w, bx_start, bv, h)
        arm = bj.attachment_arm[w * b.attachment_count + e]
        row0 = attachment_row0(m, b, w, e)
        for r in range(3):
            ek = unit(r)
            add_row(
                H,
                bb,
                b,
                w,
                row0 + r,
                diag,
                row_d,
                i,
                pose,
                spatial(ek, wp.cross(arm, ek)),
                -1,
                pose,
                wp.spatial_vector(),
            )
    else:
        j = e - b.attachment_count
        ip = b.joint_parent[j]
        ic = b.joint_child[j]
        pp = body_pose(b, ip, w, bx_start, bv, h)
        pc = body_pose(b, ic, w, bx_start, bv, h)
        row0 = joint_row0(m, b, w, j)
        for r in range(6):
            k = (w * b.joint_count + j) * 6 + r
            l = bj.joint_lin[k]
            add_row(
                H,
                bb,
                b,
                w,
                row0 + r,
                diag,
                row_d,
                ic,
                pc,
                spatial(l, bj.joint_ang_child[k]),
                ip,
                pp,
                spatial(-l, bj.joint_ang_parent[k]),
            )


@wp.func
def body_contact_block(
    tid: int,
    m: ModelData,
    b: BodyData,
    bj: BodyJacobian,
    bb: BodyBlocks,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    H: wp.array(dtype=wp.float64),
):
    """The H terms and D of body contact slot ``tid`` (an empty slot: D = its diagonal)."""
    w = tid // b.body_contact_count
    k = tid - w * b.body_contact_count
    F = bj.contact_frame[tid]
    row0 = body_contact_row0(m, b, w, k)
    if contact_slot_off(F):
        for r in range(3):
            row_d[row0 + r] = diag[row0 + r]
        return
    f = k // b.target_count
    t = k - f * b.target_count
    ia = b.feature_body[f]
    ib = int(-1)
    if t >= m.shape_count:
        ib = b.body_shape_body[b.target_body_shape[t - m.shape_count]]
    pa = body_pose(b, ia, w, bx_start, bv, h)
    pb = body_pose(b, ib, w, bx_start, bv, h)
    for r in range(3):
        n = wp.vec3(F[r, 0], F[r, 1], F[r, 2])
        ga = spatial(n, wp.cross(bj.contact_arm_a[tid], n))
        gb = spatial(-n, -wp.cross(bj.contact_arm_b[tid], n))
        add_row(H, bb, b, w, row0 + r, diag, row_d, ia, pa, ga, ib, pb, gb)


@wp.func
def particle_body_block(
    tid: int,
    m: ModelData,
    b: BodyData,
    jac: Jacobian,
    bb: BodyBlocks,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    diag: wp.array(dtype=float),
    row_d: wp.array(dtype=float),
    H: wp.array(dtype=wp.float64),
):
    """The H terms and D of particle–body-shape slot ``tid``."""
    w = tid // m.particle_body_count
    k = tid - w * m.particle_body_count
    row0 = particle_body_row0(m, w, k)
    F = jac.pb_frame[tid]
    if contact_slot_off(F):
        for r in range(3):
            row_d[row0 + r] = diag[row0 + r]
        return
    nbs = m.particle_body_count // m.particle_count
    p = k // nbs
    s = b.particle_target_shape[k - p * nbs]
    ib = b.body_shape_body[s]
    pose = body_pose(b, ib, w, bx_start, bv, h)
    for r in range(3):
        n = wp.vec3(F[r, 0], F[r, 1], F[r, 2])
        add_row(
            H,
            bb,
            b,
            w,
            row0 + r,
            diag,
            row_d,
            ib,
            pose,
            spatial(-n, -wp.cross(jac.pb_arm[tid], n)),
            -1,
            pose,
            wp.spatial_vector(),
        )


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
    for i in range(n):
        big = wp.max(big, H[base + i * n + i])
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
            lij = H[base + i * n + j]
            for k in range(j + 1, i + 1):
                H[base + i * n + k] = H[base + i * n + k] - lij * H[base + k * n + j]


@wp.func
def cluster_inverse_column(
    w: int, dof: wp.vec3i, bb: BodyBlocks, L: wp.array(dtype=wp.float64), G: wp.array(dtype=wp.float64)
):
    """Column q = dof[2] of G = H⁻¹ = L⁻ᵀL⁻¹ for its cluster: L z = e_q, then Lᵀ g = z, in place in G's column q
    (one lane per column, so that a preconditioner application is a product, one lane per row)."""
    n = bb.cluster_dofs[dof[0]]
    q = dof[2]
    base = w * bb.block_size + dof[1]
    for i in range(n):  # L z = e_q (z_i = 0 above row q)
        t = wp.float64(0.0)
        if i == q:
            t = wp.float64(1.0)
        if i > q:
            for k in range(q, i):
                t -= L[base + i * n + k] * G[base + k * n + q]
        G[base + i * n + q] = t / L[base + i * n + i]
    for ii in range(n):  # Lᵀ g = z
        i = n - 1 - ii
        t = G[base + i * n + q]
        for k in range(i + 1, n):
            t -= L[base + k * n + i] * G[base + k * n + q]
        G[base + i * n + q] = t / L[base + i * n + i]


@wp.func
def cluster_inverse_row(
    w: int,
    q: int,
    b: BodyData,
    bb: BodyBlocks,
    G: wp.array(dtype=wp.float64),
    f: wp.array(dtype=wp.spatial_vector),
    y: wp.array(dtype=float),
):
    """y = H⁻¹ f on body dof q of world w (f = J_bᵀ D⁻¹ r per body; y per body dof, 6 per body): row dof[2] of its
    cluster's G times the cluster's part of f, summed in float64."""
    dof = cluster_dof(b, bb, q)
    c = dof[0]
    n = bb.cluster_dofs[c]
    row = w * bb.block_size + dof[1] + dof[2] * n
    acc = wp.float64(0.0)
    for slot in range(bb.cluster_bodies_start[c], bb.cluster_bodies_start[c + 1]):  # the cluster's bodies in order
        fk = f[w * b.body_count + bb.cluster_bodies[slot]]
        k = row + 6 * (slot - bb.cluster_bodies_start[c])
        for a in range(6):
            acc += G[k + a] * wp.float64(fk[a])
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
def woodbury_row(
    i: int, r: wp.array(dtype=float), u: wp.array(dtype=float), d: wp.array(dtype=float), z: wp.array(dtype=float)
):
    """z = D⁻¹r − D⁻¹u on row i (u = J_b H⁻¹ J_bᵀ D⁻¹r on body rows, 0 elsewhere)."""
    z[i] = r[i] / d[i] - u[i] / d[i]
