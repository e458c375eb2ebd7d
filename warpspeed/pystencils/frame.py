"""Phases 2-6 of :func:`.extract.read`: what a pystencils kernel's
parameters and memory accesses are (MODEL.md §1, "Fields").

* :class:`_Frame`, :func:`_frame` (phase 2): the fields by base pointer, the
  index lists among them and their length, each field's layout, the values
  of the size and scalar parameters, the stride parameters and their values
  (:mod:`.layouts`, :mod:`.params`, :mod:`.indexlists`);
* :func:`_walk` (phase 3): one pass over the IR (:mod:`.walker`);
* :class:`_Memory`, :func:`_memory` (phase 4): the ordinary loads and
  stores of one thread apart from the gathers through an index list;
* :func:`_check_complete`, :func:`_missing` (phase 5): every symbolic size
  fixed by a shape, some field memory accessed, base offsets only for
  fields the kernel accesses;
* :func:`_ws_fields` (phase 6): the warpspeed field of every accessed base
  pointer, with its base offset.

:mod:`.extract` runs them, and the phases after them, in the order in which
a kernel's problems are reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp
from pystencils.backend.ast.structural import PsBlock

from ..input.kernel import Field
from .indexlists import (
    ListSpec,
    fixed_length,
    is_gather,
    list_length,
    list_pointers,
    list_sizes,
    refuse,
)
from .layouts import FieldLayout, ShapeSpec, missing_shape, resolve, spatial_rank
from .options import ExtractOptions, check_base_offsets
from .params import given_params, parameters, stride_params
from .params import sizes as param_sizes
from .params import stride_values as param_strides
from .poly import IntPoly
from .unsupported import MissingShapeError, UnsupportedKernelError
from .walker import Walker


@dataclass(frozen=True)
class _Frame:
    """A kernel's parameters read (MODEL.md §1, "Fields"): pystencils fields
    by base pointer, the index lists among them and their number of entries
    (``index_list`` the list or length to predict with), each field's layout
    (None: symbolic size without a shape), the values of the size and scalar
    parameters, the stride parameters and their values."""

    fields: Mapping[str, Any]
    lists: frozenset[str]
    length: int | None
    index_list: ListSpec
    layouts: Mapping[str, FieldLayout | None]
    sizes: Mapping[str, int]
    strides: Mapping[str, Mapping[str, int]]
    stride_values: Mapping[sp.Symbol, int]

    @property
    def missing(self) -> list[Any]:
        """The fields of symbolic size that no shape fixes."""
        return [self.fields[p] for p, lay in self.layouts.items() if lay is None]

    @property
    def resolved(self) -> dict[str, FieldLayout]:
        """The layouts of the fields, every one resolved once :attr:`missing`
        is empty (:func:`_check_complete`)."""
        return {p: lay for p, lay in self.layouts.items() if lay is not None}


def _frame(kernel_function: Any, options: ExtractOptions) -> _Frame:
    """Phase 2: the fields and parameters of ``kernel_function`` bound to
    the values ``options`` gives (:mod:`.layouts`, :mod:`.params`,
    :mod:`.indexlists`)."""
    fields, props = parameters(kernel_function)
    lists = list_pointers(fields)
    length = fixed_length(fields, lists, list_length(options.index_list))
    index_list = options.index_list
    if index_list is None and length is not None:
        index_list = length  # a fixed-size index field: its own length
    layouts = {p: resolve(f, options.shape, options.layout)
               for p, f in fields.items() if p not in lists}
    sizes = param_sizes(props, {fields[p].name: lay for p, lay in layouts.items()})
    sizes.update(list_sizes(props, fields, lists, length or 1))
    sizes.update(given_params(kernel_function, options.params))
    strides = stride_params(props)
    return _Frame(fields, lists, length, index_list, layouts, sizes, strides,
                  param_strides(strides, fields, layouts))


def _walk(body: PsBlock, frame: _Frame, options: ExtractOptions) -> Walker:
    """Phase 3: one pass over the IR (:mod:`.walker`): accesses, guards,
    counters, FP work, reductions, index-list reads."""
    walker = Walker(frame.fields, frame.sizes, frozenset(frame.strides),
                    probe=bool(frame.missing), grid_points=options.grid_points or (1, 1, 1),
                    list_pointers=frame.lists)
    walker.block(body)
    walker.finish()
    return walker


@dataclass(frozen=True)
class _Memory:
    """Accesses (base pointer, offset) of one thread: ordinary loads and
    stores, and gathers (pointer, offset, is a store) whose offsets hold data
    read from an index list (:mod:`.indexlists`)."""

    loads: list[tuple[str, IntPoly]]
    stores: list[tuple[str, IntPoly]]
    gathered: list[tuple[str, IntPoly, bool]]


def _memory(walker: Walker, frame: _Frame) -> _Memory:
    """Phase 4: the gathers apart from the ordinary accesses; a gather
    without the list's length is refused (:func:`.indexlists.refuse`)."""
    data = {a for a, _ in walker.list_loads.values()} | set(walker.tables)
    gathered = [(p, off, False) for p, off in walker.loads if is_gather(off, data)]
    gathered += [(p, off, True) for p, off in walker.stores if is_gather(off, data)]
    if gathered and frame.length is None:
        raise refuse(frame.fields[gathered[0][0]].name, False)
    return _Memory([(p, off) for p, off in walker.loads if not is_gather(off, data)],
                   [(p, off) for p, off in walker.stores if not is_gather(off, data)],
                   gathered)


def _check_complete(frame: _Frame, walker: Walker, memory: _Memory,
                    options: ExtractOptions) -> None:
    """Phase 5: every symbolic size fixed by a shape, some field memory
    accessed, base offsets only for fields the kernel accesses."""
    if frame.missing:
        raise _missing(frame.missing, options.shape)
    if not memory.stores and not memory.loads and not walker.list_loads:
        raise UnsupportedKernelError("the kernel accesses no field memory")
    check_base_offsets(options.base_offsets or {}, {
        f.name: walker.itemsizes[p] for p, f in frame.fields.items() if p in walker.itemsizes})


def _ws_fields(frame: _Frame, walker: Walker, options: ExtractOptions) -> dict[str, Field]:
    """Phase 6: the warpspeed field of every accessed base pointer, with
    its base offset (:meth:`.layouts.FieldLayout.ws_field`)."""
    offsets = options.base_offsets or {}
    layouts = frame.resolved
    return {
        p: layouts[p].ws_field(
            walker.itemsizes[p], offsets.get(frame.fields[p].name, 0))
        for p in walker.itemsizes
    }


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
