"""Indexed accesses (gathers and scatters): a field accessed at positions
read from an index list (MODEL.md §1 "Accesses", here data-dependent;
§4-§6 their L1 cycles and volumes).

Index-list kernels (lbmpy's boundary kernels, pystencils'
``create_boundary_kernel``) run one thread per list entry: the list is read
contiguously (a regular access of the kernel) and a field is accessed at the
cell the entry names. What the model cannot know is given by the user: the
number of entries and either the positions themselves (from the list,
e.g. lbmpy's boundary handling) or the order of the list:

* with positions, the counts are exact at sector granularity: the L1 load
  and L2 volumes are the unique 32 B sectors per warp (32 consecutive
  entries) and access, the DRAM volume the unique sectors over the whole
  list (compulsory: the list's working set is assumed to stay in the L2,
  true for boundary lists, whose sectors are a small part of the L2), and
  the L1 cycles those of the half warps (the bank conflicts and the 1 KiB
  rule of MODEL.md §4);
* ``order="random"``: the entries scattered over the domain, every
  position a sector of its own (32 B at every level; a half warp's 16
  positions lie in 16 1 KiB regions: 16 cycles). An upper bound when the
  list holds neighbouring cells in random order: their sectors then merge
  in the L2 before DRAM, which only the list itself shows;
* ``order="sorted"``: consecutive entries are neighbouring cells of the
  contiguous dimension, merged into whole sectors (``itemsize`` bytes per
  entry, the limit of long rows of wall cells).

Volumes are per lattice update, here per list entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import KernelError
from ..volumes.distinct import distinct

if TYPE_CHECKING:  # kernel.py imports this module; no import cycle at run time
    from ..volumes.levels import Volumes
    from .kernel import Field

ORDERS = ("sorted", "random")
SECTOR = 32
HALF_WARP = 16


@dataclass(frozen=True, eq=False)
class Gather:
    """One indexed access per list entry: ``field`` at the linear element
    offsets ``positions`` (one per entry, relative to element 0), or, without
    positions, ``length`` entries in ``order`` (module docstring)."""

    field: Field
    store: bool = False
    length: int = 0
    positions: np.ndarray | None = field(default=None, repr=False)
    order: str = "sorted"

    def __post_init__(self) -> None:
        if not all(hasattr(self.field, a) for a in ("name", "itemsize", "base_offset")):
            raise KernelError(f"a gather needs a ws.Field, got {self.field!r}")
        if self.positions is not None:
            pos = np.asarray(self.positions, dtype=np.int64).ravel()
            object.__setattr__(self, "positions", pos)
            object.__setattr__(self, "length", int(pos.size))
        elif self.order not in ORDERS:
            raise KernelError(
                f"a gather without positions needs order in {ORDERS}, got {self.order!r}"
            )
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 1:
            raise KernelError(
                f"a gather needs a positive number of list entries, got {self.length!r}"
            )


@dataclass(frozen=True)
class GatherVolumes:
    """Bytes per list entry of the indexed accesses at each level, and
    their L1 cycles per warp per entry (module docstring)."""

    l1_load: float
    l2_store: float
    dram_load: float
    dram_store: float
    l1_cycles: float


def _sectors(g: Gather) -> np.ndarray:
    return (g.field.base_offset + g.positions * g.field.itemsize) // SECTOR  # type: ignore[operator]


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
    addr = g.field.base_offset + g.positions * g.field.itemsize  # type: ignore[operator]
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
                s = _sectors(g)
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


__all__ = ["ORDERS", "Gather", "GatherVolumes", "gather_volumes", "with_gathers"]
