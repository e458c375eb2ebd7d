"""L1 load/store cycles by half-warp enumeration (MODEL.md §4, limiter 1)."""

from __future__ import annotations

import numpy as np

from .sampling import (
    HALF_WARP,
    WARP,
    Sample,
    distinct_sorted,
    launch_rows,
    shift_groups,
    shifted_distinct_sum,
    sorted_rows,
    translate_groups,
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


def l1_cycles_per_warp_lup(s: Sample, whole_warps: bool = True) -> float:
    """L1 cycles per warp per lattice update (MODEL.md §4): the cycles of
    every half warp, summed over all load and store instructions, per warp of
    32 threads and per lattice update.

    ``whole_warps`` (the default model): every half warp of a warp that has
    an active lane counts, per active thread times 32: an idle half warp of a
    partly active warp costs what its active half costs, because the
    load/store unit issues whole warps (a block of 16 or 48 threads pays for
    32 or 64). Otherwise (the paper model, §4 as the paper counts): twice the
    mean cycles of an active half warp. With full warps the two agree.

    Instructions whose addresses are one constant multiple of 8 B apart
    (:func:`warpspeed.volumes.sampling.shift_groups`) share their sorted words
    (shifted) and their bank conflicts; only the 1 KiB regions are counted
    per instruction, vectorised over the instructions of a group. Half
    warps that repeat another up to whole 1 KiB regions count once
    (:func:`warpspeed.volumes.sampling.translate_groups`)."""
    counts = l1_cycles_of(s, np.zeros(s.active.shape[0], dtype=np.int64), 1)
    return float(counts[0 if whole_warps else 1][0])


def l1_cycles_of(s: Sample, owner: np.ndarray, launches: int) -> np.ndarray:
    """:func:`l1_cycles_per_warp_lup` of each of ``launches`` launches whose
    blocks are stacked in ``s`` (``owner``: each block's launch,
    :func:`warpspeed.volumes.sampling.stack`): one count over all of them,
    both ways, shape ``(2, launches)``: whole warps first, the paper's second."""
    act, row_owner, row_weights = launch_rows(s, owner, HALF_WARP)  # every half warp
    idle_half = _idle_halves(act)
    whole = np.zeros(launches)
    paper = np.zeros(launches)
    for rep, shifts in shift_groups(s, range(len(s.accesses)), BANK_WIDTH):
        rows = rep.reshape(-1, HALF_WARP)
        first, inverse = translate_groups(rows, act, REGION)
        a = act[first]
        w = sorted_rows(rows[first] // BANK_WIDTH, a)
        cyc = shifted_distinct_sum(w, a.any(axis=-1), shifts // BANK_WIDTH,
                                   REGION // BANK_WIDTH, at_least=_conflicts(w))[inverse]
        whole += np.bincount(row_owner, weights=_whole_warps(cyc, idle_half) * row_weights,
                             minlength=launches)
        paper += np.bincount(row_owner, weights=cyc * row_weights, minlength=launches)
    threads = np.bincount(row_owner, weights=act.sum(axis=-1) * row_weights, minlength=launches)
    halves = np.bincount(row_owner, weights=act.any(axis=-1) * row_weights, minlength=launches)
    return np.stack([whole / threads * WARP, 2.0 * paper / halves]) / s.lups_per_thread


def _idle_halves(act: np.ndarray) -> np.ndarray:
    """Per half-warp row (pairs of rows are one warp): idle, in a warp whose
    other half has an active lane (MODEL.md §4, whole warps)."""
    any_active = act.any(axis=-1).reshape(-1, 2)
    return (~any_active & any_active[:, ::-1]).ravel()


def _whole_warps(cycles: np.ndarray, idle_half: np.ndarray) -> np.ndarray:
    """Half-warp cycles with an idle half of a partly active warp charged
    its sibling's cycles: the load/store unit issues the whole warp
    (MODEL.md §4)."""
    sibling = cycles.reshape(-1, 2)[:, ::-1].ravel()
    return np.where(idle_half, sibling, cycles)


# --------------------------------------------------------------------------
# AMD's vector L1 (MODEL.md §15): one cache line per clock


def line_cycles_per_warp_lup(s: Sample, line: int, warp: int, lanes_per_cycle: int = 0
                             ) -> float:
    """L1 cycles per wavefront of ``warp`` lanes per lattice update on a cache
    that serves one ``line``-byte line per clock (MODEL.md §15): per
    wavefront and instruction the distinct lines its active lanes touch,
    summed over instructions and wavefronts, per active thread times
    ``warp``, divided by the updates per thread.

    Grounded in AMD's documents, not fitted: every vL1D access is one whole
    cache line (64 B on CDNA and GCN; ROCm Compute Profiler, vL1D), read at
    64 B per clock (GCN); RDNA's vector L0 reads a 128 B line per clock.
    Approximated: no bank conflicts inside a line and no tag-rate limit, so
    many lines of few bytes (blocks 1 or 2 wide) are not modelled;
    ``tests/machines/test_amd.py`` compares the count with the public L1 stride
    micro-benchmark of MI210 and RX 6900 XT.

    ``lanes_per_cycle`` (the machine's ``l1_lanes_per_cycle``; 0: none): the
    L1 takes the addresses of that many lanes per clock, so a wavefront
    instruction costs at least ``warp / lanes_per_cycle`` cycles, whatever
    its lines and however many of its lanes are idle (a block smaller than
    a wavefront issues whole wavefronts). CDNA's 16 comes from the MI210 L1
    stride table: 32 lanes of one address cost as much as 32 contiguous
    floats (2.18 cycles), twice the two lines they touch."""
    return float(line_cycles_of(s, np.zeros(s.active.shape[0], dtype=np.int64), 1,
                                line, warp, lanes_per_cycle)[0])


def line_cycles_of(s: Sample, owner: np.ndarray, launches: int, line: int, warp: int,
                   lanes_per_cycle: int = 0) -> np.ndarray:
    """:func:`line_cycles_per_warp_lup` of each of ``launches`` launches whose
    blocks are stacked in ``s`` (as :func:`l1_cycles_of`); wavefronts that
    repeat another up to whole lines count once."""
    act, row_owner, row_weights = launch_rows(s, owner, warp)  # every wavefront
    floor = warp // lanes_per_cycle if lanes_per_cycle else 0
    total = np.zeros(launches)
    for rep, shifts in shift_groups(s, range(len(s.accesses))):
        rows = rep.reshape(-1, warp)
        first, inverse = translate_groups(rows, act, line)
        a = act[first]
        at_least = np.full(a.shape[0], floor, dtype=np.int64) if floor > 1 else None
        n = shifted_distinct_sum(sorted_rows(rows[first], a), a.any(axis=-1), shifts, line,
                                 at_least=at_least)
        total += np.bincount(row_owner, weights=n[inverse] * row_weights, minlength=launches)
    threads = np.bincount(owner, weights=s.active.sum(axis=1) * s.weights, minlength=launches)
    return total / threads * warp / s.lups_per_thread


# --------------------------------------------------------------------------
# NVIDIA Hopper (MODEL.md §4, "warppipe"): what each warp issues

#: Bytes the L1 data stage delivers per pass: 32 banks of 4 B.
PIPE_BANKS = 32
PIPE_WORD = 4
PIPE_LINE = 128


def lanes_per_pass(itemsize: int) -> int:
    """Lanes the L1 serves per data pass: 128 B worth of elements, at most a
    warp (a double instruction runs as two half warps)."""
    return min(WARP, PIPE_LINE // max(itemsize, PIPE_WORD))


def pass_wavefronts(addresses: np.ndarray, active: np.ndarray, itemsize: int) -> np.ndarray:
    """Data wavefronts of each pass (rows of :func:`lanes_per_pass` lanes,
    shape (..., lanes)): the most distinct 4 B words that fall in one of the
    32 banks (a lane of an ``itemsize``-byte element covers ``itemsize / 4``
    words; lanes reading one word share it); 0 without an active lane."""
    per = max(1, itemsize // PIPE_WORD)
    words = (addresses // PIPE_WORD)[..., None] + np.arange(per)
    act = np.broadcast_to(active[..., None], words.shape)
    flat_w = words.reshape(*words.shape[:-2], -1)
    w = sorted_rows(flat_w, act.reshape(flat_w.shape))
    new = np.ones(w.shape, dtype=bool)
    new[..., 1:] = w[..., 1:] != w[..., :-1]
    rows = np.arange(w.size // w.shape[-1]).reshape(w.shape[:-1])
    bank = np.where(new, w % PIPE_BANKS, PIPE_BANKS)
    counts = np.bincount((rows[..., None] * (PIPE_BANKS + 1) + bank).ravel(),
                         minlength=rows.size * (PIPE_BANKS + 1))
    conflicts = counts.reshape(*rows.shape, PIPE_BANKS + 1)[..., :PIPE_BANKS].max(axis=-1)
    return np.where(active.any(axis=-1), conflicts, 0)


def pipe_cycles_per_warp_lup(s: Sample, tag_cycles: float) -> float:
    """L1 cycles per 32 lattice updates from what each warp issues (MODEL.md
    §4, "warppipe"): per warp instruction its data wavefronts
    (:func:`pass_wavefronts`) or its tag lookups, ``1 + tag_cycles (lines -
    1)`` for its distinct 128 B lines, whichever is more, summed over
    instructions and warps, per active thread times 32, divided by the
    updates per thread. A warp with idle lanes costs what a full one costs."""
    return float(pipe_cycles_of(s, np.zeros(s.active.shape[0], dtype=np.int64), 1,
                                tag_cycles)[0])


def pipe_cycles_of(s: Sample, owner: np.ndarray, launches: int, tag_cycles: float
                   ) -> np.ndarray:
    """:func:`pipe_cycles_per_warp_lup` of each of ``launches`` launches whose
    blocks are stacked in ``s`` (as :func:`l1_cycles_of`). Instructions one
    multiple of 4 B apart share their wavefronts (the banks are permuted);
    lines are counted per instruction."""
    nb, threads = s.active.shape
    act = s.active.reshape(nb, threads // WARP, WARP)
    any_active = act.any(axis=-1)
    total = np.zeros(nb)
    by_size: dict[int, list[int]] = {}
    for k, acc in enumerate(s.accesses):
        by_size.setdefault(acc.field.itemsize, []).append(k)
    for itemsize, ks in by_size.items():
        lanes = lanes_per_pass(itemsize)
        for rep, shifts in shift_groups(s, ks, PIPE_WORD):
            a = rep.reshape(nb, threads // WARP, WARP // lanes, lanes)
            wf = pass_wavefronts(a, act.reshape(a.shape), itemsize).sum(axis=-1)
            rows = sorted_rows(rep.reshape(nb, threads // WARP, WARP), act)
            # max(wf, 1 + t (n - 1)) = 1 + t (max(n, 1 + (wf - 1) / t) - 1)
            floor = 1.0 + (wf - 1.0) / tag_cycles
            n_sum = shifted_distinct_sum(rows, any_active, shifts, PIPE_LINE, at_least=floor)
            members = len(shifts) * any_active
            total += (members + tag_cycles * (n_sum - members)).sum(axis=1)
    cycles = np.bincount(owner, weights=total * s.weights, minlength=launches)
    active = np.bincount(owner, weights=s.active.sum(axis=1) * s.weights, minlength=launches)
    return cycles / active * WARP / s.lups_per_thread
