"""Which limiter binds, why, and what would help by how much (MODEL.md §4-§8
and §10; after the GPA advisor of Zhou et al., CGO 2021, adapted to the
paper model).

Everything is derived from the numbers of a :class:`~warpspeed.model.Prediction`
(and, where given, the machine and the kernel): the binding limiter, the
headroom to the next limiter, i.e. the speedup bound if the binding one were
removed, and hints in words with the numbers behind them. Nothing is
printed; the CLI renders :class:`Advice`.

Hint rules (thresholds are choices of this module, stated in each rule):

* ``narrow_block_x``: block x extent below 16 threads while the domain is
  wider: a half warp (MODEL.md §4) spans several rows, so its accesses fall
  into several 1 KiB regions and rows touch partial 32 B sectors.
* ``l1_conflicts``: L1 cycles per warp per lattice update at least 10 %
  above the ideal of 2 cycles (two half warps at one cycle) per access
  instruction per lattice update (MODEL.md §4).
* ``l1_capacity``: L1 capacity misses (MODEL.md §5, ``m1(O1)``) add at
  least 5 % to the L2 load volume.
* ``layer_condition_z`` / ``layer_condition_xy``: reuse of the z (or x/y)
  overlap lost to L2 capacity (MODEL.md §6, ``1 - h(O)``) adds at least
  5 % to the DRAM volume: the earlier set's bytes exceed what the L2 keeps.
* ``store_evictions``: evicted partial store lines (``storeEvicts``) add at
  least 5 % to the DRAM volume.
* ``occupancy``: blocks per SM limited by registers, shared memory or the
  block limit, leaving thread slots empty. The paper model has no latency
  term (MODEL.md §10): the hint says so; the default model's hint gives the
  DRAM bandwidth its bytes in flight reach. Both say how many registers per
  thread would allow one more block.
* ``fp_bound``: the FP limit binds: fewer floating-point instructions per
  lattice update are the only lever.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..input.addresses import thread_accesses
from ..input.expr import bind_all
from ..input.kernel import Kernel
from ..machine import Machine
from ..model import LIMITERS, Prediction

MIB = 2**20
SIGNIFICANT = 0.05  # share of a level's volume a hint must account for


@dataclass(frozen=True)
class Hint:
    """One finding: a tag, the limiter it concerns, and a sentence with numbers."""

    kind: str
    limiter: str
    message: str


@dataclass(frozen=True)
class Advice:
    """What binds a configuration and what would help.

    ``limits`` are the finite limits in GLup/s, lowest first; ``headroom``
    is ``next limit / prediction`` (>= 1), the speedup bound if the binding
    limiter were removed, None when no other limit applies.
    """

    machine: str
    kernel: str
    block: tuple[int, int, int]
    fold: tuple[int, int, int]
    glups: float
    limiter: str
    limits: tuple[tuple[str, float], ...]
    next_limiter: str | None
    headroom: float | None
    hints: tuple[Hint, ...]


def advise(
    prediction: Prediction, machine: Machine, kernel: Kernel | None = None
) -> Advice:
    """Explain ``prediction`` (MODEL.md §8): binding limiter, headroom and
    hints (module docstring). ``kernel`` adds hints that need the access
    count and the registers per thread.

    Example: what limits a 3-point stencil, and what would help::

        >>> import warpspeed as ws
        >>> x, y, z = ws.tidx, ws.tidy, ws.tidz
        >>> A = ws.Field("A", shape=(66, 66, 66))
        >>> B = ws.Field("B", shape=(66, 66, 66))
        >>> k = ws.Kernel(loads=[A[x + 1 + d, y + 1, z + 1] for d in (-1, 0, 1)],
        ...               stores=[B[x + 1, y + 1, z + 1]], domain=(64, 64, 64))
        >>> p = ws.predict(k, "V100", block=(64, 2, 1))
        >>> a = ws.advise(p, ws.load_machine("V100"), k)
        >>> a.limiter == p.limiter and a.headroom >= 1
        True
        >>> "l1_conflicts" in {h.kind for h in a.hints}  # above 2 cycles per access
        True
    """
    p = prediction
    finite = sorted(
        ((k, v) for k, v in p.limits.items() if v is not None), key=lambda kv: (kv[1], kv[0])
    )
    nxt = finite[1] if len(finite) > 1 else None
    hints = (
        _block_x(p, kernel)
        + _l1(p, kernel)
        + _l1_capacity(p, machine)
        + _layer_conditions(p, machine)
        + _store_evictions(p)
        + _occupancy(p, machine, kernel)
        + _fp(p, kernel)
    )
    order = {lim: i for i, lim in enumerate(k for k, _ in finite)}
    hints = tuple(sorted(hints, key=lambda h: order.get(h.limiter, len(LIMITERS))))
    return Advice(
        machine=p.machine,
        kernel=p.kernel,
        block=p.block,
        fold=p.fold,
        glups=p.glups,
        limiter=p.limiter,
        limits=tuple(finite),
        next_limiter=nxt[0] if nxt else None,
        headroom=nxt[1] / p.glups if nxt else None,
        hints=hints,
    )


def explanation_lines(p: Prediction, a: Advice) -> list[str]:
    """The text of ``warpspeed explain`` (and of the web page): binding
    limiter, the latency model's terms, headroom and hints."""
    lines = [f"binding limiter: {a.limiter} ({p.model} model)"]
    t = p.terms
    if "roofline_glups" in t:
        updates = t["updates"]
        body = t["kernel_time_us"] - t["launch_us"]
        lines.append(
            f"roofline {t['roofline_glups']:.2f} GLup/s; SM work (FP {1000 * t['t_fp_ns']:.1f}, "
            f"L1 {1000 * t['t_l1_ns']:.1f} ps) overlaps imperfectly with the memory stream "
            f"(L2, DRAM: {1000 * t['t_memory_ns']:.1f} ps per update): "
            f"{1000 * t['t_update_ns']:.1f} ps (x{t['overlap_factor']:.2f}); "
            f"DRAM at {t['dram_bandwidth_achieved']:.0f} GB/s "
            f"with {t['dram_bytes_in_flight'] / 2**20:.1f} MiB in flight"
        )
        lines.append(
            f"{updates:.3g} updates in {t['waves']:.3g} waves: body {body:.3g} us "
            f"(x{body / (updates * t['t_update_ns'] / 1000.0):.2f} for the last partial wave; "
            f"a block's own latency chain {t['block_chain_us']:.2f} us) "
            f"+ launch {t['launch_us']:.2f} us"
        )
    if "atomics_per_lup" in t:
        lines.append(
            f"atomics: {t['atomics_per_lup']:.4g} per update to one address, serialised in the "
            f"L2 at {t['atomics_per_clock']:g} per clock: {1000 * t['t_atomics_ns']:.1f} ps per "
            "update"
        )
    if a.headroom is not None:
        lines.append(f"headroom: {a.headroom:.2f}x until {a.next_limiter} binds "
                     "(speedup bound if the binding limiter were removed)")
    if a.hints:
        lines += [f"- [{h.kind}] {h.message}" for h in a.hints]
    else:
        lines.append("no hints: nothing stands out")
    return lines


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def _block_x(p: Prediction, kernel: Kernel | None) -> tuple[Hint, ...]:
    bx = p.block[0]
    if bx >= 16 or (kernel is not None and kernel.domain[0] <= bx):
        return ()
    rows = math.ceil(16 / bx)
    threads = math.prod(p.block)
    wider = (16, max(1, p.block[1] * bx // 16), p.block[2])
    if math.prod(wider) != threads:
        wider = (16, p.block[1], max(1, p.block[2] * bx // 16))
    return (Hint(
        "narrow_block_x", "l1",
        f"block x extent {bx} is below 16: a half warp spans {rows} rows, so its accesses "
        f"touch several 1 KiB regions and rows fill 32 B sectors only partly "
        f"(L1: {p.l1_cycles:.1f} cycles per warp and lattice update, L1 load "
        f"{p.volumes.l1_load:.1f} B/Lup); a block of at least 16 threads in x, e.g. "
        f"{','.join(map(str, wider))}, avoids that",
    ),)


def _l1(p: Prediction, kernel: Kernel | None) -> tuple[Hint, ...]:
    if kernel is None:
        return ()
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), p.block)
    loads, stores = thread_accesses(kernel, bound)  # the instructions a thread issues
    ideal = 2.0 * (len(loads) + len(stores)) / kernel.lups_per_thread
    if p.l1_cycles < 1.1 * ideal:
        return ()
    gain = ""
    lim = p.limits.get("l1")
    if lim is not None:
        gain = f"; at the ideal the L1 limit would be {lim * p.l1_cycles / ideal:.1f} GLup/s"
    return (Hint(
        "l1_conflicts", "l1",
        f"L1 needs {p.l1_cycles:.1f} cycles per warp and lattice update, "
        f"{p.l1_cycles / ideal:.2f}x the {ideal:.1f} of conflict-free unit-stride accesses "
        f"(bank conflicts or half warps spread over several 1 KiB regions){gain}",
    ),)


def _l1_capacity(p: Prediction, m: Machine) -> tuple[Hint, ...]:
    v = p.volumes
    extra = v.l2_load - v.l2_load_v1
    total = v.l2_load + v.l2_store
    if total <= 0 or extra < SIGNIFICANT * total:
        return ()
    o1 = p.oversubscription["o1"]
    alloc = p.footprint.alloc_per_block * p.blocks_per_sm / 1024
    return (Hint(
        "l1_capacity", "l2",
        f"L1 capacity misses: {p.blocks_per_sm} blocks per SM allocate {alloc:.0f} KiB of "
        f"L1 lines, the L1 holds {m.l1_bytes / 1024:.0f} KiB (O1 = {o1:.2f}); "
        f"{_pct(p.hit_fractions['m1'])} of the redundant loads miss, {extra:.1f} of "
        f"{total:.1f} B/Lup of L2 traffic; blocks with a smaller footprint (more compact "
        "shapes, less halo) or fewer blocks per SM would help",
    ),)


def _layer_conditions(p: Prediction, m: Machine) -> tuple[Hint, ...]:
    v, w = p.volumes, p.wave
    dram = v.dram_load + v.dram_store
    lups = w.threads * math.prod(p.fold)
    if dram <= 0 or lups <= 0:
        return ()
    out = []
    cases = (
        ("layer_condition_z", "z", w.old[1], w.overlap[1], p.hit_fractions["h_z"],
         "deeper blocks (a larger z extent), 2z folding or a smaller xy plane (a smaller "
         "domain cross-section, e.g. by tiling) would help"),
        ("layer_condition_xy", "y", w.old[0], w.overlap[0], p.hit_fractions["h_xy"],
         "fewer threads in flight per wave (fewer blocks per SM) or fewer bytes per "
         "thread would help"),
    )
    for kind, axis, old, overlap, hit, remedy in cases:
        lost = overlap * (1.0 - hit) / lups
        if lost < SIGNIFICANT * dram:
            continue
        out.append(Hint(
            kind, "dram",
            f"{axis} layer condition not met: the overlap set needs {old / MIB:.1f} MiB, the "
            f"L2 holds {m.l2_bytes / MIB:.1f} MiB, so only {_pct(hit)} of the "
            f"{overlap / lups:.1f} B/Lup of reuse hits and {lost:.1f} of {dram:.1f} B/Lup "
            f"of DRAM traffic is reloaded; {remedy}",
        ))
    return tuple(out)


def _store_evictions(p: Prediction) -> tuple[Hint, ...]:
    v = p.volumes
    evicts = v.dram_store - v.dram_store_v1
    dram = v.dram_load + v.dram_store
    if dram <= 0 or 2 * evicts < SIGNIFICANT * dram:
        return ()
    return (Hint(
        "store_evictions", "dram",
        f"partially written lines are evicted before completion: {evicts:.1f} B/Lup are "
        f"written and read again ({2 * evicts:.1f} of {dram:.1f} B/Lup of DRAM traffic, "
        f"s = {_pct(p.hit_fractions['s'])} at O2 = {p.oversubscription['o2']:.2f}); a "
        "smaller wave footprint or wider blocks in x would help",
    ),)


def _occupancy(p: Prediction, m: Machine, kernel: Kernel | None) -> tuple[Hint, ...]:
    threads = math.prod(p.block)
    by = p.occupancy_limited_by
    used = p.blocks_per_sm * threads
    if by == "threads" or used >= m.max_threads_per_sm:
        return ()
    text = (
        f"occupancy limited by {by.replace('_', ' ')}: {p.blocks_per_sm} blocks of {threads} "
        f"threads per SM use {used} of {m.max_threads_per_sm} thread slots "
        f"({_pct(used / m.max_threads_per_sm)})"
    )
    if by == "registers" and kernel is not None:
        warps = math.ceil(threads / m.warp_size)
        unit = m.register_alloc_unit
        per_warp = m.registers_per_sm // ((p.blocks_per_sm + 1) * warps) // unit * unit
        regs = per_warp // m.warp_size
        if regs >= 1:
            text += (
                f"; {kernel.registers} registers per thread, at most {regs} would allow "
                f"{p.blocks_per_sm + 1} blocks"
            )
    if p.model == "paper":
        text += (
            ". The paper model has no latency term, so this prediction does not suffer, but a "
            "real kernel with few bytes in flight may not reach its DRAM limit (MODEL.md §10)"
        )
    elif "dram_bandwidth_achieved" in p.terms:
        text += (
            f". With these bytes in flight DRAM reaches {p.terms['dram_bandwidth_achieved']:.0f}"
            " GB/s (Little's law, included in this prediction)"
        )
    return (Hint("occupancy", p.limiter, text),)


def _fp(p: Prediction, kernel: Kernel | None) -> tuple[Hint, ...]:
    if p.limiter != "fp":
        return ()
    per = ""
    if kernel is not None and kernel.fp_instructions:
        per = f" ({kernel.fp_instructions / kernel.lups_per_thread:.1f} per lattice update)"
    return (Hint(
        "fp_bound", "fp",
        f"floating-point throughput binds{per}: only fewer FP instructions per lattice "
        "update (common subexpressions, FMAs) raise it",
    ),)


__all__ = ["Advice", "Hint", "advise", "explanation_lines"]
