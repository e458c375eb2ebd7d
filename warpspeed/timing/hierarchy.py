"""What the machine's memory hierarchy changes about a prediction beyond the
NVIDIA levels of MODEL.md §5-§6 (MODEL.md §15): the last-level cache behind
the L2 (AMD Infinity Cache / MALL of RDNA2, RDNA3 and MI300X) and the notes a
prediction carries where the model's terms have no counterpart on the machine.

* :func:`with_mall`: a kernel whose data fits in the last-level cache has its
  DRAM volume served at the cache's bandwidth. Approximated: the footprint is
  the bytes of every field the kernel touches (whole arrays, ghost layers
  included), the fit is all or nothing, and the cache's latency is taken as
  the DRAM latency (no public pointer-chasing table isolates it).
* :func:`architecture_notes`: a CUDA kernel on an AMD machine (or a HIP kernel
  on an NVIDIA one), and the paper-model terms that are NVIDIA's.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..input.kernel import Kernel
from ..machine import Machine

#: The code generator's target for each vendor (pystencils ``Target`` names).
VENDOR_TARGET = {"NVIDIA": "CUDA", "AMD": "HIP"}


def data_bytes(kernel: Kernel) -> int:
    """Bytes of every distinct field the kernel loads, stores or gathers:
    whole arrays (their ``shape`` times ``itemsize``), the kernel's data set."""
    fields = {a.field.name: a.field for a in kernel.loads + kernel.stores}
    fields.update({g.field.name: g.field for g in kernel.gathers})
    return sum(math.prod(f.shape) * f.itemsize for f in fields.values())


def with_mall(kernel: Kernel, machine: Machine) -> tuple[Machine, str | None]:
    """The machine the timing models see, and a note: when the kernel's data
    (:func:`data_bytes`) fits in the machine's last-level cache
    (``mall_bytes`` > 0), every DRAM bandwidth becomes ``mall_bandwidth``
    (MODEL.md §15); otherwise the machine unchanged and no note."""
    if not machine.mall_bytes:
        return machine, None
    size = data_bytes(kernel)
    if size > machine.mall_bytes:
        return machine, None
    bw = machine.mall_bandwidth
    m = replace(machine, dram_bandwidth=bw,
                dram_bw_read=bw if machine.dram_bw_read is not None else None,
                dram_bw_copy=bw if machine.dram_bw_copy is not None else None,
                dram_bw_write=bw if machine.dram_bw_write is not None else None)
    return m, (f"the kernel's data ({size / 2**20:.1f} MiB) fits in the {machine.name}'s "
               f"{machine.mall_bytes / 2**20:.0f} MiB last-level cache (Infinity Cache): its "
               f"DRAM volume is served at {bw:g} GB/s (MODEL.md §15)")


def architecture_notes(kernel: Kernel, machine: Machine, model: str) -> tuple[str, ...]:
    """Notes on terms without a counterpart on ``machine`` (MODEL.md §15)."""
    notes = []
    target = getattr(kernel, "target", None)
    expected = VENDOR_TARGET.get(machine.vendor)
    if target and expected and target != expected:
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
    if machine.vendor == "AMD":
        if model == "paper":
            notes.append(
                "the paper model's capacity curves (MODEL.md §7) were fitted on NVIDIA GPUs; "
                "on AMD they are carried over (MODEL.md §15)")
    return tuple(notes)
