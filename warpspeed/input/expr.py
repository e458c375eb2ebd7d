"""Index expressions: the CUDA builtins, parsing of sympy expressions into
quasi-affine forms, and their evaluation with NumPy and conversion to isl.

MODEL.md §1: an index expression is quasi-affine in the builtins
``threadIdx.{x,y,z}`` and ``blockIdx.{x,y,z}``: a sum of integer multiples of
them, of constants and of ``floor(e / d)`` / ``e mod d`` with constant ``d``.
``blockDim.{x,y,z}`` are launch constants, so ``blockIdx.x * blockDim.x`` is
affine once the block size is known. Expressions are parsed once (when the
kernel is built) into :class:`SymForm`; :func:`SymForm.bind` substitutes a
block size and gives a :class:`LinForm` over the six thread variables
``(blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z)``
with integer coefficients, which NumPy evaluates and isl takes as an ``Aff``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from types import SimpleNamespace

import islpy as isl
import numpy as np
import sympy as sp

from ..errors import NonAffineError

AXES = ("x", "y", "z")


def _builtin(name: str) -> SimpleNamespace:
    return SimpleNamespace(
        **{a: sp.Symbol(f"{name}.{a}", integer=True, nonnegative=True) for a in AXES}
    )


threadIdx = _builtin("threadIdx")
blockIdx = _builtin("blockIdx")
blockDim = _builtin("blockDim")

#: The six thread variables of a bound form, in this order.
THREAD_VARS: tuple[sp.Symbol, ...] = (
    blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z,
)
BLOCK_DIMS: tuple[sp.Symbol, ...] = (blockDim.x, blockDim.y, blockDim.z)

#: Global thread coordinates ``blockIdx * blockDim + threadIdx``.
tidx = blockIdx.x * blockDim.x + threadIdx.x
tidy = blockIdx.y * blockDim.y + threadIdx.y
tidz = blockIdx.z * blockDim.z + threadIdx.z

_VAR_INDEX = {s: i for i, s in enumerate(THREAD_VARS)}
_DIM_INDEX = {s: i for i, s in enumerate(BLOCK_DIMS)}

# A coefficient is a polynomial in blockDim: {(ex, ey, ez): Fraction}.
Poly = dict[tuple[int, int, int], Fraction]
_ONE = (0, 0, 0)


def _poly_mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ea, ca in a.items():
        for eb, cb in b.items():
            e = (ea[0] + eb[0], ea[1] + eb[1], ea[2] + eb[2])
            out[e] = out.get(e, Fraction(0)) + ca * cb
    return {e: c for e, c in out.items() if c != 0}


def _poly_eval(p: Poly, block: tuple[int, int, int]) -> Fraction:
    return sum(
        (c * block[0] ** e[0] * block[1] ** e[1] * block[2] ** e[2] for e, c in p.items()),
        Fraction(0),
    )


@dataclass(frozen=True)
class SymFloor:
    """``floor(inner)`` where ``inner`` may have rational coefficients."""

    inner: SymForm


#: A term of a :class:`SymForm`: None for the constant, an index into
#: :data:`THREAD_VARS`, or a floor.
Atom = int | SymFloor | None
#: A form's terms: each atom with its coefficient, a polynomial in ``blockDim``
#: as sorted (exponents, coefficient) pairs.
Terms = tuple[tuple[Atom, tuple[tuple[tuple[int, int, int], Fraction], ...]], ...]


@dataclass(frozen=True)
class SymForm:
    """A quasi-affine form before the block size is known.

    ``terms`` maps an atom (``None`` for the constant, an index into
    :data:`THREAD_VARS`, or a :class:`SymFloor`) to its coefficient, a
    polynomial in ``blockDim``, stored as sorted tuples to stay hashable.
    """

    terms: Terms
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # forms key the per-launch tables in every prediction: hash them once
        object.__setattr__(self, "_hash", hash(self.terms))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, SymForm) or self._hash != other._hash:
            return False
        return self.terms == other.terms

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        # an unpickled form (a ranking's worker) becomes the process's own
        # object for it, so that tables keyed by form compare by identity
        return (_interned, (self.terms,))

    @staticmethod
    def _make(d: dict[Atom, Poly]) -> SymForm:
        items = []
        for atom, poly in d.items():
            poly = {e: c for e, c in poly.items() if c != 0}
            if poly:
                items.append((atom, tuple(sorted(poly.items()))))
        return SymForm(tuple(sorted(items, key=lambda t: repr(t[0]))))

    def as_dict(self) -> dict[Atom, Poly]:
        return {atom: dict(poly) for atom, poly in self.terms}

    def is_launch_constant(self) -> bool:
        return all(atom is None for atom, _ in self.terms)

    def thread_vars(self) -> set[int]:
        out: set[int] = set()
        for atom, _ in self.terms:
            if isinstance(atom, int):
                out.add(atom)
            elif isinstance(atom, SymFloor):
                out |= atom.inner.thread_vars()
        return out

    def bind(self, block: tuple[int, int, int]) -> LinForm:
        """Substitute the block size; MODEL.md §1."""
        simple = _integer_terms(self)
        if simple is not None:  # integer coefficients, no floor: integer arithmetic
            fixed, scaled = simple
            out = list(fixed)
            for slot, k, e0, e1, e2 in scaled:
                out[slot] += k * block[0] ** e0 * block[1] ** e1 * block[2] ** e2
            return LinForm(out[0], tuple(out[1:]), (), 1)
        return _bind(self, block, integral=True)


def global_terms(form: SymForm) -> tuple[int, tuple[int, int, int]] | None:
    """``(const, (c_x, c_y, c_z))`` when ``form`` is ``const + sum_d c_d *
    (blockIdx_d * blockDim_d + threadIdx_d)`` with integer coefficients: a
    function of the global thread coordinates alone, the same at every
    block size (bound: ``coef[d] = B_d c_d``, ``coef[3 + d] = c_d``); None
    for any other form (a floor, ``blockDim`` elsewhere, a block index
    without its thread index)."""
    const, thread, block_terms = 0, [0, 0, 0], [0, 0, 0]
    for atom, poly in form.terms:
        if not isinstance(atom, int | None) or len(poly) != 1:
            return None
        (exps, c), = poly
        if c.denominator != 1:
            return None
        if atom is None or atom >= 3:
            if exps != (0, 0, 0):
                return None
            if atom is None:
                const = int(c)
            else:
                thread[atom - 3] = int(c)
        elif exps == tuple(int(d == atom) for d in range(3)):
            block_terms[atom] = int(c)
        else:
            return None
    if block_terms != thread:
        return None
    return const, (thread[0], thread[1], thread[2])


#: A form with integer coefficients and no floor, ready to bind: the parts of
#: ``(const, coef...)`` that no block size scales, and the terms that one does as
#: ``(slot, k, e0, e1, e2)``, adding ``k * B0**e0 * B1**e1 * B2**e2`` to ``slot``.
IntTerms = tuple[tuple[int, ...], tuple[tuple[int, int, int, int, int], ...]]
_INTEGER_TERMS: dict[SymForm, IntTerms | None] = {}


def _integer_terms(form: SymForm) -> IntTerms | None:
    """``form``'s terms with integer coefficients (:data:`IntTerms`), or None
    when a term is a floor or a coefficient is not an integer (then
    :func:`_bind` binds it with fractions); kept per form (up to
    :data:`_BOUND_LIMIT` forms)."""
    if form in _INTEGER_TERMS:
        return _INTEGER_TERMS[form]
    fixed = [0] * 7
    scaled = []
    out: IntTerms | None = None
    for atom, poly in form.terms:
        if isinstance(atom, SymFloor) or not all(c.denominator == 1 for _, c in poly):
            break
        slot = 0 if atom is None else atom + 1
        for e, c in poly:
            if e == (0, 0, 0):
                fixed[slot] += int(c)
            else:
                scaled.append((slot, int(c), e[0], e[1], e[2]))
    else:
        out = (tuple(fixed), tuple(scaled))
    if len(_INTEGER_TERMS) < _BOUND_LIMIT:
        _INTEGER_TERMS[form] = out
    return out


def bind_all(forms: Iterable[Iterable[SymForm]], block: tuple[int, int, int]
             ) -> dict[SymForm, LinForm]:
    """Bind every distinct form of an iterable of accesses' ``forms`` once
    (and each form for each block once per process: a ranking binds the
    same forms for many launches)."""
    out: dict[SymForm, LinForm] = {}
    blk = (int(block[0]), int(block[1]), int(block[2]))
    for acc_forms in forms:
        for f in acc_forms:
            if f not in out:
                b = _BOUND.get((f, blk))
                if b is None:
                    b = f.bind(blk)
                    if len(_BOUND) < _BOUND_LIMIT:
                        _BOUND[(f, blk)] = b
                out[f] = b
    return out


_BOUND: dict[tuple[SymForm, tuple[int, ...]], LinForm] = {}
_BOUND_LIMIT = 200_000


def _bind(form: SymForm, block: tuple[int, int, int], integral: bool) -> LinForm:
    const = Fraction(0)
    coef = [Fraction(0)] * 6
    floors: list[tuple[Fraction, LinForm, int]] = []
    for atom, poly in form.terms:
        c = _poly_eval(dict(poly), block)
        if c == 0:
            continue
        if atom is None:
            const += c
        elif isinstance(atom, int):
            coef[atom] += c
        else:
            inner = _bind(atom.inner, block, integral=False)
            floors.append((c, inner, 1))
    if not integral:
        # Scale a rational inner form to integers: floor(q) = floor(L*q / L).
        dens = [const.denominator] + [c.denominator for c in coef]
        dens += [c.denominator for c, _, _ in floors]
        lcm = math.lcm(*dens)
        return LinForm(
            int(const * lcm),
            tuple(int(c * lcm) for c in coef),
            tuple((int(c * lcm), f, d) for c, f, d in floors),
            lcm,
        )
    bad = [c for c in [const, *coef] + [f[0] for f in floors] if c.denominator != 1]
    if bad:
        raise NonAffineError(
            f"index expression has the non-integer coefficient {bad[0]} for block {block}; "
            "wrap divisions in floor() (integer division) so every index is an integer"
        )
    return LinForm(
        int(const),
        tuple(int(c) for c in coef),
        tuple((int(c), f, d) for c, f, d in floors),
        1,
    )


@dataclass(frozen=True)
class LinForm:
    """``floor((const + coef . v + sum c_i * floor_i) / div)`` with integers.

    ``v`` are the six thread variables; each floor term is ``(c, form, 1)``
    where ``form`` carries its own divisor. A top-level form has ``div == 1``.
    """

    const: int
    coef: tuple[int, ...]
    floors: tuple[tuple[int, LinForm, int], ...]
    div: int

    def evaluate(self, v: np.ndarray) -> np.ndarray:
        """Evaluate on integer thread variables ``v`` of shape (6, n)."""
        out = np.full(v.shape[1], self.const, dtype=np.int64)
        for i, c in enumerate(self.coef):
            if c:
                out += c * v[i]
        for c, f, _ in self.floors:
            out += c * f.evaluate(v)
        if self.div != 1:
            out //= self.div
        return out

    def to_aff(self, ls: isl.LocalSpace) -> isl.Aff:
        """The same form as an isl affine expression on ``ls`` (6 set dims)."""
        ctx = ls.get_ctx()
        aff = isl.Aff.zero_on_domain(ls).set_constant_val(isl.Val(str(self.const), context=ctx))
        for i, c in enumerate(self.coef):
            if c:
                aff = aff.set_coefficient_val(isl.dim_type.in_, i, isl.Val(str(c), context=ctx))
        for c, f, _ in self.floors:
            aff = aff.add(f.to_aff(ls).scale_val(isl.Val(str(c), context=ctx)))
        if self.div != 1:
            aff = aff.scale_down_val(isl.Val(str(self.div), context=ctx)).floor()
        return aff


def _const_form(c: Fraction) -> SymForm:
    return SymForm._make({None: {_ONE: c}})


def _add(a: SymForm, b: SymForm) -> SymForm:
    d = a.as_dict()
    for atom, poly in b.as_dict().items():
        cur = d.setdefault(atom, {})
        for e, c in poly.items():
            cur[e] = cur.get(e, Fraction(0)) + c
    return SymForm._make(d)


def _scale(a: SymForm, p: Poly) -> SymForm:
    return SymForm._make({atom: _poly_mul(poly, p) for atom, poly in a.as_dict().items()})


def _launch_poly(form: SymForm) -> Poly:
    return dict(form.terms[0][1]) if form.terms else {}


def parse(expr: object, what: str) -> SymForm:
    """Parse a sympy expression (or int) into a :class:`SymForm`.

    ``what`` names the access in error messages. Raises
    :class:`NonAffineError` for products of thread coordinates, unknown
    symbols, non-constant divisors and any other construct outside
    MODEL.md §1.
    """
    try:
        e = sp.sympify(expr)
    except (sp.SympifyError, TypeError) as exc:
        raise NonAffineError(f"{what}: cannot read index {expr!r} as an expression") from exc
    cached = _PARSED.get(e)
    if cached is not None:
        return cached
    form = _parse(e, what)
    canonical = _INTERNED.get(form, form)
    if len(_PARSED) < _PARSED_LIMIT:
        _INTERNED.setdefault(canonical, canonical)
        _PARSED[e] = canonical
    return canonical


#: Parsed forms by expression, and one object per distinct form: kernels with
#: thousands of accesses repeat a few dozen index expressions, and identical
#: objects make the per-launch tables keyed by form cheap to look up (a dict
#: compares keys by identity first). Bounded: beyond the limit, forms are
#: parsed again but still interned.
def _interned(terms: Terms) -> SymForm:
    form = SymForm(terms)
    canonical = _INTERNED.get(form)
    if canonical is None:
        if len(_INTERNED) >= _PARSED_LIMIT:
            return form
        _INTERNED[form] = canonical = form
    return canonical


_PARSED: dict[object, SymForm] = {}
_INTERNED: dict[SymForm, SymForm] = {}
_PARSED_LIMIT = 100_000


def _parse(e: sp.Expr, what: str) -> SymForm:
    if e.is_Integer or e.is_Rational:
        return _const_form(Fraction(int(e.p), int(e.q)))
    if e.is_Symbol:
        if e in _VAR_INDEX:
            return SymForm._make({_VAR_INDEX[e]: {_ONE: Fraction(1)}})
        if e in _DIM_INDEX:
            d = _DIM_INDEX[e]
            return SymForm._make({None: {(int(d == 0), int(d == 1), int(d == 2)): Fraction(1)}})
        raise NonAffineError(
            f"{what}: unknown symbol {e} in the index; only the CUDA builtins "
            "threadIdx/blockIdx/blockDim.{x,y,z} (or ws.tidx/tidy/tidz) and integer "
            "constants may appear: substitute the value of every other symbol first"
        )
    if e.is_Add:
        out = _const_form(Fraction(0))
        for arg in e.args:
            out = _add(out, _parse(arg, what))
        return out
    if e.is_Mul:
        parts = [_parse(arg, what) for arg in e.args]
        varying = [p for p in parts if not p.is_launch_constant()]
        if len(varying) > 1:
            raise NonAffineError(
                f"{what}: the term {e} multiplies thread-dependent values; index "
                "expressions must be affine in the thread coordinates (MODEL.md §1)"
            )
        poly: Poly = {_ONE: Fraction(1)}
        for p in parts:
            if p.is_launch_constant():
                poly = _poly_mul(poly, _launch_poly(p))
        base = varying[0] if varying else _const_form(Fraction(1))
        return _scale(base, poly)
    if e.is_Pow:
        b, x = e.args
        bf = _parse(b, what)
        if bf.is_launch_constant() and x.is_Integer and int(x) >= 0:
            out = _const_form(Fraction(1))
            for _ in range(int(x)):
                out = _scale(out, _launch_poly(bf))
            return out
        raise NonAffineError(
            f"{what}: the term {e} is not affine (a power or division by a "
            "thread-dependent value); use floor(e / constant) for integer division"
        )
    if isinstance(e, sp.floor):
        inner = _parse(e.args[0], what)
        return SymForm._make({SymFloor(inner): {_ONE: Fraction(1)}})
    if isinstance(e, sp.Mod):
        a, m = e.args
        mf = _parse(m, what)
        if not mf.is_launch_constant():
            raise NonAffineError(
                f"{what}: {e} takes a modulo by a thread-dependent value; only "
                "constant divisors are quasi-affine"
            )
        af = _parse(a, what)
        # a mod m = a - m * floor(a / m), with m a launch constant.
        mp = _launch_poly(mf)
        if len(mp) != 1 or _ONE not in mp:
            raise NonAffineError(
                f"{what}: {e} takes a modulo by {m}; the divisor must be an integer constant"
            )
        m_int = mp[_ONE]
        fl = SymForm._make({SymFloor(_scale(af, {_ONE: 1 / m_int})): {_ONE: -m_int}})
        return _add(af, fl)
    if e.is_Function or isinstance(e, sp.Indexed):
        raise NonAffineError(
            f"{what}: the index uses {e}, an indirect or non-arithmetic term; warpspeed "
            "needs addresses that follow from the thread coordinates alone"
        )
    raise NonAffineError(
        f"{what}: cannot model the term {e} ({type(e).__name__}); index expressions "
        "must be quasi-affine in the CUDA builtins (MODEL.md §1)"
    )
