"""The default timing model ("latency"): the time per lattice update itself,
not only the order of configurations.

The paper's four limits (MODEL.md §8) are bounds; this model puts the
physics between them. All times are in ns per lattice update on the whole
GPU (the inverse of GLup/s).

* **FP** (§8, refined): every class of FP instruction costs its throughput
  in FMA issue slots (``[fp64_cost]`` / ``[fp32_cost]`` of the machine file:
  a double division is a software sequence of several FMA slots); float
  kernels issue at the FP32 rate.
* **L1** (§4): L1 cycles per warp and lattice update, as in the paper.
* **L2** (§5): the L2 volume at the L2 bandwidth, or, when fewer bytes are
  in flight than the L2 latency needs, at ``bytes in flight / L2 latency``.
* **DRAM** (§6): the DRAM volume at the bandwidth that the bytes in flight
  achieve (Little's law with thread turnover and latency under load, and
  the saturated bandwidth of the kernel's load/store mix:
  :mod:`warpspeed.timing.memory`, calibrated on public stream and
  pointer-chasing micro-benchmarks). Bytes in flight: every working
  resident thread has its whole DRAM traffic of one residence in flight
  (the loads of a stencil update are independent, the compiler issues them
  together), as the stream threads of the calibration do.
* **TLB reach**: one SM's resident blocks touch ``pages_per_block *
  blocks_per_sm`` pages of 2 MiB; beyond the SM's TLB reach
  (``tlb_reach_pages``) the fraction ``1 - reach / pages`` of accesses
  misses, and DRAM time grows by ``tlb_penalty`` times that fraction. Deep
  blocks that touch many far-apart z-planes pay it.
* **Overlap**: two sides, each as fast as its slower part, overlap
  imperfectly. The *core* side is the SM's issue, ``max(t_fp, t_l1)``: the
  same warp schedulers issue FP and L1 instructions, interleaved. The
  *memory* side is ``max(t_l2, t_dram)``: DRAM data streams through the L2,
  both stages of one pipeline. The time is the ``p``-norm of the two,
  ``t = (t_core^p + t_memory^p)^(1/p)`` with ``p = overlap_exponent``:
  ``p -> inf`` is the roofline (perfect overlap), ``p = 1`` full
  serialisation of core and memory. One exponent per machine. Assumption,
  phenomenological: chosen over the p-norm of all four times, which fits
  the radius-4 star worse (leave-one-out 9.7 % against 7.0 %) and the
  held-out box stencil slightly better (12.6 % against 13.8 %);
  ``python fits/overlap_forms.py`` compares the forms.
* **Partial waves**: the grid runs in ``ceil(blocks / wave_blocks)`` waves,
  the last one partial; the time per lattice update grows by
  ``ceil(w) / w`` with ``w = blocks / wave_blocks``.

Fitted to kernel measurements: ``overlap_exponent``, ``tlb_reach_pages``
and ``tlb_penalty`` (three constants per machine, bounded;
``fits/latency_model.py`` fits them within the bounds of
:mod:`warpspeed.timing.kernel_fit` on the V100 radius-4 star and reports
them with the leave-one-out error). Everything else comes from data
sheets and micro-benchmarks (the machine files name each source).
"""

from __future__ import annotations

import math

from ..errors import MachineError
from ..kernel import Kernel
from ..launch import Launch
from ..machine import LATENCY_PARAMETERS, Machine
from ..volumes import Volumes
from ..waves import WaveVolumes
from . import TimingResult
from .memory import MemoryParams, achieved_bandwidth


def require(m: Machine) -> None:
    """Raise a :class:`MachineError` naming every parameter of the default
    model that the machine file lacks."""
    missing = [k for k in LATENCY_PARAMETERS if getattr(m, k) is None]
    if not m.fp64_cost:
        missing.append("fp64_cost")
    if missing:
        raise MachineError(
            f"machine {m.name} ({m.path}) lacks {', '.join(missing)}, needed by the default "
            "'latency' model; add them as in warpspeed/machines/V100.toml, or predict with "
            "model='paper' (--model paper)"
        )


def memory_params(m: Machine) -> MemoryParams:
    """The machine's calibrated memory parameters."""
    return MemoryParams(
        dram_latency_ns=float(m.dram_latency_ns),  # type: ignore[arg-type]
        l2_latency_ns=float(m.l2_latency_ns),  # type: ignore[arg-type]
        turnover_ns=float(m.turnover_ns),  # type: ignore[arg-type]
        dram_bw_read=float(m.dram_bw_read),  # type: ignore[arg-type]
        dram_bw_copy=float(m.dram_bw_copy),  # type: ignore[arg-type]
        dram_bw_write=float(m.dram_bw_write),  # type: ignore[arg-type]
        shape=float(m.memory_shape),  # type: ignore[arg-type]
    )


def fp_slots(kernel: Kernel, m: Machine) -> float:
    """FMA issue slots per thread: each FP class at its machine cost (an
    FMA-class instruction is one slot; a class the machine file does not
    cost takes the ``other`` cost, else one slot)."""
    table = dict(m.fp32_cost if kernel.precision == 32 and m.fp32_cost else m.fp64_cost)
    default = table.get("other", 1.0)
    return sum(
        n * (1.0 if cls == "fma" else table.get(cls, default))
        for cls, n in kernel.fp_work.items()
    )


def resident_threads(kernel: Kernel, launch: Launch) -> float:
    """Working threads resident on the whole GPU at once: the threads inside
    the domain, times the share of the grid's blocks one wave holds (idle
    threads of partial blocks issue no loads)."""
    share = min(1.0, launch.wave_blocks / math.prod(launch.grid))
    return math.prod(kernel.domain) * share


def wave_efficiency(launch: Launch) -> float:
    """``w / ceil(w)`` with ``w`` the grid's blocks in waves: the share of
    the last wave's slots that do work, spread over all waves."""
    w = math.prod(launch.grid) / launch.wave_blocks
    return w / math.ceil(w)


def overlap(core: float, memory: float, p: float) -> float:
    """``(core^p + memory^p)^(1/p)``: the time of the core and memory sides
    overlapping imperfectly (module docstring, "Overlap")."""
    worst = max(core, memory)
    if worst <= 0:
        return 0.0
    return worst * ((core / worst) ** p + (memory / worst) ** p) ** (1.0 / p)


def predict_time(
    kernel: Kernel, m: Machine, launch: Launch, l1_cycles: float, v: Volumes, wave: WaveVolumes,
    pages_per_block: float = 0.0,
) -> TimingResult:
    """GLup/s, limiter, limits and terms of the default model (module
    docstring)."""
    require(m)
    mem = memory_params(m)
    lups = kernel.lups_per_thread
    threads = resident_threads(kernel, launch)

    rate = m.fp32_fma_per_sm_cycle if kernel.precision == 32 else m.fp64_fma_per_sm_cycle
    slots = fp_slots(kernel, m) / lups
    t_fp = slots / (m.sms * m.clock_ghz * rate)  # type: ignore[operator]
    t_l1 = l1_cycles / (m.sms * m.clock_ghz * m.warp_size)

    l2_bytes = v.l2_load + v.l2_store
    l2_flight = threads * l2_bytes * lups
    l2_lat = float(m.l2_latency_ns)  # type: ignore[arg-type]
    l2_bw = min(m.l2_bandwidth, l2_flight / l2_lat) if l2_flight else m.l2_bandwidth
    t_l2 = l2_bytes / l2_bw

    dram_bytes = v.dram_load + v.dram_store
    load_fraction = v.dram_load / dram_bytes if dram_bytes > 0 else 1.0
    dram_flight = threads * dram_bytes * lups
    dram_bw = achieved_bandwidth(mem, dram_flight, load_fraction) if dram_bytes else 1.0
    pages = pages_per_block * launch.occupancy.blocks_per_sm
    reach = float(m.tlb_reach_pages)  # type: ignore[arg-type]
    miss = max(0.0, 1.0 - reach / pages) if pages > 0 else 0.0
    tlb = 1.0 + float(m.tlb_penalty) * miss  # type: ignore[arg-type]
    t_dram = dram_bytes / dram_bw * tlb

    times = {"fp": t_fp, "l1": t_l1, "l2": t_l2, "dram": t_dram}
    core, memory = max(t_fp, t_l1), max(t_l2, t_dram)
    overlapped = overlap(core, memory, float(m.overlap_exponent))  # type: ignore[arg-type]
    worst = max(times.values())
    eff = wave_efficiency(launch)
    total = overlapped / eff
    limiter = max(times, key=times.__getitem__)
    limits = {k: (1.0 / t if t > 0 else None) for k, t in times.items()}
    terms = {
        "t_fp_ns": t_fp,
        "t_l1_ns": t_l1,
        "t_l2_ns": t_l2,
        "t_dram_ns": t_dram,
        "t_core_ns": core,
        "t_memory_ns": memory,
        "fp_slots_per_lup": slots,
        "dram_bandwidth_achieved": dram_bw,
        "dram_bytes_in_flight": dram_flight,
        "l2_bandwidth_achieved": l2_bw,
        "tlb_pages_per_sm": pages,
        "tlb_factor": tlb,
        "overlap_factor": overlapped / worst,
        "wave_efficiency": eff,
        "roofline_glups": 1.0 / worst,
    }
    return TimingResult(glups=1.0 / total, limiter=limiter, limits=limits, terms=terms)


__all__ = ["fp_slots", "memory_params", "overlap", "predict_time", "require",
           "resident_threads", "wave_efficiency"]
