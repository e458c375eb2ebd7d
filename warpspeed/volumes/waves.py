"""Whole-wave DRAM footprints with islpy implicit sets (MODEL.md §6).

Thread sets live in the six-dimensional space of
``(blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y, threadIdx.z)``
bounded by block ranges, the block size and the guard. Each field gets a map
from there to its sectors in the paper's multi-dimensional address space:
the contiguous index is floor-divided by ``32 / itemsize`` (one 32 B
sector) and the other indices stay whole. Alignment (``base_offset``) and
row pitch are ignored in this mode, as in the paper (MODEL.md §10).

isl computes the image of each thread set under each access map exactly.
Counting: islpy's wheels come without barvinok, and ``isl_set_count_val``
enumerates points, which would grow with the domain. When every image is a
box (isl's ``is_box``; the images of thread boxes under stencil index maps
are), the union, intersection and difference of the images are counted
exactly on a grid compressed to the boxes' breakpoints, whose size depends
on the number of accesses, not on the extents (:func:`box_volumes`).
Images that are products of *strided* intervals (folded kernels: ``2 * y +
c``) take the same route after the bijection ``x -> (x mod L, x div L)``
turns them into boxes (:func:`_unstride`).
Otherwise isl's own set operations are used and :func:`count` splits each
set into disjoint basic sets, counting each as a product of strided
intervals when it is one; only a basic set that is not such a product (a
skewed, diagonal pattern) falls back to enumeration by isl, and
:class:`WaveVolumes` reports how many points were enumerated that way.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

import islpy as isl
import numpy as np

from ..input.addresses import merge_repeated
from ..input.expr import LinForm, SymForm
from ..input.kernel import Access, Kernel
from ..input.triples import as_triple
from .counting import Box, StridedBox, _as_box, _unstride, box_volumes, count
from .launch import BlockBox, Launch, WaveSets, valid_threads, wave_sets
from .strided_images import strided_volumes

SECTOR = 32
#: Sector spaces of the DRAM sets: the paper's multi-dimensional one, and the
#: linear one that respects alignment and arrays of structures (MODEL.md §6).
ADDRESS_MODES = ("paper", "linear")
_CTX = isl.Context()


def _val(v: int) -> isl.Val:
    return isl.Val.int_from_si(_CTX, int(v))


def _thread_space() -> isl.Space:
    return isl.Space.set_alloc(_CTX, 0, 6)


def thread_set(box: BlockBox, block: tuple[int, int, int], domain: tuple[int, int, int]) -> isl.Set:
    """Threads of the block ranges ``box`` that pass the guard."""
    space = _thread_space()
    if any(hi <= lo for lo, hi in box):
        return isl.Set.empty(space)
    ls = isl.LocalSpace.from_space(space)
    bset = isl.BasicSet.universe(space)

    def ineq(coefs: dict[int, int], const: int) -> isl.Constraint:
        c = isl.Constraint.inequality_alloc(ls).set_constant_val(_val(const))
        for pos, v in coefs.items():
            c = c.set_coefficient_val(isl.dim_type.set, pos, _val(v))
        return c

    for d in range(3):
        (lo, hi), b, n = box[d], block[d], domain[d]
        b_pos, t_pos = d, 3 + d
        bset = bset.add_constraint(ineq({b_pos: 1}, -lo))  # b >= lo
        bset = bset.add_constraint(ineq({b_pos: -1}, hi - 1))  # b <= hi - 1
        bset = bset.add_constraint(ineq({t_pos: 1}, 0))  # t >= 0
        bset = bset.add_constraint(ineq({t_pos: -1}, b - 1))  # t <= B - 1
        bset = bset.add_constraint(ineq({b_pos: -b, t_pos: -1}, n - 1))  # b*B + t < N
    return isl.Set.from_basic_set(bset)


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


def _linear_aff(
    acc: Access, bound: dict[SymForm, LinForm], ls: isl.LocalSpace, merged: int
) -> isl.Aff:
    """Sector of the merged leading dimensions: ``floor((base + itemsize *
    sum_d index_d * stride_d) / 32)`` over ``d < merged``."""
    f = acc.field
    aff = isl.Aff.zero_on_domain(ls).set_constant_val(_val(f.base_offset))
    for d in range(merged):
        aff = aff.add(bound[acc.forms[d]].to_aff(ls).scale_val(_val(f.itemsize * f.strides[d])))
    return aff.scale_down_val(_val(SECTOR)).floor()


def access_map(acc: Access, bound: dict[SymForm, LinForm], address: str = "paper") -> isl.Map:
    """Map from thread variables to the sectors an access touches.

    ``address="paper"``: the paper's multi-dimensional space, the contiguous
    index floor-divided by the elements per sector, alignment ignored.
    ``address="linear"``: the leading dimensions of :func:`merged_dims`
    become one byte address with the field's base offset and strides,
    floor-divided by 32 B; the outer dimensions stay whole (exact when the
    row pitch is a multiple of 32 B, else a sector that straddles two rows
    counts once per row)."""
    ls = isl.LocalSpace.from_space(_thread_space())
    affs = []
    if address == "linear":
        merged = merged_dims(acc, bound)
        affs.append(_linear_aff(acc, bound, ls, merged))
        affs += [bound[form].to_aff(ls) for form in acc.forms[merged:]]
    else:
        for d, form in enumerate(acc.forms):
            aff = bound[form].to_aff(ls)
            if d == 0:
                aff = aff.scale_val(_val(acc.field.itemsize)).scale_down_val(_val(SECTOR)).floor()
            affs.append(aff)
    m = isl.Map.from_aff(affs[0])
    for aff in affs[1:]:
        m = m.flat_range_product(isl.Map.from_aff(aff))
    return m


@dataclass(frozen=True)
class WaveVolumes:
    """Sector counts of MODEL.md §6, in bytes (not yet per lattice update).

    ``old`` and ``overlap`` are grouped as (x + y, z). ``threads`` is the
    number of valid threads of the current wave; ``enumerated`` the points
    that had to be counted by enumeration (0 for ordinary stencils).
    """

    new_load: float
    new_store: float
    old: tuple[float, float]
    overlap: tuple[float, float]
    old_sets: tuple[float, float, float]
    overlap_sets: tuple[float, float, float]
    threads: int
    enumerated: int


def _isl_volumes(
    current: list[isl.Set], earlier: list[list[isl.Set]]
) -> tuple[int, list[int], list[int], int]:
    """The same counts as :func:`box_volumes` with isl set operations."""
    def union(sets: list[isl.Set], space: isl.Space) -> isl.Set:
        out = isl.Set.empty(space)
        for x in sets:
            out = out.union(x)
        return out.coalesce()

    space = current[0].get_space()
    cur = union(current, space)
    c = count(cur)
    new, enumerated = c.points, c.enumerated
    old, ovl = [], []
    for group in earlier:
        img = union(group, space)
        c_old, c_ovl = count(img), count(cur.intersect(img))
        old.append(c_old.points)
        ovl.append(c_ovl.points)
        enumerated += c_old.enumerated + c_ovl.enumerated
        cur = cur.subtract(img).coalesce()
    return new, old, ovl, enumerated


def _boxes(sets: list[isl.Set]) -> list[Box] | None:
    """The bounds of the non-empty sets, or None if one is not a box."""
    out = []
    for x in sets:
        if not x.is_empty():
            b = _as_box(x)
            if b is None:
                return None
            out.append(b)
    return out


def field_volumes(
    maps: list[isl.Map], current: isl.Set, earlier: list[isl.Set]
) -> tuple[int, list[int], list[int], int]:
    """Sectors of one field: new, old and overlap per earlier set, and the
    number of enumerated points."""
    cur_imgs = [current.apply(m) for m in maps]
    old_imgs = [[ts.apply(m) for m in maps] if not ts.is_empty() else [] for ts in earlier]
    boxes = _boxes(cur_imgs)
    old_boxes = [b for b in (_boxes(g) for g in old_imgs) if b is not None]
    if boxes is not None and len(old_boxes) == len(old_imgs):
        res = box_volumes(boxes, old_boxes)
        if res is not None:
            return res[0], res[1], res[2], 0
    return _isl_volumes(cur_imgs, old_imgs)


GlobalBox = tuple[tuple[int, int], ...] | None  # half-open global thread ranges; None: empty
#: An index over a global thread box: ``(const, a, lo, hi, j)`` of
#: :func:`_form_progression`, False when the form is no progression.
Progression = tuple[int, int, int, int, int | None] | Literal[False]
#: The progressions of the forms per box (:func:`_progression`), shared by all fields.
ProgressionMemo = dict[tuple[LinForm, tuple[tuple[int, int], ...]], Progression]


def global_box(box: BlockBox, block: tuple[int, int, int], domain: tuple[int, int, int]
                ) -> GlobalBox:
    """The global thread coordinates ``b * B + t`` of :func:`thread_set`: a box."""
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
    :func:`access_map`), computed directly when every index is ``const + a *
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


def _direct_volumes(
    accs: list[Access], bound: dict[SymForm, LinForm], block: tuple[int, int, int],
    current: GlobalBox, earlier: list[GlobalBox], address: str = "paper",
    memo: ProgressionMemo | None = None,
) -> tuple[int, list[int], list[int]] | None:
    """:func:`box_volumes` on images from :func:`_image`, without isl; None
    if an image is not a union of strided boxes or the grid would be too
    large."""
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


def _by_field(accesses: tuple[Access, ...]) -> dict[str, list[Access]]:
    out: dict[str, list[Access]] = {}
    for acc in accesses:
        out.setdefault(acc.field.name, []).append(acc)
    return out


def wave_volumes(
    kernel: Kernel, launch: Launch, bound: dict[SymForm, LinForm], method: str = "auto",
    address: str = "paper",
) -> WaveVolumes:
    """New, old and overlapping sectors of the representative wave
    (MODEL.md §6). ``Old_p`` sums the images of every loaded *and* every
    stored field in set ``p``; ``Overlap_p`` compares loads with loads.
    ``address`` selects the sector space of :func:`access_map`.

    ``method="auto"`` computes the images of fields whose every index is a
    global thread coordinate times a constant plus an offset directly as
    strided boxes (:func:`_image`), and all other fields with isl;
    ``method="isl"`` uses isl for every field. Both count exactly and agree
    (tests/volumes/test_waves.py); the direct route only saves time."""
    if method not in ("auto", "isl"):
        raise ValueError(f"method must be 'auto' or 'isl', got {method!r}")
    if address not in ADDRESS_MODES:
        raise ValueError(f"address must be one of {ADDRESS_MODES}, got {address!r}")
    sets: WaveSets = wave_sets(launch)
    block, domain = launch.block, kernel.domain
    boxes = (sets.current, sets.x, sets.y, sets.z)
    gboxes = [global_box(b, block, domain) for b in boxes]
    isl_sets: list[isl.Set] = []
    memo: ProgressionMemo = {}  # progressions of the forms per box, shared by all fields

    def volumes(accs: list[Access], with_earlier: bool) -> tuple[int, list[int], list[int], int]:
        n_earlier = 3 if with_earlier else 0
        res = None
        if method == "auto":
            res = _direct_volumes(
                accs, bound, block, gboxes[0], gboxes[1:1 + n_earlier], address, memo
            )
            if res is None:
                res = strided_volumes(accs, bound, block, domain, list(boxes[:1 + n_earlier]),
                                      address)
        if res is not None:
            return res[0], res[1], res[2], 0
        if not isl_sets:
            isl_sets.extend(thread_set(b, block, domain) for b in boxes)
        maps = [access_map(a, bound, address) for a in accs]
        return field_volumes(maps, isl_sets[0], isl_sets[1:1 + n_earlier])

    enumerated = 0
    new_load = new_store = 0
    old = [0, 0, 0]
    ovl = [0, 0, 0]
    # A repeated address adds nothing to a union of images: count each once.
    for accs in _by_field(merge_repeated(kernel.loads, bound)).values():
        n, o, v, e = volumes(accs, True)
        new_load += n
        old = [a + b for a, b in zip(old, o)]
        ovl = [a + b for a, b in zip(ovl, v)]
        enumerated += e
    for accs in _by_field(merge_repeated(kernel.stores, bound)).values():
        n, o, _, e = volumes(accs, True)
        new_store += n
        old = [a + b for a, b in zip(old, o)]
        enumerated += e
    return WaveVolumes(
        new_load=new_load * SECTOR,
        new_store=new_store * SECTOR,
        old=((old[0] + old[1]) * SECTOR, old[2] * SECTOR),
        overlap=((ovl[0] + ovl[1]) * SECTOR, ovl[2] * SECTOR),
        old_sets=as_triple(o * SECTOR for o in old),
        overlap_sets=as_triple(o * SECTOR for o in ovl),
        threads=valid_threads(sets.current, launch, domain),
        enumerated=enumerated,
    )
