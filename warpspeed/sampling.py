"""Thread enumeration with NumPy for the L1 and block-footprint estimators
(MODEL.md §4 and §5).

A representative set of blocks is enumerated, each with a weight: the number
of blocks of the grid it stands for. Per dimension, a partial last block
(where the domain is not a multiple of the block size) is always taken with
weight 1, and consecutive full blocks from the middle of the grid stand for
all full blocks. How many: the address of every access moves by a fixed
number of bytes from one block to the next; the counts of §4 and §5 depend
on addresses modulo 1024 B (the 1 KiB rule), so they repeat with a period of
``1024 / gcd(1024, step)`` blocks. That many consecutive blocks are taken,
at most ``INTERIOR = (4, 2, 2)`` along x, y, z: exact for periods up to
those caps, and a sample of the period (an approximation of the average)
beyond them, e.g. for blocks of fewer than 32 B per row along x. Index
forms with floor divisions of block indices take the cap. On small random
grids (tests/test_sampling.py) the sample equals the enumeration of every
block where the periods fit and stays within 20 % of it where they do not;
on large grids the edge blocks weigh less and the difference shrinks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .expr import LinForm, SymForm
from .kernel import Access, Kernel
from .launch import Launch

HALF_WARP = 16
WARP = 32


INTERIOR = (4, 2, 2)


def _positions(g: int, partial: bool, cap: int, period: int) -> list[tuple[int, float]]:
    """Block indices along one dimension with the number of blocks each stands for.

    When the period fits the cap, a whole period of consecutive full blocks
    is taken and each stands for the full blocks congruent to it modulo the
    period (exact); otherwise ``cap`` blocks share the full blocks equally.
    """
    full = g - 1 if partial else g
    out: list[tuple[int, float]] = []
    if full:
        k = min(period if period <= cap else cap, full)
        start = max(0, min(full - k, full // 2))
        for i in range(start, start + k):
            if period <= cap:
                congruent = len(range(i % period, full, period)) if k == period else 1
                out.append((i, float(congruent)))
            else:
                out.append((i, full / k))
    if partial:
        out.append((g - 1, 1.0))
    return out


@dataclass(frozen=True)
class Sample:
    """Addresses of every access for every thread of the sampled blocks.

    ``addresses`` has shape (accesses, blocks, threads) in bytes, with the
    threads of a block in x-fastest linear order padded to whole warps;
    ``active`` (blocks, threads) marks threads inside the block and the guard.
    """

    accesses: tuple[Access, ...]
    addresses: np.ndarray
    active: np.ndarray
    weights: np.ndarray
    lups_per_thread: int


def _periods(
    accesses: tuple[Access, ...], bound: dict[SymForm, LinForm]
) -> list[int]:
    """Blocks after which every access's address pattern repeats modulo 1024 B."""
    periods = [1, 1, 1]
    for d in range(3):
        for acc in accesses:
            forms = [bound[f] for f in acc.forms]
            if any(f.floors for f in forms):
                periods[d] = max(periods[d], INTERIOR[d])
                continue
            step = acc.field.itemsize * sum(
                st * f.coef[d] for st, f in zip(acc.field.strides, forms)
            )
            periods[d] = max(periods[d], 1024 // math.gcd(1024, step))
    return periods


def sample(
    kernel: Kernel,
    launch: Launch,
    accesses: tuple[Access, ...],
    bound: dict[SymForm, LinForm],
    every_block: bool = False,
) -> Sample:
    """Enumerate the representative blocks (see the module docstring);
    ``bound`` holds the index forms bound to the launch's block size.
    ``every_block`` enumerates the whole grid instead (for checking the
    sample on small grids)."""
    bx, by, bz = launch.block
    threads = bx * by * bz
    padded = -(-threads // WARP) * WARP
    t = np.arange(padded)
    local = np.stack([t % bx, (t // bx) % by, t // (bx * by)])
    if every_block:
        pos = [[(i, 1.0) for i in range(g)] for g in launch.grid]
    else:
        periods = _periods(accesses, bound)
        pos = [
            _positions(g, kernel.domain[d] % launch.block[d] != 0, INTERIOR[d], periods[d])
            for d, g in enumerate(launch.grid)
        ]
    blocks, weights = [], []
    for ix, wx in pos[0]:
        for iy, wy in pos[1]:
            for iz, wz in pos[2]:
                blocks.append((ix, iy, iz))
                weights.append(wx * wy * wz)
    bidx = np.array(blocks, dtype=np.int64)  # (nb, 3)
    nb = len(blocks)
    v = np.empty((6, nb, padded), dtype=np.int64)
    v[:3] = bidx.T[:, :, None]
    v[3:] = local[:, None, :]
    size = np.array(launch.block)[:, None, None]
    glob = v[:3] * size + v[3:]
    dom = np.array(kernel.domain)[:, None, None]
    active = (t < threads)[None, :] & np.all(glob < dom, axis=0)
    flat = v.reshape(6, -1)
    addr = np.empty((len(accesses), nb * padded), dtype=np.int64)
    values: dict[SymForm, np.ndarray] = {}  # accesses share index forms: evaluate each once
    for k, acc in enumerate(accesses):
        f = acc.field
        out = np.full(flat.shape[1], f.base_offset, dtype=np.int64)
        for form, stride in zip(acc.forms, f.strides):
            if form not in values:
                values[form] = bound[form].evaluate(flat)
            out += (f.itemsize * stride) * values[form]
        addr[k] = out
    return Sample(
        accesses=accesses,
        addresses=addr.reshape(len(accesses), nb, padded),
        active=active,
        weights=np.array(weights),
        lups_per_thread=kernel.lups_per_thread,
    )


def address_classes(addresses: np.ndarray, modulus: int = 1) -> list[list[tuple[int, int]]]:
    """Group accesses (axis 0) whose addresses differ by one constant at
    every thread, that constant a multiple of ``modulus``: a list of classes,
    each a list of ``(access, shift)`` with the shift in bytes from the
    class's first access. Sorting an access's addresses gives the sorted
    addresses of every access of its class plus the shift, so the counts of
    §4 and §5 sort once per class; stencils load many shifted copies of one
    pattern."""
    n = addresses.shape[0]
    if n == 0 or addresses.size == 0:
        return []
    flat = addresses.reshape(n, -1)
    diff = flat - flat[:, :1]
    probe = diff[:, :: max(1, diff.shape[1] // 64)]  # a cheap fingerprint, then a full check
    first = flat[:, 0].astype(np.int64)
    index: dict[tuple[bytes, int], list[int]] = {}
    classes: list[list[tuple[int, int]]] = []
    for k in range(n):
        key = (probe[k].tobytes(), int(first[k]) % modulus)
        for c in index.get(key, ()):
            rep = classes[c][0][0]
            if np.array_equal(diff[k], diff[rep]):
                classes[c].append((k, int(first[k] - first[rep])))
                break
        else:
            index.setdefault(key, []).append(len(classes))
            classes.append([(k, 0)])
    return classes


def sorted_rows(keys: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Each row sorted, inactive entries replaced by the row's first active
    value so that they add no distinct value."""
    first = np.argmax(active, axis=-1)
    fill = np.take_along_axis(keys, first[..., None], axis=-1)
    return np.sort(np.where(active, keys, fill), axis=-1)


def distinct_sorted(rows: np.ndarray, any_active: np.ndarray, factor: int = 1) -> np.ndarray:
    """Distinct values per row of :func:`sorted_rows` output, after floor
    division by ``factor`` (which keeps rows sorted: coarser granularities,
    such as lines from sectors, need no second sort); 0 for empty rows."""
    k = rows // factor if factor != 1 else rows
    n = 1 + np.count_nonzero(k[..., 1:] != k[..., :-1], axis=-1)
    return np.where(any_active, n, 0)


def distinct_per_row(keys: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Number of distinct values per row among the active entries; rows
    without an active entry count 0."""
    return distinct_sorted(sorted_rows(keys, active), active.any(axis=-1))
