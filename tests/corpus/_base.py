"""The corpus case record, hand-count helpers and the shared CUDA configuration.

A *hand count* is the compulsory DRAM traffic of one lattice update, written
from the kernel's field accesses alone: every field that is read contributes
its components times its item size once (neighbour accesses are served from
cache), every field that is written the same; strided sweeps touch whole
32 B sectors (:func:`strided`). It is independent of warpspeed by
construction: nothing here imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pystencils as ps

#: Item sizes in bytes.
F64 = 8
F32 = 4
I32 = 4
#: DRAM sector size in bytes (the unit of L2 <-> DRAM transfers).
SECTOR = 32

#: Default thread blocks to predict with: (64, 4, 2) for 3D, (64, 8, 1) for 2D.
BLOCK_3D = (64, 4, 2)
BLOCK_2D = (64, 8, 1)

#: Interior sizes of the corpus kernels, and array extents with one ghost layer.
N3 = 256
N2 = 2048
A3 = N3 + 2
A2 = N2 + 2

#: The acceptance band of a believable prediction: DRAM load + store over the
#: hand count.
LOWER = 0.97
UPPER = 1.35


def strided(itemsize: int, stride: int) -> int:
    """Bytes of DRAM sectors one update touches when consecutive updates
    access elements ``stride`` apart along the contiguous dimension: a 32 B
    sector is transferred whole, so a stride-2 sweep over doubles moves 16 B
    per update (two of the four doubles of each sector are used)."""
    return min(SECTOR, itemsize * stride)


@dataclass(frozen=True)
class HandCount:
    """Compulsory DRAM bytes per lattice update, loads and stores, and how
    they follow from the accesses."""

    load: float
    store: float
    how: str

    @property
    def total(self) -> float:
        return self.load + self.store


@dataclass(frozen=True)
class Built:
    """A generated corpus kernel: the pystencils kernel function (CUDA, no
    JIT) and, when it was made from assignments, the assignments and the
    configuration, so that the generation hook can regenerate it."""

    kernel: Any
    assignments: Any | None = None
    config: ps.CreateKernelConfig | None = None


@dataclass(frozen=True)
class Case:
    """One corpus kernel and what a correct frontend must make of it.

    ``shape``: when the fields have symbolic sizes, the values the kernel's
    size parameters ``_size_<field>_<d>`` take at launch, per spatial axis:
    for ``ps.fields("f: double[3D]")`` the array extents with the ghost
    layers, for a kernel on a ``ps.StaggeredField`` or from a ``ps.flow``
    block the interior cell counts (its base pointers sit at the first
    interior cell). ``refusal``: the name of the
    error class the extraction must raise (a subclass of
    ``warpspeed.KernelError``) instead of predicting. ``upper``: the upper end
    of the ratio band when it is above :data:`UPPER`, with the ``reason``.
    ``hook``: whether the kernel is made from assignments, so that the
    generation hook ``warpspeed.pystencils.create_kernel`` can regenerate it
    (lbmpy's index-list boundary kernels are not). ``options``: further
    fields of the front end's ``ExtractOptions`` (``params`` of symbolic
    slice bounds, ``grid_points`` of grid-stride loops, ``index_list``; a
    callable is called for the value), as sorted pairs.
    """

    name: str
    klass: str
    build: Callable[[], Built]
    hand: HandCount
    block: tuple[int, int, int] = BLOCK_3D
    shape: tuple[int, ...] | None = None
    refusal: str | None = None
    upper: float = UPPER
    reason: str = ""
    hook: bool = True
    options: tuple[tuple[str, Any], ...] = ()


def cuda(**options: Any) -> ps.CreateKernelConfig:
    """A CUDA kernel configuration that needs no GPU (``jit=ps.no_jit``)."""
    return ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit, **options)


def from_assignments(assignments: Any, config: ps.CreateKernelConfig | None = None) -> Built:
    """Generate ``assignments`` for CUDA and keep them for the hook."""
    cfg = config if config is not None else cuda()
    return Built(ps.create_kernel(assignments, cfg), assignments, cfg)


def registrar(
    cases: list[Case], klass: str
) -> Callable[..., Callable[[Callable[[], Built]], Callable[[], Built]]]:
    """A decorator factory that appends a builder as a :class:`Case` of
    ``klass`` to ``cases``."""

    def case(
        name: str,
        hand: HandCount,
        *,
        klass: str = klass,
        block: tuple[int, int, int] = BLOCK_3D,
        shape: tuple[int, ...] | None = None,
        refusal: str | None = None,
        upper: float = UPPER,
        reason: str = "",
        hook: bool = True,
        options: dict[str, Any] | None = None,
    ) -> Callable[[Callable[[], Built]], Callable[[], Built]]:
        opts = tuple(sorted((options or {}).items()))

        def register(build: Callable[[], Built]) -> Callable[[], Built]:
            cases.append(
                Case(name, klass, build, hand, block, shape, refusal, upper, reason, hook, opts)
            )
            return build

        return register

    return case
