"""Block footprints: the L2 → L1 volumes of MODEL.md §5 (limiter 2)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from .distinct import Runs, merge_runs, sector_runs
from .sampling import (
    WARP,
    Sample,
    block_groups,
    launch_rows,
    shifted_distinct_sum,
    sorted_rows,
    translate_groups,
)
from .streams import SECTOR as DRAM_SECTOR
from .streams import Streams, block_run_bytes, run_bytes

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
      (:mod:`warpspeed.volumes.streams`; its ``run_bytes`` counted here
      from the block unions, the rest set by the block stage);
    * ``loads_per_lup``: load instructions a thread issues per lattice
      update (after merging repeats, MODEL.md §1);

    Averages over the sampled blocks, weighted by the blocks each stands for.
    """

    l1_load: float
    l2_load_v1: float
    l2_store: float
    alloc_per_block: float
    l2_store_v1: float = 0.0
    streams: Streams = Streams()
    loads_per_lup: float = 0.0


#: A class's warps as :func:`_warps_by_class` gives them.
Warps = tuple[np.ndarray, np.ndarray, np.ndarray]


def _per_warp_sectors(s: Sample, indices: range, warps_of: Callable[[int], Warps],
                      row_owner: np.ndarray, row_weights: np.ndarray, launches: int,
                      sector: int = SECTOR) -> np.ndarray:
    """Distinct sectors per warp (wavefront), summed over the instructions
    ``indices`` and the sampled warps weighted by their blocks, per launch
    (``row_owner``: each warp's). The instructions of one shift class share
    its warps (``warps_of(class)``: one per group of translates, sorted,
    whether active, and each warp's group), counted at each instruction's
    shift."""
    ks = np.fromiter(indices, dtype=np.int64)
    cls, sh = s.access_class[ks], s.access_shift[ks]
    total = np.zeros(launches)
    for c in dict.fromkeys(cls.tolist()):
        rows, any_active, inverse = warps_of(c)
        n = shifted_distinct_sum(rows, any_active, sh[cls == c], sector)
        total += np.bincount(row_owner, weights=n[inverse] * row_weights, minlength=launches)
    return total


def _block_counts(s: Sample, indices: list[int], rows_of: Callable[[int], np.ndarray],
                  sector: int = SECTOR, line: int = LINE
                  ) -> tuple[np.ndarray, np.ndarray, Runs]:
    """Per sampled block, the distinct sectors the accesses ``indices``
    touch and the distinct lines they fall in (MODEL.md §5), and the union
    itself as runs of consecutive sectors: the union over instructions,
    vectorised over the blocks. Each class's addresses are sorted once per
    block (``rows_of(class)``); instructions one whole number of sectors
    apart share their runs, shifted
    (:func:`warpspeed.volumes.distinct.sector_runs`)."""
    nb = s.active.shape[0]
    zero = np.zeros(nb)
    ks = np.fromiter(indices, dtype=np.int64)
    if ks.size == 0 or not s.active.any():
        none = np.zeros(0, dtype=np.int64)
        return zero, zero, (none, none, none)
    cls, sh = s.access_class[ks], s.access_shift[ks]
    classes = [(rows_of(c), sh[cls == c]) for c in dict.fromkeys(cls.tolist())]
    runs = sector_runs(classes, s.active.any(axis=1), sector)
    blocks, first, end = runs
    # lines: each run's, less one where it starts in the line its predecessor ends in
    per = line // sector
    lines = (end - 1) // per - first // per + 1
    lines[1:] -= (blocks[1:] == blocks[:-1]) & ((end[:-1] - 1) // per == first[1:] // per)
    return (np.bincount(blocks, weights=end - first, minlength=nb),
            np.bincount(blocks, weights=lines, minlength=nb), runs)


def _sorted_by_class(s: Sample) -> Callable[[int], np.ndarray]:
    """A class's addresses sorted per block (:func:`sorted_rows`), each class
    sorted once for the loads and the stores that share it."""
    done: dict[int, np.ndarray] = {}

    def rows_of(c: int) -> np.ndarray:
        if c not in done:
            done[c] = sorted_rows(s.class_addresses[c], s.active)
        return done[c]

    return rows_of


def _warps_by_class(s: Sample, act: np.ndarray, sector: int, warp: int
                    ) -> Callable[[int], Warps]:
    """A class's warps (``act``: the sample's active lanes per warp): one
    per group of translates by whole sectors
    (:func:`warpspeed.volumes.sampling.translate_groups`, equal counts),
    sorted (:func:`sorted_rows`), whether any lane is active, and each
    sampled warp's group; once per class."""
    done: dict[int, Warps] = {}

    def warps_of(c: int) -> Warps:
        if c not in done:
            rows = s.class_addresses[c].reshape(-1, warp)
            first, inverse = translate_groups(rows, act, sector)
            a = act[first]
            done[c] = (sorted_rows(rows[first], a), a.any(axis=-1), inverse)
        return done[c]

    return warps_of


def block_footprint(s: Sample, n_loads: int, sector: int = SECTOR, line: int = LINE,
                    warp: int = WARP) -> Footprint:
    """MODEL.md §5 on the sampled blocks; the first ``n_loads`` accesses of
    the sample are the loads, the rest the stores. ``sector``, ``line`` and
    ``warp`` are the machine's L1 sector and line and its wavefront width
    (MODEL.md §15; NVIDIA's 32 B, 128 B and 32 by default); the sample must
    be padded to whole wavefronts (:func:`warpspeed.volumes.sampling.sample`).
    Warps that repeat another up to whole sectors and blocks that repeat
    another up to whole lines count once
    (:func:`warpspeed.volumes.sampling.translate_groups`)."""
    owner = np.zeros(s.active.shape[0], dtype=np.int64)
    return footprints_of(s, owner, 1, n_loads, sector, line, warp)[0]


def footprints_of(s: Sample, owner: np.ndarray, launches: int, n_loads: int,
                  sector: int = SECTOR, line: int = LINE, warp: int = WARP) -> list[Footprint]:
    """:func:`block_footprint` of each of ``launches`` launches whose blocks
    are stacked in ``s`` (``owner``: each block's launch,
    :func:`warpspeed.volumes.sampling.stack`): one count over all of them."""
    w = s.weights
    act, row_owner, row_weights = launch_rows(s, owner, warp)
    lups = np.bincount(owner, weights=s.active.sum(axis=1) * w,
                       minlength=launches) * s.lups_per_thread
    n = len(s.accesses)
    warps_of = _warps_by_class(s, act, sector, warp)
    l1_load = _per_warp_sectors(s, range(n_loads), warps_of, row_owner, row_weights,
                                launches, sector) * sector / lups
    l2_store = _per_warp_sectors(s, range(n_loads, n), warps_of, row_owner, row_weights,
                                 launches, sector) * sector / lups
    # the unions per block, on one block per group of translates by whole lines
    first, inverse = block_groups(s, math.lcm(sector, line))
    u = s if isinstance(first, slice) else replace(
        s, class_addresses=s.class_addresses[:, first], active=s.active[first],
        weights=w[first])
    block_rows = _sorted_by_class(u)
    nu = u.active.shape[0]
    v1, lines, sv1 = np.zeros(nu), np.zeros(nu), np.zeros(nu)
    per_field: dict[str, list[list[int]]] = {}  # loads, stores
    for k, acc in enumerate(s.accesses):
        per_field.setdefault(acc.field.name, [[], []])[k >= n_loads].append(k)
    unions: list[list[Runs]] = []  # per field: of its loads, of its stores
    for loads, stores in per_field.values():
        unions.append([])
        if loads:
            sectors, field_lines, union = _block_counts(u, loads, block_rows, sector, line)
            v1 += sectors
            lines += field_lines
            unions[-1].append(union)
        if stores:
            sectors, _, union = _block_counts(u, stores, block_rows, sector, line)
            sv1 += sectors
            unions[-1].append(union)

    def run_bytes_at(b: int) -> float:
        """:attr:`Streams.run_bytes` of block ``b`` of ``s`` (MODEL.md §11):
        from the unions above when they count DRAM sectors (a block that
        translates ``b`` by whole lines has the same runs), else counted."""
        if sector != DRAM_SECTOR:
            return block_run_bytes(s, b)
        r = b if isinstance(first, slice) else int(inverse[b])
        found = []
        for parts in unions:
            at = [(starts[lo:hi], ends[lo:hi]) for blocks, starts, ends in parts
                  for lo, hi in [np.searchsorted(blocks, (r, r + 1)).tolist()]]
            found.append(at[0] if len(at) == 1 else merge_runs(
                np.concatenate([x for x, _ in at]), np.concatenate([e for _, e in at])))
        return run_bytes(found)

    def per_launch(values: np.ndarray) -> np.ndarray:
        return np.bincount(owner, weights=values[inverse] * w, minlength=launches)

    any_active = s.active.any(axis=1)
    blocks_active = np.bincount(owner, weights=any_active * w, minlength=launches)
    alloc = per_launch(lines) / blocks_active * line
    v1_sum, sv1_sum = per_launch(v1), per_launch(sv1)
    ends = np.searchsorted(owner, np.arange(launches + 1)).tolist()  # owner ascends
    runs = [run_bytes_at(lo + int(np.argmax(any_active[lo:hi]))) if any_active[lo:hi].any()
            else 0.0 for lo, hi in zip(ends, ends[1:])]  # each launch's first active block
    return [Footprint(
        l1_load=float(l1_load[c]),
        l2_load_v1=float(v1_sum[c]) * sector / float(lups[c]),
        l2_store=float(l2_store[c]),
        alloc_per_block=float(alloc[c]),
        l2_store_v1=float(sv1_sum[c]) * sector / float(lups[c]),
        streams=Streams(run_bytes=runs[c]),
        loads_per_lup=n_loads / s.lups_per_thread,
    ) for c in range(launches)]
