"""benchmarks/cubin_registers.py's cubin reader on a small ELF file made here (the layout ptxas writes: registers and
frame per function in ``.nv.info``, the register cap in ``.nv.info.<kernel>``, static shared memory as the size of
``.nv.shared.<kernel>``), and the block size the register file allows."""

from __future__ import annotations

import importlib.util
import struct
import sys

import pytest

from cli_helpers import ROOT

spec = importlib.util.spec_from_file_location("cubin_registers", ROOT / "benchmarks" / "cubin_registers.py")
cubin_registers = sys.modules["cubin_registers"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cubin_registers)

KERNEL = "solve_0123abcd_cuda_kernel_forward"
HELPER = "$__internal_0_$__cuda_sm20_div_u64"


def svals(*records: tuple[int, bytes]) -> bytes:
    """.nv.info records of format EIFMT_SVAL (length-prefixed value)."""
    return b"".join(struct.pack("<BBH", 4, attr, len(value)) + value for attr, value in records)


def fake_cubin() -> bytes:
    """A 64-bit ELF file with a .symtab of two functions and the sections the reader looks at."""
    symbol_names = b"\0" + KERNEL.encode() + b"\0" + HELPER.encode() + b"\0"
    kernel_at, helper_at = 1, 2 + len(KERNEL)
    # Elf64_Sym: name, info, other, section, value, size (entry 0 is null)
    symtab = bytes(24) + b"".join(struct.pack("<IBBHQQ", at, 0x12, 0, 0, 0, 0) for at in (kernel_at, helper_at))
    info = svals(
        (0x2F, struct.pack("<II", 1, 152)),  # REGCOUNT: the kernel, 152
        (0x11, struct.pack("<II", 1, 40)),  # FRAME_SIZE: the kernel, 40 bytes
        (0x12, struct.pack("<II", 1, 0)),  # MIN_STACK_SIZE
        (0x11, struct.pack("<II", 2, 16)),  # FRAME_SIZE: the helper
    )
    kernel_info = struct.pack("<BBH", 3, 0x1B, 255) + struct.pack("<BBH", 2, 0x4C, 1) + svals((0x37, bytes(4)))
    sections = [
        (".symtab", symtab, 2),  # sh_link: the .strtab below
        (".strtab", symbol_names, 0),
        (".nv.info", info, 0),
        (".nv.info." + KERNEL, kernel_info, 0),
        (".nv.shared." + KERNEL, bytes(2048), 0),
    ]
    names = b"\0.shstrtab\0" + b"".join(n.encode() + b"\0" for n, _, _ in sections)
    sections.append((".shstrtab", names, 0))
    body, headers = b"", [bytes(64)]
    offset = 64
    for name, data, link in sections:
        name_at = names.index(b"\0" + name.encode() + b"\0") + 1
        # the null section first: .symtab is section 1, .strtab section 2
        headers.append(struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, offset + len(body), len(data), link, 0, 1, 0))
        body += data
    shoff = offset + len(body)
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, len(headers), len(headers) - 1)
    return bytes(header) + body + b"".join(headers)


def test_reads_registers_frame_cap_and_shared_memory(tmp_path):
    path = tmp_path / "wp_m_0000000.sm90.cubin"
    path.write_bytes(fake_cubin())
    found = cubin_registers.read_cubin(path)
    assert found[KERNEL] == cubin_registers.KernelResources(
        regs=152, frame_bytes=40, min_stack_bytes=0, max_regs=255, shared_bytes=2048
    )
    assert found[HELPER].frame_bytes == 16 and found[HELPER].regs is None
    assert list(cubin_registers.entry_points(path)) == ["solve"]


def test_rejects_a_file_that_is_not_a_cubin(tmp_path):
    path = tmp_path / "x.cubin"
    path.write_bytes(b"not an ELF file" + bytes(64))
    with pytest.raises(ValueError):
        cubin_registers.read_cubin(path)


@pytest.mark.parametrize("regs, threads", [(32, 1024), (56, 1024), (64, 1024), (110, 576), (152, 416), (255, 256)])
def test_largest_block_the_register_file_allows(regs, threads):
    assert cubin_registers.max_threads_per_block(regs) == threads
