"""Indexing schemes of pystencils GPU kernels: the guard becomes the domain
of valid global thread coordinates (MODEL.md §1, "Iteration domain" and
"Launch").

* ``linear3d`` and ``linear1d`` give domains valid for any block size. A
  strided iteration slice (``ps.make_slice[1:-1:2, ...]``) maps thread
  ``g`` to cell ``start + step * g``: the guard ``start + step * g < stop``
  bounds ``g`` by ``ceil((stop - start) / step)``, a sparse iteration space
  with one lattice update per thread (the access indices keep the stride).
* ``blockwise4d`` fixes the block to ``(N0, 1, 1)`` (threadIdx.x walks the
  contiguous dimension, the block indices the others):
  :func:`domain` returns it as the kernel's fixed block.
* The grid-strided schemes contain loops whose bounds depend on ``gridDim``;
  the frontend rejects them before the guard is read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import sympy as sp

from ..errors import KernelError
from ..input.expr import blockDim, blockIdx, threadIdx
from ..input.triples import Triple, as_triple
from .poly import IntPoly
from .unsupported import GuardError

#: The CUDA builtins by their name in pystencils' IR.
BUILTINS: dict[str, sp.Symbol] = {
    f"{name}.{a}": getattr(ns, a)
    for name, ns in (("threadIdx", threadIdx), ("blockIdx", blockIdx), ("blockDim", blockDim))
    for a in "xyz"
}
_GLOBAL = tuple(sp.Symbol(f"__global_{a}", integer=True, nonnegative=True) for a in "xyz")


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


def domain(
    guard_polys: list[tuple[IntPoly, str]],
) -> tuple[tuple[int, int, int], tuple[int, int, int] | None, tuple[str, ...]]:
    """The box of valid thread coordinates, for block-indexed schemes the
    block size the box assumes (module docstring), and notes on the
    approximations made (a checkerboard guard). Each guard is ``(e, text)``
    meaning ``e < 0``."""
    if not guard_polys:
        raise GuardError(
            "the kernel has no guard `if (ctr < N ...)`; the domain of valid threads is unknown"
        )
    guards = [(p.to_sympy(), t) for p, t in guard_polys]
    global_exprs = [(_global(e), t) for e, t in guards]
    builtins = set(BUILTINS.values())
    if all(not (e.free_symbols & builtins) for e, _ in global_exprs):
        notes: list[str] = []
        return _global_domain(global_exprs, notes), None, tuple(notes)
    box, block = _blockwise_domain(guards)
    return box, block, ()


def _shifted(e: sp.Expr) -> tuple[int, int, int, sp.Expr] | None:
    """``(axis, k, c, r)`` when ``e == k * g_axis + c + r`` with ``k > 0``
    and ``r`` a sum of ``floor`` / ``Mod`` terms of the other axes (the
    guard of a checkerboard slice whose start is ``1 + (y + z) % 2``)."""
    terms = sp.expand(e).as_coefficients_dict()
    lin = [(t, k) for t, k in terms.items() if t in _GLOBAL]
    rest = sp.Add(*(k * t for t, k in terms.items() if t not in _GLOBAL and t != 1))
    if len(lin) != 1 or not lin[0][1].is_Integer or lin[0][1] <= 0 or rest == 0:
        return None
    g, k = lin[0]
    if g in rest.free_symbols or not all(
        isinstance(t, (sp.floor, sp.Mod)) for t in sp.Add.make_args(rest) for t in [
            t.as_coeff_Mul()[1]]
    ):
        return None
    c = terms.get(sp.Integer(1), sp.Integer(0))
    if not c.is_Integer:
        return None
    return _GLOBAL.index(g), int(k), int(c), rest


def _global_domain(guards: list[tuple[sp.Expr, str]], notes: list[str]) -> tuple[int, int, int]:
    """The box of valid global thread coordinates. A guard whose bound
    shifts with a parity term of the other axes (a checkerboard slice,
    ``x = 1 + (y + z) % 2 + 2 g``) bounds its axis by the largest extent any
    row has; the rows with fewer points have one idle thread at the end,
    counted as active (noted; exact when the interior is even)."""
    ext: list[float] = [math.inf] * 3
    rest: list[tuple[sp.Expr, str]] = []
    shifted: list[tuple[tuple[int, int, int, sp.Expr], str]] = []
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
                raise GuardError(f"the guard {text} switches every thread off")
            continue
        sh = _shifted(e)
        if sh is not None:
            shifted.append((sh, text))
            continue
        rest.append((e, text))
    for (a, k, c, r), text in shifted:
        others = {g: (0, int(ext[b]) - 1) for b, g in enumerate(_GLOBAL) if ext[b] != math.inf}
        try:
            rlo, rhi = _interval(r, others)
        except GuardError:
            rest.append((k * _GLOBAL[a] + c + r, text))
            continue
        most, least = -((c + rlo) // k), -((c + rhi) // k)
        ext[a] = min(ext[a], most)
        if least < most:
            notes.append(
                f"the guard {text} gives some rows {most - least} point(s) fewer along "
                f"{'xyz'[a]} (a checkerboard start); their idle thread is counted as active"
            )
    used = {a for a in range(3) for e, _ in guards if _GLOBAL[a] in e.free_symbols}
    for a in range(3):
        if ext[a] == math.inf:
            if a in used:
                raise GuardError(
                    f"the guard bounds no extent along {'xyz'[a]} with a plain `ctr < N` "
                    "condition; the domain of valid threads is not a box (an iteration "
                    "slice whose bounds depend on another counter, such as a triangle, is "
                    "not supported; predict the kernel over the enclosing box, an upper bound)"
                )
            ext[a] = 1
    if min(ext) <= 0:
        raise GuardError(
            f"the guard switches every thread off (valid extents {tuple(ext)})"
        )
    bounds = {g: (0, int(ext[a]) - 1) for a, g in enumerate(_GLOBAL)}
    for e, text in rest:
        lo, hi = _interval(e, bounds)
        if hi >= 0:
            raise GuardError(
                f"the guard {text} does not follow from the box of valid threads "
                f"{tuple(int(x) for x in ext)}; the domain is not a box"
            )
    return as_triple(int(x) for x in ext)


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
            raise GuardError(
                f"the guard {text} is neither `global thread index < N` (linear3d) nor "
                "`threadIdx.x / blockIdx < N` (blockwise4d); the domain is not a box"
            )
        k, c = lin
        ext[v] = min(ext.get(v, 10**18), -(c // k))  # ceil(-c / k)
    if threadIdx.x not in ext:
        raise GuardError("the guard does not bound threadIdx.x")
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
            raise GuardError(f"cannot bound {e} in a guard")
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
    raise GuardError(f"cannot bound the guard term {e}")


def global_linear(poly: IntPoly) -> tuple[int, int, int] | None:
    """``(axis, k, c)`` when ``poly == k * g_axis + c`` in the global thread
    coordinate ``g`` of one axis (integers, ``k != 0``), else None."""
    g = _global(poly.to_sympy())
    syms = g.free_symbols
    if len(syms) != 1 or (axis := next(iter(syms))) not in _GLOBAL:
        return None
    lin = _linear_in(g, axis)
    if lin is None or lin[0] == 0:
        return None
    return _GLOBAL.index(axis), lin[0], lin[1]


def counter_steps(counters: dict[str, IntPoly]) -> tuple[int, int, int]:
    """Step of the iteration counters along each global thread axis (the
    stride of a strided iteration slice, or the fold of a folded kernel;
    MODEL.md §1, work per thread)."""
    steps = [1, 1, 1]
    for value in counters.values():
        g = _global(value.to_sympy())
        for a in range(3):
            lin = _linear_in(g, _GLOBAL[a]) if g.free_symbols == {_GLOBAL[a]} else None
            if lin is not None and abs(lin[0]) > 1:
                steps[a] = max(steps[a], abs(lin[0]))
    return steps[0], steps[1], steps[2]


def grid_stride(
    box: Triple, fold: Triple, points: Triple, spans: Mapping[int, sp.Symbol]
) -> tuple[Triple, Triple, dict[sp.Symbol, int]]:
    """The thread box, fold and grid span of a grid-strided kernel (the
    walker's ``_grid_stride``): ``ceil(extent / points)`` threads along each
    strided axis, ``points`` times the fold (MODEL.md §1, grid-stride loops)."""
    for a in range(3):
        if points[a] > 1 and a not in spans:
            raise KernelError(
                f"grid_points asks for {points[a]} points along {'xyz'[a]}, but the kernel has "
                f"no grid-stride loop along {'xyz'[a]}; its loops stride along "
                f"{', '.join('xyz'[b] for b in sorted(spans))}"
            )
    threads = as_triple(-(-box[a] // points[a]) for a in range(3))
    new_fold = as_triple(fold[a] * points[a] for a in range(3))
    return threads, new_fold, {s: threads[a] for a, s in spans.items()}


__all__ = ["BUILTINS", "counter_steps", "domain", "global_linear", "grid_stride"]
