"""pystencils 2.x GPU kernels → :class:`warpspeed.Kernel` (MODEL.md §1).

The frontend reads the *final, lowered* IR of a kernel made by
``pystencils.create_kernel`` for a CUDA target (no GPU or cupy is needed:
``jit=ps.no_jit`` is enough). It walks the IR once:

* Integer declarations (``ctr_0 = 4 + blockIdx.x * blockDim.x + threadIdx.x``,
  ``ctr_1d % 640`` ...) are kept as sympy expressions in the CUDA builtins
  :data:`warpspeed.threadIdx` / ``blockIdx`` / ``blockDim``.
* Every ``PsMemAcc`` (base pointer + linear element offset) becomes a load,
  or a store when it is an assignment's left-hand side. The base pointer
  names the pystencils field; the linear offset, with the declarations
  substituted, is split back into one index per field dimension using the
  field's (fixed) strides, dimensions ordered by stride so that dimension 0
  is the contiguous one whatever the layout (``fzyx`` or ``zyxf``). The
  DRAM model of MODEL.md §6 needs these per-dimension indices.
* The guard conditions (``if (ctr_0 < N0 && ...)``) become the domain: a box
  of valid global thread coordinates. Guards that are not boxes in the
  global thread coordinates (the inner guard of ``linear1d``) must follow
  from the box, which is checked by interval arithmetic.
* Floating-point instructions per thread are counted on the IR (MODEL.md
  §1, "Work"), after merging structurally equal subexpressions as the CUDA
  compiler would: every add, sub, mul, division and math-function call is
  one instruction, except that a multiplication feeding an add or sub is
  contracted into one FMA with it. Negations and casts are free.

Splitting the linear offset: the part that varies with the thread is split
term by term, each coefficient written in the strides as a balanced
(signed) mixed-radix number, so a term moves along the dimension whose
stride it multiplies; the constant part is fixed by the address of thread
``(0, 0, 0)``, whose indices must lie inside the field's shape (an
unsigned mixed-radix split). This is exact for every access inside the
allocation, which pystencils' ghost layers guarantee.

Indexing schemes: ``linear3d`` and ``linear1d`` give domains valid for any
block size; ``blockwise4d`` fixes the block to ``(N0, 1, 1)`` (threadIdx.x
walks the contiguous dimension, the block indices the others), which
:attr:`Extraction.block` reports; the grid-strided schemes contain loops
whose bounds depend on ``gridDim`` and are rejected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp

from ..errors import KernelError
from ..expr import blockDim, blockIdx, threadIdx
from ..kernel import Access, Field, Kernel

try:  # pystencils is an optional dependency of warpspeed
    from pystencils.backend.ast.expressions import (
        PsAdd,
        PsAddressOf,
        PsAnd,
        PsBinOp,
        PsBufferAcc,
        PsCall,
        PsCast,
        PsConstantExpr,
        PsDiv,
        PsExpression,
        PsGe,
        PsGt,
        PsIntDiv,
        PsLe,
        PsLiteralExpr,
        PsLt,
        PsMemAcc,
        PsMul,
        PsNeg,
        PsRem,
        PsSub,
        PsSubscript,
        PsSymbolExpr,
        PsTernary,
        PsUnOp,
    )
    from pystencils.backend.ast.structural import (
        PsAssignment,
        PsBlock,
        PsComment,
        PsConditional,
        PsDeclaration,
        PsLoop,
        PsPragma,
        PsStatement,
    )
    from pystencils.codegen.properties import FieldBasePtr
    from pystencils.types import PsIeeeFloatType
except ImportError as exc:  # pragma: no cover - exercised only without pystencils
    raise ImportError(
        "warpspeed.frontends.pystencils needs pystencils 2.x: pip install pystencils"
    ) from exc


class UnsupportedKernelError(KernelError):
    """A pystencils kernel uses a construct the model cannot describe
    (MODEL.md §1): data-dependent indices, loops with dynamic bounds,
    conditionals that are not the guard, symbolic field sizes, CPU targets."""


_BUILTINS: dict[str, sp.Symbol] = {
    f"{name}.{a}": getattr(ns, a)
    for name, ns in (("threadIdx", threadIdx), ("blockIdx", blockIdx), ("blockDim", blockDim))
    for a in "xyz"
}
_GLOBAL = tuple(sp.Symbol(f"__global_{a}", integer=True, nonnegative=True) for a in "xyz")
_MAX_UNROLL = 256


@dataclass(frozen=True)
class Extraction:
    """What the frontend reads from a pystencils kernel.

    ``kernel`` is the model input; ``block`` is the only block size the
    kernel can run with when its indexing scheme fixes it (``blockwise4d``),
    else ``None``; ``counter_steps`` is the step of the iteration counter
    along x, y, z (the fold factors of a kernel folded by stepping).
    """

    kernel: Kernel
    block: tuple[int, int, int] | None
    counter_steps: tuple[int, int, int]


def kernel_from_pystencils(
    kernel_function: Any,
    *,
    name: str | None = None,
    registers: int = 32,
    base_offsets: Mapping[str, int] | None = None,
    fold: tuple[int, int, int] | None = None,
) -> Kernel:
    """The :class:`warpspeed.Kernel` of a pystencils GPU kernel (MODEL.md §1).

    ``base_offsets`` maps field names to the byte offset of the field's
    base pointer (element 0) from a 128 B boundary (default 0 for every
    field). ``fold`` gives the lattice updates per thread along x, y, z; by
    default it is the step of the iteration counters (a kernel made with
    ``iteration_slice`` step ``f`` and ``f`` assignments per thread, see
    :func:`warpspeed.pystencils.fold_assignments`). Raises
    :class:`UnsupportedKernelError` for constructs outside the model.
    """
    return extract(
        kernel_function, name=name, registers=registers, base_offsets=base_offsets, fold=fold
    ).kernel


def extract(
    kernel_function: Any,
    *,
    name: str | None = None,
    registers: int = 32,
    base_offsets: Mapping[str, int] | None = None,
    fold: tuple[int, int, int] | None = None,
) -> Extraction:
    """Like :func:`kernel_from_pystencils`, also reporting the block size a
    ``blockwise4d`` kernel is bound to and the counter steps."""
    body = _gpu_body(kernel_function)
    pointers = _field_pointers(kernel_function)
    for field in pointers.values():
        _check_field(field)
    walker = _Walker(pointers)
    walker.block(body)
    if not walker.stores and not walker.loads:
        raise UnsupportedKernelError("the kernel accesses no field memory")
    offsets = dict(base_offsets or {})
    unknown = set(offsets) - {f.name for f in walker.fields.values()}
    if unknown:
        raise KernelError(
            f"base_offsets names fields {sorted(unknown)} that the kernel does not access; "
            f"its fields are {sorted(f.name for f in walker.fields.values())}"
        )
    ws_fields = {
        ptr: _ws_field(f, walker.itemsizes[ptr], offsets.get(f.name, 0))
        for ptr, f in walker.fields.items()
    }
    loads = [_access(ws_fields[p], walker.fields[p], off) for p, off in walker.loads]
    stores = [_access(ws_fields[p], walker.fields[p], off) for p, off in walker.stores]
    domain, block = _domain(walker.guards)
    steps = _counter_steps(walker.counters)
    return Extraction(
        kernel=Kernel(
            loads=loads,
            stores=stores,
            domain=domain,
            fold=steps if fold is None else fold,
            fp_instructions=walker.fp_count(),
            registers=registers,
            name=name or getattr(kernel_function, "name", "kernel"),
        ),
        block=block,
        counter_steps=steps,
    )


def _gpu_body(kernel_function: Any) -> PsBlock:
    target = getattr(kernel_function, "target", None)
    body = getattr(kernel_function, "body", None)
    if target is None or not isinstance(body, PsBlock):
        raise KernelError(
            f"expected a kernel made by pystencils.create_kernel, got "
            f"{type(kernel_function).__name__}"
        )
    if not target.is_gpu():
        raise UnsupportedKernelError(
            f"the kernel targets {target.name}, a CPU target; warpspeed models GPU kernels: "
            "create it with ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)"
        )
    return body


def _field_pointers(kernel_function: Any) -> dict[str, Any]:
    """Base-pointer parameter name → pystencils field."""
    out: dict[str, Any] = {}
    for param in kernel_function.parameters:
        for prop in param.properties:
            if isinstance(prop, FieldBasePtr):
                out[param.name] = prop.field
    return out


# ---------------------------------------------------------------------------
# The IR walk


class _DataDependent:
    """Marks an integer symbol whose value is read from memory."""

    def __init__(self, what: str) -> None:
        self.what = what


class _Walker:
    """One pass over the lowered IR: loads, stores, guards, FP work."""

    def __init__(self, pointers: dict[str, Any]) -> None:
        self.pointers = pointers
        self.env: dict[str, sp.Expr | _DataDependent] = {}
        self.counters: dict[str, sp.Expr] = {}
        self.fields: dict[str, Any] = {}
        self.itemsizes: dict[str, int] = {}
        self.loads: list[tuple[str, sp.Expr]] = []
        self.stores: list[tuple[str, sp.Expr]] = []
        self.guards: list[tuple[sp.Expr, str]] = []
        self._fp_keys: dict[int, tuple] = {}
        self._fp_nodes: dict[tuple, tuple[str, tuple]] = {}
        self._keep: list[PsExpression] = []

    # -- structure --------------------------------------------------------

    def block(self, node: PsBlock) -> None:
        for stmt in node.statements:
            self.statement(stmt)

    def statement(self, node: Any) -> None:
        if isinstance(node, PsBlock):
            self.block(node)
        elif isinstance(node, PsDeclaration) or isinstance(node, PsAssignment):
            self.assignment(node)
        elif isinstance(node, PsConditional):
            self.conditional(node)
        elif isinstance(node, PsLoop):
            self.loop(node)
        elif isinstance(node, PsStatement):
            self.rvalue(node.expression)
        elif isinstance(node, (PsComment, PsPragma)):
            return
        else:
            raise UnsupportedKernelError(
                f"unsupported IR construct {type(node).__name__} in the kernel body"
            )

    def assignment(self, node: PsAssignment) -> None:
        lhs, rhs = node.lhs, node.rhs
        if isinstance(lhs, PsMemAcc):
            self.stores.append(self.memory(lhs))
            self.rvalue(rhs)
            return
        if isinstance(lhs, PsSymbolExpr):
            name = lhs.symbol.name
            if _is_float(lhs) or not _is_int(lhs):
                self.rvalue(rhs)
                return
            self.rvalue(rhs)
            try:
                value: sp.Expr | _DataDependent = self.index(rhs)
            except _DataDependentIndex as dd:
                value = _DataDependent(f"{name} = {dd.what}")
            self.env[name] = value
            if isinstance(value, sp.Expr) and name.startswith("ctr"):
                self.counters[name] = value
            return
        raise UnsupportedKernelError(
            f"unsupported assignment target {type(lhs).__name__}: {lhs}"
        )

    def conditional(self, node: PsConditional) -> None:
        if node.branch_false is not None:
            raise UnsupportedKernelError(
                f"an if/else in the kernel body ({node.condition}); only the guard "
                "`if (ctr < N && ...)` that switches threads off is modelled (MODEL.md §1)"
            )
        for cond in _conjuncts(node.condition):
            self.guards.append(self.guard(cond))
        self.block(node.branch_true)

    def guard(self, cond: PsExpression) -> tuple[sp.Expr, str]:
        """A guard condition as ``expr < 0`` in the builtins."""
        text = str(cond)
        if not isinstance(cond, (PsLt, PsLe, PsGt, PsGe)):
            raise UnsupportedKernelError(
                f"the condition {text} is not a comparison of iteration counters; only "
                "the guard `if (ctr < N && ...)` is modelled (MODEL.md §1)"
            )
        try:
            a, b = self.index(cond.operand1), self.index(cond.operand2)
        except _DataDependentIndex as dd:
            raise UnsupportedKernelError(
                f"the condition {text} depends on data ({dd.what}); warpspeed needs control "
                "flow that follows from the thread coordinates alone"
            ) from None
        if isinstance(cond, PsLt):
            return sp.expand(a - b), text
        if isinstance(cond, PsLe):
            return sp.expand(a - b - 1), text
        if isinstance(cond, PsGt):
            return sp.expand(b - a), text
        return sp.expand(b - a - 1), text

    def loop(self, node: PsLoop) -> None:
        name = node.counter.symbol.name
        try:
            start, stop, step = (self.index(e) for e in (node.start, node.stop, node.step))
        except _DataDependentIndex as dd:
            raise UnsupportedKernelError(
                f"loop over {name} with data-dependent bounds ({dd.what})"
            ) from None
        except UnsupportedKernelError as exc:
            raise UnsupportedKernelError(
                f"loop over {name} from {node.start} to {node.stop} step {node.step}: a loop "
                f"with dynamic bounds ({exc}) cannot be modelled; use the linear3d or "
                "blockwise4d indexing scheme"
            ) from None
        if not all(v.is_Integer for v in (start, stop, step)) or int(step) <= 0:
            raise UnsupportedKernelError(
                f"loop over {name} from {start} to {stop} step {step}: a loop with dynamic "
                "bounds (e.g. a grid-strided indexing scheme) cannot be modelled; use the "
                "linear3d or blockwise4d indexing scheme"
            )
        values = range(int(start), int(stop), int(step))
        if len(values) > _MAX_UNROLL:
            raise UnsupportedKernelError(
                f"loop over {name} has {len(values)} iterations; at most {_MAX_UNROLL} "
                "constant iterations are unrolled"
            )
        for v in values:
            self.env[name] = sp.Integer(v)
            self.block(node.body)

    # -- expressions --------------------------------------------------------

    def memory(self, node: PsMemAcc) -> tuple[str, sp.Expr]:
        ptr = node.pointer
        if not isinstance(ptr, PsSymbolExpr):
            raise UnsupportedKernelError(
                f"memory access {node} through a computed pointer; only field base pointers "
                "are supported"
            )
        field = self.pointers.get(ptr.symbol.name)
        if field is None:
            raise UnsupportedKernelError(
                f"memory access {node} through {ptr.symbol.name}, which is not a field's "
                "base pointer"
            )
        _check_field(field)
        self.fields.setdefault(ptr.symbol.name, field)
        self.itemsizes.setdefault(ptr.symbol.name, int(ptr.symbol.dtype.base_type.itemsize))
        try:
            offset = self.index(node.offset)
        except _DataDependentIndex as dd:
            raise UnsupportedKernelError(
                f"the access {node} has a data-dependent index ({dd.what}); warpspeed needs "
                "addresses that follow from the thread coordinates alone (MODEL.md §1)"
            ) from None
        return ptr.symbol.name, sp.expand(offset)

    def rvalue(self, node: PsExpression) -> None:
        """Collect the loads of an expression and register its FP work."""
        self._keep.append(node)
        self._fp_key(node)

    def _fp_key(self, node: Any) -> tuple:
        hit = self._fp_keys.get(id(node))
        if hit is not None:
            return hit
        if isinstance(node, PsMemAcc):
            ptr, off = self.memory(node)
            self.loads.append((ptr, off))
            key: tuple = ("load", ptr, str(off))
        elif isinstance(node, PsSymbolExpr):
            key = ("sym", node.symbol.name)
        elif isinstance(node, PsConstantExpr):
            key = ("const", str(node.constant))
        elif isinstance(node, PsLiteralExpr):
            key = ("lit", str(node.literal))
        elif isinstance(node, (PsAddressOf, PsBufferAcc, PsSubscript)):
            raise UnsupportedKernelError(
                f"unsupported IR construct {type(node).__name__} ({node}): pointer arithmetic, "
                "atomics and array lookups are outside the model"
            )
        else:
            children = tuple(self._fp_key(c) for c in node.children)
            op = type(node).__name__
            if isinstance(node, PsCall):
                op = f"call:{node.function.name}"
            key = (op, *children)
            if _is_float(node) and isinstance(node, (PsAdd, PsSub, PsMul, PsDiv, PsCall)):
                self._fp_nodes.setdefault(key, (op, children))
        self._fp_keys[id(node)] = key
        return key

    def fp_count(self) -> int:
        """FP instructions per thread with FMA contraction (module docstring)."""
        muls = {k for k, (op, _) in self._fp_nodes.items() if op == "PsMul"}
        fused: set[tuple] = set()
        for op, children in self._fp_nodes.values():
            if op in ("PsAdd", "PsSub"):
                for c in children:
                    if c in muls and c not in fused:
                        fused.add(c)
                        break
        return len(self._fp_nodes) - len(fused)

    def index(self, node: Any) -> sp.Expr:
        """An integer IR expression as sympy in the CUDA builtins."""
        if isinstance(node, PsConstantExpr):
            value = node.constant.value
            if isinstance(value, float) or _is_float(node):
                raise _DataDependentIndex(f"floating-point constant {node}")
            return sp.Integer(int(value))
        if isinstance(node, PsLiteralExpr):
            text = str(node.literal.text)
            if text in _BUILTINS:
                return _BUILTINS[text]
            raise UnsupportedKernelError(
                f"the builtin {text} is not modelled; only threadIdx, blockIdx and blockDim "
                "may appear in indices (grid-strided schemes use gridDim: use linear3d)"
            )
        if isinstance(node, PsSymbolExpr):
            return self._symbol(node)
        if isinstance(node, PsCast):
            if _is_float(node) or _is_float(node.operand):
                raise _DataDependentIndex(f"floating-point value {node}")
            return self.index(node.operand)
        if isinstance(node, PsMemAcc):
            raise _DataDependentIndex(f"the load {node}")
        if isinstance(node, (PsTernary, PsSubscript, PsBufferAcc, PsCall)):
            raise _DataDependentIndex(f"{type(node).__name__} {node}")
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
                if not b.is_Integer or int(b) <= 0:
                    raise UnsupportedKernelError(
                        f"integer division or modulo {node} by {b}: only positive constant "
                        "divisors are quasi-affine (MODEL.md §1)"
                    )
                # C truncates towards zero; for the non-negative counters of a
                # kernel this equals floor division.
                return sp.Mod(a, b) if isinstance(node, PsRem) else sp.floor(a / b)
        if isinstance(node, PsUnOp):
            raise UnsupportedKernelError(
                f"unsupported operation {type(node).__name__} ({node}) in an index"
            )
        raise UnsupportedKernelError(
            f"unsupported IR construct {type(node).__name__} ({node}) in an index"
        )

    def _symbol(self, node: PsSymbolExpr) -> sp.Expr:
        sym = node.symbol
        value = self.env.get(sym.name)
        if isinstance(value, _DataDependent):
            raise _DataDependentIndex(value.what)
        if value is not None:
            return value
        if sym.name.startswith(("_size_", "_stride_")):
            raise UnsupportedKernelError(
                f"a field has a symbolic size or stride ({sym.name}); "
                "create it with a fixed size, e.g. ps.fields('f: double[640, 512, 512]') "
                "or ps.Field.create_fixed_size"
            )
        if _is_float(node):
            raise _DataDependentIndex(f"floating-point value {sym.name}")
        raise UnsupportedKernelError(
            f"the index uses the kernel parameter {sym.name}, whose value is unknown at "
            "code generation; warpspeed needs all sizes as constants"
        )


class _DataDependentIndex(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def _is_float(node: Any) -> bool:
    dtype = getattr(node, "dtype", None)
    if dtype is None and isinstance(node, PsSymbolExpr):
        dtype = node.symbol.dtype
    return isinstance(dtype, PsIeeeFloatType)


def _is_int(node: Any) -> bool:
    from pystencils.types import PsIntegerType

    dtype = getattr(node, "dtype", None)
    if dtype is None and isinstance(node, PsSymbolExpr):
        dtype = node.symbol.dtype
    return isinstance(dtype, PsIntegerType)


def _conjuncts(cond: PsExpression) -> list[PsExpression]:
    if isinstance(cond, PsAnd):
        return _conjuncts(cond.operand1) + _conjuncts(cond.operand2)
    return [cond]


# ---------------------------------------------------------------------------
# Fields and indices


def _check_field(field: Any) -> None:
    if not field.has_fixed_shape:
        raise UnsupportedKernelError(
            f"field {field.name} has a symbolic shape {field.shape}; warpspeed needs fixed "
            "sizes: create it with ps.fields('f: double[640, 512, 512]') or "
            "ps.Field.create_fixed_size"
        )


def _order(field: Any) -> list[int]:
    """Field dimensions sorted by stride, contiguous first."""
    return sorted(range(len(field.shape)), key=lambda d: (int(field.strides[d]), d))


def _ws_field(field: Any, itemsize: int, base_offset: int) -> Field:
    order = _order(field)
    return Field(
        field.name,
        shape=tuple(int(field.shape[d]) for d in order),
        itemsize=itemsize,
        strides=tuple(int(field.strides[d]) for d in order),
        base_offset=base_offset,
    )


def _access(ws_field: Field, field: Any, offset: sp.Expr) -> Access:
    return ws_field[tuple(split_offset(offset, ws_field.strides, ws_field.shape, field.name))]


def split_offset(
    offset: sp.Expr, strides: tuple[int, ...], shape: tuple[int, ...], what: str = "field"
) -> list[sp.Expr]:
    """Split a linear element offset into one index per dimension (module
    docstring). ``strides`` ascend; the result satisfies
    ``sum(index_d * strides_d) == offset`` exactly."""
    n = len(strides)
    desc = sorted(range(n), key=lambda d: -strides[d])
    parts: list[sp.Expr] = [sp.Integer(0)] * n
    const = 0
    for monomial, coeff in sp.expand(offset).as_coefficients_dict().items():
        if monomial == 1:
            const += int(coeff)
            continue
        if not coeff.is_Integer:
            raise UnsupportedKernelError(
                f"{what}: the offset {offset} has the non-integer coefficient {coeff}"
            )
        rest = int(coeff)
        for d in desc:
            q = _round_div(rest, strides[d])
            rest -= q * strides[d]
            if q:
                parts[d] += q * monomial
        if rest:
            raise UnsupportedKernelError(
                f"{what}: cannot split the offset term {coeff}*{monomial} along the strides "
                f"{strides}"
            )
    zero = {s: 0 for s in offset.free_symbols}
    at_zero = [int(p.subs(zero)) for p in parts]
    total = const + sum(v * s for v, s in zip(at_zero, strides))
    digits = [0] * n
    for d in desc:
        q = total // strides[d]
        digits[d] = q
        total -= q * strides[d]
    if total:
        raise UnsupportedKernelError(
            f"{what}: the constant offset cannot be split along the strides {strides}"
        )
    return [p + (g - z) for p, g, z in zip(parts, digits, at_zero)]


def _round_div(a: int, b: int) -> int:
    """``a / b`` rounded to the nearest integer, ties away from zero."""
    q, r = divmod(abs(a), b)
    if 2 * r >= b:
        q += 1
    return q if a >= 0 else -q


# ---------------------------------------------------------------------------
# Guards → domain


def _global(expr: sp.Expr) -> sp.Expr:
    """Rewrite an expression in the global thread coordinates where possible."""
    subs = {
        threadIdx.x: _GLOBAL[0] - blockIdx.x * blockDim.x,
        threadIdx.y: _GLOBAL[1] - blockIdx.y * blockDim.y,
        threadIdx.z: _GLOBAL[2] - blockIdx.z * blockDim.z,
    }
    return sp.expand(expr.xreplace(subs))


def _linear_in(expr: sp.Expr, var: sp.Symbol) -> tuple[int, int] | None:
    """``(k, c)`` when ``expr == k * var + c`` with integers, else None."""
    terms = sp.expand(expr).as_coefficients_dict()
    if set(terms) - {var, sp.Integer(1)} or var not in terms:
        return None
    k, c = terms[var], terms.get(sp.Integer(1), sp.Integer(0))
    if not (k.is_Integer and c.is_Integer):
        return None
    return int(k), int(c)


def _domain(
    guards: list[tuple[sp.Expr, str]],
) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
    """The box of valid thread coordinates and, for block-indexed schemes,
    the block size the box assumes (module docstring)."""
    if not guards:
        raise UnsupportedKernelError(
            "the kernel has no guard `if (ctr < N ...)`; the domain of valid threads is unknown"
        )
    global_exprs = [(_global(e), t) for e, t in guards]
    builtins = set(_BUILTINS.values())
    if all(not (e.free_symbols & builtins) for e, _ in global_exprs):
        return _global_domain(global_exprs), None
    return _blockwise_domain(guards)


def _global_domain(guards: list[tuple[sp.Expr, str]]) -> tuple[int, int, int]:
    ext: list[float] = [math.inf] * 3
    rest: list[tuple[sp.Expr, str]] = []
    for e, text in guards:
        syms = e.free_symbols
        if len(syms) == 1 and (g := next(iter(syms))) in _GLOBAL:
            lin = _linear_in(e, g)
            if lin is not None and lin[0] > 0:
                k, c = lin  # k*g + c < 0  <=>  g < -c / k
                a = _GLOBAL.index(g)
                ext[a] = min(ext[a], -(c // k))  # ceil(-c / k)
                continue
        if not syms:
            if int(e) >= 0:
                raise UnsupportedKernelError(f"the guard {text} switches every thread off")
            continue
        rest.append((e, text))
    used = {a for a in range(3) for e, _ in guards if _GLOBAL[a] in e.free_symbols}
    for a in range(3):
        if ext[a] == math.inf:
            if a in used:
                raise UnsupportedKernelError(
                    f"the guard bounds no extent along {'xyz'[a]} with a plain `ctr < N` "
                    "condition; the domain of valid threads is not a box"
                )
            ext[a] = 1
    if min(ext) <= 0:
        raise UnsupportedKernelError(
            f"the guard switches every thread off (valid extents {tuple(ext)})"
        )
    bounds = {g: (0, int(ext[a]) - 1) for a, g in enumerate(_GLOBAL)}
    for e, text in rest:
        lo, hi = _interval(e, bounds)
        if hi >= 0:
            raise UnsupportedKernelError(
                f"the guard {text} does not follow from the box of valid threads "
                f"{tuple(int(x) for x in ext)}; the domain is not a box"
            )
    return tuple(int(x) for x in ext)  # type: ignore[return-value]


def _blockwise_domain(
    guards: list[tuple[sp.Expr, str]],
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    variables = (threadIdx.x, blockIdx.x, blockIdx.y, blockIdx.z)
    ext: dict[sp.Symbol, int] = {}
    for e, text in guards:
        syms = e.free_symbols
        v = next(iter(syms)) if len(syms) == 1 else None
        lin = _linear_in(e, v) if v in variables else None
        if lin is None or lin[0] <= 0:
            raise UnsupportedKernelError(
                f"the guard {text} is neither `global thread index < N` (linear3d) nor "
                "`threadIdx.x / blockIdx < N` (blockwise4d); the domain is not a box"
            )
        k, c = lin
        ext[v] = min(ext.get(v, 10**18), -(c // k))  # ceil(-c / k)
    if threadIdx.x not in ext:
        raise UnsupportedKernelError("the guard does not bound threadIdx.x")
    bx = ext[threadIdx.x]
    return (bx * ext.get(blockIdx.x, 1), ext.get(blockIdx.y, 1), ext.get(blockIdx.z, 1)), (
        bx,
        1,
        1,
    )


def _interval(e: sp.Expr, bounds: dict[sp.Symbol, tuple[int, int]]) -> tuple[int, int]:
    """Integer interval of a quasi-affine expression over a box."""
    if e.is_Integer:
        return int(e), int(e)
    if e.is_Symbol:
        if e not in bounds:
            raise UnsupportedKernelError(f"cannot bound {e} in a guard")
        return bounds[e]
    if e.is_Add:
        los, his = zip(*(_interval(a, bounds) for a in e.args))
        return sum(los), sum(his)
    if e.is_Mul:
        coeff, rest = e.as_coeff_Mul()
        if coeff.is_Rational and rest != e:
            lo, hi = _interval(rest, bounds)
            a, b = coeff * lo, coeff * hi
            return math.floor(min(a, b)), math.ceil(max(a, b))
    if isinstance(e, sp.floor):
        inner = sp.expand(e.args[0])
        num, den = sp.fraction(sp.together(inner))
        if den.is_Integer:
            lo, hi = _interval(sp.expand(num), bounds)
            return lo // int(den), hi // int(den)
    if isinstance(e, sp.Mod) and e.args[1].is_Integer:
        lo, hi = _interval(e.args[0], bounds)
        m = int(e.args[1])
        if lo >= 0 and hi < m:
            return lo, hi
        return 0, m - 1
    raise UnsupportedKernelError(f"cannot bound the guard term {e}")


def _counter_steps(counters: dict[str, sp.Expr]) -> tuple[int, int, int]:
    """Step of the iteration counters along each global thread axis."""
    steps = [1, 1, 1]
    for value in counters.values():
        g = _global(value)
        for a in range(3):
            lin = _linear_in(g, _GLOBAL[a]) if g.free_symbols == {_GLOBAL[a]} else None
            if lin is not None and abs(lin[0]) > 1:
                steps[a] = max(steps[a], abs(lin[0]))
    return steps[0], steps[1], steps[2]


__all__ = [
    "Extraction",
    "UnsupportedKernelError",
    "extract",
    "kernel_from_pystencils",
    "split_offset",
]
