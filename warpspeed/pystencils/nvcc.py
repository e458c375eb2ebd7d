"""Registers per thread from ``nvcc``, when it is installed (MODEL.md §1:
"registers per thread if known (default 32)").

``nvcc`` is optional: without it, or when the compilation fails, the
answer says why and callers keep the default. The count is the one ``ptxas``
reports for the machine's architecture (``Machine.arch``); it feeds the
register limit of the occupancy (MODEL.md §3).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Any

DEFAULT_REGISTERS = 32
_USED = re.compile(r"Used (\d+) registers")


@dataclass(frozen=True)
class RegisterCount:
    """Registers per thread, or ``None`` with the reason it is unknown."""

    registers: int | None
    reason: str

    def or_default(self) -> int:
        return self.registers if self.registers is not None else DEFAULT_REGISTERS


def parse_ptxas(output: str) -> int | None:
    """The largest register count ``ptxas -v`` reports (one line per kernel)."""
    counts = [int(m) for m in _USED.findall(output)]
    return max(counts) if counts else None


def register_count(
    source: str, arch: str, include_dirs: tuple[str, ...] = (), timeout: float = 120.0
) -> RegisterCount:
    """Compile CUDA ``source`` for ``arch`` (e.g. ``"sm_80"``) and read the
    register count. Never raises for a missing or failing ``nvcc``."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return RegisterCount(None, "nvcc is not installed")
    with tempfile.TemporaryDirectory(prefix="warpspeed-nvcc-") as tmp:
        path = os.path.join(tmp, "kernel.cu")
        with open(path, "w") as fh:
            fh.write(source)
        cmd = [nvcc, f"-arch={arch}", "-cubin", "--resource-usage", "-o",
               os.path.join(tmp, "kernel.cubin"), path]
        for inc in include_dirs:
            cmd[1:1] = ["-I", inc]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return RegisterCount(None, f"nvcc failed to run: {exc}")
    if res.returncode != 0:
        first = (res.stderr.strip().splitlines() or ["no message"])[0]
        return RegisterCount(None, f"nvcc failed: {first}")
    regs = parse_ptxas(res.stdout + res.stderr)
    if regs is None:
        return RegisterCount(None, "nvcc reported no register count")
    return RegisterCount(regs, f"nvcc -arch={arch}")


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
