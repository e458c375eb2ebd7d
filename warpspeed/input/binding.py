"""A kernel's accesses bound to one block, once (MODEL.md §1).

A launch binds the kernel's index forms to its block size; what the volume
stages read of that binding (the accesses with their repeats merged, those a
thread issues, each load's address class) is computed here once per
launch, in one object, and handed down the stages (:mod:`warpspeed.volumes`)
instead of each stage binding and merging again
(:mod:`warpspeed.input.addresses` does the work).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from .addresses import address_classes, kernel_forms, merge_repeated, thread_accesses
from .expr import LinForm, SymForm, bind_all
from .kernel import Access, Kernel


@dataclass(frozen=True, eq=False)
class BoundKernel:
    """``kernel`` at ``block`` (:func:`bind_kernel`): the bound index forms;
    every load and every store once per address (``loads``, ``stores``: a
    repeat adds nothing to a union of sectors, MODEL.md §6); the loads and
    stores one thread issues (``issued_loads``, ``issued_stores``:
    :func:`warpspeed.input.addresses.thread_accesses`, MODEL.md §1); and
    each of the kernel's loads' address class (``load_classes``:
    :func:`warpspeed.input.addresses.address_classes`, MODEL.md §15)."""

    kernel: Kernel
    block: tuple[int, int, int]
    bound: dict[SymForm, LinForm]
    loads: tuple[Access, ...]
    stores: tuple[Access, ...]
    issued_loads: tuple[Access, ...]
    issued_stores: tuple[Access, ...]

    @functools.cached_property
    def load_classes(self) -> np.ndarray:
        """Each of the kernel's loads' address class (computed on first use)."""
        if not self.kernel.loads:
            return np.zeros(0, dtype=np.int64)
        return address_classes(self.kernel.loads, self.bound)

    @property
    def issued(self) -> tuple[Access, ...]:
        """The issued loads, then the issued stores (the order the block
        stage samples them in)."""
        return self.issued_loads + self.issued_stores

    def reloaded(self) -> BoundKernel:
        """The same binding with every access issued as written: the
        compiler reloads the repeats (``Kernel.reload_repeated``, MODEL.md
        §15)."""
        return replace(self, issued_loads=self.kernel.loads,
                       issued_stores=self.kernel.stores)


def bind_kernel(kernel: Kernel, block: tuple[int, int, int],
                bound: dict[SymForm, LinForm] | None = None) -> BoundKernel:
    """The :class:`BoundKernel` of ``kernel`` at ``block`` (MODEL.md §1);
    ``bound``: the kernel's forms already bound to ``block``
    (:func:`warpspeed.input.expr.bind_all`), else bound here."""
    forms = bound if bound is not None else bind_all([kernel_forms(kernel)], block)
    issued_loads, issued_stores = thread_accesses(kernel, forms, block)
    return BoundKernel(
        kernel=kernel, block=block, bound=forms,
        loads=merge_repeated(kernel.loads, forms), stores=merge_repeated(kernel.stores, forms),
        issued_loads=issued_loads, issued_stores=issued_stores,
    )


__all__ = ["BoundKernel", "bind_kernel"]
