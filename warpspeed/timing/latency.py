"""The default timing model ("latency"): the time of the kernel itself,
not only the order of configurations (MODEL.md §11).

The paper's four limits (MODEL.md §8) are bounds; this model puts the
physics between them. Per-update times are in ns per lattice update on the
whole GPU (the inverse of GLup/s).

* **FP** (§8, refined): every class of FP instruction costs its throughput
  in FMA issue slots (``[latency.fp64_cost]`` / ``[latency.fp32_cost]`` of the machine file:
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
  resident thread has its whole DRAM traffic of one residence in flight,
  times the block drain (:func:`block_drain`: the slots of a block's
  finished warps stay empty until its last warp ends).
  The saturated plateaus are scaled by the share that the kernel's
  concurrent DRAM streams reach on the machine's kind of memory system
  (:mod:`warpspeed.timing.memory_systems`: many streams make the banks open
  rows; ECC check bits on GDDR; AMD's HBM pays a row per wavefront access;
  :mod:`warpspeed.volumes.streams` counts the streams).
* **Overlap**: the *memory* side ``t_mem = max(t_l2, t_dram)`` (DRAM data
  streams through the L2: two stages of one pipeline) overlaps with each
  kind of SM work on its own, as a p-norm ``(a^p + b^p)^(1/p)`` (``p -> inf``
  is the roofline, ``p = 1`` full serialisation):

  - FP work with ``p = fp_overlap_exponent``, calibrated per GPU on the
    FP/bandwidth transition of the public roofline micro-benchmark
    (``fits/calibrate_overlap.py``: 1.9-3.6 on the four NVIDIA tables);
  - L1 work with ``p = overlap_exponent``, the one constant fitted to kernel
    measurements, jointly on every development set with a leave-one-set-out
    check (``fits/latency_model.py``).

  The time per update is the larger of the two overlaps. A memory-bound
  kernel with little core work therefore runs close to the calibrated
  stream bandwidth. Assumption, phenomenological: the kernel-fitted L1
  exponent (about 1.3) is lower than the 1D-stencil stream micro-benchmarks
  suggest (their 3- and 5-point variants lose under 1 % to the copy
  stream); the stencils' loss also holds DRAM effects of many concurrent
  streams that are not modelled on their own.
* **Waves and launch**: the grid runs in ``w = blocks / wave_blocks`` waves.
  Full waves take their share of the time; the last partial wave (or a
  grid smaller than one wave) takes the longer of its share and one
  block's own latency chain (one DRAM round trip plus the block's core
  work on one SM). Every launch costs ``launch_overhead_us``, the floor of
  back-to-back launches of tiny kernels (``small_kernels`` micro-benchmark).
  Adding it is the conservative side: near the crossover, back-to-back
  launches in that table take 10-25 % less than launch plus body.

No TLB term: pages of 2 MiB are not charged. The term fitted earlier on the
V100 deep-block star rows (two rows of one kernel) made a D3Q19 lattice
Boltzmann kernel 4x too slow on every GPU, and no documented TLB size
matches the reach it needed (MODEL.md §10 lists the deep blocks as a known
gap).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..input.addresses import guarded_separately
from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch, block_lups, working_threads
from ..volumes.levels import AccessTraits, Volumes
from ..volumes.waves import WaveVolumes
from .base import TimingResult
from .latency_parameters import DefaultModelParameters, require
from .memory import MemoryParams, achieved_bandwidth
from .memory_systems import charges_split_stores, stream_efficiency


def memory_params(m: Machine, efficiency: float = 1.0, rounds_ns: float = 0.0) -> MemoryParams:
    """The machine's calibrated memory parameters, the saturated plateaus
    scaled by ``efficiency`` (:func:`warpspeed.timing.memory_systems.stream_efficiency`)
    and the turnover lengthened by ``rounds_ns`` (:func:`load_rounds_ns`)."""
    p = require(m)
    return MemoryParams(
        dram_latency_ns=float(p.dram_latency_ns),
        l2_latency_ns=float(p.l2_latency_ns),
        turnover_ns=float(p.turnover_ns) + rounds_ns,
        dram_bw_read=efficiency * float(p.dram_bw_read),
        dram_bw_copy=efficiency * float(p.dram_bw_copy),
        dram_bw_write=efficiency * float(p.dram_bw_write),
        shape=float(p.memory_shape),
    )


#: Registers of a thread that hold no loaded value (indices, addresses, the
#: sum), read off the SASS of pystencils' kernels for sm_90 (nvcc 13.0): the
#: 7-point and 2D stars issue all their loads at once with 22 and 17
#: registers (7 and 5 doubles), the 27-point box and the radius-2 and radius-4
#: stars 11 of them before the first FMA with 32, the box folded 1x1x2 23 of
#: 36 with 56. With 7 the window gives the SASS's rounds in 10 of 12 kernels;
#: the 7-point star folded 1x4x1 on a 2048-wide plane and the box folded
#: 1x2x1 take one round more than counted (MODEL.md §11, "Load rounds").
OTHER_REGISTERS = 7


def load_rounds(kernel: Kernel, loads_per_thread: float) -> int:
    """The rounds in which a thread's loads are issued (MODEL.md §11, "Load
    rounds"): as many loads as its registers hold besides
    :data:`OTHER_REGISTERS` (one per 4 bytes of the kernel's precision) go
    out together; each further load waits until an earlier one is consumed.
    One round for a hand-written kernel description (``registers_source``
    ``"kernel"``): its count (the paper's 32 unless it says otherwise) is not
    the compiled code's."""
    if kernel.registers_source == "kernel":
        return 1
    per_value = 2 if kernel.precision == 64 else 1
    window = max(1, (kernel.registers - OTHER_REGISTERS) // per_value)
    return max(1, math.ceil(loads_per_thread / window - 1e-9))


def load_rounds_ns(m: Machine, kernel: Kernel, loads_per_thread: float) -> float:
    """How much longer a thread resides for its load rounds beyond the first
    (:func:`load_rounds`): one L2 latency each, the machine's
    ``l2_latency_ns``, since a later round's loads hit the lines the block
    fetched (MODEL.md §11, "Load rounds").

    Approximated: the window is the registers' count, not the compiled
    schedule; a round waits the L2's unloaded latency whatever its loads hit;
    the dependent FP chain that consumes the loads is not counted. Only on
    a family whose record says ``load_rounds`` (NVIDIA's: the window is read
    off NVIDIA's compiler; AMD's guarded bodies have their own term,
    :func:`guarded_l1_ns`)."""
    if not m.family.load_rounds:
        return 0.0
    rounds = load_rounds(kernel, loads_per_thread)
    return (rounds - 1) * float(require(m).l2_latency_ns)


def fp_slots(kernel: Kernel, m: Machine) -> float:
    """FMA issue slots per thread: each FP class at its machine cost (an
    FMA-class instruction is one slot; a class the machine file does not
    cost takes the ``other`` cost, else one slot)."""
    p = require(m)
    table = dict(p.fp32_cost if kernel.precision == 32 and p.fp32_cost else p.fp64_cost)
    default = table.get("other", 1.0)
    return sum(
        n * (1.0 if cls == "fma" else table.get(cls, default))
        for cls, n in kernel.fp_work.items()
    )


def waves(launch: Launch) -> float:
    """The grid's blocks in waves (a fraction for a partial last wave)."""
    return math.prod(launch.grid) / launch.wave_blocks


def resident_threads(kernel: Kernel, launch: Launch) -> float:
    """Working threads resident on the whole GPU at once: the threads inside
    the domain, times the share of the grid's blocks one wave holds (idle
    threads of partial blocks issue no loads)."""
    return math.prod(kernel.domain) * min(1.0, 1.0 / waves(launch))


#: ``a`` of :func:`drain_share`: how far apart the ends of a block's
#: consecutive warps lie, over twice a warp's residence. Fitted through the
#: model on the drain run's copies at equal resident threads (1024 per SM,
#: blocks of 128 to 1024 threads padded with shared memory,
#: ``fits/measurements/H200-drain.csv``: 161, 150, 136 and 115 GLup/s), so
#: that their predictions over measured agree with the 256-thread block's
#: (``python fits/block_drain.py``). Nsight Compute's achieved occupancy of
#: the same blocks falls less (0.83, 0.77, 0.72 of theoretical for 256, 512
#: and 1024 threads; the law 0.88, 0.77, 0.62): the bytes in flight of a large
#: block fall faster than its resident warps.
DRAIN_STAGGER = 0.02
#: The block size of the stream plateaus and latencies the machine files
#: carry (the H200 file's copy plateau is fitted on 256-thread blocks): the
#: drain is counted relative to it.
DRAIN_REFERENCE_THREADS = 256


def drain_share(warps: int, stagger: float | None = None) -> float:
    """The share of a resident block's warp slots that hold a working warp
    (MODEL.md §11, "Block drain"): a block leaves the SM when its last warp
    ends, and its warps, issued in order, end one after another, ``2 a``
    residences apart, so a slot idles ``(W - 1) a`` residences on average:
    ``1 / (1 + a (W - 1))`` for ``W`` warps (``a``: ``stagger``, by default
    :data:`DRAIN_STAGGER`). Approximated: equal residences, evenly staggered
    ends; one constant for every kernel and GPU."""
    a = DRAIN_STAGGER if stagger is None else stagger
    return 1.0 / (1.0 + a * (max(1, warps) - 1))


def block_drain(kernel: Kernel, launch: Launch, warp_size: int) -> float:
    """The bytes in flight of the launch's blocks relative to blocks of
    :data:`DRAIN_REFERENCE_THREADS` (:func:`drain_share`): below 1 for larger
    blocks, above for smaller ones. A block counts its working warps: the
    threads beyond a domain smaller than the block end at once."""
    warps = math.ceil(working_threads(kernel, launch) / warp_size)
    reference = math.ceil(DRAIN_REFERENCE_THREADS / warp_size)
    return drain_share(warps) / drain_share(reference)


def block_launch_time(m: Machine, launch: Launch, updates: float) -> float:
    """Time per update that launching the grid's blocks takes (MODEL.md §11,
    "Block launch"): each SM launches one block per ``block_launch_ns``
    (the small-kernels micro-benchmark's small blocks), so ``blocks *
    block_launch_ns / (SMs * updates)``; 0 where the machine file does not
    measure it. A limit of its own (the launches overlap the blocks' work),
    reached by small blocks of short threads: a copy in blocks of 64
    threads runs at half the DRAM's plateau on A100 and H200."""
    ns = require(m).block_launch_ns
    if ns is None or updates <= 0:
        return 0.0
    return float(ns) * math.prod(launch.grid) / (m.sms * updates)


def wave_efficiency(launch: Launch) -> float:
    """``w / ceil(w)`` with ``w`` the grid's blocks in waves: the share of
    the last wave's slots that do work, spread over all waves (reported as
    information; the time uses :func:`kernel_time_ns`)."""
    w = waves(launch)
    return w / math.ceil(w)


def overlap(core: float, memory: float, p: float) -> float:
    """``(core^p + memory^p)^(1/p)``: the time of SM work and the memory
    stream overlapping imperfectly (module docstring, "Overlap")."""
    worst = max(core, memory)
    if worst <= 0:
        return 0.0
    return worst * ((core / worst) ** p + (memory / worst) ** p) ** (1.0 / p)


def update_time(t_fp: float, t_l1: float, memory: float, p_fp: float, p_l1: float,
                t_blocks: float = 0.0) -> float:
    """Time per update: FP and L1 work each overlapping with the memory
    stream, the larger of the two (module docstring, "Overlap"), and at
    least the launch of the blocks, ``t_blocks`` (:func:`block_launch_time`)."""
    return max(overlap(t_fp, memory, p_fp), overlap(t_l1, memory, p_l1), t_blocks)


def kernel_time_ns(t_update: float, lups: float, n_waves: float, chain_ns: float,
                   launch_ns: float) -> float:
    """The kernel's wall time: launch overhead, full waves at ``t_update``
    ns per update, and the last partial wave at the longer of its share and
    one block's latency chain (module docstring, "Waves and launch")."""
    per_wave = lups / n_waves * t_update
    full = math.floor(n_waves)
    rest = n_waves - full
    last = max(chain_ns, rest * per_wave) if rest > 1e-12 else 0.0
    return launch_ns + full * per_wave + last


def guarded_l1_ns(kernel: Kernel, m: Machine, launch: Launch, loads_per_lup: float) -> float:
    """The L1 time per update of a body whose outputs sit under separate
    guards, on AMD (MODEL.md §15, guarded bodies): the AMDGPU back end keeps
    each guarded load in its own exec-masked block and waits there for it
    and for the scalar load of its coefficient (``s_waitcnt vmcnt(0)
    lgkmcnt(0)`` before the FMA; ``fits/amdgpu_guarded.py`` compiles the
    convolution's bodies), so a wavefront has one load in flight. Little's
    law over the resident threads of a CU: ``loads * latency / (resident
    threads * CUs)``, with the machine's L2 latency (the pointer-chasing
    plateau) as the round trip. NVIDIA's compiler predicates such small
    guarded blocks and keeps their loads in flight together: no such term
    there. 0 where it does not apply (one output per thread, one guard).

    Approximations: the round trip is the L2's for every load, not the
    L0's hit latency (28 ns on RX 6900 XT), which leaves the W7800's
    two-output bodies 3x faster than measured (their loads take 83-96 ns,
    the L2 plateau is 79 ns: the region's serial address arithmetic,
    exec-mask switches and the scalar load add to the hit, and the blocks'
    lines exceed the L0); bodies of three or four outputs along x run up to
    3.5x slower still (their lines leave the caches sooner), and the
    compiler's choice to keep large bodies rolled (12 and 16 outputs run
    like one) is not seen."""
    if not m.family.guarded_loads_serialise or not guarded_separately(kernel, launch.block):
        return 0.0
    resident = launch.occupancy.blocks_per_sm * math.prod(launch.block)
    return loads_per_lup * float(require(m).l2_latency_ns) / (resident * m.sms)


def launch_us(m: Machine) -> float:
    """What one launch costs beside its kernel body (µs, module docstring,
    "Waves and launch"): one launch timed alone where the machine file measured
    it (``launch_latency_us``), else the back-to-back launch overhead."""
    p = require(m)
    if p.launch_latency_us is not None:
        return float(p.launch_latency_us)
    return float(p.launch_overhead_us)


#: The limiters of the whole kernel's time beside the four levels (MODEL.md §11).
LAUNCH, PARTIAL_WAVE, BLOCK_LAUNCH = "launch", "partial wave", "block launch"


def launch_limits(terms: Mapping[str, float]) -> dict[str, float]:
    """GLup/s that the launch overhead alone allows (the updates over it),
    the launch of the blocks alone (:func:`block_launch_time`) and, when
    one block's latency chain sets the last partial wave's time
    (:func:`kernel_time_ns`), the chain alone (MODEL.md §11, "Limiter")."""
    updates, n_waves = terms["updates"], terms["waves"]
    out = {LAUNCH: updates / (1000.0 * terms["launch_us"])} if terms["launch_us"] > 0 else {}
    if terms.get("t_block_launch_ns", 0.0) > 0:
        out[BLOCK_LAUNCH] = 1.0 / terms["t_block_launch_ns"]
    rest = n_waves - math.floor(n_waves)
    chain = 1000.0 * terms["block_chain_us"]
    if rest > 1e-12 and chain > rest * updates / n_waves * terms["t_update_ns"]:
        out[PARTIAL_WAVE] = updates / chain
    return out


def binding_limiter(roofline_limiter: str, terms: Mapping[str, float]) -> str:
    """The limiter of the default model: the level with the largest time
    (``roofline_limiter``, its limit ``roofline_glups``), unless the launch
    overhead or the last partial wave's latency chain takes longer than that
    level's time for the whole kernel (:func:`launch_limits`; MODEL.md §11)."""
    limits = {roofline_limiter: terms["roofline_glups"], **launch_limits(terms)}
    return min(limits, key=limits.__getitem__)


def glups_from_terms(terms: Mapping[str, float], l1_exponent: float | None = None) -> float:
    """GLup/s recombined from a prediction's ``terms``, optionally with
    another L1 overlap exponent: the same functions as :func:`predict_time`,
    so that fitting the exponent needs no new prediction
    (:mod:`warpspeed.timing.kernel_fit`)."""
    p_l1 = terms["l1_overlap_exponent"] if l1_exponent is None else l1_exponent
    t_update = update_time(terms["t_fp_ns"], terms["t_l1_ns"], terms["t_memory_ns"],
                           terms["fp_overlap_exponent"], p_l1, terms.get("t_block_launch_ns", 0.0))
    updates = terms["updates"]
    total = kernel_time_ns(t_update, updates, terms["waves"], 1000.0 * terms["block_chain_us"],
                           1000.0 * terms["launch_us"])
    return updates / total


def glups_with_efficiency(terms: Mapping[str, float], m: Machine, v: Volumes,
                          efficiency: float) -> float:
    """GLup/s recombined from a prediction's ``terms`` and volumes with another
    many-stream efficiency (the share of the stream plateaus reached): the DRAM
    time of :func:`predict_time` again, then :func:`glups_from_terms`, so that
    fitting a memory system's constant needs no new prediction
    (:mod:`warpspeed.validation.memory_fit`; MODEL.md §11)."""
    dram_bytes = v.dram_load + v.dram_store
    if dram_bytes <= 0:
        return glups_from_terms(terms)
    bw = achieved_bandwidth(memory_params(m, efficiency, terms.get("load_rounds_ns", 0.0)),
                            terms["dram_bytes_in_flight"],
                            v.dram_load / dram_bytes)
    memory = max(terms["t_l2_ns"], dram_bytes / bw)
    return glups_from_terms({**terms, "t_memory_ns": memory})


def predict_time(
    kernel: Kernel, m: Machine, launch: Launch, l1_cycles: float, v: Volumes,
    traits: AccessTraits, wave: WaveVolumes,
) -> TimingResult:
    """GLup/s, limiter, limits and terms of the default model (module
    docstring)."""
    p = require(m)
    efficiency = stream_efficiency(traits.dram_streams, m, traits.dram_access_bytes,
                                   run_bytes=traits.dram_run_bytes,
                                   split_share=traits.dram_split_share)
    lups = kernel.lups_per_thread
    rounds_ns = load_rounds_ns(m, kernel, traits.loads_per_lup * lups)
    mem = memory_params(m, efficiency, rounds_ns)
    drain = block_drain(kernel, launch, m.warp_size)
    threads = resident_threads(kernel, launch) * drain

    rate = p.fp32_fma_per_sm_cycle if kernel.precision == 32 else m.fp64_fma_per_sm_cycle
    slots = fp_slots(kernel, m) / lups
    t_fp = slots / (m.sms * m.clock_ghz * rate)
    t_l1_guarded = guarded_l1_ns(kernel, m, launch, traits.loads_per_lup)
    t_l1 = max(l1_cycles / (m.sms * m.clock_ghz * m.warp_size), t_l1_guarded)

    l2_bytes = v.l2_load + v.l2_store
    l2_flight = threads * l2_bytes * lups
    l2_lat = float(p.l2_latency_ns)
    l2_bw = min(m.l2_bandwidth, l2_flight / l2_lat) if l2_flight else m.l2_bandwidth
    # MODEL.md §11: an L2 that serves each L1 miss as a whole line (Hopper)
    line_ratio = traits.l2_line_ratio if m.family.l2_line_requests else 1.0
    t_l2 = l2_bytes * line_ratio / l2_bw

    dram_bytes = v.dram_load + v.dram_store
    load_fraction = v.dram_load / dram_bytes if dram_bytes > 0 else 1.0
    dram_flight = threads * dram_bytes * lups
    dram_bw = achieved_bandwidth(mem, dram_flight, load_fraction) if dram_bytes else 1.0
    t_dram = dram_bytes / dram_bw

    times = {"fp": t_fp, "l1": t_l1, "l2": t_l2, "dram": t_dram}
    core, memory = max(t_fp, t_l1), max(t_l2, t_dram)
    p_fp, p_l1 = float(p.fp_overlap_exponent), float(p.overlap_exponent)
    total_lups = math.prod(kernel.domain) * lups
    t_blocks = block_launch_time(m, launch, total_lups)
    t_update = update_time(t_fp, t_l1, memory, p_fp, p_l1, t_blocks)
    worst = max(times.values())

    n_waves = waves(launch)
    chain = float(p.dram_latency_ns) + core * m.sms * block_lups(kernel, launch)
    launch_ns = 1000.0 * launch_us(m)
    total_ns = kernel_time_ns(t_update, total_lups, n_waves, chain, launch_ns)
    limiter = max(times, key=times.__getitem__)
    limits = {k: (1.0 / t if t > 0 else None) for k, t in times.items()}
    terms = {
        "t_fp_ns": t_fp,
        "t_l1_ns": t_l1,
        "t_l2_ns": t_l2,
        "t_dram_ns": t_dram,
        "t_l1_guarded_ns": t_l1_guarded,
        "t_core_ns": core,
        "t_memory_ns": memory,
        "t_update_ns": t_update,
        "t_block_launch_ns": t_blocks,
        "fp_slots_per_lup": slots,
        "dram_bandwidth_achieved": dram_bw,
        "dram_streams": traits.dram_streams,
        "dram_stream_efficiency": efficiency,
        "dram_run_bytes": traits.dram_run_bytes,
        # the share the memory system charges (MODEL.md §11); 0 elsewhere
        "dram_split_share": traits.dram_split_share if charges_split_stores(m) else 0.0,
        "dram_bytes_in_flight": dram_flight,
        "load_rounds_ns": rounds_ns,
        "block_drain": drain,
        "l2_bandwidth_achieved": l2_bw,
        "l2_line_ratio": line_ratio,
        "overlap_factor": t_update / worst,
        "fp_overlap_exponent": p_fp,
        "l1_overlap_exponent": p_l1,
        "updates": float(total_lups),
        "waves": n_waves,
        "wave_efficiency": wave_efficiency(launch),
        "block_chain_us": chain / 1000.0,
        "launch_us": launch_ns / 1000.0,
        "kernel_time_us": total_ns / 1000.0,
        "roofline_glups": 1.0 / worst,
    }
    return TimingResult(glups=total_lups / total_ns, limiter=binding_limiter(limiter, terms),
                        limits=limits, terms=terms)


__all__ = ["BLOCK_LAUNCH", "DRAIN_REFERENCE_THREADS", "DRAIN_STAGGER", "LAUNCH", "PARTIAL_WAVE",
           "DefaultModelParameters", "binding_limiter", "block_drain", "block_launch_time",
           "drain_share", "fp_slots",
           "glups_from_terms", "glups_with_efficiency", "guarded_l1_ns", "kernel_time_ns",
           "launch_limits", "launch_us", "load_rounds", "load_rounds_ns", "memory_params",
           "overlap", "predict_time", "require",
           "resident_threads", "update_time", "wave_efficiency", "waves"]
