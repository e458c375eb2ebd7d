"""How long it takes: the timing models, side by side.

Every model turns the same inputs (kernel, machine, launch, L1 cycles,
volumes per level, wave sets) into GLup/s, the binding limiter, the four
limits of the roofline, and its own terms that explain the gap to the
roofline. A model also names the sector space its DRAM sets are counted in
(:data:`warpspeed.volumes.waves.ADDRESS_MODES`).

* ``paper``: the paper's model exactly (MODEL.md §3-§8): the paper's
  multi-dimensional sector space, the minimum of four limits.
* ``latency`` (the default): the linear, alignment-aware sector space and a
  time per lattice update from bytes in flight and memory latency (Little's
  law, calibrated on micro-benchmarks), DRAM bandwidth by load/store mix,
  imperfect overlap of SM work with the memory stream, partial waves and
  the launch overhead
  (:mod:`warpspeed.timing.latency`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from ..volumes.levels import Volumes
from ..volumes.waves import WaveVolumes


@dataclass(frozen=True)
class TimingResult:
    """GLup/s, the binding limiter, the four roofline limits (GLup/s, None
    where a level carries no work) and the model's own terms."""

    glups: float
    limiter: str
    limits: dict[str, float | None]
    terms: dict[str, float] = field(default_factory=dict)


TimingFunction = Callable[[Kernel, Machine, Launch, float, Volumes, WaveVolumes], TimingResult]


@dataclass(frozen=True)
class Timing:
    """A timing model: its name, sector space, what it adds, and its function."""

    name: str
    address: str
    description: str
    function: TimingFunction
    merged_stores: bool = False
    reread_evicts: bool = False
    #: The L1 count charges whole warps (idle lanes of a partly active warp
    #: included, MODEL.md §4); False: the paper's mean of the active half warps.
    whole_warps: bool = False


def _paper(k: Kernel, m: Machine, la: Launch, l1: float, v: Volumes, w: WaveVolumes
           ) -> TimingResult:
    from .paper import limits, roofline

    lim = limits(k, m, l1, v)
    glups, limiter = roofline(lim)
    return TimingResult(glups, limiter, lim)


def _latency(k: Kernel, m: Machine, la: Launch, l1: float, v: Volumes, w: WaveVolumes
             ) -> TimingResult:
    from .latency import predict_time

    return predict_time(k, m, la, l1, v, w)


MODELS: dict[str, Timing] = {
    "latency": Timing(
        "latency",
        "linear",
        "default: DRAM sectors in the linear, alignment-aware address space (arrays of "
        "structures share sectors); time from bytes in flight and latency (Little's law, "
        "calibrated on micro-benchmarks), DRAM bandwidth by load/store mix, FP work costed "
        "per instruction class, imperfect overlap of FP and L1 work with the memory stream, "
        "partial waves and launch overhead; "
        "partial stores of one block merge in the L2 before eviction; L1 re-reads miss the L2 "
        "at its capacity-miss fraction",
        _latency,
        merged_stores=True,
        reread_evicts=True,
        whole_warps=True,
    ),
    "paper": Timing(
        "paper",
        "paper",
        "Ernst et al. (JPDC 2023) exactly: paper sector space, minimum of the FP, L1, L2 and "
        "DRAM limits",
        _paper,
    ),
}
DEFAULT_MODEL = "latency"


def timing(
    model: str, kernel: Kernel, machine: Machine, launch: Launch, l1_cycles: float,
    volumes: Volumes, wave: WaveVolumes,
) -> TimingResult:
    """Run the timing model ``model`` (a key of :data:`MODELS`)."""
    return MODELS[model].function(kernel, machine, launch, l1_cycles, volumes, wave)


__all__ = ["DEFAULT_MODEL", "MODELS", "Timing", "TimingResult", "timing"]
