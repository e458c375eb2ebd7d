"""The pystencils front end's part of the register count (MODEL.md §1:
"registers per thread if known (default 32)"): the compilable CUDA source
of a pystencils kernel, which it feeds to the neutral compiler module
(:mod:`warpspeed.input.compiler`: ``nvcc`` when it is installed, the count
``ptxas`` reports for the machine's architecture, ``Machine.arch``); it
feeds the register limit of the occupancy (MODEL.md §3).
"""

from __future__ import annotations

import os
from typing import Any

from ..input.compiler import RegisterCount, register_count


def pystencils_source(kernel_function: Any) -> tuple[str, tuple[str, ...]]:
    """Compilable CUDA source of a pystencils kernel and its include folders."""
    import pystencils as ps

    headers = "".join(f"#include {h}\n" for h in sorted(kernel_function.required_headers))
    source = headers + "#define RESTRICT __restrict__\n" + kernel_function.get_c_code()
    return source, (os.path.join(os.path.dirname(ps.__file__), "include"),)


def pystencils_registers(kernel_function: Any, arch: str) -> RegisterCount:
    """Registers per thread of a pystencils GPU kernel, via nvcc if present."""
    source, includes = pystencils_source(kernel_function)
    return register_count(source, arch, includes)
