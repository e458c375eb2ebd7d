"""pystencils 2.x GPU kernels → :class:`warpspeed.Kernel` (MODEL.md §1).

The frontend reads the *final, lowered* IR of a kernel made by
``pystencils.create_kernel`` for a CUDA target (no GPU or cupy is needed:
``jit=ps.no_jit`` is enough):

* fields, sizes and strides, and the split of each linear offset into one
  index per dimension (dimension 0 the contiguous one): :mod:`.layouts`;
* loads, stores, guards and FP work, in one pass over the IR:
  :mod:`.walker`, :mod:`.fpcount`;
* the guard → the domain of valid thread coordinates, and the block size
  an indexing scheme may fix: :mod:`.launch`.

**Fold.** ``fold`` is the number of lattice updates per thread along x, y,
z; it defaults to ``(1, 1, 1)``. A kernel made with a strided iteration
slice (``ps.make_slice[1:-1:2, ...]``, a red-black sub-lattice) is a sparse
iteration space: thread ``g`` updates the one cell ``start + 2 g``, and its
indices keep the stride. Only a kernel folded by
:func:`warpspeed.pystencils.generate` (``fold`` shifted copies of the
assignments per thread) has a fold, which the caller passes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sympy as sp
from pystencils.backend.ast.structural import PsBlock

from ..errors import KernelError
from ..input.kernel import Access, Field, Kernel
from ..input.triples import Triple, triple_of
from .indexlists import (
    ListSpec,
    fixed_length,
    gathers,
    is_gather,
    list_accesses,
    list_length,
    list_pointers,
    list_sizes,
    refuse,
)
from .launch import counter_steps, domain
from .layouts import (
    FieldLayout,
    LayoutSpec,
    ShapeSpec,
    missing_shape,
    resolve,
    size_symbols,
    spatial_rank,
    split,
)
from .params import given_params, parameters, stride_params
from .params import sizes as param_sizes
from .params import stride_values as param_strides
from .poly import IntPoly
from .reductions import atomics_of
from .unsupported import (
    CpuTargetError,
    GridStridedLoopError,
    MissingShapeError,
    UnsupportedKernelError,
)
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
    (RNG work, loads forwarded from the thread's own stores).
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
    *,
    name: str | None = None,
    registers: int = 32,
    base_offsets: Mapping[str, int] | None = None,
    fold: Triple | None = None,
    shape: ShapeSpec = None,
    layout: LayoutSpec = None,
    params: Mapping[str, int] | None = None,
    grid_points: Triple | None = None,
) -> Kernel:
    """The :class:`warpspeed.Kernel` of a pystencils GPU kernel (MODEL.md §1);
    see :func:`extract`."""
    return extract(
        kernel_function, name=name, registers=registers, base_offsets=base_offsets,
        fold=fold, shape=shape, layout=layout, params=params, grid_points=grid_points,
    ).kernel


#: Most points per thread of a grid-stride loop (``grid_points``) predicted:
#: a 7-point Jacobi stays within about 1.27x of its compulsory DRAM traffic up to
#: 16 points a grid apart, and reaches 1.5x at 64.
MAX_GRID_POINTS = 16


def extract(
    kernel_function: Any,
    *,
    name: str | None = None,
    registers: int = 32,
    base_offsets: Mapping[str, int] | None = None,
    fold: Triple | None = None,
    shape: ShapeSpec = None,
    layout: LayoutSpec = None,
    params: Mapping[str, int] | None = None,
    grid_points: Triple | None = None,
    index_list: ListSpec = None,
    list_order: str = "sorted",
) -> Extraction:
    """Read a pystencils GPU kernel (MODEL.md §1; module docstring).

    * ``base_offsets``: field name → byte offset of the field's base pointer
      (element 0) from a 128 B boundary (default 0 for every field).
    * ``fold``: lattice updates per thread along x, y, z; ``None`` means
      ``(1, 1, 1)``. Pass the fold a kernel was folded with by
      :func:`warpspeed.pystencils.generate`; a strided iteration slice is
      not a fold.
    * ``shape``: for fields of symbolic size, the array shape to predict
      with: the spatial extents *including ghost layers*, x first (the
      order of ``f[x, y, z]``), or a mapping field name → shape; for
      ``StaggeredField`` / ``TensorField`` the inner extents (the values of
      their size parameters).
    * ``layout``: memory layout of symbolic-size fields with index
      dimensions (``"fzyx"``, ``"zyxf"``, ``"c"``, ``"f"``), one for all or
      per field name; see :mod:`.layouts` for the default.
    * ``params``: values of the kernel's integer parameters that indices,
      guards or loop bounds depend on (symbolic iteration-slice bounds,
      ``make_slice[sx:ex, ...]``), e.g. ``{"sx": 1, "ex": 255}``; a
      parameter needed but not given raises :class:`MissingParameterError`
      naming it.
    * ``grid_points``: for a grid-strided kernel (``gridstrided_linear3d``
      / ``gridstrided_linear1d``), the points each thread updates along the
      thread axes x, y, z: the grid is ``ceil(extent / points)`` threads
      along each axis and thread ``g`` updates ``g + j * grid threads``.
      Default ``(1, 1, 1)``: pystencils' automatic launch grid, which covers
      the domain. The kernel's fold is multiplied by it: a thread's points
      are counted as one folded update, in the same wave (an approximation
      that holds while the points share the caches; at most
      :data:`MAX_GRID_POINTS` points per thread, more are refused with
      :class:`GridStridedLoopError`).
    * ``index_list``: for an index-list (boundary) kernel, the list itself
      (the structured NumPy array of the boundary handling: exact sector
      counts) or its number of entries, with ``list_order`` ``"sorted"``
      (by cell) or ``"random"`` (:mod:`warpspeed.input.gathers`).

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
    body = _gpu_body(kernel_function)
    fields, props = parameters(kernel_function)
    lists = list_pointers(fields)
    length = fixed_length(fields, lists, list_length(index_list))
    if index_list is None and length is not None:
        index_list = length  # a fixed-size index field: its own length
    layouts = {p: resolve(f, shape, layout) for p, f in fields.items() if p not in lists}
    missing = [fields[p] for p, lay in layouts.items() if lay is None]
    sizes = param_sizes(props, {fields[p].name: lay for p, lay in layouts.items()})
    sizes.update(list_sizes(props, fields, lists, length or 1))
    sizes.update(given_params(kernel_function, params))
    strides = stride_params(props)
    stride_values = param_strides(strides, fields, layouts)
    points = (1, 1, 1) if grid_points is None else triple_of(grid_points, "grid_points",
                                                             error=KernelError)
    if math.prod(points) > MAX_GRID_POINTS:
        raise GridStridedLoopError(
            f"grid_points={points} gives {math.prod(points)} points per thread of a grid-stride "
            f"loop; warpspeed models at most {MAX_GRID_POINTS}: it counts a thread's points "
            "as one folded update in the same wave, which over-estimates the DRAM traffic "
            "when the points lie a whole grid apart (and it repeats the loop body per point). "
            "Predict a grid with at most that many points per thread, or the default "
            "grid_points=None (pystencils' grid, one point per thread)"
        )
    walker = Walker(fields, sizes, frozenset(strides), probe=bool(missing), grid_points=points,
                    list_pointers=lists)
    walker.block(body)
    walker.finish()
    data = {a for a, _ in walker.list_loads.values()} | set(walker.tables)
    gathered = [(p, off, False) for p, off in walker.loads if is_gather(off, data)]
    gathered += [(p, off, True) for p, off in walker.stores if is_gather(off, data)]
    if gathered:
        walker.loads = [(p, off) for p, off in walker.loads if not is_gather(off, data)]
        walker.stores = [(p, off) for p, off in walker.stores if not is_gather(off, data)]
        if length is None:
            raise refuse(fields[gathered[0][0]].name, False)
    if missing:
        raise _missing(missing, shape)
    if not walker.stores and not walker.loads and not walker.list_loads:
        raise UnsupportedKernelError("the kernel accesses no field memory")
    offsets = dict(base_offsets or {})
    names = {f.name for p, f in fields.items() if p in walker.itemsizes}
    unknown = set(offsets) - names
    if unknown:
        raise KernelError(
            f"base_offsets names fields {sorted(unknown)} that the kernel does not access; "
            f"its fields are {sorted(names)}"
        )
    ws_fields = {
        p: layouts[p].ws_field(walker.itemsizes[p], offsets.get(fields[p].name, 0))  # type: ignore[union-attr]
        for p in walker.itemsizes
    }
    box, fixed_block, domain_notes = domain(walker.guards)
    wraps = resolve_wraps(walker.selectors, box) if walker.selectors else {}
    accesses = _Accesses(ws_fields, layouts, strides, wraps)  # type: ignore[arg-type]
    work, bits = walker.fp.work()
    notes = list(walker.fp.notes) + list(domain_notes)
    f3 = (1, 1, 1) if fold is None else fold
    if wraps:
        notes.append(
            f"{len(wraps)} periodic wrap(s) (integer selects in indices): the border threads "
            "access the other side of the domain"
        )
    if walker.grid_spans:
        box, f3, spans = _grid_stride(box, f3, points, walker.grid_spans)
        walker.loads = [(p, substitute(off, spans)) for p, off in walker.loads]
        walker.stores = [(p, substitute(off, spans)) for p, off in walker.stores]
        notes.append(
            f"grid-stride loops: {points} points per thread along x, y, z over a grid of "
            f"{box} threads"
        )
    elif grid_points is not None and points != (1, 1, 1):
        raise KernelError(
            f"grid_points={points} is for grid-strided kernels; this kernel has no "
            "grid-stride loop (its indexing scheme gives one point per thread)"
        )
    if walker.forwarded:
        notes.append(
            f"{len(walker.forwarded)} load(s) of values the thread stored before are served "
            "from registers and not counted"
        )
    list_loads: list[Access] = []
    gather_accesses: tuple = ()
    if walker.list_loads:
        entry = max(abs(c) for (_, off) in walker.list_loads for m, c in off.terms if m)
        list_loads = list_accesses(walker.list_loads, fields, length or 1, entry)
    if gathered:
        gather_accesses = gathers(
            gathered, ws_fields, {p: lay.origin_offset for p, lay in layouts.items() if lay},
            stride_values, walker.list_loads, walker.tables, index_list, list_order,
        )
        notes.append(
            f"{len(gathered)} indexed access(es) per entry of the index list "
            + ("(positions from the list)" if isinstance(index_list, np.ndarray)
               else f"({length} entries, {list_order})")
        )
    atomics = None
    if walker.reductions:
        atomics, fixed_block, more = atomics_of(walker.reductions, work, fixed_block)
        notes += more
    kernel = Kernel(
        loads=[accesses(p, off) for p, off in walker.loads] + list_loads,
        stores=[accesses(p, off) for p, off in walker.stores],
        domain=box,
        fold=f3,
        fp_ops=work,
        fp_instructions=float(sum(work.values())),
        precision=_precision(bits, ws_fields.values()),
        registers=registers,
        name=name or getattr(kernel_function, "name", "kernel"),
        fixed_block=fixed_block,
        atomics=atomics,
        gathers=gather_accesses,
        target=_target_name(kernel_function),
        unbounded=tuple(sorted({fields[p].name for p in walker.itemsizes
                                if p in lists or size_symbols(fields[p])})),
    )
    return Extraction(kernel, counter_steps(walker.counters), tuple(notes))


class _Accesses:
    """Offsets → accesses, once per distinct (field, offset).

    The offset of a field of symbolic size is a sum of terms that each
    carry one of the field's stride parameters: the term's dimension, read
    off exactly (also for negative indices, as in the halo of a
    ``StaggeredField``). Fixed strides are folded into the offset by
    pystencils, which is split along them (:func:`.layouts.split`)."""

    def __init__(
        self,
        fields: dict[str, Field],
        layouts: dict[str, FieldLayout],
        strides: dict[str, dict[str, int]],
        wraps: Mapping[sp.Symbol, tuple[IntPoly, int]] | None = None,
    ) -> None:
        self.wraps = dict(wraps or {})
        self.fields = fields
        self.layouts = layouts
        self.strides = {sp.Symbol(n): owners for n, owners in strides.items()}
        self.done: dict[tuple[str, Any], Access] = {}

    def __call__(self, ptr: str, offset: IntPoly) -> Access:
        hit = self.done.get((ptr, offset))
        if hit is None:
            f, lay = self.fields[ptr], self.layouts[ptr]
            if offset.atoms & self.strides.keys():
                per_dim = self._by_stride(offset, lay)
                index = [per_dim[d] + IntPoly.const(lay.origin[d]) for d in lay.order]
            else:
                shifted = offset + IntPoly.const(lay.origin_offset)
                hints = {s: lay.order.index(a) for s, (_, a) in self.wraps.items()
                         if a in lay.order}
                values = {s: v for s, (v, _) in self.wraps.items()}
                index = split(shifted, f.strides, f.name, hints, values)  # type: ignore[arg-type]
            if self.wraps:
                values = {s: v for s, (v, _) in self.wraps.items()}
                index = [substitute(p, values) for p in index]
            hit = f[tuple(p.to_sympy() for p in index)]
            self.done[(ptr, offset)] = hit
        return hit

    def _by_stride(self, offset: IntPoly, lay: FieldLayout) -> list[IntPoly]:
        parts: list[dict] = [{} for _ in lay.shape]
        for monomial, coeff in offset.terms:
            found = [(i, a) for i, a in enumerate(monomial) if a in self.strides]
            dim = self.strides[found[0][1]].get(lay.name) if len(found) == 1 else None
            if dim is None:
                raise UnsupportedKernelError(
                    f"field {lay.name}: the offset term {coeff}*{sp.Mul(*monomial)} does not "
                    "move along one of the field's dimensions"
                )
            rest = monomial[: found[0][0]] + monomial[found[0][0] + 1 :]
            parts[dim][rest] = parts[dim].get(rest, 0) + coeff
        return [IntPoly.of(p) for p in parts]


def _grid_stride(
    box: Triple, fold: Triple, points: Triple, spans: Mapping[int, sp.Symbol]
) -> tuple[Triple, Triple, dict[sp.Symbol, int]]:
    """The thread box, fold and grid span of a grid-strided kernel (the
    walker's ``_grid_stride``): ``ceil(extent / points)`` threads along each
    strided axis, ``points`` times the fold."""
    for a in range(3):
        if points[a] > 1 and a not in spans:
            raise KernelError(
                f"grid_points asks for {points[a]} points along {'xyz'[a]}, but the kernel has "
                f"no grid-stride loop along {'xyz'[a]}; its loops stride along "
                f"{', '.join('xyz'[b] for b in sorted(spans))}"
            )
    threads = tuple(-(-box[a] // points[a]) for a in range(3))
    new_fold = tuple(fold[a] * points[a] for a in range(3))
    return threads, new_fold, {s: threads[a] for a, s in spans.items()}  # type: ignore[return-value]


def _precision(bits: set[int], fields: Any) -> int:
    """32 when the FP arithmetic is float32 (or, without arithmetic, every
    field holds 4-byte values), else 64 (fpcount module docstring)."""
    if bits:
        return 32 if bits == {32} else 64
    sizes = {f.itemsize for f in fields}
    return 32 if sizes == {4} else 64


def _missing(fields: list[Any], shape: ShapeSpec) -> MissingShapeError:
    if shape is None or isinstance(shape, Mapping):
        return missing_shape(fields)
    dims = sorted({spatial_rank(f) for f in fields})
    return MissingShapeError(
        f"the shape {tuple(shape)} has {len(tuple(shape))} extents, but the fields "
        f"{', '.join(sorted({f.name for f in fields}))} of symbolic size have {dims} spatial "
        "dimensions; give their spatial extents including ghost layers, x first (or a "
        "mapping field name -> shape)"
    )


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
    if not target.is_gpu():
        raise CpuTargetError(
            f"the kernel targets {target.name}, a CPU target; warpspeed models GPU kernels: "
            "create it with ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)"
        )
    return body


__all__ = ["Extraction", "extract", "kernel_from_pystencils"]
