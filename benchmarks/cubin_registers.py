"""Registers per thread and local memory of the softsnake stage kernels, read from the CUDA cubins in Warp's kernel
cache (no GPU needed): how many lanes a world's thread block can have, and how many blocks share a multiprocessor.

    python -P benchmarks/cubin_registers.py [--cache DIR] [--arch 90] [--block-dim 256 ...] [--newest] [--json FILE]

By default it reads the cubins of the stage modules as this checkout compiles them (Warp's module hash of the current
sources, at each ``--block-dim``, default 256; benchmarks/precompile_cuda.py fills the cache); ``--newest`` takes the
newest cubin of each stage module found in the cache instead, whatever sources it came from. Per kernel entry point
it prints the registers per thread, the stack frame in local memory (bytes per thread: spilled registers and local
arrays), the static shared memory per block, and the largest block the register file allows (a multiprocessor's
65,536 registers, allocated per warp in units of 8 per thread: ⌊65,536 / (regs rounded up to 8) / 32⌋ × 32,
at most 1024).

A cubin is an ELF file: ptxas records each function's register count (attribute EIATTR_REGCOUNT, 0x2f) and frame
size (EIATTR_FRAME_SIZE, 0x11) in the ``.nv.info`` section, each naming the function by its index in ``.symtab``;
``.nv.info.<kernel>`` holds the kernel's register cap (EIATTR_MAXREG_COUNT, 0x1b) and ``.nv.shared.<kernel>`` its
static shared memory.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

#: the softsnake modules whose kernels run one thread block per world (kernels/step_*.py)
STAGE_MODULES = ("step_common", "step_primal", "step_body_blocks", "step_dual")

#: .nv.info attributes read here (CUDA's EIATTR codes)
EIATTR_FRAME_SIZE = 0x11
EIATTR_MIN_STACK_SIZE = 0x12
EIATTR_MAXREG_COUNT = 0x1B
EIATTR_REGCOUNT = 0x2F

#: .nv.info record formats: no value, a byte, a 16-bit value, a 16-bit length followed by that many bytes
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4

#: a Hopper multiprocessor's register file; registers are allocated per warp in units of 8 per thread
REGISTER_FILE = 65536
REGISTER_UNIT = 8
WARP = 32
MAX_BLOCK = 1024

#: Warp's name of a kernel entry point: ``<key>_<8 hex digits of its hash>_cuda_kernel_forward``
ENTRY = re.compile(r"^(?P<key>.+)_[0-9a-f]{8}_cuda_kernel_forward$")


@dataclass
class KernelResources:
    """What ptxas allocated for one function of a cubin (None: the cubin does not say)."""

    regs: int | None = None
    frame_bytes: int | None = None
    min_stack_bytes: int | None = None
    max_regs: int | None = None
    shared_bytes: int | None = None


def max_threads_per_block(regs: int) -> int:
    """The largest block (a multiple of the warp size, at most 1024 threads) whose registers fit one multiprocessor's
    register file at ``regs`` registers per thread."""
    per_thread = -(-max(regs, 1) // REGISTER_UNIT) * REGISTER_UNIT
    return min(MAX_BLOCK, REGISTER_FILE // per_thread // WARP * WARP)


def _sections(data: bytes) -> list[tuple[str, int, int, int]]:
    """(name, file offset, size, sh_link) of each section of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file (a CUDA cubin)")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    # Elf64_Shdr: name, type, flags, addr, offset, size, link, info, addralign, entsize
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    return [(_cstring(data, names_at + h[0]), h[4], h[5], h[6]) for h in headers]


def _cstring(data: bytes, offset: int) -> str:
    return data[offset : data.index(b"\0", offset)].decode("utf-8", "replace")


def _symbol_names(data: bytes, sections) -> list[str]:
    """Names of the ``.symtab`` entries, by index (Elf64_Sym: 24 bytes, its name first)."""
    for name, offset, size, link in sections:
        if name == ".symtab":
            strings = sections[link][1]
            names = (struct.unpack_from("<I", data, offset + 24 * i)[0] for i in range(size // 24))
            return [_cstring(data, strings + name) for name in names]
    raise ValueError("the cubin has no .symtab")


def _records(data: bytes, offset: int, size: int):
    """The (attribute, value bytes) records of one .nv.info section."""
    p, end = offset, offset + size
    while p < end:
        fmt, attr = data[p], data[p + 1]
        if fmt == EIFMT_SVAL:
            (length,) = struct.unpack_from("<H", data, p + 2)
            yield attr, data[p + 4 : p + 4 + length]
            p += 4 + length
        elif fmt in (EIFMT_BVAL, EIFMT_HVAL):
            yield attr, data[p + 2 : p + 4]
            p += 4
        elif fmt == EIFMT_NVAL:
            yield attr, b""
            p += 2
        else:
            raise ValueError(f"unknown .nv.info record format {fmt:#x} at byte {p}")


def read_cubin(path: str | os.PathLike) -> dict[str, KernelResources]:
    """Every function of a cubin that ptxas gave a register count or a frame, by symbol name."""
    data = Path(path).read_bytes()
    sections = _sections(data)
    symbols = _symbol_names(data, sections)
    out: dict[str, KernelResources] = {}
    per_symbol = {EIATTR_REGCOUNT: "regs", EIATTR_FRAME_SIZE: "frame_bytes", EIATTR_MIN_STACK_SIZE: "min_stack_bytes"}
    for name, offset, size, _ in sections:
        if name == ".nv.info":  # global: (symbol index, value) pairs
            for attr, value in _records(data, offset, size):
                if attr in per_symbol and len(value) == 8:
                    index, number = struct.unpack("<II", value)
                    setattr(out.setdefault(symbols[index], KernelResources()), per_symbol[attr], number)
    for name, offset, size, _ in sections:
        if name.startswith(".nv.info.") and name[9:] in out:  # per kernel: its register cap
            for attr, value in _records(data, offset, size):
                if attr == EIATTR_MAXREG_COUNT and len(value) == 2:
                    out[name[9:]].max_regs = struct.unpack("<H", value)[0]
        elif name.startswith(".nv.shared.") and name[11:] in out:
            out[name[11:]].shared_bytes = size
    return out


def entry_points(path: str | os.PathLike) -> dict[str, KernelResources]:
    """The forward kernel entry points of a Warp cubin, by kernel name (Warp's hash suffix dropped)."""
    out = {}
    for symbol, res in read_cubin(path).items():
        match = ENTRY.match(symbol)
        if match:
            out[match["key"]] = res
    return out


def current_cubins(cache: Path, arch: int, block_dims: list[int]) -> list[tuple[str, int, Path]]:
    """(module, block size, cubin path) of each stage module as this checkout's sources compile it (Warp's module
    identifier, as softsnake.sim.warp_runtime.kernels_to_compile looks it up); the path may not exist."""
    import importlib

    from warp._src.context import user_modules  # private: the registry of loaded Warp modules

    for name in STAGE_MODULES:
        importlib.import_module(f"softsnake.kernels.{name}")
    out = []
    for name in STAGE_MODULES:
        module = user_modules[f"softsnake.kernels.{name}"]
        for block_dim in block_dims:
            ident = module.get_module_identifier(block_dim)
            filename = module._get_compile_output_name(None, output_arch=arch, use_ptx=False, block_dim=block_dim)
            out.append((name, block_dim, cache / ident / filename))
    return out


def newest_cubins(cache: Path, arch: int) -> list[tuple[str, int | None, Path]]:
    """(module, None, cubin path) of the newest cubin of each stage module in the cache, whatever its sources."""
    out = []
    for name in STAGE_MODULES:
        found = sorted(cache.glob(f"wp_softsnake.kernels.{name}_*/*.sm{arch}.cubin"), key=lambda p: p.stat().st_mtime)
        if found:
            out.append((name, None, found[-1]))
    return out


def measure(cubins: list[tuple[str, int | None, Path]]) -> tuple[list[dict], list[str]]:
    """One row per kernel entry point of the cubins that exist; the paths of those that do not."""
    rows, missing = [], []
    for module, block_dim, path in cubins:
        if not path.is_file():
            missing.append(str(path))
            continue
        for kernel, res in sorted(entry_points(path).items()):
            row = dict(module=module, block_dim=block_dim, kernel=kernel, **asdict(res))
            row["max_threads_per_block"] = max_threads_per_block(res.regs) if res.regs is not None else None
            row["cubin"] = f"{path.parent.name}/{path.name}"
            rows.append(row)
    return rows, missing


def table(rows: list[dict]) -> str:
    head = f"{'module':<17} {'block':>5} {'kernel':<28} {'regs':>4} {'frame B':>7} {'shared B':>8} {'max block':>9}"
    lines = [head, "-" * len(head)]
    for r in rows:
        block = "" if r["block_dim"] is None else str(r["block_dim"])
        fmt = lambda v: "?" if v is None else str(v)  # noqa: E731
        lines.append(
            f"{r['module']:<17} {block:>5} {r['kernel']:<28} {fmt(r['regs']):>4} {fmt(r['frame_bytes']):>7} "
            f"{fmt(r['shared_bytes']):>8} {fmt(r['max_threads_per_block']):>9}"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="Warp kernel cache folder (default: Warp's, i.e. $WARP_CACHE_PATH/<version>)")
    ap.add_argument("--arch", type=int, default=90, help="CUDA compute capability × 10 of the cubins (default 90)")
    ap.add_argument(
        "--block-dim", type=int, action="append", default=[], help="stage block size to read (default 256; repeat)"
    )
    ap.add_argument("--newest", action="store_true", help="the newest cubin of each stage module, whatever its sources")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    import warp as wp

    from softsnake.sim.warp_runtime import init_warp

    init_warp()
    cache = Path(args.cache) if args.cache else Path(wp.config.kernel_cache_dir)
    if args.newest:
        cubins = newest_cubins(cache, args.arch)
    else:
        cubins = current_cubins(cache, args.arch, sorted(set(args.block_dim or [256])))
    rows, missing = measure(cubins)
    print(f"kernel cache: {cache}  (sm_{args.arch}, {'newest cubins' if args.newest else 'current sources'})")
    print(table(rows))
    for path in missing:
        print(f"not in the cache: {path}", file=sys.stderr)
    if args.json:
        record = dict(
            cache=str(cache),
            arch=args.arch,
            match="newest" if args.newest else "current",
            warp=wp.__version__,
            register_file=REGISTER_FILE,
            rows=rows,
            missing=missing,
        )
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0 if rows and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
