"""Block footprints: the L2 → L1 volumes of MODEL.md §5 (limiter 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sampling import (
    WARP,
    Sample,
    address_classes,
    distinct_per_row,
    distinct_sorted,
    sorted_rows,
)

SECTOR = 32
LINE = 128
#: The page size of the GPU's TLBs for large allocations: the CUDA driver
#: maps device memory in 2 MiB pages (Jia et al., "Dissecting the NVIDIA
#: Volta GPU Architecture via Microbenchmarking", arXiv:1804.06826, §3).
PAGE = 2 * 1024 * 1024


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
    * ``pages_per_block``: distinct 2 MiB pages the loads and stores of a
      block touch, summed over fields (fields never share pages), for the
      TLB term of the default timing model.

    Averages over the sampled blocks, weighted by the blocks each stands for.
    """

    l1_load: float
    l2_load_v1: float
    l2_store: float
    alloc_per_block: float
    pages_per_block: float = 0.0
    l2_store_v1: float = 0.0


def _per_warp_sectors(addr: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Distinct sectors per warp, summed over instructions: shape (blocks,).
    Instructions one constant apart sort once (:func:`address_classes`)."""
    n_acc, nb, threads = addr.shape
    act = active.reshape(nb, threads // WARP, WARP)
    any_active = act.any(axis=-1)
    out = np.zeros(nb)
    for members in address_classes(addr):
        rows = sorted_rows(addr[members[0][0]].reshape(nb, threads // WARP, WARP), act)
        for _, shift in members:
            out += distinct_sorted(rows + shift, any_active, SECTOR).sum(axis=1)
    return out


def block_footprint(s: Sample, n_loads: int) -> Footprint:
    """MODEL.md §5 on the sampled blocks; the first ``n_loads`` accesses of
    the sample are the loads, the rest the stores."""
    w = s.weights
    lups = float(np.sum(s.active.sum(axis=1) * w)) * s.lups_per_thread
    loads, stores = s.addresses[:n_loads], s.addresses[n_loads:]
    l1_load = float(np.sum(_per_warp_sectors(loads, s.active) * w)) * SECTOR / lups
    l2_store = float(np.sum(_per_warp_sectors(stores, s.active) * w)) * SECTOR / lups
    v1 = np.zeros(len(w))
    lines = np.zeros(len(w))
    by_field: dict[str, list[int]] = {}
    for k, acc in enumerate(s.accesses[:n_loads]):
        by_field.setdefault(acc.field.name, []).append(k)
    for idx in by_field.values():
        a = np.moveaxis(loads[idx], 0, 1).reshape(len(w), -1)  # (nb, acc*threads)
        act = np.tile(s.active, (1, len(idx)))
        rows, any_active = sorted_rows(a // SECTOR, act), act.any(axis=-1)
        v1 += distinct_sorted(rows, any_active)
        lines += distinct_sorted(rows, any_active, LINE // SECTOR)
    sv1 = np.zeros(len(w))
    store_fields: dict[str, list[int]] = {}
    for k, acc in enumerate(s.accesses[n_loads:]):
        store_fields.setdefault(acc.field.name, []).append(k)
    for idx in store_fields.values():
        a = np.moveaxis(stores[idx], 0, 1).reshape(len(w), -1)
        sv1 += distinct_per_row(a // SECTOR, np.tile(s.active, (1, len(idx))))
    blocks_active = s.active.any(axis=1)
    alloc = float(np.sum(lines * w) / np.sum(w * blocks_active)) * LINE
    pages = np.zeros(len(w))
    every: dict[str, list[int]] = {}
    for k, acc in enumerate(s.accesses):
        every.setdefault(acc.field.name, []).append(k)
    for idx in every.values():
        a = np.moveaxis(s.addresses[idx], 0, 1).reshape(len(w), -1)
        act = np.tile(s.active, (1, len(idx)))
        pages += distinct_per_row(a // PAGE, act)
    return Footprint(
        l1_load=l1_load,
        l2_load_v1=float(np.sum(v1 * w)) * SECTOR / lups,
        l2_store=l2_store,
        alloc_per_block=alloc,
        pages_per_block=float(np.sum(pages * w) / np.sum(w * blocks_active)),
        l2_store_v1=float(np.sum(sv1 * w)) * SECTOR / lups,
    )
