"""Real video deployments (assets/vine/real_video, Chen et al. 2025): scene set-up, batched rollouts, the published
metric, fitting of the bending models and replay in the video's pixel frame.

Conventions (measured on the data, see docs/vine.md):
- the skeleton points' y axis is opposite to the walls' (image rows): with the points' y negated the robot slides
  along the walls in all four videos (wall crossings of the centreline drop from 43/91/111/0 to 15/2/8/0), so the
  loader's points are used with y negated (``FLIP_POINTS_Y``) and everything is done in the walls' frame;
- there is no time base: consecutive frames are every 3rd video frame; we take 30 fps, i.e. 0.1 s per frame, and one
  engine step per frame (the bending parameters are effective, as in the original, where mass and inertia are fitted);
- pixel-to-metre scale: the tube radius R = 33.5 mm (67 mm LDPE tube, Chen et al. Sec. III-A) over its radius in
  pixels, estimated from the data as the 2nd percentile of the skeleton–wall distance (a robot pressed on a wall has
  its centreline one radius from it) over the fitting videos;
- growth: the measured length (origin → first skeleton point → along the skeleton) grows linearly: least-squares slope
  over the frames; launch heading: direction of the skeleton at one link length from the base, first frame long
  enough; the initial length is frame 0's.
Metric (the published one): per frame, mean over the simulated body centres of the squared distance to the nearest
real centreline point; averaged over the frames [px²].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from softsnake.io.vine_data import VideoDeployment, read_video
from softsnake.robots.vine import VineConfig
from softsnake.robots.vine_sim import VineSim

from .vine_fit import FitProblem, FitResult, cma_es

FLIP_POINTS_Y = True
FRAME_DT = 0.1  # [s] (30 fps, every 3rd frame)
TUBE_RADIUS = 0.0335  # [m]
LINK_RADII = 4.0  # link length in tube radii

#: fitted parameters per bending model: (name, lower, upper) in log10. The wrinkling model is searched through its
#: small-angle stiffness k0 = m_full/(2·θ_c), θ_c = 2·asin(ε_crit) (m_full = 4·k0·asin ε_crit), so that the bounds
#: keep every candidate inside the stability limit of the explicit bending step (tangent stiffness ≤ k0 ≤ 0.3 N m/rad,
#: damping ≤ 0.03 N m s/rad at Δt = 0.1 s, I = 0.01 kg m²; a chain's highest mode needs K·Δt²/I ≲ 1).
#: With n engine steps per frame (Δt = 0.1 s / n) the stiffness bound grows as n² and the damping bound as n.
MODEL_PARAMS = {
    "linear": (("log10_stiffness", -4.0, math.log10(0.3)), ("log10_damping", -5.0, math.log10(0.03))),
    "wrinkling": (
        ("log10_k0", -4.0, math.log10(0.3)),
        ("log10_eps_crit", -2.0, math.log10(0.5)),
        ("log10_damping", -5.0, math.log10(0.03)),
    ),
}


#: the MLP law (Chen Sec. IV-C: 1-10-1 tanh network, τ = −½(f(θ) − f(−θ)) − C θ̇) is searched over log10 C and its
#: 30 weights w1 ∈ [0, 10] 1/rad (the sign of w1 and b1 can be moved into w2), b1 ∈ [−3, 3], w2 ∈ ±0.03·n² N m; b2
#: cancels in the odd part and is 0. The small-angle stiffness Σ w1·w2·sech²(b1) is not bounded by the box:
#: candidates beyond the stability limit diverge and are flagged (infinite loss).
MLP_HIDDEN = 10
FIT_MODELS = tuple(MODEL_PARAMS) + ("mlp",)


def _mlp_spec(substeps: int) -> tuple:
    w2 = 0.03 * substeps**2
    return (
        (("log10_damping", -5.0, math.log10(0.03 * substeps)),)
        + tuple((f"w1_{j}", 0.0, 10.0) for j in range(MLP_HIDDEN))
        + tuple((f"b1_{j}", -3.0, 3.0) for j in range(MLP_HIDDEN))
        + tuple((f"w2_{j}", -w2, w2) for j in range(MLP_HIDDEN))
    )


def model_bounds(law: str, substeps: int = 1) -> tuple[np.ndarray, np.ndarray]:
    if law == "mlp":
        spec = _mlp_spec(substeps)
        return np.array([s[1] for s in spec]), np.array([s[2] for s in spec])
    spec = MODEL_PARAMS[law]
    lo = np.array([s[1] for s in spec])
    hi = np.array([s[2] for s in spec])
    hi[0] += 2 * math.log10(substeps)
    hi[-1] += math.log10(substeps)
    return lo, hi


def video_config(radius_px: float, max_length_px: float, *, link_radii: float = LINK_RADII, **overrides) -> VineConfig:
    """chen-preset vine for a video: tube radius 33.5 mm ↔ ``radius_px``; link length 4R; enough links for
    ``max_length_px``; effective mass 0.05 kg and inertia 0.01 kg m² (explicit bending stays stable at Δt = 0.1 s for
    K ≲ 1 N m/rad); 4 Newton × 20 linear-solver iterations."""
    scale = TUBE_RADIUS / radius_px
    ell = link_radii * TUBE_RADIUS
    links = int(math.ceil(max_length_px * scale / ell)) + 2
    base = dict(
        links=links,
        link_length=ell,
        half_length=ell / 4,
        radius=TUBE_RADIUS,
        mass=0.05,
        inertia=0.01,
        dt=FRAME_DT,
        newton_iterations=4,
        linear_iterations=20,
        warm_start=1.0,
        heading=0.0,
        initial_links=1,
    )
    base.update(overrides)
    return VineConfig.preset_config("chen", **base)


def frames_in_wall_frame(dep: VideoDeployment) -> list:
    s = np.array([1.0, -1.0 if FLIP_POINTS_Y else 1.0])
    return [f * s for f in dep.frames]


def measured_lengths(frames: list) -> np.ndarray:
    """Robot length per frame [px]: origin → first skeleton point, then along the skeleton."""
    out = []
    for f in frames:
        if len(f) == 0:
            out.append(np.nan)
            continue
        out.append(np.linalg.norm(f[0]) + np.sum(np.linalg.norm(np.diff(f, axis=0), axis=1)))
    return np.asarray(out)


def wall_standoffs(frames: list, walls: np.ndarray) -> np.ndarray:
    """Distance of every skeleton point to its nearest wall segment [px]."""
    out = []
    for f in frames:
        if len(f) == 0:
            continue
        d = np.full(len(f), np.inf)
        for a, b in walls:
            ab = b - a
            t = np.clip(((f - a) @ ab) / max(ab @ ab, 1e-12), 0.0, 1.0)
            d = np.minimum(d, np.linalg.norm(f - (a + t[:, None] * ab), axis=1))
        out.append(d)
    return np.concatenate(out) if out else np.zeros(0)


def estimate_radius_px(deployments: list) -> float:
    """Tube radius in pixels: 2nd percentile of the skeleton–wall distances over ``deployments``."""
    d = np.concatenate([wall_standoffs(frames_in_wall_frame(dep), dep.walls) for dep in deployments])
    if len(d) == 0:
        raise ValueError("no skeleton points to estimate the tube radius from")
    return float(np.percentile(d, 2.0))


@dataclass
class VideoScene:
    """One deployment set up for simulation (metres = px · scale)."""

    deployment: VideoDeployment
    frames: list  # per frame (n_t, 2) [px], walls' frame
    radius_px: float
    scale: float  # [m/px]
    heading: float  # [rad]
    growth_px_per_frame: float
    initial_length_px: float
    config: VineConfig
    substeps: int = 1  # engine steps per video frame

    @property
    def name(self) -> str:
        return self.deployment.name

    def make_sim(self, worlds: int, law: str) -> VineSim:
        cfg = self.config
        import dataclasses

        cfg = dataclasses.replace(cfg, bending=law)
        ell = cfg.link_length
        L0 = self.initial_length_px * self.scale
        lengths = np.clip(L0 - ell * np.arange(cfg.links), 0.0, ell)
        walls_m = self.deployment.walls.reshape(-1, 4) * self.scale
        return VineSim(
            cfg,
            walls=walls_m,
            wall_thickness=0.1 * cfg.radius,
            worlds=worlds,
            link_lengths=lengths,
            on_nonfinite="flag",
        )

    def simulate(self, law: str, params: np.ndarray) -> tuple[list, set]:
        """Body centres in pixels per frame for every parameter row: list over frames of (P, M_t, 2); diverged
        worlds."""
        params = np.atleast_2d(params)
        sim = self.make_sim(len(params), law)
        sim.set_bending_params(params)
        out = [self._centres_px(sim)]
        for _ in range(1, len(self.frames)):
            for _ in range(self.substeps):
                sim.step()
            out.append(self._centres_px(sim))
        return out, sim.diverged_worlds

    def _centres_px(self, sim: VineSim) -> np.ndarray:
        """Simulated body centres (¼ and ¾ of each link, within the grown length) [px], all worlds (P, M, 2)."""
        ell = sim.config.link_length
        grown = sim.grown_length()
        s = np.arange(ell / 4, grown, ell / 2)
        poses = sim.poses()
        W = poses.shape[0]
        res = np.zeros((W, len(s), 2))
        for w in range(W):
            line = sim.centreline(w, poses)
            seg = np.linalg.norm(np.diff(line, axis=0), axis=1)
            cum = np.concatenate([[0.0], np.cumsum(seg)])
            res[w, :, 0] = np.interp(s, cum, line[:, 0])
            res[w, :, 1] = np.interp(s, cum, line[:, 1])
        return res / self.scale


def nearest_sq_distance(sim_pts: np.ndarray, real_pts: np.ndarray) -> float:
    """Mean over simulated points of the squared distance to the nearest real point [px²]."""
    if len(sim_pts) == 0 or len(real_pts) == 0:
        return np.nan
    d2 = np.sum((sim_pts[:, None, :] - real_pts[None, :, :]) ** 2, axis=2)
    return float(np.mean(np.min(d2, axis=1)))


def video_mse(scene: VideoScene, centres: list, diverged: set = frozenset()) -> np.ndarray:
    """The published metric per world [px²] (frames without points are skipped; diverged worlds: inf)."""
    W = centres[0].shape[0]
    out = np.zeros(W)
    for w in range(W):
        vals = [nearest_sq_distance(c[w], f) for c, f in zip(centres, scene.frames)]
        out[w] = np.nanmean(vals)
    out[list(diverged)] = np.inf
    return out


def make_scene(
    directory,
    radius_px: float,
    *,
    substeps: int = 1,
    link_radii: float = LINK_RADII,
    max_length_px: float | None = None,
    **config_overrides,
) -> VideoScene:
    """One deployment set up for simulation; link length = ``link_radii`` tube radii (Chen et al.: 2, the tube
    diameter; default 4)."""
    if not (math.isfinite(link_radii) and link_radii > 0):
        raise ValueError(f"link length must be > 0 tube radii, got {link_radii!r}")
    dep = read_video(directory)
    frames = frames_in_wall_frame(dep)
    lengths = measured_lengths(frames)
    ok = np.isfinite(lengths)
    idx = np.arange(len(frames))
    slope = float(np.polyfit(idx[ok], lengths[ok], 1)[0])
    if slope <= 0:
        raise ValueError(f"{dep.name}: the robot does not grow (length slope {slope:.3g} px/frame)")
    scale = TUBE_RADIUS / radius_px
    ell_px = link_radii * radius_px
    heading = None
    for f in frames:
        if len(f) and np.linalg.norm(f[-1]) > 1.5 * ell_px:
            k = int(np.argmin(np.abs(np.linalg.norm(f, axis=1) - ell_px)))
            heading = math.atan2(f[k, 1], f[k, 0])
            break
    if heading is None:
        f = frames[-1]
        heading = math.atan2(f[-1, 1], f[-1, 0])
    L0 = float(lengths[0]) if ok[0] else 0.0
    total = max_length_px if max_length_px is not None else L0 + slope * len(frames)
    if isinstance(substeps, bool) or int(substeps) != substeps or substeps < 1:
        raise ValueError(f"substeps must be an integer ≥ 1, got {substeps!r}")
    config_overrides.setdefault("dt", FRAME_DT / substeps)
    cfg = video_config(
        radius_px,
        total,
        link_radii=link_radii,
        heading=heading,
        growth_rate=slope * scale / FRAME_DT,
        **config_overrides,
    )
    return VideoScene(dep, frames, radius_px, scale, heading, slope, L0, cfg, int(substeps))


def param_problem(scenes: list, law: str) -> FitProblem:
    """Mean of the video metric over ``scenes`` as a function of the bending parameters (log10 coordinates)."""
    if law not in FIT_MODELS:
        raise ValueError(f"unknown bending model {law!r} for the video fit (choose {', '.join(FIT_MODELS)})")
    substeps = scenes[0].substeps
    spec = _mlp_spec(substeps) if law == "mlp" else MODEL_PARAMS[law]
    names = tuple(s[0] for s in spec)

    def physical(X):
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if law == "mlp":  # (log10 C, w1, b1, w2) → (C, w1, b1, w2, b2 = 0), the hinge-law order
            return np.concatenate([10.0 ** X[:, :1], X[:, 1:], np.zeros((len(X), 1))], axis=1)
        P = 10.0**X
        if law == "wrinkling":  # (k0, ε, C) → (m_full, ε, C), the hinge-law order
            P[:, 0] = 4.0 * P[:, 0] * np.arcsin(P[:, 1])
        return P  # linear: (K, C)

    def loss(X):
        P = physical(X)
        total = np.zeros(len(P))
        for sc in scenes:
            centres, bad = sc.simulate(law, P)
            total += video_mse(sc, centres, bad)
        return total / len(scenes)

    def to_physical(x):
        p = physical(x)[0]
        if law == "mlp":
            return {"damping": float(p[0]), "mlp_params": [float(v) for v in p[1:]]}
        keys = ("stiffness", "damping") if law == "linear" else ("m_full", "eps_crit", "damping")
        return {k: float(v) for k, v in zip(keys, p)}

    lo, hi = model_bounds(law, substeps)
    return FitProblem(names, lo, hi, loss, to_physical)


def fit_videos(
    scenes: list, law: str, *, popsize: int = 8, generations: int = 6, seed: int = 0, verbose: bool = False
) -> FitResult:
    """Seeded CMA-ES over the bending parameters of ``law`` on ``scenes`` (each generation: one batched rollout per
    video)."""
    prob = param_problem(scenes, law)
    res = cma_es(prob, sigma0=0.3, popsize=popsize, generations=generations, seed=seed, verbose=verbose)
    res.launches *= len(scenes)
    # the reported loss: the best parameters re-run alone (one world per video, as replay does)
    vec = params_vector(law, res.params)[None, :]
    per = []
    for sc in scenes:
        c, bad = sc.simulate(law, vec)
        per.append(float(video_mse(sc, c, bad)[0]))
    res.rollouts += len(scenes)
    res.launches += len(scenes)
    res.batch_loss = res.loss
    res.per_video = {sc.name: v for sc, v in zip(scenes, per)}
    res.loss = float(np.mean(per))
    return res


def params_vector(law: str, params: dict) -> np.ndarray:
    """Hinge-law parameter vector from a fitted parameter dict (as written to params.toml)."""
    if law == "mlp":
        w = np.asarray(params.get("mlp_params", ()), dtype=np.float64).reshape(-1)
        if "damping" not in params or w.shape != (3 * MLP_HIDDEN + 1,):
            raise ValueError(
                f"parameters for the mlp model need damping and mlp_params ({3 * MLP_HIDDEN + 1} numbers: w1, b1, w2, "
                "b2)"
            )
        return np.concatenate([[float(params["damping"])], w])
    keys = ("stiffness", "damping") if law == "linear" else ("m_full", "eps_crit", "damping")
    try:
        return np.array([float(params[k]) for k in keys])
    except KeyError as exc:
        raise ValueError(f"parameters for the {law} model need {', '.join(keys)}; missing {exc}") from None


def replay(scene: VideoScene, law: str, params: dict) -> dict:
    """Simulate one deployment with fitted parameters; arrays in the video's pixel frame (points' convention):
    frames (F,), sim_points (F, P, 2) [px] zero-padded, sim_count (F,), mse (px²)."""
    vec = params_vector(law, params)
    centres, bad = scene.simulate(law, vec[None, :])
    if bad:
        raise ValueError(f"{scene.name}: the simulation diverged with these parameters")
    F = len(centres)
    P = max(c.shape[1] for c in centres)
    pts = np.zeros((F, max(P, 1), 2))
    cnt = np.zeros(F, dtype=np.int64)
    flip = np.array([1.0, -1.0 if FLIP_POINTS_Y else 1.0])
    for i, c in enumerate(centres):
        n = c.shape[1]
        pts[i, :n] = c[0] * flip  # back to the points' pixel convention
        cnt[i] = n
    mse = float(video_mse(scene, centres)[0])
    return dict(frames=np.arange(F), sim_points=pts, sim_count=cnt, mse=mse)
