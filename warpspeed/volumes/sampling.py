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
grids (tests/volumes/test_sampling.py) the sample equals the enumeration of every
block where the periods fit and stays within 20 % of it where they do not;
on large grids the edge blocks weigh less and the difference shrinks.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..input.addresses import first_occurrences, linear_addresses
from ..input.expr import LinForm, SymForm
from ..input.kernel import Access, Kernel
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

    Accesses whose byte addresses are affine with the same coefficients
    differ by one constant at every thread (a stencil's many shifted
    loads): they form a class, evaluated once. ``class_addresses`` has
    shape (classes, blocks, threads) in bytes, with the threads of a block
    in x-fastest linear order padded to whole warps; access ``k`` is class
    ``access_class[k]`` shifted by ``access_shift[k]`` bytes, and
    :attr:`addresses` spells every access out. ``active`` (blocks,
    threads) marks threads inside the block and the guard.
    """

    accesses: tuple[Access, ...]
    class_addresses: np.ndarray
    access_class: np.ndarray
    access_shift: np.ndarray
    active: np.ndarray
    weights: np.ndarray
    lups_per_thread: int

    @property
    def addresses(self) -> np.ndarray:
        """Shape (accesses, blocks, threads): every access's addresses."""
        return self.class_addresses[self.access_class] + self.access_shift[:, None, None]


def shift_groups(
    s: Sample, indices: Iterable[int], modulus: int = 1
) -> list[tuple[np.ndarray, np.ndarray]]:
    """The accesses ``indices`` in groups whose addresses differ by one
    constant multiple of ``modulus`` bytes at every thread: per group the
    first member's addresses (blocks, threads) and every member's shift
    from them. Counts of §4 and §5 that are invariant under such a shift
    (bank conflicts, sorting) are computed once per group."""
    ks = np.fromiter(indices, dtype=np.int64)
    if ks.size == 0:
        return []
    cls, sh = s.access_class[ks], s.access_shift[ks]
    keys = cls * modulus + sh % modulus  # the pairs (class, shift mod modulus), in order
    first, group = first_occurrences(keys)
    out = []
    for g, f in enumerate(first):  # groups in the order of their first access
        members = sh[group == g]
        out.append((s.class_addresses[cls[f]] + members[0], members - members[0]))
    return out


def member_chunks(shifts: np.ndarray, size: int, limit: int = 1 << 22) -> list[np.ndarray]:
    """``shifts`` in chunks whose arrays of ``size`` elements each stay
    below ``limit`` elements together (vectorised over members, bounded
    memory)."""
    step = max(1, limit // max(size, 1))
    return [shifts[i:i + step] for i in range(0, len(shifts), step)]


def _classes(
    accesses: tuple[Access, ...], bound: dict[SymForm, LinForm]
) -> tuple[list[tuple[int, tuple[int, ...]] | Access], np.ndarray, np.ndarray]:
    """Shift classes (module docstring of :class:`Sample`): per class the
    representative's linear address ``(const, coef)``, or the access itself
    when its forms have floor divisions; each access's class and shift.
    Classes are numbered in the order of their first access."""
    n = len(accesses)
    cls = np.empty(n, dtype=np.int64)
    shift = np.zeros(n, dtype=np.int64)
    if n == 0:
        return [], cls, shift
    lin, affine = linear_addresses(accesses, bound)
    if affine.all() and (lin[1:, 1:] == lin[0, 1:]).all():  # one class (a stencil on one grid)
        cls[:] = 0
        shift[:] = lin[:, 0] - lin[0, 0]
        return [(int(lin[0, 0]), tuple(int(v) for v in lin[0, 1:]))], cls, shift
    # a class per distinct coefficient vector of the affine accesses, an own
    # class per access with floors; numbered by first appearance
    key = np.where(affine[:, None], lin[:, 1:], 0)
    key = np.column_stack([np.where(affine, -1, np.arange(n)), key])
    first, cls[:] = first_occurrences(key)
    reps: list[tuple[int, tuple[int, ...]] | Access] = []
    for c in first:
        if affine[c]:
            reps.append((int(lin[c, 0]), tuple(int(v) for v in lin[c, 1:])))
        else:
            reps.append(accesses[c])
    rep_const = lin[first, 0]
    shift[:] = np.where(affine, lin[:, 0] - rep_const[cls], 0)
    return reps, cls, shift


def _periods(
    accesses: tuple[Access, ...], bound: dict[SymForm, LinForm],
    reps: list[tuple[int, tuple[int, ...]] | Access] | None = None,
) -> list[int]:
    """Blocks after which every access's address pattern repeats modulo 1024 B
    (``reps``: the shift classes of :func:`_classes`, if known)."""
    periods = [1, 1, 1]
    if reps is None:
        reps = _classes(accesses, bound)[0]
    for rep in reps:
        for d in range(3):
            if isinstance(rep, Access):  # floor divisions
                periods[d] = max(periods[d], INTERIOR[d])
            else:
                periods[d] = max(periods[d], 1024 // math.gcd(1024, rep[1][d]))
    return periods


@functools.lru_cache(maxsize=256)
def _local(block: tuple[int, int, int], padded: int) -> np.ndarray:
    """Thread coordinates in the block, shape (3, padded), x fastest (read-only)."""
    bx, by, _ = block
    t = np.arange(padded)
    out = np.empty((3, padded), dtype=t.dtype)
    out[1], out[0] = np.divmod(t, bx)
    out[2], out[1] = np.divmod(out[1], by)
    out.flags.writeable = False
    return out


def sample(
    kernel: Kernel,
    launch: Launch,
    accesses: tuple[Access, ...],
    bound: dict[SymForm, LinForm],
    every_block: bool = False,
    warp: int = WARP,
) -> Sample:
    """Enumerate the representative blocks (see the module docstring);
    ``bound`` holds the index forms bound to the launch's block size.
    ``every_block`` enumerates the whole grid instead (for checking the
    sample on small grids)."""
    bx, by, bz = launch.block
    threads = bx * by * bz
    padded = -(-threads // warp) * warp  # whole wavefronts of ``warp`` lanes (32 or 64)
    local = _local(launch.block, padded)
    reps, cls, shift = _classes(accesses, bound)
    if every_block:
        pos = [[(i, 1.0) for i in range(g)] for g in launch.grid]
    else:
        periods = _periods(accesses, bound, reps)
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
    # (blocks, threads) arrays as sums of a per-block and a per-thread part
    inside = (bidx[:, :, None] * np.array(launch.block)[:, None] + local
              < np.array(kernel.domain)[:, None])  # (blocks, 3, threads)
    active = inside.all(axis=1) & (np.arange(padded) < threads)
    addr = np.empty((len(reps), nb, padded), dtype=np.int64)
    flat: np.ndarray | None = None
    for c, rep in enumerate(reps):
        if isinstance(rep, Access):  # floor divisions: evaluated at every thread
            if flat is None:
                flat = np.concatenate([np.repeat(bidx.T[:, :, None], padded, axis=2),
                                       np.broadcast_to(local[:, None, :], (3, nb, padded))]
                                      ).reshape(6, -1)
            f = rep.field
            out = np.full(flat.shape[1], f.base_offset, dtype=np.int64)
            for form, stride in zip(rep.forms, f.strides):
                out += (f.itemsize * stride) * bound[form].evaluate(flat)
            addr[c] = out.reshape(nb, padded)
        else:
            coef = np.array(rep[1], dtype=np.int64)
            addr[c] = (rep[0] + bidx @ coef[:3])[:, None] + (coef[3:] @ local)[None, :]
    return Sample(
        accesses=accesses,
        class_addresses=addr,
        access_class=cls,
        access_shift=shift,
        active=active,
        weights=np.array(weights),
        lups_per_thread=kernel.lups_per_thread,
    )


def stack(samples: Sequence[Sample]) -> tuple[Sample, np.ndarray]:
    """The blocks of several launches' samples as one sample, and each
    block's launch (its index in ``samples``). The samples must share their
    accesses, shift classes and padded block size (the counts of §4-§5 then
    run once over all of them, :func:`warpspeed.volumes.l1.l1_cycles_of`)."""
    first = samples[0]
    owner = np.repeat(np.arange(len(samples)), [s.active.shape[0] for s in samples])
    if len(samples) == 1:
        return first, owner
    return replace(
        first,
        class_addresses=np.concatenate([s.class_addresses for s in samples], axis=1),
        active=np.concatenate([s.active for s in samples]),
        weights=np.concatenate([s.weights for s in samples]),
    ), owner


def launch_rows(s: Sample, owner: np.ndarray, width: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sample's threads in rows of ``width`` lanes (half warps, warps):
    which lanes are active (rows, width), and each row's launch (``owner``
    of its block, :func:`stack`) and weight (its block's)."""
    per = s.active.shape[1] // width
    return s.active.reshape(-1, width), owner.repeat(per), s.weights.repeat(per)


def block_groups(s: Sample, granularity: int) -> tuple[np.ndarray | slice, np.ndarray]:
    """The sampled blocks grouped by translation (:func:`translate_groups`):
    blocks whose active threads agree and whose every access's addresses
    differ by one and the same multiple of ``granularity`` bytes at every
    thread (interior blocks along an axis whose block step is such a
    multiple) count alike for counts invariant under such a translation
    (sectors and lines when ``granularity`` is a multiple of the line;
    MODEL.md §5)."""
    nb = s.active.shape[0]
    rows = s.class_addresses.transpose(1, 0, 2).reshape(nb, -1)  # accesses side by side
    return translate_groups(rows, s.active, granularity)


def _hash_weights(width: int, seed: int) -> np.ndarray:
    """Odd random multipliers of the row hash of :func:`row_translates` (a
    fixed seed: the same rows group alike in every run)."""
    if (width, seed) not in _HASHES:
        rng = np.random.default_rng(20261127 + seed)
        _HASHES[(width, seed)] = (rng.integers(1, 2**62, size=width) | 1).astype(np.uint64)
    return _HASHES[(width, seed)]


_HASHES: dict[tuple[int, int], np.ndarray] = {}


def row_translates(rows: np.ndarray, active: np.ndarray, granularity: int
                   ) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows (N, W) of addresses grouped by translation: ``(first,
    inverse)`` with ``rows[first]`` one row per group and ``inverse`` each
    row's group, where a group's rows have equal ``active`` masks (N, V)
    and differ by one multiple of ``granularity`` bytes (counts invariant
    under such a shift, as the sectors of a warp or the banks and 1 KiB
    regions of a half warp, are counted once per group). Rows are hashed
    and every row is then compared with its group's first: exact; None
    when nothing repeats."""
    n = rows.shape[0]
    if n < 2:
        return None
    rel = rows - (rows[:, :1] - rows[:, :1] % granularity)
    h = (rel.view(np.uint64) @ _hash_weights(rows.shape[1], 0)  # unsigned: wraps mod 2**64
         + active.astype(np.uint64) @ _hash_weights(active.shape[1], 1))
    first, inverse = _groups(h)
    if len(first) == n:
        return None
    of = first[inverse]  # each row's group's first row
    if not ((rel == rel[of]).all() and (active == active[of]).all()):
        return None  # a hash collision: count every row
    return first, inverse


def _groups(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(h, return_index=True, return_inverse=True)`` without the
    values and its overhead: each distinct value's first index, in the
    order of the values, and each entry's group (the translate groups of
    :func:`row_translates`, MODEL.md §4-§5)."""
    order = h.argsort(kind="stable")
    ranked = h[order]
    opens = np.empty(len(h), dtype=bool)
    opens[:1] = True
    np.not_equal(ranked[1:], ranked[:-1], out=opens[1:])
    inverse = np.empty(len(h), dtype=np.int64)
    inverse[order] = opens.cumsum() - 1
    return order[opens], inverse


def translate_groups(rows: np.ndarray, active: np.ndarray, granularity: int
                     ) -> tuple[np.ndarray | slice, np.ndarray]:
    """:func:`row_translates` as ``(first, inverse)`` always: every row its
    own group (``first`` the whole slice) when nothing repeats."""
    groups = row_translates(rows, active, granularity)
    if groups is None:
        return slice(None), np.arange(rows.shape[0])
    return groups


def sorted_rows(keys: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Each row sorted, inactive entries replaced by the row's first active
    value so that they add no distinct value."""
    first = active.argmax(axis=-1)
    if keys.ndim == 2:  # rows: plain indexing (take_along_axis costs more on small ones)
        fill = keys[np.arange(len(keys)), first][:, None]
    else:
        fill = np.take_along_axis(keys, first[..., None], axis=-1)
    out = np.where(active, keys, fill)
    out.sort(axis=-1)
    return out


def distinct_sorted(rows: np.ndarray, any_active: np.ndarray, factor: int = 1) -> np.ndarray:
    """Distinct values per row of :func:`sorted_rows` output, after floor
    division by ``factor`` (which keeps rows sorted: coarser granularities,
    such as lines from sectors, need no second sort); 0 for empty rows."""
    k = rows // factor if factor != 1 else rows
    n = 1 + np.count_nonzero(k[..., 1:] != k[..., :-1], axis=-1)
    return np.where(any_active, n, 0)


def shifted_distinct_sum(
    rows: np.ndarray, any_active: np.ndarray, shifts: np.ndarray, factor: int,
    at_least: np.ndarray | None = None,
) -> np.ndarray:
    """``sum_s max(at_least, distinct((rows + s) // factor))`` per row over
    the shifts ``s`` (the members of a shift group), for rows of
    :func:`sorted_rows`; 0 for empty rows.

    A row whose consecutive values are at most ``factor`` apart leaves no
    unit between its first and last value untouched, whatever the shift:
    its count is ``(last + s) // factor - (first + s) // factor + 1``,
    computed from two values per row. The other rows are counted value by
    value. A count depends on a shift only through its remainder modulo
    ``factor``: each remainder is counted once and weighted by how many
    shifts have it (exact). Vectorised over the shifts in chunks of bounded
    memory."""
    residues = np.asarray(shifts) % factor
    if at_least is not None and at_least.dtype.kind == "f":  # float sums: add every term
        shifts, times = residues, np.ones(len(residues), dtype=np.int64)
    else:
        first, group = first_occurrences(residues)
        shifts, times = residues[first], np.bincount(group)
    lo, hi = rows[..., 0], rows[..., -1]
    dense = (rows[..., 1:] - rows[..., :-1] <= factor).all(axis=-1)
    kind = np.int64 if at_least is None else np.result_type(np.int64, at_least)
    out = np.zeros(rows.shape[:-1], dtype=kind)
    floor_all = at_least if at_least is not None else 0
    expand = (slice(None),) + (None,) * lo.ndim
    for part_s, part_t in zip(member_chunks(shifts, lo.size), member_chunks(times, lo.size)):
        s = part_s[expand]
        n = (hi[None] + s) // factor - (lo[None] + s) // factor + 1
        if at_least is not None:  # (without it, n is at least 1 already)
            n = np.maximum(n, floor_all)
        out += (np.where(dense, n, 0) * part_t[expand]).sum(axis=0)
    if not dense.all():
        sparse = ~dense
        part = rows[sparse]  # (rows, width)
        floor_part = at_least[sparse] if at_least is not None else 0
        for part_s, part_t in zip(member_chunks(shifts, part.size),
                                  member_chunks(times, part.size)):
            k = (part[None] + part_s[:, None, None]) // factor
            n = 1 + np.count_nonzero(k[..., 1:] != k[..., :-1], axis=-1)
            out[sparse] += (np.maximum(n, floor_part) * part_t[:, None]).sum(axis=0)
    return np.where(any_active, out, 0)
