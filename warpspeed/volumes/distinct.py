"""Sorted distinct values of integer arrays: the set union behind the block
footprints (MODEL.md §5) and the sectors of index-list gathers (§1, §5)."""

from __future__ import annotations

import numpy as np


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
