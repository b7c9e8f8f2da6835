"""CPU and GPU on the same gait: run the default full snake's straight gait on one device and save its path, or compare
two saved runs (float32 round-off differs between devices, and the wheels' stick/slip amplifies it; RESULTS.md).

    python3 -P benchmarks/device_agreement.py run --device cuda --seconds 2 --out gpu.npz
    python3 -P benchmarks/device_agreement.py run --device cpu --seconds 2 --out cpu.npz [--youngs-scale 1.000001]
    python3 -P benchmarks/device_agreement.py compare cpu.npz gpu.npz

A run's file also holds what made it (``provenance``: device, seconds, Young's modulus scale, Warp's version and the
digests of softsnake's and the kernels' sources), so that a run made elsewhere can stand in for one of the same
arguments and sources (``mismatch``; benchmarks/gpu_check.py's agreement section takes its CPU runs from
benchmarks/gpu_prepare.sh).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
from pathlib import Path

import numpy as np


def source_digests() -> dict[str, str]:
    """sha256 prefixes of the Python sources of the imported softsnake package (its kernels left out) and of its
    kernels (kernels.block.kernels_source_digest): the same in a checkout and in an installed copy of it."""
    import softsnake
    from softsnake.kernels.block import kernels_source_digest

    root = Path(softsnake.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "kernels":
            continue
        digest.update(rel.as_posix().encode())
        digest.update(path.read_bytes())
    return dict(softsnake_source=digest.hexdigest()[:16], kernels_source=kernels_source_digest())


def provenance(device: str, seconds: float, youngs_scale: float) -> dict:
    """What a run's result depends on besides the machine: its arguments, Warp's version and the sources."""
    import warp as wp

    return dict(device=device, seconds=float(seconds), youngs_scale=float(youngs_scale), warp=wp.__version__) | (
        source_digests()
    )


def mismatch(path: str | Path, expected: dict) -> str | None:
    """Why the run saved at ``path`` cannot stand in for a run of ``expected`` provenance (None: it can)."""
    path = Path(path)
    if not path.is_file():
        return f"no {path}"
    with np.load(path) as f:
        for key, want in expected.items():
            if key not in f:
                return f"{path.name} has no {key}"
            have = f[key].item()
            if have != want:
                return f"{path.name}: {key} {have!r}, not {want!r}"
    return None


def run(device: str, seconds: float, out: str, youngs_scale: float) -> None:
    from softsnake.experiments.gait import default_gait, run_gait
    from softsnake.robots.snake import SnakeConfig
    from softsnake.robots.snake_sim import SnakeSim
    from softsnake.sim.model import quiet_warp

    quiet_warp()
    cfg = SnakeConfig()
    cfg = dataclasses.replace(cfg, youngs_modulus=cfg.youngs_modulus * youngs_scale)
    sim = SnakeSim(worlds=1, device=device, config=cfg)
    traj = run_gait(default_gait(), seconds, sim=sim)
    np.savez(
        out,
        t=traj.t,
        com=traj.com,
        particle_q=sim.state.particle_q.numpy(),
        body_q=sim.state.body_q.numpy(),
        **provenance(device, seconds, youngs_scale),
    )
    print(
        f"{device}: centre of mass moved {1e3 * (traj.com[-1, 0, 0] - traj.com[0, 0, 0]):.1f} mm forward after the "
        f"first frame"
    )


def compare(a: str, b: str) -> None:
    with np.load(a) as fa, np.load(b) as fb:
        A, B = dict(fa), dict(fb)
    for name, d in ((a, A), (b, B)):
        print(f"{name}: moved {1e3 * (d['com'][-1, 0, 0] - d['com'][0, 0, 0]):.1f} mm forward after the first frame")
    gap = np.linalg.norm(A["com"][:, 0] - B["com"][:, 0], axis=-1)
    for frac in (0.25, 0.5, 0.75, 1.0):
        k = max(0, int(round(frac * len(gap))) - 1)
        print(f"t = {A['t'][k]:.2f} s: paths {1e3 * gap[k]:.2f} mm apart")
    print(f"largest particle difference at the end {1e3 * np.abs(A['particle_q'] - B['particle_q']).max():.2f} mm")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--device", default="cpu")
    r.add_argument("--seconds", type=float, default=2.0)
    r.add_argument(
        "--youngs-scale", type=float, default=1.0, help="multiply Young's modulus (1 ± 1e-6: a round-off probe)"
    )
    r.add_argument("--out", required=True)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.device, args.seconds, args.out, args.youngs_scale)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
