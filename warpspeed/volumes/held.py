"""Registers a thread's merged loads hold, and whether the AMD compiler can
hold them (MODEL.md §15, "Merged loads and registers").

A load a thread repeats (§1) is merged only if its value stays in a
register from its first use to its last. The folded outputs of a thread are
taken to run in lockstep, as an unrolled tile loop inside the loop over the
taps writes them (the convolution of ``shared/data/a100``): the k-th load of
every output before the (k+1)-th of any. The values alive at once, plus one
accumulator per output, are the registers the merge needs.

On AMD GPUs the compiler must fit a kernel into the work-group size it is
compiled for, 1024 threads unless ``__launch_bounds__`` says otherwise
(HIP's default ``amdgpu-flat-work-group-size`` of 1,1024):
:func:`warpspeed.volumes.launch.register_budget`. A merge that
needs more is predicted as if the loads were issued again, and the
prediction says so; a compiler that spills to scratch memory instead runs
slower still (not modelled). NVIDIA's compiler orders the unrolled code
itself and may use 255 registers per thread at any block it can launch: no
budget is applied there.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..input.addresses import address_classes
from ..input.binding import BoundKernel
from ..input.expr import LinForm, SymForm
from ..input.kernel import Kernel
from ..machine import Machine
from .launch import register_budget

#: The start of the note a prediction carries when the budget is exceeded.
NOTE_START = "merged loads exceed the registers"


def _lockstep(kernel: Kernel) -> np.ndarray:
    """The position of each load in lockstep order (module docstring):
    output ``o``'s k-th load at ``k * outputs + o``; program order when the
    loads are not in equal groups per output."""
    n, total = kernel.lups_per_thread, len(kernel.loads)
    if n <= 1 or total % n:
        return np.arange(total)
    size = total // n
    o, k = np.divmod(np.arange(total), size)
    return k * n + o


def held_registers(kernel: Kernel, bound: Mapping[SymForm, LinForm]) -> int:
    """The 32-bit registers per lane that holding the thread's repeated
    loads needs (module docstring): the most values alive at once between
    their first and last use in lockstep order, plus one accumulator per
    output; 0 when no load repeats. Wider elements count their words."""
    if not kernel.loads:
        return 0
    return _held(kernel, address_classes(kernel.loads, bound))


def _held(kernel: Kernel, cls: np.ndarray) -> int:
    """:func:`held_registers` of the loads' address classes ``cls``."""
    first = np.full(cls.max() + 1, np.iinfo(np.int64).max)
    last = np.full(cls.max() + 1, -1)
    t = _lockstep(kernel)
    np.minimum.at(first, cls, t)
    np.maximum.at(last, cls, t)
    keep = last > first
    if not keep.any():
        return 0
    words = np.array([-(-a.field.itemsize // 4) for a in kernel.loads])
    width = np.zeros(len(first), dtype=np.int64)
    width[cls] = words
    change = np.zeros(len(kernel.loads) + 1, dtype=np.int64)
    np.add.at(change, first[keep], width[keep])
    np.add.at(change, last[keep], -width[keep])
    alive = int(np.cumsum(change).max())
    return alive + kernel.lups_per_thread * (kernel.precision // 32)


def as_compiled(bk: BoundKernel, machine: Machine) -> tuple[BoundKernel, str | None]:
    """The bound kernel ``bk`` as the compiler issues it: unchanged, or
    with every load issued as written (``reload_repeated``) and a note when
    its merged loads need more registers than :func:`register_budget`
    (MODEL.md §15)."""
    kernel = bk.kernel
    budget = register_budget(machine)
    if budget is None or kernel.reload_repeated or not kernel.loads:
        return bk, None
    need = _held(kernel, bk.load_classes)
    if need <= budget:
        return bk, None
    note = (f"{NOTE_START}: holding the values its repeated loads share needs about "
            f"{need} VGPRs per lane, more than the {budget} the compiler may use at its "
            f"default bound of {machine.max_threads_per_block} threads per block; predicted "
            "as if the loads were issued again (MODEL.md §15); a kernel that spills to "
            "scratch memory instead runs several times slower")
    return bk.reloaded(), note


__all__ = ["NOTE_START", "as_compiled", "held_registers", "register_budget"]
