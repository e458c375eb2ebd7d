"""Block footprints: the L2 → L1 volumes of MODEL.md §5 (limiter 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sampling import (
    WARP,
    Sample,
    address_classes,
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
    nb = len(w)
    v1, lines, sv1 = np.zeros(nb), np.zeros(nb), np.zeros(nb)
    page_sets: dict[str, list[list[np.ndarray]]] = {}  # per field, per block
    for kind, base, addresses in (("load", 0, loads), ("store", n_loads, stores)):
        by_field: dict[str, list[int]] = {}
        for k in range(addresses.shape[0]):
            by_field.setdefault(s.accesses[base + k].field.name, []).append(k)
        for name, idx in by_field.items():
            a = np.moveaxis(addresses[idx], 0, 1).reshape(nb, -1)  # (nb, acc*threads)
            act = np.tile(s.active, (1, len(idx)))
            rows, any_active = sorted_rows(a // SECTOR, act), act.any(axis=-1)
            if kind == "load":
                v1 += distinct_sorted(rows, any_active)
                lines += distinct_sorted(rows, any_active, LINE // SECTOR)
            else:
                sv1 += distinct_sorted(rows, any_active)
            # the distinct pages of each block, from the sorted sectors
            per = page_sets.setdefault(name, [[] for _ in range(nb)])
            pg = rows // (PAGE // SECTOR)  # sorted: a page starts where the value changes
            first = np.ones(pg.shape, dtype=bool)
            first[:, 1:] = pg[:, 1:] != pg[:, :-1]
            for i in range(nb):
                if any_active[i]:
                    per[i].append(pg[i][first[i]])
    pages = np.array([
        sum(len(np.unique(np.concatenate(per[i]))) if per[i] else 0 for per in page_sets.values())
        for i in range(nb)
    ], dtype=float)
    blocks_active = s.active.any(axis=1)
    alloc = float(np.sum(lines * w) / np.sum(w * blocks_active)) * LINE
    return Footprint(
        l1_load=l1_load,
        l2_load_v1=float(np.sum(v1 * w)) * SECTOR / lups,
        l2_store=l2_store,
        alloc_per_block=alloc,
        pages_per_block=float(np.sum(pages * w) / np.sum(w * blocks_active)),
        l2_store_v1=float(np.sum(sv1 * w)) * SECTOR / lups,
    )
