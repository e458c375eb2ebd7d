"""Reductions of pystencils GPU kernels (``ps.AddReductionAssignment`` and
friends): the per-thread accumulation and the atomic write-back
(MODEL.md §1 work per thread, §8 the atomics limiter of
:mod:`warpspeed.input.atomics`).

pystencils 2.1 accumulates into a local ``w_local`` inside the guard (FP
work the walker counts) and, after the guard, emits one block per reduced
scalar that ends in ``if (w_local != neutral ...) atomicOp(w, w_local)``.
Before the atomic it may pre-reduce:

* nothing (the default): one atomic per thread, ``scope="thread"``;
* a warp shuffle reduction (``gpu.assume_warp_aligned_block_size`` and
  ``gpu.warp_size``): ``log2(warp)`` shuffle + combine steps, then one
  atomic per warp (``lane_id == 0``), ``scope="warp"``. The warp is the
  code's, read from ``lane_id = thread_id % warp`` (else ``2**shuffles``),
  not the machine's: a machine with wider wavefronts runs one atomic per
  ``warp`` threads (:attr:`warpspeed.input.atomics.Atomics.warp`);
* a CUB block reduction (``gpu.use_cub_reductions``): one atomic per block,
  ``scope="block"``; the block size is a template argument, so the kernel
  runs with that block only (its fixed block).

The combine steps of the warp reduction are counted as FP work
(one FMA-class instruction each). CUB's block reduction is counted the
same way per thread (``log2(warp)`` combines; its shared-memory stage is
not modelled, noted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pystencils.backend.ast.expressions import PsCall, PsConstantExpr, PsRem, PsSymbolExpr
from pystencils.backend.ast.structural import PsBlock, PsConditional, PsStatement

from ..input.atomics import Atomics
from ..input.triples import as_triple
from .indices import short
from .unsupported import UnsupportedKernelError

_BLOCK_REDUCE = re.compile(r"block_reduce\s*<[^>]*?,\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*>")


@dataclass(frozen=True)
class Reduction:
    """One reduced scalar: its pointer parameter, the atomic's name, the
    pre-reduction scope, the combine steps per thread before the atomic,
    the block size a block reduction fixes (else None) and the lanes of a
    warp reduction as generated (else None)."""

    target: str
    atomic: str
    scope: str
    combines: int
    block: tuple[int, int, int] | None = None
    warp: int | None = None

    @property
    def kind(self) -> str:
        """The pre-reduction, with the warp's lanes: ``"warp of 32"``."""
        return self.scope if self.warp is None else f"{self.scope} of {self.warp}"


def _calls(node: Any) -> list[PsCall]:
    out = [node] if isinstance(node, PsCall) else []
    for child in node.children:
        out += _calls(child)
    return out


def _name(call: PsCall) -> str:
    return str(getattr(call.function, "name", call.function))


def _lanes(stmts: list[Any], shuffles: int) -> int:
    """The lanes of a warp reduction as generated (module docstring): the
    constant modulus of ``lane_id = thread_id % warp``, else ``2**shuffles``
    (each shuffle step halves the lanes)."""
    todo = list(stmts)
    while todo:
        node = todo.pop(0)
        if isinstance(node, PsRem) and isinstance(node.operand2, PsConstantExpr):
            return int(node.operand2.constant.value)
        todo += node.children
    return 2**shuffles


def read_reduction(node: PsBlock, warp_size: int = 32) -> Reduction | None:
    """The reduction of a write-back block after the guard (module
    docstring), or None when ``node`` is not one."""
    stmts = node.statements
    if not stmts or not isinstance(stmts[-1], PsConditional):
        return None
    cond = stmts[-1]
    body = cond.branch_true.statements if cond.branch_false is None else []
    if len(body) != 1 or not isinstance(body[0], PsStatement):
        return None
    call = body[0].expression
    if not isinstance(call, PsCall) or not _name(call).split("::")[-1].startswith("atomic"):
        return None
    if not call.children or not isinstance(call.children[0], PsSymbolExpr):
        return None
    calls = [c for s in stmts[:-1] for c in _calls(s)]
    names = [_name(c) for c in calls]
    shuffles = sum("shfl" in n for n in names)
    target = call.children[0].symbol.name
    atomic = _name(call)
    if any("block_reduce" in n for n in names):
        text = " ".join(short(s) for s in stmts[:-1])
        m = _BLOCK_REDUCE.search(text) or _BLOCK_REDUCE.search(" ".join(names))
        block = as_triple(int(v) for v in m.groups()) if m else None
        return Reduction(target, atomic, "block", warp_size.bit_length() - 1,
                         block)
    if shuffles:
        return Reduction(target, atomic, "warp", shuffles, warp=_lanes(stmts[:-1], shuffles))
    return Reduction(target, atomic, "thread", 0)


def atomics_of(
    reductions: list[Reduction], work: dict[str, float], fixed_block: tuple[int, int, int] | None
) -> tuple[Atomics, tuple[int, int, int] | None, list[str]]:
    """The atomics of the reductions (:mod:`.reductions`; MODEL.md §1, §8);
    adds the combine steps of a pre-reduction to ``work``."""
    kinds = {r.kind for r in reductions}
    if len(kinds) != 1:
        raise UnsupportedKernelError(
            f"the kernel's reductions pre-reduce differently ({sorted(kinds)}); warpspeed "
            "models one pre-reduction per kernel"
        )
    scope, warp = reductions[0].scope, reductions[0].warp
    combines = sum(r.combines for r in reductions)
    if combines:
        work["fma"] = work.get("fma", 0.0) + combines
    blocks = {r.block for r in reductions if r.block is not None}
    if scope == "block":
        if len(blocks) != 1 or (fixed_block is not None and fixed_block not in blocks):
            raise UnsupportedKernelError(
                "the kernel's block reductions (CUB) fix no single block size; set "
                "cfg.gpu.default_block_size"
            )
        fixed_block = blocks.pop()
    targets = sorted({r.target for r in reductions})
    notes = [
        f"reduction into {', '.join(targets)}: one atomic per {kinds.pop()} "
        f"{'lanes ' if warp else ''}to each scalar, "
        "serialised in the L2 (the atomics limiter); threads whose partial value is the "
        "neutral element skip it in pystencils' code, counted as issuing it"
    ]
    cas = sorted({r.atomic for r in reductions if not r.atomic.endswith("atomicAdd")})
    if cas:
        notes.append(
            f"{', '.join(cas)}: compare-and-swap loops in pystencils' runtime for doubles, "
            "counted as one atomic each (optimistic under contention)"
        )
    if scope == "block":
        notes.append("CUB's block reduction: its shared-memory stage is not modelled")
    return Atomics(1, scope, len(targets), warp), fixed_block, notes


__all__ = ["Reduction", "atomics_of", "read_reduction"]
