"""Integer polynomials over atoms, the index arithmetic of the frontend
(MODEL.md §1: index expressions in the CUDA builtins).

pystencils' lowered IR computes addresses with integer adds, multiplies,
divisions and remainders. Doing this in sympy (``expand``, ``subs``,
printing for hashing) dominated the extraction time of large lbmpy
kernels, so the frontend computes with :class:`IntPoly`: a mapping from
monomials (sorted tuples of atoms) to integer coefficients. Atoms are the
CUDA builtins (``threadIdx.x`` ...), symbols still unknown, and opaque
``floor(e / c)`` / ``Mod(e, c)`` terms kept as sympy expressions. Only the
final per-dimension indices and the guards are converted to sympy.

Divisions follow C semantics for the non-negative values of index
arithmetic: ``a / c`` truncates, which equals the floor; exact when every
non-constant coefficient is a multiple of ``c``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp

type Atom = sp.Expr  # a sympy expression (sympy ships no types)
Monomial = tuple[Atom, ...]
ONE: Monomial = ()


@lru_cache(maxsize=4096)
def _key(atom: Atom) -> str:
    return atom.name if isinstance(atom, sp.Symbol) else sp.srepr(atom)


def _monomial(atoms: Iterable[Atom]) -> Monomial:
    return tuple(sorted(atoms, key=_key))


@dataclass(frozen=True)
class IntPoly:
    """``sum(coeff * prod(monomial))`` with integer coefficients (an index
    expression of MODEL.md §1); hashable, and equal exactly when the
    polynomials are equal."""

    terms: frozenset[tuple[Monomial, int]]

    @staticmethod
    def of(terms: Mapping[Monomial, int]) -> IntPoly:
        return IntPoly(frozenset((m, c) for m, c in terms.items() if c))

    @staticmethod
    def const(value: int) -> IntPoly:
        return IntPoly.of({ONE: int(value)})

    @staticmethod
    def atom(atom: Atom) -> IntPoly:
        return IntPoly.of({(atom,): 1})

    @property
    def as_dict(self) -> dict[Monomial, int]:
        return dict(self.terms)

    @property
    def is_const(self) -> bool:
        return all(m == ONE for m, _ in self.terms)

    @property
    def constant(self) -> int:
        return dict(self.terms).get(ONE, 0)

    @property
    def atoms(self) -> set[Atom]:
        return {a for m, _ in self.terms for a in m}

    def __add__(self, other: IntPoly) -> IntPoly:
        out = dict(self.terms)
        for m, c in other.terms:
            out[m] = out.get(m, 0) + c
        return IntPoly.of(out)

    def __neg__(self) -> IntPoly:
        return IntPoly(frozenset((m, -c) for m, c in self.terms))

    def __sub__(self, other: IntPoly) -> IntPoly:
        return self + (-other)

    def __mul__(self, other: IntPoly) -> IntPoly:
        out: dict[Monomial, int] = {}
        for ma, ca in self.terms:
            for mb, cb in other.terms:
                m = ma + mb if not ma or not mb else _monomial(ma + mb)
                out[m] = out.get(m, 0) + ca * cb
        return IntPoly.of(out)

    def floordiv(self, divisor: int) -> IntPoly:
        """``self / divisor`` rounded down (C division of non-negative values)."""
        terms = self.as_dict
        const = terms.pop(ONE, 0)
        if all(c % divisor == 0 for c in terms.values()):
            out = {m: c // divisor for m, c in terms.items()}
            out[ONE] = const // divisor
            return IntPoly.of(out)
        return IntPoly.atom(sp.floor(self.to_sympy() / divisor))

    def mod(self, divisor: int) -> IntPoly:
        """``self % divisor`` (C remainder of non-negative values)."""
        terms = self.as_dict
        const = terms.pop(ONE, 0)
        if all(c % divisor == 0 for c in terms.values()):
            return IntPoly.const(const % divisor)
        return IntPoly.atom(sp.Mod(self.to_sympy(), divisor))

    def to_sympy(self) -> sp.Expr:
        return _to_sympy(self)

    def at_zero(self) -> int:
        """The value with every atom's free symbols set to 0."""
        total = 0
        for m, c in self.terms:
            total += c * _prod_at_zero(m)
        return total


@lru_cache(maxsize=4096)
def _to_sympy(p: IntPoly) -> sp.Expr:
    return sp.Add(*(c * sp.Mul(*m) for m, c in p.terms))


def _prod_at_zero(m: Monomial) -> int:
    value = 1
    for a in m:
        value *= _atom_at_zero(a)
        if not value:
            return 0
    return value


@lru_cache(maxsize=4096)
def _atom_at_zero(atom: Atom) -> int:
    if isinstance(atom, sp.Symbol):
        return 0
    return int(atom.subs({s: 0 for s in atom.free_symbols}))


def from_sympy(expr: sp.Expr) -> IntPoly:
    """An integer polynomial of a sympy expression (sums and products of
    integers, symbols and floor/Mod terms)."""
    e = sp.expand(expr)
    out: dict[Monomial, int] = {}
    for term, coeff in e.as_coefficients_dict().items():
        if not coeff.is_Integer:
            raise ValueError(f"non-integer coefficient {coeff} in {expr}")
        if term == 1:
            m: Monomial = ONE
        else:
            factors: list[Atom] = []
            for f in sp.Mul.make_args(term):
                base, exp = f.as_base_exp()
                if exp.is_Integer and int(exp) > 0:
                    factors += [base] * int(exp)
                else:
                    factors.append(f)
            m = _monomial(factors)
        out[m] = out.get(m, 0) + int(coeff)
    return IntPoly.of(out)


__all__ = ["IntPoly", "from_sympy"]
