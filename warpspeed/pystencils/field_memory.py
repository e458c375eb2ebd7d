"""The field memory of the IR walk (MODEL.md §1, "Accesses"):
:class:`MemoryReader`, the part of :class:`.walker.Walker` that reads the
loads and stores of field memory.

* a field access is its base pointer and linear element offset, the offset
  an :class:`IntPoly` in the CUDA builtins (:meth:`MemoryReader.memory`);
  an access through a computed pointer, a pointer that is no field's, or an
  index that is not quasi-affine raises the subclass of
  :class:`UnsupportedKernelError` that names it;
* a load of an address the same thread stored before is served from
  registers (or L1) and is not a load of the model; the store stays
  (MODEL.md §1: accesses per thread);
* a load of a struct member through a cast address is an index-list entry
  when it is one (:mod:`.indices`), else it is refused once the walk is done;
* an access after the guard block, for every thread of the grid, is refused.

:class:`.walker.Walker` holds the state these methods read and write
(declared here, set in its ``__init__``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pystencils.backend.ast.expressions import PsAddressOf, PsCast, PsMemAcc, PsSymbolExpr

from .fpcount import FpCounter
from .indices import IndexReader, NotAnIndex, Opaque, element_size, short
from .poly import IntPoly
from .unsupported import (
    BranchError,
    IndirectAccessError,
    NonAffineIndexError,
    TernaryIndexError,
    UnsupportedConstructError,
    struct_member,
)


class MemoryReader(IndexReader):
    """Loads and stores of field memory (module docstring); indices:
    :class:`IndexReader`."""

    pointers: Mapping[str, Any]
    loads: list[tuple[str, IntPoly]]
    forwarded: list[tuple[str, IntPoly]]
    itemsizes: dict[str, int]
    fp: FpCounter
    _stored: set[tuple[str, IntPoly]]
    _guard_closed: bool
    _replica: bool
    _struct_loads: list[str]

    def _guarded_access(self) -> None:
        if self._guard_closed and not self._replica:
            raise BranchError(
                f"`{self._statement}` accesses memory after the guard block, for every "
                "thread of the grid; warpspeed models one guard around the whole body"
            )

    def memory(self, node: PsMemAcc) -> tuple[str, IntPoly]:
        """Base pointer and linear element offset of a field access
        (MODEL.md §1, "Accesses")."""
        ptr = node.pointer
        if not isinstance(ptr, PsSymbolExpr):
            name = self._struct_base(node)
            if name is not None:
                raise struct_member(name, f"`{self._statement}`")
            raise UnsupportedConstructError(
                f"the memory access {short(node)} in `{self._statement}` goes through a "
                "computed pointer; only field base pointers are supported"
            )
        field = self.pointers.get(ptr.symbol.name)
        if field is None:
            raise UnsupportedConstructError(
                f"the memory access {short(node)} in `{self._statement}` goes through "
                f"{ptr.symbol.name}, which is not a field's base pointer"
            )
        self.itemsizes.setdefault(ptr.symbol.name, element_size(ptr.symbol.dtype))
        try:
            offset = self.index(node.offset)
        except NotAnIndex as exc:
            raise self._index_error(field.name, exc.opaque) from None
        return ptr.symbol.name, offset

    def _index_error(self, field: str, opaque: Opaque) -> Exception:
        where = f"the access to field {field} in `{self._statement}`"
        if opaque.kind == "ternary":
            return TernaryIndexError(
                f"{where} has an index with the ternary {opaque.what} (e.g. a periodic "
                "wrap-around); warpspeed needs quasi-affine indices: write the wrap as "
                "int_rem(ctr + 1, N), which is modelled, or predict the kernel without it"
            )
        if opaque.kind == "nonaffine":
            return NonAffineIndexError(
                f"{where} has the index term {opaque.what}, which is not quasi-affine in the "
                "thread coordinates (MODEL.md §1)"
            )
        return IndirectAccessError(
            f"{where} has an index that depends on data ({opaque.what}): an indirect "
            f"(gather/scatter) access of {field} is not quasi-affine and cannot be modelled; "
            "index-list (boundary) kernels are of this kind: predict the dense kernel, or "
            "describe the accesses by hand as a ws.Kernel"
        )

    def _struct_base(self, node: PsMemAcc) -> str | None:
        """The field (or pointer) whose struct member ``node`` accesses
        through a cast address, ``((T *) &base[i])[j]``; None otherwise."""
        ptr = node.pointer
        inner = (ptr.operand.operand
                 if isinstance(ptr, PsCast) and isinstance(ptr.operand, PsAddressOf) else None)
        if not (isinstance(inner, PsMemAcc) and isinstance(inner.pointer, PsSymbolExpr)):
            return None
        field = self.pointers.get(inner.pointer.symbol.name)
        return field.name if field is not None else inner.pointer.symbol.name

    def _load(self, node: PsMemAcc) -> int:
        name = self._struct_base(node)
        if name is not None:
            member = self.list_member(node)
            if member is not None:  # an index-list entry (warpspeed.input.gathers)
                return self.fp.leaf(("entry", member.name))
            self._struct_loads.append(name)
            return self.fp.leaf(("struct", name, id(node)))
        self._guarded_access()
        ptr_name, off = self.memory(node)
        key = (ptr_name, off)
        if key in self._stored:
            if key not in self.forwarded:
                self.forwarded.append(key)
        else:
            self.loads.append(key)
        return self.fp.leaf(("load", ptr_name, off))


__all__ = ["MemoryReader"]
