"""Offsets of the lowered IR -> :class:`warpspeed.Access` objects, once per
distinct (field, offset) (MODEL.md §1): the split of a linear offset into one
index per dimension, along fixed strides (:func:`.layouts.split`) or along the
stride parameters of a field of symbolic size, with periodic wraps
substituted (:mod:`.wraps`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sympy as sp

from ..input.kernel import Access, Field
from .layouts import FieldLayout, split
from .poly import IntPoly
from .unsupported import UnsupportedKernelError
from .wraps import substitute


class Accesses:
    """Offsets → accesses, once per distinct (field, offset).

    The offset of a field of symbolic size is a sum of terms that each
    carry one of the field's stride parameters: the term's dimension, read
    off exactly (also for negative indices, as in the halo of a
    ``StaggeredField``). Fixed strides are folded into the offset by
    pystencils, which is split along them (:func:`.layouts.split`)."""

    def __init__(
        self,
        fields: dict[str, Field],
        layouts: Mapping[str, FieldLayout],
        strides: Mapping[str, Mapping[str, int]],
        wraps: Mapping[sp.Symbol, tuple[IntPoly, int]] | None = None,
    ) -> None:
        self.wraps = dict(wraps or {})
        self.fields = fields
        self.layouts = layouts
        self.strides = {sp.Symbol(n): owners for n, owners in strides.items()}
        self.done: dict[tuple[str, Any], Access] = {}

    def __call__(self, ptr: str, offset: IntPoly) -> Access:
        hit = self.done.get((ptr, offset))
        if hit is None:
            f, lay = self.fields[ptr], self.layouts[ptr]
            if offset.atoms & self.strides.keys():
                per_dim = self._by_stride(offset, lay)
                index = [per_dim[d] + IntPoly.const(lay.origin[d]) for d in lay.order]
            else:
                shifted = offset + IntPoly.const(lay.origin_offset)
                hints = {s: lay.order.index(a) for s, (_, a) in self.wraps.items()
                         if a in lay.order}
                values = {s: v for s, (v, _) in self.wraps.items()}
                index = split(shifted, f.strides, f.name, hints, values)
            if self.wraps:
                values = {s: v for s, (v, _) in self.wraps.items()}
                index = [substitute(p, values) for p in index]
            hit = f[tuple(p.to_sympy() for p in index)]
            self.done[(ptr, offset)] = hit
        return hit

    def _by_stride(self, offset: IntPoly, lay: FieldLayout) -> list[IntPoly]:
        parts: list[dict] = [{} for _ in lay.shape]
        for monomial, coeff in offset.terms:
            found = [(i, a) for i, a in enumerate(monomial) if a in self.strides]
            dim = self.strides[found[0][1]].get(lay.name) if len(found) == 1 else None
            if dim is None:
                raise UnsupportedKernelError(
                    f"field {lay.name}: the offset term {coeff}*{sp.Mul(*monomial)} does not "
                    "move along one of the field's dimensions"
                )
            rest = monomial[: found[0][0]] + monomial[found[0][0] + 1 :]
            parts[dim][rest] = parts[dim].get(rest, 0) + coeff
        return [IntPoly.of(p) for p in parts]


__all__ = ["Accesses"]
