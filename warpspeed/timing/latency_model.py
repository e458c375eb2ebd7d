"""The default model as one object (:class:`warpspeed.timing.base.Timing`,
MODEL.md §11): the time of :mod:`warpspeed.timing.latency`, the pruning bound
of its bandwidths, and what it says beyond the four levels (MODEL.md §8,
advice; §14, ``explain``):

* ``launch_bound`` / ``partial_wave``: the launch overhead, or the last
  partial wave's block latency chain, binds: the hint gives its time and the
  kernel's, and what amortises it.
* ``overlap``: the overlap of SM work and the memory stream costs at least
  5 % over the largest level time: the hint names the pair that serialises
  (FP or L1 work against the L2 or DRAM stream, the pair whose p-norm sets
  the time) and their ratio, and what would hide it: L1 cycles down to the
  ideal of 2 per access instruction (a block at least 16 wide in x or a fold
  that merges repeated loads), with the time the overlap would then take (the
  same p-norm, :func:`warpspeed.timing.latency.overlap`); otherwise the
  smaller of the two shrunk (DRAM volume by a block that keeps the layer
  conditions, L2 traffic by fewer L1 misses, fewer FP instructions), or that
  the L1 count is at its ideal already.
* the occupancy hint adds the DRAM bandwidth the bytes in flight reach;
  ``explain`` adds the roofline, the overlap, the achieved DRAM bandwidth, the
  waves and the launch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from ..volumes.levels import AccessTraits, Volumes
from ..volumes.waves import WaveVolumes
from . import latency_parameters
from .base import Hint, Reading, Timing, TimingResult
from .latency import LAUNCH, PARTIAL_WAVE, launch_limits, predict_time
from .latency import overlap as pnorm
from .latency_parameters import LATENCY_TABLE, PLATEAUS

OVERLAP_LOSS = 1.05  # overlap factor from which the overlap hint speaks


@dataclass(frozen=True)
class Latency(Timing):
    """The default model (module docstring)."""

    def time(self, kernel: Kernel, machine: Machine, launch: Launch, l1_cycles: float,
             volumes: Volumes, traits: AccessTraits, wave: WaveVolumes) -> TimingResult:
        """:func:`warpspeed.timing.latency.predict_time` (MODEL.md §11)."""
        return predict_time(kernel, machine, launch, l1_cycles, volumes, traits, wave)

    def peak_dram_bandwidth(self, machine: Machine) -> float:
        """The largest of the machine's DRAM bandwidths: the achieved bandwidth
        never exceeds the saturated plateau of the load/store mix (MODEL.md §11)."""
        given = latency_parameters.given(machine)
        return max(v for v in (machine.dram_bandwidth, *(given.get(k) for k in PLATEAUS))
                   if v is not None)

    def limits_beyond_levels(self, terms: Mapping[str, float]) -> dict[str, float]:
        """The launch and partial-wave limits (:func:`warpspeed.timing.latency.launch_limits`)."""
        return launch_limits(terms) if "roofline_glups" in terms else {}

    def hints(self, r: Reading) -> tuple[Hint, ...]:
        """A binding launch or partial wave, and a costly overlap (module docstring)."""
        return _launch_bound(r) + _overlap(r)

    def occupancy_note(self, terms: Mapping[str, float]) -> str:
        """The DRAM bandwidth the bytes in flight reach (Little's law, MODEL.md §11)."""
        if "dram_bandwidth_achieved" not in terms:
            return ""
        return (f". With these bytes in flight DRAM reaches {terms['dram_bandwidth_achieved']:.0f}"
                " GB/s (Little's law, included in this prediction)")

    def explanation(self, r: Reading) -> tuple[str, ...]:
        """The roofline, the overlap, the achieved DRAM bandwidth, the waves and
        the launch (MODEL.md §11, terms)."""
        t = r.terms
        if "roofline_glups" not in t:
            return ()
        updates = t["updates"]
        body = t["kernel_time_us"] - t["launch_us"]
        return (
            f"roofline {t['roofline_glups']:.2f} GLup/s; {r.sm} work "
            f"(FP {1000 * t['t_fp_ns']:.1f}, "
            f"L1 {1000 * t['t_l1_ns']:.1f} ps) overlaps "
            f"{'imperfectly' if t['overlap_factor'] >= 1.005 else 'fully'} with the memory stream "
            f"(L2, DRAM: {1000 * t['t_memory_ns']:.1f} ps per update): "
            f"{1000 * t['t_update_ns']:.1f} ps (x{t['overlap_factor']:.2f}); "
            f"DRAM at {t['dram_bandwidth_achieved']:.0f} GB/s{_of_peak(t, r.dram_peak)} "
            f"with {t['dram_bytes_in_flight'] / 2**20:.1f} MiB in flight"
            + (f", each thread resident {t['load_rounds_ns']:.0f} ns longer for its loads in "
               "rounds of what its registers hold (MODEL.md §11, Load rounds)"
               if t.get("load_rounds_ns", 0.0) > 0 else "")
            + (f", {t['dram_streams']:.0f} concurrent streams: x{t['dram_stream_efficiency']:.2f} "
               "of the stream plateaus (MODEL.md §11)"
               + (f", {100 * t['dram_split_share']:.0f} % of the DRAM bytes in store sectors "
                  "that warps write in part, each a row visit of its own (rows that are no "
                  "whole number of lines: pad them)" if t.get("dram_split_share", 0.0) >= 0.005
                  else "")
               if t.get("dram_stream_efficiency", 1.0) < 0.995 else "")
            + (f"; the L2 serves whole 128 B lines: this block's misses use "
               f"{4 / t['l2_line_ratio']:.1f} of 4 sectors each, x{t['l2_line_ratio']:.2f} the "
               "L2 time of its bytes (MODEL.md §11)"
               if t.get("l2_line_ratio", 1.0) > 1.005 else ""),
            f"{updates:.3g} updates in {t['waves']:.3g} waves: body {body:.3g} us "
            f"(x{body / (updates * t['t_update_ns'] / 1000.0):.2f} for the last partial wave; "
            f"a block's own latency chain {t['block_chain_us']:.2f} us) "
            f"+ launch {t['launch_us']:.2f} us",
        )


def _of_peak(t: Mapping[str, float], peak: float | None) -> str:
    """The achieved DRAM bandwidth's share of the data sheet's peak, in words."""
    if not peak:
        return ""
    return f" ({100 * t['dram_bandwidth_achieved'] / peak:.0f} % of the data sheet's {peak:g})"


def _overlap(r: Reading) -> tuple[Hint, ...]:
    """The ``overlap`` hint (module docstring)."""
    t = r.terms
    if "overlap_factor" not in t or t["overlap_factor"] < OVERLAP_LOSS:
        return ()
    mem_level = "DRAM" if t["t_dram_ns"] >= t["t_l2_ns"] else "L2"
    memory = t["t_memory_ns"]
    pairs = {"fp": (t["t_fp_ns"], t["fp_overlap_exponent"]),
             "l1": (t["t_l1_ns"], t["l1_overlap_exponent"])}
    core = max(pairs, key=lambda k: pnorm(pairs[k][0], memory, pairs[k][1]))
    t_core, expo = pairs[core]
    worst = max(t_core, memory)
    small = "memory" if memory < t_core else core
    ps = 1000.0
    text = (f"the overlap costs x{t['overlap_factor']:.2f}: {core.upper()} work "
            f"({ps * t_core:.1f} ps per update) and the {mem_level} stream ({ps * memory:.1f} ps) "
            f"overlap imperfectly (the smaller {min(t_core, memory) / worst:.2f} of the larger) "
            f"and serialise in part "
            f"(p-norm exponent {expo:.2f}, MODEL.md §11): {ps * t['t_update_ns']:.1f} ps "
            f"instead of {ps * worst:.1f}")
    ideal = r.ideal_l1 if core == "l1" else None
    if ideal is not None and r.l1_cycles > 1.1 * ideal:
        at = pnorm(t_core * ideal / r.l1_cycles, memory, expo)
        text += (f"; at the ideal L1 count ({ideal:.1f} instead of {r.l1_cycles:.1f} cycles "
                 f"per {r.warp}-update: a block at least "
                 f"{r.row_width} wide in x, or a fold that merges repeated loads) "
                 f"it would take {ps * at:.1f} ps")
    elif small == "memory" and mem_level == "DRAM":
        text += ("; less DRAM traffic per update (a block that keeps the layer conditions or "
                 "merges partial stores) would hide it")
    elif small == "memory":
        text += ("; less L2 traffic per update (fewer L1 misses, a block footprint with less "
                 "halo) would hide it")
    elif core == "fp":
        text += "; fewer FP instructions per update would hide it"
    elif ideal is not None:
        text += "; the L1 count is at its ideal already: only fewer loads per update hide it"
    return (Hint("overlap", core if small == core else r.limiter, text),)


def _launch_bound(r: Reading) -> tuple[Hint, ...]:
    """The launch overhead or the last partial wave binds (MODEL.md §11)."""
    t = r.terms
    if r.limiter == LAUNCH:
        return (Hint(
            "launch_bound", LAUNCH,
            f"the launch overhead binds: {t['launch_us']:.2f} of the kernel's "
            f"{t['kernel_time_us']:.2f} us go to launching it, more than any level's time for "
            f"its {t['updates']:.3g} updates; more lattice updates per launch (a larger domain, "
            "or several sweeps fused into one kernel) amortise it",
        ),)
    if r.limiter == PARTIAL_WAVE:
        return (Hint(
            "partial_wave", PARTIAL_WAVE,
            f"the last partial wave binds: the grid fills {t['waves']:.3g} waves and the last "
            f"one takes one block's own latency chain, {t['block_chain_us']:.2f} us (a DRAM "
            f"round trip and the block's core work on one {r.sm}) of the kernel's "
            f"{t['kernel_time_us']:.2f} us; a smaller block (a shorter chain) or more updates "
            "per launch would help",
        ),)
    return ()


#: The default model, registered in :data:`warpspeed.timing.MODELS`.
LATENCY = Latency(
    "latency",
    "linear",
    "default: DRAM sectors in the linear, alignment-aware address space (arrays of "
    "structures share sectors); time from bytes in flight and latency (Little's law, "
    "calibrated on micro-benchmarks), DRAM bandwidth by load/store mix, FP work costed "
    "per instruction class, imperfect overlap of FP and L1 work with the memory stream, "
    "partial waves and launch overhead; "
    "partial stores of one block merge in the L2 before eviction; L1 re-reads miss the L2 "
    "at its capacity-miss fraction",
    merged_stores=True,
    reread_evicts=True,
    whole_warps=True,
    accuracy_table="shipped",
    parameters=LATENCY_TABLE,
)


__all__ = ["LATENCY", "OVERLAP_LOSS", "Latency"]
