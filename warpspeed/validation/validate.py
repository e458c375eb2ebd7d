"""Validation of predictions against measurements (MODEL.md §9, and the
paper's evaluation criteria restated in §10).

From measured configurations (:mod:`warpspeed.measure` CSV rows) and the
model's predictions of the same configurations, per stencil (a stencil
module with one set of parameters) and over all rows:

* **MAPE** per quantity, ``100 * mean(|predicted - measured| / measured)``
  over the rows where the quantity was measured (and is not zero):

  ==============  ==========================  ===================================
  quantity        predicted                   measured
  ==============  ==========================  ===================================
  ``dram_load``   ``volumes.dram_load`` (V3)  ``dram_load`` (B/Lup)
  ``dram_store``  ``volumes.dram_store``      ``dram_store``
  ``l2_load``     ``volumes.l2_load``         ``l2_load``
  ``l2_store``    ``volumes.l2_store``        ``l2_store``
  ``l1_cycles``   ``l1_cycles`` (per warp     ``l1_wavefronts * warp_size``
                  and lattice update)
  ``glups``       ``glups``                   ``glups``
  ==============  ==========================  ===================================

* the **Spearman rank correlation** of predicted and measured GLup/s
  (:func:`scipy.stats.spearmanr`; ``None`` with fewer than two rows or a
  constant side);
* the **median ratio**: the median of predicted over measured GLup/s (1.0:
  neither high nor low on the whole);
* the **best fraction** (top-1): the measured GLup/s of the configuration the
  model ranks first, divided by the best measured GLup/s (1.0: the model found
  the best; the paper reports 0.96 for its A100 stencil). Ties among the
  predicted best go to the first row in (fold, block) order.

Rows are grouped by their set, the ``note`` column's ``set NAME`` (as the
harness's runs write it), else by kernel and parameters.

``subset`` selects the train or test half with the deterministic rule of
:func:`warpspeed.validation.pairing.train_test_split` (configurations sorted by
stencil, params, fold and block; even positions train, odd positions test),
the rule :mod:`warpspeed.validation.refit` fits by, so a refit on the train half is
judged on the other half. Pairing rows with predictions and inferring the
machine from the GPU name are :mod:`warpspeed.validation.pairing`'s (re-exported here).
"""

from __future__ import annotations

import json as _json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict

from ..machine import Machine
from ..measure import Measurement, MeasurementError, format_triple, read_csv
from ..model import Prediction, load_machine
from ..search.ties import first_choice
from ..timing import DEFAULT_MODEL
from ..volumes.capacity import curves_for
from .pairing import (
    config_key,
    infer_machine,
    machine_for_device,
    pair_predictions,
    train_test_split,
)

QUANTITIES = ("dram_load", "dram_store", "l2_load", "l2_store", "l1_cycles", "glups")
SUBSETS = ("all", "train", "test")


def predicted_value(p: Prediction, quantity: str) -> float | None:
    """The model's value of ``quantity`` (table in the module doc)."""
    if quantity == "l1_cycles":
        return p.l1_cycles
    if quantity == "glups":
        return p.glups
    return float(getattr(p.volumes, quantity))


def measured_value(m: Measurement, quantity: str, warp_size: int = 32) -> float | None:
    """The measured value of ``quantity`` (``None`` if not measured)."""
    if quantity == "l1_cycles":
        return None if m.l1_wavefronts is None else m.l1_wavefronts * warp_size
    return getattr(m, quantity)


def mape(predicted: Sequence[float | None], measured: Sequence[float | None]) -> float | None:
    """Mean absolute percentage error over the pairs where both values
    exist and the measured one is not zero; ``None`` if there is none."""
    errs = [
        abs(p - m) / abs(m)
        for p, m in zip(predicted, measured, strict=True)
        if p is not None and m is not None and m != 0
    ]
    return 100.0 * sum(errs) / len(errs) if errs else None


def spearman(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Spearman's rank correlation; ``None`` when it is undefined (fewer
    than two pairs, or one side constant)."""
    from scipy.stats import spearmanr

    if len(predicted) != len(measured):
        raise ValueError("predicted and measured differ in length")
    if len(predicted) < 2 or len(set(predicted)) < 2 or len(set(measured)) < 2:
        return None
    return float(spearmanr(predicted, measured).statistic)


def best_fraction(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Measured performance of the predicted-best configuration as a
    fraction of the measured best (ties: the first predicted best)."""
    if not predicted or len(predicted) != len(measured):
        return None
    best_pred = max(range(len(predicted)), key=lambda i: (predicted[i], -i))
    top = max(measured)
    return measured[best_pred] / top if top > 0 else None


@dataclass(frozen=True)
class GroupReport:
    """Validation of one stencil (or of all rows: ``name == "all"``)."""

    name: str
    rows: int
    mape: dict[str, float | None]
    measured: dict[str, int]
    spearman: float | None
    best_fraction: float | None
    predicted_best: str
    measured_best: str
    median_ratio: float | None = None


@dataclass(frozen=True)
class Report:
    """The validation report: per stencil, and overall."""

    machine: str
    fits: str
    subset: str
    groups: tuple[GroupReport, ...]
    overall: GroupReport
    #: The timing model whose predictions were compared ("" when not said).
    model: str = ""

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _label(m: Measurement) -> str:
    """The group of a row: its set (``note`` ``set NAME``), else kernel and parameters."""
    head = m.note.split(";")[0].strip()
    return head[4:] if head.startswith("set ") else f"{m.kernel} {m.params}"


def _config(m: Measurement) -> str:
    return f"fold {format_triple(m.fold)} block {format_triple(m.block)}"


def group_report(
    name: str, pairs: Sequence[tuple[Measurement, Prediction]], warp_size: int = 32
) -> GroupReport:
    """MAPE per quantity, Spearman and best fraction of ``pairs``; the
    rank metrics are only meaningful within one stencil."""
    ordered = sorted(pairs, key=lambda mp: (mp[0].fold, mp[0].block))
    errs, counts = {}, {}
    for q in QUANTITIES:
        pred = [predicted_value(p, q) for _, p in ordered]
        meas = [measured_value(m, q, warp_size) for m, _ in ordered]
        errs[q] = mape(pred, meas)
        counts[q] = sum(1 for v in meas if v is not None)
    pg = [p.glups for _, p in ordered]
    mg = [m.glups for m, _ in ordered]
    bp = first_choice([p for _, p in ordered]) if pg else None  # the ranking's first
    bm = max(range(len(mg)), key=lambda i: (mg[i], -i)) if mg else None
    return GroupReport(
        name=name,
        rows=len(ordered),
        mape=errs,
        measured=counts,
        spearman=spearman(pg, mg),
        best_fraction=(mg[bp] / max(mg) if bp is not None and max(mg) > 0 else None),
        predicted_best=_config(ordered[bp][0]) if bp is not None else "",
        measured_best=_config(ordered[bm][0]) if bm is not None else "",
        median_ratio=(statistics.median(p / m for p, m in zip(pg, mg) if m > 0)
                      if any(m > 0 for m in mg) else None),
    )


def select_subset(
    pairs: Sequence[tuple[Measurement, Prediction]], subset: str
) -> list[tuple[Measurement, Prediction]]:
    """The pairs of the train or test half (module doc), or all of them."""
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    if subset == "all":
        return sorted(pairs, key=lambda mp: config_key(mp[0]))
    train, test = train_test_split(pairs, key=lambda mp: config_key(mp[0]))
    return train if subset == "train" else test


def report(
    pairs: Sequence[tuple[Measurement, Prediction]],
    machine: str = "",
    fits: str = "",
    subset: str = "all",
    warp_size: int = 32,
    model: str = "",
) -> Report:
    """The validation :class:`Report` of measured/predicted pairs."""
    chosen = select_subset(pairs, subset)
    if not chosen:
        raise MeasurementError("no measured configurations to validate")
    groups: dict[str, list[tuple[Measurement, Prediction]]] = {}
    for mp in chosen:
        groups.setdefault(_label(mp[0]), []).append(mp)
    return Report(
        machine=machine,
        fits=fits,
        subset=subset,
        groups=tuple(group_report(n, g, warp_size) for n, g in sorted(groups.items())),
        overall=group_report("all", chosen, warp_size),
        model=model,
    )


# ---------------------------------------------------------------- report as text, from a CSV


def _fmt(v: float | None, digits: int = 1, pct: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}f}{'%' if pct else ''}"


def format_report(r: Report) -> str:
    """A plain-text rendering of a :class:`Report`."""
    lines = [
        f"validation on {r.machine} with fits {r.fits} ({r.subset} configurations"
        + (f", {r.model} model)" if r.model else ")"),
        "MAPE per quantity; Spearman of GLup/s; median = median predicted / measured GLup/s;"
        " top-1 = measured GLup/s of the predicted best / measured best",
    ]
    head = ["set", "rows", *QUANTITIES, "spearman", "median", "top-1"]
    body = []
    for g in (*r.groups, r.overall):
        body.append(
            [g.name, str(g.rows), *(_fmt(g.mape[q], 1, True) for q in QUANTITIES),
             _fmt(g.spearman, 2), _fmt(g.median_ratio, 3), _fmt(g.best_fraction, 3)]
        )
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in body]
    for g in r.groups:
        lines.append(
            f"{g.name}: predicted best {g.predicted_best}, measured best {g.measured_best}"
        )
    return "\n".join(lines)


def validate_command(
    csv_path: str | Path,
    machine: str | None = None,
    fits: str | None = None,
    json: bool = False,
    subset: str = "all",
    predictor: Callable[..., list[tuple[Measurement, Prediction]]] | None = None,
    model: str = DEFAULT_MODEL,
) -> str:
    """``warpspeed validate CSV``: the report as text (or JSON with
    ``json=True``) for the timing model ``model`` (the default model unless
    told). ``machine`` defaults to the built-in machine of the
    CSV's GPU, ``fits`` to the machine's. Raises a
    :class:`warpspeed.WarpspeedError` for bad input (no file, no rows,
    unknown GPU)."""
    rows = read_csv(csv_path)
    if not rows:
        raise MeasurementError(f"{csv_path} holds no measurements")
    m = load_machine(machine or infer_machine(rows))
    curves = curves_for(m, fits)
    pairs = (pair_predictions(rows, m, curves, model=model) if predictor is None
             else predictor(rows, m, curves))
    fits_name = Path(curves.path).stem if curves.path else str(fits or m.fits)
    r = report(pairs, machine=m.name, fits=fits_name, subset=subset, warp_size=m.warp_size,
               model=model)
    grounds = machine_grounding(m)
    if json:
        return _json.dumps({**r.to_dict(), "machine_grounding": grounds}, indent=2)
    tables = ", ".join(grounds["tables"]) or "none"
    sets = ", ".join(grounds["kernel_sets"]) or "none"
    return (format_report(r) + f"\n\n{m.name} is grounded by {grounds['grounding']}: "
            f"micro-benchmark tables {tables}; kernel measurements {sets}.")


class MachineGrounding(TypedDict):
    """What grounds a machine (:func:`machine_grounding`)."""

    grounding: str
    tables: list[str]
    kernel_sets: list[str]


def machine_grounding(m: Machine) -> MachineGrounding:
    """What grounds machine ``m`` (:mod:`warpspeed.validation.grounds`): its
    label, the micro-benchmark tables its sources name, the development sets
    measured on it."""
    from .grounds import tables_of
    from .transfer import DEV_SETS

    return {"grounding": m.grounding, "tables": list(tables_of(m)),
            "kernel_sets": [d.name for d in DEV_SETS if d.machine == m.name]}


__all__ = [
    "QUANTITIES",
    "GroupReport",
    "Report",
    "best_fraction",
    "format_report",
    "group_report",
    "infer_machine",
    "machine_for_device",
    "machine_grounding",
    "mape",
    "measured_value",
    "pair_predictions",
    "predicted_value",
    "report",
    "select_subset",
    "spearman",
    "validate_command",
]
