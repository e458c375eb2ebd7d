"""Wave images without isl (MODEL.md §6): the sector image of an access over
a global thread box, computed directly as strided boxes when every index
is ``const + a * g_j`` of a global thread coordinate (floor divisions cut
the box into pieces first), and the counts of a field's images over the
wave sets from them (:func:`direct_volumes`). The isl route of
:mod:`warpspeed.volumes.waves` gives the same boxes for these accesses
(tests/volumes/test_waves.py); this one only saves time. A field whose images are
single boxes of unit strides is done at once
(:mod:`warpspeed.volumes.box_images`).
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import numpy as np

from ..input.expr import LinForm, SymForm
from ..input.kernel import Access
from .box_images import Progressions, field_images
from .counting import StridedBox, _unstride, box_volumes
from .launch import BlockBox

SECTOR = 32


def merged_dims(acc: Access, bound: dict[SymForm, LinForm]) -> int:
    """How many leading dimensions the linear address mode merges into one
    (MODEL.md §6, linear mode): a leading dimension whose index is the same
    for every thread (a component index of an array of structures, ``f`` of
    a ``zyxf`` field) is merged into the next one, repeatedly; at least 1."""
    n = 1
    while n < acc.field.ndim:
        f = bound[acc.forms[n - 1]]
        if any(f.coef) or f.floors:
            break
        n += 1
    return n


GlobalBox = tuple[tuple[int, int], ...] | None  # half-open global thread ranges; None: empty
#: An index over a global thread box: ``(const, a, lo, hi, j)`` of
#: :func:`_form_progression`, False when the form is no progression.
Progression = tuple[int, int, int, int, int | None] | Literal[False]
#: The progressions of the forms per box (:func:`_progression`), shared by all fields.
ProgressionMemo = dict[tuple[LinForm, tuple[tuple[int, int], ...]], Progression]


def global_box(box: BlockBox, block: tuple[int, int, int], domain: tuple[int, int, int]
                ) -> GlobalBox:
    """The global thread coordinates ``b * B + t`` of
    :func:`warpspeed.volumes.waves.thread_set`: a box."""
    out = []
    for (lo, hi), b, n in zip(box, block, domain):
        g_lo, g_hi = lo * b, min(hi * b, n)
        if hi <= lo or g_hi <= g_lo:
            return None
        out.append((g_lo, g_hi))
    return tuple(out)


def _progression(
    form: LinForm, block: tuple[int, int, int], gbox: tuple[tuple[int, int], ...],
    used: set[int], memo: ProgressionMemo | None = None,
) -> tuple[int, int, int, int] | None:
    """An index over the global thread box as ``const + a * g_j`` for
    ``g_j`` in ``[lo, hi)``: ``(const, a, lo, hi)`` (``a = 0`` and an empty
    range when it is the same for every thread); None when it is not such a
    progression or ``g_j`` already feeds another index (``used``: the
    coordinates that do). ``memo`` keeps each form's progression per box
    (the accesses of a stencil share most of their forms)."""
    key = (form, gbox)
    hit = memo.get(key) if memo is not None else None
    if hit is None:
        hit = _form_progression(form, block, gbox)
        if memo is not None:
            memo[key] = hit
    if hit is False:
        return None
    c, a, lo, hi, j = hit
    if j is not None:
        if j in used:
            return None
        used.add(j)
    return c, a, lo, hi


def _form_progression(
    form: LinForm, block: tuple[int, int, int], gbox: tuple[tuple[int, int], ...]
) -> Progression:
    """:func:`_progression` before the ``used`` check, with the varying
    coordinate (None if none); False when the form is no progression."""
    if form.floors or form.div != 1:
        return False
    if any(form.coef[j] != block[j] * form.coef[3 + j] for j in range(3)):
        return False
    a = form.coef[3:]
    c = form.const + sum(a[j] * gbox[j][0] for j in range(3) if gbox[j][1] - gbox[j][0] == 1)
    varying = [j for j in range(3) if a[j] and gbox[j][1] - gbox[j][0] > 1]
    if len(varying) > 1:
        return False
    if not varying:
        return c, 0, 0, 1, None
    j = varying[0]
    return c, a[j], gbox[j][0], gbox[j][1], j


def _interval(c: int, a: int, lo: int, hi: int) -> tuple[int, int, int]:
    """``{c + a * g : lo <= g < hi}`` as ``(first, end, stride)``."""
    ends = (a * lo + c, a * (hi - 1) + c)
    first, last = min(ends), max(ends)
    return first, last + 1, abs(a) if last > first else 1


def _linear_sectors(base: int, a: int, lo: int, hi: int) -> list[tuple[int, int, int]]:
    """Sectors ``floor((base + a * g) / 32)`` for ``g`` in ``[lo, hi)`` as
    strided intervals: one interval when a step moves at most one sector;
    else one per residue of ``g`` modulo the period ``P = 32 / gcd(32, a)``,
    after which the sector advances by exactly ``K = |a| P / 32``."""
    if a == 0 or hi - lo == 1:
        sec = (base + a * lo) // SECTOR
        return [(sec, sec + 1, 1)]
    if abs(a) <= SECTOR:
        ends = ((base + a * lo) // SECTOR, (base + a * (hi - 1)) // SECTOR)
        return [(min(ends), max(ends) + 1, 1)]
    period = SECTOR // math.gcd(SECTOR, abs(a))
    step = abs(a) * period // SECTOR
    out = []
    for r in range(min(period, hi - lo)):
        n = (hi - 1 - lo - r) // period + 1
        first = (base + a * (lo + r)) // SECTOR
        last = first + (n - 1) * step * (1 if a > 0 else -1)
        out.append((min(first, last), max(first, last) + 1, step if n > 1 else 1))
    return out


#: At most this many pieces of a thread box on which every floor of an
#: access is constant (a periodic wrap makes two per wrapped axis).
MAX_FLOOR_PIECES = 16


def _floor_pieces(
    forms: list[LinForm], block: tuple[int, int, int], gbox: tuple[tuple[int, int], ...]
) -> list[tuple[tuple[tuple[int, int], ...], list[LinForm]]] | None:
    """The global thread box cut into pieces on which every floor term of
    ``forms`` is constant, with each form's floors replaced by their value
    there: the indicators of periodic wraps (:mod:`warpspeed.pystencils.wraps`)
    become two affine pieces. None when a floor is nested, depends on more
    than one global coordinate or not on ``g_j = blockIdx_j * B_j +
    threadIdx_j``, or when there would be more than
    :data:`MAX_FLOOR_PIECES` pieces."""
    cuts: list[set[int]] = [{lo, hi} for lo, hi in gbox]
    for form in forms:
        for _, inner, _ in form.floors:
            a = inner.coef[3:]
            if inner.floors or any(inner.coef[j] != block[j] * a[j] for j in range(3)):
                return None
            varying = [j for j in range(3) if a[j] and gbox[j][1] - gbox[j][0] > 1]
            if len(varying) > 1:
                return None
            for j in varying:
                lo, hi = gbox[j]
                g = np.arange(lo, hi)
                vals = (inner.const + a[j] * g) // inner.div
                cuts[j].update((lo + 1 + np.flatnonzero(np.diff(vals))).tolist())
    ranges = [sorted(c) for c in cuts]
    if math.prod(len(r) - 1 for r in ranges) > MAX_FLOOR_PIECES:
        return None
    out = []
    for piece in itertools.product(*(list(zip(r[:-1], r[1:])) for r in ranges)):
        g0 = [lo for lo, _ in piece]  # every floor is constant on the piece
        out.append((piece, [
            LinForm(form.const + sum(c * _floor_at(inner, g0) for c, inner, _ in form.floors),
                    form.coef, (), form.div)
            for form in forms
        ]))
    return out


def _floor_at(inner: LinForm, g: list[int]) -> int:
    """A floor term of global coordinates ``g`` (``inner`` a global form)."""
    return (inner.const + sum(inner.coef[3 + j] * g[j] for j in range(3))) // inner.div


def _image(acc: Access, bound: dict[SymForm, LinForm], block: tuple[int, int, int],
           gbox: tuple[tuple[int, int], ...], address: str = "paper",
           memo: ProgressionMemo | None = None) -> list[StridedBox] | None:
    """The sector image of a global thread box under ``acc`` (as
    :func:`warpspeed.volumes.waves.access_map`), computed directly when every index is ``const + a *
    g_j`` of a global coordinate ``g_j = blockIdx_j * B_j + threadIdx_j``
    and each ``g_j`` feeds at most one index: a union of products of
    strided intervals. Floors of one global coordinate (periodic wraps) are
    first cut into pieces where they are constant (:func:`_floor_pieces`).
    In paper mode the sector division of the contiguous index must keep a
    progression (stride at most, or a multiple of, the elements per
    sector); the linear mode splits it by residue (:func:`_linear_sectors`).
    None otherwise (isl then does it)."""
    forms = [bound[f] for f in acc.forms]
    merged = merged_dims(acc, bound) if address == "linear" else 0
    if not any(f.floors for f in forms):
        return _affine_image(acc, forms, block, gbox, address, merged, memo)
    pieces = _floor_pieces(forms, block, gbox)
    if pieces is None:
        return None
    out: list[StridedBox] = []
    for sub, sub_forms in pieces:
        img = _affine_image(acc, sub_forms, block, sub, address, merged)
        if img is None:
            return None
        out += img
    return out


def _affine_image(acc: Access, forms: list[LinForm], block: tuple[int, int, int],
                  gbox: tuple[tuple[int, int], ...], address: str, merged: int,
                  memo: ProgressionMemo | None = None) -> list[StridedBox] | None:
    """:func:`_image` of forms without floors; ``merged`` as
    :func:`merged_dims` of the access (linear mode), ``memo`` as
    :func:`_progression`."""
    used: set[int] = set()
    found = [_progression(f, block, gbox, used, memo) for f in forms]
    prog = [p for p in found if p is not None]
    if len(prog) < len(found):
        return None
    f = acc.field
    if address == "linear":
        base = f.base_offset + f.itemsize * sum(
            p[0] * f.strides[d] for d, p in enumerate(prog[:merged])
        )
        _, a, lo, hi = prog[merged - 1]
        first = _linear_sectors(base, f.itemsize * f.strides[merged - 1] * a, lo, hi)
        rest = [_interval(*p) for p in prog[merged:]]
        return [(x, *rest) for x in first]
    out = [_interval(*p) for p in prog]
    lo, end, stride = out[0]
    per = SECTOR // f.itemsize
    if stride <= per or end - lo == 1:
        stride = 1
    elif stride % per == 0:
        stride //= per
    else:
        return None
    lo, last = lo // per, (end - 1) // per
    out[0] = (lo, last + 1, stride if last > lo else 1)
    return [tuple(out)]


def direct_volumes(
    accs: list[Access], bound: dict[SymForm, LinForm], block: tuple[int, int, int],
    current: GlobalBox, earlier: list[GlobalBox], address: str = "paper",
    memo: ProgressionMemo | None = None, shared: Progressions | None = None,
) -> tuple[int, list[int], list[int]] | None:
    """:func:`box_volumes` on images from :func:`_image`, without isl; None
    if an image is not a union of strided boxes or the grid would be too
    large. A field whose images are single boxes of unit strides is done
    at once (:func:`warpspeed.volumes.box_images.field_images`; ``shared``:
    the progressions over ``[current, *earlier]`` of every field's forms)."""
    fast = field_images(accs, bound, block, [current, *earlier], address, shared)
    if fast is not None:
        return box_volumes(fast[0], fast[1:])
    groups: list[list[StridedBox]] = []
    memo = {} if memo is None else memo
    for g in [current, *earlier]:
        boxes_g: list[StridedBox] = []
        if g is not None:  # an empty box has no image
            for a in accs:
                img = _image(a, bound, block, g, address, memo)
                if img is None:
                    return None
                boxes_g += img
        groups.append(boxes_g)
    if not any(groups):
        return 0, [0] * len(earlier), [0] * len(earlier)
    if all(st == 1 for g in groups for b in g for _, _, st in b):
        boxes = [[tuple((lo, hi) for lo, hi, _ in b) for b in g] for g in groups]
    else:
        boxes = _unstride(groups)
    return box_volumes(boxes[0], boxes[1:])


__all__ = ["GlobalBox", "ProgressionMemo", "direct_volumes", "global_box", "merged_dims"]
