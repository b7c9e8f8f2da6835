"""Geometric vine-robot simulator on visibility graphs and Monte Carlo mapping (Fuentes et al. 2025)."""
