"""The paper's snake experiments (Gasoto et al. 2019, Sec. VI): quasi-static curvature vs pressure (Fig. 5), chamber
step responses (Fig. 6), open-loop gait trajectories (Fig. 7) and the multi-snake benchmark (Table II)."""
