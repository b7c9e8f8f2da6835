"""Shared Warp types and numeric guards."""

import warp as wp

vec6 = wp.types.vector(length=6, dtype=wp.float32)

# Shape type codes (kept in sync with softsnake.sim.builder.ShapeType).
SHAPE_PLANE = wp.constant(0)
SHAPE_BOX = wp.constant(1)
SHAPE_CYLINDER = wp.constant(2)
SHAPE_SPHERE = wp.constant(3)
SHAPE_CAPSULE = wp.constant(4)
