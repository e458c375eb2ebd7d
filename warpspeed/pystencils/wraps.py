"""Periodic wraps in indices: integer selects ``c ? a : b`` made
quasi-affine (MODEL.md §1: indices quasi-affine in the builtins).

lbmpy's built-in periodicity (``LBMOptimisation(builtin_periodicity=...)``)
pulls a population from ``x - 1`` in the interior and from the other side
of the domain at the border: the offset ``(ctr_0 > 1 ? -1 : N - 2)``.
:class:`~.indices.IndexReader` reads such a select, whose condition
compares a counter with a constant and whose branches differ by a
constant, as ``b + (a - b) * s`` with ``s`` a placeholder atom for the
condition (:class:`Selector`). Once the box of valid threads is known,
:func:`resolve` replaces ``s`` by an indicator that is quasi-affine in the
thread's global coordinate ``g`` along the one axis the condition depends
on: over ``0 <= g < E``,

* ``[g < t] = floor((E - 1 - g) / (E - t))`` when ``t <= E / 2``,
* ``[g < t] = 1 - floor(g / t)`` otherwise,

checked against the condition at every ``g`` of the axis (a brute-force
enumeration of the ``E`` values). Interior threads get the interior access,
the border threads the wrapped one: the model then counts both (the DRAM
sets, the L1 and the block footprints), instead of refusing the kernel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .launch import BUILTINS, global_linear
from .poly import IntPoly, from_sympy
from .unsupported import TernaryIndexError


@dataclass(frozen=True)
class Selector:
    """An integer select ``c ? a : b`` read as ``b + diff * [c]``: the
    condition is true where ``cond < 0`` (``kind="lt"``), ``cond == 0``
    (``"eq"``) or ``cond != 0`` (``"ne"``), ``cond`` and ``diff = a - b``
    :class:`IntPoly` in the builtins; ``text`` is its C code."""

    cond: IntPoly
    text: str
    diff: IntPoly
    kind: str = "lt"


def global_coordinate(axis: int) -> IntPoly:
    """``blockIdx * blockDim + threadIdx`` along ``axis`` as an :class:`IntPoly`."""
    c = "xyz"[axis]
    return (IntPoly.atom(BUILTINS[f"blockIdx.{c}"]) * IntPoly.atom(BUILTINS[f"blockDim.{c}"])
            + IntPoly.atom(BUILTINS[f"threadIdx.{c}"]))


def indicator(axis: int, threshold: int, extent: int) -> IntPoly:
    """``[g < threshold]`` over ``0 <= g < extent`` (module docstring)."""
    if threshold <= 0:
        return IntPoly.const(0)
    if threshold >= extent:
        return IntPoly.const(1)
    g = global_coordinate(axis)
    if 2 * threshold <= extent:
        return (IntPoly.const(extent - 1) - g).floordiv(extent - threshold)
    return IntPoly.const(1) - g.floordiv(threshold)


def _check(axis: int, k: int, c: int, ind: IntPoly, extent: int, sel: Selector) -> None:
    g = np.arange(extent)
    value = k * g + c
    truth = {"lt": value < 0, "eq": value == 0, "ne": value != 0}[sel.kind]
    want = truth.astype(int)
    a = "xyz"[axis]
    gsym = sp.Symbol("g", integer=True)
    expr = ind.to_sympy().xreplace({
        BUILTINS[f"blockIdx.{a}"]: sp.Integer(0),
        BUILTINS[f"blockDim.{a}"]: sp.Integer(1),
        BUILTINS[f"threadIdx.{a}"]: gsym,
    })
    f = sp.lambdify(gsym, expr, modules=[{"floor": np.floor}, "numpy"])
    got = np.broadcast_to(np.asarray(f(g)), g.shape).astype(int)
    if not np.array_equal(got, want):  # never expected; refuse rather than guess
        raise TernaryIndexError(
            f"the select `{sel.text}` could not be written as a quasi-affine indicator over the "
            f"{extent} threads of its axis; predict the kernel without it"
        )


def resolve(
    selectors: Mapping[sp.Symbol, Selector], box: tuple[int, int, int]
) -> dict[sp.Symbol, tuple[IntPoly, int]]:
    """Each selector's term ``diff * indicator`` over the valid threads
    ``box`` (module docstring) and the thread axis it depends on. A
    condition that depends on more than one thread coordinate, or on none
    linearly, is refused with :class:`TernaryIndexError`."""
    out: dict[sp.Symbol, tuple[IntPoly, int]] = {}
    for atom, sel in selectors.items():
        lin = global_linear(sel.cond)
        if lin is None:
            raise TernaryIndexError(
                f"the select `{sel.text}` in an index depends on more than one thread "
                "coordinate (or not linearly on one); warpspeed models periodic wraps "
                "whose condition compares one counter with a constant"
            )
        axis, k, c = lin
        extent = box[axis]
        if sel.kind == "lt":
            # k*g + c < 0: for k > 0 true below a threshold, for k < 0 above one
            if k > 0:
                ind = indicator(axis, -(c // k), extent)  # g < ceil(-c / k)
            else:
                ind = IntPoly.const(1) - indicator(axis, c // -k + 1, extent)  # g > c / -k
        else:  # k*g + c == 0 at g = t when k divides c: [g < t + 1] - [g < t]
            t = -c // k if c % k == 0 else -1
            ind = (indicator(axis, t + 1, extent) - indicator(axis, t, extent)
                   if t >= 0 else IntPoly.const(0))
            if sel.kind == "ne":
                ind = IntPoly.const(1) - ind
        _check(axis, k, c, ind, extent, sel)
        out[atom] = _times(sel, ind, axis, k, c), axis
    return out


def _times(sel: Selector, ind: IntPoly, axis: int, k: int, c: int) -> IntPoly:
    """``diff * ind``: quasi-affine when ``diff`` is a constant, or when the
    condition holds (or fails) at one ``g = t`` only and ``diff`` depends
    on ``g`` of the same axis alone (then ``diff(t) * [g == t]``, or
    ``diff - diff(t) * [g == t]``)."""
    if sel.diff.is_const:
        return IntPoly.const(sel.diff.constant) * ind
    lin = global_linear(sel.diff)
    if sel.kind != "lt" and c % k == 0 and lin is not None and lin[0] == axis:
        at = IntPoly.const(lin[1] * (-c // k) + lin[2])  # diff at the one point g = t
        if sel.kind == "eq":
            return at * ind
        return sel.diff - at * (IntPoly.const(1) - ind)  # diff * [g != t]
    raise TernaryIndexError(
        f"the select `{sel.text}` in an index has branches that differ by a thread-dependent "
        "amount over more than one thread; warpspeed models periodic wraps whose branches "
        "differ by a constant (or that select one border point): write the wrap as "
        "int_rem(ctr + 1, N)"
    )


def substitute(offset: IntPoly, values: Mapping[sp.Symbol, IntPoly | int]) -> IntPoly:
    """``offset`` with the placeholder atoms ``values`` replaced (also inside
    ``floor`` / ``Mod`` atoms)."""
    names = set(values)
    if not any(a.free_symbols & names for a in offset.atoms):
        return offset
    repl = {s: (sp.Integer(v) if isinstance(v, int) else v.to_sympy())
            for s, v in values.items()}
    return from_sympy(offset.to_sympy().xreplace(repl))


__all__ = ["Selector", "global_coordinate", "indicator", "resolve", "substitute"]
