"""The paper's timing model: a four-limiter roofline (MODEL.md §4, §5, §6, §8).

Each level can sustain a rate in GLup/s on its own; the prediction is the
smallest of them and the limiter is the level that sets it. Limits do not
overlap or interfere, latency is hidden, every FP instruction costs one FMA
slot. This is the baseline the default model (:mod:`warpspeed.timing.latency`)
refines.
"""

from __future__ import annotations

from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.levels import Volumes

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


__all__ = ["LIMITERS", "limits", "roofline"]
