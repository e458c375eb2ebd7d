"""The default model's own table of a machine file, ``[latency]`` (MODEL.md
§11, §12): its parameters, their ranges, and what it derives from the
machine's facts.

The three DRAM stream plateaus follow ``[dram_bandwidth]``: a file whose
``value`` differs from its ``stream_reference`` (a user's edit) has them
scaled by :attr:`~warpspeed.machine.Machine.stream_scale`, and a prediction
whose DRAM volume a last-level cache serves by
:attr:`~warpspeed.machine.Machine.dram_scale` (MODEL.md §15). None of them may
lie above the data sheet's ``dram_peak``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import MachineError
from ..fpclasses import FP_CLASSES
from ..machine import Machine
from . import tables
from .tables import ParameterTable, bounds

#: The DRAM plateaus of the table, in GB/s.
PLATEAUS = ("dram_bw_read", "dram_bw_copy", "dram_bw_write")


def costs(path: object, key: str, entry: Mapping[str, Any]) -> tuple[tuple[str, float], ...]:
    """A cost table ``[latency.fp64_cost]`` / ``[latency.fp32_cost]``: FMA issue
    slots per instruction of each FP class but ``fma`` (which costs 1), and a
    source."""
    out = []
    for cls, v in entry.items():
        if cls == "source":
            continue
        if cls not in FP_CLASSES or cls == "fma":
            raise MachineError(
                f"machine file {path}: [{key}] has unknown FP class {cls!r}; the classes are "
                f"{[c for c in FP_CLASSES if c != 'fma']}"
            )
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
            raise MachineError(
                f"machine file {path}: [{key}] {cls} must be a positive number of FMA slots, "
                f"got {v!r}"
            )
        out.append((cls, float(v)))
    return tuple(sorted(out))


_COSTS = {"read": costs}


@dataclass(frozen=True)
class DefaultModelParameters:
    """The parameters of the default model (MODEL.md §11, §12): the FP32 rate,
    the memory's latencies, plateaus and shape, thread turnover, the two
    overlap exponents, the launch costs (of a kernel and of a block), the FP
    cost tables and the many-stream fraction; the plateaus as the model uses them (module
    docstring)."""

    fp32_fma_per_sm_cycle: int
    dram_latency_ns: float
    l2_latency_ns: float
    dram_bw_read: float
    dram_bw_copy: float
    dram_bw_write: float
    # 0 is a valid fit: the DRAM latency does not grow with utilisation
    memory_shape: float = field(metadata=bounds(
        0.0, 100.0, "fits/calibrate_memory.py fits it in [0, 3]"))
    turnover_ns: float
    overlap_exponent: float = field(metadata=bounds(
        1.0, math.inf, "1 adds L1 and memory time, larger values overlap them more"))
    fp_overlap_exponent: float = field(metadata=bounds(
        1.0, math.inf, "1 adds FP and memory time, larger values overlap them more"))
    launch_overhead_us: float
    fp64_cost: tuple[tuple[str, float], ...] = field(metadata=_COSTS)
    fp32_cost: tuple[tuple[str, float], ...] = field(default=(), metadata=_COSTS)
    #: One launch timed alone (MODEL.md §11, "Waves and launch"); None: the
    #: back-to-back ``launch_overhead_us``.
    launch_latency_us: float | None = None
    #: Time an SM takes to launch one block (ns, MODEL.md §11, "Block launch");
    #: None: not measured, no limit.
    block_launch_ns: float | None = field(default=None, metadata=bounds(
        1.0, 10000.0, "the small-kernels table's small blocks give 80 ns on A100 and H200"))
    #: The DRAM's bandwidth with many concurrent streams over the read plateau
    #: (MODEL.md §11, many streams); None: not measured, no correction.
    dram_scattered_fraction: float | None = field(default=None, metadata=bounds(
        0.2, 1.0, "the l2_cache table's DRAM end over the stream table's read plateau, "
        "capped at 1"))


def _finish(values: dict[str, Any], m: Machine) -> dict[str, Any]:
    """The plateaus scaled and checked against the peak (module docstring)."""
    out = dict(values)
    for key in PLATEAUS:
        if key in out:
            out[key] = out[key] * m.stream_scale
            if m.dram_peak and out[key] > m.dram_peak * (1 + 1e-9):
                raise MachineError(
                    f"machine file {m.path}: [latency.{key}] {out[key]:g} GB/s is above "
                    f"[dram_peak] {m.dram_peak:g} GB/s, the data sheet's peak: no memory "
                    "reaches more; lower it or correct the peak")
            out[key] = out[key] * m.dram_scale
    return out


#: The default model's table (:mod:`warpspeed.timing.tables`).
LATENCY_TABLE = ParameterTable(
    "latency", DefaultModelParameters,
    "the default 'latency' model; add them as in warpspeed/machines/V100.toml, or predict "
    "with model='paper' (--model paper)",
    removed=tuple((key, "the default model has no TLB term any more (MODEL.md §11): the "
                   "fitted reach matched no documented TLB and made lattice Boltzmann "
                   "kernels 4x too slow")
                  for key in ("tlb_page_bytes", "tlb_reach_pages", "tlb_penalty")),
    finish=_finish,
)


def require(m: Machine) -> DefaultModelParameters:
    """The parameters of the default model, or a :class:`MachineError` naming
    every one the machine file lacks."""
    p: DefaultModelParameters = tables.require(m, LATENCY_TABLE)
    return p


def given(m: Machine) -> dict[str, Any]:
    """The default model's parameters that ``m``'s file gives, checked (a file
    may give some: the paper model needs none)."""
    return tables.entries(m, LATENCY_TABLE)


__all__ = ["LATENCY_TABLE", "PLATEAUS", "DefaultModelParameters", "costs", "given", "require"]
