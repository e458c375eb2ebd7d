"""Index arithmetic of the IR walk (MODEL.md §1: indices quasi-affine in
the CUDA builtins).

:class:`IndexReader` turns an integer IR expression into an
:class:`IntPoly` in the builtins, or reports why it cannot be an index:
the value is loaded from memory or computed from floating-point data
(``"data"``), contains an integer ternary (``"ternary"``), or divides by a
non-constant (``"nonaffine"``). The walker turns these into the error
class that names the construct, the field and the statement.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import sympy as sp
from pystencils.backend.ast.expressions import (
    PsAdd,
    PsAddressOf,
    PsBinOp,
    PsCall,
    PsCast,
    PsConstantExpr,
    PsDiv,
    PsEq,
    PsGe,
    PsGt,
    PsIntDiv,
    PsLe,
    PsLiteralExpr,
    PsLt,
    PsMemAcc,
    PsMul,
    PsNe,
    PsNeg,
    PsRem,
    PsSub,
    PsSubscript,
    PsSymbolExpr,
    PsTernary,
)
from pystencils.backend.emission.c_printer import emit_code
from pystencils.types import PsIeeeFloatType, PsIntegerType, PsPointerType, PsType

from .launch import BUILTINS
from .poly import IntPoly
from .unsupported import GridStridedLoopError, MissingParameterError, UnsupportedConstructError
from .wraps import Selector

_TEXT = 160


def element_size(pointer: PsType | None) -> int:
    """Bytes of the element a pointer type points to. pystencils types a cast's
    target and a symbol's type ``PsType | None`` and a size ``int | None``; a
    pointer that reaches a memory access has a sized element type, else this
    is refused."""
    target = cast(PsPointerType, pointer)  # a cast of an address, a field's base pointer
    size = target.base_type.itemsize
    if size is None:
        raise UnsupportedConstructError(f"a memory access through {target}, whose element "
                                        "has no size")
    return int(size)


def short(node: Any) -> str:
    """The C code of an IR node on one line, shortened."""
    try:
        text = emit_code(node)
    except Exception:  # the printer does not know every node; fall back to the IR text
        text = str(node)
    text = " ".join(text.split())
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


@dataclass(frozen=True)
class Opaque:
    """An integer value the model cannot index with: ``kind`` is ``"data"``,
    ``"ternary"`` or ``"nonaffine"`` (module docstring), ``what`` says why."""

    kind: str
    what: str


class NotAnIndex(Exception):
    """Internal: an expression is not an index; the walker names the error."""

    def __init__(self, opaque: Opaque) -> None:
        super().__init__(opaque.what)
        self.opaque = opaque


def is_float(node: Any) -> bool:
    dtype = getattr(node, "dtype", None)
    if dtype is None and isinstance(node, PsSymbolExpr):
        dtype = node.symbol.dtype
    return isinstance(dtype, PsIeeeFloatType)


def is_int(node: Any) -> bool:
    dtype = getattr(node, "dtype", None)
    if dtype is None and isinstance(node, PsSymbolExpr):
        dtype = node.symbol.dtype
    return isinstance(dtype, PsIntegerType)


def bits(node: Any) -> int:
    dtype = getattr(node, "dtype", None)
    return int(dtype.width) if isinstance(dtype, PsIeeeFloatType) else 0


class IndexReader:
    """Integer IR expressions → :class:`IntPoly` (module docstring).

    ``env``: integer symbols declared so far; ``sizes``: field size
    parameters bound to integers; ``strides``: the stride parameters of
    fields of symbolic size, kept as atoms so that each offset term shows
    the dimension it moves along; ``probe``: leave unbound sizes as atoms
    (symbolic sizes without a shape)."""

    def __init__(
        self, sizes: Mapping[str, int], strides: frozenset[str] = frozenset(), probe: bool = False,
        list_pointers: frozenset[str] = frozenset(),
    ) -> None:
        self.list_pointers = list_pointers
        #: index-list members read: (pointer, byte offset) -> (atom, bytes)
        self.list_loads: dict[tuple[str, IntPoly], tuple[sp.Symbol, int]] = {}
        #: constant tables looked up with data: atom -> (values, index)
        self.tables: dict[sp.Symbol, tuple[tuple[int, ...], IntPoly]] = {}
        self.sizes = sizes
        self.strides = strides
        self.probe = probe
        self.env: dict[str, IntPoly | Opaque | list] = {}
        self.selectors: dict[sp.Symbol, Selector] = {}
        self._where: Any = ""

    @property
    def _statement(self) -> str:
        """The statement being read, as C code on one line: printed only
        when an error names it (printing every statement of a large kernel
        costs more than reading it)."""
        if not isinstance(self._where, str):
            self._where = short(self._where)
        return self._where

    @_statement.setter
    def _statement(self, where: Any) -> None:
        """A text, or an IR node printed by the getter when needed."""
        self._where = where

    def index(self, node: Any) -> IntPoly:
        """An integer IR expression as a polynomial in the CUDA builtins
        (MODEL.md §1, quasi-affine indices); raises :class:`NotAnIndex`
        for data-dependent values."""
        if isinstance(node, PsConstantExpr):
            value = node.constant.value
            if isinstance(value, float) or is_float(node):
                raise NotAnIndex(Opaque("data", f"the floating-point constant {node}"))
            return IntPoly.const(int(value))
        if isinstance(node, PsLiteralExpr):
            text = str(node.literal.text)
            if text in BUILTINS:
                return IntPoly.atom(BUILTINS[text])
            if text.startswith("gridDim"):
                raise GridStridedLoopError(
                    f"`{self._statement}` uses {text}: the points of a thread depend on the "
                    "launch grid (a grid-strided scheme); use indexing_scheme 'linear3d'"
                )
            raise UnsupportedConstructError(
                f"the builtin {text} in `{self._statement}` is not modelled; only threadIdx, "
                "blockIdx and blockDim may appear in indices"
            )
        if isinstance(node, PsSymbolExpr):
            return self._symbol(node)
        if isinstance(node, PsCast):
            if is_float(node) or is_float(node.operand):
                raise NotAnIndex(Opaque("data", f"the floating-point value {short(node)}"))
            return self.index(node.operand)
        if isinstance(node, PsMemAcc):
            member = self.list_member(node)
            if member is not None:
                return IntPoly.atom(member)
            raise NotAnIndex(Opaque("data", f"loaded by {short(node)}"))
        if isinstance(node, PsTernary):
            return self._select(node)
        if isinstance(node, PsSubscript):
            return self._subscript(node)
        if isinstance(node, PsCall):
            raise NotAnIndex(Opaque("data", f"the call {short(node)}"))
        if isinstance(node, PsNeg):
            return -self.index(node.operand)
        if isinstance(node, PsBinOp):
            a, b = self.index(node.operand1), self.index(node.operand2)
            if isinstance(node, PsAdd):
                return a + b
            if isinstance(node, PsSub):
                return a - b
            if isinstance(node, PsMul):
                return a * b
            if isinstance(node, (PsIntDiv, PsRem, PsDiv)):
                if not b.is_const or b.constant <= 0:
                    if self.probe:
                        return IntPoly.atom(sp.Symbol(f"({short(node)})"))
                    raise NotAnIndex(Opaque("nonaffine", f"{short(node)} (divisor {b})"))
                return a.mod(b.constant) if isinstance(node, PsRem) else a.floordiv(b.constant)
        raise NotAnIndex(Opaque("nonaffine", f"{type(node).__name__} {short(node)}"))

    def _select(self, node: PsTernary) -> IntPoly:
        """``c ? a : b`` as ``b + s`` with a placeholder atom ``s`` for
        ``(a - b) * [c]`` (:mod:`.wraps`), when ``c`` compares integers;
        else :class:`NotAnIndex` (``"ternary"``)."""
        cond = node.condition
        opaque = NotAnIndex(Opaque("ternary", f"({short(node)})"))
        if not isinstance(cond, (PsLt, PsLe, PsGt, PsGe, PsEq, PsNe)):
            raise opaque
        try:
            x, y = self.index(cond.operand1), self.index(cond.operand2)
            a, b = self.index(node.case_then), self.index(node.case_else)
        except NotAnIndex:
            raise opaque from None
        diff = a - b
        parity = self._parity(cond)
        if parity is not None:  # a red-black start: the same form as int_rem's
            return b + diff * parity
        one = IntPoly.const(1)
        below = {PsLt: x - y, PsLe: x - y - one, PsGt: y - x, PsGe: y - x - one}
        if isinstance(cond, (PsEq, PsNe)):
            sel = Selector(x - y, short(node), diff, "eq" if isinstance(cond, PsEq) else "ne")
        else:
            sel = Selector(below[type(cond)], short(node), diff)
        atom = next((s for s, v in self.selectors.items() if v == sel), None)
        if atom is None:
            atom = sp.Symbol(f"__select_{len(self.selectors)}", integer=True)
            self.selectors[atom] = sel
        return b + IntPoly.atom(atom)

    def _parity(self, cond: Any) -> IntPoly | None:
        """``[e % 2 == k]`` (or ``!=``) for a constant ``k`` in {0, 1} as the
        polynomial ``r`` or ``1 - r`` in ``r = e mod 2``: pystencils' red-black
        slice start ``Piecewise((s0, Eq(int_rem(e, 2), 0)), (s1, True))``
        becomes ``s1 + (s0 - s1) (1 - e mod 2)``, the representation of the
        ``s0 + int_rem(e, 2)`` form (the same parity approximation: ``e``
        non-negative, as counters are). None for any other condition."""
        if not isinstance(cond, (PsEq, PsNe)):
            return None
        ops = (cond.operand1, cond.operand2)
        for rem, other in (ops, ops[::-1]):
            if (isinstance(rem, PsRem) and isinstance(rem.operand2, PsConstantExpr)
                    and rem.operand2.constant.value == 2 and isinstance(other, PsConstantExpr)
                    and other.constant.value in (0, 1)):
                r = self.index(rem)
                one = IntPoly.const(1)
                hit = r if other.constant.value == 1 else one - r
                return hit if isinstance(cond, PsEq) else one - hit
        return None

    def list_member(self, node: PsMemAcc) -> sp.Symbol | None:
        """A member of an index-list entry, ``((int32_t *) &list[off])[0]``,
        as a data atom (:mod:`warpspeed.input.gathers`), or None for other loads."""
        ptr = node.pointer
        if not (isinstance(ptr, PsCast) and isinstance(ptr.operand, PsAddressOf)):
            return None
        inner = ptr.operand.operand
        if not (isinstance(inner, PsMemAcc) and isinstance(inner.pointer, PsSymbolExpr)):
            return None
        name = inner.pointer.symbol.name
        if name not in self.list_pointers:
            return None
        offset = self.index(inner.offset) + self.index(node.offset) * IntPoly.const(
            element_size(ptr.target_type))
        key = (name, offset)
        if key not in self.list_loads:
            width = element_size(ptr.target_type)
            atom = sp.Symbol(f"__entry_{len(self.list_loads)}", integer=True)
            self.list_loads[key] = (atom, width)
        return self.list_loads[key][0]

    def _subscript(self, node: PsSubscript) -> IntPoly:
        arr = node.array
        items = self.env.get(arr.symbol.name) if isinstance(arr, PsSymbolExpr) else None
        if not isinstance(items, list) or len(node.index) != 1:
            raise NotAnIndex(Opaque("data", f"the array element {short(node)}"))
        idx = self.index(node.index[0])
        if not idx.is_const and all(isinstance(i, IntPoly) and i.is_const for i in items):
            values = tuple(i.constant for i in items)
            atom = next((a for a, t in self.tables.items() if t == (values, idx)), None)
            if atom is None:
                atom = sp.Symbol(f"__table_{len(self.tables)}", integer=True)
                self.tables[atom] = (values, idx)
            return IntPoly.atom(atom)
        if not idx.is_const or not 0 <= idx.constant < len(items):
            raise NotAnIndex(Opaque("data", f"the array element {short(node)}"))
        item = items[idx.constant]
        if isinstance(item, Opaque):
            raise NotAnIndex(item)
        return item

    def _symbol(self, node: PsSymbolExpr) -> IntPoly:
        name = node.symbol.name
        value = self.env.get(name)
        if isinstance(value, Opaque):
            raise NotAnIndex(value)
        if isinstance(value, IntPoly):
            return value
        if name in self.sizes:
            return IntPoly.const(self.sizes[name])
        if is_float(node):
            raise NotAnIndex(Opaque("data", f"the floating-point value {name}"))
        if name in self.strides or (self.probe and name.startswith("_size_")):
            return IntPoly.atom(sp.Symbol(name))
        counter = re.fullmatch(r"(ctr_\d+)__\d+", name)
        why = (f" (pystencils left the counter {counter.group(1)} as this parameter: an "
               "iteration slice's start depends on the counter of an axis that is computed "
               "later, e.g. a red-black start int_rem(y, 2) where y is the faster axis of the "
               "field's layout; make the start depend on a slower axis, or use layout fzyx)"
               ) if counter else ""
        raise MissingParameterError(
            f"`{self._statement}` depends on the kernel parameter {name}, whose value is "
            f"unknown at code generation; give it: params={{{name!r}: <integer>}}{why}"
        )




__all__ = ["IndexReader", "NotAnIndex", "Opaque", "is_float", "is_int", "short"]
