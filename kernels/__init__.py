"""Warp kernels and ``@wp.func`` helpers of the softsnake engine (installed as ``softsnake.kernels``).

The stages of a step, one kernel each (one thread block per world, ``block``): ``step_common`` (predict, collide,
linearise, finalise), ``step_primal`` and ``step_body_blocks`` (the primal formulation), ``step_dual`` (the dual one).
They walk the row families of ``row_families`` and ``world_rows``. The physics, one module per concern: ``tet``
(corotational strain rows), ``stiffness`` (the elastic block matrix), ``contact`` (shape distance,
Fischer-Burmeister), ``friction``, ``contact_list``, ``schur`` (particle rows and their products), ``rigid`` (bodies,
attachments, joints), ``rigid_contact``, ``body_precond`` (the rows' rigid-body preconditioner), ``primal`` (momentum
residual, coarse space), ``minres`` and ``saddle`` (the saddle-point system's product, preconditioner and MINRES solve
of one world), ``integrate``; ``actuation`` and ``hinge_torque`` for the robots' inputs.
"""
