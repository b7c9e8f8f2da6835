"""Warp kernels and ``@wp.func`` helpers of the softsnake engine (installed as ``softsnake.kernels``).

One module per concern: ``tet`` (corotational strain rows), ``distance``, ``contact`` (shape distance, Fischer-Burmeister),
``friction``, ``schur`` (fused row assembly and matrix-free Schur products), ``pcr`` (Jacobi-preconditioned conjugate
residual), ``integrate`` (prediction, impulse application, finalisation).
"""
