"""Wave images of folds strided by the block size, without isl (MODEL.md §6).

A thread folded by the block size (the convolution of
``stencils/convolution2d.py``: ``x = blockIdx.x * B * m + threadIdx.x + xi *
B``) addresses ``v = c + a_t * t + a_b * b`` along an index, with ``a_b = m B
a_t``: runs of ``B`` values every ``m B``. That is no global thread
coordinate, so :func:`warpspeed.waves._image` cannot take it and isl would
handle a union of one map per access, a cost that grows faster than the
accesses. Here each index's coordinate ``h(v)`` (the sector of the
contiguous index, the index itself otherwise, as in
:func:`warpspeed.waves.access_map`) is written as the pair
``(h mod K, h div K)`` with the period ``K = h(v + a_b) - h(v)``: a
bijection of the integers, under which the image of a range of blocks is a
union of at most three boxes per index: ``h(c + a_t * t)`` over the threads
of one block is an interval, and the blocks shift it by whole periods. The
wave sets are split into full blocks and the domain's partial last block
per axis. :func:`warpspeed.counting.box_volumes` then counts exactly, as
for any union of boxes; tests/test_strided_images.py compares with isl.

Applies when every index of every access of a field is such a form of one
axis (an axis feeds at most one index), the periods of an index agree
between the field's accesses, and ``h`` moves by at most one per thread;
otherwise :func:`strided_volumes` returns None and isl does it.
"""

from __future__ import annotations

import itertools

from .counting import Box, box_volumes
from .expr import LinForm, SymForm
from .kernel import Access
from .launch import BlockBox

SECTOR = 32

# Per index: (alpha, beta, gamma) of h(v) = floor((alpha + beta * v) / gamma).
_Coord = tuple[int, int, int]
# Per index: the axis (or None if constant), the constant, a_t and a_b.
_Index = tuple[int | None, int, int, int]


def _indices(acc: Access, bound: dict[SymForm, LinForm]) -> list[_Index] | None:
    out: list[_Index] = []
    used: set[int] = set()
    for form in (bound[f] for f in acc.forms):
        if form.floors or form.div != 1:
            return None
        axes = [j for j in range(3) if form.coef[j] or form.coef[3 + j]]
        if len(axes) > 1 or (axes and axes[0] in used):
            return None
        if not axes:
            out.append((None, form.const, 0, 0))
            continue
        j = axes[0]
        used.add(j)
        a_b, a_t = form.coef[j], form.coef[3 + j]
        if a_t < 0 or a_b < 0:
            return None
        out.append((j, form.const, a_t, a_b))
    return out


def _coords(acc: Access, idx: list[_Index], address: str) -> tuple[list[_Coord], list[_Index]]:
    """The coordinate functions ``h`` and the indices they take, after the
    linear mode merged the leading constant dimensions into one address."""
    f = acc.field
    if address == "linear":
        merged = 1
        while merged < f.ndim and idx[merged - 1][0] is None and idx[merged - 1][2] == 0:
            merged += 1
        base = f.base_offset + f.itemsize * sum(
            idx[d][1] * f.strides[d] for d in range(merged - 1)  # type: ignore[index]
        )
        beta = f.itemsize * f.strides[merged - 1]  # type: ignore[index]
        coords = [(base, beta, SECTOR)] + [(0, 1, 1)] * (f.ndim - merged)
        return coords, idx[merged - 1:]
    return [(0, f.itemsize, SECTOR)] + [(0, 1, 1)] * (f.ndim - 1), idx


def _h(c: _Coord, v: int) -> int:
    return (c[0] + c[1] * v) // c[2]


def _axis_pieces(rng: tuple[int, int], b: int, n: int) -> list[tuple[int, int, int]]:
    """Valid threads of the block range ``rng`` along one axis: ``(b_lo,
    b_hi, threads)`` for the full blocks and the domain's partial last one."""
    lo, hi = rng
    full = n // b
    out = []
    if min(hi, full) > lo:
        out.append((lo, min(hi, full), b))
    if n % b and lo <= full < hi:
        out.append((full, full + 1, n % b))
    return out


def _periodic(s0: int, s1: int, b_lo: int, b_hi: int, k: int) -> list[tuple[Box, ...]]:
    """``{s + k * b : s0 <= s <= s1, b_lo <= b < b_hi}`` as boxes of
    ``(s mod k, s div k)``: the partial first and last periods and the
    whole ones between."""
    p0, p1 = s0 // k, s1 // k
    if p0 == p1:
        return [((s0 - p0 * k, s1 - p0 * k + 1), (p0 + b_lo, p0 + b_hi))]
    out = [((s0 - p0 * k, k), (p0 + b_lo, p0 + b_hi)),
           ((0, s1 - p1 * k + 1), (p1 + b_lo, p1 + b_hi))]
    if p1 > p0 + 1:
        out.append(((0, k), (p0 + 1 + b_lo, p1 - 1 + b_hi)))
    return out


def strided_volumes(
    accs: list[Access], bound: dict[SymForm, LinForm], block: tuple[int, int, int],
    domain: tuple[int, int, int], sets: list[BlockBox], address: str = "paper",
) -> tuple[int, list[int], list[int]] | None:
    """New, old and overlapping sectors of one field (as
    :func:`warpspeed.waves.field_volumes`) for the current wave ``sets[0]``
    and the earlier ``sets[1:]``, or None when the module's conditions fail."""
    per_acc = []
    periods: dict[int, int] = {}  # index position -> K
    for acc in accs:
        idx = _indices(acc, bound)
        if idx is None:
            return None
        coords, idx = _coords(acc, idx, address)
        for d, (c, (axis, _, a_t, a_b)) in enumerate(zip(coords, idx)):
            if axis is None:
                continue
            if c[1] * a_t > c[2] or (c[1] * a_b) % c[2]:
                return None  # h jumps within a block, or blocks shift by partial steps
            if a_b and periods.setdefault(d, c[1] * a_b // c[2]) != c[1] * a_b // c[2]:
                return None
        if per_acc and len(idx) != len(per_acc[0][1]):
            return None  # the linear mode merged different dimensions
        per_acc.append((coords, idx))
    if any(k <= 0 for k in periods.values()):
        return None
    groups: list[list[Box]] = []
    for box in sets:
        pieces = [_axis_pieces(box[j], block[j], domain[j]) for j in range(3)]
        out: list[Box] = []
        for combo in itertools.product(*pieces):
            for coords, idx in per_acc:
                dims = []
                for d, (c, (axis, const, a_t, a_b)) in enumerate(zip(coords, idx)):
                    b_lo, b_hi, n_t = combo[axis] if axis is not None else (0, 1, 1)
                    if not a_b:  # the blocks do not move this index
                        b_lo, b_hi = 0, 1
                    s0, s1 = _h(c, const), _h(c, const + a_t * (n_t - 1))
                    if d in periods:
                        dims.append(_periodic(s0, s1, b_lo, b_hi, periods[d]))
                    else:
                        dims.append([((s0, s1 + 1),)])
                for parts in itertools.product(*dims):
                    out.append(tuple(r for part in parts for r in part))
        groups.append(out)
    return box_volumes(groups[0], groups[1:])
