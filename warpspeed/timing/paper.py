"""The paper's timing model: a four-limiter roofline (MODEL.md §4, §5, §6, §8).

Each level can sustain a rate in GLup/s on its own; the prediction is the
smallest of them and the limiter is the level that sets it. Limits do not
overlap or interfere, latency is hidden, every FP instruction costs one FMA
slot. This is the baseline the default model (:mod:`warpspeed.timing.latency`)
refines.

:data:`PAPER` is the model as one object (:class:`warpspeed.timing.base.Timing`):
its sector space is the paper's, its pruning bound the machine's DRAM
bandwidth, its notes and advice say where the paper's assumptions stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from ..volumes.levels import AccessTraits, Volumes
from ..volumes.waves import WaveVolumes
from .base import Timing, TimingResult

LIMITERS = ("fp", "l1", "l2", "dram")


def _rate(capacity: float, cost: float) -> float | None:
    return capacity / cost if cost > 0 else None


def limits(kernel: Kernel, m: Machine, l1_cycles: float, v: Volumes) -> dict[str, float | None]:
    """The four limits in GLup/s; ``None`` where a limit does not apply (no
    FP count given, or no traffic at a level).

    * FP: ``SMs * clock * fma_per_sm_cycle / fp_instructions_per_lup`` (§8);
    * L1: ``SMs * clock * 32 / L1_cycles_per_warp_lup`` (§4);
    * L2: ``L2_BW / (L2LoadV2 + L2Store)`` (§5);
    * DRAM: ``DRAM_BW / (memLoadV3 + memStoreV2)`` (§6).
    """
    fp_per_lup = (kernel.fp_instructions or 0.0) / kernel.lups_per_thread
    return {
        "fp": _rate(m.sms * m.clock_ghz * m.fp64_fma_per_sm_cycle, fp_per_lup),
        "l1": _rate(m.sms * m.clock_ghz * m.warp_size, l1_cycles),
        "l2": _rate(m.l2_bandwidth, v.l2_load + v.l2_store),
        "dram": _rate(m.dram_bandwidth, v.dram_load + v.dram_store),
    }


def roofline(lim: dict[str, float | None]) -> tuple[float, str]:
    """The smallest applicable limit and its name (MODEL.md §8)."""
    finite = {k: v for k, v in lim.items() if v is not None}
    limiter = min(finite, key=finite.__getitem__)
    return finite[limiter], limiter


@dataclass(frozen=True)
class Paper(Timing):
    """The paper's model (module docstring)."""

    def time(self, kernel: Kernel, machine: Machine, launch: Launch, l1_cycles: float,
             volumes: Volumes, traits: AccessTraits, wave: WaveVolumes) -> TimingResult:
        """The smallest of the four limits (MODEL.md §8)."""
        lim = limits(kernel, machine, l1_cycles, volumes)
        glups, limiter = roofline(lim)
        return TimingResult(glups, limiter, lim)

    def peak_dram_bandwidth(self, machine: Machine) -> float:
        """The machine's ``dram_bandwidth``: the DRAM limit's only bandwidth (MODEL.md §8)."""
        return machine.dram_bandwidth

    def notes(self, kernel: Kernel, machine: Machine) -> tuple[str, ...]:
        """On AMD: the capacity curves were fitted on NVIDIA GPUs (MODEL.md §15;
        the family's ``paper_curves_fitted``)."""
        if machine.family.paper_curves_fitted:
            return ()
        return ("the paper model's capacity curves (MODEL.md §7) were fitted on NVIDIA GPUs; "
                "on AMD they are carried over (MODEL.md §15)",)

    def occupancy_note(self, terms: Mapping[str, float]) -> str:
        """The paper model has no latency term (MODEL.md §10)."""
        return (". The paper model has no latency term, so this prediction does not suffer, but "
                "a real kernel with few bytes in flight may not reach its DRAM limit (MODEL.md "
                "§10)")


#: The paper's model, registered in :data:`warpspeed.timing.MODELS`.
PAPER = Paper(
    "paper",
    "paper",
    "Ernst et al. (JPDC 2023) exactly: paper sector space, minimum of the FP, L1, L2 and "
    "DRAM limits",
    accuracy_table="paper",
)


__all__ = ["LIMITERS", "PAPER", "Paper", "limits", "roofline"]
