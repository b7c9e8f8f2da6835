"""The row-family table: the one description of how a world's constraint rows are laid out.

Every constraint element of a world contributes a fixed number of rows (scalar equations with one multiplier each
[N·s]); the families follow each other in the order of :data:`ROW_FAMILIES`, each a contiguous block of rows and of
element numbers. The table gives every family's element count, rows per element, first row and first element, and
``Model.rows`` carries it; the kernels read the same offsets from ``ModelData.layout`` (kernels/data.py,
``RowLayout``), and the read-backs (``Solver.joint_impulses`` …) and diagnostics slice the multipliers with it. Element
numbers are what the incidence lists store (``code = 4·element + role``): the particle families first (distance, tet,
contact: ``ModelData.element_count``), then the families that act on rigid bodies.

Adding a family is one entry here plus its row functions (docs/solver.md, "Adding a constraint family").
"""

from __future__ import annotations

from dataclasses import dataclass

from softsnake.kernels.row_families import FAMILIES

#: (name, rows per element, kind) in row order, from the kernels' table (kernels/row_families.py). kind: "bilateral"
#: rows keep their multiplier from step to step (and are scaled by the warm start), "contact" rows are re-listed every
#: step (normal FB row + two friction rows), "elastic" rows are the tets' strain rows, eliminated by the primal
#: formulation (docs/solver.md). The families: distance (and actuation) constraints, tets, particle–static-shape
#: contacts (the step's compact list), particle–body attachments, joints, rigid-body feature–shape contacts,
#: particle–body-shape contacts.
ROW_FAMILIES = tuple((f.name, f.rows_per_element, f.kind) for f in FAMILIES)

#: index of each family in ROW_FAMILIES (the kernels' constants in kernels/data.py follow the same order)
FAMILY_INDEX = {name: k for k, (name, _, _) in enumerate(ROW_FAMILIES)}


@dataclass(frozen=True)
class RowFamily:
    """One family of a world's rows: ``elements`` elements of ``rows_per_element`` rows, rows [offset, end) and
    element numbers [element_offset, element_offset + elements)."""

    name: str
    rows_per_element: int
    kind: str
    elements: int
    offset: int
    element_offset: int

    @property
    def rows(self) -> int:
        return self.elements * self.rows_per_element

    @property
    def end(self) -> int:
        return self.offset + self.rows


class RowTable:
    """The families of one model, in row order (``table["joint"]``, iteration, ``row_count``)."""

    def __init__(self, elements: dict[str, int]):
        unknown = set(elements) - set(FAMILY_INDEX)
        if unknown:
            raise ValueError(f"unknown row families {sorted(unknown)}")
        families, row, element = [], 0, 0
        for name, per, kind in ROW_FAMILIES:
            n = int(elements.get(name, 0))
            families.append(RowFamily(name, per, kind, n, row, element))
            row += n * per
            element += n
        self.families = tuple(families)
        self.row_count = row
        self.element_count = element

    def __getitem__(self, name: str) -> RowFamily:
        return self.families[FAMILY_INDEX[name]]

    def __iter__(self):
        return iter(self.families)

    def rows_of_kind(self, kind: str) -> list[tuple[int, int]]:
        """[(first, end)] row ranges of the families of one kind."""
        return [(f.offset, f.end) for f in self.families if f.kind == kind and f.rows > 0]

    def slice(self, lam, name: str):
        """The multipliers of family ``name`` from per-world rows ``lam`` (worlds, rows), as (worlds, elements, rows
        per element)."""
        f = self[name]
        return lam[:, f.offset : f.end].reshape(lam.shape[0], f.elements, f.rows_per_element)

    def __repr__(self) -> str:
        return (
            "RowTable("
            + ", ".join(f"{f.name}: {f.elements}×{f.rows_per_element} @ {f.offset}" for f in self.families)
            + ")"
        )
