"""Registers per thread of a pystencils kernel: ``nvcc`` when it is
installed, else an estimate from its code (MODEL.md §3: the register limit of
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

**The estimate** (:func:`estimate_registers`, :mod:`.register_estimate`) is
approximated, not a compiler: the most register words the thread holds at
any statement of its code, a value held from its first use to its last.
It is neither above nor below nvcc's count everywhere; what matters for a
ranking is that it launches the blocks nvcc's count launches. On the
project's H200 measurements it launches every block that ran and refuses
every one that failed; over the corpus it refuses launchable blocks on 5
of 59 kernels (the old count, which kept every value to the end of the
thread, on 25) and offers none that fails. The output names the estimate.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Any

from ..errors import KernelError
from ..family import family_of_target
from ..input.compiler import (
    RegisterCount,
    cached_count,
    nvcc_arch,
    nvcc_available,
    nvcc_missing_reason,
)
from ..input.kernel import Kernel
from .nvcc import pystencils_source
from .register_estimate import CALL_SCRATCH, MAX_REGISTERS, OVERHEAD, estimate_registers


@dataclass(frozen=True)
class Registers:
    """Registers per thread and where the count comes from."""

    count: int
    source: str
    note: str = ""




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
    arch: str | None,
    given: int | str | None = None,
    counter: Callable[[Any, str], RegisterCount] = nvcc_registers,
    cells: int = 1,
) -> Registers:
    """Registers per thread of a pystencils kernel whose thread updates
    ``cells`` cells (module docstring).

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
    estimate = estimate_registers(kernel_function, cells)
    if given == "estimate":
        return Registers(estimate, "estimate", "registers='estimate' given")
    return _for_arch(estimate, arch, _is_hip(kernel_function),
                     lambda a: counter(kernel_function, a))


def _for_arch(estimate: int, arch: str | None, hip: bool,
              count: Callable[[str], RegisterCount]) -> Registers:
    """nvcc's ``count`` for ``arch`` where nvcc can give one, else the
    ``estimate`` with the reason (:func:`kernel_registers`)."""
    if not arch:
        return Registers(estimate, "estimate", "the machine file names no arch for nvcc")
    if not nvcc_arch(arch):
        family = family_of_target(arch)
        return Registers(estimate, "estimate", f"no nvcc for {family.vendor} ({arch})" if family
                         else f"nvcc does not compile for {arch}")
    if hip:
        return Registers(estimate, "estimate", "the kernel was generated for HIP, nvcc compiles "
                         "CUDA")
    counted = count(arch)
    if counted.registers is None:
        return Registers(estimate, "estimate", counted.reason)
    return Registers(counted.registers, f"nvcc {arch}")


def _source_text(r: Registers) -> str:
    """A kernel's ``registers_source``: the source, with the reason for an estimate."""
    return f"{r.source}: {r.note}" if r.source == "estimate" and r.note else r.source


@dataclass(frozen=True)
class ArchCounter:
    """The registers of one pystencils kernel for any machine's ``arch``, as
    :func:`kernel_registers` gives them (nvcc's count, cached, else the
    estimate and why): a kernel made without a machine carries it
    (``Kernel.register_counter``), and ``ws.predict`` / ``ws.rank`` count
    for theirs. It holds the kernel's CUDA source where nvcc is installed
    (none without: every answer is then the estimate), and pickles."""

    source: str
    includes: tuple[str, ...]
    estimate: int
    hip: bool
    #: The kernel's ``(registers, registers_source)`` when it got the counter:
    #: a count set since is the caller's (``warpspeed.input.kernel.counted_for``).
    origin: tuple[int, str]

    def __call__(self, arch: str | None) -> tuple[int, str]:
        r = _for_arch(self.estimate, arch, self.hip, self._nvcc)
        return r.count, _source_text(r)

    def _nvcc(self, arch: str) -> RegisterCount:
        if not self.source:
            return RegisterCount(None, nvcc_missing_reason())
        return cached_count(self.source, self.includes, arch)


def arch_counter(kernel_function: Any, estimate: int, origin: tuple[int, str]) -> ArchCounter:
    """The :class:`ArchCounter` of a pystencils kernel whose estimate is
    ``estimate`` and whose count is now ``origin``."""
    hip = _is_hip(kernel_function)
    source, includes = (pystencils_source(kernel_function) if nvcc_available() and not hip
                        else ("", ()))
    return ArchCounter(source, includes, estimate, hip, origin)


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
    not installed"``, MODEL.md §14). Unless ``given`` fixes the count, the
    kernel carries its :class:`ArchCounter`: a prediction or ranking on a
    machine of another ``arch`` (or with ``arch`` None, none yet) counts
    again for it."""
    def counter(kf: Any, a: str) -> RegisterCount:
        return pending.result() if pending is not None else nvcc_registers(kf, a)

    cells = kernel.lups_per_thread
    r = kernel_registers(kernel_function, arch, given, counter, cells)
    note = None
    if r.source == "estimate":
        note = (f"registers per thread: {r.count}, an estimate "
                f"({r.note}; warpspeed.pystencils.registers says how it is counted)")
    source = _source_text(r)
    recount = (arch_counter(kernel_function, estimate_registers(kernel_function, cells),
                            (r.count, source)) if given in (None, "nvcc") else None)
    return replace(kernel, registers=r.count, registers_source=source,
                   register_counter=recount), note


def without_machine(kernel: Kernel, kernel_function: Any, given: int | str | None
                    ) -> tuple[Kernel, str | None]:
    """``kernel`` read without a machine (``extract``): a count ``given`` is
    its own; ``"estimate"`` gives the estimate (and a note); otherwise the
    estimate stands until a prediction or ranking counts for its machine
    (the kernel's :class:`ArchCounter`: nvcc's count where installed). Never
    the placeholder of a hand-written kernel."""
    if isinstance(given, int) and not isinstance(given, bool):
        return kernel, None
    if given == "estimate":
        return with_registers(kernel, kernel_function, None, "estimate")
    if given not in (None, "nvcc"):
        raise KernelError(
            f"registers must be a count (1..255), 'nvcc' or 'estimate', got {given!r}")
    estimate = estimate_registers(kernel_function, kernel.lups_per_thread)
    source = ("estimate: no machine yet; ws.predict and ws.rank count for theirs (nvcc where "
              "installed)")
    return replace(kernel, registers=estimate, registers_source=source,
                   register_counter=arch_counter(kernel_function, estimate,
                                                 (estimate, source))), None


__all__ = [
    "CALL_SCRATCH",
    "MAX_REGISTERS",
    "OVERHEAD",
    "ArchCounter",
    "Registers",
    "arch_counter",
    "cached_count",
    "without_machine",
    "estimate_registers",
    "kernel_registers",
    "nvcc_available",
    "nvcc_registers",
    "start_count",
    "with_registers",
]
