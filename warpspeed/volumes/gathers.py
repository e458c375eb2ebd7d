"""Volumes and L1 cycles of indexed accesses (gathers and scatters,
:class:`warpspeed.input.gathers.Gather`; MODEL.md §1 "Accesses", §4-§6): the
counting rules are described in :mod:`warpspeed.input.gathers`. Volumes are per
list entry."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..input.gathers import HALF_WARP, SECTOR, Gather
from .distinct import distinct
from .levels import Volumes


@dataclass(frozen=True)
class GatherVolumes:
    """Bytes per list entry of the indexed accesses at each level, and
    their L1 cycles per warp per entry (module docstring)."""

    l1_load: float
    l2_store: float
    dram_load: float
    dram_store: float
    l1_cycles: float


def _sectors(g: Gather, positions: np.ndarray) -> np.ndarray:
    return (g.field.base_offset + positions * g.field.itemsize) // SECTOR


def _per_warp(ids: np.ndarray, warp: int) -> int:
    """Unique values per consecutive group of ``warp`` entries, summed."""
    return _unique_per_group(np.arange(ids.size) // warp, ids).size


def _unique_per_group(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The distinct (group, value) pairs as one sorted key array; ``value``
    must lie below 2**40 apart from the group's minimum."""
    values = values - values.min()
    return distinct(groups.astype(np.int64) * (1 << 40) + values)


def _l1_cycles(g: Gather) -> float:
    """Cycles per warp per entry: per half warp, the larger of the bank
    conflicts (16 banks of 8 B) and the distinct 1 KiB regions (MODEL.md §4)."""
    if g.positions is None:
        if g.order == "random":
            return 2.0 * HALF_WARP  # 16 positions in 16 1 KiB regions per half warp
        return 2.0 * max(1.0, HALF_WARP * g.field.itemsize / 128)  # contiguous words
    addr = g.field.base_offset + g.positions * g.field.itemsize
    half = np.arange(addr.size) // HALF_WARP
    halves = int(half[-1]) + 1
    words = _unique_per_group(half, addr // 8)
    word_half, word = words >> 40, words & ((1 << 40) - 1)
    bank = (word + (addr // 8).min()) % 16
    per_bank = np.bincount(word_half * 16 + bank, minlength=halves * 16).reshape(halves, 16)
    regions = np.bincount(_unique_per_group(half, addr // 1024) >> 40, minlength=halves)
    return 2.0 * float(np.maximum(per_bank.max(axis=1), regions).mean())  # 2 half warps


def gather_volumes(gathers: tuple[Gather, ...], warp: int = 32) -> GatherVolumes:
    """The volumes and L1 cycles of ``gathers`` per list entry (module docstring)."""
    l1 = l2s = dl = ds = cyc = 0.0
    for store in (False, True):
        group = [g for g in gathers if g.store == store]
        if not group:
            continue
        length = group[0].length
        per_warp = 0.0
        whole: list[np.ndarray] = []
        names = {name: i for i, name in enumerate(dict.fromkeys(g.field.name for g in group))}
        for g in group:
            if g.positions is None:
                size = SECTOR if g.order == "random" else g.field.itemsize
                per_warp += size
                whole.append(np.empty(0, dtype=np.int64))
                dram = size
                if store:
                    ds += dram
                else:
                    dl += dram
            else:
                s = _sectors(g, g.positions)
                per_warp += _per_warp(s, warp) * SECTOR / length
                # distinct fields never share sectors: offset them apart
                whole.append(s + names[g.field.name] * 2**40)
            cyc += _l1_cycles(g)
        exact = np.concatenate(whole) if whole else np.empty(0, dtype=np.int64)
        dram_exact = distinct(exact).size * SECTOR / length if exact.size else 0.0
        if store:
            l2s += per_warp
            ds += dram_exact
        else:
            l1 += per_warp
            dl += dram_exact
    return GatherVolumes(l1, l2s, dl, ds, cyc)


def with_gathers(v: Volumes, g: GatherVolumes) -> Volumes:
    """``v`` plus the indexed accesses: the L1 load and L2 load volumes
    gain the per-warp sectors, the L2 store the per-warp store sectors, the
    DRAM volumes (every variant) the whole-list sectors."""
    return replace(
        v,
        l1_load=v.l1_load + g.l1_load,
        l2_load_v1=v.l2_load_v1 + g.l1_load,
        l2_load=v.l2_load + g.l1_load,
        l2_store=v.l2_store + g.l2_store,
        dram_load_v1=v.dram_load_v1 + g.dram_load,
        dram_load_v2=v.dram_load_v2 + g.dram_load,
        dram_load=v.dram_load + g.dram_load,
        dram_load_v4=v.dram_load_v4 + g.dram_load,
        dram_store_v1=v.dram_store_v1 + g.dram_store,
        dram_store=v.dram_store + g.dram_store,
    )


__all__ = ["GatherVolumes", "gather_volumes", "with_gathers"]
