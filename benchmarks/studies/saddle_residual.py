"""How much of the right-hand side MINRES leaves after k iterations on the full snake in the gait (docs/solver.md,
"Preconditioner").

Runs the default gait to ``--seconds`` (h = 1/120 s, 4 × 20), then, in the first Newton iteration of the next step,
assembles the saddle matrix K and the preconditioner P⁻¹ column by column from the kernels (one product per unknown,
~7,500 for the snake) and runs MINRES in NumPy/SciPy with them: the relative residual ‖Kx − b‖/‖b‖ and the velocities'
error against the exact solution of that system after each iteration count, and what the kernels' own float32 solve
left at the budget beside float64 MINRES with the same matrix and preconditioner (round-off or conditioning).

    python -P benchmarks/studies/saddle_residual.py [--seconds 1.0] [--iterations 5,10,20,40,80]
    python -P benchmarks/studies/saddle_residual.py --coarse --seconds 10 --newton-iteration 3 --row-study
    python -P benchmarks/studies/saddle_residual.py --newton-iteration 2 --row-study --exact --iterations 10,20,40,80

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

``--row-scale 3,10,30`` adds the kernels' preconditioner with its rows' block scaled by those factors (a zero-cost
change that lowers the residual but biases the gait, docs/snake.md).
"""

import argparse

import numpy as np
import scipy.sparse.linalg as sla

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
    if a.spectrum:
        print_spectrum(K, P, b, unknown_families(sim, captured["index"], nv))
    exact = np.linalg.solve(K, b)
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
        res, err = [], []
        for k in counts:
            x, _ = sla.minres(K, b, M=M, maxiter=k, rtol=1e-30, check=False)
            res.append(residual(K, x, b))
            err.append(np.linalg.norm(x[:nv] - exact[:nv]) / np.linalg.norm(exact[:nv]))
        print(f"{name:<36} " + " / ".join(f"{r:.2e}" for r in res) + " | " + " / ".join(f"{e:.2e}" for e in err))


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
    d_inv = np.repeat(np.where(diag_v > 0, 1.0 / np.where(diag_v > 0, diag_v, 1.0), 0.0), 3)
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
    kernels_rows = kernels_inverse.copy()
    kernels_rows[blocks] = (S + np.diag(np.diag(JDJ)) + JQJ)[blocks]
    per_carriage = kernels_inverse.copy()
    same = carriage[:, None] == carriage[None, :]
    per_carriage[blocks] = (S + np.diag(np.diag(JDJ)) + JQJ * same)[blocks]
    on_kernels = kernels_inverse + JQJ * np.outer(attached, attached) * same  # the coarse diagonal in twice
    coupling = np.linalg.eigvalsh(JQJ[blocks])
    # numerical rank: the dense capture is float32, so its round-off leaves eigenvalues ~1e-8 of the largest
    rank = int((coupling > 1.0e-6 * coupling.max()).sum()) if attached.any() else 0
    print(f"the attachment rows' coarse coupling J_p Q J_pᵀ: {int(attached.sum())} rows, rank {rank}")

    return {
        "rows: coarse coupling": with_rows(floored_inverse(S + np.diag(np.diag(JDJ)) + JQJ, floor)),
        "rows: kernels', attachments coarse": with_rows(floored_inverse(kernels_rows, floor)),
        "… per carriage": with_rows(floored_inverse(per_carriage, floor)),
        "… per carriage, on the kernels' D": with_rows(floored_inverse(on_kernels, floor)),
        "rows: shared-particle coupling": with_rows(floored_inverse(S + JDJ, floor)),
        "rows: both": with_rows(floored_inverse(S + JDJ + JQJ, floor)),
        "rows: both, shared within sections": with_rows(floored_inverse(T, floor)),
        "rows: both, coarse = links' rigid": with_rows(floored_inverse(S + JDJ + Jp @ Q_rigid @ Jp.T, floor)),
        "rows: both, sections, per link": with_rows(per_link),
    }


if __name__ == "__main__":
    main()
