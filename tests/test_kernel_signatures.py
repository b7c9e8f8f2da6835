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
            assert marker and marker[-1] and marker[-1].group(1) in MARKERS, f"{path.name}:{node.lineno} {node.name}: no group marker before its first parameter"
            body = lines[first_param - 1 : node.body[0].lineno - 1]
            for line in body:
                m = re.fullmatch(r"\s*# (.+):", line)
                if m:
                    assert m.group(1) in MARKERS, f"{path.name}:{node.lineno} {node.name}: unknown group marker {m.group(1)!r}"
            checked += 1
    assert checked >= 20  # every stage kernel and the small ones
