"""Measured configurations paired with the model's predictions (MODEL.md §9).

The pieces that validation (:mod:`warpspeed.validation.validate`) and the refit of the
capacity curves (:mod:`warpspeed.validation.refit`) share, so that each imports this
module and neither imports the other:

* :func:`config_key`: the readable, sortable name of a configuration
  (stencil, params, fold, block);
* :func:`train_test_split`: the deterministic train/test rule
  (:data:`SPLIT_METHOD`): configurations sorted by :func:`config_key`, even
  positions train, odd positions test, balanced over the sorted design
  space, so a refit on the train half is judged on the other half;
* :func:`machine_for_device` and :func:`infer_machine`: the built-in
  machine of the GPU that the driver named in the CSV;
* :func:`pair_predictions`: the model's prediction of every measured row,
  the kernel generated again from the row's stencil, parameters and fold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ..errors import MachineError
from ..input.kernel import Kernel
from ..machine import Machine
from ..measure import Measurement, MeasurementError, format_triple, generate_variant
from ..model import Prediction, load_machine, predict
from ..volumes.capacity import CapacityFits, curves_for

SPLIT_METHOD = (
    "configurations sorted by (stencil, params, fold, block); even positions train, "
    "odd positions test"
)


def config_key(m: Measurement) -> str:
    """A readable, sortable name of a configuration."""
    return (
        f"{m.stencil} {m.params} fold {format_triple(m.fold)} block {format_triple(m.block)}"
    )


def train_test_split[T](items: Iterable[T], key: Callable[[T], str]) -> tuple[list[T], list[T]]:
    """(train, test) of ``items`` sorted by ``key`` (the :func:`config_key`
    of each): even positions train, odd positions test (:data:`SPLIT_METHOD`)."""
    ordered = sorted(items, key=key)
    return ordered[0::2], ordered[1::2]


_DEVICES: tuple[tuple[str, str], ...] = (
    # (regular expression on the driver's GPU name, warpspeed machine); first match wins
    (r"\bGH200\b", "GH200"),
    (r"\bH200\b(?!.*NVL)", "H200"),
    (r"\bH100\b.*(HBM3|SXM)", "H100"),
    (r"\bA100\b.*80\s*GB", "A100-80GB"),
    (r"\bA100\b.*40\s*GB", "A100"),
    (r"\bV100\b", "V100"),
)


def machine_for_device(name: str) -> str | None:
    """The built-in machine of a GPU as the driver names it
    (``"NVIDIA H100 80GB HBM3"`` -> ``"H100"``), or ``None`` when none
    describes it (e.g. the H100 PCIe, which has fewer SMs)."""
    for pattern, machine in _DEVICES:
        if re.search(pattern, name, flags=re.IGNORECASE):
            return machine
    return None


def infer_machine(rows: Sequence[Measurement]) -> str:
    """The warpspeed machine of the rows' GPU (all rows must share one)."""
    names = sorted({m.machine for m in rows})
    if len(names) != 1:
        raise MeasurementError(
            f"the measurements come from several GPUs {names}; validate one at a time"
        )
    machine = machine_for_device(names[0])
    if machine is None:
        raise MachineError(
            f"no built-in machine describes {names[0]!r}; give one (a name or a .toml path)"
        )
    return machine


def pair_predictions(
    rows: Sequence[Measurement],
    machine: str | Path | Machine,
    fits: str | Path | CapacityFits | None = None,
    model: str = "paper",
) -> list[tuple[Measurement, Prediction]]:
    """Predict every measured configuration: the kernel is generated again
    from the row's stencil, parameters and fold (once per variant).
    ``model`` defaults to the paper's: the capacity curves are refitted
    against the paper's balance equations (MODEL.md §7, §9), which the
    inversion in :mod:`warpspeed.validation.hit_fractions` assumes."""
    m = load_machine(machine)
    curves = curves_for(m, fits)
    kernels: dict[tuple[str, str, tuple[int, int, int]], Kernel] = {}
    out = []
    for row in rows:
        key = (row.stencil, row.params, row.fold)
        if key not in kernels:
            kernels[key] = generate_variant(row.stencil, row.parameters, row.fold)[0]
        out.append((row, predict(kernels[key], m, row.block, fits=curves, model=model)))
    return out


__all__ = [
    "SPLIT_METHOD",
    "config_key",
    "infer_machine",
    "machine_for_device",
    "pair_predictions",
    "train_test_split",
]
