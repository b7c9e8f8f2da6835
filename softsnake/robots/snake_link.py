"""Geometry of one pneumatic soft link (paper Sec. V, Fig. 3): a radially symmetric tetrahedral mesh of a solid
cylinder and the particle pairs of its three constraint families.

The link axis is local x (0 … length); the cross-section is the y–z plane. Each of the ``sections`` cross-sections
is a disc of particles: the centre, an inner ring of ``inner_ring`` particles at radius/2 and an outer ring of
``2·inner_ring`` particles at the full radius, with ring particle j at angle θ_j from +z (y = r sin θ, z = r cos θ).
The disc triangulation is mirror symmetric about the centre plane y = 0, and consecutive discs are joined by prisms
split into three tets each. Tets of the y < 0 half are the mirror images of the y > 0 half, so bending left and
right are exact mirror images (the left/right curvature symmetry of Fig. 5 holds by construction).

The two chambers are not meshed as cavities (as in the paper); they are index sets:
* chamber 0 lies on the −y side (the robot's right when it heads +x) and bends the link toward +y when pressurized
  (positive curvature); chamber 1 is its mirror image.
* Constraint families (Fig. 3): the inextensible layer (stiff axial constraints between centre-plane particles),
  the chamber perimeter (stiff constraints between consecutive outer-ring particles of each chamber side, one ring per
  cross-section: the fibre reinforcement), and the actuation constraints (axial, between consecutive cross-sections
  along the chamber lines), whose rest length is scaled by ε(p) = 1 + p/Y (Eq. 4) for the pressurized chamber; the
  vented chamber's are switched off (``kernels/actuation.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class LinkMesh:
    """Rest geometry and constraint index sets of one soft link (indices local to the link)."""

    vertices: np.ndarray  # (n, 3) [m]
    tets: np.ndarray  # (m, 4), positive volume
    section: np.ndarray  # (n,) cross-section index of each vertex (0 … sections−1)
    layer_pairs: np.ndarray  # (k, 2) inextensible centre-plane constraints
    perimeter_pairs: np.ndarray  # (k, 2) chamber-perimeter (fibre) constraints
    actuation_pairs: np.ndarray  # (k, 2) actuation constraints along the chamber lines
    actuation_chamber: np.ndarray  # (k,) 0 or 1: the chamber of each actuation constraint
    chamber_line_offset: float  # mean |y| of the actuation lines [m] (moment arm of the chamber force)

    @property
    def per_section(self) -> int:
        return len(self.vertices) // (int(self.section.max()) + 1)

    def hard_pairs(self, keep_redundant: bool = False) -> np.ndarray:
        """The link's hard (zero-compliance) rows, the layer's, then the perimeter's, without the redundant ones: a
        carriage (or a clamp) holds each end section rigid, and a redundant row would add a null space to the
        multiplier system, where its multiplier carries a self-stress that the equilibrium does not determine.

        - The pairs inside the first and the last cross-section: the rigid end already holds their distances.
        - The last segment of the three inner centre-plane fibres (the centre and the inner ring's two points on the
          plane): each of the five fibres is a chain of rows from one rigid end section to the other, and to first
          order the five chains constrain the ends' relative motion by two conditions only (stretch and in-plane
          rotation), so three of their rows are redundant. The two outer fibres keep the layer inextensible.

        ``keep_redundant=True`` gives every row (the model of recordings made before these were left out)."""
        hard = np.concatenate([self.layer_pairs, self.perimeter_pairs])
        if keep_redundant:
            return hard
        s = self.section
        last = s.max()
        inside = (s[hard[:, 0]] == s[hard[:, 1]]) & np.isin(s[hard[:, 0]], (0, last))
        radius = np.hypot(self.vertices[:, 1], self.vertices[:, 2])
        layer = np.zeros(len(hard), bool)
        layer[: len(self.layer_pairs)] = True
        inner_end = layer & (s[hard[:, 1]] == last) & (radius[hard[:, 0]] < 0.75 * radius.max())
        return hard[~(inside | inner_end)]


def _disc(inner_ring: int, radius: float):
    """Particles (y, z) of one cross-section and its mirror-symmetric triangulation (right half: θ ∈ [0, π])."""
    n1, n2 = inner_ring, 2 * inner_ring
    th1 = 2 * np.pi * np.arange(n1) / n1
    th2 = 2 * np.pi * np.arange(n2) / n2
    yz = np.concatenate(
        [[[0.0, 0.0]], 0.5 * radius * np.c_[np.sin(th1), np.cos(th1)], radius * np.c_[np.sin(th2), np.cos(th2)]]
    )
    centre, r1, r2 = 0, lambda j: 1 + j % n1, lambda j: 1 + n1 + j % n2
    right = []
    for j in range(n1 // 2):  # inner-ring edge (j, j+1) of the y ≥ 0 half and the two outer edges beside it
        right.append((centre, r1(j), r1(j + 1)))
        right += [
            (r1(j), r2(2 * j), r2(2 * j + 1)),
            (r1(j), r2(2 * j + 1), r1(j + 1)),
            (r1(j + 1), r2(2 * j + 1), r2(2 * j + 2)),
        ]
    mirror = np.concatenate([[0], 1 + (-np.arange(n1)) % n1, 1 + n1 + (-np.arange(n2)) % n2])
    return yz, np.asarray(right), mirror


def _prism_tets(tri_bottom: np.ndarray, offset: int) -> list[tuple[int, int, int, int]]:
    """Split the prism over triangle (a, b, c) into three tets with every side quad cut by the diagonal from its
    lowest-index vertex, which makes neighbouring prisms conform."""
    a, b, c = sorted(int(v) for v in tri_bottom)
    A, B, C = a + offset, b + offset, c + offset
    return [(a, b, c, C), (a, b, B, C), (a, A, B, C)]


def link_mesh(length: float, radius: float, sections: int = 13, inner_ring: int = 8) -> LinkMesh:
    """Build the soft-link mesh: ``sections`` cross-sections over ``length`` [m], disc ``radius`` [m], inner ring of
    ``inner_ring`` particles (even, ≥ 4; outer ring 2×). Default (13, 8): 325 particles, 1152 tets per link."""
    if sections < 2:
        raise ValueError(f"a link needs at least 2 cross-sections, got {sections}")
    if inner_ring < 4 or inner_ring % 4:
        raise ValueError(
            "inner_ring must be a multiple of 4 (≥ 4) so the centre plane and chamber axes hold particles, got "
            f"{inner_ring}"
        )
    if not (length > 0 and radius > 0):
        raise ValueError(f"link length and radius must be > 0, got {length}, {radius}")
    yz, right, mirror = _disc(inner_ring, radius)
    k = len(yz)
    xs = np.linspace(0.0, length, sections)
    vertices = np.concatenate([np.c_[np.full(k, x), yz] for x in xs])
    section = np.repeat(np.arange(sections), k)
    tets = []
    for s in range(sections - 1):
        for tri in right:
            for t in _prism_tets(tri + s * k, k):
                tets.append(t)
                tets.append(tuple(int(mirror[v % k] + (v // k) * k) for v in t))  # mirror image in y
    tets = np.asarray(tets)
    x = vertices[tets]
    vol = np.einsum("ij,ij->i", np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), x[:, 3] - x[:, 0])
    tets[vol < 0] = tets[vol < 0][:, [1, 0, 2, 3]]

    n1 = inner_ring
    plane = [0, 1, 1 + n1 // 2, 1 + n1, 1 + n1 + n1]  # centre, inner top/bottom, outer top/bottom (y = 0)
    # chamber 0 (−y side): the inner-ring particles within 45° of its axis θ = 3π/2 and the outer-ring particle on it
    off_axis = np.abs(2 * np.pi * np.arange(n1) / n1 - 1.5 * np.pi)
    ch0 = [1 + int(j) for j in np.nonzero(off_axis <= np.pi / 4 + 1e-9)[0]] + [1 + n1 + 3 * n1 // 2]
    ch1 = [int(mirror[v]) for v in ch0]
    outer0 = [1 + n1 + j % (2 * n1) for j in range(n1, 2 * n1 + 1)]  # outer ring, θ from π to 2π (the −y half)
    outer1 = [int(mirror[v]) for v in outer0]

    def axial(local):
        return np.array([(s * k + v, (s + 1) * k + v) for s in range(sections - 1) for v in local])

    def ring(local):
        return np.array([(s * k + a, s * k + b) for s in range(sections) for a, b in zip(local[:-1], local[1:])])

    act0, act1 = axial(ch0), axial(ch1)
    return LinkMesh(
        vertices=vertices,
        tets=tets,
        section=section,
        layer_pairs=axial(plane),
        perimeter_pairs=np.concatenate([ring(outer0), ring(outer1)]),
        actuation_pairs=np.concatenate([act0, act1]),
        actuation_chamber=np.r_[np.zeros(len(act0), int), np.ones(len(act1), int)],
        chamber_line_offset=float(np.mean(np.abs(yz[ch0, 0]))),
    )
