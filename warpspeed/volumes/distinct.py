"""Sorted distinct values of integer arrays (the sectors of index-list
gathers, MODEL.md §1, §5), and the union of the sectors that a block's
instructions touch as runs of consecutive sectors (the block footprints,
§5, and the runs of a block's DRAM rows, §11)."""

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


#: Elements up to which :func:`sector_runs` divides a class's remainders at once.
UNION_CHUNK = 1 << 22

#: Runs of consecutive sectors: arrays of the blocks, the first sectors and the
#: ends (one past the last sector), sorted by block, then first sector.
Runs = tuple[np.ndarray, np.ndarray, np.ndarray]


def sector_runs(classes: Sequence[tuple[np.ndarray, np.ndarray]], any_active: np.ndarray,
                sector: int) -> Runs:
    """The sectors that instructions touch in each block (MODEL.md §5), as
    the block's maximal runs of consecutive sectors (:data:`Runs`).
    ``classes``: per shift class its addresses sorted per block (blocks,
    threads; :func:`warpspeed.volumes.sampling.sorted_rows`) and the byte
    shifts of its instructions; ``any_active``: the blocks that have an
    active thread (the others touch nothing; one at least). Instructions
    one whole number of sectors apart share their runs, shifted: each
    remainder of a shift modulo ``sector`` is divided once, all remainders
    of a class together, and the union is taken over runs, not sectors
    (:func:`merge_runs`)."""
    if len(classes) == 1 and len(classes[0][1]) == 1:  # one instruction: runs per row
        rows, shifts = classes[0]
        sec = (rows + int(shifts[0])) // sector
        opens, closes = _run_marks(sec, any_active)
        blocks = np.repeat(np.arange(len(sec)), opens.sum(axis=1))
        return blocks, sec[opens], sec[closes] + 1
    low = min(int(rows.min()) + int(shifts.min()) for rows, shifts in classes) // sector
    high = max(int(rows.max()) + int(shifts.max()) for rows, shifts in classes) // sector
    # keys: a block's sectors below 2**bits (an end too), the block above
    bits = (high - low + 1).bit_length()
    offset = (np.arange(len(any_active)) << bits)[:, None] * sector - low * sector
    found = []  # per remainder chunk: first keys and ends of its lead, remainder ends, steps
    for rows, shifts in classes:
        first, group = first_occurrences(shifts % sector)
        lead = shifts[first]
        steps = (shifts - lead[group]) // sector
        size = max(1, UNION_CHUNK // max(rows.size, 1))  # remainders divided at once
        at = rows + offset
        for c0 in range(0, len(first), size):
            part = lead[c0:c0 + size]
            sec = (at + part[:, None, None]) // sector  # (remainders, blocks, threads): keys
            opens, closes = _run_marks(sec, any_active)
            ends = opens.reshape(len(part), -1).sum(axis=1).cumsum().tolist()
            mine = (group >= c0) & (group < c0 + len(part))
            found.append((sec[opens], sec[closes] + 1, ends, steps[mine], group[mine] - c0))
    keys, key_ends = [], []
    for v, e, ends, steps, group in found:
        start = 0
        for r, stop in enumerate(ends):
            st = steps[group == r][:, None]
            keys.append((v[start:stop][None, :] + st).ravel())
            key_ends.append((e[start:stop][None, :] + st).ravel())
            start = stop
    key, end = merge_runs(np.concatenate(keys), np.concatenate(key_ends))
    blocks = key >> bits
    return blocks, (key & ((1 << bits) - 1)) + low, end - (blocks << bits) + low


def _run_marks(sec: np.ndarray, any_active: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where runs of consecutive values open and close in rows of sorted
    values (``sec``: ``(..., blocks, threads)``), in the active blocks
    (MODEL.md §5, :func:`sector_runs`)."""
    opens = np.empty(sec.shape, dtype=bool)  # a gap opens a run
    opens[..., 0] = True
    np.greater(sec[..., 1:] - sec[..., :-1], 1, out=opens[..., 1:])
    opens &= any_active[:, None]
    closes = np.empty(sec.shape, dtype=bool)
    closes[..., -1] = any_active
    closes[..., :-1] = opens[..., 1:]
    return opens, closes


def merge_runs(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of the intervals ``[starts, ends)`` as maximal runs, sorted
    (intervals that overlap or touch become one): the union of a block's
    sectors over its instructions (MODEL.md §5)."""
    if starts.size == 0:
        return starts, ends
    order = starts.argsort(kind="stable")
    starts, reach = starts[order], np.maximum.accumulate(ends[order])
    opens = np.empty(starts.size, dtype=bool)
    opens[:1] = True
    np.greater(starts[1:], reach[:-1], out=opens[1:])
    at = np.flatnonzero(opens)
    return starts[at], reach[np.append(at[1:], starts.size) - 1]


__all__ = ["Runs", "distinct", "merge_runs", "sector_runs"]
