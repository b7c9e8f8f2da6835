"""Every Warp kernel marks its argument groups the same way (MuJoCo Warp's convention): the parameter list opens with
a group marker, and the markers are the ones below."""

import ast
import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
MARKERS = {"Model", "In", "Out", "In/out", "Data in/out", "Iteration"}


def test_every_kernel_marks_its_argument_groups():
    checked = 0
    for path in sorted(KERNELS.glob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef):
                continue
            if not any("kernel" in ast.unparse(d) for d in node.decorator_list):
                continue
            first_param = node.args.args[0].lineno
            signature = lines[node.lineno : first_param - 1]  # the lines between "def name(" and the first parameter
            marker = [re.fullmatch(r"\s*# (.+):", line) for line in signature]
            assert marker and marker[-1] and marker[-1].group(1) in MARKERS, (
                f"{path.name}:{node.lineno} {node.name}: no group marker before its first parameter"
            )
            body = lines[first_param - 1 : node.body[0].lineno - 1]
            for line in body:
                m = re.fullmatch(r"\s*# (.+):", line)
                if m:
                    assert m.group(1) in MARKERS, (
                        f"{path.name}:{node.lineno} {node.name}: unknown group marker {m.group(1)!r}"
                    )
            checked += 1
    assert checked >= 20  # every stage kernel and the small ones


def test_stage_modules_are_rebuilt_when_any_kernel_source_changes(tmp_path):
    """The stage modules reach the row families' functions through wp.static expressions, which Warp hashes only when
    it generates code, after its cache lookup; so they carry a digest of every kernel source as a module option
    (kernels/block.py), and an edit anywhere in kernels/ gives them a new hash."""
    import shutil

    from softsnake.kernels import step_body_blocks, step_common, step_dual, step_primal
    from softsnake.kernels.block import kernels_source_digest

    digest = kernels_source_digest()
    for module in (
        step_common.predict,
        step_primal.warm_start,
        step_dual.warm_start,
        step_body_blocks.factor_body_blocks,
    ):
        assert module.module.options["softsnake_kernels_source"] == digest
    for path in KERNELS.glob("*.py"):
        shutil.copy(path, tmp_path / path.name)
    assert kernels_source_digest(tmp_path) == digest
    friction = tmp_path / "friction.py"
    friction.write_text(
        friction.read_text().replace("return wp.vec2(a1 * k, a2 * k)", "return wp.vec2(a1 * k, a2 * k)  # edited")
    )
    assert kernels_source_digest(tmp_path) != digest
