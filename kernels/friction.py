"""Coulomb friction in the fixed-point form u_t + w·λ_f = 0 (paper's friction rows, docs/solver.md).

Elliptic (anisotropic) cone |(λ1/μ1, λ2/μ2)| ≤ λ_n in a tangent frame fixed to the shape. For a sliding contact the
maximal
dissipation impulse is λ_k = −μ_k² u_k λ_n / q, q = √(μ1²u1² + μ2²u2²), so the fixed point weight of row k is
w_k = q / (μ_k² λ_n) (isotropic: w = |u_t|/(μλ_n)). The weights are re-evaluated at every Newton iterate from the
velocities and the normal impulse of that iterate (both carried from the previous step by the warm start), with q
floored
at a small creep speed, so a sticking contact is a very stiff row rather than a switch between hard and sliding rows,
and every friction impulse change happens inside the linear solve, balanced by the rest of the system. At the fixed
point |λ_f| = |u_t|/w ≤ λ_n-cone exactly; the impulse left outside the cone by a truncated iteration is projected
back (``project_friction``), which keeps the bound exact: the known bug of the raw |λ_f| denominator (friction exceeding
μλ_n once sliding) cannot occur. The dual step projects once, after its last Newton iteration, and applies the change
through M⁻¹Jᵀ; the primal step projects every Newton update and leaves the velocity to the next solve (docs/solver.md).
"""

import warp as wp


@wp.func
def friction_slip_measure(u1: float, u2: float, mu1: float, mu2: float, stick_velocity: float) -> float:
    """Weighted slip q = √(μ1²u1² + μ2²u2²) of the fixed point [velocity], floored at a creep speed: a sticking contact
    stays a (very stiff) compliant row and w stays continuous in the state. Evaluated at each Newton iterate, so the
    weights follow the velocities the whole (coupled) system produces, whatever the effective mass behind the node."""
    q = wp.sqrt(mu1 * mu1 * u1 * u1 + mu2 * mu2 * u2 * u2)
    return wp.max(q, wp.max(mu1, mu2) * stick_velocity)


@wp.func
def friction_weight(q: float, mu: float, cone_normal: float, w_free: float) -> float:
    """Fixed-point weight w_k = q/(μ_k² λ_n) of one tangent row [velocity per impulse]; w_free switches the row off."""
    if cone_normal <= 0.0 or mu <= 0.0:
        return w_free  # no friction along this axis: drives λ → −u/w ≈ 0
    return wp.min(q / (mu * mu * cone_normal), w_free)


@wp.func
def cone_scale(l1: float, l2: float, mu1: float, mu2: float, lam_n: float) -> float:
    """Factor ≤ 1 that brings (λ1, λ2) into the elliptic cone of radius λ_n (1 when already inside)."""
    s = wp.max(lam_n, 0.0)
    e2 = float(0.0)
    if mu1 > 0.0:
        e2 += (l1 / mu1) * (l1 / mu1)
    if mu2 > 0.0:
        e2 += (l2 / mu2) * (l2 / mu2)
    e = wp.sqrt(e2)
    if e > s:
        if e > 0.0:
            return s / e
        return 0.0
    return 1.0


@wp.func
def cone_projected(l1: float, l2: float, mu: wp.vec2, lam_n: float) -> wp.vec2:
    """Friction impulses (λ1, λ2) projected onto the elliptic cone |(λ1/μ1, λ2/μ2)| ≤ λ_n; a direction with μ = 0
    carries no friction."""
    a1 = l1
    a2 = l2
    if mu[0] <= 0.0:
        a1 = 0.0
    if mu[1] <= 0.0:
        a2 = 0.0
    k = cone_scale(a1, a2, mu[0], mu[1], lam_n)
    return wp.vec2(a1 * k, a2 * k)


from .contact import fischer_burmeister_row  # noqa: E402
from .data import ContactSettings, Jacobian, ModelData, contact_row0  # noqa: E402


@wp.func
def contact_slot_off(frame: wp.mat33) -> bool:
    """A contact slot that is not a candidate this step carries a zero frame (rows t1, t2, n)."""
    return frame[2, 0] == 0.0 and frame[2, 1] == 0.0 and frame[2, 2] == 0.0


@wp.func
def release_contact_slot(row0: int, lam: wp.array(dtype=float)):
    """Zero the multipliers (t1, t2, n) of a slot that stops being a contact candidate."""
    for r in range(3):
        lam[row0 + r] = 0.0


@wp.func
def switch_off_contact_rows(
    row0: int, row_compliance: wp.array(dtype=float), rhs: wp.array(dtype=float), diag: wp.array(dtype=float)
):
    """Identity rows with zero right-hand side for a far or inactive contact slot (Δλ stays 0)."""
    for r in range(3):
        rhs[row0 + r] = 0.0
        diag[row0 + r] = 1.0
        row_compliance[row0 + r] = 1.0


@wp.func
def assemble_contact_rows(
    row0: int,
    frame: wp.mat33,
    u: wp.vec3,
    gap_rate: float,
    r_n: float,
    r1: float,
    r2: float,
    mu: wp.vec2,
    cone_prev: float,
    newton_iteration: int,
    contact: ContactSettings,
    lam: wp.array(dtype=float),
    row_compliance: wp.array(dtype=float),
    rhs: wp.array(dtype=float),
    diag: wp.array(dtype=float),
) -> float:
    """Write the rows (t1, t2, n) of one contact: the FB normal row (gap_rate = gap/h [m/s]) and the two fixed-point
    friction rows. u: relative velocity at the contact [m/s]; r_n, r1, r2: Delassus diagonals of the normal and tangent
    rows; cone_prev: the previous step's normal impulse, the cone radius of the first iteration. Returns φ_n²."""
    lam_n = lam[row0 + 2]
    fb = fischer_burmeister_row(gap_rate, lam_n, r_n, contact.da_min, contact.smoothing)
    row_compliance[row0 + 2] = fb[0]
    rhs[row0 + 2] = fb[1]
    diag[row0 + 2] = r_n + fb[0]
    cone = wp.max(lam_n, 0.0)
    if newton_iteration == 0:
        cone = wp.max(cone, cone_prev)
    u1 = wp.dot(wp.vec3(frame[0, 0], frame[0, 1], frame[0, 2]), u)
    u2 = wp.dot(wp.vec3(frame[1, 0], frame[1, 1], frame[1, 2]), u)
    q = friction_slip_measure(u1, u2, mu[0], mu[1], contact.stick_velocity)
    w1 = friction_weight(q, mu[0], cone, contact.free_weight * r1)
    w2 = friction_weight(q, mu[1], cone, contact.free_weight * r2)
    row_compliance[row0] = w1
    row_compliance[row0 + 1] = w2
    rhs[row0] = -(u1 + w1 * lam[row0])
    rhs[row0 + 1] = -(u2 + w2 * lam[row0 + 1])
    diag[row0] = r1 + w1
    diag[row0 + 1] = r2 + w2
    return fb[2] * fb[2]


@wp.func
def project_friction(
    tid: int,
    m: ModelData,
    jac: Jacobian,
    shape_mu: wp.array(dtype=wp.vec2),
    lam: wp.array(dtype=float),
    delta: wp.array(dtype=float),
    contact_lam_n_prev: wp.array(dtype=float),
    active_contacts: wp.array(dtype=int),
    active_index: int,
):
    """Cone projection of the friction impulses of particle–shape contact slot ``tid`` (world-major); the change Δλ_f
    is added to ``delta`` for the caller to apply (the dual step through M⁻¹Jᵀ, the primal step through its next
    solve or the next step's prediction); a contact with positive normal impulse counts in
    active_contacts[active_index]."""
    w = tid // m.contact_count
    cidx = tid - w * m.contact_count
    row0 = contact_row0(m, w, cidx)
    F = jac.contact_frame[tid]
    lam_n = lam[row0 + 2]
    if contact_slot_off(F):
        contact_lam_n_prev[tid] = 0.0
        return
    s = jac.contact_shape[tid]
    projected = cone_projected(lam[row0], lam[row0 + 1], shape_mu[w * m.shape_count + s], lam_n)
    n1 = projected[0]
    n2 = projected[1]
    d1 = n1 - lam[row0]
    d2 = n2 - lam[row0 + 1]
    if d1 != 0.0 or d2 != 0.0:
        lam[row0] = n1
        lam[row0 + 1] = n2
        delta[row0] += d1
        delta[row0 + 1] += d2
    contact_lam_n_prev[tid] = wp.max(lam_n, 0.0)
    if lam_n > 0.0:
        wp.atomic_add(active_contacts, active_index, 1)
