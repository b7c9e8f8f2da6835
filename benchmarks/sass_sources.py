"""Where a stage kernel's GPU code comes from: its sm_90 instructions counted per Python function of softsnake (no GPU
needed), the measure of a kernel's size that `docs/solver.md` ("On a GPU") quotes for the linear solve.

    python -P benchmarks/sass_sources.py [--module step_primal] [--kernel newton_solve] [--depth 0] [--top 30]
                                         [--cache DIR] [--sass FILE] [--json FILE]

It compiles the module for sm_90 with line information (``wp.config.lineinfo``: ptxas records the source line of
every instruction and the chain of inlined calls it came through; Warp's ``line_directives`` make those lines the
Python ones) into ``--cache`` (default: a folder of its own beside Warp's kernel cache, so the ordinary cache keeps
its cubins without line information), disassembles the kernel with ``nvdisasm -gi`` (PyPI ``nvidia-cuda-nvdisasm``;
found on PATH or in that package) and counts its instructions by the softsnake function they belong to: ``--depth
0`` the innermost softsnake function (where the instruction's own source line lies), ``--depth k`` the chain of the
k outermost ones (the kernel, then the function it called, …), which tells two inlined copies of the same function
apart. ``--sass FILE`` reads a disassembly made before (``nvdisasm -gi -c CUBIN``) instead of compiling.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

#: an instruction line of nvdisasm's output: ``        /*0a30*/                   FFMA R4, R5, R6, R4 ;``
INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+\S")
#: a location in a line-information comment: ``//## File "PATH", line N`` or ``… inlined at "PATH", line N``
LOCATION = re.compile(r'"([^"]+\.py)", line (\d+)')


def kernel_section(sass: list[str], kernel: str) -> list[str]:
    """The lines of kernel ``kernel``'s text section (nvdisasm names it .text.<kernel>_<hash>_cuda_kernel_forward)."""
    start = next(
        (i for i, line in enumerate(sass) if line.startswith("//---") and f".text.{kernel}_" in line),
        None,
    )
    if start is None:
        raise SystemExit(f"sass_sources: no kernel {kernel!r} in the disassembly")
    end = next((i for i in range(start + 1, len(sass)) if sass[i].startswith("//---")), len(sass))
    return sass[start:end]


def instruction_chains(section: list[str]) -> Counter:
    """Instructions per chain of Python locations, innermost first: each instruction takes the line-information
    comments printed since the instruction before it (nvdisasm prints them where the location changes)."""
    counts: Counter = Counter()
    comments: list[str] = []
    chain: tuple = ()
    for line in section:
        if "//##" in line:
            comments.append(line)
        elif INSTRUCTION.match(line):
            if comments:
                locations: list[tuple[str, int]] = []
                for comment in comments:
                    for m in LOCATION.finditer(comment):
                        place = (m.group(1), int(m.group(2)))
                        if place not in locations:
                            locations.append(place)
                chain = tuple(locations)
                comments = []
            counts[chain] += 1
    return counts


class FunctionIndex:
    """The Python function that holds a source line (the innermost def around it), per file."""

    def __init__(self):
        self._spans: dict[str, list[tuple[int, int, str]]] = {}

    def name(self, path: str, line: int) -> str:
        if path not in self._spans:
            try:
                tree = ast.parse(Path(path).read_text())
            except (OSError, SyntaxError):
                tree = ast.Module(body=[], type_ignores=[])
            self._spans[path] = [
                (n.lineno, n.end_lineno, n.name) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
            ]
        inner = max((s for s in self._spans[path] if s[0] <= line <= s[1]), default=None, key=lambda s: s[0])
        return f"{Path(path).name}:{inner[2] if inner else '?'}"


def attribute(counts: Counter, depth: int, index: FunctionIndex | None = None) -> Counter:
    """Instructions per function: the innermost one of each chain (depth 0) or its ``depth`` outermost ones."""
    index = index or FunctionIndex()
    out: Counter = Counter()
    for chain, n in counts.items():
        if not chain:
            key = "(no source line)"
        elif depth == 0:
            key = index.name(*chain[0])
        else:
            key = " > ".join([index.name(*place) for place in reversed(chain)][:depth])
        out[key] += n
    return out


def find_nvdisasm() -> str:
    """nvdisasm from PATH, else from the nvidia-cuda-nvdisasm package."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    try:
        import nvidia  # namespace package of NVIDIA's PyPI wheels
    except ImportError:
        nvidia = None
    for base in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(base).glob("*/bin/nvdisasm")):
            return str(candidate)
    raise SystemExit("sass_sources: nvdisasm not found (pip install nvidia-cuda-nvdisasm, or put it on PATH)")


def compile_with_lines(module_name: str, cache: Path, arch: int) -> Path:
    """The module compiled for sm_<arch> with line information into ``cache`` by benchmarks/precompile_cuda.py (run
    in this process, with ``wp.config.lineinfo`` on); returns its newest cubin."""
    os.environ["WARP_CACHE_PATH"] = str(cache)
    import warp as wp

    wp.config.lineinfo = True
    wp.config.line_directives = True
    argv = sys.argv
    sys.argv = ["precompile_cuda.py", "--arch", str(arch), "--modules", module_name]
    try:
        runpy.run_path(str(Path(__file__).with_name("precompile_cuda.py")), run_name="__main__")
    finally:
        sys.argv = argv
    cubins = sorted(Path(wp.config.kernel_cache_dir).glob(f"wp_softsnake.kernels.{module_name}_*/*.sm{arch}.cubin"))
    if not cubins:
        raise SystemExit(f"sass_sources: no sm_{arch} cubin of {module_name} in {wp.config.kernel_cache_dir}")
    return max(cubins, key=lambda p: p.stat().st_mtime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", default="step_primal", help="stage module (the last part of its name)")
    ap.add_argument("--kernel", default="newton_solve", help="kernel of that module")
    ap.add_argument("--depth", type=int, default=0, help="0: innermost function; k: the k outermost of each chain")
    ap.add_argument("--top", type=int, default=30, help="rows printed")
    ap.add_argument("--arch", type=int, default=90, help="CUDA compute capability × 10 (default 90)")
    ap.add_argument("--cache", help="kernel cache for the build with line information")
    ap.add_argument("--sass", help="a disassembly made before (nvdisasm -gi -c CUBIN): no compile")
    ap.add_argument("--json", help="also write the counts to this JSON file")
    args = ap.parse_args()
    if args.sass:
        text = Path(args.sass).read_text()
    else:
        cache = Path(args.cache or Path.home() / ".cache" / "softsnake-lineinfo")
        cubin = compile_with_lines(args.module, cache, args.arch)
        text = subprocess.run([find_nvdisasm(), "-gi", "-c", str(cubin)], capture_output=True, text=True, check=True)
        text = text.stdout
    counts = instruction_chains(kernel_section(text.splitlines(), args.kernel))
    total = sum(counts.values())
    rows = attribute(counts, args.depth).most_common()
    print(f"{args.kernel}: {total} instructions (sm_{args.arch})")
    for name, n in rows[: args.top]:
        print(f"{n:7d} {100 * n / total:5.1f} %  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(kernel=args.kernel, total=total, rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
