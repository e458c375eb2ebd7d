"""Sorted distinct values of integer arrays: the set union behind the block
footprints (MODEL.md §5), the sectors of index-list gathers (§1, §5) and the
runs of a block's sectors (§11)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..input.addresses import first_occurrences


def distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values; a bitmap when their range is small, else a
    stable sort (merges already sorted runs, such as the shifted
    instructions of a block; much faster than ``np.unique``'s hash table on
    these arrays)."""
    if values.size == 0:
        return values
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < 8 * values.size + 4096:
        mask = np.zeros(hi - lo + 1, dtype=bool)
        mask[values - lo] = True
        return np.flatnonzero(mask) + lo
    x = np.sort(values, kind="stable")
    return x[np.concatenate(([True], x[1:] != x[:-1]))]


#: Elements up to which :func:`sector_union` divides a class's remainders at once.
UNION_CHUNK = 1 << 22


def sector_union(classes: Sequence[tuple[np.ndarray, np.ndarray]], any_active: np.ndarray,
                 sector: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(block, sector)`` pairs that instructions touch
    (MODEL.md §5), as two arrays sorted by block, then sector. ``classes``:
    per shift class its addresses sorted per block (blocks, threads;
    :func:`warpspeed.volumes.sampling.sorted_rows`) and the byte shifts of
    its instructions; ``any_active``: the blocks that have an active thread
    (the others touch nothing; one at least). Instructions one whole number
    of sectors apart share their distinct sectors, shifted: each remainder
    of a shift modulo ``sector`` is divided once, all remainders of a class
    together."""
    low = min(int(rows.min()) + int(shifts.min()) for rows, shifts in classes) // sector
    high = max(int(rows.max()) + int(shifts.max()) for rows, shifts in classes) // sector
    bits = (high - low).bit_length()  # a block's sectors: keys below 2**bits, block above
    offset = (np.arange(len(any_active)) << bits)[:, None] * sector - low * sector
    found = []  # per remainder chunk: keys of its lead, remainder ends, steps, remainders
    for rows, shifts in classes:
        first, group = first_occurrences(shifts % sector)
        lead = shifts[first]
        steps = (shifts - lead[group]) // sector
        size = max(1, UNION_CHUNK // max(rows.size, 1))  # remainders divided at once
        at = rows + offset
        for c0 in range(0, len(first), size):
            part = lead[c0:c0 + size]
            sec = (at + part[:, None, None]) // sector  # (remainders, blocks, threads): keys
            new = np.empty(sec.shape, dtype=bool)
            new[..., 0] = True
            np.not_equal(sec[..., 1:], sec[..., :-1], out=new[..., 1:])  # rows stay sorted
            new &= any_active[:, None]
            ends = new.reshape(len(part), -1).sum(axis=1).cumsum().tolist()
            mine = (group >= c0) & (group < c0 + len(part))
            found.append((sec[new], ends, steps[mine], group[mine] - c0))
    if len(found) == 1 and len(found[0][2]) == 1:  # one instruction: distinct already
        key = found[0][0]
    else:  # the union: sorted runs merged
        keys = []
        for v, ends, steps, group in found:
            start = 0
            for r, end in enumerate(ends):
                keys.append((v[start:end][None, :] + steps[group == r][:, None]).ravel())
                start = end
        key = distinct(np.concatenate(keys))
    return key >> bits, (key & ((1 << bits) - 1)) + low


__all__ = ["distinct", "sector_union"]
