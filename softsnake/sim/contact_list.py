"""The collision stage: the compact particle–shape contact list (kernels/contact_list.py, kernels/step_common.py
``collide``): buffers, the per-step listing and the capacity check.

Every world has ``Model.contact_count`` contact slots (the capacity, ``ModelBuilder.finalize(contact_capacity=)``).
Each step lists the pairs (particle, static shape) that can touch during it, so the contact rows, and every MINRES
sweep over them, grow with the contacts rather than with particles × shapes.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from softsnake.kernels import contact_list as kcl
from softsnake.kernels import step_common as kstep

#: with at least this many bounded static shapes the candidates come from a BVH over the shapes instead of a scan of
#: every shape (kernels/contact_list.py; the same list either way)
BVH_MIN_SHAPES = 16


class ContactCapacityExceeded(RuntimeError):
    """A step found more particle–shape contact candidates than a world has slots; the state was restored to the start
    of that step."""

    def __init__(self, needed: dict[int, int], capacity: int):
        self.needed = dict(needed)
        self.capacity = capacity
        worst = max(self.needed.values())
        super().__init__(
            f"contact list full: world(s) {sorted(self.needed)} needed up to {worst} particle–shape contact slots, "
            f"the model "
            f"has {capacity} per world; the state was restored to the start of the step. Build the model with "
            f"ModelBuilder.finalize(contact_capacity={worst}) or more."
        )

    def __reduce__(self):
        return (type(self), (self.needed, self.capacity))


class ContactList:
    """The solver's contact list: per-slot pair (in the solver's Jacobian struct), per-particle runs, the previous list
    for carrying multipliers, and the per-world overflow count."""

    def __init__(self, solver):
        self.s = solver
        m, dev, W = solver.model, solver.model.device, solver.model.worlds
        K, n = m.contact_count, m.particle_count
        jac = solver.data.jac  # the solver's struct: its fields are set through it (a nested Warp struct is a copy)
        jac.contact_particle = wp.full(W * K, -1, dtype=int, device=dev)
        jac.contact_shape = wp.full(W * K, -1, dtype=int, device=dev)
        jac.contact_first = wp.zeros(W * n, dtype=int, device=dev)
        jac.contact_num = wp.zeros(W * n, dtype=int, device=dev)
        c = kcl.ContactListData()
        c.old_shape = wp.zeros(W * K, dtype=int, device=dev)
        c.old_first = wp.zeros(W * n, dtype=int, device=dev)
        c.old_num = wp.zeros(W * n, dtype=int, device=dev)
        c.old_lam_n = wp.zeros(W * K, dtype=float, device=dev)
        c.lam_prev = wp.zeros(W * m.row_count, dtype=float, device=dev)
        c.count = wp.zeros(W * n, dtype=int, device=dev)
        c.offset = wp.zeros(W * n, dtype=int, device=dev)
        c.overflow = wp.zeros(W, dtype=int, device=dev)
        c.bvh = self._shape_bvh()
        self.data = c
        # with a slot for every pair the list cannot overflow, and the check's read-back is skipped
        self.bounded = K < n * m.shape_count

    def _shape_bvh(self) -> kcl.ShapeBvh:
        """A BVH over the bounding-sphere boxes of the bounded static shapes (enlarged by a relative 1e-4, so that
        every shape the kernels' own box test accepts is among its results), when there are BVH_MIN_SHAPES of them
        and particles that can touch them; otherwise an inactive one (the kernels scan every shape)."""
        m, dev = self.s.model, self.s.model.device
        data, S = m.data, m.shape_count
        i32 = lambda a: wp.array(np.asarray(a, dtype=np.int32), dtype=int, device=dev)  # noqa: E731
        bvh = kcl.ShapeBvh()
        bvh.active, bvh.id = 0, wp.uint64(0)
        bvh.unbounded = bvh.item_shape = i32([])
        self._bvh = None
        if m.contact_count == 0 or m.particle_count == 0 or S < BVH_MIN_SHAPES:
            return bvh
        radii = wp.zeros(S, dtype=float, device=dev)
        wp.launch(kcl.shape_bounds, dim=S, inputs=[data], outputs=[radii], device=dev)  # the kernels' own radii
        bound = radii.numpy().astype(np.float64)
        bounded = np.nonzero(bound >= 0.0)[0].astype(np.int32)
        if len(bounded) < BVH_MIN_SHAPES:
            return bvh
        centre = data.shape_pos.numpy()[:S].astype(np.float64)[bounded]
        reach = (bound[bounded] * (1.0 + 1e-4) + 1e-6)[:, None]
        self._bvh = wp.Bvh(
            wp.array(centre - reach, dtype=wp.vec3, device=dev), wp.array(centre + reach, dtype=wp.vec3, device=dev)
        )
        bvh.active, bvh.id = 1, self._bvh.id
        bvh.unbounded = i32(np.nonzero(bound < 0.0)[0])
        bvh.item_shape = i32(bounded)
        return bvh

    def collide(self) -> None:
        """The collision stage (one launch, after the prediction): this step's particle–shape candidates into the
        slots, carrying the multipliers of pairs that stay, and every contact family's candidates and frames."""
        s = self.s
        m = s.model
        if m.contact_count + m.body_contact_count + m.particle_body_count == 0:
            return
        s.launch(kstep.collide, s.formulation.rows_data, m.body_data, s.data, self.data)

    def overflowing_worlds(self) -> dict[int, int]:
        """{world: candidates found} for the worlds whose last list overflowed (a host read; none when unbounded)."""
        if not self.bounded:
            return {}
        over = self.data.overflow.numpy()
        K = self.s.model.contact_count
        return {int(w): int(over[w]) + K for w in np.nonzero(over)[0]}

    def slots_used(self) -> np.ndarray:
        """Slots per world that the last list filled (a host read): it fills a world's slots from the first on, a run
        per particle in particle order, so the last particle's run ends at the count (the device's reading:
        kernels/data.py, contact_slots_used)."""
        m, jac = self.s.model, self.s.data.jac
        if m.contact_count == 0 or m.particle_count == 0:
            return np.zeros(m.worlds, dtype=int)
        ends = jac.contact_first.numpy() + jac.contact_num.numpy()
        return ends.reshape(m.worlds, m.particle_count)[:, -1].astype(int)

    def carried_arrays(self) -> dict:
        jac = self.s.data.jac
        return dict(
            contact_particle=jac.contact_particle,
            contact_shape=jac.contact_shape,
            contact_first=jac.contact_first,
            contact_num=jac.contact_num,
        )

    def dense_impulses(self) -> np.ndarray:
        """The contact rows' multipliers as (worlds, particles, shapes, 3) [N s] (rows t1, t2, n; zero where no
        slot)."""
        m, s = self.s.model, self.s.data
        W, K = m.worlds, m.contact_count
        out = np.zeros((W, m.particle_count, m.shape_count, 3), dtype=np.float32)
        lam = m.rows.slice(s.lam.numpy().reshape(W, m.row_count), "contact")
        p = s.jac.contact_particle.numpy().reshape(W, K)
        sh = s.jac.contact_shape.numpy().reshape(W, K)
        w, k = np.nonzero(p >= 0)
        out[w, p[w, k], sh[w, k]] = lam[w, k]
        return out
