"""benchmarks/gpu_check.py, the script a session lent a GPU runs once, works before it gets there: on the CPU, its
launch count, the solve's phase profile, the large world and the latency floor run and write their JSON, the blocks
section runs a variant in a process of its own and records a variant that cannot run (a thread-block cluster, which
needs a Hopper GPU) as an error instead of stopping, the variants gpu_prepare.sh precompiles are listed, and
benchmarks/gpu_report.py turns its JSON into RESULTS' tables."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time

from cli_helpers import ROOT

spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
gpu_check = sys.modules["gpu_check"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def test_launch_count_and_phase_profile_run_on_the_cpu(tmp_path):
    out = tmp_path / "gpu_check.json"
    run = subprocess.run(
        [sys.executable, "-P", str(ROOT / "benchmarks" / "gpu_check.py"), "--device", "cpu", "--quick"]
        + ["--sections", "launches,profile,large,floor", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(out.read_text())
    assert record["launches"] == dict(slab=18.0, snake=22.0)
    phases = record["profile"]["solve_phases"]
    assert phases["iterations"] == 3 * 2 * 4 * 20  # three frames of two steps at 4 × 20
    shares = [p["share"] for p in phases["phases"].values()]
    assert min(shares) > 0.0 and abs(sum(shares) - 1.0) < 1e-9
    assert list(record["profile"]["solve_phases_csr"]["phases"]) == list(phases["phases"])
    large = record["large"]  # the scene and bound of tests/test_large_world.py
    assert large["tets"] == 51_840 and max(abs(e) for e in large["sink_error_steps_31_40"]) < 1.9e-4
    assert [(r["loads"], r["block_sum"]) for r in record["floor"]["rows"]] == [
        (0, False), (1, False), (2, False), (4, False), (0, True), (1, True), (0, False)
    ]  # fmt: skip
    stream = record["floor"]["rows"][-1]  # the stream case: 37 phases of 32 floats per lane (one lane on a CPU)
    assert stream["stream_bytes_per_pass"] == 37 * 128 and stream["stream_gb_per_s_per_block"] > 0.0
    # the snake's solve after its steps: 2,312 rows, the elastic blocks 14,900 × 40 B
    traffic = record["profile"]["solve_phases"]["solve_bytes"]
    assert traffic["solve_rows"] == 2312 and traffic["elastic_blocks"] == 596_000
    # a world's own: the blocks, 20 passes over 1,300 vec3s and 26 over 2,312 rows, H⁻¹ (5 clusters of 18 dofs,
    # float64); held: 9 particle and 12 row vectors once
    body = 8 * 5 * 18 * 18
    assert traffic["per_world"] == 596_000 + 12 * 1300 * 20 + 4 * 2312 * 26 + body
    assert traffic["working_set"] == 596_000 + 12 * 1300 * 9 + 4 * 2312 * 12 + body
    stream = record["floor"]["device_stream"]  # the CPU's sizes: 16 MiB once, 1 MiB four times
    assert stream["multiprocessors"] == 1 and stream["dram_bytes"] == 1 << 24 and stream["l2_bytes"] == 1 << 20
    assert stream["dram_gb_per_s"] > 0.0 and stream["l2_gb_per_s"] > 0.0
    # its tables for RESULTS (benchmarks/gpu_report.py), a failed section as its error
    record["slab"] = dict(error="RuntimeError: out of memory")
    record["blocks"] = {  # a one-snake variant's solve by phase, a column of its own
        "256 lanes × 1 block, cap none, 1 snakes": dict(ms_per_frame=35.2, phase_cycles=dict(update=2.0, lanczos=3.0)),
        "64 lanes × 1 block, cap none, 1024 snakes": dict(ms_per_frame=420.0),
    }
    out.write_text(json.dumps(record))
    report = subprocess.run(
        [sys.executable, "-P", str(ROOT / "benchmarks" / "gpu_report.py"), str(out)], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    text = report.stdout
    assert "Launches per solver step: slab 18, snake 22." in text and "slab: failed: RuntimeError" in text
    assert "One world of 51,840 tets" in text and "| each phase ends at |" in text
    assert "| product_particles |" in text  # the solve's phases (the stages' GPU times: CUDA only)
    assert "CSR blocks: cycles per iteration" in text
    assert "Bytes per MINRES iteration" in text and "### bandwidth floor of the solve" in text
    assert "| phase | 256 lanes × 1 block, cap none, 1 snakes |" in text and "| all | 5 |" in text
    assert "The whole device (multiprocessors: 1) streams" in text and "### bandwidth ceiling of the batch" in text
    assert "1024 snakes move 1.16 MB of their own per world" in text and "snake-steps/s (target 25,000)" in text
    bad = subprocess.run(
        [sys.executable, "-P", str(ROOT / "benchmarks" / "gpu_report.py"), str(tmp_path / "missing.json")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "cannot read" in bad.stderr


def test_blocks_section_records_a_variant_that_cannot_run(monkeypatch):
    monkeypatch.setattr(gpu_check, "BLOCK_VARIANTS", ((64, 64, None, 1, 4, 1), (256, 256, None, 2, 4, 1)))
    out = gpu_check.section_blocks("cpu", quick=True)
    ran, cluster = out.values()
    assert ran["ms_per_frame"] > 0.0 and ran["com_gap_mm"] == 0.0
    assert ran["phase_cycles"]["product_particles"] > 0.0 and len(ran["phase_cycles"]) == 9  # the solve's phases
    assert "thread-block cluster" in cluster["error"][-1]


def test_a_variant_stopped_at_its_timeout_keeps_what_it_printed():
    args = [sys.executable, "-c", "import sys, time; print('built', file=sys.stderr, flush=True); time.sleep(60)"]
    t0 = time.monotonic()
    code, _, err = gpu_check.run_with_timeout(args, dict(os.environ), timeout=2.0)
    assert code is None and err.strip() == "built" and time.monotonic() - t0 < 30.0


def test_tests_section_saves_each_verdict_and_stops_at_the_budget(monkeypatch, tmp_path):
    """A test file whose third test outlasts the run's budget: the section records the pass and the failure as they
    come (saved after each), then is stopped at the deadline (return code None) instead of holding the device."""
    tests = tmp_path / "test_three.py"
    tests.write_text("import time\n\ndef test_a():\n    pass\n\ndef test_b():\n    assert False\n\n"
                     "def test_c():\n    time.sleep(600)\n")  # fmt: skip
    saved = []
    monkeypatch.setattr(gpu_check, "TEST_FILES", (str(tests),))
    monkeypatch.setattr(gpu_check, "SAVE_PARTIAL", lambda p: saved.append((p["passed"], len(p["failed"]))))
    monkeypatch.setattr(gpu_check, "DEADLINE", time.monotonic() + 15.0)  # pytest starts in ~3 s
    out = gpu_check.section_tests("cpu", quick=True)
    assert out["returncode"] is None and out["seconds"] < 60.0
    assert out["passed"] == 1 and len(out["failed"]) == 1 and out["failed"][0].endswith("test_three.py::test_b")
    assert saved == [(1, 0), (1, 1)]


def test_variant_builds_list_each_cap_and_cluster_once():
    builds = gpu_check.variant_builds()
    stages = "step_common,step_primal,step_body_blocks"
    assert f"128 1 4 {stages} 256" in builds and f"- 8 4 {stages} 256" in builds
    assert f"- 1 1 {stages} 256" in builds  # the lanes' loops unbatched
    assert "128 1 4 step_primal 512" in builds and "64 1 4 step_primal 1024" in builds  # the solve's own block sizes
    assert len(builds) == len(set(builds))


def test_cache_misses_name_what_an_empty_cache_lacks(monkeypatch, tmp_path):
    """gpu_prepare.sh's check that the precompiled cache leaves nothing for a blocks variant to compile on the GPU: an
    empty cache lacks every module the variant launches, the solve's module at its own block size included."""
    monkeypatch.setenv("WARP_CACHE_PATH", str(tmp_path))
    monkeypatch.setattr(gpu_check, "BLOCK_VARIANTS", ((256, 512, 128, 1, 4, 1),))
    misses = gpu_check.variant_cache_misses()
    default, capped_name = "256 lanes (solve 256) × 1, cap none, batch 4", "256 lanes (solve 512) × 1, cap 128, batch 4"
    assert list(misses) == [default, capped_name]
    capped = misses[capped_name]
    assert {"step_primal (block 256)", "step_primal (block 512)", "step_common (block 256)"} <= set(capped)
    assert not any(m.startswith("step_dual") or m.startswith("lookup failed") for m in capped)
