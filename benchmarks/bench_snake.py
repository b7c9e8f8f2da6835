"""Multi-snake benchmark (paper Table II) with the record header RESULTS.md asks for (device, date, settings).

    python3 -P benchmarks/bench_snake.py --device cuda --snakes 0.25,1,2,4,7,10 --frames 50

Same measurement as ``softsnake bench`` (ms per frame of 2 solver sub-steps while the default gait runs).
"""

from __future__ import annotations

import argparse
import datetime
import json

import warp as wp

from softsnake.experiments.bench import PAPER_TABLE_II, bench_snakes, cpu_model, parse_snakes
from softsnake.sim.model import quiet_warp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--snakes", default="0.25,1,2,4")
    ap.add_argument("--frames", type=int, default=20)
    args = ap.parse_args()
    quiet_warp()
    rows = [bench_snakes(s, args.frames, device=args.device) for s in parse_snakes(args.snakes)]
    device = wp.get_device(args.device)
    header = dict(
        date=datetime.date.today().isoformat(),
        device=device.name,
        machine=cpu_model(),
        warp=wp.config.version,
        frames=args.frames,
    )
    print(json.dumps(dict(header=header, rows=rows), indent=2))
    print("\nsnakes | assembly ms | solve ms | total ms | ms/snake | paper total ms")
    for r in rows:
        paper = PAPER_TABLE_II.get(r["snakes"], (None, None, None))[2]
        per = "-" if r["ms_per_snake"] is None else f"{r['ms_per_snake']:.2f}"
        print(
            f"{r['snakes']:6g} | {r['ms_assembly']:11.2f} | {r['ms_solve']:8.2f} | {r['ms_total']:8.2f} | {per:>8} | "
            f"{paper}"
        )


if __name__ == "__main__":
    main()
