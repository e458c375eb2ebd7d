"""Index-list kernels of pystencils and lbmpy (MODEL.md §1, indexed
accesses of :mod:`warpspeed.input.gathers`).

A boundary kernel (lbmpy's ``NoSlip``, ``UBB``, ... through the boundary
handling; pystencils' ``create_boundary_kernel``) runs one thread per entry
of an ``INDEXED`` field, a list of structs (``x, y, z, dir``). The IR walk
(:class:`~.indices.IndexReader`) reads each member as a data atom and each
constant table looked up with it (``f_in_inv_dir_idx[dir]``) as another;
a field access whose offset holds such an atom is a gather. Here:

* the list's own reads become ordinary loads of a 1D field of the members'
  width, one entry per thread;
* the gathers become :class:`warpspeed.input.gathers.Gather` accesses, with the
  positions of every entry when the list itself is given (the offsets
  evaluated with the entries' members and the tables), else with the
  list's length and order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import sympy as sp
from pystencils import FieldType

from ..errors import KernelError
from ..input.gathers import ORDERS, Gather
from ..input.kernel import Access, Field
from .launch import BUILTINS
from .layouts import FieldLayout
from .poly import IntPoly
from .unsupported import IndirectAccessError

ListSpec = np.ndarray | int | None


def list_pointers(fields: Mapping[str, Any]) -> frozenset[str]:
    """The base pointers of ``INDEXED`` fields (index lists)."""
    return frozenset(
        p for p, f in fields.items() if getattr(f, "field_type", None) == FieldType.INDEXED
    )


def list_length(index_list: ListSpec) -> int | None:
    """The number of entries of ``index_list`` (an array or a count)."""
    if index_list is None:
        return None
    if isinstance(index_list, np.ndarray):
        if index_list.ndim != 1 or index_list.dtype.names is None:
            raise KernelError(
                f"index_list must be the list itself, a 1D structured NumPy array (as lbmpy's "
                f"boundary handling keeps it), got an array of shape {index_list.shape} and "
                f"dtype {index_list.dtype}; or give its length, index_list=<entries>"
            )
        n = int(index_list.size)
    elif isinstance(index_list, (int, np.integer)) and not isinstance(index_list, bool):
        n = int(index_list)
    else:
        raise KernelError(
            f"index_list must be the list (a structured NumPy array) or its number of entries, "
            f"got {type(index_list).__name__}"
        )
    if n < 1:
        raise KernelError(f"index_list has no entries ({n}); a boundary kernel needs at least one")
    return n


class IndexListLengthError(KernelError):
    """The index list given has another number of entries than the kernel's
    fixed-size index field."""


def fixed_length(
    fields: Mapping[str, Any], names: frozenset[str], length: int | None
) -> int | None:
    """The list length to predict with: a fixed-size index field's own
    number of entries (the kernel's guard runs that many threads), checked
    against the ``length`` given; ``length`` for symbolic-size lists."""
    for p in sorted(names):
        extents = tuple(getattr(fields[p], "spatial_shape", ()))
        if not extents or not all(isinstance(e, (int, np.integer)) for e in extents):
            continue
        n = int(np.prod(extents))
        if length is not None and length != n:
            raise IndexListLengthError(
                f"the index list has {length} entries, but the kernel was generated for the "
                f"fixed-size index field {fields[p].name} of {n} entries (its guard runs {n} "
                f"threads): pass that field's list, or generate the kernel with a "
                "symbolic-size index field (ps.Field.create_generic) to predict other lengths"
            )
        length = n
    return length


def list_sizes(params: list[tuple[str, Any]], pointers: Mapping[str, Any],
               names: frozenset[str], length: int) -> dict[str, int]:
    """The size (``length``) and stride (1 entry) parameters of the lists."""
    lists = {pointers[p].name for p in names}
    out: dict[str, int] = {}
    for name, prop in params:
        field = getattr(prop, "field", None)
        if field is None or field.name not in lists:
            continue
        kind = type(prop).__name__
        if kind == "FieldShape":
            out[name] = length
        elif kind == "FieldStride":
            out[name] = 1
    return out


def is_gather(offset: IntPoly, data: set[sp.Symbol]) -> bool:
    return any(a.free_symbols & data for a in offset.atoms)


def refuse(field: str, order_given: bool) -> IndirectAccessError:
    what = "its order alone cannot fix" if order_given else "the model cannot know"
    return IndirectAccessError(
        f"the field {field} is accessed at positions read from an index list (a boundary "
        f"kernel), which {what}: give the list, index_list=<the structured NumPy array of the "
        "boundary handling>, or its length and order, index_list=<entries>, "
        f"list_order in {ORDERS}"
    )


def check_sorted(pointers: list[str], layouts: Mapping[str, FieldLayout]) -> None:
    """Refuse a sorted list given by its length for a gathered array of
    structures (MODEL.md §1 ``gathers``): consecutive entries name different
    values of nearby cells, whose sectors depend on which values of each
    cell the list holds (from ``itemsize`` B per entry, every value of every
    cell listed, to a 32 B sector, one value per cell), which its length
    cannot tell."""
    for p in pointers:
        lay = layouts[p]
        if lay.interleaved:
            raise IndirectAccessError(
                f"the field {lay.name} keeps the {lay.values_per_cell} values of a cell "
                "adjacent (an array of structures, as layout 'zyxf' or 'c'), so a sorted index "
                "list given by its length cannot fix which sectors its entries share (from the "
                "value's size to a 32 B sector each, by which values of each cell it names): "
                "give the list itself, "
                "index_list=<the structured NumPy array of the boundary handling>, or "
                "list_order='random' (a sector per entry, an upper bound)"
            )


def list_accesses(
    list_loads: Mapping[tuple[str, IntPoly], tuple[sp.Symbol, int]],
    pointers: Mapping[str, Any],
    length: int,
    entry_bytes: int,
) -> list[Access]:
    """The list's reads as loads of a 1D field of the members' width."""
    out = []
    unit = min(w for _, w in list_loads.values())
    for (ptr, offset), _ in list_loads.items():
        name = pointers[ptr].name
        f = Field(name, shape=(max(1, length * entry_bytes // unit),), itemsize=unit)
        out.append(f[offset.floordiv(unit).to_sympy()])
    return out


def _thread_values(length: int) -> dict[sp.Symbol, np.ndarray | int]:
    t = np.arange(length, dtype=np.int64)
    values: dict[sp.Symbol, np.ndarray | int] = {}
    for key, sym in BUILTINS.items():
        kind, axis = key.split(".")
        if kind == "threadIdx":
            values[sym] = t if axis == "x" else 0
        elif kind == "blockIdx":
            values[sym] = 0
        else:
            values[sym] = 1
    return values


def _evaluate(poly: IntPoly, values: Mapping[sp.Symbol, Any], tables: Mapping) -> np.ndarray:
    total: Any = 0
    for monomial, coeff in poly.terms:
        term: Any = coeff
        for atom in monomial:
            if atom in tables:
                table, index = tables[atom]
                term = term * np.asarray(table, dtype=np.int64)[_evaluate(index, values, tables)]
            elif atom in values:
                term = term * values[atom]
            else:
                raise KernelError(f"the gather offset term {atom} has no value")
        total = total + term
    return np.asarray(total, dtype=np.int64)


def gathers(
    accesses: list[tuple[str, IntPoly, bool]],
    fields: Mapping[str, Field],
    layouts: Mapping[str, FieldLayout],
    strides: Mapping[sp.Symbol, int],
    list_loads: Mapping[tuple[str, IntPoly], tuple[sp.Symbol, int]],
    tables: Mapping[sp.Symbol, tuple[tuple[int, ...], IntPoly]],
    index_list: ListSpec,
    order: str,
) -> tuple[Gather, ...]:
    """The gathers ``(pointer, offset, store)`` of a list kernel (module
    docstring; MODEL.md §1 ``gathers``); ``layouts``: each gathered field's
    layout (its base pointer's element offset from element 0, whether it is
    an array of structures); ``strides``: values of stride parameters."""
    length = list_length(index_list)
    assert length is not None
    if not isinstance(index_list, np.ndarray):
        if order not in ORDERS:
            raise KernelError(f"list_order must be one of {ORDERS}, got {order!r}")
        if order == "sorted":
            check_sorted([p for p, _, _ in accesses], layouts)
        return tuple(Gather(fields[p], store, length, order=order) for p, _, store in accesses)
    values: dict[sp.Symbol, Any] = {**_thread_values(length), **strides}
    raw = np.ascontiguousarray(index_list).view(np.uint8).reshape(length, -1)
    entry = raw.shape[1]
    for (_, offset), (atom, width) in list_loads.items():
        byte = _evaluate(offset, values, tables)
        rows, cols = byte // entry, byte % entry
        if np.any(rows != np.arange(length)) or np.any(cols + width > entry):
            raise KernelError(
                f"index_list entries of {entry} B do not match the kernel's reads of the list "
                f"(member at byte offsets {sorted(set(cols.tolist()))[:4]}); pass the array the "
                "kernel was generated for"
            )
        member = np.stack([raw[np.arange(length), cols + i] for i in range(width)], axis=1)
        dtype = {1: "<i1", 2: "<i2", 4: "<i4", 8: "<i8"}[width]
        values[atom] = np.ascontiguousarray(member).view(dtype).ravel().astype(np.int64)
    out = []
    for ptr, offset, store in accesses:
        pos = _evaluate(offset, values, tables) + layouts[ptr].origin_offset
        out.append(Gather(fields[ptr], store, positions=np.broadcast_to(pos, (length,)).copy()))
    return tuple(out)


__all__ = [
    "IndexListLengthError",
    "ListSpec",
    "check_sorted",
    "fixed_length",
    "gathers",
    "is_gather",
    "list_accesses",
    "list_length",
    "list_pointers",
    "list_sizes",
    "refuse",
]
