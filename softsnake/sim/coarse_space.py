"""Host-side set-up of the primal FEM preconditioner (docs/solver.md): per-particle diagonal of the elastic system
matrix A = M + h(h+β)·K and a two-level coarse space per soft body.

With the FEM rows eliminated, each Newton step of the particles solves with A = M + Σ_t J_tᵀ C_t⁻¹ J_t, the implicit
Euler mass-plus-stiffness matrix (C_t = E_t/(h(h+β)) the tet's compliance block). Jacobi alone moves information about
one
element per iteration, so a long stiff body needs a coarse correction: every connected set of tets (a "soft body") gets
a trilinear grid over its rest bounding box, with prolongation P (8 weights per particle) and the Galerkin coarse
matrix Pᵀ A₀ P at rest. A body that rotates as a whole has the same coarse matrix rotated (P acts on nodes, not on
components), so the solver only fits one rotation per body and step and reuses the inverse computed here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class CoarseSpace:
    """Arrays for one world (all worlds share them).

    diag: (n,) trace(A_pp)/3 per particle [kg] (0 for kinematic particles); eff_inv_mass: its inverse (0: kinematic).
    two_level_inv_mass: (n,) trace/3 of the particle's block of the two-level preconditioner, 1/diag + (P A_c⁻¹ Pᵀ)_pp
    [1/kg]: the particle's compliance with the collective (coarse) motion of its body included (0: kinematic).
    body_of_particle: (n,) soft-body index or −1; body_particle_start/body_particles: CSR of the particles of each body;
    rest: (n, 3) rest positions [m]; node_index (n, 8) global coarse node (−1: none), node_weight (n, 8);
    node_start/node_particles/node_weights: CSR from coarse node to (particle, weight); node_body (nodes,);
    node_first (bodies + 1,) first node of each body, whose block is padded to a multiple of 4 nodes with empty ones
    (no particles); inverse_start (bodies + 1,) offsets of each body's dense (3·nodes)² block, row-major, in
    ``inverse``."""

    diag: np.ndarray
    eff_inv_mass: np.ndarray
    two_level_inv_mass: np.ndarray
    body_of_particle: np.ndarray
    body_particle_start: np.ndarray
    body_particles: np.ndarray
    rest: np.ndarray
    node_index: np.ndarray
    node_weight: np.ndarray
    node_start: np.ndarray
    node_particles: np.ndarray
    node_weights: np.ndarray
    node_body: np.ndarray
    node_first: np.ndarray  # first global node of each body (bodies + 1,)
    inverse_start: np.ndarray
    inverse: np.ndarray

    @property
    def body_count(self) -> int:
        return len(self.body_particle_start) - 1

    @property
    def node_count(self) -> int:
        return len(self.node_body)


def tet_strain_gradients(rest_inverse: np.ndarray) -> np.ndarray:
    """(T, 6, 4, 3): ∂c_r/∂x_a of the corotated strain rows at R = I (kernels/tet.py, tet_row_gradient)."""
    B = np.asarray(rest_inverse, dtype=np.float64)
    b = np.concatenate([-B.sum(axis=1, keepdims=True), B], axis=1)  # (T, 4, 3): b_0 = −(b1+b2+b3), b_k = row k−1
    vi = [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]
    G = np.zeros((len(B), 6, 4, 3))
    for r, (i, j) in enumerate(vi):
        G[:, r, :, i] += 0.5 * b[:, :, j]
        G[:, r, :, j] += 0.5 * b[:, :, i]
    return G


def lame_parameters(youngs, poisson) -> tuple[np.ndarray, np.ndarray]:
    """(λ, μ) [Pa] per tet from Young's modulus and Poisson's ratio (float64)."""
    Y = np.asarray(youngs, dtype=np.float64)
    nu = np.asarray(poisson, dtype=np.float64)
    return Y * nu / ((1 + nu) * (1 - 2 * nu)), Y / (2 * (1 + nu))


def tet_stiffness_blocks(youngs, poisson, volume) -> np.ndarray:
    """(T, 6, 6) inverse compliance V·D of each tet (tensor-shear Voigt rows, kernels/tet.py) [N m]."""
    lam, mu = lame_parameters(youngs, poisson)
    D = np.zeros((len(lam), 6, 6))
    D[:, :3, :3] = lam[:, None, None]
    for k in range(3):
        D[:, k, k] += 2 * mu
        D[:, 3 + k, 3 + k] = 4 * mu
    return D * np.asarray(volume, dtype=np.float64)[:, None, None]


def _by_first_appearance(labels: np.ndarray) -> np.ndarray:
    """Renumber labels 0, 1, … in the order in which they first appear."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse]


def connected_labels(count: int, pairs) -> np.ndarray:
    """Connected components of ``count`` items joined by index pairs, numbered by first appearance in item order."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    graph = sp.coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(count, count))
    return _by_first_appearance(connected_components(graph, directed=False)[1])


def _components(n: int, tets: np.ndarray) -> np.ndarray:
    """Connected soft bodies: label per particle (−1 for particles in no tet)."""
    in_tet = np.zeros(n, dtype=bool)
    in_tet[tets.ravel()] = True
    label = -np.ones(n, dtype=np.int64)
    if in_tet.any():
        raw = connected_labels(n, np.concatenate([tets[:, [0, a]] for a in (1, 2, 3)]))
        label[in_tet] = _by_first_appearance(raw[in_tet])
    return label


def build_coarse_space(
    rest: np.ndarray,
    mass: np.ndarray,
    inv_mass: np.ndarray,
    tets: np.ndarray,
    rest_inverse: np.ndarray,
    volume: np.ndarray,
    youngs: np.ndarray,
    poisson: np.ndarray,
    damping: np.ndarray,
    h: float,
    cells_long_axis: int = 4,
    long_axis_cell_edges: float = 2.0,
) -> CoarseSpace:
    """Diagonal and coarse space of A = M + h(h+β)K₀ for one world (rest rotation), see the module docstring.

    cells_long_axis: coarse cells along each body's longest rest extent (others in proportion, at least 1);
    0 disables the coarse level (Jacobi only); long_axis_cell_edges: the least length of a coarse cell along that axis,
    in
    mean element edges (the other axes keep two)."""
    import scipy.sparse as sp

    rest = np.asarray(rest, dtype=np.float64)
    n = len(rest)
    tets = np.asarray(tets, dtype=np.int64).reshape(-1, 4)
    free = np.asarray(inv_mass) > 0
    G = tet_stiffness_blocks(youngs, poisson, volume)
    grads = tet_strain_gradients(rest_inverse)
    factor = h * (h + np.asarray(damping, dtype=np.float64))  # C_t⁻¹ = h(h+β)·V·D
    # element stiffness h(h+β)·J_tᵀ(V D)J_t as (T, 12, 12)
    Jt = grads.reshape(len(tets), 6, 12)
    Ke = np.einsum("tri,trs,tsj->tij", Jt, G, Jt) * factor[:, None, None]
    dofs = (3 * tets[:, :, None] + np.arange(3)[None, None, :]).reshape(len(tets), 12)
    rows = np.repeat(dofs, 12, axis=1).ravel()
    cols = np.tile(dofs, (1, 12)).ravel()
    K = sp.csr_matrix((Ke.ravel(), (rows, cols)), shape=(3 * n, 3 * n))
    A = (K + sp.diags(np.repeat(np.asarray(mass, dtype=np.float64), 3))).tocsr()
    d3 = A.diagonal().reshape(n, 3)
    diag = np.where(free, d3.mean(axis=1), 0.0)
    eff = np.where(free & (diag > 0), 1.0 / np.where(diag > 0, diag, 1.0), 0.0)

    label = _components(n, tets)
    bodies = int(label.max()) + 1 if n else 0
    order = np.argsort(label, kind="stable")
    order = order[label[order] >= 0]
    body_particle_start = np.zeros(bodies + 1, dtype=np.int64)
    np.add.at(body_particle_start, label[order] + 1, 1)
    body_particle_start = np.cumsum(body_particle_start)

    e = rest[tets[:, [1, 2, 3, 2, 3, 3]]] - rest[tets[:, [0, 0, 0, 1, 1, 2]]]
    edge = float(np.linalg.norm(e, axis=-1).mean()) if len(tets) else 1.0
    node_index = -np.ones((n, 8), dtype=np.int64)
    node_weight = np.zeros((n, 8))
    node_body, node_first, inverse_start, inverse = [], [0], [0], []
    Pcols, Prows, Pvals = [], [], []
    for c in range(bodies if cells_long_axis > 0 else 0):
        members = order[body_particle_start[c] : body_particle_start[c + 1]]
        lo = rest[members].min(axis=0)
        ext = rest[members].max(axis=0) - lo
        ext = np.maximum(ext, 1e-12)
        # a coarse cell spans at least two mean element edges along an axis (a finer grid than the mesh is rank
        # deficient), or long_axis_cell_edges of them along the longest axis
        span = np.where(ext == ext.max(), long_axis_cell_edges, 2.0) * edge  # tied longest axes alike
        cells = np.maximum(1, np.minimum(np.round(ext / ext.max() * cells_long_axis), np.floor(ext / span))).astype(int)
        gdim = cells + 1
        u = (rest[members] - lo) / (ext / cells)
        i0 = np.clip(np.floor(u).astype(int), 0, cells - 1)
        f = u - i0
        first = node_first[-1]
        used = {}
        for k, p in enumerate(members):
            if not free[p]:
                continue
            for corner in range(8):
                o = np.array([(corner >> 0) & 1, (corner >> 1) & 1, (corner >> 2) & 1])
                wgt = float(np.prod(np.where(o == 1, f[k], 1 - f[k])))
                g = i0[k] + o
                local = int((g[0] * gdim[1] + g[1]) * gdim[2] + g[2])
                if wgt <= 0.0:
                    continue
                node = used.setdefault(local, first + len(used))
                node_index[p, corner] = node
                node_weight[p, corner] = wgt
                Prows.append(p)
                Pcols.append(node)
                Pvals.append(wgt)
        # each body's node block is padded with empty nodes (no particles, zero rows of the inverse) to a multiple of
        # 4, so its 3·nodes dofs are whole vec4s in coarse_solve (kernels/primal.py)
        count = len(used) + (-len(used)) % 4
        node_body.extend([c] * count)
        node_first.append(first + count)
    nodes = node_first[-1]
    if nodes:
        P1 = sp.csr_matrix((Pvals, (Prows, Pcols)), shape=(n, nodes))
        P = sp.kron(P1, sp.identity(3), format="csr")  # dof 3p+k ← node dof 3j+k
        mask = sp.diags(np.repeat(free.astype(float), 3))
        Ac = (P.T @ mask @ A @ mask @ P).toarray()
        for c in range(len(node_first) - 1):
            s, e = 3 * node_first[c], 3 * node_first[c + 1]
            block = Ac[s:e, s:e]
            # pseudo-inverse: a node carried only by kinematic particles has an empty row
            lam, vec = np.linalg.eigh(0.5 * (block + block.T))
            keep = lam > 1e-9 * max(lam.max(), 1e-300)
            inv = (vec[:, keep] / lam[keep]) @ vec[:, keep].T
            inverse.append(inv.ravel())
            inverse_start.append(inverse_start[-1] + inv.size)
        # (P A_c⁻¹ Pᵀ)_pp per particle: Σ_jl w_j w_l tr(A_c⁻¹[j, l])/3 over its (≤ 8) coarse nodes
        coarse_part = np.zeros(n)
        for c in range(len(node_first) - 1):
            k = node_first[c + 1] - node_first[c]
            tr = inverse[c].reshape(k, 3, k, 3).trace(axis1=1, axis2=3) / 3.0  # (k, k), body-local nodes
            members = order[body_particle_start[c] : body_particle_start[c + 1]]
            local = np.maximum(node_index[members] - node_first[c], 0)
            wgt = np.where(node_index[members] >= 0, node_weight[members], 0.0)
            coarse_part[members] = np.einsum("pj,pk,pjk->p", wgt, wgt, tr[local[:, :, None], local[:, None, :]])
        two_level = np.where(eff > 0, eff + coarse_part, 0.0)
        P1c = P1.tocsc()
        node_start = P1c.indptr.astype(np.int64)
        node_particles = P1c.indices.astype(np.int64)
        node_weights = P1c.data.astype(np.float64)
    else:
        node_start = np.zeros(1, dtype=np.int64)
        node_particles = np.zeros(0, dtype=np.int64)
        node_weights = np.zeros(0)
        two_level = eff.copy()
    if not inverse:
        node_first = [0] * (bodies + 1) if cells_long_axis <= 0 else node_first
        inverse_start = [0] * (bodies + 1)
    return CoarseSpace(
        diag=diag,
        eff_inv_mass=eff,
        two_level_inv_mass=two_level,
        body_of_particle=label,
        body_particle_start=body_particle_start,
        body_particles=order,
        rest=rest,
        node_index=node_index,
        node_weight=node_weight,
        node_start=node_start,
        node_particles=node_particles,
        node_weights=node_weights,
        node_body=np.asarray(node_body, dtype=np.int64),
        node_first=np.asarray(node_first, dtype=np.int64),
        inverse_start=np.asarray(inverse_start, dtype=np.int64),
        inverse=np.concatenate(inverse) if inverse else np.zeros(0),
    )
