"""Exact point counts of the wave sets without barvinok (MODEL.md §6).

islpy's wheels come without barvinok, and ``isl_set_count_val`` enumerates
points, which would grow with the domain. Unions of boxes are counted on a
grid compressed to their breakpoints (:func:`box_volumes`); strided
intervals become boxes after ``x -> (x mod L, x div L)`` (:func:`_unstride`);
other isl sets are split into disjoint basic sets counted as products of
strided intervals, enumerating only what is not such a product
(:func:`count`, which reports how many points it enumerated).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import islpy as isl
import numpy as np


def _val(ctx: isl.Context, v: int) -> isl.Val:
    return isl.Val.int_from_si(ctx, int(v))


@dataclass(frozen=True)
class Count:
    """A point count and how many of the points lie in pieces that are not
    products of strided intervals (counted by isl, the coupled dimensions by
    enumeration: :func:`_peeled_count`)."""

    points: int
    enumerated: int


def _count_1d(s: isl.Set) -> Count:
    ctx = s.get_ctx()
    lo = s.dim_min_val(0).to_python()
    hi = s.dim_max_val(0).to_python()
    stride = s.get_stride(0).to_python()
    stride = stride if stride > 0 else 1
    n = (hi - lo) // stride + 1
    strided = isl.Set.universe(s.get_space())
    ls = isl.LocalSpace.from_space(s.get_space())
    # {[i] : lo <= i <= hi and i = lo mod stride}
    i_aff = isl.Aff.var_on_domain(ls, isl.dim_type.set, 0)
    strided = strided.intersect(i_aff.ge_set(isl.Aff.val_on_domain(ls, _val(ctx, lo))))
    strided = strided.intersect(i_aff.le_set(isl.Aff.val_on_domain(ls, _val(ctx, hi))))
    if stride > 1:
        rem = i_aff.add_constant_val(_val(ctx, -lo)).mod_val(_val(ctx, stride))
        strided = strided.intersect(rem.eq_set(isl.Aff.zero_on_domain(ls)))
    if strided.is_equal(s):
        return Count(n, 0)
    c = s.count_val().to_python()
    return Count(c, c)


def _count_basic(s: isl.Set) -> Count:
    n = s.dim(isl.dim_type.set)
    if n == 1:
        return _count_1d(s)
    projections = [
        s.project_out(isl.dim_type.set, d + 1, n - d - 1).project_out(isl.dim_type.set, 0, d)
        for d in range(n)
    ]
    product = projections[0]
    for p in projections[1:]:
        product = product.flat_product(p)
    if product.is_equal(s.reset_tuple_id()):
        points, enumerated = 1, 0
        for p in projections:
            c = _count_1d(p)
            points *= c.points
            enumerated += c.enumerated
        return Count(points, enumerated)
    peeled = _peeled_count(s.reset_tuple_id())
    return Count(peeled, peeled)


def _peeled_count(s: isl.Set) -> int:
    """Points of a set that is not a product of strided intervals: every
    dimension that is independent of the others (the set is the product of
    its projection on that dimension and on the rest, checked by isl) is
    counted on its own, and isl enumerates only the coupled rest; far fewer
    points than enumerating the whole set."""
    n = s.dim(isl.dim_type.set)
    if n == 1:
        return _count_1d(s).points
    for d in range(n):
        rest = s.project_out(isl.dim_type.set, d, 1)
        line = s.project_out(isl.dim_type.set, d + 1, n - d - 1).project_out(
            isl.dim_type.set, 0, d
        )
        product = (
            line.insert_dims(isl.dim_type.set, 0, d)
            .insert_dims(isl.dim_type.set, d + 1, n - d - 1)
            .intersect(rest.insert_dims(isl.dim_type.set, d, 1))
        )
        if product.is_equal(s):
            return _count_1d(line).points * _peeled_count(rest)
    return s.count_val().to_python()


def count(s: isl.Set) -> Count:
    """Number of integer points of a bounded set (see the module docstring)."""
    if s.is_empty():
        return Count(0, 0)
    s = s.coalesce().make_disjoint()
    pieces: list[isl.BasicSet] = []
    s.foreach_basic_set(pieces.append)
    points = enumerated = 0
    for b in pieces:
        c = _count_basic(isl.Set.from_basic_set(b).remove_redundancies())
        points += c.points
        enumerated += c.enumerated
    return Count(points, enumerated)


Box = tuple[tuple[int, int], ...]  # half-open [lo, hi) per dimension
StridedBox = tuple[tuple[int, int, int], ...]  # (lo, hi, stride) per dimension
MAX_GRID_CELLS = 4_000_000


def _as_box(s: isl.Set) -> Box | None:
    """The bounds of a box-shaped set, or None if it is not a box."""
    if not s.is_box():
        return None
    n = s.dim(isl.dim_type.set)
    return tuple(
        (s.dim_min_val(d).to_python(), s.dim_max_val(d).to_python() + 1) for d in range(n)
    )


def _unstride(groups: list[list[StridedBox]]) -> list[list[Box]]:
    """Plain boxes in a space where every strided dimension ``x`` becomes
    the pair ``(x mod L, x div L)`` with ``L`` the lcm of its strides: a
    bijection of the integer points, so counts of unions, intersections
    and differences are unchanged. A strided interval splits into one box
    per residue it covers."""
    every = [b for g in groups for b in g]
    n = len(every[0])
    lcms = [math.lcm(*(b[d][2] for b in every)) for d in range(n)]

    def split(b: StridedBox) -> list[Box]:
        per_dim: list[list[tuple[tuple[int, int], ...]]] = []
        for d, (lo, hi, stride) in enumerate(b):
            big = lcms[d]
            if big == 1:
                per_dim.append([((lo, hi),)])
                continue
            opts: list[tuple[tuple[int, int], ...]] = []
            for j in range(big // stride):
                rho = (lo + j * stride) % big
                q_lo = -((rho - lo) // big)  # ceil((lo - rho) / big)
                q_hi = (hi - 1 - rho) // big + 1
                if q_hi > q_lo:
                    opts.append(((rho, rho + 1), (q_lo, q_hi)))
            per_dim.append(opts)
        return [sum(combo, ()) for combo in itertools.product(*per_dim)]

    return [[x for b in g for x in split(b)] for g in groups]


def _bounds(boxes: Sequence[Box] | np.ndarray, n: int) -> np.ndarray:
    """Boxes as an integer array (boxes, n, 2) of half-open bounds."""
    if isinstance(boxes, np.ndarray):
        return boxes.reshape(-1, n, 2).astype(np.int64, copy=False)
    if not boxes:
        return np.zeros((0, n, 2), dtype=np.int64)
    return np.array(boxes, dtype=np.int64).reshape(len(boxes), n, 2)


def _dims(*groups: Sequence[Box] | np.ndarray) -> int | None:
    for g in groups:
        if isinstance(g, np.ndarray):
            if g.size:
                return int(g.shape[1])
        elif g:
            return len(g[0])
    return None


#: Boxes times grid cells up to which :func:`_cover` takes the outer products.
PRODUCT_CELLS = 1 << 20


def _cover_product(cells: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """:func:`_cover` of few boxes on a small grid: each box is the outer
    product of its cell ranges along the axes, and the boxes covering a
    cell are counted by one matrix product over the boxes (exact: at most
    ``PRODUCT_CELLS`` boxes, so counts below 2**24, which float32 adds
    exactly)."""
    at = np.arange(max(shape))
    inside = ((at >= cells[..., :1]) & (at < cells[..., 1:])).astype(np.float32)  # (boxes, n, at)
    masks = [inside[:, d, :size] for d, size in enumerate(shape)]
    if len(shape) == 1:
        return masks[0].any(axis=0)
    rest = masks[-1]
    for m in reversed(masks[1:-1]):
        rest = (m[:, :, None] * rest[:, None, :]).reshape(len(cells), -1)
    return (masks[0].T @ rest > 0).reshape(shape)


def _cover(cells: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Grid cells covered by boxes given as cell ranges (boxes, n, 2).

    Boxes times cells up to ``PRODUCT_CELLS`` take outer products
    (:func:`_cover_product`: a few NumPy calls, whatever the boxes). Past
    that, few boxes set their slices; many are summed as a difference array
    (+1 and -1 at the corners, prefix sums along every axis), in time linear
    in the boxes and the cells. The difference array costs a pass per corner
    (``2**n``), so the slices serve up to ``8 * 2**n`` boxes (measured: the
    faster of the two on these grids)."""
    n = len(shape)
    grid_shape = tuple(c + 1 for c in shape)
    if len(cells) == 0:
        return np.zeros(shape, dtype=bool)
    if len(cells) * math.prod(shape) <= PRODUCT_CELLS:
        return _cover_product(cells, shape)
    if len(cells) <= 8 << n:
        grid = np.zeros(shape, dtype=bool)
        for b in cells.tolist():
            grid[tuple(slice(lo, hi) for lo, hi in b)] = True
        return grid
    flat = np.zeros(math.prod(grid_shape), dtype=np.int64)
    for corner in itertools.product((0, 1), repeat=n):
        idx = np.ravel_multi_index(tuple(cells[:, d, corner[d]] for d in range(n)), grid_shape)
        sign = -1 if sum(corner) % 2 else 1
        flat += sign * np.bincount(idx, minlength=flat.size)
    diff = flat.reshape(grid_shape)
    for d in range(n):
        np.cumsum(diff, axis=d, out=diff)
    return diff[tuple(slice(0, c) for c in shape)] > 0


def _covers(cells: np.ndarray, owner: np.ndarray, groups: int, shape: tuple[int, ...]
            ) -> np.ndarray:
    """:func:`_cover` of each group of boxes (``owner``: each box's group),
    as an array (groups, *shape). The groups are stacked along the first
    axis (a box of group ``g`` shifted by ``g`` grid lengths, which it never
    leaves), so one cover counts them all; grids too large to stack are
    covered one group at a time. Both give the same cells."""
    if groups * math.prod(shape) > MAX_GRID_CELLS:
        return np.stack([_cover(cells[owner == g], shape) for g in range(groups)])
    stacked = cells.copy()
    stacked[:, 0, :] += (owner * shape[0])[:, None]
    return _cover(stacked, (groups * shape[0], *shape[1:])).reshape(groups, *shape)


def box_volumes(
    current: Sequence[Box] | np.ndarray, earlier: Sequence[Sequence[Box] | np.ndarray]
) -> tuple[int, list[int], list[int]] | None:
    """Exact counts of MODEL.md §6 for unions of boxes.

    Returns ``New = |current|`` and, for each earlier set in order,
    ``Old_p = |set_p|`` and ``Overlap_p = |current' & set_p|`` where
    ``current'`` is the current union minus the earlier sets before ``p``.
    Boxes are lists of ``(lo, hi)`` per dimension or an array (boxes,
    dimensions, 2). Coordinates are compressed to the boxes' breakpoints,
    so the work depends on the number of boxes, not their extents (sets
    of one box at most are counted by inclusion and exclusion instead:
    :func:`_single_volumes`). Returns None when the compressed grid would
    exceed ``MAX_GRID_CELLS`` cells.
    """
    n = _dims(current, *earlier)
    if n is None:
        return 0, [0] * len(earlier), [0] * len(earlier)
    groups = [_bounds(g, n) for g in [current, *earlier]]
    if all(len(g) <= 1 for g in groups):
        return _single_volumes([g[0].tolist() if len(g) else None for g in groups])
    every = np.concatenate(groups)
    cuts = [_sorted_distinct(every[:, d, :]) for d in range(n)]
    if math.prod(len(c) - 1 for c in cuts) > MAX_GRID_CELLS:
        return None
    sizes = [c[1:] - c[:-1] for c in cuts]
    volume = sizes[0]
    for sz in sizes[1:]:
        volume = np.multiply.outer(volume, sz)
    cells = np.stack([cuts[d].searchsorted(every[:, d, :]) for d in range(n)], axis=1)
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    covered = _covers(cells, owner, len(groups), volume.shape).reshape(len(groups), -1)
    flat = volume.ravel()
    counts = (covered @ flat).tolist()
    cur, ovl = covered[0].copy(), []
    for g in covered[1:]:
        ovl.append(int((cur & g) @ flat))
        cur &= ~g
    return counts[0], counts[1:], ovl


def _sorted_distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (``np.unique`` without its overhead)."""
    x = values.flatten()
    x.sort()
    return x[np.concatenate(([True], x[1:] != x[:-1]))]


def _single_volumes(boxes: list[list[list[int]] | None]
                    ) -> tuple[int, list[int], list[int]]:
    """:func:`box_volumes` of sets of one box each (None: empty; MODEL.md §6),
    by inclusion and exclusion: ``Overlap_p`` is the volume of ``current & set_p``
    less the parts inside the sets before ``p`` (an empty one adds nothing)."""
    def common(bs: Sequence[list[list[int]]]) -> int:
        """Points in every box of ``bs``."""
        out = 1
        for ranges in zip(*bs):
            out *= max(0, min(hi for _, hi in ranges) - max(lo for lo, _ in ranges))
        return out

    cur, earlier = boxes[0], boxes[1:]
    if cur is None:
        return 0, [0 if b is None else common([b]) for b in earlier], [0] * len(earlier)
    ovl = []
    for p, box in enumerate(earlier):
        before = [b for b in earlier[:p] if b is not None]
        ovl.append(0 if box is None else sum(
            (-1) ** k * common([cur, box, *sub])
            for k in range(len(before) + 1) for sub in itertools.combinations(before, k)))
    return common([cur]), [0 if b is None else common([b]) for b in earlier], ovl


__all__ = ["MAX_GRID_CELLS", "Box", "Count", "StridedBox", "box_volumes", "count"]
