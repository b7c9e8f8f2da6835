"""benchmarks/sass_sources.py's count of a kernel's instructions per Python function, on a disassembly written here in
nvdisasm's ``-gi`` form (line-information comments with their chains of inlined calls before the instructions)."""

from __future__ import annotations

import importlib.util
import sys

from cli_helpers import ROOT

spec = importlib.util.spec_from_file_location("sass_sources", ROOT / "benchmarks" / "sass_sources.py")
sass_sources = sys.modules["sass_sources"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sass_sources)

SOURCE = """
def outer():
    inner()
    inner()


def inner():
    return 1
"""


def disassembly(path: str) -> str:
    """Two kernels; the first has an instruction of ``outer`` itself, two of ``inner`` inlined at its line 3 (the
    second from a header inlined into it) and one of ``inner`` inlined at its line 4."""
    inline = f'"{path}", line 8 inlined at "{path}", line 3'
    return f"""
//--------------------- .text.solve_0123abcd_cuda_kernel_forward --------------------------
\t//## File "{path}", line 3
        /*0000*/                   MOV R1, c[0x0][0x28] ;
\t//## File "{path}", line 8 inlined at "{path}", line 3
        /*0010*/                   FFMA R4, R5, R6, R4 ;
\t//## File "/warp/native/vec.h", line 9 inlined at {inline}
        /*0020*/                   FADD R4, R4, R7 ;
\t//## File "{path}", line 8 inlined at "{path}", line 4
        /*0030*/                   FMUL R4, R4, R4 ;
//--------------------- .text.other_89abcdef_cuda_kernel_forward --------------------------
\t//## File "{path}", line 8
        /*0000*/                   EXIT ;
"""


def test_instructions_are_counted_per_function_and_per_call_chain(tmp_path):
    source = tmp_path / "kernels.py"
    source.write_text(SOURCE)
    lines = disassembly(str(source)).splitlines()
    counts = sass_sources.instruction_chains(sass_sources.kernel_section(lines, "solve"))
    assert sum(counts.values()) == 4  # the other kernel's instruction is not the solve's
    innermost = sass_sources.attribute(counts, 0)
    assert innermost == {"kernels.py:outer": 1, "kernels.py:inner": 3}
    # by the outermost two functions of each chain: the copies inlined at lines 3 and 4 are both outer > inner, but
    # each chain keeps its own instructions (the header's instruction belongs to the copy at line 3)
    chains = sass_sources.attribute(counts, 2)
    assert chains == {"kernels.py:outer": 1, "kernels.py:outer > kernels.py:inner": 3}
    by_call_site = {3: 0, 4: 0}
    for chain, n in counts.items():
        by_call_site[chain[-1][1]] += n
    assert by_call_site == {3: 3, 4: 1}
