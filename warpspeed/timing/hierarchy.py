"""What the machine's memory hierarchy changes about a prediction beyond the
NVIDIA levels of MODEL.md §5-§6 (MODEL.md §15): the last-level cache behind
the L2 (AMD Infinity Cache / MALL of RDNA2, RDNA3 and MI300X) and the notes a
prediction carries where the model's terms have no counterpart on the machine.

* :func:`with_mall`: a kernel whose data fits in the last-level cache has its
  DRAM volume served at the cache's bandwidth; a larger data set has its
  layer conditions (MODEL.md §6) counted twice, with the L2 and with the
  cache as capacity: the cache's traffic and the DRAM's. Approximated: the
  footprint is the bytes of every field the kernel touches (whole arrays,
  ghost layers included), the fit is all or nothing, the capacity curves of
  the L2 (§7) stand for the cache's, and the cache's latency is taken as the
  DRAM latency (no public pointer-chasing table isolates it).
* :func:`architecture_notes`: a CUDA kernel on an AMD machine (or a HIP kernel
  on an NVIDIA one), and AMD's L1 count; a model's own notes (the paper
  model's NVIDIA-fitted curves) are its :meth:`~warpspeed.timing.base.Timing.notes`.
* :func:`one_row_note`: a measured blind spot, cache-bound one-row blocks on
  RDNA (MODEL.md §10).
"""

from __future__ import annotations

from dataclasses import replace

from ..input.kernel import Kernel, data_bytes
from ..machine import Machine
from ..volumes.launch import wgp_mode
from ..volumes.levels import Volumes
from .memory_systems import charges_split_stores


def with_mall(kernel: Kernel, machine: Machine, past_l2: Volumes,
              past_mall: Volumes | None) -> tuple[Machine, str | None, bool]:
    """The machine the timing models see, a note, and whether the DRAM volume
    is ``past_mall`` (else ``past_l2``) (MODEL.md §15).

    Without a last-level cache (``mall_bytes`` 0), ``machine`` unchanged.
    When the kernel's data (:func:`data_bytes`) fits in it, every DRAM
    bandwidth becomes ``mall_bandwidth``. Otherwise the cache holds what a
    larger L2 would: ``past_l2`` are the volumes with the machine's L2 (what
    leaves the L2: the cache's traffic), ``past_mall`` the same counted with
    the cache's size in place of the L2's (what leaves the cache: DRAM). The
    two stages stream at once, so the time is the longer of the two; the
    DRAM bandwidths are scaled so that the DRAM volume takes that time."""
    if not machine.mall_bytes:
        return machine, None, False
    size = data_bytes(kernel)
    cache = f"{machine.mall_bytes / 2**20:.0f} MiB last-level cache (Infinity Cache)"
    if size <= machine.mall_bytes:
        return _scaled(machine, machine.mall_bandwidth / machine.dram_bandwidth), (
            f"the kernel's data ({size / 2**20:.1f} MiB) fits in the {machine.name}'s {cache}: "
            f"its DRAM volume is served at {machine.mall_bandwidth:g} GB/s (MODEL.md §15)"), False
    if past_mall is None:
        return machine, None, False
    v_l2 = past_l2.dram_load + past_l2.dram_store
    v_dram = past_mall.dram_load + past_mall.dram_store
    if v_dram <= 0:
        return machine, None, False
    t = max(v_l2 / machine.mall_bandwidth, v_dram / machine.dram_bandwidth)
    factor = v_dram / machine.dram_bandwidth / t
    return _scaled(machine, factor), (
        f"{v_l2:.1f} B/LUP leave the L2 for the {cache} at {machine.mall_bandwidth:g} GB/s, "
        f"{v_dram:.1f} B/LUP of them go on to DRAM (the reported DRAM volume; MODEL.md §15)"), True


def _scaled(machine: Machine, factor: float) -> Machine:
    """``machine`` with every DRAM bandwidth times ``factor``: its own and
    those of the timing tables (:attr:`~warpspeed.machine.Machine.dram_scale`)."""
    return replace(machine, dram_bandwidth=machine.dram_bandwidth * factor,
                   dram_scale=machine.dram_scale * factor)


def architecture_notes(kernel: Kernel, machine: Machine) -> tuple[str, ...]:
    """Notes on terms without a counterpart on ``machine`` (MODEL.md §15), for
    every model; a model adds its own (:meth:`warpspeed.timing.base.Timing.notes`)."""
    notes = []
    target = getattr(kernel, "target", None)
    expected = machine.family.target
    if target and target != expected:
        notes.append(
            f"the kernel was generated for {target}, but {machine.name} is an "
            f"{machine.vendor} GPU that runs {expected} code: the prediction assumes the same "
            f"accesses compiled for {expected} (generate it with Target.{expected} to be sure)")
    if machine.l1_model == "lines":
        notes.append(
            f"the L1 count is one {machine.l1_line_bytes} B line per clock per wavefront "
            "instruction (MODEL.md §15), not NVIDIA's half warps and banks (§4): AMD publishes "
            "no bank model of its vector L1; the line count misses the public L1 "
            "micro-benchmark by 0.5-1.9x on blocks at least 4 wide")
    return tuple(notes)


def x_fold_note(kernel: Kernel, machine: Machine, limiter: str) -> str | None:
    """A measured blind spot, or None (MODEL.md §10, "What the third H200 run
    shows"): a thread folded along x whose time the DRAM sets, on a memory
    system that does not charge split stores. On the H200, lbmpy's D3Q19
    folded 2x1x1 ran 20-40 % slower than unfolded in the same blocks (each
    warp store covers every other element of its sectors); NVIDIA's HBM
    charges those split store sectors as row visits (MODEL.md §11, "Memory
    systems"), other memory systems have no measurement of it, so the
    prediction says so instead of ranking it apart."""
    if kernel.fold[0] <= 1 or limiter != "dram" or charges_split_stores(machine):
        return None
    return (f"a thread folded along x ({'x'.join(map(str, kernel.fold))}) is a known blind "
            "spot: on the H200, lbmpy's D3Q19 folded 2x1x1 ran 20-40 % slower than unfolded "
            "(its warps' stores write every other element of their sectors), which only "
            "NVIDIA's HBM charges here (MODEL.md §10, §11); compare with the unfolded kernel or "
            "a fold along y or z before choosing this one")


def one_row_note(kernel: Kernel, machine: Machine, block: tuple[int, int, int],
                 limiter: str) -> str | None:
    """A measured blind spot, or None (MODEL.md §10, "RDNA's L0 and one-row
    blocks"): on RDNA, a block of one row over a domain of several rows whose
    time the L1 or the L2 sets. On the W7800's 15x15 convolution scan
    (``python fits/convolution_crossgpu.py W7800``) such blocks ran at a
    median of 1.64x below the prediction, taller ones at 1.17x; the model
    has no term for it (the evidence is one kernel on one GPU), so the
    prediction says so instead of ranking them apart."""
    rows = [d for d in kernel.domain[1:] if d > 1]
    if not wgp_mode(machine) or limiter not in ("l1", "l2") or block[1:] != (1, 1) or not rows:
        return None
    return ("a block of one row on RDNA is a known blind spot: on the W7800's 15x15 "
            "convolution scan, cache-bound one-row blocks ran at a median of 1.64x below the "
            "prediction, taller blocks at 1.17x (MODEL.md §10); compare with a block of two or "
            "more rows before choosing this one")
