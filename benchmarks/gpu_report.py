"""The tables of a gpu_check.json (benchmarks/gpu_check.py) as Markdown, for benchmarks/RESULTS.md ("On a GPU"):
device, commit and date first, then one table per section the run holds (a section that failed: its error).

    python -P benchmarks/gpu_report.py gpu_check.json [--out report.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def table(header: list[str], rows: list[list]) -> list[str]:
    """A Markdown table; floats with four significant digits, thousands separated from 10,000 on."""

    def cell(v) -> str:
        if isinstance(v, bool) or v is None:
            return str(v)
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines + [""]


def section_lines(name: str, data) -> list[str]:
    """The Markdown of one section of the record."""
    if isinstance(data, dict) and "error" in data:
        return [f"{name}: failed: {data['error']}", ""]
    if name == "launches":
        return [f"Launches per solver step: slab {data['slab']:g}, snake {data['snake']:g}.", ""]
    if name == "snake":
        rows = [
            [r["snakes"], r["ms_total"], r["ms_total"] / 2, r["snake_steps_per_s"], r["real_time_factor"],
             r.get("paper_ms_total")]
            for r in data["rows"]
        ]  # fmt: skip
        head = ["snakes", "ms per frame", "ms per step", "snake-steps/s", "real-time factor", "paper ms per frame"]
        return table(head, rows)
    if name == "slab":
        rows = [[r["worlds"], r["ms_per_step"], r["world_steps_per_s"], r["real_time_factor"]] for r in data["rows"]]
        return table(["slab worlds", "ms per step", "world-steps/s", "real-time factor"], rows)
    if name == "large":
        e = data["sink_error_steps_31_40"]
        return [
            f"One world of {data['tets']:,} tets: {data['ms_per_step']:.2f} ms per step; after 31–40 steps its top "
            f"sinks within {min(e):+.2e} … {max(e):+.2e} of ρgH²/(2E) = {data['exact_sink_um']:.2f} µm (CPU: "
            "−6.4e-5 … −1.2e-5).",
            "",
        ]
    if name == "profile":
        stages = sorted(data["stages"].items(), key=lambda kv: -kv[1]["gpu_ms_per_step"])
        out = [data.get("scene", ""), ""]
        if stages:  # CUDA activity timing; none on a CPU
            out += table(
                ["stage kernel", "launches per step", "GPU ms per step"],
                [[k, v["launches_per_step"], v["gpu_ms_per_step"]] for k, v in stages],
            )
        phases = (data.get("solve_phases") or {}).get("phases")
        csr = (data.get("solve_phases_csr") or {}).get("phases") or {}
        if phases:
            its = data["solve_phases"]["iterations"]
            out += [f"The linear solve by phase ({its} MINRES iterations; the elastic blocks sliced, and in CSR):", ""]
            out += table(
                ["phase", "share", "cycles per iteration", "CSR blocks: cycles per iteration"],
                [
                    [k, f"{100 * v['share']:.1f} %", v["cycles_per_iteration"],
                     csr.get(k, {}).get("cycles_per_iteration", "-")]
                    for k, v in phases.items()
                ],
            )  # fmt: skip
        traffic = (data.get("solve_phases") or {}).get("solve_bytes")
        if traffic:
            summary = ("total", "per_world", "working_set", "solve_rows")
            parts = ", ".join(f"{k} {v / 1e3:.0f} kB" for k, v in traffic.items() if k not in summary)
            out += [
                f"Bytes per MINRES iteration (estimate, benchmarks/profile_step.py solve_bytes): "
                f"{traffic['total'] / 1e6:.2f} MB ({parts}; {traffic['solve_rows']} rows in the solve).",
                "",
            ]
        step_phases = (data.get("solve_phases") or {}).get("step_phases")
        if step_phases:
            out += ["The other stages by phase (per world and step):", ""]
            out += table(["phase", "cycles per step"], [[k, v["cycles_per_step"]] for k, v in step_phases.items()])
        return out
    if name == "floor":
        code = {"none": "-", "loop": "one phase's, looped", "distinct": "each phase its own"}

        def work(r: dict) -> str:
            if "stream_bytes_per_pass" in r:  # latency_floor.py's stream case
                mb, rate = r["stream_bytes_per_pass"] / 1e6, r["stream_gb_per_s_per_block"]
                return f"{mb:.2f} MB streamed per pass, {rate:.0f} GB/s per block"
            return code[r.get("code", "none")]

        rows = [
            [r["blocks"], r["loads"], "block sum" if r["block_sum"] else "barrier", work(r),
             r["phases"], r["us_per_pass"], r["us_per_pass"] * data["passes_per_step"] / 1e3]
            for r in data["rows"]
        ]  # fmt: skip
        head = ["blocks per world", "dependent loads per phase", "each phase ends at", "arithmetic code or stream",
                "phases", "µs per pass", "ms per step's passes"]  # fmt: skip
        notes = [f"{k} blocks per world: failed: {' '.join(v)}" for k, v in data.get("cluster_errors", {}).items()]
        stream = data.get("device_stream")
        if stream:
            notes.append(
                f"The whole device (multiprocessors: {stream['multiprocessors']}) streams an array at "
                f"{stream['dram_gb_per_s']:.0f} GB/s from memory ({stream['dram_bytes'] >> 20} MiB) and "
                f"{stream['l2_gb_per_s']:.0f} GB/s within the L2 cache ({stream['l2_bytes'] >> 20} MiB)."
            )
        return table(head, rows) + [line for note in notes for line in (note, "")]
    if name == "agreement":
        return [
            f"{data['seconds']:g} s straight gait: GPU–CPU gap {data['gpu_cpu_gap_mm']:.3g} mm against the CPU's "
            f"round-off spread {data['cpu_roundoff_gap_mm']:.3g} mm; the GPU repeats itself bit for bit: "
            f"{data['gpu_repeats_bit_for_bit']}; CPU runs {data['cpu_reference']}.",
            "",
        ]
    if name == "blocks":
        rows = [
            [k, v.get("ms_per_frame"), v.get("snake_steps_per_s"), v.get("com_gap_mm"),
             ", ".join(v.get("uncached_modules", [])) or "-", " ".join(v.get("error", [])) or "-"]
            for k, v in data.items()
        ]  # fmt: skip
        out = table(["variant", "ms per frame", "snake-steps/s", "gap [mm]", "compiled there", "error"], rows)
        profiled = {k: v["phase_cycles"] for k, v in data.items() if v.get("phase_cycles")}
        if profiled:  # the one-snake variants' solve by phase, a column each
            phases = list(next(iter(profiled.values())))
            rows = [[ph, *(c.get(ph) for c in profiled.values())] for ph in phases]
            rows.append(["all", *(sum(c.values()) for c in profiled.values())])
            out += ["The one-snake variants' solve: cycles per MINRES iteration by phase:", ""]
            out += table(["phase", *profiled], rows)
        return out
    if name == "tests":
        ended = "stopped at the time budget" if data["returncode"] is None else f"return code {data['returncode']}"
        failed = ", ".join(data.get("failed", [])) or "none"
        passed = data.get("passed", "?")
        return [f"CUDA tests: {ended} after {data['seconds']:.0f} s; {passed} passed; failed: {failed}.", ""]
    if name == "env":
        rows = [[r.get("snake"), r.get("worlds"), r.get("env_steps_per_s")] for r in data["rows"]]
        return table(["snake", "worlds", "env-steps/s"], rows)
    return [f"{name}: " + json.dumps(data)[:500], ""]


def solve_traffic(record: dict) -> dict | None:
    """The profile section's bytes per MINRES iteration (profile_step.py, solve_bytes), None where it did not run."""
    return ((record.get("profile") or {}).get("solve_phases") or {}).get("solve_bytes")


def bandwidth_floor(record: dict) -> list[str]:
    """The solve's bandwidth floor on one block: the profile's bytes per MINRES iteration over the floor section's
    streaming rate of one block per world (both sections needed, else nothing)."""
    traffic = solve_traffic(record)
    rows = (record.get("floor") or {}).get("rows", [])
    stream = [r for r in rows if "stream_gb_per_s_per_block" in r and r["blocks"] == 1]
    if not traffic or not stream:
        return []
    rate = stream[0]["stream_gb_per_s_per_block"]
    us = traffic["total"] / rate / 1e3
    passes = record["floor"]["passes_per_step"]
    return [
        "### bandwidth floor of the solve",
        "",
        f"{traffic['total'] / 1e6:.2f} MB per MINRES iteration at one block's streaming rate ({rate:.0f} GB/s): "
        f"{us:.1f} µs per iteration, {us * passes / 1e3:.2f} ms per step's {passes} passes.",
        "",
    ]


#: the batch of acceptance criterion 4 (worlds, snake-steps per second)
BATCH_WORLDS, BATCH_TARGET = 1024, 25_000


def batch_ceiling(record: dict) -> list[str]:
    """The batch's bandwidth ceiling: BATCH_WORLDS snakes each moving the profile's world-private bytes per MINRES
    iteration over a step's passes, at the rate the floor section's device stream reads an array from memory (the
    working sets of the worlds in flight, one per multiprocessor, exceed the L2 cache) and within L2 (they would
    fit). Nothing unless both sections ran."""
    traffic = solve_traffic(record)
    stream = (record.get("floor") or {}).get("device_stream")
    if not traffic or not stream or "per_world" not in traffic:
        return []
    passes = record["floor"]["passes_per_step"]
    gb = traffic["per_world"] * passes * BATCH_WORLDS / 1e9
    held = traffic["working_set"] * stream["multiprocessors"] / 1e6
    lines = [
        "### bandwidth ceiling of the batch",
        "",
        f"{BATCH_WORLDS} snakes move {traffic['per_world'] / 1e6:.2f} MB of their own per world and MINRES iteration "
        f"(the elastic blocks, the vectors, H⁻¹; the coarse level's tables are shared), {gb:.0f} GB per step of "
        f"{passes} passes; one world per multiprocessor holds {stream['multiprocessors']} working sets of "
        f"{traffic['working_set'] / 1e6:.2f} MB ({held:.0f} MB) at once.",
        "",
    ]
    for where, label in (("dram", "from memory"), ("l2", "within the L2 cache")):
        rate = stream[f"{where}_gb_per_s"]
        ms = 1e3 * gb / rate
        lines.append(
            f"- {label} ({rate:.0f} GB/s): ≥ {ms:.1f} ms per step, ≤ {BATCH_WORLDS / ms * 1e3:,.0f} snake-steps/s "
            f"(target {BATCH_TARGET:,})"
        )
    return lines + [""]


def report(record: dict) -> str:
    """The whole record as Markdown."""
    meta = record.get("meta", {})
    lines = [
        f"- Device: {meta.get('device', '?')} ({meta.get('host', '')}, Python {meta.get('python', '?')}, Warp "
        f"{meta.get('warp', '?')})",
        f"- Date: {meta.get('date', '?')}",
        f"- Code: {meta.get('commit') or '?'}",
        f"- Kernels compiled on the device: {meta.get('uncached_modules') or 'none'} "
        f"({meta.get('compile_seconds', 0.0):.0f} s)",
        "",
    ]
    for name, data in record.items():
        if name in ("meta", "seconds", "registers"):
            continue
        lines += [f"### {name} ({record.get('seconds', {}).get(name, 0.0):.0f} s)", ""] + section_lines(name, data)
    return "\n".join(lines + bandwidth_floor(record) + batch_ceiling(record))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("record", help="gpu_check.json")
    ap.add_argument("--out", help="write the Markdown here (default: standard output)")
    a = ap.parse_args()
    try:
        record = json.loads(Path(a.record).read_text())
    except (OSError, ValueError) as exc:
        print(f"gpu_report: cannot read {a.record}: {exc}", file=sys.stderr)
        return 2
    text = report(record)
    if a.out:
        Path(a.out).write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
