"""Wave images of folds strided by the block size, without isl (MODEL.md §6).

A thread folded by the block size (the convolution of
``stencils/convolution2d.py``: ``x = blockIdx.x * B * m + threadIdx.x + xi *
B``) addresses ``v = c + a_t * t + a_b * b`` along an index, with ``a_b = m B
a_t``: runs of ``B`` values every ``m B``. That is no global thread
coordinate, so :func:`warpspeed.volumes.direct_images._image` cannot take it and isl would
handle a union of one map per access, a cost that grows faster than the
accesses. Here each index's coordinate ``h(v)`` (the sector of the
contiguous index, the index itself otherwise, as in
:func:`warpspeed.volumes.waves.access_map`) is written as the pair
``(h mod K, h div K)`` with the period ``K = h(v + a_b) - h(v)``: a
bijection of the integers, under which the image of a range of blocks is a
union of at most three boxes per index: ``h(c + a_t * t)`` over the threads
of one block is an interval, and the blocks shift it by whole periods. The
wave sets are split into full blocks and the domain's partial last block
per axis. :func:`warpspeed.volumes.counting.box_volumes` then counts exactly, as
for any union of boxes; tests/volumes/test_strided_images.py compares with isl.

Applies when every index of every access of a field is such a form of one
axis (an axis feeds at most one index), the periods of an index agree
between the field's accesses, and ``h`` moves by at most one per thread;
otherwise :func:`strided_volumes` returns None and isl does it. Blocks that
shift an index by part of a sector (a one-thread-wide block of a 4-fold:
16 B per block) are taken ``q`` residue classes apart, ``q`` the blocks
that shift it by whole sectors: each class is a lattice of whole-sector
period (at most one such index per field).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..input.addresses import access_terms
from ..input.expr import LinForm, SymForm
from ..input.kernel import Access
from .counting import box_volumes
from .launch import BlockBox

SECTOR = 32

# Per index: the axis (or None if constant), the constant, a_t and a_b.
_Index = tuple[int | None, int, int, int]


def _index(form: LinForm) -> _Index | None:
    if form.floors or form.div != 1:
        return None
    axes = [j for j in range(3) if form.coef[j] or form.coef[3 + j]]
    if len(axes) > 1:
        return None
    if not axes:
        return (None, form.const, 0, 0)
    j = axes[0]
    a_b, a_t = form.coef[j], form.coef[3 + j]
    if a_t < 0 or a_b < 0:
        return None
    return (j, form.const, a_t, a_b)


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


# One index of a structure: the axis, beta * a_t, whether blocks move it, gamma.
_Dim = tuple[int | None, int, bool, int]

#: A coordinate whose blocks shift by part of a step (a sector): ``(axis, q,
#: coordinate, shift)``, ``q`` blocks shifting it by whole steps. Its blocks
#: are taken ``q`` residue classes apart, each a lattice of period
#: ``q * shift / gamma`` steps (:func:`_residue_pieces`).
Split = tuple[int, int, int, int]


def _dim_boxes(
    off: np.ndarray, dim: _Dim, piece: tuple[int, int, int], k: int | None
) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Per access (rows of ``off``, the offsets ``alpha + beta * const``) the
    candidate boxes of one index for the threads ``piece = (b_lo, b_hi,
    threads)``: arrays (accesses, coordinates, 2) with a mask of the rows
    where the candidate exists (None: everywhere). Without a period the
    interval ``[s0, s1]``; with period ``k`` the pair ``(s mod k, s div k)``
    for ``{s + k b : s0 <= s <= s1, b_lo <= b < b_hi}``: the partial first
    and last periods and the whole ones between."""
    _, step, moves, gamma = dim
    b_lo, b_hi, n_t = piece
    if not moves:
        b_lo, b_hi = 0, 1
    s0 = off // gamma
    s1 = (off + step * (n_t - 1)) // gamma
    if k is None:
        return [(np.stack([s0, s1 + 1], axis=-1)[:, None, :], None)]
    p0, p1 = s0 // k, s1 // k
    same = p0 == p1
    first = np.stack([
        np.stack([s0 - p0 * k, np.where(same, s1 - p0 * k + 1, k)], axis=-1),
        np.stack([p0 + b_lo, p0 + b_hi], axis=-1),
    ], axis=1)
    last = np.stack([
        np.stack([np.zeros_like(s1), s1 - p1 * k + 1], axis=-1),
        np.stack([p1 + b_lo, p1 + b_hi], axis=-1),
    ], axis=1)
    whole = np.stack([
        np.stack([np.zeros_like(s0), np.full_like(s0, k)], axis=-1),
        np.stack([p0 + 1 + b_lo, p1 - 1 + b_hi], axis=-1),
    ], axis=1)
    return [(first, None), (last, ~same), (whole, p1 > p0 + 1)]


def _residue_pieces(pieces: list[tuple[int, int, int, int]], q: int
                    ) -> list[tuple[int, int, int, int]]:
    """The blocks ``b_lo <= b < b_hi`` of each piece as ``q`` lattices
    ``b = r + q b'``: ``(b'_lo, b'_hi, threads, r)`` for the non-empty ones."""
    out = []
    for lo, hi, n, _ in pieces:
        for r in range(q):
            b_lo, b_hi = -(-(lo - r) // q), -(-(hi - r) // q)
            if b_hi > b_lo:
                out.append((b_lo, b_hi, n, r))
    return out


def _shifted(off: np.ndarray, d: int, dim: _Dim, combo: tuple[tuple[int, int, int, int], ...],
             split: Split | None) -> np.ndarray:
    """Offsets of coordinate ``d`` for the residue class of ``combo``'s block
    along the split axis (:data:`Split`): shifted by ``r`` blocks."""
    if split is None or d != split[2] or dim[0] != split[0] or not dim[2]:
        return off
    return off + combo[split[0]][3] * split[3]


def _structures(
    accs: list[Access], bound: dict[SymForm, LinForm], address: str
) -> tuple[dict[tuple[_Dim, ...], np.ndarray], dict[int, int], int, Split | None] | None:
    """The accesses of one field grouped by structure: per structure (one
    :data:`_Dim` per coordinate) the offsets ``alpha + beta * const``
    (accesses, coordinates); the period of each periodic coordinate; the
    number of coordinates; the :data:`Split` of a coordinate whose blocks
    shift by part of a step. None when the module's conditions fail."""
    terms = access_terms(tuple(accs))
    if len(np.unique(terms.field)) != 1:
        return None
    found = [_index(bound[f]) for f in terms.forms]
    info = [i for i in found if i is not None]
    if len(info) < len(found):
        return None
    table = np.array([(-1 if i[0] is None else i[0], *i[1:])
                      for i in info] + [(-1, 0, 0, 0)], dtype=np.int64)
    axis, const, a_t, a_b = np.moveaxis(table[terms.index], -1, 0)  # each (n, width)
    f = accs[0].field
    nd = f.ndim
    for d in range(nd):
        for e in range(d + 1, nd):
            if np.any((axis[:, d] >= 0) & (axis[:, d] == axis[:, e])):
                return None  # one axis feeds two indices
    # coordinate j: (index dimension, alpha (per access), beta, gamma)
    if address == "linear":
        lead = np.cumprod(axis[:, :nd - 1] < 0, axis=1).sum(axis=1)
        if len(np.unique(lead)) != 1:
            return None  # the linear mode merged different dimensions
        m = int(lead[0]) + 1
        alpha = f.base_offset + f.itemsize * sum(
            const[:, d] * f.strides[d] for d in range(m - 1)
        )
        coords = [(m - 1, alpha, f.itemsize * f.strides[m - 1], SECTOR)]
        coords += [(d, 0, 1, 1) for d in range(m, nd)]
    else:
        coords = [(0, 0, f.itemsize, SECTOR)] + [(d, 0, 1, 1) for d in range(1, nd)]
    periods: dict[int, int] = {}
    split: Split | None = None
    keys, offs = [], []
    for j, (d, alpha_j, beta, gamma) in enumerate(coords):
        ax, at, ab = axis[:, d], a_t[:, d], a_b[:, d]
        varying = ax >= 0
        if np.any(varying & (beta * at > gamma)):
            return None  # h jumps within a block
        shifts = np.unique(beta * ab[varying & (ab > 0)])
        if len(shifts) > 1:
            return None
        if len(shifts):
            q = gamma // math.gcd(int(shifts[0]), gamma)  # blocks per whole-step shift
            if q > 1:
                axes_j = np.unique(ax[varying & (ab > 0)])
                if split is not None or len(axes_j) != 1:
                    return None  # one split axis at most
                split = (int(axes_j[0]), q, j, int(shifts[0]))
            periods[j] = int(shifts[0]) * q // gamma
        keys += [ax, beta * at, (ab != 0).astype(np.int64)]
        offs.append(alpha_j + beta * const[:, d])
    key_rows = np.stack(keys, axis=1)
    off = np.stack(offs, axis=1)
    uniq, inverse = np.unique(key_rows, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    out: dict[tuple[_Dim, ...], np.ndarray] = {}
    for g, row in enumerate(uniq.tolist()):
        key = tuple(
            (None if row[3 * j] < 0 else row[3 * j], row[3 * j + 1], bool(row[3 * j + 2]),
             coords[j][3])
            for j in range(len(coords))
        )
        out[key] = off[inverse == g]
    return out, periods, len(coords), split


def strided_volumes(
    accs: list[Access], bound: dict[SymForm, LinForm], block: tuple[int, int, int],
    domain: tuple[int, int, int], sets: list[BlockBox], address: str = "paper",
) -> tuple[int, list[int], list[int]] | None:
    """New, old and overlapping sectors of one field (as
    :func:`warpspeed.volumes.waves.field_volumes`) for the current wave ``sets[0]``
    and the earlier ``sets[1:]``, or None when the module's conditions fail.
    Accesses of one structure (the same axes and coefficients, different
    constants) are handled together as arrays."""
    if not accs:
        return None
    found = _structures(accs, bound, address)
    if found is None:
        return None
    arrays, periods, ndims, split = found
    width = sum(2 if d in periods else 1 for d in range(ndims))
    groups: list[np.ndarray] = []
    for box in sets:
        pieces = [[(*p, 0) for p in _axis_pieces(box[j], block[j], domain[j])]
                  for j in range(3)]
        if split is not None:
            pieces[split[0]] = _residue_pieces(pieces[split[0]], split[1])
        out = [np.zeros((0, width, 2), dtype=np.int64)]
        for combo in itertools.product(*pieces):
            for key, off in arrays.items():
                dims = [
                    _dim_boxes(_shifted(off[:, d], d, dim, combo, split), dim,
                               combo[dim[0]][:3] if dim[0] is not None else (0, 1, 1),
                               periods.get(d))
                    for d, dim in enumerate(key)
                ]
                for choice in itertools.product(*dims):
                    boxes = np.concatenate([c[0] for c in choice], axis=1)
                    masks = [c[1] for c in choice if c[1] is not None]
                    if masks:
                        boxes = boxes[np.logical_and.reduce(masks)]
                    out.append(boxes)
        groups.append(np.concatenate(out))
    return box_volumes(groups[0], groups[1:])
