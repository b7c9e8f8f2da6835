"""Sums over a list per output, one block of lanes per output: J_bᵀx per rigid body, the coarse restriction per node.

Each output's list is shared by the lanes of its block (stride = block size, ``wp.launch_tiled``) and a tile sum adds
their partial sums in a fixed tree order, so results are deterministic and batched worlds reproduce single ones bit
for bit. With one lane (the CPU) the list is summed in order, exactly as a serial loop. On a GPU a serial loop per
output was latency-bound: a carriage has ~50 incident attachment, joint and contact rows, a coarse node ~50 particles.
These kernels have their own module because a module compiles once per block size.
"""

import warp as wp

from .data import BodyData, BodyJacobian, Jacobian, ModelData
from .rigid import attachment_row0, joint_row0, spatial


@wp.kernel
def scatter_body_impulses(
    m: ModelData,
    b: BodyData,
    bjac: BodyJacobian,
    jac: Jacobian,
    x: wp.array(dtype=float),
    # Out:
    impulse: wp.array(dtype=wp.spatial_vector),
):
    """impulse[body] = Σ over the body's incidence list of J_bᵀx (force and torque about the body's centre) [N s, N m s]
    per unit of x."""
    tid, lane = wp.tid()
    w = tid // b.body_count
    i = tid - w * b.body_count
    first_attachment = m.element_count
    first_joint = first_attachment + b.attachment_count
    f = wp.vec3()
    t = wp.vec3()
    for c in range(b.body_incidence_start[i] + lane, b.body_incidence_start[i + 1], wp.block_dim()):
        code = b.body_incidence[c]
        e = code // 4
        role = code - 4 * e
        if e < first_joint:
            k = e - first_attachment
            row0 = attachment_row0(m, b, w, k)
            xk = wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
            f += xk
            t += wp.cross(bjac.attachment_arm[w * b.attachment_count + k], xk)
        elif e >= m.particle_body_element_start:
            # a particle against one of this body's shapes: the body takes −Fᵀx at the contact arm
            s = e - m.particle_body_element_start
            row0 = w * m.row_count + m.particle_body_row_start + 3 * s
            kk = w * m.particle_body_count + s
            imp = wp.transpose(jac.pb_frame[kk]) * wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
            f -= imp
            t -= wp.cross(jac.pb_arm[kk], imp)
        elif e >= first_joint + b.joint_count:
            # body contact slot (kernels/rigid_contact.py): role 0 = the feature's body, 1 = the target's body
            s = e - first_joint - b.joint_count
            row0 = joint_row0(m, b, w, b.joint_count) + 3 * s
            kk = w * b.body_contact_count + s
            imp = wp.transpose(bjac.contact_frame[kk]) * wp.vec3(x[row0], x[row0 + 1], x[row0 + 2])
            if role == 0:
                f += imp
                t += wp.cross(bjac.contact_arm_a[kk], imp)
            else:
                f -= imp
                t -= wp.cross(bjac.contact_arm_b[kk], imp)
        else:
            j = e - first_joint
            row0 = joint_row0(m, b, w, j)
            for r in range(6):
                k = (w * b.joint_count + j) * 6 + r
                xr = x[row0 + r]
                if role == 1:
                    f -= bjac.joint_lin[k] * xr
                    t += bjac.joint_ang_parent[k] * xr
                else:
                    f += bjac.joint_lin[k] * xr
                    t += bjac.joint_ang_child[k] * xr
    total = wp.tile_sum(wp.tile(spatial(f, t), preserve_type=True))
    wp.tile_store(impulse, total, offset=tid)


@wp.kernel
def coarse_restrict(
    particles_per_world: int,
    nodes_per_world: int,
    bodies_per_world: int,
    node_start: wp.array(dtype=int),
    node_particles: wp.array(dtype=int),
    node_weights: wp.array(dtype=float),
    node_body: wp.array(dtype=int),
    rotation: wp.array(dtype=wp.mat33),
    r: wp.array(dtype=wp.vec3),
    # Out:
    rc: wp.array(dtype=float),
):
    """rc = Rᵀ Pᵀ r per coarse node (in the body's rest frame; P = the node's interpolation weights)."""
    tid, lane = wp.tid()
    w = tid // nodes_per_world
    j = tid - w * nodes_per_world
    acc = wp.vec3()
    for k in range(node_start[j] + lane, node_start[j + 1], wp.block_dim()):
        acc += r[w * particles_per_world + node_particles[k]] * node_weights[k]
    total = wp.tile_sum(wp.tile(acc, preserve_type=True))
    if lane == 0:
        R = rotation[w * bodies_per_world + node_body[j]]
        a = wp.transpose(R) * wp.tile_extract(total, 0)
        base = 3 * tid
        rc[base] = a[0]
        rc[base + 1] = a[1]
        rc[base + 2] = a[2]


@wp.kernel
def balance_body_momentum(
    particles_per_world: int,
    bodies_per_world: int,
    body_start: wp.array(dtype=int),
    body_particles: wp.array(dtype=int),
    body_inv_mass: wp.array(dtype=float),
    mass: wp.array(dtype=float),
    bv: wp.array(dtype=wp.vec3),
    # Out:
    v: wp.array(dtype=wp.vec3),
):
    """Newton's third law per soft body after a truncated solve: with bv = Jᵀλ − M(v − ṽ) per particle (the momentum
    residual at the step's last iterate), the body's net residual impulse Σ bv is what the solve left unbalanced;
    adding Δv = Σ bv / Σ m to every free particle of the body removes it, so that the body's momentum change equals the
    impulses on it. body_inv_mass = 1/Σ m, 0 for a body that is not corrected (one with kinematic particles: its
    supports take the residual)."""
    tid, lane = wp.tid()
    w = tid // bodies_per_world
    c = tid - w * bodies_per_world
    inv = body_inv_mass[c]
    if inv == 0.0:
        return  # uniform over the block
    base = w * particles_per_world
    acc = wp.vec3()
    for k in range(body_start[c] + lane, body_start[c + 1], wp.block_dim()):
        acc += bv[base + body_particles[k]]
    dv = wp.tile_extract(wp.tile_sum(wp.tile(acc, preserve_type=True)), 0) * inv
    for k in range(body_start[c] + lane, body_start[c + 1], wp.block_dim()):
        p = body_particles[k]
        if mass[p] > 0.0:
            v[base + p] = v[base + p] + dv
