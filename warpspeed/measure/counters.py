"""Counters and times per lattice update (MODEL.md §9): the Nsight Compute
counters of one launch as the per-lattice-update columns of
:data:`~warpspeed.measure.SCHEMA`, GLup/s, and the clocks and versions that
nvidia-smi and CUDA report. Pure: needs no GPU."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from ..input.triples import as_triple
from . import ncu as ncu_mod
from .schema import MeasurementError, Triple

if TYPE_CHECKING:  # the kernel's module needs islpy, which the GPU path must not
    from ..input.kernel import Kernel


def lups_per_launch(kernel: Kernel) -> int:
    """Lattice updates of one launch: valid threads times updates per thread."""
    return math.prod(kernel.domain) * kernel.lups_per_thread


def interior(kernel: Kernel) -> Triple:
    """Interior points per axis: the thread domain times the fold."""
    dom = tuple(kernel.domain) + (1,) * (3 - len(kernel.domain))
    return as_triple(d * f for d, f in zip(dom, kernel.fold))


class Counters(TypedDict):
    """The counter columns of :data:`SCHEMA` per lattice update (volumes in bytes,
    L1 wavefronts) and per launch (ncu's time, clock and occupancy); None where
    ncu printed ``n/a``."""

    dram_load: float | None
    dram_store: float | None
    l2_load: float | None
    l2_store: float | None
    l1_load: float | None
    l1_wavefronts: float | None
    ncu_time_s: float | None
    ncu_sm_clock_mhz: float | None
    achieved_occupancy: float | None


def normalise(values: Mapping[str, float | None], lups: int) -> Counters:
    """Counters of one launch (base units, :mod:`warpspeed.measure.ncu` names) as
    the per-lattice-update columns of :data:`SCHEMA` (MODEL.md §9)."""
    if lups <= 0:
        raise MeasurementError(f"lattice updates per launch must be positive, got {lups}")

    def per(metric: str, factor: float = 1.0) -> float | None:
        v = values.get(metric)
        return None if v is None else v * factor / lups

    def raw(metric: str, factor: float = 1.0) -> float | None:
        v = values.get(metric)
        return None if v is None else v * factor

    sector = ncu_mod.SECTOR_BYTES
    return {
        "dram_load": per(ncu_mod.DRAM_READ),
        "dram_store": per(ncu_mod.DRAM_WRITE),
        "l2_load": per(ncu_mod.L2_READ_SECTORS, sector),
        "l2_store": per(ncu_mod.L2_WRITE_SECTORS, sector),
        "l1_load": per(ncu_mod.L1_LOAD_SECTORS, sector),
        "l1_wavefronts": per(ncu_mod.L1_WAVEFRONTS),
        "ncu_time_s": raw(ncu_mod.DURATION),
        "ncu_sm_clock_mhz": raw(ncu_mod.SM_CLOCK, 1e-6),
        "achieved_occupancy": raw(ncu_mod.OCCUPANCY),
    }


def glups(lups: int, seconds: float) -> float:
    """Performance in GLup/s of ``lups`` lattice updates in ``seconds``."""
    if seconds <= 0:
        raise MeasurementError(f"a kernel time must be positive, got {seconds}")
    return lups / seconds / 1e9


def parse_clock_samples(text: str) -> tuple[float | None, float | None]:
    """Median SM and memory clock (MHz) of ``nvidia-smi
    --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits -lms N``
    output; ``None`` where no sample could be read."""
    sm, mem = [], []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            continue
        try:
            s, m = float(parts[0]), float(parts[1])
        except ValueError:
            continue
        sm.append(s)
        mem.append(m)
    med = statistics.median
    return (med(sm) if sm else None, med(mem) if mem else None)


def parse_smi_identity(text: str) -> tuple[str, str]:
    """``(name, driver)`` of the first GPU in ``nvidia-smi
    --query-gpu=name,driver_version --format=csv,noheader`` output."""
    for line in text.splitlines():
        if "," in line:
            name, _, driver = line.rpartition(",")
            return name.strip(), driver.strip()
    raise MeasurementError(f"cannot read the GPU name from nvidia-smi output: {text!r}")


def cuda_version_string(version: int) -> str:
    """CUDA's integer version (12040) as text ("12.4")."""
    return f"{version // 1000}.{(version % 1000) // 10}"
