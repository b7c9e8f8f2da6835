"""README gait figure from three `softsnake gait` runs (φ = 0, +0.3, −0.3): centre-of-mass paths, and the pressures
and curvatures of the straight gait.

    softsnake gait --seconds 5 --out runs/gait0 --no-usd
    softsnake gait --seconds 5 --phi 0.3 --out runs/left --no-usd
    softsnake gait --seconds 5 --phi -0.3 --out runs/right --no-usd
    python benchmarks/studies/snake_gait_figure.py runs/gait0 runs/left runs/right --out docs/images/snake_gait.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("straight", type=Path, help="run folder of φ = 0")
    ap.add_argument("left", type=Path, help="run folder of φ = +0.3")
    ap.add_argument("right", type=Path, help="run folder of φ = −0.3")
    ap.add_argument("--out", type=Path, required=True, help="PNG file")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = {
        name: np.load(folder / "trajectory.npz")
        for name, folder in (("φ = 0", args.straight), ("φ = +0.3", args.left), ("φ = −0.3", args.right))
    }
    fig, (a0, a1, a2) = plt.subplots(1, 3, figsize=(15, 4.2))
    for name, d in runs.items():
        c = d["com"][:, 0] - d["com0"][0]
        a0.plot(1e3 * c[:, 0], 1e3 * c[:, 1], label=f"{name}: ({c[-1, 0]:.3f}, {c[-1, 1]:+.3f}) m")
    a0.set(xlabel="x [mm]", ylabel="y [mm]", title="centre of mass, 5 s")
    a0.axis("equal")
    a0.legend(fontsize=8)
    d = runs["φ = 0"]
    for i in range(d["pressure"].shape[2]):
        a1.plot(d["t"], d["pressure"][:, 0, i], label=f"link {i}")
        a2.plot(d["t"], d["curvature"][:, 0, i], label=f"link {i}")
    a1.set(xlabel="t [s]", ylabel="signed pressure [psi]", title="φ = 0: pressures")
    a2.set(xlabel="t [s]", ylabel="curvature [1/m]", title="φ = 0: curvatures")
    a1.legend(fontsize=8)
    for a in (a0, a1, a2):
        a.grid(alpha=0.3)
    fig.tight_layout()
    tmp = args.out.with_name(args.out.name + ".tmp.png")
    fig.savefig(tmp, dpi=110)
    tmp.replace(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
