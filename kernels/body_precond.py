"""Rigid-body block of the row preconditioner of the primal-FEM saddle system (docs/solver.md).

The multiplier rows see the Schur matrix S = J_p A⁻¹ J_pᵀ + J_b M_b⁻¹ J_bᵀ + C. Its body part couples every row that
acts on the same body (a carriage glued to a link face by dozens of attachments, the joints to its wheels, their ground
contacts), which a diagonal cannot capture. The preconditioner takes S̃ = D + J_b M_b⁻¹ J_bᵀ, with D the rows' own part
(the particle part J_p diag(A)⁻¹ J_pᵀ and the compliance; floored at ε × the body part for hard body-only rows), and
inverts it exactly with the Woodbury identity

    S̃⁻¹ = D⁻¹ − D⁻¹ J_b H⁻¹ J_bᵀ D⁻¹,     H = M_b + J_bᵀ D⁻¹ J_b,

where H is block diagonal over clusters of bodies that share rows (a carriage and its wheels), so each cluster is one
small dense Cholesky factorisation per Newton iteration.
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
def cluster_cholesky(tid: int, bb: BodyBlocks, clusters: int, H: wp.array(dtype=wp.float64)):
    """In-place lower Cholesky factor of cluster block ``tid`` (world-major), in float64: the hard rows' weights 1/D
    make H far worse conditioned than float32 resolves (a tiny relative jitter keeps it definite)."""
    w = tid // clusters
    c = tid - w * clusters
    n = bb.cluster_dofs[c]
    base = w * bb.block_size + bb.cluster_offset[c]
    big = wp.float64(0.0)
    for i in range(n):
        big = wp.max(big, H[base + i * n + i])
    jitter = wp.float64(1.0e-12) * big
    for j in range(n):
        s = H[base + j * n + j] + jitter
        for k in range(j):
            s -= H[base + j * n + k] * H[base + j * n + k]
        d = wp.sqrt(wp.max(s, wp.float64(1.0e-300)))
        H[base + j * n + j] = d
        for i in range(j + 1, n):
            t = H[base + i * n + j]
            for k in range(j):
                t -= H[base + i * n + k] * H[base + j * n + k]
            H[base + i * n + j] = t / d


@wp.func
def cluster_solve(
    tid: int,
    b: BodyData,
    bb: BodyBlocks,
    clusters: int,
    h: float,
    bx_start: wp.array(dtype=wp.transform),
    bv: wp.array(dtype=wp.spatial_vector),
    H: wp.array(dtype=wp.float64),
    f: wp.array(dtype=wp.spatial_vector),
    work: wp.array(dtype=wp.float64),
    impulse: wp.array(dtype=wp.spatial_vector),
):
    """y = H⁻¹ f for cluster ``tid`` (f = J_bᵀ D⁻¹ r per body); writes M_b y as a body impulse, which the row
    gathers turn back into the body velocity y (they multiply by M_b⁻¹ at the same pose)."""
    w = tid // clusters
    c = tid - w * clusters
    n = bb.cluster_dofs[c]
    base = w * bb.block_size + bb.cluster_offset[c]
    # gather the right-hand side into the work vector (same layout as the block's diagonal)
    for q in range(bb.cluster_bodies_start[c], bb.cluster_bodies_start[c + 1]):
        i = bb.cluster_bodies[q]
        fi = f[w * b.body_count + i]
        o = 6 * bb.body_slot[i]
        for a in range(6):
            work[base + o + a] = wp.float64(fi[a])
    for i in range(n):  # L z = f
        s = work[base + i]
        for k in range(i):
            s -= H[base + i * n + k] * work[base + k]
        work[base + i] = s / H[base + i * n + i]
    for ii in range(n):  # Lᵀ y = z
        i = n - 1 - ii
        s = work[base + i]
        for k in range(i + 1, n):
            s -= H[base + k * n + i] * work[base + k]
        work[base + i] = s / H[base + i * n + i]
    for q in range(bb.cluster_bodies_start[c], bb.cluster_bodies_start[c + 1]):
        i = bb.cluster_bodies[q]
        o = 6 * bb.body_slot[i]
        y = wp.spatial_vector()
        for a in range(6):
            y[a] = float(work[base + o + a])
        impulse[w * b.body_count + i] = world_mass_times(b, i, body_pose(b, i, w, bx_start, bv, h), y)


@wp.func
def woodbury_row(
    i: int, r: wp.array(dtype=float), u: wp.array(dtype=float), d: wp.array(dtype=float), z: wp.array(dtype=float)
):
    """z = D⁻¹r − D⁻¹u on row i (u = J_b H⁻¹ J_bᵀ D⁻¹r on body rows, 0 elsewhere)."""
    z[i] = r[i] / d[i] - u[i] / d[i]
