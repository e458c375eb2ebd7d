"""One pass over the lowered IR of a pystencils GPU kernel (MODEL.md §1).

:class:`Walker` collects, in program order:

* the loads and stores of field memory, as (base pointer, linear element
  offset) with the offset an :class:`IntPoly` in the CUDA builtins. A load
  of an address the same thread stored before is served from registers
  (or L1) and is not a load of the model; the store stays (MODEL.md §1:
  accesses per thread): :class:`.field_memory.MemoryReader`, the class it
  extends;
* the guard conditions, as ``e < 0``;
* the FP work, registered in an :class:`FpCounter`;
* the iteration counters (``ctr_*``), for the counter steps.

Every construct outside the model raises the subclass of
:class:`UnsupportedKernelError` that names it, with the field and the
statement where it occurs and what the user can do.

``sizes`` binds the field size parameters to integers; the stride
parameters of symbolic-size fields stay atoms (:mod:`.extract` reads the
dimension of each offset term from them). In *probe* mode
(``probe=True``: symbolic sizes without a shape) unbound size symbols stay
atoms too, so that a construct the model refuses anyway is reported
before the missing shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp
from pystencils.backend.ast.expressions import (
    PsAdd,
    PsAddressOf,
    PsAnd,
    PsArrayInitList,
    PsBufferAcc,
    PsCall,
    PsCast,
    PsConstantExpr,
    PsDiv,
    PsEq,
    PsExpression,
    PsGe,
    PsGt,
    PsLe,
    PsLiteralExpr,
    PsLt,
    PsMemAcc,
    PsMul,
    PsNe,
    PsNeg,
    PsRel,
    PsRem,
    PsSub,
    PsSubscript,
    PsSymbolExpr,
)
from pystencils.backend.ast.structural import (
    PsAssignment,
    PsBlock,
    PsComment,
    PsConditional,
    PsLoop,
    PsPragma,
    PsStatement,
)

from .field_memory import MemoryReader
from .fpcount import FMA, FpCounter, call_work
from .indices import (
    NotAnIndex,
    Opaque,
    bits,
    is_float,
    is_int,
    short,
)
from .poly import IntPoly
from .reductions import Reduction, read_reduction
from .unsupported import (
    BranchError,
    GridStridedLoopError,
    LoopError,
    RedBlackError,
    ReductionError,
    UnsupportedConstructError,
    struct_member,
)

MAX_UNROLL = 256


def _conjuncts(cond: PsExpression) -> list[PsExpression]:
    if isinstance(cond, PsAnd):
        return _conjuncts(cond.operand1) + _conjuncts(cond.operand2)
    return [cond]


def _reduction_call(node: Any) -> PsCall | None:
    """The first atomic / reduction write-back call below ``node``."""
    if isinstance(node, PsCall):
        name = str(node.function.name)
        if name.startswith("atomic") or "Reduction" in type(node.function).__name__:
            return node
    for child in node.children:
        found = _reduction_call(child)
        if found is not None:
            return found
    return None


def _has_parity(node: Any) -> bool:
    if isinstance(node, PsRem) and isinstance(node.operand2, PsConstantExpr):
        return int(node.operand2.constant.value) == 2
    return any(_has_parity(c) for c in node.children)


class Walker(MemoryReader):
    """The IR walk (module docstring); field memory: :class:`MemoryReader`;
    indices: :class:`IndexReader`."""

    def __init__(
        self,
        pointers: Mapping[str, Any],
        sizes: Mapping[str, int],
        strides: frozenset[str] = frozenset(),
        probe: bool = False,
        grid_points: tuple[int, int, int] = (1, 1, 1),
        list_pointers: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(sizes, strides, probe, list_pointers)
        self.grid_points = grid_points
        self.grid_spans: dict[int, sp.Symbol] = {}
        self._replica = False
        self.reductions: list[Reduction] = []
        self.pointers = pointers
        self.counters: dict[str, IntPoly] = {}
        self.loads: list[tuple[str, IntPoly]] = []
        self.stores: list[tuple[str, IntPoly]] = []
        self.forwarded: list[tuple[str, IntPoly]] = []
        self.guards: list[tuple[IntPoly, str]] = []
        self.itemsizes: dict[str, int] = {}
        self.fp = FpCounter()
        self._stored: set[tuple[str, IntPoly]] = set()
        self._const_syms: set[str] = set()
        self._guard_closed = False
        self._struct_loads: list[str] = []

    # -- structure ------------------------------------------------------

    def block(self, node: PsBlock) -> None:
        for stmt in node.statements:
            self.statement(stmt)

    def statement(self, node: Any) -> None:
        if isinstance(node, PsBlock):
            red = read_reduction(node) if self._guard_closed else None
            if red is not None:  # the write-back of a reduction (.reductions)
                self.reductions.append(red)
                return
            self.block(node)
        elif isinstance(node, PsAssignment):  # also PsDeclaration
            self._statement = node
            self.assignment(node)
        elif isinstance(node, PsConditional):
            self.conditional(node)
        elif isinstance(node, PsLoop):
            self.loop(node)
        elif isinstance(node, PsStatement):
            self._statement = node
            call = _reduction_call(node)
            if call is not None:
                self._reduction(call)
            self.value(node.expression)
        elif not isinstance(node, (PsComment, PsPragma)):
            raise UnsupportedConstructError(
                f"unsupported IR construct {type(node).__name__} in the kernel body: "
                f"{short(node)}"
            )

    def finish(self) -> None:
        """Checks that need the whole kernel (call after the walk)."""
        if self._struct_loads:
            raise struct_member(self._struct_loads[0], "the kernel")

    def assignment(self, node: PsAssignment) -> None:
        """A store (after its right-hand side is read), or a declaration:
        integer symbols become indices, all values FP work (MODEL.md §1)."""
        lhs, rhs = node.lhs, node.rhs
        if isinstance(lhs, PsMemAcc):
            self.value(rhs)  # the right-hand side is read before the store
            self._guarded_access()
            ptr, off = self.memory(lhs)
            self.stores.append((ptr, off))
            self._stored.add((ptr, off))
            return
        if not isinstance(lhs, PsSymbolExpr):
            raise UnsupportedConstructError(
                f"unsupported assignment target {type(lhs).__name__} in `{self._statement}`"
            )
        name = lhs.symbol.name
        if isinstance(rhs, PsArrayInitList):
            self.env[name] = [self._array_item(i) for i in rhs.items]
            return
        value = self.value(rhs)
        if self.fp.is_const(value):
            self._const_syms.add(name)
        if is_int(lhs):
            try:
                index: IntPoly | Opaque = self.index(rhs)
            except NotAnIndex as exc:
                index = exc.opaque
            self.env[name] = index
            if isinstance(index, IntPoly) and name.startswith("ctr"):
                self.counters[name] = index

    def _array_item(self, node: Any) -> IntPoly | Opaque:
        try:
            return self.index(node)
        except NotAnIndex as exc:
            return exc.opaque

    def conditional(self, node: PsConditional) -> None:
        """The guard around the body (MODEL.md §1, "Iteration domain")."""
        cond_text = short(node.condition)
        self._statement = f"if ({cond_text})"
        if node.branch_false is not None:
            self._check_reduction(node)
            raise BranchError(
                f"an if/else in the kernel body (`if ({cond_text})`); warpspeed models the "
                "guard `if (ctr < N && ...)` that switches threads off, not branches: write "
                "the branch as a select (sp.Piecewise) in the assignments"
            )
        if self._replica:  # a later grid-stride point: the first one's guard holds
            self.block(node.branch_true)
            return
        for cond in _conjuncts(node.condition):
            self.guards.append(self.guard(cond, node))
        self.block(node.branch_true)
        self._guard_closed = True

    def guard(self, cond: PsExpression, node: PsConditional) -> tuple[IntPoly, str]:
        """A guard condition as ``e < 0`` in the builtins (MODEL.md §1,
        "Iteration domain"); other conditions raise the class naming them."""
        text = short(cond)
        operands = getattr(cond, "operand1", None), getattr(cond, "operand2", None)
        if isinstance(cond, PsRel) and any(is_float(o) for o in operands):
            self._check_reduction(node)
            raise BranchError(
                f"the condition `{text}` depends on floating-point data; warpspeed models the "
                "guard `if (ctr < N && ...)` only: write data-dependent updates as a select "
                "(sp.Piecewise), which is modelled"
            )
        if isinstance(cond, (PsEq, PsNe)):
            if _has_parity(cond):
                raise RedBlackError(
                    f"the condition `{text}` switches every second thread off (a red-black "
                    "sweep written as a branch), which the model cannot express; generate "
                    "the colour with a checkerboard iteration slice, which is modelled: "
                    "ps.make_slice[1 + int_rem(y + z, 2):-1:2, 1:-1, 1:-1] with "
                    "cfg.gpu.manual_launch_grid = True"
                )
            raise BranchError(
                f"the condition `{text}` selects threads by an equality; warpspeed models "
                "the guard `if (ctr < N && ...)` only"
            )
        if not isinstance(cond, (PsLt, PsLe, PsGt, PsGe)):
            raise BranchError(
                f"the condition `{text}` is not a comparison of iteration counters; "
                "warpspeed models the guard `if (ctr < N && ...)` only"
            )
        if self._guard_closed or self.loads or self.stores:
            raise BranchError(
                f"the condition `{text}` guards only part of the kernel's memory accesses; "
                "warpspeed models one guard around the whole body"
            )
        try:
            a, b = self.index(cond.operand1), self.index(cond.operand2)
        except NotAnIndex as exc:
            raise BranchError(
                f"the condition `{text}` depends on data ({exc.opaque.what}); warpspeed "
                "needs control flow that follows from the thread coordinates alone"
            ) from None
        one = IntPoly.const(1)
        if isinstance(cond, PsLt):
            return a - b, text
        if isinstance(cond, PsLe):
            return a - b - one, text
        if isinstance(cond, PsGt):
            return b - a, text
        return b - a - one, text

    def _check_reduction(self, node: Any) -> None:
        call = _reduction_call(node)
        if call is not None:
            self._reduction(call)

    def _reduction(self, call: PsCall) -> None:
        target = short(call.children[0]) if call.children else "a scalar"
        raise ReductionError(
            f"the kernel reduces into {target} (`{short(call)}` after a per-thread "
            "accumulation): reductions are not modelled yet; predict the kernel without the "
            "reduction (the assignments with the reduced expression stored to a field)"
        )

    def loop(self, node: PsLoop) -> None:
        """Unroll a loop of constant bounds (MODEL.md §1: control flow must be
        resolved by the generator); grid-strided and dynamic loops are refused."""
        name = node.counter.symbol.name
        parts = (node.start, node.stop, node.step)
        if any("gridDim" in str(e) for e in parts):
            self._grid_stride(node)
            return
        try:
            start, stop, step = (self.index(e) for e in parts)
        except NotAnIndex as exc:
            raise LoopError(
                f"the loop over {name} has data-dependent bounds ({exc.opaque.what})"
            ) from None
        if not (start.is_const and stop.is_const and step.is_const) or step.constant <= 0:
            raise LoopError(
                f"the loop over {name} from {short(node.start)} to {short(node.stop)} step "
                f"{short(node.step)} has bounds that are not constants; warpspeed unrolls "
                "constant loops only"
            )
        values = range(start.constant, stop.constant, step.constant)
        if len(values) > MAX_UNROLL:
            raise LoopError(
                f"the loop over {name} has {len(values)} iterations; at most {MAX_UNROLL} "
                "constant iterations are unrolled"
            )
        for v in values:
            self.env[name] = IntPoly.const(v)
            self.block(node.body)

    def _grid_stride(self, node: PsLoop) -> None:
        """A grid-stride loop ``for (c = blockIdx * blockDim; c < N; c +=
        gridDim * blockDim)`` (MODEL.md §1, work per thread): with
        ``grid_points[a] = p`` points per thread along the loop's axis,
        thread ``g`` updates ``g + j * S`` for ``j < p``, ``S`` the threads
        of the grid along the axis. ``S`` is the atom ``grid_spans[a]``
        until the domain is known (``S = ceil(extent / p)``, set by
        :mod:`.extract`); the guard is read from the first point. ``p = 1``
        is pystencils' automatic launch grid, which covers the domain."""
        name = node.counter.symbol.name
        step = short(node.step)
        axes = [a for a, c in enumerate("xyz") if f"gridDim.{c}" in step]
        if len(axes) != 1 or "gridDim" in short(node.start) + short(node.stop):
            raise GridStridedLoopError(
                f"the loop over {name} steps by `{step}`, not by gridDim * blockDim of one "
                "axis; warpspeed models grid-stride loops of pystencils' gridstrided schemes"
            )
        a = axes[0]
        try:
            start, stop = self.index(node.start), self.index(node.stop)
        except NotAnIndex as exc:
            raise LoopError(
                f"the loop over {name} has data-dependent bounds ({exc.opaque.what})"
            ) from None
        if not stop.is_const or stop.constant <= 0:
            raise GridStridedLoopError(
                f"the grid-stride loop over {name} ends at {short(node.stop)}, not a positive "
                "constant; give the kernel's parameters (params=...)"
            )
        points = self.grid_points[a]
        span = self.grid_spans.setdefault(a, sp.Symbol(f"__grid_span_{'xyz'[a]}", integer=True))
        replica = self._replica
        for j in range(points):
            self.env[name] = start + IntPoly.const(j) * IntPoly.atom(span)
            self._replica = replica or j > 0
            self.block(node.body)
        self._replica = replica

    # -- values (FP work) -------------------------------------------------

    def value(self, node: Any) -> int:
        """Register ``node`` and its subexpressions (MODEL.md §1 "Work": FP
        work, CSE by structure); loads are collected."""
        fp = self.fp
        if isinstance(node, PsMemAcc):
            return self._load(node)
        if isinstance(node, PsSymbolExpr):
            name = node.symbol.name
            return fp.leaf(("sym", name), const=name in self._const_syms)
        if isinstance(node, PsConstantExpr):
            return fp.leaf(("const", str(node.constant)), const=True)
        if isinstance(node, PsLiteralExpr):
            return fp.leaf(("lit", str(node.literal)))
        if isinstance(node, (PsNeg, PsCast)):
            return self.value(node.operand)
        if isinstance(node, (PsAddressOf, PsBufferAcc)):
            raise UnsupportedConstructError(
                f"unsupported IR construct {type(node).__name__} ({short(node)}) in "
                f"`{self._statement}`: pointer arithmetic is outside the model"
            )
        if isinstance(node, PsMul) and is_float(node):
            for a, b in ((node.operand1, node.operand2), (node.operand2, node.operand1)):
                if isinstance(a, PsConstantExpr) and abs(float(a.constant.value)) == 1.0:
                    return self.value(b)
        kids = [self.value(c) for c in node.children]
        width = bits(node)
        if isinstance(node, PsCall):
            name = str(node.function.name)
            if not width and "philox_float" not in name:
                return fp.op(f"call:{name}", kids)
            work, note = call_work(name)
            if note:
                fp.note(note)
            width = width or (32 if "float32" in name else 64)
            return fp.op(f"call:{name}", kids, work, bits=width)
        if isinstance(node, PsSubscript):
            return fp.op("subscript", kids)
        if not width and isinstance(node, PsRel) and is_float(node.operand1):
            return fp.op(type(node).__name__, kids, FMA, bits=bits(node.operand1))
        if width and isinstance(node, (PsAdd, PsSub)):
            return fp.op(type(node).__name__, kids, FMA, "add", width)
        if width and isinstance(node, PsMul):
            return fp.op("PsMul", kids, FMA, "mul", width)
        if width and isinstance(node, PsDiv):
            return fp.op("PsDiv", kids, (("div", 1.0),), bits=width)
        if width and isinstance(node, PsRem):
            return fp.op("PsRem", kids, (("other", 1.0),), bits=width)
        return fp.op(type(node).__name__, kids)


__all__ = ["MAX_UNROLL", "Walker"]
