"""pystencils fields → warpspeed fields: sizes, strides, dimension order
and the split of a linear element offset into one index per dimension
(MODEL.md §1, "Fields" and "Accesses").

**Sizes.** A field of fixed size carries its shape and strides. A field of
symbolic size (``ps.fields("f: [3D]")``, lbmpy's default variable-sized
fields) gets them from the ``shape`` the caller predicts with: the spatial
extents *including ghost layers*, in pystencils' coordinate order (x, the
first index of ``f[x, y, z]``, first); index dimensions keep their fixed
extents (``f(19)``). Its strides are those of a dense array of that shape
in the field's memory layout. pystencils records only the *spatial* order
of a symbolic field, so the place of the index dimensions is an
assumption: slowest for fields whose x is contiguous (``fzyx``, lbmpy's
default, and Fortran order), fastest for C-order fields (a numpy array);
give ``layout="zyxf"`` (per field name or for all) for x-contiguous
array-of-structures fields. A field whose placement was assumed (more than
one value per cell, no layout given) gets a note naming it, the placement
assumed and the layout that states the other (:func:`assumed_layout`).
pystencils' layout names place at most one index dimension; a field of
more (``T(3, 3)``) takes pystencils' layout tuple, its dimensions slowest
first (x, y, z = 0, 1, 2, the index dimensions after them): ``(2, 1, 0, 3,
4)`` for an array of row-major 3x3 tensors with x fastest. A tuple given
for all fields applies to those with as many dimensions.

**New-style fields** (``ps.StaggeredField``, ``TensorField``): their size
parameters are the *inner* region (so ``shape`` gives the inner extents,
as their ``create_ndarray`` takes them); the allocation adds the field's
ghost layers, and the base pointer points at the first inner element,
which :attr:`FieldLayout.origin` records.

**Dimension order.** warpspeed's dimension 0 is the contiguous one, so a
field's dimensions are sorted by stride: for ``zyxf`` the index dimension
``f`` comes first (stride 1, extent Q), then x, y, z.

**Splitting the linear offset.** For a field of symbolic size every term
of an offset carries one stride parameter, which names its dimension (the
extraction reads the indices off exactly). For a field of fixed size
pystencils folds the strides into one linear element offset per access.
The part that varies with the thread is split term by
term, each coefficient written in the strides as a balanced (signed)
mixed-radix number, so that a term moves along the dimension whose stride
it multiplies; the constant part is fixed by the address of thread
``(0, 0, 0)``, whose indices must lie inside the field's shape (an unsigned
mixed-radix split). This is exact for every access inside the allocation,
which pystencils' ghost layers guarantee.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from pystencils.field import Field as PsField
from pystencils.field import compute_strides, layout_string_to_tuple

from ..errors import KernelError
from ..input.kernel import Field
from ..input.triples import ints_of
from .poly import ONE, IntPoly, from_sympy
from .unsupported import MissingShapeError, UnsupportedKernelError
from .wraps import substitute

ShapeSpec = Sequence[int] | Mapping[str, Sequence[int]] | None
LayoutSpec = str | Sequence[int] | Mapping[str, str | Sequence[int]] | None


@dataclass(frozen=True)
class FieldLayout:
    """A pystencils field with integer extents and strides (MODEL.md §1,
    "Fields"; pystencils' dimension order: spatial, then index dimensions).

    ``shape``: extents of the allocation; ``sizes``: the values of the
    kernel's size parameters (the same for a ``ps.Field``; the inner region
    of a new-style field, whose ghost layers the allocation adds);
    ``origin``: the index of the element the base pointer points at (the
    first inner element; zeros for a ``ps.Field``); ``spatial``: the number
    of spatial dimensions (the first ones, the index dimensions follow)."""

    name: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    sizes: tuple[int, ...]
    origin: tuple[int, ...]
    spatial: int

    @property
    def origin_offset(self) -> int:
        """Elements from allocation element 0 to the base pointer."""
        return sum(o * s for o, s in zip(self.origin, self.strides))

    @property
    def interleaved(self) -> bool:
        """Whether a cell's values lie between neighbouring cells (an array
        of structures, ``zyxf`` or C order; MODEL.md §1 ``gathers``): an index
        dimension of more than one value is faster than a spatial one."""
        n = len(self.shape)
        index = [self.strides[d] for d in range(self.spatial, n) if self.shape[d] > 1]
        cells = [self.strides[d] for d in range(self.spatial) if self.shape[d] > 1]
        return bool(index and cells and min(index) < max(cells))

    @property
    def values_per_cell(self) -> int:
        """The product of the index extents (a D3Q19 PDF field: 19)."""
        return int(np.prod(self.shape[self.spatial:], dtype=np.int64))

    @property
    def order(self) -> tuple[int, ...]:
        """pystencils dimensions sorted by stride, contiguous first."""
        return tuple(sorted(range(len(self.shape)), key=lambda d: (self.strides[d], d)))

    def ws_field(self, itemsize: int, base_offset: int) -> Field:
        """The warpspeed field: dimensions sorted by stride (module
        docstring); ``base_offset`` is the base pointer's byte offset from a
        128 B boundary, the field's element 0 lies ``origin`` before it."""
        order = self.order
        return Field(
            self.name,
            shape=tuple(self.shape[d] for d in order),
            itemsize=itemsize,
            strides=tuple(self.strides[d] for d in order),
            base_offset=base_offset - itemsize * self.origin_offset,
        )


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, sp.Integer))


def _is_legacy(field: Any) -> bool:
    return isinstance(field, PsField)


def spatial_rank(field: Any) -> int:
    """Number of spatial dimensions of a pystencils field (either kind)."""
    if _is_legacy(field):
        return int(field.spatial_dimensions)
    return len(field.get_iteration_limits().bounds)


def _entry(spec: ShapeSpec, name: str) -> Sequence[int] | None:
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        return spec.get(name)
    return spec


def _extents(field: Any) -> tuple[Any, ...]:
    return tuple(field.shape) if _is_legacy(field) else tuple(field.get_buffer_spec().shape)


def size_symbols(field: Any) -> list[str]:
    """Names of the symbolic extents of a pystencils field."""
    return [str(s) for s in _extents(field) if not _is_int(s)]


def field_shape(field: Any, spec: ShapeSpec) -> tuple[int, ...] | None:
    """All extents of ``field`` (spatial, then index) as its size
    parameters take them, or ``None`` when a symbolic extent is not given
    by ``spec`` (module docstring)."""
    spatial_n = spatial_rank(field)
    extents = _extents(field)
    given = _entry(spec, field.name)
    if all(_is_int(s) for s in extents):
        fixed = tuple(int(s) for s in extents)
        if isinstance(spec, Mapping) and given is not None:
            want = ints_of(given, f"shape of field {field.name}", error=KernelError)
            if want not in (fixed, fixed[:spatial_n]):
                raise KernelError(
                    f"shape {want} for field {field.name}, which has the fixed shape {fixed}"
                )
        return fixed
    if given is None:
        return None
    want = ints_of(given, f"shape of field {field.name}", error=KernelError)
    index = extents[spatial_n:]
    if len(want) == len(extents):
        index = want[spatial_n:]
        want = want[:spatial_n]
    if len(want) != spatial_n and not isinstance(spec, Mapping):
        return None  # a shape for fields of another dimensionality
    if len(want) != spatial_n:
        raise KernelError(
            f"shape {tuple(given)} for field {field.name}: give its {spatial_n} spatial extents "
            "(ghost layers included, x first)"
        )
    if not all(_is_int(s) for s in index):
        return None
    return want + tuple(int(s) for s in index)


#: Layout names that place the index dimensions (arrays of structures or
#: structures of arrays); for a field without index dimensions they name the
#: spatial order alone.
_INDEX_LAYOUTS = frozenset({"fzyx", "zyxf", "soa", "aos"})


def _named(layout: LayoutSpec, field: Any) -> str | tuple[int, ...] | None:
    """The layout ``layout`` gives ``field`` (None: none given; a tuple for
    all fields gives none to a field of another number of dimensions)."""
    if isinstance(layout, Mapping):
        given = layout.get(field.name)
    elif layout is None or isinstance(layout, str) or len(layout) == len(field.shape):
        given = layout
    else:
        return None
    return given if given is None or isinstance(given, str) else tuple(given)


def _placements(field: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The two placements of a ``ps.Field``'s index dimensions around its
    spatial layout, slowest first: structures of arrays (the index
    dimensions slowest, the last one first: ``fzyx``) and an array of
    structures (fastest, in their order: ``zyxf``)."""
    spatial = tuple(field.layout)
    index = tuple(range(field.spatial_dimensions, len(field.shape)))
    return tuple(reversed(index)) + spatial, spatial + index


def _tuple_hint(field: Any) -> str:
    """How to give ``field``'s layout as a tuple (module docstring)."""
    soa, aos = _placements(field)
    n = field.spatial_dimensions
    numbers = ", ".join(map(str, range(n, len(soa))))
    return (f"give the order of its {len(soa)} dimensions as a tuple, slowest first "
            f"({', '.join('xyz'[:n])} = {', '.join(map(str, range(n)))}, the index dimensions "
            f"{numbers}), e.g. {aos} for an array of structures, {soa} for structures of arrays")


def _given_layout(field: Any, name: str | tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions, slowest first, that the layout ``name`` (a pystencils
    layout name or tuple) gives ``field`` (module docstring)."""
    ndim, spatial_n = len(field.shape), field.spatial_dimensions
    if not isinstance(name, str):
        if sorted(name) != list(range(ndim)):
            raise KernelError(f"layout {name} for field {field.name}: {_tuple_hint(field)}")
        return name
    try:
        if ndim == spatial_n and name.lower() in _INDEX_LAYOUTS:
            # a field without index dimensions: only the spatial order counts
            return tuple(d for d in layout_string_to_tuple(name, ndim + 1) if d < ndim)
        return tuple(layout_string_to_tuple(name, ndim))
    except (ValueError, KeyError) as exc:
        more = ""
        if ndim - spatial_n > 1:
            more = (f"; pystencils' layout names place at most one index dimension, "
                    f"{field.name} has {ndim - spatial_n}: {_tuple_hint(field)}")
        why = str(exc).rstrip(".")
        raise KernelError(f"layout {name!r} for field {field.name}: {why}{more}") from None


def _full_layout(field: Any, layout: LayoutSpec) -> tuple[int, ...]:
    """Dimensions of a ``ps.Field`` from slowest to fastest (module docstring)."""
    spatial = tuple(field.layout)
    name = _named(layout, field)
    if name is not None:
        full = _given_layout(field, name)
        if tuple(d for d in full if d < field.spatial_dimensions) != spatial:
            raise KernelError(
                f"layout {name!r} for field {field.name} contradicts its spatial layout "
                f"{spatial} (slowest first)"
            )
        return full
    soa, aos = _placements(field)
    if spatial and spatial[0] == 0 and len(spatial) > 1:  # C order: index dimensions fastest
        return aos
    return soa


def _layout_name(full: tuple[int, ...]) -> str:
    """``full`` as the pystencils layout name that gives it, else as a tuple."""
    for name in ("fzyx", "zyxf", "c", "f"):
        try:
            if tuple(layout_string_to_tuple(name, len(full))) == full:
                return repr(name)
        except ValueError:
            continue
    return str(full)


def assumed_layout(field: Any, layout: LayoutSpec) -> str | None:
    """The note on a field whose index placement was assumed (module
    docstring, MODEL.md §1 "Fields"): a ``ps.Field`` of symbolic strides
    with more than one value per cell and no layout given; None otherwise."""
    if not _is_legacy(field) or all(_is_int(s) for s in field.strides):
        return None
    index = tuple(field.index_shape)
    if _named(layout, field) is not None or not all(_is_int(e) for e in index):
        return None
    values = int(np.prod([int(e) for e in index], dtype=np.int64))
    if values <= 1:
        return None
    soa, aos = _placements(field)
    full = _full_layout(field, None)
    what = ("one array per value (structures of arrays)", "adjacent per cell (an array of "
            "structures)")
    other = aos if full == soa else soa
    said, unsaid = what if full == soa else what[::-1]
    return (f"field {field.name}: pystencils does not record where a field of symbolic size "
            f"keeps its index dimensions; its {values} values per cell were assumed stored "
            f"{said}, layout {_layout_name(full)}; if they are stored {unsaid}, say so: "
            f"ExtractOptions(layout={{{field.name!r}: {_layout_name(other)}}})")


def _ghost(field: Any, spatial_n: int) -> list[tuple[int, int]]:
    g = getattr(field, "ghost_layers", 0)
    if isinstance(g, int):
        return [(g, g)] * spatial_n
    return [(int(lo), int(hi)) for lo, hi in g]


def resolve(field: Any, spec: ShapeSpec, layout: LayoutSpec) -> FieldLayout | None:
    """Integer extents and strides of ``field``, or ``None`` when its shape
    is symbolic and not given (module docstring)."""
    sizes = field_shape(field, spec)
    if sizes is None:
        return None
    if _is_legacy(field):
        strides = field.strides
        if not all(_is_int(s) for s in strides):
            strides = compute_strides(sizes, _full_layout(field, layout))
        zeros = (0,) * len(sizes)
        return FieldLayout(field.name, sizes, tuple(int(s) for s in strides), sizes, zeros,
                           int(field.spatial_dimensions))
    spatial_n = spatial_rank(field)
    ghost = _ghost(field, spatial_n) + [(0, 0)] * (len(sizes) - spatial_n)
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(sizes, ghost))
    strides = tuple(field.get_buffer_spec().strides)
    if not all(_is_int(s) for s in strides):
        out = [0] * len(shape)
        step = 1
        for d in field.layout.linearization_order(len(shape), spatial_n):  # fastest first
            out[d] = step
            step *= shape[d]
        strides = tuple(out)
    origin = tuple(lo for lo, _ in ghost)
    return FieldLayout(field.name, shape, tuple(int(s) for s in strides), sizes, origin,
                       spatial_n)


def missing_shape(fields: Sequence[Any]) -> MissingShapeError:
    """The error for fields of symbolic size predicted without a shape
    (MODEL.md §1: fields have known shapes)."""
    names = [s for f in fields for s in size_symbols(f)]
    which = sorted({f.name for f in fields})
    return MissingShapeError(
        f"the fields {', '.join(which)} have symbolic sizes ({', '.join(names)}); give the "
        "array shape to predict with, options=ExtractOptions(shape=(nx, ny, nz)) of "
        "extract, predict or create_kernel: the spatial extents including ghost layers, x "
        "first (for StaggeredField / TensorField: the inner region, the values of their "
        "size parameters; a mapping field name -> shape for fields of different sizes)"
    )


def split(
    offset: IntPoly, strides: Sequence[int], what: str,
    hints: Mapping[sp.Symbol, int] | None = None,
    values: Mapping[sp.Symbol, IntPoly] | None = None,
) -> list[IntPoly]:
    """Split a linear element offset into one index per dimension (MODEL.md
    §1, "Accesses"; module docstring). ``strides`` in warpspeed order (contiguous first); the
    result satisfies ``sum(index_d * strides_d) == offset`` exactly. ``hints``:
    atoms whose terms belong to a known dimension (periodic wraps), replaced
    by ``values`` before the constant is placed."""
    hints = hints or {}
    n = len(strides)
    desc = sorted(range(n), key=lambda d: -strides[d])
    parts: list[dict] = [{} for _ in range(n)]
    const = 0
    for monomial, coeff in offset.terms:
        if monomial == ONE:
            const += coeff
            continue
        rest = coeff
        exact = _hinted_dim(monomial, coeff, strides, hints)
        if exact is not None:  # a periodic wrap: along its own dimension, exactly
            parts[exact][monomial] = parts[exact].get(monomial, 0) + coeff // strides[exact]
            continue
        for d in desc:
            q = _round_div(rest, strides[d])
            rest -= q * strides[d]
            if q:
                parts[d][monomial] = parts[d].get(monomial, 0) + q
        if rest:
            raise UnsupportedKernelError(
                f"{what}: cannot split the offset term {coeff}*{sp.Mul(*monomial)} along the "
                f"strides {tuple(strides)}"
            )
    polys = [IntPoly.of(p) for p in parts]
    if values:
        polys = [substitute(p, values) for p in polys]
    at_zero = [p.at_zero() for p in polys]
    total = const + sum(v * s for v, s in zip(at_zero, strides))
    digits = [0] * n
    for d in desc:
        q = total // strides[d]
        digits[d] = q
        total -= q * strides[d]
    if total:
        raise UnsupportedKernelError(
            f"{what}: the constant offset cannot be split along the strides {tuple(strides)}"
        )
    return [p + IntPoly.const(g - z) for p, g, z in zip(polys, digits, at_zero)]


def split_offset(
    offset: sp.Expr | IntPoly,
    strides: tuple[int, ...],
    shape: tuple[int, ...],
    what: str = "field",
) -> list[sp.Expr]:
    """Split a linear element offset (a sympy expression in the CUDA
    builtins, or an :class:`IntPoly`) into one sympy index per dimension
    (module docstring). ``strides`` ascend (dimension 0 contiguous); ``shape``
    is the field's, whose extents the constant part must respect."""
    poly = offset if isinstance(offset, IntPoly) else from_sympy(sp.sympify(offset))
    if len(shape) != len(strides):
        raise KernelError(f"{what}: {len(shape)} extents but {len(strides)} strides")
    return [p.to_sympy() for p in split(poly, strides, what)]


def _hinted_dim(
    monomial: tuple, coeff: int, strides: Sequence[int], hints: Mapping[sp.Symbol, int]
) -> int | None:
    """The dimension ``hints`` gives an atom of ``monomial`` (a periodic wrap
    of :mod:`.wraps` moves ``N - 2`` cells along its own dimension, which
    rounding to the nearest stride would misplace), when its stride divides
    ``coeff``; None for other terms."""
    for atom in monomial:
        d = hints.get(atom)
        if d is not None and d < len(strides) and strides[d] and coeff % strides[d] == 0:
            return d
    return None


def _round_div(a: int, b: int) -> int:
    """``a / b`` rounded to the nearest integer, ties away from zero."""
    q, r = divmod(abs(a), b)
    if 2 * r >= b:
        q += 1
    return q if a >= 0 else -q


__all__ = [
    "FieldLayout",
    "assumed_layout",
    "field_shape",
    "missing_shape",
    "resolve",
    "split",
    "split_offset",
]
