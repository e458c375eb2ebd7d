"""Volumes and L1 cycles of indexed accesses (gathers and scatters,
:class:`warpspeed.input.gathers.Gather`; MODEL.md §1 "Accesses", §4-§6): the
counting rules are described in :mod:`warpspeed.input.gathers`. Volumes are per
list entry. The L1 cycles follow the machine's L1 model as the regular
accesses' count does (:class:`GatherL1`): the half warps' bank conflicts and
1 KiB regions, on a warp-pipe L1 (Hopper) what each warp issues, on a
line-serving L1 (AMD) the distinct lines of each wavefront."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..input.gathers import HALF_WARP, SECTOR, Gather
from .distinct import distinct
from .l1 import PIPE_LINE, lanes_per_pass, pass_wavefronts
from .levels import Volumes

#: Lanes of the half-warp count's warp (MODEL.md §4).
_WARP32 = 2 * HALF_WARP


@dataclass(frozen=True)
class GatherL1:
    """How the L1 counts the cycles of an indexed access (MODEL.md §4): the
    family's ``l1_model`` (``"halfwarp"``, ``"warppipe"`` or ``"lines"``),
    the lanes of a wavefront, and the model's figures (the warp pipe's tag
    cycles per further line; the served line and lanes per cycle)."""

    model: str = "halfwarp"
    warp: int = _WARP32
    tag_cycles: float = 0.0
    line_bytes: int = 128
    lanes_per_cycle: int = 0


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


def _l1_cycles(g: Gather, l1: GatherL1) -> float:
    """Cycles per wavefront per entry by the L1 model of ``l1``."""
    if l1.model == "warppipe":
        return _pipe_cycles(g, l1.tag_cycles)
    if l1.model == "lines":
        return _line_cycles(g, l1)
    return _half_warp_cycles(g) * l1.warp / _WARP32


def _half_warp_cycles(g: Gather) -> float:
    """Cycles per 32 lanes per entry: per half warp, the larger of the bank
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


def _lanes(addr: np.ndarray, warp: int) -> tuple[np.ndarray, np.ndarray]:
    """The entries' addresses as rows of ``warp`` lanes (the last warp's
    missing lanes idle) and the lanes that are active."""
    warps = -(-addr.size // warp)
    rows = np.zeros(warps * warp, dtype=np.int64)
    active = np.zeros(warps * warp, dtype=bool)
    rows[:addr.size], active[:addr.size] = addr, True
    return rows.reshape(warps, warp), active.reshape(warps, warp)


def _lines_per_row(rows: np.ndarray, active: np.ndarray, line: int) -> np.ndarray:
    """Distinct ``line``-byte lines of each row's active lanes."""
    owner = np.broadcast_to(np.arange(rows.shape[0])[:, None], rows.shape)[active]
    return np.bincount(_unique_per_group(owner, rows[active] // line) >> 40,
                       minlength=rows.shape[0])


def _pipe_cycles(g: Gather, tag_cycles: float) -> float:
    """Cycles per warp per entry on a warp-pipe L1 (MODEL.md §4 "warppipe",
    as :func:`warpspeed.volumes.l1.pipe_cycles_per_warp_lup`): per warp the
    larger of its data wavefronts and ``1 + t (lines - 1)`` for its distinct
    128 B lines. A list without positions: in random order every lane its
    own line (its wavefronts, fewer, are not counted: approximated), sorted
    the contiguous words' passes."""
    size, lanes = g.field.itemsize, lanes_per_pass(g.field.itemsize)
    if g.positions is None:
        lines = _WARP32 if g.order == "random" else max(1, _WARP32 * size // PIPE_LINE)
        return max(float(_WARP32 // lanes), 1.0 + tag_cycles * (lines - 1))
    rows, active = _lanes(g.field.base_offset + g.positions * size, _WARP32)
    passes = rows.reshape(rows.shape[0], _WARP32 // lanes, lanes)
    wavefronts = pass_wavefronts(passes, active.reshape(passes.shape), size).sum(axis=-1)
    per_warp = _lines_per_row(rows, active, PIPE_LINE)
    return float(np.maximum(wavefronts, 1.0 + tag_cycles * (per_warp - 1)).mean())


def _line_cycles(g: Gather, l1: GatherL1) -> float:
    """Cycles per wavefront per entry on a line-serving L1 (MODEL.md §15,
    as :func:`warpspeed.volumes.l1.line_cycles_of`): the distinct lines of
    each wavefront, at least its lanes over the lanes served per cycle."""
    floor = l1.warp // l1.lanes_per_cycle if l1.lanes_per_cycle else 1
    size = g.field.itemsize
    if g.positions is None:
        lines = l1.warp if g.order == "random" else max(1, l1.warp * size // l1.line_bytes)
        return float(max(floor, lines))
    rows, active = _lanes(g.field.base_offset + g.positions * size, l1.warp)
    return float(np.maximum(_lines_per_row(rows, active, l1.line_bytes), floor).mean())


def gather_volumes(gathers: tuple[Gather, ...], rule: GatherL1 = GatherL1()) -> GatherVolumes:
    """The volumes and L1 cycles of ``gathers`` per list entry (module
    docstring); sectors per warp of ``rule.warp`` entries."""
    warp = rule.warp
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
            cyc += _l1_cycles(g, rule)
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


__all__ = ["GatherL1", "GatherVolumes", "gather_volumes", "with_gathers"]
