"""The error bands a prediction quotes (MODEL.md §14, "Grounding and error
band"; read back by :mod:`warpspeed.timing.evidence`): every development row,
grouped by its machine's grounding and vendor, the kernel class of its
prediction (the binding limiter) and the timing model.

A row's ratio is its predicted over measured GLup/s as the shipped files
predict it, except where a memory system's constant was fitted on that very
GPU: there the ratio with the constant fitted on the other GPUs
(:func:`warpspeed.validation.memory_fit.leave_one_gpu_out`) is used, so that a
band is not narrowed by a fit to itself. The V100 and A100 sets carry the L1
exponent fitted jointly on them (their machines are the kernel-validated
ones: those sets are their evidence).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..model import load_machine
from ..timing.evidence import PHRASES, kernel_class
from .reference import DevelopmentSet, Predict


@dataclass(frozen=True)
class Sample:
    """One development row: model, grounding phrase, vendor, kernel class, GPU,
    set, ratio."""

    model: str
    grounding: str
    vendor: str
    kernel_class: str
    gpu: str
    dataset: str
    ratio: float


@dataclass(frozen=True)
class Band:
    """The error of one (model, grounding, vendor, kernel class) group (module
    docstring)."""

    model: str
    grounding: str
    vendor: str
    kernel_class: str
    rows: int
    gpus: tuple[str, ...]
    datasets: tuple[str, ...]
    low: float
    high: float
    median: float
    mape: float


def samples(sets: Sequence[DevelopmentSet], predict: Predict,
            left_out: Mapping[str, Mapping[tuple[str, str], float]] | None = None
            ) -> list[Sample]:
    """The :class:`Sample` of every timed row of ``sets`` (objects with
    ``name``, ``machine`` and ``load()``, the development sets), both models.
    ``left_out``: per model, (GPU, storage) -> leave-one-GPU-out ratio of LBM
    rows (the default model's memory-system constants, MODEL.md §11)."""
    out = []
    for dev in sets:
        data = [r for r in dev.load() if r.glups]
        gpu = dev.machine
        machine = load_machine(gpu)
        phrase = PHRASES.get(machine.grounding, "data sheet")
        for model in ("latency", "paper"):
            ratios = (left_out or {}).get(model, {})
            for r, p in zip(data, predict(model, data, gpu)):
                ratio = p.glups / float(r.timed_glups())
                storage = dict(r.params).get("storage")
                if isinstance(storage, str) and (gpu, storage) in ratios:
                    ratio = ratios[(gpu, storage)]
                out.append(Sample(model, phrase, machine.vendor, kernel_class(p.limiter),
                                  gpu, dev.name, float(ratio)))
    return out


def bands(rows: Sequence[Sample]) -> list[Band]:
    """One :class:`Band` per (model, grounding, vendor, kernel class) with rows."""
    groups: dict[tuple[str, str, str, str], list[Sample]] = {}
    for s in rows:
        groups.setdefault((s.model, s.grounding, s.vendor, s.kernel_class), []).append(s)
    out = []
    for (model, grounding, vendor, cls), group in sorted(groups.items()):
        r = np.array([s.ratio for s in group])
        out.append(Band(model, grounding, vendor, cls, len(group),
                        tuple(dict.fromkeys(s.gpu for s in group)),
                        tuple(dict.fromkeys(s.dataset for s in group)),
                        float(np.percentile(r, 10)), float(np.percentile(r, 90)),
                        float(np.median(r)), float(np.mean(np.abs(r - 1.0)))))
    return out


def as_records(found: Sequence[Band]) -> list[dict[str, object]]:
    """The bands as JSON records (``ACCURACY.json``'s ``evidence``)."""
    return [asdict(b) for b in found]


__all__ = ["Band", "Sample", "as_records", "bands", "samples"]
