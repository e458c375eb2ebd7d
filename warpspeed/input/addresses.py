"""Addresses of a kernel's accesses once the block size is bound: linear
element offsets, the block-independent terms of an access sequence, and the
merging of accesses a thread repeats (MODEL.md §1).

After the block size and folding are bound, two accesses of one thread
that address the same element count once at every level (the compiler
loads read-only data once per thread); ``Kernel.reload_repeated`` keeps
them apart for code where that cannot apply, and ``Kernel.output_guards``
keeps apart the loads of outputs under separate bounds checks
(:func:`guarded_separately`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .expr import LinForm, SymForm, bind_all, global_terms
from .kernel import Access, Field, Kernel


def address_key(
    acc: Access, bound: Mapping[SymForm, LinForm],
    cache: dict[tuple[SymForm, int], tuple[int, tuple[int, ...]] | None] | None = None,
) -> tuple[object, ...]:
    """A key equal for two accesses of one thread that address the same
    element for every thread once the block size is bound (``bound``: the
    forms bound by :func:`warpspeed.input.expr.bind_all`). Affine forms compare
    by their linear element offset (``A[x + n, y]`` and ``A[x, y + 1]`` of
    an ``n``-wide field coincide); forms with floor divisions by their
    bound forms per dimension, a sufficient condition."""
    lin = linear_address(acc, bound, cache)
    if lin is not None:
        return (acc.field.name, *lin)
    return (acc.field.name, tuple(bound[f] for f in acc.forms))


def linear_address(
    acc: Access, bound: Mapping[SymForm, LinForm],
    cache: dict[tuple[SymForm, int], tuple[int, tuple[int, ...]] | None] | None = None,
) -> tuple[int, tuple[int, ...]] | None:
    """The byte address of an access with affine bound forms as ``(const,
    coef)``: ``const + coef . v`` over the six thread variables (base offset
    included); None when a form has a floor division. ``cache`` keeps each
    (form, byte stride) term for the next access of the same batch."""
    f = acc.field
    const = f.base_offset
    coef: tuple[int, ...] = (0, 0, 0, 0, 0, 0)
    for form, stride in zip(acc.forms, f.strides or ()):
        key = (form, f.itemsize * stride)
        term: tuple[int, tuple[int, ...]] | None | Literal[False] = (
            cache.get(key, False) if cache is not None else False)
        if term is False:
            b = bound[form]
            term = None if b.floors or b.div != 1 else (
                key[1] * b.const, tuple(key[1] * c for c in b.coef))
            if cache is not None:
                cache[key] = term
        if term is None:
            return None
        const += term[0]
        coef = tuple(a + c for a, c in zip(coef, term[1]))
    return const, coef


@dataclass(frozen=True)
class AccessTerms:
    """The block-independent structure of a sequence of accesses: the
    distinct index forms, and per access and dimension the form's position
    (``len(forms)`` pads fields of fewer dimensions) and byte stride
    (``itemsize * stride``, 0 for padding); per access the field's base
    offset and a field number. Built once per sequence
    (:func:`access_terms`); bound per launch as arrays."""

    forms: tuple[SymForm, ...]
    index: np.ndarray
    scale: np.ndarray
    base: np.ndarray
    field: np.ndarray

    def bound_table(self, bound: Mapping[SymForm, LinForm]) -> tuple[np.ndarray, np.ndarray]:
        """Per form ``(const, coef...)`` (rows of 7; a zero row appended for
        padding) and whether it is affine (no floor division)."""
        forms = [bound[f] for f in self.forms]
        rows = [(b.const, *b.coef) for b in forms]
        rows.append((0,) * 7)
        affine = [not b.floors and b.div == 1 for b in forms]
        affine.append(True)
        return np.array(rows, dtype=np.int64).reshape(-1, 7), np.array(affine)


@functools.lru_cache(maxsize=64)
def access_terms(accesses: tuple[Access, ...]) -> AccessTerms:
    """The :class:`AccessTerms` of ``accesses`` (cached per tuple)."""
    ids: dict[SymForm, int] = {}
    fields_: dict[Field, int] = {}
    width = max((a.field.ndim for a in accesses), default=0)
    index, fid = [], []
    for acc in accesses:
        fid.append(fields_.setdefault(acc.field, len(fields_)))
        forms = [ids.setdefault(form, len(ids)) for form in acc.forms]
        index.append(forms + [-1] * (width - len(forms)))
    per_field = list(fields_)
    f_id = np.array(fid, dtype=np.int64).reshape(len(accesses))
    scales = np.zeros((len(per_field), width), dtype=np.int64)
    for k, f in enumerate(per_field):
        scales[k, :f.ndim] = [f.itemsize * st for st in f.strides or ()]
    ix = np.array(index, dtype=np.int64).reshape(len(accesses), width)
    ix[ix < 0] = len(ids)
    names: dict[str, int] = {}
    name_id = np.array([names.setdefault(f.name, len(names)) for f in per_field] or [0])
    return AccessTerms(tuple(ids), ix, scales[f_id],
                       np.array([f.base_offset for f in per_field] or [0])[f_id],
                       name_id[f_id])


def kernel_forms(kernel: Kernel) -> tuple[SymForm, ...]:
    """The distinct index forms of a kernel's loads and stores (what a
    launch binds; :func:`warpspeed.input.expr.bind_all` of ``[kernel_forms(k)]``)."""
    return access_terms(kernel.loads + kernel.stores).forms


def linear_addresses(
    accesses: Sequence[Access], bound: Mapping[SymForm, LinForm]
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`linear_address` of many accesses at once: an array (accesses,
    7) of ``const, coef`` and a mask of the affine ones (rows of the others
    are meaningless)."""
    terms = access_terms(tuple(accesses))
    table, affine = terms.bound_table(bound)
    out = (table[terms.index] * terms.scale[:, :, None]).sum(axis=1)
    out[:, 0] += terms.base
    return out, affine[terms.index].all(axis=1)


def first_occurrences(keys: np.ndarray) -> tuple[list[int], np.ndarray]:
    """Equal values (1-D) or rows (2-D) of ``keys`` numbered by first
    appearance: the index of each group's first member, and each entry's
    group. (A dictionary: these arrays hold a few dozen entries, where
    ``np.unique`` costs more than the work.)"""
    seen: dict[object, int] = {}
    first: list[int] = []
    group = np.empty(len(keys), dtype=np.int64)
    for i, k in enumerate(keys.tolist()):
        key = tuple(k) if isinstance(k, list) else k
        g = seen.setdefault(key, len(first))
        if g == len(first):
            first.append(i)
        group[i] = g
    return first, group


def merge_repeated(
    accesses: Sequence[Access], bound: Mapping[SymForm, LinForm]
) -> tuple[Access, ...]:
    """``accesses`` without the repeats of an address (:func:`address_key`),
    the first of each kept, in order. When every form is a function of the
    global thread coordinates alone (:func:`warpspeed.input.expr.global_terms`),
    two addresses agree at one block size exactly when they agree at every
    one: the result is kept per access tuple and reused for other blocks."""
    if not accesses:
        return ()
    return per_tuple(
        _MERGED, accesses, lambda: _merge(accesses, bound),
        keep=lambda: isinstance(accesses, tuple) and all(
            global_terms(f) is not None for a in accesses for f in a.forms))


#: Block-independent merges of :func:`merge_repeated`, per access tuple.
_MERGED: dict[int, tuple[object, tuple[Access, ...]]] = {}

#: Access tuples a :func:`per_tuple` cache holds at most.
TUPLE_CACHE_LIMIT = 4096


def per_tuple[V](cache: dict[int, tuple[object, V]], accesses: object,
                 compute: Callable[[], V], keep: Callable[[], bool] | None = None) -> V:
    """``compute()`` kept in ``cache`` per access tuple: looked up by
    identity, with the tuple held so that its id stays its own, for at most
    :data:`TUPLE_CACHE_LIMIT` tuples; ``keep`` (asked on a miss only) says
    whether the value may be kept (is the same for every block)."""
    hit = cache.get(id(accesses))
    if hit is not None and hit[0] is accesses:
        return hit[1]
    value = compute()
    if len(cache) < TUPLE_CACHE_LIMIT and (keep is None or keep()):
        cache[id(accesses)] = (accesses, value)
    return value


def _merge(accesses: Sequence[Access], bound: Mapping[SymForm, LinForm]
           ) -> tuple[Access, ...]:
    first = set(first_occurrences(address_classes(accesses, bound))[0])
    return tuple(a for i, a in enumerate(accesses) if i in first)


def address_classes(accesses: Sequence[Access], bound: Mapping[SymForm, LinForm]
                    ) -> np.ndarray:
    """Each access's class once ``bound``, numbered from 0: equal exactly
    for the accesses :func:`merge_repeated` counts once (affine ones by field
    and linear offset, the others by :func:`address_key`)."""
    lin, affine = linear_addresses(accesses, bound)
    out = np.empty(len(accesses), dtype=np.int64)
    aff = np.flatnonzero(affine)
    if len(aff):
        field_id = access_terms(tuple(accesses)).field
        out[aff] = first_occurrences(np.column_stack([field_id[aff], lin[aff]]))[1]
    classes: dict[tuple[object, ...], int] = {}
    start = int(out[aff].max()) + 1 if len(aff) else 0
    for k in np.flatnonzero(~affine):
        out[k] = start + classes.setdefault(address_key(accesses[int(k)], bound), len(classes))
    return out


def guarded_separately(kernel: Kernel, block: tuple[int, int, int] | None) -> bool:
    """Whether each of a thread's outputs sits under its own guard at
    ``block`` (``Kernel.output_guards``, MODEL.md §1): always for ``True``;
    for extents, when some extent is not a multiple of block times fold
    along it (the compile-time switch of a kernel family that specialises
    divisible shapes). A thread of one output has nothing to keep apart."""
    g = kernel.output_guards
    if g is False or kernel.lups_per_thread == 1:
        return False
    if g is True:
        return True
    if block is None:
        raise ValueError(f"kernel {kernel.name}: its output guards depend on the block; "
                         "pass the block")
    return any(n % (b * f) for n, b, f in zip(g, block, kernel.fold))


def _merged_per_guard(loads: Sequence[Access], bound: Mapping[SymForm, LinForm],
                      outputs: int) -> tuple[Access, ...]:
    """:func:`merge_repeated` within each output's group of loads (equal
    consecutive groups, ``Kernel.output_guards``), never across groups."""
    size = len(loads) // outputs
    return tuple(a for k in range(outputs)
                 for a in merge_repeated(loads[k * size:(k + 1) * size], bound))


def issued_loads(kernel: Kernel, bound: Mapping[SymForm, LinForm],
                 block: tuple[int, int, int] | None = None) -> tuple[Access, ...]:
    """The loads one thread issues (:func:`thread_accesses`)."""
    if kernel.reload_repeated:
        return kernel.loads
    if guarded_separately(kernel, block):
        return _merged_per_guard(kernel.loads, bound, kernel.lups_per_thread)
    return merge_repeated(kernel.loads, bound)


def thread_accesses(
    kernel: Kernel, bound: Mapping[SymForm, LinForm], block: tuple[int, int, int] | None = None
) -> tuple[tuple[Access, ...], tuple[Access, ...]]:
    """The loads and the stores one thread issues once the block size is
    bound (MODEL.md §1, counted by §4-§6): repeated addresses once each
    (the compiler's elimination of common loads from read-only data over
    unrolled loops, and of stores overwritten before the thread ends),
    unless ``kernel.reload_repeated``; loads of outputs under separate
    guards (:func:`guarded_separately` at ``block``, which a kernel with
    guard extents needs) merge only within their output. A load and a
    store of one address stay separate."""
    if kernel.reload_repeated:
        return kernel.loads, kernel.stores
    return issued_loads(kernel, bound, block), merge_repeated(kernel.stores, bound)


def repeated_loads(kernel: Kernel, block: tuple[int, int, int]) -> int:
    """How many of a thread's loads repeat an address of another of its
    loads once ``block`` is bound and are counted once
    (:func:`thread_accesses`; 0 when ``kernel.reload_repeated``)."""
    if kernel.reload_repeated or not kernel.loads:
        return 0
    bound = bind_all((a.forms for a in kernel.loads), block)
    return len(kernel.loads) - len(issued_loads(kernel, bound, block))


def guard_kept_loads(kernel: Kernel, block: tuple[int, int, int]) -> int:
    """How many of a thread's loads repeat an address of another output's
    loads but are issued again because the outputs are guarded separately
    at ``block`` (:func:`guarded_separately`; 0 otherwise)."""
    if kernel.reload_repeated or not kernel.loads or not guarded_separately(kernel, block):
        return 0
    bound = bind_all((a.forms for a in kernel.loads), block)
    return (len(_merged_per_guard(kernel.loads, bound, kernel.lups_per_thread))
            - len(merge_repeated(kernel.loads, bound)))
