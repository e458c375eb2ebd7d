"""Floating-point work per thread, by class (MODEL.md §1 "Work", §8 FP limit).

The frontend registers every value of the kernel's IR here once, keyed by
its structure (``op``, child ids), so that structurally equal
subexpressions count once, as the CUDA compiler's CSE merges them. The
classes are those of :data:`warpspeed.input.kernel.FP_CLASSES`; the machine file
prices each class in FMA slots.

* ``fma``: adds, subtractions and multiplications (a multiplication whose
  every use is an add or a subtraction is contracted into FMAs with them,
  as ``nvcc`` does by default: ``a * b + c`` is one instruction), and
  ``fabs``, ``fmin``, ``fmax``, ``fma`` and floating-point comparisons of
  selects (``c ? a : b`` on FP values is a compare and an integer select).
* ``div``: divisions (also ``1.0 / x``); ``sqrt``; ``rsqrt``; ``exp``
  (``exp``, ``exp2``, ``expm1``); ``log``; ``pow`` (``pow(x, 0.5)`` stays a
  ``pow``: pystencils emits it, and nvcc does not rewrite it); ``trig``
  (``sin``, ``cos``, ``tan``, their inverses and hyperbolics); ``other``:
  any other math call (``floor``, ``erf`` ...).
* Free: negations (an operand modifier), multiplications by ``±1``, casts,
  integer arithmetic, and expressions of constants only (folded by the
  compiler, e.g. ``1.0 / 3.0``). An integer power ``x**2`` that pystencils
  expands into multiplications counts as those multiplications.
* Philox random numbers (``philox_float64`` / ``philox_float32``): counted
  *approximately* as the FP work that turns the random bits into numbers,
  one FMA and one integer-to-FP conversion (``other``) per value returned;
  the ~100 integer instructions of the ten Philox rounds are not FP work
  and are not modelled (the model has no integer-pipe limit). The
  extraction notes this in :attr:`Extraction.notes`.

``precision`` is 32 when every counted operation is float32, else 64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Contribution = tuple[tuple[str, float], ...]

#: One FMA-class instruction.
FMA: Contribution = (("fma", 1.0),)
_CALLS: dict[str, str] = {
    **dict.fromkeys(("fabs", "abs", "fmin", "fmax", "min", "max", "fma", "copysign"), "fma"),
    **dict.fromkeys(("fdividef", "dividef", "fdiv_rn", "ddiv_rn"), "div"),
    **dict.fromkeys(("sqrt", "sqrt_rn", "dsqrt_rn", "fsqrt_rn"), "sqrt"),
    **dict.fromkeys(("rsqrt", "rsqrt_rn", "frsqrt_rn"), "rsqrt"),
    **dict.fromkeys(("exp", "exp2", "exp10", "expm1"), "exp"),
    **dict.fromkeys(("log", "log2", "log10", "log1p"), "log"),
    **dict.fromkeys(("pow", "powf"), "pow"),
    **dict.fromkeys(
        (
            "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
            "asinh", "acosh", "atanh", "sinpi", "cospi", "sincos", "sincospi",
        ),
        "trig",
    ),
}


def call_work(name: str) -> tuple[Contribution, str | None]:
    """FP work of one call of the function ``name`` (module docstring) and
    a note when the count is an approximation."""
    base = name.split("<")[0].strip().split("::")[-1].lstrip("_")
    if base.startswith("philox_float"):
        values = 2.0 if base.endswith("64") else 4.0
        note = (
            f"{base}: Philox RNG counted as {values:g} FMA + {values:g} conversions per call; "
            "its integer rounds are not modelled"
        )
        return (("fma", values), ("other", values)), note
    if base in _CALLS:
        return ((_CALLS[base], 1.0),), None
    if base.endswith("f") and base[:-1] in _CALLS:
        return ((_CALLS[base[:-1]], 1.0),), None
    return (("other", 1.0),), None


@dataclass(frozen=True)
class _Node:
    contribution: Contribution
    kind: str  # "add", "mul" or "other"
    children: tuple[int, ...]
    bits: int
    const: bool


class FpCounter:
    """Hash-consed values of one kernel (module docstring)."""

    def __init__(self) -> None:
        self._ids: dict[tuple, int] = {}
        self._nodes: list[_Node] = []
        self.notes: list[str] = []

    def leaf(self, key: tuple, const: bool = False) -> int:
        """A value without FP work: a load, a symbol, a constant."""
        return self._intern(key, _Node((), "other", (), 0, const))

    def is_const(self, value: int) -> bool:
        return self._nodes[value].const

    def op(
        self,
        name: str,
        children: Sequence[int],
        contribution: Contribution = (),
        kind: str = "other",
        bits: int = 0,
    ) -> int:
        """An operation on ``children``; ``contribution`` is its FP work
        (MODEL.md §1 "Work") unless all children are constants (folded by
        the compiler)."""
        kids = tuple(children)
        const = bool(kids) and all(self._nodes[c].const for c in kids)
        node = _Node(() if const else contribution, kind if not const else "other", kids,
                     bits, const)
        return self._intern((name, *kids), node)

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _intern(self, key: tuple, node: _Node) -> int:
        found = self._ids.get(key)
        if found is not None:
            return found
        self._ids[key] = len(self._nodes)
        self._nodes.append(node)
        return len(self._nodes) - 1

    def work(self) -> tuple[dict[str, float], set[int]]:
        """FP work per class with FMA contraction, and the bit widths of the
        counted operations (module docstring)."""
        nodes = self._nodes
        consumers: list[set[int]] = [set() for _ in nodes]
        for i, n in enumerate(nodes):
            for c in n.children:
                consumers[c].add(i)
        fusable = [
            n.kind == "mul" and bool(n.contribution) and bool(consumers[i])
            and all(nodes[u].kind == "add" and nodes[u].contribution for u in consumers[i])
            for i, n in enumerate(nodes)
        ]
        chosen: dict[int, int] = {}
        for i, n in enumerate(nodes):
            if n.kind == "add" and n.contribution:
                pick = next((c for c in n.children if fusable[c]), None)
                if pick is not None:
                    chosen[i] = pick
        out: dict[str, float] = {}
        bits: set[int] = set()
        for i, n in enumerate(nodes):
            if not n.contribution:
                continue
            if fusable[i] and all(chosen.get(u) == i for u in consumers[i]):
                continue  # every use became an FMA
            for cls, amount in n.contribution:
                out[cls] = out.get(cls, 0.0) + amount
            if n.bits:
                bits.add(n.bits)
        return out, bits


__all__ = ["FMA", "FpCounter", "call_work"]
