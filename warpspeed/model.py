"""Volumes per memory level and the four-limiter roofline (MODEL.md §5-§8)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from .capacity import CapacityFits, load_fits
from .errors import LaunchError
from .expr import LinForm, SymForm, bind_all
from .footprint import Footprint, block_footprint
from .kernel import Kernel
from .l1 import l1_cycles_per_warp_lup
from .launch import Launch, make_launch
from .machine import Machine, load_machine
from .sampling import sample
from .waves import WaveVolumes, wave_volumes

LIMITERS = ("fp", "l1", "l2", "dram")


def _clamp(x: float, lo: float, hi: float) -> float:
    return max(lo, min(hi, x))


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


@dataclass(frozen=True)
class Prediction:
    """The result of :func:`predict`: volumes, limits and the intermediate
    quantities that explain them. ``to_dict()`` is JSON-serialisable."""

    machine: str
    kernel: str
    block: tuple[int, int, int]
    fold: tuple[int, int, int]
    blocks_per_sm: int
    occupancy_limited_by: str
    wave_blocks: int
    wave_shape: tuple[int, int, int]
    l1_cycles: float
    volumes: Volumes
    limits: dict[str, float | None]
    glups: float
    limiter: str
    footprint: Footprint
    wave: WaveVolumes
    oversubscription: dict[str, float]
    hit_fractions: dict[str, float]

    def to_dict(self) -> dict[str, object]:
        v = self.volumes
        return {
            "machine": self.machine,
            "kernel": self.kernel,
            "block": list(self.block),
            "fold": list(self.fold),
            "blocks_per_sm": self.blocks_per_sm,
            "occupancy_limited_by": self.occupancy_limited_by,
            "wave_blocks": self.wave_blocks,
            "wave_shape": list(self.wave_shape),
            "l1_cycles": self.l1_cycles,
            "volumes": {
                "l1_load": v.l1_load,
                "l2_load": v.l2_load,
                "l2_store": v.l2_store,
                "dram_load": v.dram_load,
                "dram_store": v.dram_store,
            },
            "limits": dict(self.limits),
            "glups": self.glups,
            "limiter": self.limiter,
            "details": {
                "volumes": asdict(v),
                "l1_alloc_per_block": self.footprint.alloc_per_block,
                "wave_threads": self.wave.threads,
                "wave_new_load": self.wave.new_load,
                "wave_new_store": self.wave.new_store,
                "wave_old": {"xy": self.wave.old[0], "z": self.wave.old[1]},
                "wave_overlap": {"xy": self.wave.overlap[0], "z": self.wave.overlap[1]},
                "wave_enumerated_points": self.wave.enumerated,
                "oversubscription": dict(self.oversubscription),
                "hit_fractions": dict(self.hit_fractions),
            },
        }


@dataclass(frozen=True)
class BlockStage:
    """The block-level part of a prediction: everything but the wave sets.

    Cheap (NumPy enumeration of a few blocks); ``warpspeed.rank.stage_limits``
    bounds a prediction from it alone, which ranking uses for pruning.
    """

    kernel: Kernel
    machine: Machine
    launch: Launch
    bound: dict[SymForm, LinForm]
    l1_cycles: float
    footprint: Footprint


def predict(
    kernel: Kernel,
    machine: str | Path | Machine,
    block: tuple[int, int, int],
    fits: str | Path | CapacityFits | None = None,
) -> Prediction:
    """Predict volumes and performance of ``kernel`` launched with ``block``
    on ``machine`` (MODEL.md §3-§8, paper mode). ``fits`` overrides the
    machine's capacity curves."""
    m = load_machine(machine)
    curves = fits if isinstance(fits, CapacityFits) else load_fits(fits or m.fits)
    stage = block_stage(kernel, m, block)
    return finish(stage, wave_volumes(kernel, stage.launch, stage.bound), curves)


def block_stage(kernel: Kernel, machine: Machine, block: tuple[int, int, int]) -> BlockStage:
    """Occupancy, L1 cycles and block footprints (MODEL.md §3-§5)."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"predict() needs a ws.Kernel, got {type(kernel).__name__}")
    launch = make_launch(kernel, machine, block)
    accesses = kernel.loads + kernel.stores
    bound = bind_all((a.forms for a in accesses), launch.block)
    smp = sample(kernel, launch, accesses, bound)
    if not smp.active.any():
        raise LaunchError(f"no thread of block {launch.block} lies inside the domain")
    return BlockStage(
        kernel=kernel,
        machine=machine,
        launch=launch,
        bound=bound,
        l1_cycles=l1_cycles_per_warp_lup(smp),
        footprint=block_footprint(smp, len(kernel.loads)),
    )


def finish(stage: BlockStage, wave: WaveVolumes, curves: CapacityFits) -> Prediction:
    """Capacity curves, balances and the roofline (MODEL.md §5-§8)."""
    kernel, m, launch, fp = stage.kernel, stage.machine, stage.launch, stage.footprint

    # L1 capacity misses (MODEL.md §5).
    o1 = fp.alloc_per_block * launch.occupancy.blocks_per_sm / m.l1_bytes
    m1 = curves.m1(o1)
    l2_load = fp.l2_load_v1 + (fp.l1_load - fp.l2_load_v1) * m1

    # DRAM (MODEL.md §6): bytes of the wave, normalised per lattice update.
    lups = wave.threads * kernel.lups_per_thread
    o_xy = _clamp(wave.old[0] / m.l2_bytes, 0.01, 10.0)
    o_z = _clamp(wave.old[1] / m.l2_bytes, 0.01, 10.0)
    h_xy, h_z = curves.h_xy(o_xy), curves.h_z(o_z)
    load_v1 = wave.new_load / lups
    load_v2 = load_v1 - (wave.overlap[0] * h_xy + wave.overlap[1] * h_z) / lups
    store_v1 = wave.new_store / lups
    o2 = (wave.new_load + wave.new_store) / m.l2_bytes
    s_frac, m2 = curves.s(o2), curves.m2(o2)
    store_evicts = max(0.0, fp.l2_store - store_v1) * s_frac
    load_evicts = (l2_load - load_v2) * m2
    store_v2 = store_v1 + store_evicts
    load_v3 = load_v2 + store_evicts
    load_v4 = load_v3 + load_evicts

    vol = Volumes(
        l1_load=fp.l1_load,
        l2_load_v1=fp.l2_load_v1,
        l2_load=l2_load,
        l2_store=fp.l2_store,
        dram_load_v1=load_v1,
        dram_load_v2=load_v2,
        dram_load=load_v3,
        dram_load_v4=load_v4,
        dram_store_v1=store_v1,
        dram_store=store_v2,
    )
    limits = _limits(kernel, m, stage.l1_cycles, vol)
    finite = {k: v for k, v in limits.items() if v is not None}
    limiter = min(finite, key=finite.__getitem__)
    return Prediction(
        machine=m.name,
        kernel=kernel.name,
        block=launch.block,
        fold=kernel.fold,
        blocks_per_sm=launch.occupancy.blocks_per_sm,
        occupancy_limited_by=launch.occupancy.limited_by,
        wave_blocks=launch.wave_blocks,
        wave_shape=launch.wave_shape,
        l1_cycles=stage.l1_cycles,
        volumes=vol,
        limits=limits,
        glups=finite[limiter],
        limiter=limiter,
        footprint=fp,
        wave=wave,
        oversubscription={"o1": o1, "o_xy": o_xy, "o_z": o_z, "o2": o2},
        hit_fractions={"m1": m1, "h_xy": h_xy, "h_z": h_z, "s": s_frac, "m2": m2},
    )


def _limits(kernel: Kernel, m: Machine, l1: float, v: Volumes) -> dict[str, float | None]:
    """The four limits in GLup/s (MODEL.md §4, §5, §6, §8); ``None`` where a
    limit does not apply (no FP count given, or no traffic at a level)."""

    def rate(capacity: float, cost: float) -> float | None:
        return capacity / cost if cost > 0 else None

    fp_per_lup = (
        kernel.fp_instructions / kernel.lups_per_thread if kernel.fp_instructions else 0.0
    )
    return {
        "fp": rate(m.sms * m.clock_ghz * m.fp64_fma_per_sm_cycle, fp_per_lup),
        "l1": rate(m.sms * m.clock_ghz * m.warp_size, l1),
        "l2": rate(m.l2_bandwidth, v.l2_load + v.l2_store),
        "dram": rate(m.dram_bandwidth, v.dram_load + v.dram_store),
    }


__all__ = ["LIMITERS", "BlockStage", "Prediction", "Volumes", "block_stage", "finish", "predict"]
