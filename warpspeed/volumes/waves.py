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

from dataclasses import dataclass

import islpy as isl

from ..input.binding import BoundKernel, bind_kernel
from ..input.expr import LinForm, SymForm
from ..input.kernel import Access, Kernel
from ..input.triples import as_triple
from .box_images import progressions
from .counting import Box, _as_box, box_volumes, count
from .direct_images import ProgressionMemo, direct_volumes, global_box, merged_dims
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


def _by_field(accesses: tuple[Access, ...]) -> dict[str, list[Access]]:
    out: dict[str, list[Access]] = {}
    for acc in accesses:
        out.setdefault(acc.field.name, []).append(acc)
    return out


def wave_volumes(
    kernel: Kernel, launch: Launch, bound: dict[SymForm, LinForm] | BoundKernel,
    method: str = "auto", address: str = "paper",
) -> WaveVolumes:
    """New, old and overlapping sectors of the representative wave
    (MODEL.md §6). ``Old_p`` sums the images of every loaded *and* every
    stored field in set ``p``; ``Overlap_p`` compares loads with loads.
    ``address`` selects the sector space of :func:`access_map`. ``bound``:
    the kernel bound to the launch's block once (the block stage's
    :class:`warpspeed.input.binding.BoundKernel`, whose merged accesses
    are read), or its bound forms (bound here).

    ``method="auto"`` computes the images of fields whose every index is a
    global thread coordinate times a constant plus an offset directly as
    strided boxes (:func:`_image`), and all other fields with isl;
    ``method="isl"`` uses isl for every field. Both count exactly and agree
    (tests/volumes/test_waves.py); the direct route only saves time."""
    if method not in ("auto", "isl"):
        raise ValueError(f"method must be 'auto' or 'isl', got {method!r}")
    if address not in ADDRESS_MODES:
        raise ValueError(f"address must be one of {ADDRESS_MODES}, got {address!r}")
    bk = bound if isinstance(bound, BoundKernel) else bind_kernel(kernel, launch.block, bound)
    return _wave_volumes(bk, launch, method, address)


def _wave_volumes(bk: BoundKernel, launch: Launch, method: str, address: str) -> WaveVolumes:
    """:func:`wave_volumes` of the bound kernel ``bk``."""
    sets: WaveSets = wave_sets(launch)
    bound = bk.bound
    block, domain = launch.block, bk.kernel.domain
    boxes = (sets.current, sets.x, sets.y, sets.z)
    gboxes = [global_box(b, block, domain) for b in boxes]
    isl_sets: list[isl.Set] = []
    memo: ProgressionMemo = {}  # progressions of the forms per box, shared by all fields
    # every field's forms over the boxes at once (the fast route of direct_volumes)
    shared = progressions(bk.loads + bk.stores, bound, block, gboxes) if method == "auto" else None

    def volumes(accs: list[Access], with_earlier: bool) -> tuple[int, list[int], list[int], int]:
        n_earlier = 3 if with_earlier else 0
        res = None
        if method == "auto":
            res = direct_volumes(
                accs, bound, block, gboxes[0], gboxes[1:1 + n_earlier], address, memo,
                shared if with_earlier else None,
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
    for accs in _by_field(bk.loads).values():
        n, o, v, e = volumes(accs, True)
        new_load += n
        old = [a + b for a, b in zip(old, o)]
        ovl = [a + b for a, b in zip(ovl, v)]
        enumerated += e
    for accs in _by_field(bk.stores).values():
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
