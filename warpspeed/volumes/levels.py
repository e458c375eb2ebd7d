"""What moves: bytes per lattice update at each memory level (MODEL.md §5-§7).

The counts of the block stage (L1 load, compulsory L2 load, L1 allocation,
L2 store: :mod:`warpspeed.volumes.footprint`) and of the wave sets (New, Old,
Overlap: :mod:`warpspeed.volumes.waves`) become volumes per lattice update through
the Gompertz capacity curves of :mod:`warpspeed.volumes.capacity`. How long moving
them takes is the business of the timing models in :mod:`warpspeed.timing`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..input.kernel import Kernel
from ..machine import Machine
from .capacity import CapacityFits
from .footprint import Footprint
from .launch import Launch
from .waves import WaveVolumes

#: The clamp of the oversubscription ``O_i`` of the layer overlaps (MODEL.md §6).
OVERSUBSCRIPTION_RANGE = (0.01, 10.0)


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


def l1_coverage(footprint: Footprint, launch: Launch, machine: Machine) -> float:
    """``O1``: the L1 lines the resident blocks of one SM allocate over the
    L1 size, ``alloc_per_block * blocks_per_sm / L1_size`` (MODEL.md §5)."""
    return footprint.alloc_per_block * launch.occupancy.blocks_per_sm / machine.l1_bytes


@dataclass(frozen=True)
class Volumes:
    """Bytes per lattice update at each level (MODEL.md §5, §6)."""

    l1_load: float
    l2_load_v1: float
    l2_load: float  # L2LoadV2: with L1 capacity misses
    l2_store: float
    dram_load_v1: float
    dram_load_v2: float
    dram_load: float  # memLoadV3
    dram_load_v4: float
    dram_store_v1: float
    dram_store: float  # memStoreV2
    dram_load_rereads: float = 0.0  # L1 re-reads missing the L2 (default model), in dram_load


@dataclass(frozen=True)
class AccessTraits:
    """What a timing model reads of a kernel's accesses beside the volumes:
    how the bytes move, not how many (MODEL.md §11 "Memory systems", §15)."""

    dram_streams: float = 0.0  # concurrent DRAM streams (volumes/streams.py)
    dram_access_bytes: float = 0.0  # bytes a thread moves per access (streams.Streams)
    dram_run_bytes: float = 0.0  # bytes of one block's DRAM row visit (streams.Streams.run_bytes)
    loads_per_lup: float = 0.0  # load instructions per thread and update
    #: bytes of the distinct 128 B lines a block loads over the bytes of its
    #: distinct sectors: 1 for whole lines, 4 for one sector per line (MODEL.md §11)
    l2_line_ratio: float = 1.0
    #: store sectors that warp instructions write in part: each instruction's
    #: store sectors beyond the wave's stored sectors (``L2Store - memStoreV1``,
    #: bytes per update) over the DRAM bytes per update (MODEL.md §11 "Memory
    #: systems": each such sector a row visit of its own on NVIDIA's HBM)
    dram_split_share: float = 0.0


def access_traits(footprint: Footprint, volumes: Volumes, block_lups: float) -> AccessTraits:
    """The :class:`AccessTraits` of a block's footprint whose DRAM volumes
    are ``volumes`` (the streams are bounded by the DRAM volume,
    :meth:`warpspeed.volumes.streams.Streams.dram_streams`); ``block_lups``:
    the lattice updates of one block, for its lines per sector."""
    streams = footprint.streams
    sector_bytes = footprint.l2_load_v1 * block_lups
    dram_bytes = volumes.dram_load + volumes.dram_store
    split = max(0.0, footprint.l2_store - volumes.dram_store_v1)
    return AccessTraits(
        dram_streams=streams.dram_streams(volumes.dram_load, volumes.dram_store),
        dram_access_bytes=streams.access_bytes,
        dram_run_bytes=streams.run_bytes,
        loads_per_lup=footprint.loads_per_lup,
        l2_line_ratio=(max(1.0, footprint.alloc_per_block / sector_bytes)
                       if sector_bytes > 0 else 1.0),
        dram_split_share=split / dram_bytes if dram_bytes > 0 else 0.0,
    )


@dataclass(frozen=True)
class LevelVolumes:
    """Volumes with the capacity-curve inputs and outputs that explain them."""

    volumes: Volumes
    oversubscription: dict[str, float]
    hit_fractions: dict[str, float]


def level_volumes(
    kernel: Kernel,
    machine: Machine,
    launch: Launch,
    footprint: Footprint,
    wave: WaveVolumes,
    curves: CapacityFits,
    merged_stores: bool = False,
    reread_evicts: bool = False,
) -> LevelVolumes:
    """L1 capacity misses (MODEL.md §5), layer-condition reuse, store
    evictions and L2 capacity misses (§6) with the curves of §7.

    Store evictions: the paper evicts a share of the partially written
    sectors ``L2Store - memStoreV1``, counting every store instruction's
    sectors. With ``merged_stores`` (the default model) the L2 first merges
    the partial writes of one block, so only ``L2StoreV1 - memStoreV1`` (the
    block-union store sectors beyond the wave's) can leave half written:
    the 19 one-component stores of an array-of-structures cell fill its
    sectors before any is evicted.

    L1 re-reads (the default model's ``reread_evicts``): the L2 loads that
    L1 capacity misses add, ``L2LoadV2 - L2LoadV1``, re-read sectors the
    block itself fetched a while before; they miss the L2 at the paper's
    capacity-miss fraction ``m2(O2)`` and come from DRAM again. Only this
    long-distance share pays ``m2``, not all of ``L2LoadV2 - memLoadV2``
    as in the paper's ``memLoadV4``: the rest is shared between blocks that
    run at the same time, a short reuse distance. Thread folding that
    overflows the L1 (z-folded radius-2 star, ``../shared/data/v100``)
    is where this moves the DRAM volume. An approximation: the reuse
    distance is not computed, only split into short (between blocks of a
    wave) and long (L1 re-reads)."""
    m, fp = machine, footprint
    o1 = l1_coverage(fp, launch, m)
    m1 = curves.m1(o1)
    l2_load = fp.l2_load_v1 + (fp.l1_load - fp.l2_load_v1) * m1

    lups = wave.threads * kernel.lups_per_thread
    lo, hi = OVERSUBSCRIPTION_RANGE
    o_xy = _clamp(wave.old[0] / m.l2_bytes, lo, hi)
    o_z = _clamp(wave.old[1] / m.l2_bytes, lo, hi)
    h_xy, h_z = curves.h_xy(o_xy), curves.h_z(o_z)
    load_v1 = wave.new_load / lups
    load_v2 = load_v1 - (wave.overlap[0] * h_xy + wave.overlap[1] * h_z) / lups
    store_v1 = wave.new_store / lups
    o2 = (wave.new_load + wave.new_store) / m.l2_bytes
    s_frac, m2 = curves.s(o2), curves.m2(o2)
    partial = fp.l2_store_v1 if merged_stores else fp.l2_store
    store_evicts = max(0.0, partial - store_v1) * s_frac
    load_evicts = (l2_load - load_v2) * m2
    # a re-read's reuse distance is at most what all L1s fetch meanwhile
    o_reread = min(o2, m.sms * m.l1_bytes / m.l2_bytes)
    rereads = (l2_load - fp.l2_load_v1) * curves.m2(o_reread) if reread_evicts else 0.0
    # memLoadV4's evictions already hold the re-reads; never below memLoadV3.
    # The paper's V4 stays exactly V3 + loadEvicts (MODEL.md §6).
    v4_evicts = max(load_evicts, rereads) if reread_evicts else load_evicts
    vol = Volumes(
        l1_load=fp.l1_load,
        l2_load_v1=fp.l2_load_v1,
        l2_load=l2_load,
        l2_store=fp.l2_store,
        dram_load_v1=load_v1,
        dram_load_v2=load_v2,
        dram_load=load_v2 + store_evicts + rereads,
        dram_load_v4=load_v2 + store_evicts + v4_evicts,
        dram_store_v1=store_v1,
        dram_store=store_v1 + store_evicts,
        dram_load_rereads=rereads,
    )
    return LevelVolumes(
        volumes=vol,
        oversubscription={"o1": o1, "o_xy": o_xy, "o_z": o_z, "o2": o2},
        hit_fractions={"m1": m1, "h_xy": h_xy, "h_z": h_z, "s": s_frac, "m2": m2},
    )


__all__ = ["OVERSUBSCRIPTION_RANGE", "AccessTraits", "LevelVolumes", "Volumes", "access_traits",
           "l1_coverage", "level_volumes"]
