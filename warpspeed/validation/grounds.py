"""What grounds each machine (MODEL.md §9, §12), and the lattice-Boltzmann
development rows predicted by both models against the streaming bandwidth.

A machine file is grounded by the measurements its numbers come from: the
micro-benchmark tables its sources name (``stream/<gpu>.csv`` ...), and the
kernel measurements of the development sets run on it
(:data:`warpspeed.validation.transfer.DEV_SETS`). Both are read from the files
themselves, not from a list kept beside them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..machine import Machine, machine_files
from ..model import load_machine
from ..timing.latency_parameters import given
from .reference import DevelopmentSet, Predict, Row

#: A micro-benchmark table as sources name it.
TABLE = re.compile(r"\b(stream|latency|l1_cache|l2_cache|roofline|small_kernels|l1_strides)"
                   r"/([a-z0-9_]+)\.csv")


@dataclass(frozen=True)
class Grounding:
    """One machine: its grounding label, the tables its numbers come from
    (``kind/gpu``), and the kernel data sets measured on it."""

    machine: str
    grounding: str
    tables: tuple[str, ...]
    kernel_sets: tuple[str, ...]


def groundings(dev_sets: Sequence[DevelopmentSet] = ()) -> list[Grounding]:
    """Every built-in machine's :class:`Grounding`, with the development sets
    run on it."""
    out = []
    for path in machine_files().values():
        m = load_machine(path)
        sets = tuple(d.name for d in dev_sets if d.machine == m.name)
        out.append(Grounding(m.name, m.grounding, tables_of(m), sets))
    return out


def tables_of(m: Machine) -> tuple[str, ...]:
    """The micro-benchmark tables (``kind/gpu``) the sources of ``m`` name."""
    return tuple(sorted({f"{kind}/{gpu}" for _, src in m.sources
                         for kind, gpu in TABLE.findall(src)}))


def format_groundings(rows: Sequence[Grounding]) -> str:
    lines = ["machine | grounding | micro-benchmark tables | kernel measurements",
             "--- | --- | --- | ---"]
    for g in rows:
        lines.append(f"{g.machine} | {g.grounding} | {', '.join(g.tables) or '-'} | "
                     f"{', '.join(g.kernel_sets) or '-'}")
    return "\n".join(lines)


@dataclass(frozen=True)
class LbmRow:
    """One measured LBM configuration, both models' GLup/s and the fraction of
    the machine's copy bandwidth (``dram_bw_copy``, the stream scale plateau)
    the measurement reaches with the benchmark's bytes per cell."""

    machine: str
    storage: str
    measured: float
    paper: float
    default: float
    stream_fraction: float

    @property
    def ratios(self) -> tuple[float, float]:
        """Predicted / measured GLup/s of the paper and default models."""
        return self.paper / self.measured, self.default / self.measured


def lbm_table(sets: Sequence[tuple[str, Sequence[Row]]],
              predict: Predict) -> list[LbmRow]:
    """``sets``: (machine, rows) of the FluidX3D development sets."""
    from stencils.lbm_fluidx3d import bytes_per_cell

    out = []
    for machine, data in sets:
        m = load_machine(machine)
        paper = predict("paper", data, machine)
        default = predict("latency", data, machine)
        for r, p, d in zip(data, paper, default):
            storage = str(dict(r.params)["storage"])
            copy = given(m).get("dram_bw_copy") or m.dram_bandwidth
            out.append(LbmRow(machine, storage, float(r.glups or 0), p.glups,
                              d.glups, float(r.glups or 0) * bytes_per_cell(storage) / copy))
    return out


def format_lbm(rows: Sequence[LbmRow]) -> str:
    lines = ["machine | storage | measured GLup/s | of stream copy | paper p/m | default p/m",
             "--- | --- | --- | --- | --- | ---"]
    for r in rows:
        pp, dd = r.ratios
        lines.append(f"{r.machine} | {r.storage} | {r.measured:.3f} | "
                     f"{100 * r.stream_fraction:.0f} % | {pp:.2f} | {dd:.2f}")
    return "\n".join(lines)


__all__ = ["Grounding", "LbmRow", "format_groundings", "format_lbm", "groundings", "lbm_table",
           "tables_of"]
