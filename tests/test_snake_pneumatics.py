"""Chamber-pressure latency (Gasoto et al. 2019, Eqs. 10-12) and the open-loop gait (Eq. 9).

The reference here is written directly from the paper, one chamber at a time with plain Python floats, and shares no
code with softsnake.robots.pneumatics.
"""

import math

import numpy as np
import pytest

from softsnake.robots import PSI, ChamberPressures, OpenLoopGait, PneumaticsConfig

H = 0.0083  # [s] the step the paper's constants were fitted for


# ----------------------------------------------------------------------------------------------------------------------
# Independent reference: Eqs. 11-12, one chamber, one published step h.
# ----------------------------------------------------------------------------------------------------------------------
def ref_chamber_step(p, target, k_i=0.23, k_d=0.23, t_p=0.68, p_s=10.0, scale=1.0):
    """One step of ``scale`` × the paper's step (an explicit Euler step of Eq. 12's increment per step, clamped)."""
    if target > p:  # inflating, Eq. 11 then Eq. 12 (top)
        dp = (target - p) / p_s
        return min(p + scale * p_s * dp**2 * k_i, target)
    if target < p:  # deflating, Eq. 12 (bottom)
        return max(p - scale * min(p * k_d, t_p), target)
    return p


def ref_link_step(p0, p1, a, scale=1.0):
    """Antagonistic valves (Sec. III): a > 0 fills chamber 0, a < 0 fills chamber 1, the other one vents."""
    target0, target1 = (a, 0.0) if a > 0 else (0.0, -a)
    return ref_chamber_step(p0, target0, scale=scale), ref_chamber_step(p1, target1, scale=scale)


def random_target_sequence(rng, steps, worlds, links, p_max=8.0):
    """Piecewise-constant random link commands: holds of 1-30 steps, including 0, +-p_max and sign reversals."""
    out = np.empty((steps, worlds, links))
    for w in range(worlds):
        for i in range(links):
            k = 0
            while k < steps:
                hold = int(rng.integers(1, 31))
                choice = rng.random()
                if choice < 0.1:
                    a = 0.0
                elif choice < 0.25:
                    a = p_max * rng.choice([-1.0, 1.0])
                else:
                    a = rng.uniform(-p_max, p_max)
                out[k : k + hold, w, i] = a
                k += hold
    return out


def test_psi_constant():
    assert PSI == pytest.approx(6894.757, abs=1e-9)


def test_matches_paper_map_exactly_at_reference_dt():
    rng = np.random.default_rng(7)
    worlds, links, steps = 3, 4, 300
    seq = random_target_sequence(rng, steps, worlds, links)
    cp = ChamberPressures(worlds, links, PneumaticsConfig())
    ref = [[[0.0, 0.0] for _ in range(links)] for _ in range(worlds)]
    worst = 0.0
    for k in range(steps):
        got = cp.step(seq[k], H)
        for w in range(worlds):
            for i in range(links):
                ref[w][i] = list(ref_link_step(ref[w][i][0], ref[w][i][1], float(seq[k, w, i])))
        worst = max(worst, float(np.max(np.abs(got - np.array(ref)))))
    assert worst <= 1e-12
    np.testing.assert_allclose(cp.signed(), np.array(ref)[..., 0] - np.array(ref)[..., 1], rtol=0, atol=1e-12)


def test_integer_multiple_of_reference_dt_is_repeated_paper_steps():
    cfg = PneumaticsConfig()
    a = np.array([[8.0, -5.0, 3.0, 0.0]])
    one, many = ChamberPressures(1, 4, cfg), ChamberPressures(1, 4, cfg)
    one.set_state(np.array([[[0.0, 2.0], [6.0, 0.0], [0.0, 0.0], [4.0, 1.0]]]))
    many.set_state(one.state())
    for _ in range(5):
        one.step(a, 3 * H)
        for _ in range(3):
            many.step(a, H)
    np.testing.assert_array_equal(one.values, many.values)


def test_sign_convention():
    cp = ChamberPressures(1, 2, PneumaticsConfig(latency=False))
    cp.step(np.array([[3.0, -2.0]]), H)
    np.testing.assert_array_equal(cp.values, [[[3.0, 0.0], [0.0, 2.0]]])
    np.testing.assert_array_equal(cp.signed(), [[3.0, -2.0]])


# ----------------------------------------------------------------------------------------------------------------------
# Step-size consistency.
#
# The module reads Eq. 12 as forward Euler (step H) of dp/dt = g(p) = D(p)/H, D the Eq. 12 increment. For the
# step responses of the paper's Fig. 6 (inflate 0 -> A, vent A -> 0) the ODE has closed-form solutions p(t), so the
# tolerance is a rigorous Euler error bound rather than a number picked to pass:
#   e_{n+1} = x_{n+1} - p(t_{n+1}) = e_n (1 + h q_n) - tau_n,
#   tau_n = p(t_{n+1}) - p(t_n) - h g(p(t_n))      (local truncation error, computed exactly from p(t)),
#   q_n = [g(x_n) - g(p(t_n))] / (x_n - p(t_n))    (a difference quotient of g).
# g is non-increasing on the reachable range, so q_n <= 0, and h |q_n| < 1 for these gains, so
# |e_{n+1}| <= c_n |e_n| + |tau_n| with c_n = 1 - h min|q_n| in (0, 1]:
#   inflation: g = p_s k_i Delta^2 / H, Delta = (A - p)/p_s, q_n = -k_i (Delta(x_n) + Delta(p(t_n))) / H, so
#              c_n = 1 - h k_i Delta(t_n) / H; closed form Delta(t) = Delta0 / (1 + k_i Delta0 t / H);
#   deflation: g = -min(k_d p, T_p) / H, q_n in [-k_d/H, 0], c_n = 1; closed form: linear fall at T_p/H down to
#              p_k = T_p/k_d, then p = p_k exp(-k_d (t - t_k) / H).
# The clamp at the target is a projection onto a set holding p(t) and cannot increase |e|. Hence
# |x_N - p(t_N)| <= B_h(t_N), and two step sizes differ by at most B_H + B_{H/m} at common times.
# Observed (inflate/vent 4.8-8 psi, 1 s): max |coarse - fine| = 0.17 psi (m = 2), 0.25 psi (m = 4), i.e. <= 3 % of the
# step, against bounds of 0.50-0.60 psi; the measured difference uses at most ~65 % of the bound.
# ----------------------------------------------------------------------------------------------------------------------
K, TP, PS = 0.23, 0.68, 10.0


def exact_inflation(t, amplitude):
    d0 = amplitude / PS
    return amplitude - PS * d0 / (1.0 + K * d0 * t / H)


def exact_deflation(t, p0):
    pk = TP / K
    if p0 <= pk:
        return p0 * math.exp(-K * t / H)
    tk = (p0 - pk) * H / TP
    return p0 - TP * t / H if t <= tk else pk * math.exp(-K * (t - tk) / H)


def euler_bound(kind, amplitude, h, steps):
    """B_h(t_N) for N = 1..steps [psi] (see the comment above)."""
    out, e = [], 0.0
    for n in range(steps):
        t0, t1 = n * h, (n + 1) * h
        if kind == "inflate":
            y0, y1 = exact_inflation(t0, amplitude), exact_inflation(t1, amplitude)
            d = (amplitude - y0) / PS
            g, c = PS * K * d * d / H, 1.0 - h * K * d / H
        else:
            y0, y1 = exact_deflation(t0, amplitude), exact_deflation(t1, amplitude)
            g, c = -min(K * y0, TP) / H, 1.0
        e = c * e + abs(y1 - y0 - h * g)
        out.append(e)
    return np.array(out)


def step_response(kind, amplitude, dt, steps):
    cp = ChamberPressures(1, 1, PneumaticsConfig())
    if kind == "deflate":
        cp.set_state(np.array([[[amplitude, 0.0]]]))
    target = np.array([[amplitude if kind == "inflate" else 0.0]])
    return np.array([cp.step(target, dt)[0, 0, 0] for _ in range(steps)])


@pytest.mark.parametrize("kind", ["inflate", "deflate"])
@pytest.mark.parametrize("amplitude", [4.8, 6.4, 8.0])  # 60-100 % of p_max, the paper's step trials
@pytest.mark.parametrize("m", [2, 4])
def test_step_response_independent_of_dt(kind, amplitude, m):
    steps = 120  # ~1 s, long enough to settle
    coarse = step_response(kind, amplitude, H, steps)
    fine = step_response(kind, amplitude, H / m, steps * m)[m - 1 :: m]  # same times t = (n+1) H
    bound = euler_bound(kind, amplitude, H, steps) + euler_bound(kind, amplitude, H / m, steps * m)[m - 1 :: m]
    diff = np.abs(coarse - fine)
    assert np.all(diff <= bound + 1e-12), f"max diff {diff.max():.4f} psi vs bound {bound[np.argmax(diff - bound)]:.4f}"
    # Both converge to the same settled value.
    target = amplitude if kind == "inflate" else 0.0
    assert abs(coarse[-1] - target) < 0.1 * amplitude and abs(fine[-1] - target) < 0.1 * amplitude
    # And each one is within its own bound of the exact continuous response.
    exact = np.array(
        [
            exact_inflation((n + 1) * H, amplitude) if kind == "inflate" else exact_deflation((n + 1) * H, amplitude)
            for n in range(steps)
        ]
    )
    assert np.all(np.abs(coarse - exact) <= euler_bound(kind, amplitude, H, steps) + 1e-12)


def test_step_response_bound_is_informative():
    """The bound above is not vacuous: for the 8 psi steps it stays well below the step size."""
    for kind in ("inflate", "deflate"):
        b = euler_bound(kind, 8.0, H, 120) + euler_bound(kind, 8.0, H / 2, 240)[1::2]
        assert b.max() < 0.1 * 8.0


# ----------------------------------------------------------------------------------------------------------------------
# Overshoot, latency off, reset / checkpoint.
# ----------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt_factor", [0.3, 1.0, 1.4, 2.6])
@pytest.mark.parametrize("k", [0.23, 1.0])
def test_no_overshoot(dt_factor, k):
    rng = np.random.default_rng(3)
    cfg = PneumaticsConfig(k_inflate=k, k_deflate=k)
    cp = ChamberPressures(2, 4, cfg)
    seq = random_target_sequence(rng, 200, 2, 4)
    for a in seq:
        before = cp.values
        after = cp.step(a, dt_factor * H)
        target = np.stack([np.maximum(a, 0), np.maximum(-a, 0)], axis=-1)
        lo, hi = np.minimum(before, target), np.maximum(before, target)
        assert np.all(after >= lo - 1e-15) and np.all(after <= hi + 1e-15)
    # With k = 1 and a 1.4 H step, one inflation update from 0 towards 8 psi would reach 8.96 psi without the clamp.
    cp = ChamberPressures(1, 1, PneumaticsConfig(k_inflate=1.0))
    assert cp.step(np.array([[8.0]]), 1.4 * H)[0, 0, 0] == 8.0


def test_latency_off_is_instant():
    cp = ChamberPressures(2, 4, PneumaticsConfig(latency=False))
    a = np.array([[8.0, -8.0, 0.5, 0.0], [-3.0, 2.0, -0.25, 7.5]])
    cp.step(a, H)
    np.testing.assert_array_equal(cp.signed(), a)
    cp.step(-a, 1e-5)
    np.testing.assert_array_equal(cp.signed(), -a)


def test_reset_and_checkpoint_roundtrip():
    cp = ChamberPressures(2, 3)
    for _ in range(10):
        cp.step(np.full((2, 3), 6.0), H)
    saved = cp.state()
    saved_copy = saved.copy()
    cp.step(np.full((2, 3), -6.0), H)
    assert not np.array_equal(cp.values, saved)
    np.testing.assert_array_equal(saved, saved_copy)  # state() is a copy
    cp.set_state(saved)
    np.testing.assert_array_equal(cp.values, saved)
    cp.values[0, 0, 0] = 99.0  # values is a copy too
    np.testing.assert_array_equal(cp.values, saved)
    cp.reset()
    assert np.all(cp.values == 0.0)


# ----------------------------------------------------------------------------------------------------------------------
# Gait, Eq. 9.
# ----------------------------------------------------------------------------------------------------------------------
def test_gait_paper_defaults_hand_values():
    g = OpenLoopGait()  # omega = 2 Hz, alpha = pi/2, phi = 0, A = 8 psi
    np.testing.assert_allclose(g.targets(0.0), [0.0, 8.0, 0.0, -8.0], atol=1e-12)
    # t = 1/8 s: 2 pi * 2 * 0.125 = pi/2
    np.testing.assert_allclose(g.targets(0.125), [8.0, 0.0, -8.0, 0.0], atol=1e-12)
    # t = 1/24 s: 2 pi * 2 / 24 = pi/6, sin(pi/6 + i pi/2) = 1/2, sqrt(3)/2, -1/2, -sqrt(3)/2
    s3 = math.sqrt(3.0) / 2
    np.testing.assert_allclose(g.targets(1.0 / 24.0), [4.0, 8 * s3, -4.0, -8 * s3], atol=1e-12)


def test_gait_offset_clamps():
    g = OpenLoopGait(phi=0.5, amplitude_psi=4.0)
    # t = 0: sin(i pi/2) + 0.5 = 0.5, 1.5 -> 1, 0.5, -0.5
    np.testing.assert_allclose(g.targets(0.0), [2.0, 4.0, 2.0, -2.0], atol=1e-12)
    g = OpenLoopGait(phi=-1.0, amplitude_psi=8.0)
    # t = 0: 0 - 1, 1 - 1, 0 - 1, -1 - 1 -> -1, 0, -1, -1 (clamped)
    np.testing.assert_allclose(g.targets(0.0), [-8.0, 0.0, -8.0, -8.0], atol=1e-12)
    # A positive offset keeps link commands positive for longer than negative over a period.
    g = OpenLoopGait(phi=0.3)
    a = np.array([g.targets(t, links=1)[0] for t in np.linspace(0, 0.5, 1001)[:-1]])
    assert (a > 0).mean() > 0.55 and a.max() == 8.0 and a.min() > -8.0


def test_gait_phase_lag_and_batching():
    g = OpenLoopGait(omega_hz=1.5, alpha=0.7, amplitude_psi=5.0)
    lag = 0.7 / (2 * math.pi * 1.5)  # link i+1 is link i advanced by alpha / (2 pi omega) seconds
    for t in (0.0, 0.11, 0.9):
        a, b = g.targets(t, links=6), g.targets(t + lag, links=6)
        np.testing.assert_allclose(a[1:], b[:-1], atol=1e-12)
    batch = g(0.11, worlds=3, links=6)
    assert batch.shape == (3, 6)
    np.testing.assert_array_equal(batch, np.tile(g.targets(0.11, links=6), (3, 1)))
    still = OpenLoopGait(omega_hz=0.0, alpha=0.0, phi=0.25, amplitude_psi=2.0)
    np.testing.assert_allclose(still.targets(123.4, links=2), [0.5, 0.5])


def test_gait_drives_chambers():
    g = OpenLoopGait()
    cp = ChamberPressures(2, 4)
    for n in range(240):
        cp.step(g((n + 1) * H, worlds=2), H)
    assert np.all(np.abs(cp.signed()) <= 8.0) and np.abs(cp.signed()).max() > 2.0
    np.testing.assert_array_equal(cp.values[0], cp.values[1])


# ----------------------------------------------------------------------------------------------------------------------
# Validation.
# ----------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k_inflate=0.0), "k_inflate"),
        (dict(k_inflate=1.5), "k_inflate"),
        (dict(k_deflate=-0.1), "k_deflate"),
        (dict(k_deflate=float("nan")), "k_deflate"),
        (dict(threshold_psi=0.0), "threshold_psi"),
        (dict(threshold_psi=float("inf")), "threshold_psi"),
        (dict(reference_dt=-1.0), "reference_dt"),
        (dict(reference_dt=float("nan")), "reference_dt"),
        (dict(supply_psi=0.0), "supply_psi"),
        (dict(p_max_psi=-8.0), "p_max_psi"),
        (dict(supply_psi=7.0), "supply_psi .* must be >= p_max_psi"),
        (dict(latency="yes"), "latency"),
    ],
)
def test_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PneumaticsConfig(**kwargs)


def test_config_accepts_k_equal_one_and_supply_equal_pmax():
    PneumaticsConfig(k_inflate=1.0, k_deflate=1.0, supply_psi=8.0, p_max_psi=8.0)


def test_chamber_validation():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="worlds"):
            ChamberPressures(bad, 4)
    with pytest.raises(ValueError, match="links"):
        ChamberPressures(1, 0)
    cp = ChamberPressures(2, 4)
    with pytest.raises(ValueError, match=r"shape \(worlds, links\) = \(2, 4\), got \(4,\)"):
        cp.step(np.zeros(4), H)
    a = np.zeros((2, 4))
    a[1, 2] = np.nan
    with pytest.raises(ValueError, match="nan psi at world 1, link 2 is not finite"):
        cp.step(a, H)
    a = np.zeros((2, 4))
    a[0, 3] = -8.5
    with pytest.raises(ValueError, match=r"-8.5 psi at world 0, link 3 exceeds p_max = 8.0 psi"):
        cp.step(a, H)
    cp.step(np.full((2, 4), 8.0 + 1e-10), H)  # round-off above p_max is tolerated
    for dt in (0.0, -H, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="dt"):
            cp.step(np.zeros((2, 4)), dt)
    with pytest.raises(ValueError, match="expected shape"):
        cp.set_state(np.zeros((2, 4)))
    bad = np.zeros((2, 4, 2))
    bad[1, 0, 1] = -0.5
    with pytest.raises(ValueError, match=r"-0.5 psi at \(world, link, chamber\) \(1, 0, 1\)"):
        cp.set_state(bad)
    bad[1, 0, 1] = np.inf
    with pytest.raises(ValueError, match="inf"):
        cp.set_state(bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(omega_hz=-1.0), "omega_hz"),
        (dict(omega_hz=float("inf")), "omega_hz"),
        (dict(alpha=float("nan")), "alpha"),
        (dict(phi=1.5), "phi"),
        (dict(phi=-1.01), "phi"),
        (dict(amplitude_psi=9.0), "above p_max"),
        (dict(amplitude_psi=-1.0), "amplitude_psi"),
        (dict(p_max_psi=0.0), "p_max_psi"),
    ],
)
def test_gait_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OpenLoopGait(**kwargs)


def test_gait_call_validation():
    g = OpenLoopGait()
    with pytest.raises(ValueError, match="time"):
        g.targets(float("nan"))
    with pytest.raises(ValueError, match="links"):
        g.targets(0.0, links=0)
    with pytest.raises(ValueError, match="worlds"):
        g(0.0, worlds=0)
