"""pystencils 2.x GPU kernels → :class:`warpspeed.Kernel` (MODEL.md §1).

The frontend reads the *final, lowered* IR of a kernel made by
``pystencils.create_kernel`` for a CUDA target (no GPU or cupy is needed:
``jit=ps.no_jit`` is enough):

* fields, sizes and strides, and the split of each linear offset into one
  index per dimension (dimension 0 the contiguous one): :mod:`.layouts`;
* loads, stores, guards and FP work, in one pass over the IR:
  :mod:`.walker`, :mod:`.fpcount`;
* the guard → the domain of valid thread coordinates, and the block size
  an indexing scheme may fix: :mod:`.launch`;
* what the caller tells about the kernel (shapes, parameter values, index
  list, ...): :class:`.options.ExtractOptions`.

:func:`read` runs these as named phases (phases 2-6, the kernel's parameters
and memory accesses: :mod:`.frame`), in the order in which a kernel's
problems are reported.

**Fold.** ``fold`` is the number of lattice updates per thread along x, y,
z; it defaults to ``(1, 1, 1)``. A kernel made with a strided iteration
slice (``ps.make_slice[1:-1:2, ...]``, a red-black sub-lattice) is a sparse
iteration space: thread ``g`` updates the one cell ``start + 2 g``, and its
indices keep the stride. Only a kernel folded by
:func:`warpspeed.pystencils.generate` (``fold`` shifted copies of the
assignments per thread) has a fold, which the caller passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import sympy as sp
from pystencils.backend.ast.structural import PsBlock

from ..errors import KernelError
from ..family import TARGETS
from ..input.atomics import Atomics
from ..input.gathers import Gather
from ..input.kernel import Access, Field, Kernel
from ..input.triples import Triple
from .accesses import Accesses
from .frame import (
    _check_complete,
    _Frame,
    _frame,
    _Memory,
    _memory,
    _walk,
    _ws_fields,
)
from .indexlists import gathers, list_accesses
from .launch import counter_steps, domain, grid_stride
from .layouts import assumed_layout, size_symbols
from .options import EXTRACT_KEYWORDS, MAX_GRID_POINTS, READ_KEYWORDS, ExtractOptions, with_keywords
from .poly import IntPoly
from .reductions import atomics_of
from .registers import without_machine
from .unsupported import CpuTargetError, GpuTargetError
from .walker import Walker
from .wraps import resolve as resolve_wraps
from .wraps import substitute


@dataclass(frozen=True)
class Extraction:
    """What the frontend reads from a pystencils kernel (MODEL.md §1).

    ``kernel`` is the model input (its ``fixed_block`` is the only block
    size the kernel can run with when the indexing scheme fixes it, e.g.
    ``blockwise4d``); ``counter_steps`` is the step of the iteration
    counters along x, y, z (the stride of a strided iteration slice, or the
    fold of a folded kernel); ``notes`` lists the approximations made
    (an assumed layout, RNG work, loads forwarded from the thread's own stores).
    """

    kernel: Kernel
    counter_steps: Triple
    notes: tuple[str, ...] = field(default=())

    @property
    def block(self) -> Triple | None:
        """Alias of ``kernel.fixed_block``."""
        return self.kernel.fixed_block


def kernel_from_pystencils(
    kernel_function: Any,
    options: ExtractOptions | None = None,
    *,
    name: str | None = None,
    fold: Triple | None = None,
    **keywords: Any,
) -> Kernel:
    """The :class:`warpspeed.Kernel` of a pystencils GPU kernel (MODEL.md §1);
    see :func:`extract`. The option keywords it took before ``options``
    (``registers``, ``base_offsets``, ``shape``, ``layout``, ``params``,
    ``grid_points``) still work and are deprecated."""
    opts = with_keywords(options, keywords, "kernel_from_pystencils",
                         READ_KEYWORDS | {"registers"})
    return _counted(read(kernel_function, opts, name=name, fold=fold,
                         registers=_kernel_count(opts.registers)), kernel_function, opts).kernel


def extract(
    kernel_function: Any,
    options: ExtractOptions | None = None,
    *,
    name: str | None = None,
    fold: Triple | None = None,
    **keywords: Any,
) -> Extraction:
    """Read a pystencils GPU kernel (MODEL.md §1; module docstring).

    * ``options``: how to read it (:class:`ExtractOptions`: the shape and
      layout of fields of symbolic size, base pointer offsets, the values
      of integer parameters, the grid points of a grid-strided kernel, the
      list of an index-list kernel). Its ``registers``: a count is the
      kernel's, ``"estimate"`` the estimate (:mod:`.registers`); without
      either, ``extract`` knows no machine to run nvcc for, so the kernel
      has the estimate until ``ws.predict`` or ``ws.rank`` counts for its
      machine (``Kernel.register_counter``: nvcc's count where installed;
      MODEL.md §1). The same options, given as keywords
      (``extract(kernel, shape=...)``), still work and are deprecated.
    * ``name``: the kernel's name (default the pystencils kernel's).
    * ``fold``: lattice updates per thread along x, y, z; ``None`` means
      ``(1, 1, 1)``. Pass the fold a kernel was folded with by
      :func:`warpspeed.pystencils.generate`; a strided iteration slice is
      not a fold.

    A grid-strided kernel (``gridstrided_linear3d`` /
    ``gridstrided_linear1d``) with ``grid_points`` runs
    ``ceil(extent / points)`` threads along each axis, thread ``g``
    updating ``g + j * grid threads``; its fold is multiplied by the points,
    counted as one folded update in the same wave (an approximation that
    holds while the points share the caches, hence at most
    :data:`MAX_GRID_POINTS` points per thread).

    Raises a subclass of :class:`UnsupportedKernelError` naming the
    construct the model cannot describe, :class:`MissingShapeError` for
    symbolic sizes without ``shape``.

    Example: a 7-point Jacobi sweep over 32^3 interior points (no GPU
    needed)::

        >>> import pystencils as ps
        >>> import warpspeed.pystencils as wps
        >>> src, dst = ps.fields("src, dst: double[34, 34, 34]")
        >>> update = ps.Assignment(dst[0, 0, 0], (src[1, 0, 0] + src[-1, 0, 0] + src[0, 1, 0]
        ...     + src[0, -1, 0] + src[0, 0, 1] + src[0, 0, -1]) / 6)
        >>> cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
        >>> k = wps.extract(ps.create_kernel([update], cfg)).kernel
        >>> k.domain, len(k.loads), len(k.stores), k.fp_work
        ((32, 32, 32), 6, 1, {'fma': 6.0})
        >>> import warpspeed as ws
        >>> ws.predict(k, "V100", block=(32, 4, 2)).limiter  # 32^3 updates: the launch binds
        'launch'
    """
    opts = with_keywords(options, keywords, "extract", EXTRACT_KEYWORDS)
    return _counted(read(kernel_function, opts, name=name, fold=fold,
                         registers=_kernel_count(opts.registers)), kernel_function, opts)


def read(
    kernel_function: Any,
    options: ExtractOptions,
    *,
    name: str | None = None,
    fold: Triple | None = None,
    registers: int = 32,
) -> Extraction:
    """:func:`extract` with its options resolved and ``registers`` the
    kernel's count (the hook counts them afterwards, :mod:`.registers`).
    The phases, in order; each raises what it finds the model cannot
    describe, so the first problem of a kernel is the one reported:

    1. :func:`_gpu_body`: the kernel is a pystencils GPU kernel;
    2. :func:`_frame`: its fields, layouts, size, stride and scalar parameters;
    3. :func:`_walk`: loads, stores, guards, FP work, reductions of its IR;
    4. :func:`_memory`: the ordinary accesses apart from gathers through lists;
    5. :func:`_check_complete`: shapes, memory accesses and base offsets;
    6. :func:`_ws_fields`: the warpspeed fields;
    7. :func:`_thread_space`: domain, fixed block, periodic wraps, grid stride;
    8. :func:`_lists`: the index list's own loads and the gathers;
    9. :func:`_atomics`: the reductions' atomics;
    10. the :class:`warpspeed.Kernel`, with every note made on the way.
    """
    body = _gpu_body(kernel_function)
    frame = _frame(kernel_function, options)
    walker = _walk(body, frame, options)
    memory = _memory(walker, frame)
    _check_complete(frame, walker, memory, options)
    fields = _ws_fields(frame, walker, options)
    space = _thread_space(walker, memory, fold, options)
    work, bits = walker.fp.work()
    lists = _lists(walker, memory, frame, fields, options)
    atomics, fixed_block, atomic_notes = _atomics(walker, work, space.fixed_block)
    accesses = Accesses(fields, frame.resolved, frame.strides, space.wraps)
    kernel = Kernel(
        loads=[accesses(p, off) for p, off in space.loads] + lists.loads,
        stores=[accesses(p, off) for p, off in space.stores],
        domain=space.box,
        fold=space.fold,
        fp_ops=work,
        fp_instructions=float(sum(work.values())),
        precision=_precision(bits, fields.values()),
        registers=registers,
        name=str(name or getattr(kernel_function, "name", "kernel")),
        fixed_block=fixed_block,
        atomics=atomics,
        gathers=lists.gathers,
        target=_target_name(kernel_function),
        unbounded=_unbounded(frame, walker),
    )
    assumed = [n for f in frame.fields.values() if (n := assumed_layout(f, options.layout))]
    notes = (*assumed, *walker.fp.notes, *space.notes, *_forwarded(walker), *lists.notes,
             *atomic_notes)
    return Extraction(kernel, counter_steps(walker.counters), tuple(notes))


def _kernel_count(registers: int | str | None) -> int:
    """The registers per thread ``extract`` gives its kernel: the count
    given, else 32 (MODEL.md §1)."""
    return registers if isinstance(registers, int) else 32


def _counted(ex: Extraction, kernel_function: Any, options: ExtractOptions) -> Extraction:
    """``ex`` with its registers (:func:`.registers.without_machine`): a
    count given, else the estimate, which a prediction or ranking replaces
    by nvcc's count for its machine where nvcc is installed."""
    kernel, note = without_machine(ex.kernel, kernel_function, options.registers)
    return replace(ex, kernel=kernel, notes=ex.notes + ((note,) if note else ()))


@dataclass(frozen=True)
class _Space:
    """Where the threads run (MODEL.md §1, ``domain`` and ``fold``): the box
    of valid thread coordinates, the updates per thread, the block an
    indexing scheme fixes, the periodic wraps, the ordinary accesses with
    the grid span substituted, and the notes on all of them."""

    box: Triple
    fold: Triple
    fixed_block: Triple | None
    wraps: Mapping[sp.Symbol, tuple[IntPoly, int]]
    loads: list[tuple[str, IntPoly]]
    stores: list[tuple[str, IntPoly]]
    notes: tuple[str, ...]


def _thread_space(walker: Walker, memory: _Memory, fold: Triple | None,
                  options: ExtractOptions) -> _Space:
    """Phase 7: the guard as the domain (:mod:`.launch`), periodic wraps
    (:mod:`.wraps`) and grid-stride loops (:func:`.launch.grid_stride`)."""
    box, fixed_block, found = domain(walker.guards)
    notes = list(found)
    wraps = resolve_wraps(walker.selectors, box) if walker.selectors else {}
    if wraps:
        notes.append(
            f"{len(wraps)} periodic wrap(s) (integer selects in indices): the border threads "
            "access the other side of the domain"
        )
    f3 = (1, 1, 1) if fold is None else fold
    loads, stores = memory.loads, memory.stores
    points = options.grid_points or (1, 1, 1)
    if walker.grid_spans:
        box, f3, spans = grid_stride(box, f3, points, walker.grid_spans)
        loads = [(p, substitute(off, spans)) for p, off in loads]
        stores = [(p, substitute(off, spans)) for p, off in stores]
        notes.append(
            f"grid-stride loops: {points} points per thread along x, y, z over a grid of "
            f"{box} threads"
        )
    elif points != (1, 1, 1):
        raise KernelError(
            f"grid_points={points} is for grid-strided kernels; this kernel has no "
            "grid-stride loop (its indexing scheme gives one point per thread)"
        )
    return _Space(box, f3, fixed_block, wraps, loads, stores, tuple(notes))


def _forwarded(walker: Walker) -> list[str]:
    """The note on loads served from the thread's own stores."""
    if not walker.forwarded:
        return []
    return [f"{len(walker.forwarded)} load(s) of values the thread stored before are served "
            "from registers and not counted"]


@dataclass(frozen=True)
class _Lists:
    """An index-list kernel's own loads of its list, its gathers and the note."""

    loads: list[Access]
    gathers: tuple[Gather, ...]
    notes: tuple[str, ...]


def _lists(walker: Walker, memory: _Memory, frame: _Frame, fields: Mapping[str, Field],
           options: ExtractOptions) -> _Lists:
    """Phase 8: the list read contiguously, the gathers at the cells it
    names (:mod:`.indexlists`, MODEL.md §1 ``gathers``)."""
    loads: list[Access] = []
    if walker.list_loads:
        entry = max(abs(c) for (_, off) in walker.list_loads for m, c in off.terms if m)
        loads = list_accesses(walker.list_loads, frame.fields, frame.length or 1, entry)
    if not memory.gathered:
        return _Lists(loads, (), ())
    found = gathers(
        memory.gathered, fields, frame.resolved,
        frame.stride_values, walker.list_loads, walker.tables, frame.index_list,
        options.list_order,
    )
    note = (f"{len(memory.gathered)} indexed access(es) per entry of the index list "
            + ("(positions from the list)" if isinstance(frame.index_list, np.ndarray)
               else f"({frame.length} entries, {options.list_order})"))
    return _Lists(loads, tuple(found), (note,))


def _atomics(walker: Walker, work: dict[str, float], fixed_block: Triple | None
             ) -> tuple[Atomics | None, Triple | None, list[str]]:
    """Phase 9: the reductions' write-back as atomics (:mod:`.reductions`),
    which may fix the block (a CUB block reduction)."""
    if not walker.reductions:
        return None, fixed_block, []
    return atomics_of(walker.reductions, work, fixed_block)


def _unbounded(frame: _Frame, walker: Walker) -> tuple[str, ...]:
    """Fields of unknown allocation, whose bounds are not checked: index
    lists and fields of symbolic size (MODEL.md §1, Bounds)."""
    return tuple(sorted({frame.fields[p].name for p in walker.itemsizes
                         if p in frame.lists or size_symbols(frame.fields[p])}))


def _precision(bits: set[int], fields: Any) -> int:
    """32 when the FP arithmetic is float32 (or, without arithmetic, every
    field holds 4-byte values), else 64 (fpcount module docstring)."""
    if bits:
        return 32 if bits == {32} else 64
    sizes = {f.itemsize for f in fields}
    return 32 if sizes == {4} else 64


def _target_name(kernel_function: Any) -> str | None:
    """"CUDA" or "HIP": the pystencils target the kernel was generated for."""
    name = getattr(getattr(kernel_function, "target", None), "name", None)
    return name if name in ("CUDA", "HIP") else None


def _gpu_body(kernel_function: Any) -> PsBlock:
    target = getattr(kernel_function, "target", None)
    body = getattr(kernel_function, "body", None)
    if target is None or not isinstance(body, PsBlock):
        raise KernelError(
            f"expected a kernel made by pystencils.create_kernel, got "
            f"{type(kernel_function).__name__}"
        )
    name = target.name.lstrip("_")
    fix = "create it with ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)"
    if target.is_cpu():
        raise CpuTargetError(f"the kernel targets {name}, a CPU target; warpspeed models GPU "
                             f"kernels: {fix}")
    if not target.is_gpu():  # SYCL: a GPU target pystencils does not class as one
        raise GpuTargetError(f"the kernel targets {name}, a GPU target warpspeed does not "
                             f"support (it models {' and '.join(TARGETS)} code): {fix}")
    return body


__all__ = ["MAX_GRID_POINTS", "Extraction", "extract", "kernel_from_pystencils", "read"]
