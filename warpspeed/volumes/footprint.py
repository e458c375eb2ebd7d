"""Block footprints: the L2 → L1 volumes of MODEL.md §5 (limiter 2)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .distinct import distinct
from .sampling import (
    WARP,
    Sample,
    shift_groups,
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


def _per_warp_sectors(s: Sample, indices: range, sector: int = SECTOR,
                      warp: int = WARP) -> np.ndarray:
    """Distinct sectors per warp (wavefront of ``warp`` lanes), summed over
    the instructions ``indices``: shape (blocks,). Instructions one constant
    apart sort once (:func:`warpspeed.volumes.sampling.shift_groups`)."""
    nb, threads = s.active.shape
    act = s.active.reshape(nb, threads // warp, warp)
    any_active = act.any(axis=-1)
    out = np.zeros(nb)
    for rep, shifts in shift_groups(s, indices):
        rows = sorted_rows(rep.reshape(nb, threads // warp, warp), act)
        out += shifted_distinct_sum(rows, any_active, shifts, sector).sum(axis=1)
    return out


def _distinct_pairs(blocks: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``(block, value)`` pairs, sorted by block, then value."""
    if values.size == 0:
        return blocks, values
    low = int(values.min())
    span = int(values.max()) - low + 1
    key = distinct(blocks * span + (values - low))
    return key // span, key % span + low


def _block_counts(s: Sample, indices: list[int], sector: int = SECTOR, line: int = LINE
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Per sampled block, the distinct sectors the accesses ``indices``
    touch and the distinct lines they fall in (MODEL.md §5): the union over
    instructions, vectorised over the blocks. Each class's addresses are
    sorted once per block; instructions one whole number of sectors apart
    share their distinct sectors, shifted."""
    nb = s.active.shape[0]
    zero = np.zeros(nb)
    ks = np.fromiter(indices, dtype=np.int64)
    if ks.size == 0 or not s.active.any():
        return zero, zero
    any_active = s.active.any(axis=1)
    owner = np.broadcast_to(np.arange(nb, dtype=np.int64)[:, None], s.active.shape)
    cls, sh = s.access_class[ks], s.access_shift[ks]
    parts_b, parts_v = [], []
    for c in dict.fromkeys(cls.tolist()):
        rows = sorted_rows(s.class_addresses[c], s.active)
        shifts = sh[cls == c]
        for r in dict.fromkeys((shifts % sector).tolist()):
            members = shifts[shifts % sector == r]
            sec = (rows + members[0]) // sector  # still sorted per block
            new = np.ones(sec.shape, dtype=bool)
            new[:, 1:] = sec[:, 1:] != sec[:, :-1]
            new &= any_active[:, None]
            b, v = owner[new], sec[new]
            steps = (members - members[0]) // sector
            parts_b.append(np.tile(b, len(steps)))
            parts_v.append((v[None, :] + steps[:, None]).ravel())
    blocks, sectors = _distinct_pairs(np.concatenate(parts_b), np.concatenate(parts_v))
    lines = sectors // (line // sector)
    new = np.ones(blocks.size, dtype=bool)
    new[1:] = (blocks[1:] != blocks[:-1]) | (lines[1:] != lines[:-1])
    return (np.bincount(blocks, minlength=nb).astype(float),
            np.bincount(blocks[new], minlength=nb).astype(float))


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
    w = s.weights
    lups = float(np.sum(s.active.sum(axis=1) * w)) * s.lups_per_thread
    n = len(s.accesses)
    l1_load = float(np.sum(_per_warp_sectors(s, range(n_loads), sector, warp) * w)) \
        * sector / lups
    l2_store = float(np.sum(_per_warp_sectors(s, range(n_loads, n), sector, warp) * w)) \
        * sector / lups
    nb = len(w)
    v1, lines, sv1 = np.zeros(nb), np.zeros(nb), np.zeros(nb)
    per_field: dict[str, list[list[int]]] = {}  # loads, stores
    for k, acc in enumerate(s.accesses):
        per_field.setdefault(acc.field.name, [[], []])[k >= n_loads].append(k)
    for loads, stores in per_field.values():
        if loads:
            sectors, field_lines = _block_counts(s, loads, sector, line)
            v1 += sectors
            lines += field_lines
        if stores:
            sv1 += _block_counts(s, stores, sector, line)[0]
    blocks_active = s.active.any(axis=1)
    alloc = float(np.sum(lines * w) / np.sum(w * blocks_active)) * line
    return Footprint(
        l1_load=l1_load,
        l2_load_v1=float(np.sum(v1 * w)) * sector / lups,
        l2_store=l2_store,
        alloc_per_block=alloc,
        l2_store_v1=float(np.sum(sv1 * w)) * sector / lups,
    )
