"""How much of the right-hand side MINRES leaves after k iterations on the full snake in the gait (docs/solver.md,
"Preconditioner"; the measurements: benchmarks/RESULTS.md, "The preconditioner at the budget").

Runs the default gait to ``--seconds`` (h = 1/120 s, 4 × 20), then, in the first Newton iteration of the next step,
assembles the saddle matrix K and the preconditioner P⁻¹ column by column from the kernels (one product per unknown,
~7,500 for the snake) and runs MINRES in NumPy/SciPy with them: the relative residual ‖Kx − b‖/‖b‖ and the velocities'
error against the exact solution of that system after each iteration count, and what the kernels' own float32 solve
left at the budget beside float64 MINRES with the same matrix and preconditioner (round-off or conditioning). The
exact solution is K⁺b with the eigenvalues below 1e-12 of the largest left out, and b loses its part along them
(``consistent_system``): the wheels' redundant rows leave one such eigenvalue, far below the capture's round-off, along
which K⁻¹b would carry velocities of norm 0.11 beside K⁺b's 0.29 (the coarse snake: 0.35 beside 0.12).

    python -P benchmarks/studies/saddle_residual.py [--seconds 1.0] [--iterations 5,10,20,40,80]
    python -P benchmarks/studies/saddle_residual.py --coarse --seconds 10 --newton-iteration 3 --row-study
    python -P benchmarks/studies/saddle_residual.py --newton-iteration 2 --row-study --exact --iterations 10,20,40,80
    python -P benchmarks/studies/saddle_residual.py --newton-iteration 2 --slaved --eliminate-actuation --spectrum

``--coarse`` takes the coarse snake (5 cross-sections per link, ~2,200 unknowns), ``--newton-iteration k`` the k-th
Newton iteration's system instead of the first, and ``--row-study`` also runs MINRES with ideal row blocks in place of
the kernels' one (dense NumPy inverses, eigenvalues floored at ``--floor`` × the largest, default 1e-6: the row
Schur complement is near-singular): what a better rows' preconditioner could gain, and which coupling it must capture.
Mind the floor: it is part of the preconditioner, not only a safeguard (``--floor 1e-12`` is the exact inverse, which a
Woodbury factorisation would give; docs/solver.md). With
P_v = D_v⁻¹ + Q the particles' two-level preconditioner (Jacobi part D_v⁻¹, coarse part Q = P A_c⁻¹ Pᵀ) and S the
rows' own block (bodies and compliance), the row block is the inverse of S + diag(J_p D_v⁻¹ J_pᵀ) + J_p Q J_pᵀ
(coarse coupling: Woodbury-sized), of S + J_p D_v⁻¹ J_pᵀ (rows coupled through shared particles only) or of
S + J_p P_v J_pᵀ (both). ``--exact`` adds the exact blocks: the rows' exact Schur complement S + J_p A⁻¹ J_pᵀ beside
the kernels' particles' block, and A⁻¹ with that complement's diagonal (a diagonal rows' block at its most exact).

``--spectrum`` prints the eigenvalues of the preconditioned operator (P^½ K P^½, whose spectrum MINRES's
convergence answers): how many lie near zero, the share of the preconditioned right-hand side on them, and the row
families that the near-zero eigenvectors live on (each entry scaled by the preconditioner's diagonal, P_ii^(-½)):
which rows a better rows' block must couple.

``--slaved`` also solves the system with the attachments' particles slaved to their carriages (the attachments are
hard, compliance 0: each glued particle's velocity follows from its body's, so their rows and the particles' unknowns
go, and the bodies' velocities become unknowns; the same exact solution) with a preconditioner like the kernels' on the
reduced system: Jacobi on the free particles, each body's 6 × 6 block exact, the coarse correction, and the rows'
Schur diagonal with the bodies coupled exactly. The bodies' row Jacobians come from the kernels' product, one body's
inverse mass left on at a time (J_b M_b^(−½) up to a rotation of its six coordinates, which the reduced system does
not mind). ``--eliminate-actuation`` also eliminates the actuation rows (the chambers' compliant distances) into the
particles' matrix, as the tets are, beside the kernels' preconditioner rebuilt in NumPy on the system as it is (and with
``--slaved``, on the reduced system too).

``--row-scale 3,10,30`` adds the kernels' preconditioner with its rows' block scaled by those factors (a zero-cost
change that lowers the residual but biases the gait, docs/snake.md).
"""

import argparse

import numpy as np
import scipy.sparse.linalg as sla
import warp as wp

from softsnake.experiments.gait import default_gait, gait_targets
from softsnake.robots.snake import SnakeConfig
from softsnake.robots.snake_sim import SnakeSim
from softsnake.sim import primal as sp
from softsnake.sim.model import quiet_warp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="gait time before the measured step [s]")
    ap.add_argument("--iterations", default="5,10,20,40,80", help="MINRES iteration counts")
    ap.add_argument("--coarse", action="store_true", help="the coarse snake (5 cross-sections per link)")
    ap.add_argument(
        "--newton-iteration", type=int, default=0, help="which Newton iteration's system (0 … newton_iterations − 1)"
    )
    ap.add_argument("--row-study", action="store_true", help="also MINRES with ideal row blocks (dense inverses)")
    ap.add_argument(
        "--exact",
        action="store_true",
        help="also MINRES with exact blocks: the rows' exact Schur complement, and A⁻¹ with its exact diagonal",
    )
    ap.add_argument(
        "--spectrum",
        action="store_true",
        help="also the preconditioned operator's eigenvalues near zero and the row families they live on",
    )
    ap.add_argument(
        "--slaved",
        action="store_true",
        help="also the system with the attachments' particles slaved to their bodies (reduced coordinates)",
    )
    ap.add_argument(
        "--eliminate-actuation",
        action="store_true",
        help="also the system with the actuation rows (compliant distances) eliminated into the particles' matrix",
    )
    ap.add_argument(
        "--floor",
        type=float,
        default=1.0e-6,
        help="eigenvalue floor of the ideal row blocks' inverses, relative to the largest (default 1e-6)",
    )
    ap.add_argument(
        "--row-scale",
        default="",
        help="also the kernels' preconditioner with its rows' block times each of these factors (comma-separated)",
    )
    a = ap.parse_args()
    quiet_warp()
    cfg = SnakeConfig()
    if a.coarse:
        cfg = cfg.with_coarse_mesh()
    if not 0.0 < a.floor < 1.0:
        ap.error("--floor must be in (0, 1)")
    if not 0 <= a.newton_iteration < cfg.solver.newton_iterations:
        ap.error(f"--newton-iteration must be in 0 … {cfg.solver.newton_iterations - 1}")
    sim = SnakeSim(worlds=1, config=cfg)
    gait = default_gait()
    for _ in range(int(round(a.seconds * 60))):
        sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
        sim.step()
    captured = {}
    original = sp.PrimalStep.solve

    def capture(self, it, iterations=None):
        if not captured and it == a.newton_iteration:
            K, index = self.dense(self.matvec)
            P, _ = self.dense(self.precondition)
            if a.slaved:
                nv = 3 * sim.model.particle_count
                captured["C"], captured["Jb"] = body_row_jacobians(self, index, nv, -K[nv:, nv:])
            b = np.concatenate([self.b[0].numpy().ravel(), self.b[1].numpy()]).astype(np.float64)[index]
            captured.update(
                K=K,
                P=P,
                b=b,
                particle_dofs=3 * sim.model.particle_count,
                index=index,
                diag_v=self.data.diag_v.numpy().astype(np.float64),
                positions=sim.particle_positions()[0].astype(np.float64),
            )
            original(self, it, iterations)
            captured["x"] = np.concatenate([self.x[0].numpy().ravel(), self.x[1].numpy()]).astype(np.float64)[index]
            return None
        return original(self, it, iterations)

    sp.PrimalStep.solve = capture
    try:
        sim.set_pressure_targets(gait_targets(gait, sim.time, 1, sim.links))
        sim.step()
    finally:
        sp.PrimalStep.solve = original
    K = 0.5 * (captured["K"] + captured["K"].T)  # symmetric up to float32 round-off
    P = 0.5 * (captured["P"] + captured["P"].T)
    b = captured["b"]
    nv = captured["particle_dofs"]
    mesh = "coarse" if a.coarse else "full"
    print(
        f"{mesh} snake, {a.seconds:g} s into the gait, Newton iteration {a.newton_iteration} of the next step: "
        f"{b.size} unknowns ({nv} particle, {b.size - nv} row), ‖b‖ = {np.linalg.norm(b):.3e}"
    )
    counts = [int(s) for s in a.iterations.split(",")]
    budget = cfg.solver.linear_iterations
    x64, _ = sla.minres(K, b, M=P, maxiter=budget, rtol=1e-30, check=False)
    print(
        f"after the budget's {budget} iterations: the kernels' float32 solve leaves "
        f"{residual(K, captured['x'], b):.3e} of ‖b‖, MINRES in float64 with the same matrix and preconditioner "
        f"{residual(K, x64, b):.3e}"
    )
    family = unknown_families(sim, captured["index"], nv)
    if a.spectrum:
        print_spectrum(K, P, b, family)
    b, exact = consistent_system(K, b, nv)
    variants = {"kernels' preconditioner": P}
    for factor in (float(f) for f in a.row_scale.split(",") if f.strip()):
        M = P.copy()
        M[nv:, nv:] *= factor
        variants[f"kernels', rows' block x {factor:g}"] = M
    if a.row_study:
        link, section = particle_sections(sim)
        carriage = attachment_bodies(sim, captured["index"], nv)
        variants.update(
            ideal_row_blocks(K, P, nv, captured["diag_v"], link, section, captured["positions"], carriage, a.floor)
        )
    if a.exact:
        variants.update(exact_blocks(K, P, nv))
    print(f"relative residual ‖Kx − b‖/‖b‖ | velocities' error ‖x_v − x*_v‖/‖x*_v‖ after {a.iterations} iterations:")
    for name, M in variants.items():
        print_minres(name, K, b, M, counts, lambda x: x[:nv], exact[:nv])
    if a.slaved or a.eliminate_actuation:
        Q = P[:nv, :nv] - np.diag(jacobi_inverse(captured["diag_v"]))  # the particles' coarse part
        w, V = np.linalg.eigh(Q)
        coarse = V[:, w > 1.0e-6 * w.max()]  # the coarse space, the range of Q
        if a.eliminate_actuation:
            eliminated_study(K, b, nv, family, coarse, exact, counts)
        if a.slaved:
            slaved_study(K, b, nv, family, captured, coarse, exact, counts, a.spectrum, a.eliminate_actuation)


def consistent_system(K: np.ndarray, b: np.ndarray, nv: int, rcond: float = 1.0e-12) -> tuple[np.ndarray, np.ndarray]:
    """The right-hand side without its part along K's eigenvectors whose eigenvalues lie below ``rcond`` × the
    largest, and the solution K⁺b there: the system the iterates are measured on. The rows' block holds exact
    redundancies (a wheel's contact and joint rows over its six degrees of freedom), which the float32 capture leaves
    as eigenvalues ~1e-13 of the largest, far below its round-off, each with a small velocity part; the round-off's
    share of b along them would otherwise put most of K⁻¹b's velocities there (and iterates that reduce the residual
    far enough follow)."""
    mu, V = np.linalg.eigh(K)
    keep = np.abs(mu) > rcond * np.abs(mu).max()
    x = V[:, keep] @ ((V[:, keep].T @ b) / mu[keep])
    drop = V[:, ~keep]
    if drop.size:
        along = drop @ ((drop.T @ b) / mu[~keep])
        print(
            f"  {drop.shape[1]} eigenvalue(s) below {rcond:g} × the largest (|μ| ≤ {np.abs(mu[~keep]).max():.1e}) "
            f"hold {np.linalg.norm(drop.T @ b) / np.linalg.norm(b):.1e} of ‖b‖, dropped; along them K⁻¹b has "
            f"velocities of norm {np.linalg.norm(along[:nv]):.2e}, K⁺b {np.linalg.norm(x[:nv]):.2e}"
        )
    return b - drop @ (drop.T @ b), x


def print_minres(name: str, K: np.ndarray, b: np.ndarray, M: np.ndarray, counts: list, velocities, exact_v) -> None:
    """One line: MINRES on K x = b preconditioned by M, the relative residual and the velocities' error
    (``velocities(x)`` against ``exact_v``) after each of ``counts`` iterations."""
    res, err = [], []
    for k in counts:
        x, _ = sla.minres(K, b, M=M, maxiter=k, rtol=1e-30, check=False)
        res.append(residual(K, x, b))
        err.append(np.linalg.norm(velocities(x) - exact_v) / np.linalg.norm(exact_v))
    print(f"{name:<36} " + " / ".join(f"{r:.2e}" for r in res) + " | " + " / ".join(f"{e:.2e}" for e in err))


def saddle(H: np.ndarray, J: np.ndarray, C: np.ndarray) -> np.ndarray:
    """[[H, −Jᵀ], [−J, −C]]."""
    return np.block([[H, -J.T], [-J, -C]])


def eliminate_rows(H, J, C, bz, bl, rows: np.ndarray) -> tuple:
    """The saddle system [[H, −Jᵀ], [−J, −C]] (z, λ) = (bz, bl) with the compliant ``rows`` (a mask; C diagonal and
    positive there, uncoupled through C from the rest) eliminated as the tets are (docs/solver.md, "Why the tets are
    eliminated"): λ_d = −C_d⁻¹ (b_d + J_d z), so H + J_dᵀ C_d⁻¹ J_d, bz − J_dᵀ C_d⁻¹ b_d and the other rows remain."""
    keep = ~rows
    Cd = np.diag(C)[rows]
    if (Cd <= 0.0).any() or np.abs(C[np.ix_(rows, keep)]).max(initial=0.0) > 0.0:
        raise SystemExit("eliminate_rows: the rows must be compliant and uncoupled from the others")
    Jd = J[rows]
    H2 = H + Jd.T @ (Jd / Cd[:, None])
    return H2, J[keep], C[np.ix_(keep, keep)], bz - Jd.T @ (bl[rows] / Cd), bl[keep]


def actuation_rows(family: np.ndarray, C: np.ndarray) -> np.ndarray:
    """The compliant distance rows (the chambers' actuation constraints; the inextensible layer's are hard)."""
    return (family == "distance") & (np.diag(C) > 0.0)


def two_level(H: np.ndarray, coarse: np.ndarray, local: np.ndarray | None = None) -> np.ndarray:
    """L + R (Rᵀ H R)⁻¹ Rᵀ, symmetrised: the ``local`` part L (default Jacobi, H's diagonal inverted, 0 where it is 0)
    and the coarse correction on ``coarse``'s range R."""
    if local is None:
        local = np.diag(inverse_diagonal(np.diag(H)))
    P = local + coarse @ np.linalg.solve(coarse.T @ H @ coarse, coarse.T)
    return 0.5 * (P + P.T)


def kernel_like(A: np.ndarray, Jp: np.ndarray, S: np.ndarray, attached: np.ndarray, coarse: np.ndarray) -> np.ndarray:
    """The kernels' preconditioner rebuilt from a system's blocks (bodies eliminated, rows' block S): the particles'
    two-level block and the rows' (D + J_b M_b⁻¹ J_bᵀ)⁻¹ with D the rows' compliance and their Schur diagonal,
    J diag(A)⁻¹ Jᵀ, two-level on the ``attached`` rows (docs/solver.md, "Preconditioner")."""
    Pv = two_level(A, coarse)
    jacobi = (Jp**2) @ inverse_diagonal(np.diag(A))
    schur_diag = np.where(attached, ((Jp @ Pv) * Jp).sum(axis=1), jacobi)
    return block_diagonal(Pv, np.linalg.inv(S + np.diag(schur_diag)))


def eliminated_study(
    K: np.ndarray, b: np.ndarray, nv: int, family: np.ndarray, coarse: np.ndarray, exact: np.ndarray, counts: list
) -> None:
    """MINRES with the actuation rows eliminated into the particles' matrix (``--eliminate-actuation``), beside the
    same construction of the kernels' preconditioner on the system as it is (``kernel_like``: how near the rebuilt
    one comes to the kernels')."""
    A, Jp, S = K[:nv, :nv], -K[nv:, :nv], -K[nv:, nv:]
    rows = actuation_rows(family[nv:], S)
    attached = family[nv:] == "attachment"
    print(f"actuation rows eliminated: {int(rows.sum())} of the {int((family[nv:] == 'distance').sum())} distances")
    print_minres(
        "rebuilt kernels' preconditioner",
        K,
        b,
        kernel_like(A, Jp, S, attached, coarse),
        counts,
        lambda x: x[:nv],
        exact[:nv],
    )
    A2, J2, S2, bz, bl = eliminate_rows(A, Jp, S, b[:nv], b[nv:], rows)
    K2, b2 = saddle(A2, J2, S2), np.concatenate([bz, bl])
    b2, x2 = consistent_system(K2, b2, nv)
    print(
        f"  {b2.size} unknowns; the exact solution's velocities "
        f"{np.linalg.norm(x2[:nv] - exact[:nv]) / np.linalg.norm(exact[:nv]):.1e} from the kernels' system's"
    )
    M2 = kernel_like(A2, J2, S2, attached[~rows], coarse)
    print_minres("actuation eliminated, rebuilt", K2, b2, M2, counts, lambda x: x[:nv], exact[:nv])


def inverse_diagonal(diag: np.ndarray) -> np.ndarray:
    """1/d per entry, 0 where d is 0 (a kinematic particle's A_pp)."""
    return np.divide(1.0, diag, out=np.zeros_like(diag), where=diag > 0)


def jacobi_inverse(diag: np.ndarray) -> np.ndarray:
    """D⁻¹ per particle dof from the particles' diagonal A_pp (0 for kinematic particles, whose A_pp is 0)."""
    return np.repeat(inverse_diagonal(diag), 3)


def residual(K: np.ndarray, x: np.ndarray, b: np.ndarray) -> float:
    """‖Kx − b‖/‖b‖."""
    return float(np.linalg.norm(K @ x - b) / np.linalg.norm(b))


def unknown_families(sim: SnakeSim, index: np.ndarray, nv: int) -> np.ndarray:
    """The family of each unknown of the dense system (PrimalStep.dense's ``index``): "particle" for the velocities,
    else the row family (softsnake/sim/rows.py) of the row."""
    family = np.full(index.size, "particle", dtype=object)
    rows = index[nv:] - nv
    for f in sim.model.rows:
        family[nv:][(rows >= f.offset) & (rows < f.end)] = f.name
    return family


def attachment_bodies(sim: SnakeSim, index: np.ndarray, nv: int) -> np.ndarray:
    """The rigid body (a carriage) that each row of the dense system attaches a particle to; −1 on the rows of other
    families."""
    rows = index[nv:] - nv
    f = sim.model.rows["attachment"]
    body = np.full(rows.size, -1)
    mine = (rows >= f.offset) & (rows < f.end)
    body[mine] = sim.model.body_data.attachment_body.numpy()[(rows[mine] - f.offset) // f.rows_per_element]
    return body


def print_spectrum(K: np.ndarray, P: np.ndarray, b: np.ndarray, family: np.ndarray, near: float = 0.1) -> None:
    """The eigenvalues λ of P^½ K P^½ (P = L Lᵀ, the same as those of P K): their ranges on the rows' (negative) and
    the particles' (positive) side, how many lie within 0.01 … 0.3 of zero with the share of ‖Lᵀb‖² (the
    preconditioned right-hand side) on them, and the row families of the eigenvectors with |λ| < ``near`` and of the
    five nearest zero, each entry scaled by P_ii^(-½)."""
    w, V = np.linalg.eigh(P)
    L = V * np.sqrt(np.maximum(w, 0.0))
    lam, U = np.linalg.eigh(L.T @ K @ L)
    energy = (U.T @ (L.T @ b)) ** 2
    energy /= energy.sum()
    neg, pos = lam[lam < 0], lam[lam > 0]
    print(
        f"preconditioned eigenvalues: {neg.size} negative, {neg.min():.2e} … {neg.max():.2e}; "
        f"{pos.size} positive, {pos.min():.2e} … {pos.max():.2e}"
    )
    for t in (0.01, 0.03, 0.1, 0.3):
        within = np.abs(lam) < t
        print(f"  |λ| < {t:<4g}: {int(within.sum()):5d} of them, {energy[within].sum():.3f} of the right-hand side")
    scaled = (L @ U) / np.sqrt(np.diag(P))[:, None]
    scaled = scaled**2 / (scaled**2).sum(axis=0)  # each eigenvector's weight per unknown, columns summing to 1

    def shares(columns: np.ndarray) -> str:
        weight = scaled[:, columns].sum(axis=1)
        by_family = {f: weight[family == f].sum() / weight.sum() for f in dict.fromkeys(family)}
        return ", ".join(f"{f} {v:.2f}" for f, v in sorted(by_family.items(), key=lambda kv: -kv[1]) if v >= 0.005)

    close = np.nonzero(np.abs(lam) < near)[0]
    print(f"  the {close.size} eigenvectors with |λ| < {near:g}, by family: {shares(close)}")
    for k in np.argsort(np.abs(lam))[:5]:
        print(f"  λ = {lam[k]: .2e}: {shares(np.array([k]))}")
    counts = {f: int((family == f).sum()) for f in dict.fromkeys(family)}
    print("  unknowns by family: " + ", ".join(f"{f} {c}" for f, c in counts.items()))


def exact_blocks(K: np.ndarray, P: np.ndarray, nv: int) -> dict:
    """Block-diagonal preconditioners with exact blocks: the kernels' particles' block and the exact inverse of the
    rows' Schur complement S + J_p A⁻¹ J_pᵀ; A⁻¹ exact and that complement's diagonal only (a diagonal rows' block at
    its most exact)."""
    A, Jp, S = K[:nv, :nv], -K[nv:, :nv], -K[nv:, nv:]
    A_inv = np.linalg.inv(A)
    schur = S + Jp @ A_inv @ Jp.T
    return {
        "rows: exact Schur complement": block_diagonal(P[:nv, :nv], np.linalg.inv(schur)),
        "A⁻¹ exact, rows: exact diagonal": block_diagonal(A_inv, np.diag(1.0 / np.diag(schur))),
    }


def block_diagonal(particles: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The symmetric block-diagonal preconditioner with these particles' and rows' blocks."""
    M = np.zeros((particles.shape[0] + rows.shape[0],) * 2)
    M[: particles.shape[0], : particles.shape[0]] = particles
    M[particles.shape[0] :, particles.shape[0] :] = rows
    return 0.5 * (M + M.T)


def floored_inverse(S: np.ndarray, floor: float = 1.0e-6) -> np.ndarray:
    """Inverse of a symmetric positive semi-definite matrix with its eigenvalues floored at ``floor`` × the largest."""
    w, V = np.linalg.eigh(0.5 * (S + S.T))
    w = np.maximum(w, floor * w.max())
    return (V / w) @ V.T


def particle_sections(sim: SnakeSim) -> tuple[np.ndarray, np.ndarray]:
    """Link and cross-section index of each particle of world 0."""
    n = sim.model.particle_count
    link, section = np.full(n, -1), np.full(n, -1)
    for k, ids in enumerate(sim.layout.link_particles):
        link[ids], section[ids] = k, sim.layout.link.section
    return link, section


def rigid_modes(ids: np.ndarray, positions: np.ndarray, dofs: int) -> np.ndarray:
    """(dofs, 6) velocity fields of the particles ``ids`` moving rigidly about their centroid (3 translations, 3
    rotations)."""
    phi = np.zeros((dofs, 6))
    arm = positions[ids] - positions[ids].mean(axis=0)
    for p, (x, y, z) in zip(ids, arm):
        phi[3 * p : 3 * p + 3, :3] = np.eye(3)
        phi[3 * p : 3 * p + 3, 3:] = [[0.0, z, -y], [-z, 0.0, x], [y, -x, 0.0]]  # ω × r
    return phi


def row_couplings(
    K: np.ndarray, P: np.ndarray, nv: int, diag_v: np.ndarray, link: np.ndarray, section: np.ndarray
) -> dict:
    """The pieces of the ideal row blocks (module docstring): J_p, S, P_v, J_p D_v⁻¹ J_pᵀ, J_p Q J_pᵀ, and each row's
    cross-section group (its first particle's link and section; rows on bodies only get a group of their own)."""
    Jp, S, Pv = -K[nv:, :nv], -K[nv:, nv:], P[:nv, :nv]
    d_inv = jacobi_inverse(diag_v)
    group = np.arange(Jp.shape[0]) + 10**6
    nonzero = Jp != 0.0
    for r in range(Jp.shape[0]):
        parts = np.unique(np.nonzero(nonzero[r])[0] // 3)
        parts = parts[link[parts] >= 0]
        if parts.size:
            first = parts[np.lexsort((section[parts], link[parts]))[0]]
            group[r] = 1000 * link[first] + section[first]
    return dict(Jp=Jp, S=S, Pv=Pv, JDJ=(Jp * d_inv) @ Jp.T, JQJ=Jp @ (Pv - np.diag(d_inv)) @ Jp.T, group=group)


def section_coarse_rows(c: dict) -> np.ndarray:
    """S + (J_p D_v⁻¹ J_pᵀ within cross-sections) + J_p Q J_pᵀ: the candidate rows' block."""
    return c["S"] + c["JDJ"] * (c["group"][:, None] == c["group"][None, :]) + c["JQJ"]


def ideal_row_blocks(
    K: np.ndarray,
    P: np.ndarray,
    nv: int,
    diag_v: np.ndarray,
    link: np.ndarray,
    section: np.ndarray,
    positions: np.ndarray,
    carriage: np.ndarray,
    floor: float = 1.0e-6,
) -> dict:
    """Block-diagonal preconditioners with the particles' block of ``P`` and ideal row blocks (module docstring), their
    inverses' eigenvalues floored at ``floor`` × the largest; ``carriage``: each row's attachment body
    (attachment_bodies). Two keep the kernels' rows' block and couple the attachment rows alone through the coarse
    space: their block of attachments is (S + diag(J_p D_v⁻¹ J_pᵀ) + J_p Q J_pᵀ) there, beside the diagonal a term of
    rank 3 × the coarse nodes the attached particles touch, which a Woodbury factorisation with the bodies'
    (kernels/body_precond.py) could take; "per carriage" keeps J_p Q J_pᵀ between rows on the same carriage alone
    (not between a link's two end faces), so that the bodies' clusters stay apart; "on the kernels' D" adds that term
    to the kernels' block as it is, whose D holds the coarse diagonal of the attached particles already."""
    c = row_couplings(K, P, nv, diag_v, link, section)
    A, Jp, S, JDJ, JQJ = K[:nv, :nv], c["Jp"], c["S"], c["JDJ"], c["JQJ"]
    # each link's rigid motion as the coarse part instead of the two-level one: Φ (Φᵀ A Φ)⁻¹ Φᵀ
    Q_rigid = np.zeros((nv, nv))
    for k in range(link.max() + 1):
        phi = rigid_modes(np.nonzero(link == k)[0], positions, nv)
        Q_rigid += phi @ np.linalg.solve(phi.T @ A @ phi, phi.T)
    # the candidate inverted per link (each link's rows, attachments included) and for the rows on bodies only apart:
    # without the coupling of the links' rows to the joints' and wheel contacts' through the carriages
    T = section_coarse_rows(c)
    row_link = np.where(c["group"] < 10**6, c["group"] // 1000, -1)
    per_link = np.zeros_like(T)
    for k in np.unique(row_link):
        idx = np.nonzero(row_link == k)[0]
        per_link[np.ix_(idx, idx)] = floored_inverse(T[np.ix_(idx, idx)], floor)

    def with_rows(rows: np.ndarray) -> np.ndarray:
        return block_diagonal(c["Pv"], rows)

    attached = carriage >= 0
    kernels_inverse = np.linalg.inv(P[nv:, nv:])  # D + J_b M_b⁻¹ J_bᵀ
    blocks = np.ix_(attached, attached)
    jacobi_rows = S + np.diag(np.diag(JDJ))  # the rows' block with the particles' Jacobi part
    coarse_coupled = jacobi_rows + JQJ
    kernels_rows = kernels_inverse.copy()
    kernels_rows[blocks] = coarse_coupled[blocks]
    per_carriage = kernels_inverse.copy()
    same = carriage[:, None] == carriage[None, :]
    per_carriage[blocks] = (jacobi_rows + JQJ * same)[blocks]
    on_kernels = kernels_inverse + JQJ * np.outer(attached, attached) * same  # the coarse diagonal in twice
    coupling = np.linalg.eigvalsh(JQJ[blocks])
    # numerical rank: the dense capture is float32, so its round-off leaves eigenvalues ~1e-8 of the largest
    rank = int((coupling > 1.0e-6 * coupling.max()).sum()) if attached.any() else 0
    print(f"the attachment rows' coarse coupling J_p Q J_pᵀ: {int(attached.sum())} rows, rank {rank}")

    return {
        "rows: coarse coupling": with_rows(floored_inverse(coarse_coupled, floor)),
        "rows: kernels', attachments coarse": with_rows(floored_inverse(kernels_rows, floor)),
        "… per carriage": with_rows(floored_inverse(per_carriage, floor)),
        "… per carriage, on the kernels' D": with_rows(floored_inverse(on_kernels, floor)),
        "rows: shared-particle coupling": with_rows(floored_inverse(S + JDJ, floor)),
        "rows: both": with_rows(floored_inverse(S + JDJ + JQJ, floor)),
        "rows: both, shared within sections": with_rows(floored_inverse(T, floor)),
        "rows: both, coarse = links' rigid": with_rows(floored_inverse(S + JDJ + Jp @ Q_rigid @ Jp.T, floor)),
        "rows: both, sections, per link": with_rows(per_link),
    }


def slaved_study(
    K: np.ndarray,
    b: np.ndarray,
    nv: int,
    family: np.ndarray,
    c: dict,
    coarse: np.ndarray,
    exact: np.ndarray,
    counts: list,
    spectrum: bool,
    eliminate: bool,
) -> None:
    """MINRES on the system with the attachments' particles slaved to their bodies (module docstring, ``--slaved``):
    the full system with the bodies' velocities y (unit-mass coordinates) as unknowns, [[H, −Jᵀ], [−J, −C]] with
    H = blockdiag(A, I) and J = [J_p, J̃], has the hard attachment rows J_a z = −b_a, whose null space Z (the glued
    particles' velocities from their bodies') with a particular solution z0 leaves [[Zᵀ H Z, −(J_o Z)ᵀ], [−J_o Z,
    −C_o]] on the free particles, the bodies and the other rows. Prints the residuals and the particles' velocity
    errors against ``exact`` (the kernels' system's solution) like ``main``, for preconditioners built like the
    kernels' on it; with ``eliminate`` also with the actuation rows eliminated (``eliminate_rows``)."""
    A, Jp, S, C, Jb = K[:nv, :nv], -K[nv:, :nv], -K[nv:, nv:], c["C"], c["Jb"]
    nb = Jb.shape[1]
    print(
        f"slaved attachments: {nb // 6} bodies; ‖J̃ J̃ᵀ + C − S‖/‖S‖ = "
        f"{np.linalg.norm(Jb @ Jb.T + C - S) / np.linalg.norm(S):.1e}"
    )
    att = family[nv:] == "attachment"
    Ja, Jo = np.hstack([Jp, Jb])[att], np.hstack([Jp, Jb])[~att]
    if att.any() and np.abs(np.diag(C)[att]).max() > 0.0:
        print(f"  (attachment compliance up to {np.abs(np.diag(C)[att]).max():.1e}: slaving drops it)")
    slave = np.nonzero(np.abs(Ja).max(axis=0)[:nv] > 0.0)[0]
    free = np.setdiff1d(np.arange(nv + nb), slave)  # free particle dofs, then the bodies'
    if slave.size != att.sum():
        raise SystemExit(f"{att.sum()} attachment rows on {slave.size} particle dofs: not one row per dof")
    nz, nf = free.size, int((free < nv).sum())
    Z = np.zeros((nv + nb, nz))
    Z[free, np.arange(nz)] = 1.0
    Z[slave] = -np.linalg.solve(Ja[:, slave], Ja[:, free])
    z0 = np.zeros(nv + nb)
    z0[slave] = np.linalg.solve(Ja[:, slave], -b[nv:][att])
    H = np.zeros((nv + nb,) * 2)
    H[:nv, :nv], H[nv:, nv:] = A, np.eye(nb)
    Hr, Jr, Co = Z.T @ H @ Z, Jo @ Z, C[np.ix_(~att, ~att)]
    bz, bl = Z.T @ (np.concatenate([b[:nv], np.zeros(nb)]) - H @ z0), b[nv:][~att] + Jo @ z0
    row_family = family[nv:][~att]
    actuation = actuation_rows(row_family, Co)

    def velocities(x: np.ndarray) -> np.ndarray:
        return (Z @ x[:nz] + z0)[:nv]

    # the coarse space on the free particles, and the same with the bodies' own six coordinates added
    coarse_free = np.zeros((nz, coarse.shape[1]))
    coarse_free[:nf] = coarse[free[:nf]]
    coarse_bodies = np.hstack([coarse_free, np.vstack([np.zeros((nf, nb)), np.eye(nb)])])
    for eliminated in (False, True) if eliminate else (False,):
        H2, J2, C2, bz2, bl2 = eliminate_rows(Hr, Jr, Co, bz, bl, actuation) if eliminated else (Hr, Jr, Co, bz, bl)
        Kr, br = saddle(H2, J2, C2), np.concatenate([bz2, bl2])
        br, xr = consistent_system(Kr, br, nz)
        tag = "slaved, actuation eliminated" if eliminated else "slaved"
        print(
            f"  {tag}: {br.size} unknowns ({nf} particle, {nb} body, {br.size - nz} row); its exact solution's "
            f"velocities {np.linalg.norm(velocities(xr) - exact[:nv]) / np.linalg.norm(exact[:nv]):.1e} from the "
            "kernels' system's"
        )
        # Jacobi on the free particles, each body's block exact, the coarse correction, and the rows' Schur diagonal
        # (Jacobi) with the bodies coupled exactly
        B_inv = np.zeros((nb, nb))
        for i in range(0, nb, 6):
            B_inv[i : i + 6, i : i + 6] = np.linalg.inv(H2[nf + i : nf + i + 6, nf + i : nf + i + 6])
        d_inv = inverse_diagonal(np.diag(H2)[:nf])
        local = np.zeros((nz, nz))
        local[:nf, :nf], local[nf:, nf:] = np.diag(d_inv), B_inv
        Jf, Jbr = J2[:, :nf], J2[:, nf:]
        rows_inv = np.linalg.inv(C2 + np.diag((Jf**2) @ d_inv) + Jbr @ B_inv @ Jbr.T)
        variants = {}
        for name, R in (("coarse on free particles", coarse_free), ("coarse + bodies", coarse_bodies)):
            variants[f"{tag}, {name}"] = block_diagonal(two_level(H2, R, local), rows_inv)
        schur = C2 + J2 @ np.linalg.solve(H2, J2.T)
        variants[f"{tag}, exact rows"] = block_diagonal(
            variants[f"{tag}, coarse + bodies"][:nz, :nz], np.linalg.inv(schur)
        )
        for name, M in variants.items():
            print_minres(name, Kr, br, M, counts, velocities, exact[:nv])
        if spectrum:
            reduced_family = np.concatenate(
                [
                    np.full(nf, "particle", dtype=object),
                    np.full(nb, "body", dtype=object),
                    row_family[~actuation] if eliminated else row_family,
                ]
            )
            print_spectrum(Kr, variants[f"{tag}, coarse + bodies"], br, reduced_family)


def body_row_jacobians(step: sp.PrimalStep, index: np.ndarray, nv: int, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows' compliance block C and the bodies' row Jacobians in unit-mass coordinates, J̃ (rows × 6·bodies,
    the solve's rows as ``index`` orders them), such that the rows' block S = J̃ J̃ᵀ + C: products of the kernels'
    saddle operator on the rows with every body's inverse mass and inertia off (C), then with one body's on at a time
    (J_b M_b⁻¹ J_bᵀ of that body, rank ≤ 6, whose eigenvectors scaled by √eigenvalue give its columns of J̃); ``S``
    (the captured rows' block) says which rows touch a body at all."""
    m = step.s.model
    bd = m.body_data
    n, R = m.particle_count, m.row_count
    rows = index[nv:] - nv
    xv, yv = (wp.zeros(n, dtype=wp.vec3, device=m.device) for _ in range(2))
    xl, yl = (wp.zeros(R, dtype=float, device=m.device) for _ in range(2))

    def rows_block(columns: np.ndarray) -> np.ndarray:
        out = np.zeros((rows.size, columns.size))
        for k, j in enumerate(columns):
            e = np.zeros(R, dtype=np.float32)
            e[rows[j]] = 1.0
            xl.assign(e)
            step.matvec(xv, xl, yv, yl)  # x_v = 0: y_l = −S x_l
            out[:, k] = -yl.numpy()[rows]
        return out

    inv_mass, inv_inertia = bd.body_inv_mass.numpy().copy(), bd.body_inv_inertia.numpy().copy()
    try:
        bd.body_inv_mass.zero_()
        bd.body_inv_inertia.zero_()
        C = rows_block(np.arange(rows.size))
        on_bodies = np.nonzero(np.abs(S - C).max(axis=0) > 0.0)[0]
        columns = []
        for i in range(inv_mass.size):
            one_mass, one_inertia = np.zeros_like(inv_mass), np.zeros_like(inv_inertia)
            one_mass[i], one_inertia[i] = inv_mass[i], inv_inertia[i]
            bd.body_inv_mass.assign(one_mass)
            bd.body_inv_inertia.assign(one_inertia)
            Si = rows_block(on_bodies)[on_bodies] - C[np.ix_(on_bodies, on_bodies)]
            touched = on_bodies[np.abs(Si).max(axis=0) > 0.0]
            Si = Si[np.ix_(np.isin(on_bodies, touched), np.isin(on_bodies, touched))]
            w, V = np.linalg.eigh(0.5 * (Si + Si.T))
            keep = np.argsort(w)[-6:]
            Ji = np.zeros((rows.size, 6))
            Ji[touched] = V[:, keep] * np.sqrt(np.maximum(w[keep], 0.0))
            columns.append(Ji)
    finally:
        bd.body_inv_mass.assign(inv_mass)
        bd.body_inv_inertia.assign(inv_inertia)
    return 0.5 * (C + C.T), np.hstack(columns)


if __name__ == "__main__":
    main()
