"""L1 load/store cycles by half-warp enumeration (MODEL.md §4, limiter 1)."""

from __future__ import annotations

import numpy as np

from .sampling import (
    HALF_WARP,
    Sample,
    distinct_sorted,
    shift_groups,
    shifted_distinct_sum,
    sorted_rows,
)

BANKS = 16
BANK_WIDTH = 8
REGION = 1024


def _conflicts(w: np.ndarray) -> np.ndarray:
    """Largest number of distinct 8 B words in one bank, per sorted row of
    words (rows of :func:`sorted_rows`). Shifting every word of a row by
    one constant permutes the banks: the result is shift-invariant."""
    new = np.ones(w.shape, dtype=bool)
    new[..., 1:] = w[..., 1:] != w[..., :-1]
    rows = np.arange(w.size // HALF_WARP).reshape(w.shape[:-1])
    bank = np.where(new, w % BANKS, BANKS)  # repeated words go to a dummy bin
    counts = np.bincount((rows[..., None] * (BANKS + 1) + bank).ravel(),
                         minlength=rows.size * (BANKS + 1))
    return counts.reshape(*rows.shape, BANKS + 1)[..., :BANKS].max(axis=-1)


def halfwarp_cycles(addresses: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Cycles of each half warp for one access instruction.

    ``addresses`` and ``active`` have shape (..., 16). A half warp's cost is
    the larger of (a) the most distinct 8 B words that fall into one of the
    16 banks and (b) the number of distinct 1 KiB regions it touches (the
    paper's "1024 B rule", §4.2). Inactive lanes are ignored; a half warp
    without an active lane costs 0.
    """
    w = sorted_rows(addresses // BANK_WIDTH, active)
    any_active = active.any(axis=-1)
    # sorted words, floor-divided, stay sorted: 1 KiB regions need no second sort
    regions = distinct_sorted(w, any_active, REGION // BANK_WIDTH)
    return np.where(any_active, np.maximum(_conflicts(w), regions), 0)


def l1_cycles_per_warp_lup(s: Sample) -> float:
    """L1 cycles per warp per lattice update: twice the weighted mean cycles
    of an active half warp, summed over all load and store instructions,
    divided by the lattice updates per thread (MODEL.md §4).

    Instructions whose addresses are one constant multiple of 8 B apart
    (:func:`warpspeed.sampling.shift_groups`) share their sorted words
    (shifted) and their bank conflicts; only the 1 KiB regions are counted
    per instruction, vectorised over the instructions of a group."""
    nb, threads = s.active.shape
    act = s.active.reshape(nb, threads // HALF_WARP, HALF_WARP)
    any_active = act.any(axis=-1)
    per_block = np.zeros(nb)
    for rep, shifts in shift_groups(s, range(len(s.accesses)), BANK_WIDTH):
        w = sorted_rows(rep.reshape(nb, threads // HALF_WARP, HALF_WARP) // BANK_WIDTH, act)
        conflicts = _conflicts(w)
        cyc = shifted_distinct_sum(w, any_active, shifts // BANK_WIDTH, REGION // BANK_WIDTH,
                                   at_least=conflicts)
        per_block += cyc.sum(axis=1)
    total = float(np.sum(per_block * s.weights))
    count = float(np.sum(any_active.sum(axis=1) * s.weights))
    return 2.0 * total / count / s.lups_per_thread
