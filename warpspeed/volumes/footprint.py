"""Block footprints: the L2 → L1 volumes of MODEL.md §5 (limiter 2)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .distinct import distinct
from .sampling import (
    WARP,
    Sample,
    row_translates,
    shifted_distinct_sum,
    sorted_rows,
    translates,
)
from .streams import Streams

#: NVIDIA's L1 sector and line; a machine's ``l1_sector_bytes`` and
#: ``l1_line_bytes`` replace them (MODEL.md §15).
SECTOR = 32
LINE = 128


@dataclass(frozen=True)
class Footprint:
    """Per-lattice-update volumes in bytes and the L1 allocation per block.

    * ``l1_load``: unique 32 B sectors per warp per load instruction;
    * ``l2_load_v1``: unique sectors of each field's loads over a whole
      block (threads of a block share their L1), the compulsory L2 load;
    * ``l2_store``: unique sectors per warp per store instruction (stores
      are written through);
    * ``l2_store_v1``: unique sectors of each field's stores over a whole
      block: the store sectors that remain once the L2 has merged the
      partial writes of the block (arrays of structures write one 8 B
      component per instruction, but a cell's components fill its sectors);
    * ``alloc_per_block``: unique 128 B lines of the loads of a block, bytes;
    * ``streams``: the address runs of the loads and stores
      (:mod:`warpspeed.volumes.streams`, set by the block stage);

    Averages over the sampled blocks, weighted by the blocks each stands for.
    """

    l1_load: float
    l2_load_v1: float
    l2_store: float
    alloc_per_block: float
    l2_store_v1: float = 0.0
    streams: Streams = Streams()


def _per_warp_sectors(s: Sample, indices: range,
                      warps_of: Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]],
                      sector: int = SECTOR) -> float:
    """Distinct sectors per warp (wavefront), summed over the instructions
    ``indices`` and the sampled warps weighted by their blocks. The
    instructions of one shift class share its warps (``warps_of(class)``:
    rows sorted, whether active, weight), counted at each instruction's
    shift."""
    ks = np.fromiter(indices, dtype=np.int64)
    cls, sh = s.access_class[ks], s.access_shift[ks]
    total = 0.0
    for c in dict.fromkeys(cls.tolist()):
        rows, any_active, weights = warps_of(c)
        total += float(shifted_distinct_sum(rows, any_active, sh[cls == c], sector) @ weights)
    return total


def _block_counts(s: Sample, indices: list[int], rows_of: Callable[[int], np.ndarray],
                  sector: int = SECTOR, line: int = LINE) -> tuple[np.ndarray, np.ndarray]:
    """Per sampled block, the distinct sectors the accesses ``indices``
    touch and the distinct lines they fall in (MODEL.md §5): the union over
    instructions, vectorised over the blocks. Each class's addresses are
    sorted once per block (``rows_of(class)``); instructions one whole
    number of sectors apart share their distinct sectors, shifted."""
    nb = s.active.shape[0]
    zero = np.zeros(nb)
    ks = np.fromiter(indices, dtype=np.int64)
    if ks.size == 0 or not s.active.any():
        return zero, zero
    any_active = s.active.any(axis=1)
    cls, sh = s.access_class[ks], s.access_shift[ks]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # blocks, sectors, steps
    for c in dict.fromkeys(cls.tolist()):
        rows = rows_of(c)
        shifts = sh[cls == c]
        for r in dict.fromkeys((shifts % sector).tolist()):
            members = shifts[shifts % sector == r]
            sec = (rows + members[0]) // sector  # still sorted per block
            new = np.ones(sec.shape, dtype=bool)
            new[:, 1:] = sec[:, 1:] != sec[:, :-1]
            new &= any_active[:, None]
            parts.append((np.nonzero(new)[0], sec[new], (members - members[0]) // sector))
    if len(parts) == 1 and len(parts[0][2]) == 1:  # one instruction: distinct already
        blocks, sectors = parts[0][0], parts[0][1]
    else:  # the union: (block, sector) pairs as one key, sorted runs merged
        low = min(int(v.min()) + int(st.min()) for _, v, st in parts if v.size)
        span = max(int(v.max()) + int(st.max()) for _, v, st in parts if v.size) - low + 1
        key = distinct(np.concatenate([((b * span + v - low)[None, :] + st[:, None]).ravel()
                                       for b, v, st in parts]))
        blocks, sectors = key // span, key % span + low
    lines = sectors // (line // sector)
    new = np.ones(blocks.size, dtype=bool)
    new[1:] = (blocks[1:] != blocks[:-1]) | (lines[1:] != lines[:-1])
    return (np.bincount(blocks, minlength=nb).astype(float),
            np.bincount(blocks[new], minlength=nb).astype(float))


def _sorted_by_class(s: Sample) -> Callable[[int], np.ndarray]:
    """A class's addresses sorted per block (:func:`sorted_rows`), each class
    sorted once for the loads and the stores that share it."""
    done: dict[int, np.ndarray] = {}

    def rows_of(c: int) -> np.ndarray:
        if c not in done:
            done[c] = sorted_rows(s.class_addresses[c], s.active)
        return done[c]

    return rows_of


def _warps_by_class(s: Sample, sector: int, warp: int
                    ) -> Callable[[int], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """A class's warps: one per group of translates by whole sectors
    (:func:`warpspeed.volumes.sampling.row_translates`, equal counts), sorted
    (:func:`sorted_rows`), whether any lane is active, and the weight each
    stands for (its blocks' weights summed); once per class."""
    act = s.active.reshape(-1, warp)
    row_weights = np.repeat(s.weights, s.active.shape[1] // warp)
    done: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def warps_of(c: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if c not in done:
            rows = s.class_addresses[c].reshape(-1, warp)
            groups = row_translates(rows, act, sector)
            if groups is None:
                first: np.ndarray | slice = slice(None)
                weights = row_weights
            else:
                first = groups[0]
                weights = np.bincount(groups[1], weights=row_weights, minlength=len(groups[0]))
            a = act[first]
            done[c] = (sorted_rows(rows[first], a), a.any(axis=-1), weights)
        return done[c]

    return warps_of


def block_footprint(s: Sample, n_loads: int, sector: int = SECTOR, line: int = LINE,
                    warp: int = WARP) -> Footprint:
    """MODEL.md §5 on the sampled blocks; the first ``n_loads`` accesses of
    the sample are the loads, the rest the stores. ``sector``, ``line`` and
    ``warp`` are the machine's L1 sector and line and its wavefront width
    (MODEL.md §15; NVIDIA's 32 B, 128 B and 32 by default); the sample must
    be padded to whole wavefronts (:func:`warpspeed.volumes.sampling.sample`).
    Blocks that repeat another up to whole lines count once
    (:func:`warpspeed.volumes.sampling.translates`)."""
    s = translates(s, math.lcm(sector, line))
    warps_of = _warps_by_class(s, sector, warp)
    block_rows = _sorted_by_class(s)
    w = s.weights
    lups = float(np.sum(s.active.sum(axis=1) * w)) * s.lups_per_thread
    n = len(s.accesses)
    l1_load = _per_warp_sectors(s, range(n_loads), warps_of, sector) * sector / lups
    l2_store = _per_warp_sectors(s, range(n_loads, n), warps_of, sector) * sector / lups
    nb = len(w)
    v1, lines, sv1 = np.zeros(nb), np.zeros(nb), np.zeros(nb)
    per_field: dict[str, list[list[int]]] = {}  # loads, stores
    for k, acc in enumerate(s.accesses):
        per_field.setdefault(acc.field.name, [[], []])[k >= n_loads].append(k)
    for loads, stores in per_field.values():
        if loads:
            sectors, field_lines = _block_counts(s, loads, block_rows, sector, line)
            v1 += sectors
            lines += field_lines
        if stores:
            sv1 += _block_counts(s, stores, block_rows, sector, line)[0]
    blocks_active = s.active.any(axis=1)
    alloc = float(np.sum(lines * w) / np.sum(w * blocks_active)) * line
    return Footprint(
        l1_load=l1_load,
        l2_load_v1=float(np.sum(v1 * w)) * sector / lups,
        l2_store=l2_store,
        alloc_per_block=alloc,
        l2_store_v1=float(np.sum(sv1 * w)) * sector / lups,
    )
