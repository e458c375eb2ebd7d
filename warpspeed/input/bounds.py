"""Accesses outside their field's allocation are refused (MODEL.md §1, §13).

A kernel whose access reaches beyond its field's allocated memory for some
valid thread would be predicted as if that memory were there; the number
would be silently wrong (a forgotten ghost layer, swapped axes, a wrong
offset). :func:`check_bounds` raises :class:`OutOfBoundsError` naming the
field, the access and the extent.

What is checked, per access whose indices are functions of the global
thread coordinates ``g = blockIdx * blockDim + threadIdx`` alone (the same
function for two different block sizes; an index that depends on the block
or thread index separately is not checked):

* over the domain box ``0 <= g < domain`` (the guard: only valid threads)
  every index must stay within its dimension's extent ``0 .. shape_k - 1``
  (ghost layers are part of the shape), and the flat element offset
  ``sum_k stride_k * index_k`` within the allocation
  ``[sum_k min(0, stride_k (shape_k - 1)), sum_k max(0, ...)]``;
* for affine indices the range over the box is exact (a sum of independent
  terms); for an access with ``floor`` / ``mod`` terms (periodic wraps,
  checkerboards) only the flat offset is checked, at the box's corners and
  centre: an offset found outside is certainly outside (no false refusal),
  one outside elsewhere is not looked for (approximation: a wrap that
  leaves the field only between the corners is not caught). Its indices
  are not checked one by one: a checkerboard's last thread of an odd row
  is idle under the kernel's guard but active in the model's box.

Fields named in ``Kernel.unbounded`` are not checked: the pystencils
frontend names there its fields of symbolic size (the array passed may be
a view into a larger allocation, as pystencils passes ghost layers) and the
index lists of boundary kernels; their allocation is not known.

An index that crosses into the next row stays inside the allocation but
reads another cell than the kernel means (a forgotten ghost layer, a slice
one cell too long, swapped axes): it is refused as well, with the range of
each offending index in the message.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from ..errors import NonAffineError, OutOfBoundsError
from .expr import LinForm, SymForm
from .fields import Access

_BLOCKS = ((1, 1, 1), (2, 3, 5))


def _global(lin: LinForm, block: tuple[int, int, int]) -> tuple[object, ...] | None:
    """``lin`` as a function of the global coordinates, or None."""
    if any(lin.coef[d] != block[d] * lin.coef[3 + d] for d in range(3)):
        return None
    floors = []
    for c, inner, _ in lin.floors:
        g = _global(inner, block)
        if g is None:
            return None
        floors.append((c, g))
    return (lin.const, tuple(lin.coef[3:]), tuple(floors), lin.div)


def _per_global(form: SymForm) -> LinForm | None:
    """The form bound to 1 x 1 x 1 blocks (block index = global coordinate)
    when it is one function of the global coordinates for every block."""
    try:
        bound = [form.bind(b) for b in _BLOCKS]
    except NonAffineError:
        return None
    funcs = [_global(lin, b) for lin, b in zip(bound, _BLOCKS)]
    if funcs[0] is None or funcs[0] != funcs[1]:
        return None
    return bound[0]


def _range(lin: LinForm, domain: Sequence[int]) -> tuple[int, int] | None:
    """Exact range of an affine form over the box (None with floors)."""
    if lin.floors or lin.div != 1:
        return None
    lo = hi = lin.const
    for d in range(3):
        span = lin.coef[d] * (domain[d] - 1)
        lo, hi = lo + min(0, span), hi + max(0, span)
    return lo, hi


def _points(domain: Sequence[int]) -> np.ndarray:
    """Thread variables (block = global coordinate, thread 0) at the box's
    corners and centre, shape (6, n)."""
    pts = [c for c in itertools.product(*[(0, d - 1) for d in domain])]
    pts.append(tuple((d - 1) // 2 for d in domain))
    g = np.array(pts, dtype=np.int64).T
    return np.vstack([g, np.zeros_like(g)])


def check_access(acc: Access, domain: Sequence[int], store: bool) -> None:
    """Raise :class:`OutOfBoundsError` if ``acc`` leaves its field's
    allocation for a thread of ``domain`` (module docstring)."""
    fld = acc.field
    forms = [_per_global(f) for f in acc.forms]
    lins = [lin for lin in forms if lin is not None]
    if len(lins) < len(forms):
        return
    strides = fld.strides
    lo_alloc = sum(min(0, s * (n - 1)) for s, n in zip(strides, fld.shape))
    hi_alloc = sum(max(0, s * (n - 1)) for s, n in zip(strides, fld.shape))
    exact = [_range(lin, domain) for lin in lins]
    if all(r is not None for r in exact):
        # the flat offset is affine too: its exact range over the box
        const = sum(s * lin.const for s, lin in zip(strides, lins))
        coef = [sum(s * lin.coef[d] for s, lin in zip(strides, lins))
                for d in range(3)]
        flat = _range(LinForm(const, tuple(coef) + (0, 0, 0), (), 1), domain)
    else:
        v = _points(domain)
        values = sum(s * lin.evaluate(v) for s, lin in zip(strides, lins))
        flat = (int(np.min(values)), int(np.max(values)))
    assert flat is not None
    # per index only where the range is exact: the corners of a floor / mod form
    # may be threads the kernel's real guard keeps idle (a checkerboard's last
    # column, counted as active, warpspeed.pystencils.launch)
    inside = all(r is None or (0 <= r[0] and r[1] <= n - 1) for r, n in zip(exact, fld.shape))
    if inside and lo_alloc <= flat[0] and flat[1] <= hi_alloc:
        return
    dims = [
        f"index {k} spans {r[0]}..{r[1]} but the extent is {n}"
        for k, (r, n) in enumerate(zip(exact, fld.shape))
        if r is not None and (r[0] < 0 or r[1] > n - 1)
    ]
    text = ", ".join(str(i) for i in acc.index)
    raise OutOfBoundsError(
        f"{fld.name}[{text}] {'writes' if store else 'reads'} outside field {fld.name} "
        f"(shape {tuple(fld.shape)}, ghost layers included) for threads of the domain "
        f"{tuple(domain)}: " + ("; ".join(dims) + "; " if dims else "")
        + f"its element offsets reach {flat[0]}..{flat[1]}, the allocation holds "
        f"{lo_alloc}..{hi_alloc}. Fix the index, the field's shape (ghost layers "
        "included) or the domain"
    )


_CHECKED: set[tuple[object, ...]] = set()
_CHECKED_LIMIT = 100_000


def check_bounds(
    loads: Sequence[Access], stores: Sequence[Access], domain: Sequence[int]
) -> None:
    """:func:`check_access` for every load and store of a kernel (each
    access and domain once per process: kernels are rebuilt by
    ``dataclasses.replace`` many times in a ranking)."""
    dom = tuple(domain)
    for accs, store in ((loads, False), (stores, True)):
        for acc in accs:
            key = (acc, dom, store)
            if key in _CHECKED:
                continue
            check_access(acc, dom, store)
            if len(_CHECKED) < _CHECKED_LIMIT:
                _CHECKED.add(key)


__all__ = ["check_access", "check_bounds"]
