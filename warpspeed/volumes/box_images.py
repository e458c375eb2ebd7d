"""Sector images of a field's accesses over the wave's global thread boxes,
every access and box at once with NumPy (MODEL.md §6).

The images that :func:`warpspeed.volumes.direct_images._image` computes one access
and one box at a time, for the common case where each is a single box of
unit strides: every index of every access is ``const + a * g_j`` of a
global thread coordinate ``g_j = blockIdx_j * B_j + threadIdx_j`` (each
``g_j`` feeding at most one index), and the sectors of the contiguous
coordinate form one interval (a thread step moves at most one sector, or
the box is one thread wide along it). The forms are bound once into a
table (:meth:`warpspeed.input.addresses.AccessTerms.bound_table`) and the
progressions of every form over every box are found together. A field
outside that case gets None, and the caller takes the per-access route,
which handles the rest; both give the same boxes, so the counts agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..input.addresses import AccessTerms, access_terms
from ..input.expr import LinForm, SymForm
from ..input.kernel import Access, Field

SECTOR = 32

#: Half-open global thread ranges per axis, or None for an empty box
#: (as :data:`warpspeed.volumes.direct_images.GlobalBox`).
GlobalBox = tuple[tuple[int, int], ...] | None


@dataclass(frozen=True)
class Progressions:
    """Per box and form, the progression ``const + a * g_j`` for ``g_j`` in
    ``[lo, hi)`` of :func:`warpspeed.volumes.direct_images._form_progression`
    over a sequence of accesses (:func:`progressions`): arrays (boxes,
    forms) of the constant, ``a``, the range and the axis ``j`` (-1 and the
    range [0, 1) where no coordinate varies); ``ok`` per form whether it is
    such a progression over every box (elsewhere the arrays mean nothing);
    ``row`` each access's position in ``terms`` (by identity); ``live``
    whether each box is non-empty (the arrays hold the non-empty ones)."""

    terms: AccessTerms
    table: np.ndarray
    c: np.ndarray
    a: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    j: np.ndarray
    ok: np.ndarray
    row: dict[int, int]
    live: tuple[bool, ...]


def progressions(accesses: tuple[Access, ...], bound: Mapping[SymForm, LinForm],
                 block: tuple[int, int, int], gboxes: Sequence[GlobalBox]) -> Progressions:
    """The :class:`Progressions` of every form of ``accesses`` over the
    boxes ``gboxes`` (MODEL.md §6), once for all their fields."""
    terms = access_terms(accesses)
    table, affine = terms.bound_table(bound)
    live = tuple(g is not None for g in gboxes)
    lo = np.array([[r[0] for r in g] for g in gboxes if g is not None],
                  dtype=np.int64).reshape(-1, 3)
    hi = np.array([[r[1] for r in g] for g in gboxes if g is not None],
                  dtype=np.int64).reshape(-1, 3)
    const, coef = table[:, 0], table[:, 1:]
    a = coef[:, 3:]
    ext = hi - lo  # (boxes, 3)
    varying = (a != 0) & (ext[:, None, :] > 1)  # (boxes, forms, 3)
    ok = affine & (coef[:, :3] == np.array(block) * a).all(axis=1) & (
        varying.sum(axis=-1) <= 1).all(axis=0)  # one varying coordinate at most
    some = varying.any(axis=-1)
    return Progressions(
        terms=terms, table=table, c=const + (lo * (ext == 1)) @ a.T,
        a=(a * varying).sum(axis=-1), lo=(lo[:, None, :] * varying).sum(axis=-1),
        hi=(hi[:, None, :] * varying).sum(axis=-1) + ~some,
        j=np.where(some, varying.argmax(axis=-1), -1), ok=ok,
        row={id(acc): i for i, acc in enumerate(accesses)}, live=live)


def _intervals(c: np.ndarray, a: np.ndarray, lo: np.ndarray, hi: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``{c + a * g : lo <= g < hi}`` as first, end and whether the stride
    is 1 (:func:`warpspeed.volumes.direct_images._interval`)."""
    e0, e1 = a * lo + c, a * (hi - 1) + c
    first, last = np.minimum(e0, e1), np.maximum(e0, e1)
    return first, last + 1, (np.abs(a) <= 1) | (last == first)


def field_images(
    accs: Sequence[Access], bound: Mapping[SymForm, LinForm], block: tuple[int, int, int],
    gboxes: Sequence[GlobalBox], address: str, shared: Progressions | None = None,
) -> list[np.ndarray] | None:
    """The sector images of the accesses ``accs`` (one field) over each of
    ``gboxes``: per box an array (accesses, dimensions, 2) of half-open
    bounds (empty for an empty box), the boxes of
    :func:`warpspeed.volumes.direct_images._image` (MODEL.md §6); None outside the
    case of the module docstring. ``shared``: the :func:`progressions` over
    ``gboxes`` of accesses among which are ``accs`` (every field of a wave),
    else computed here."""
    prog = shared if shared is not None else progressions(tuple(accs), bound, block, gboxes)
    if not any(prog.live):
        return [np.zeros((0, 1, 2), dtype=np.int64) for _ in gboxes]
    index = prog.terms.index[[prog.row[id(acc)] for acc in accs]]  # (accesses, width)
    if not prog.ok[index].all():
        return None
    c, a, p_lo, p_hi, j = (x[:, index] for x in (prog.c, prog.a, prog.lo, prog.hi, prog.j))
    f = accs[0].field
    nd = f.ndim
    jd = np.sort(j[..., :nd], axis=-1)
    if ((jd[..., 1:] == jd[..., :-1]) & (jd[..., 1:] >= 0)).any():
        return None  # one coordinate feeds two indices
    if address == "linear":
        out = _linear(prog.table, index[:, :nd], f, c, a, p_lo, p_hi)
    else:
        out = _paper(f.itemsize, c[..., :nd], a[..., :nd], p_lo[..., :nd], p_hi[..., :nd])
    if out is None:
        return None
    it = iter(out)
    return [next(it) if live else np.zeros((0,) + out.shape[2:], dtype=np.int64)
            for live in prog.live]


def _linear(table: np.ndarray, index: np.ndarray, f: Field, c: np.ndarray, a: np.ndarray,
            p_lo: np.ndarray, p_hi: np.ndarray) -> np.ndarray | None:
    """Linear mode: the byte address of the merged leading dimensions
    (:func:`warpspeed.volumes.direct_images.merged_dims`) in sectors, then the other
    indices whole; None unless every access merges alike and every image
    is one box of unit strides."""
    nd, itemsize = f.ndim, f.itemsize
    strides = np.array(f.strides, dtype=np.int64)
    const_form = ~(table[:, 1:] != 0).any(axis=1)  # every coefficient 0
    # leading constant indices per access: up to the first that is not
    flags = const_form[index[:, :nd - 1]]
    lead = (np.argmin(flags, axis=1) + flags.all(axis=1) * (nd - 1) if nd > 1
            else np.zeros(len(index), dtype=np.int64))
    if (lead != lead[0]).any():
        return None
    m = int(lead[0]) + 1
    base = f.base_offset + itemsize * (c[..., :m] * strides[:m]).sum(axis=-1)
    step = itemsize * strides[m - 1] * a[..., m - 1]
    lo, hi = p_lo[..., m - 1], p_hi[..., m - 1]
    if ((np.abs(step) > SECTOR) & (hi - lo > 1)).any():
        return None  # a thread step skips sectors: strided (the per-access route)
    s0, s1 = (base + step * lo) // SECTOR, (base + step * (hi - 1)) // SECTOR
    first, end, unit = _intervals(c[..., m:nd], a[..., m:nd], p_lo[..., m:nd], p_hi[..., m:nd])
    if not unit.all():
        return None
    out = np.empty(s0.shape + (nd - m + 1, 2), dtype=np.int64)
    out[..., 0, 0], out[..., 0, 1] = np.minimum(s0, s1), np.maximum(s0, s1) + 1
    out[..., 1:, 0], out[..., 1:, 1] = first, end
    return out


def _paper(itemsize: int, c: np.ndarray, a: np.ndarray, p_lo: np.ndarray, p_hi: np.ndarray
           ) -> np.ndarray | None:
    """Paper mode: the contiguous index in sectors of ``32 / itemsize``
    elements, the others whole; None unless every image is one box of unit
    strides."""
    first, end, unit = _intervals(c, a, p_lo, p_hi)
    per = SECTOR // itemsize
    f0, e0 = first[..., 0], end[..., 0]
    s_lo, s_last = f0 // per, (e0 - 1) // per
    ok0 = (np.abs(a[..., 0]) <= per) | (e0 - f0 == 1)
    if not ok0.all() or not unit[..., 1:].all():
        return None
    out = np.stack([first, end], axis=-1)
    out[..., 0, 0], out[..., 0, 1] = s_lo, s_last + 1
    return out


__all__ = ["Progressions", "field_images", "progressions"]
