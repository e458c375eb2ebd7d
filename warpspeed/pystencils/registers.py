"""Registers per thread of a pystencils kernel: ``nvcc`` when it is
installed, else a conservative estimate (MODEL.md §3: the register limit of
the occupancy; §13: approximations).

:func:`kernel_registers` is what the generation hook and the CLI use. Its
answer names its source: ``"nvcc sm_80"`` (the count ``ptxas`` reports for
the machine's architecture), ``"estimate"`` with the reason nvcc did not
give the count (not installed, an AMD architecture, a HIP kernel, a failed
compilation, or the estimate asked for; a kernel's ``registers_source``
reads ``"estimate: nvcc is not installed"``) or ``"user"`` (a count the
caller gave). nvcc runs once per kernel source,
architecture and nvcc installation: the answers are cached in memory and
on disk (:func:`warpspeed.input.compiler.cache_dir`: ``$WARPSPEED_CACHE_DIR``, else
``$XDG_CACHE_HOME/warpspeed``, else ``~/.cache/warpspeed``; one small JSON
file per count, safe to delete), so a code generator that regenerates the
same kernels pays for nvcc once.

**The estimate** (:func:`estimate_registers`) is approximated, not a
compiler: it counts 32-bit register words of the values a thread may hold
at once if every load is issued before the first use (compilers hoist loads
to hide their latency) and every temporary lives to the end of the thread:

* ``8`` words of thread indices, guard and address arithmetic;
* each pointer parameter 2 words, each scalar parameter its size;
* each distinct load of the thread (field element, after merging repeated
  addresses) its size, 2 words for a double;
* each declared non-constant value of the kernel body its size (a ``double``
  temporary 2 words, a 64-bit index 2 words, a float or ``int32`` 1);
* each distinct function call (``exp(...)``, ``sqrt(...)``) its result's
  size, kept for reuse, plus 16 words once for the library routine itself.

It is capped at 255 (the most a thread can have). Because nothing is ever
freed, it is at or above nvcc's count on every kernel of the corpus
(``tests/benchmarks/bench_registers.py``: 58 kernels, nvcc 13.0, sm_80;
``tests/test_registers.py`` checks six of them); a kernel whose compiler
keeps many more common subexpressions alive than it declares could exceed
it, so the output names the estimate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Any

from pystencils.backend.ast.expressions import PsCall, PsConstantExpr, PsLiteralExpr
from pystencils.backend.ast.structural import PsDeclaration
from pystencils.types import PsPointerType

from ..errors import KernelError
from ..family import family_of_target
from ..input.compiler import RegisterCount, cached_count, nvcc_arch, nvcc_available
from ..input.kernel import Kernel
from .nvcc import pystencils_source

#: Words (32-bit registers) of thread indices, guard and address arithmetic.
OVERHEAD = 8
MAX_REGISTERS = 255
#: Words a math library routine (exp, pow, a double division, ...) uses itself.
CALL_SCRATCH = 16


@dataclass(frozen=True)
class Registers:
    """Registers per thread and where the count comes from."""

    count: int
    source: str
    note: str = ""


def _words(dtype: Any) -> int:
    if isinstance(dtype, PsPointerType):
        return 2
    size = getattr(dtype, "itemsize", None)
    return max(1, math.ceil(size / 4)) if isinstance(size, int) else 2


def _nodes(node: Any) -> tuple[list[PsDeclaration], dict[str, PsCall]]:
    """The declarations and the distinct function calls under ``node``."""
    decls: list[PsDeclaration] = []
    calls: dict[str, PsCall] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, PsDeclaration):
            decls.append(n)
        elif isinstance(n, PsCall):
            calls.setdefault(repr(n), n)
        stack.extend(getattr(n, "children", ()))
    return decls, calls


def estimate_registers(kernel_function: Any, kernel: Kernel) -> int:
    """Conservative registers per thread of a pystencils GPU kernel whose
    extracted form is ``kernel`` (module docstring: how it is approximated)."""
    words = OVERHEAD
    words += sum(_words(p.dtype) for p in getattr(kernel_function, "parameters", ()))
    decls, calls = _nodes(kernel_function.body)
    for decl in decls:
        if isinstance(decl.rhs, (PsConstantExpr, PsLiteralExpr)):
            continue  # folded into the instructions
        words += _words(decl.lhs.symbol.dtype if hasattr(decl.lhs, "symbol") else None)
    if calls:  # results kept for reuse, and the library routine's own registers
        words += CALL_SCRATCH + sum(_words(getattr(c, "dtype", None)) for c in calls.values())
    words += sum(max(1, a.field.itemsize // 4) for a in kernel.loads)
    words += sum(max(1, g.field.itemsize // 4) for g in kernel.gathers
                 if hasattr(g, "field"))
    return min(MAX_REGISTERS, words)


def nvcc_registers(kernel_function: Any, arch: str) -> RegisterCount:
    """nvcc's count for ``arch`` of a pystencils kernel, cached per kernel
    source and architecture (:func:`cached_count`)."""
    source, includes = pystencils_source(kernel_function)
    return cached_count(source, includes, arch)


def _is_hip(kernel_function: Any) -> bool:
    """Whether pystencils generated ``kernel_function`` for HIP."""
    return getattr(getattr(kernel_function, "target", None), "name", None) == "HIP"


def kernel_registers(
    kernel_function: Any,
    kernel: Kernel,
    arch: str | None,
    given: int | str | None = None,
    counter: Callable[[Any, str], RegisterCount] = nvcc_registers,
) -> Registers:
    """Registers per thread of a pystencils kernel (module docstring).

    ``given``: an integer (the caller's count, source ``"user"``),
    ``"estimate"`` (never run nvcc), or ``None`` / ``"nvcc"`` (nvcc for
    ``arch`` when installed and it compiles, else the estimate with the
    reason in :attr:`Registers.note`)."""
    if isinstance(given, int) and not isinstance(given, bool):
        if not 1 <= given <= MAX_REGISTERS:
            raise KernelError(f"registers per thread must be 1..255, got {given}")
        return Registers(given, "user")
    if given not in (None, "nvcc", "estimate"):
        raise KernelError(
            f"registers must be a count (1..255), 'nvcc' or 'estimate', got {given!r}"
        )
    estimate = estimate_registers(kernel_function, kernel)
    if given == "estimate":
        return Registers(estimate, "estimate", "registers='estimate' given")
    if not arch:
        return Registers(estimate, "estimate", "the machine file names no arch for nvcc")
    if not nvcc_arch(arch):
        family = family_of_target(arch)
        return Registers(estimate, "estimate", f"no nvcc for {family.vendor} ({arch})" if family
                         else f"nvcc does not compile for {arch}")
    if _is_hip(kernel_function):
        return Registers(estimate, "estimate", "the kernel was generated for HIP, nvcc compiles "
                         "CUDA")
    count = counter(kernel_function, arch)
    if count.registers is None:
        return Registers(estimate, "estimate", count.reason)
    return Registers(count.registers, f"nvcc {arch}")


def start_count(
    pool: Executor, kernel_function: Any, arch: str | None, given: int | str | None
) -> Future[RegisterCount] | None:
    """Start nvcc on ``kernel_function`` in ``pool`` when :func:`kernel_registers`
    will ask for it (``given`` None or ``"nvcc"``, an ``arch``, nvcc
    installed); its source is printed here, in the caller's thread."""
    if (given not in (None, "nvcc") or not arch or not nvcc_arch(arch)
            or _is_hip(kernel_function) or not nvcc_available()):
        return None
    source, includes = pystencils_source(kernel_function)
    return pool.submit(cached_count, source, includes, arch)


def with_registers(
    kernel: Kernel,
    kernel_function: Any,
    arch: str | None,
    given: int | str | None,
    pending: Future[RegisterCount] | None = None,
) -> tuple[Kernel, str | None]:
    """``kernel`` with the registers of :func:`kernel_registers` (the count
    of ``pending`` when nvcc was started by :func:`start_count`), and a note
    when the estimate stands in for nvcc. The kernel's ``registers_source``
    is the source with, for the estimate, the reason (``"estimate: nvcc is
    not installed"``, MODEL.md §14)."""
    def counter(kf: Any, a: str) -> RegisterCount:
        return pending.result() if pending is not None else nvcc_registers(kf, a)

    r = kernel_registers(kernel_function, kernel, arch, given, counter)
    note = None
    if r.source == "estimate":
        note = (f"registers per thread: {r.count}, a conservative estimate "
                f"({r.note}; warpspeed.pystencils.registers says how it is counted)")
    source = f"{r.source}: {r.note}" if r.source == "estimate" and r.note else r.source
    return replace(kernel, registers=r.count, registers_source=source), note


__all__ = [
    "CALL_SCRATCH",
    "MAX_REGISTERS",
    "OVERHEAD",
    "Registers",
    "cached_count",
    "estimate_registers",
    "kernel_registers",
    "nvcc_available",
    "nvcc_registers",
    "start_count",
    "with_registers",
]
