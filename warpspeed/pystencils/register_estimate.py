"""The register estimate of a pystencils kernel without a compiler (MODEL.md
§3: the register limit of the occupancy; §13: approximations), read from its
code: the most 32-bit register words the thread holds at any statement.

**What is held.** The kernel body is read as its statements (declarations,
assignments, the conditions of branches; a loop's body once, the values it
uses held through all of it). A thread that updates one cell is read in
the order a compiler that computes each value just before its first use
runs it: between branches and loops, every store in program order, each
preceded by the declarations it needs. A folded thread (several cells) is
read in program order, its cells' values held together: nvcc runs the two
cells of a folded D3Q19 one after the other (80 registers on sm_80, one
cell 68) but interleaves those of a folded Allen-Cahn kernel (168, one cell
92), so the estimate cannot know which, and refuses some launchable blocks
of the first rather than offer failing ones of the second. A value is a declared
symbol, a distinct load (by its address, after the compiler merges repeated
loads) or a distinct call of a pure function (``exp(...)``, merged as
well). A value used in more than one statement is held from its first
statement to its last: its words count at every statement in between. A
value used in one statement only is transient.

**What a statement needs besides.** The transient values of one statement
are evaluated as its expression tree dictates, the Sethi-Ullman way: the
operands of a node in the order that needs fewest words at once, each
operand's result kept while the next is computed; held values cost
nothing, constants are immediates. A call to a math library routine needs
:data:`CALL_SCRATCH` words of its own besides its arguments.

The estimate is ``OVERHEAD`` words (thread indices, guard and address
arithmetic beyond what the statements show) plus the largest sum over the
statements of held words and the statement's need, capped at 255.

Approximations: the compiler may hoist loads for latency and keep more,
or schedule more cleverly and keep fewer (nvcc's D3Q19 in double: 68
registers on sm_80, 70 on sm_90, against 92 here); division, square roots
and the like are one node; neither the architecture nor the field sizes,
which move nvcc's count by a few registers, are known to it. Against nvcc
(``tests/benchmarks/bench_registers.py``, 59 corpus kernels, one cell per
thread, nvcc 13.0, sm_80; 0.74 to 2.5 times nvcc's count, 1.16 in the
median) it launches the same blocks as nvcc's count on 54 kernels, refuses
launchable ones on 5 (lattice Boltzmann kernels whose compiler reorders the
collision) and offers none that fails, nor on the folded stencils of
``stencils/`` (``tests/pystencils/test_registers.py``); on the project's H200
measurements (``fits/data/h200``) it launches every block that ran and
refuses every block that failed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pystencils.backend.ast.expressions import (
    PsBufferAcc,
    PsCall,
    PsConstantExpr,
    PsExpression,
    PsLiteralExpr,
    PsMemAcc,
    PsSubscript,
    PsSymbolExpr,
)
from pystencils.backend.ast.structural import (
    PsAssignment,
    PsConditional,
    PsDeclaration,
    PsLoop,
    PsStatement,
)
from pystencils.types import PsPointerType

#: Words (32-bit registers) of thread indices, guard and address arithmetic
#: beyond the statements' own.
OVERHEAD = 8
MAX_REGISTERS = 255
#: Words a math library routine (exp, pow, a double division, ...) uses itself.
CALL_SCRATCH = 16
#: Expressions that are values of their own: loads and pure calls, merged by address.
_VALUES = (PsMemAcc, PsBufferAcc, PsSubscript, PsCall)


def words(dtype: Any) -> int:
    """32-bit register words of a value of ``dtype`` (2 when unknown)."""
    if isinstance(dtype, PsPointerType):
        return 2
    size = getattr(dtype, "itemsize", None)
    return max(1, math.ceil(size / 4)) if isinstance(size, int) else 2


def _key(node: Any) -> tuple[str, str]:
    if isinstance(node, PsSymbolExpr):
        return ("symbol", node.symbol.name)
    return ("value", repr(node))


def _words_of(node: Any) -> int:
    if isinstance(node, PsSymbolExpr):
        return words(node.symbol.dtype)
    return words(getattr(node, "dtype", None))


@dataclass(frozen=True)
class _Statement:
    """One statement: the value it defines (if any) and the expressions it reads."""

    defines: tuple[tuple[str, str], int] | None
    reads: tuple[Any, ...]


@dataclass
class _Program:
    statements: list[_Statement] = field(default_factory=list)
    loops: list[tuple[int, int]] = field(default_factory=list)


def _statement(node: Any) -> _Statement | None:
    if isinstance(node, PsDeclaration):
        return _Statement((_key(node.lhs), _words_of(node.lhs)), (node.rhs,))
    if isinstance(node, PsAssignment):
        if isinstance(node.lhs, PsSymbolExpr):
            return _Statement((_key(node.lhs), _words_of(node.lhs)), (node.rhs,))
        address = tuple(c for c in node.lhs.children if isinstance(c, PsExpression))
        return _Statement(None, (node.rhs, *address))  # a store: its value and address
    if isinstance(node, PsStatement):
        return _Statement(None, (node.expression,))
    return None


def _walk(node: Any, program: _Program, demand: bool) -> None:
    """The statements under ``node`` in the order the module docstring says
    (``demand``: one cell per thread, each value computed before its first use)."""
    own = _statement(node)
    if own is not None:
        program.statements.append(own)
    elif isinstance(node, PsConditional):
        program.statements.append(_Statement(None, (node.condition,)))
        for branch in (node.branch_true, node.branch_false):
            if branch is not None:
                _walk(branch, program, demand)
    elif isinstance(node, PsLoop):
        start = len(program.statements)
        program.statements.append(_Statement((_key(node.counter), _words_of(node.counter)),
                                             (node.start, node.stop, node.step)))
        _walk(node.body, program, demand)
        program.loops.append((start, len(program.statements) - 1))
    else:
        run: list[_Statement] = []
        for child in getattr(node, "children", ()):
            simple = _statement(child)
            if simple is not None:
                run.append(simple)
                continue
            program.statements += _on_demand(run) if demand else run
            run = []
            _walk(child, program, demand)
        program.statements += _on_demand(run) if demand else run


def _on_demand(run: list[_Statement]) -> list[_Statement]:
    """A run of plain statements in the order a compiler that computes each
    value just before its first use would run them: every store in program
    order, each preceded by the declarations it needs that have not run yet;
    declarations no store of the run needs, at the end."""
    defined = {st.defines[0]: i for i, st in enumerate(run) if st.defines is not None}
    done: set[int] = set()
    order: list[int] = []

    def emit(i: int) -> None:
        stack = [(i, False)]
        while stack:
            j, ready = stack.pop()
            if ready:
                order.append(j)
                continue
            if j in done:
                continue
            done.add(j)
            stack.append((j, True))
            needs = {defined[k] for e in run[j].reads for k, _ in _values(e)
                     if defined.get(k, j) < j}
            stack += [(d, False) for d in sorted(needs, reverse=True)]

    for i, st in enumerate(run):
        if st.defines is None:
            emit(i)
    for i in range(len(run)):
        emit(i)
    return [run[i] for i in order]


def _values(node: Any) -> Iterator[tuple[tuple[str, str], int]]:
    """The values (symbols, loads, calls) ``node`` reads, with their words."""
    if isinstance(node, PsSymbolExpr):
        yield _key(node), _words_of(node)
        return
    if isinstance(node, _VALUES):
        yield _key(node), _words_of(node)
    for child in getattr(node, "children", ()):
        yield from _values(child)


def _need(node: Any, held: set[tuple[str, str]]) -> int:
    """Words to evaluate ``node`` with the ``held`` values in registers
    (Sethi-Ullman over operands, module docstring)."""
    if isinstance(node, (PsConstantExpr, PsLiteralExpr)):
        return 0
    if isinstance(node, (PsSymbolExpr, *_VALUES)) and _key(node) in held:
        return 0
    if isinstance(node, PsSymbolExpr):
        return _words_of(node)
    operands = [c for c in getattr(node, "children", ()) if isinstance(c, PsExpression)]
    need, kept = _together(operands, held)
    need = max(need, _words_of(node))
    return max(need, CALL_SCRATCH + kept) if isinstance(node, PsCall) else need


def _together(operands: Any, held: set[tuple[str, str]]) -> tuple[int, int]:
    """Words to evaluate ``operands`` one after the other, the most
    demanding first, each result kept; and the words of the results."""
    need, kept = 0, 0
    for n, result in sorted(((_need(o, held), _words_of(o)) for o in operands), reverse=True):
        need, kept = max(need, n + kept), kept + result
    return need, kept


def _spans(program: _Program) -> dict[tuple[str, str], tuple[int, int, int]]:
    """Each value's first and last statement and its words; a value that a
    loop uses but that lives before it, held through the whole loop."""
    span: dict[tuple[str, str], tuple[int, int, int]] = {}
    for i, st in enumerate(program.statements):
        found = [v for e in st.reads for v in _values(e)]
        found += [st.defines] if st.defines is not None else []
        for key, size in found:
            first, _, _ = span.get(key, (i, i, size))
            span[key] = (first, i, size)
    for start, end in program.loops:
        for key, (first, last, size) in span.items():
            if first < start <= last:
                span[key] = (first, max(last, end), size)
    return span


def estimate_registers(kernel_function: Any, cells: int = 1) -> int:
    """Registers per thread of a pystencils GPU kernel whose thread updates
    ``cells`` lattice cells (its fold), read from its code (module
    docstring: how, and how close to nvcc)."""
    program = _Program()
    _walk(kernel_function.body, program, demand=cells == 1)
    span = _spans(program)
    most = 0
    for i, st in enumerate(program.statements):
        held = {k for k, (first, last, _) in span.items() if first <= i <= last and first < last}
        words_held = sum(span[k][2] for k in held)
        most = max(most, words_held + _together(st.reads, held)[0])
    return min(MAX_REGISTERS, OVERHEAD + most)


__all__ = ["CALL_SCRATCH", "MAX_REGISTERS", "OVERHEAD", "estimate_registers", "words"]
