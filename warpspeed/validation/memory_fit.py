"""The memory systems' fitted constants (MODEL.md §11, "Memory systems"):
the joint fit on the lattice Boltzmann development rows of every GPU of a
kind, and the leave-one-GPU-out check.

Each kind of memory system has at most one constant that no micro-benchmark
measures (:class:`warpspeed.timing.memory_systems.Constants`): ECC on GDDR
(``ecc_per_byte``), HBM (``hbm_activate_ns``) and AMD's GDDR behind
an Infinity Cache (``amd_gddr_per_byte``). A kind's constant is fitted on the rows of the
GPUs of that kind only (both storage columns of FluidX3D's D3Q19 table),
minimising the mean squared log of predicted over measured GLup/s, so that
too fast and too slow weigh alike. :func:`leave_one_gpu_out` fits it on the
other GPUs of its kind and scores the one left out; a GPU whose kind has no
constant is scored as it stands. The fit works on the model's terms
(:func:`warpspeed.timing.latency.glups_with_efficiency`): a row costs one
prediction however many values are tried.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from ..machine import Machine
from ..model import load_machine
from ..timing.latency import glups_with_efficiency
from ..timing.memory_systems import FITTED, Constants, memory_system, stream_efficiency
from .reference import Predict, lbm_gpus, lbm_rows, predictions

if TYPE_CHECKING:
    from ..model import Prediction

#: Bounds of each fitted constant (:class:`warpspeed.timing.memory_systems.Constants`).
BOUNDS: dict[str, tuple[float, float]] = {
    "ecc_per_byte": (0.0, 2.0),
    "hbm_activate_ns": (0.0, 50.0),
    "amd_gddr_per_byte": (0.0, 3.0),
}


def constant_of(m: Machine) -> str | None:
    """The fitted constant acting on ``m``'s memory system, if any."""
    if not m.memory:
        return None
    hbm = m.memory.startswith("HBM")
    if hbm:
        return "hbm_activate_ns"
    if m.family.memory_system == "amd":
        return "amd_gddr_per_byte"
    return "ecc_per_byte" if m.ecc else None


@dataclass(frozen=True)
class GpuRows:
    """One GPU's measured rows with the model's terms and volumes."""

    gpu: str
    machine: Machine
    storages: tuple[str, ...]
    predictions: tuple[Prediction, ...]
    measured: tuple[float, ...]

    def ratios(self, name: str | None = None, value: float | None = None) -> np.ndarray:
        """Predicted over measured GLup/s, with constant ``name`` at ``value``
        (None: as the code carries it)."""
        out = []
        for p, meas in zip(self.predictions, self.measured):
            if name is None:
                out.append(p.glups / meas)
                continue
            a = p.traits
            assert value is not None  # given with its name
            c = replace(FITTED, **{name: float(value)})
            e = stream_efficiency(a.dram_streams, self.machine, a.dram_access_bytes, c,
                                  run_bytes=a.dram_run_bytes, split_share=a.dram_split_share)
            out.append(glups_with_efficiency(p.terms, self.machine, p.volumes, e) / meas)
        return np.array(out)


def load(predict: Predict = predictions, gpus: Sequence[str] | None = None) -> list[GpuRows]:
    """Every GPU of the lattice Boltzmann table with the default model's
    predictions of its rows."""
    out = []
    for gpu in gpus or lbm_gpus():
        data = lbm_rows(gpu)
        preds = predict("latency", data, gpu)
        storages = tuple(str(dict(r.params)["storage"]) for r in data)
        out.append(GpuRows(gpu, load_machine(gpu), storages, tuple(preds),
                           tuple(float(r.timed_glups()) for r in data)))
    return out


def _loss(rows: Sequence[GpuRows], name: str, value: float) -> float:
    return float(sum(np.sum(np.log(g.ratios(name, value)) ** 2) for g in rows))


def fit(rows: Sequence[GpuRows], name: str) -> float:
    """Constant ``name`` minimising the squared log ratios of the GPUs of
    its kind among ``rows`` (module docstring)."""
    from scipy.optimize import minimize_scalar

    mine = [g for g in rows if constant_of(g.machine) == name]
    if not mine:
        raise ValueError(f"no development GPU has the memory system of {name}")
    low, high = BOUNDS[name]
    res = minimize_scalar(lambda x: _loss(mine, name, x), bounds=(low, high), method="bounded",
                          options={"xatol": 1e-4})
    return float(res.x)


def fit_all(rows: Sequence[GpuRows]) -> dict[str, float]:
    """Every constant fitted on all its GPUs."""
    return {name: fit(rows, name) for name in BOUNDS}


@dataclass(frozen=True)
class LeftOut:
    """One GPU predicted with its kind's constant fitted on the others."""

    gpu: str
    memory_system: str
    constant: str | None
    value: float | None
    storages: tuple[str, ...]
    ratios: tuple[float, ...]
    shipped: tuple[float, ...]


def leave_one_gpu_out(rows: Sequence[GpuRows]) -> list[LeftOut]:
    """Each GPU scored with its kind's constant fitted on the other GPUs of
    that kind (module docstring); ``shipped``: with the code's constants."""
    out = []
    for g in rows:
        name = constant_of(g.machine)
        kind = memory_system(g.machine)
        shipped = tuple(float(x) for x in g.ratios())
        if name is None:
            out.append(LeftOut(g.gpu, kind.name if kind else "-", None, None, g.storages,
                               shipped, shipped))
            continue
        others = [h for h in rows if h.gpu != g.gpu]
        value = fit(others, name) if any(constant_of(h.machine) == name for h in others) else None
        ratios = tuple(float(x) for x in g.ratios(name, value)) if value is not None else ()
        out.append(LeftOut(g.gpu, kind.name if kind else "-", name, value, g.storages, ratios,
                           shipped))
    return out


def format_left_out(table: Sequence[LeftOut], fitted: Mapping[str, float]) -> str:
    """The leave-one-GPU-out table as Markdown, with the joint values."""
    lines = ["| GPU | memory system | constant fitted on the other GPUs | "
             "FP32 pred/meas | FP16S pred/meas | with the shipped constants |",
             "|---|---|---|---|---|---|"]
    for r in table:
        const = "-" if r.constant is None else f"{r.constant} = {r.value:.3g}"
        left = dict(zip(r.storages, r.ratios))
        ship = ", ".join(f"{x:.2f}" for x in r.shipped)
        lines.append(f"| {r.gpu} | {r.memory_system} | {const} | "
                     f"{left.get('fp32', float('nan')):.2f} | "
                     f"{left.get('fp16s', float('nan')):.2f} | {ship} |")
    joint = ", ".join(f"{k} = {v:.3g}" for k, v in fitted.items())
    return "\n".join(lines) + f"\n\nFitted on all GPUs of their kind: {joint}."


__all__ = ["BOUNDS", "Constants", "GpuRows", "LeftOut", "constant_of", "fit", "fit_all",
           "format_left_out", "leave_one_gpu_out", "load"]
