"""What accuracy to expect where a number is read (MODEL.md §9, §10, §14):
the validation figures of the prediction's regime and whether any kernel was
measured on its GPU, quoted by ``explain`` and :func:`warpspeed.advise`.

The figures are those ``warpspeed/ACCURACY.json`` records
(``fits/accuracy_report.py``): every development set scored with the
exponent its machine file carries (the default model as a user runs it) or
with the paper model, and per machine the kernel sets measured on it.
Nothing here is typed by hand but which sets belong to which regime.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from ..model import Prediction
from ..timing import timing_model
from ..timing.evidence import class_rows

#: The validation figures shipped with the package (``fits/accuracy_report.py``).
ACCURACY_JSON = Path(__file__).resolve().parents[1] / "ACCURACY.json"
#: Development sets whose every row is L1-bound in both models (MODEL.md §10).
L1_BOUND_SETS = ("box2d_r7", "convolution_15x15")
#: Development sets by the regime their rows are in (MODEL.md §9): the
#: radius-4 star is DRAM-bound but for two L2-bound rows, the FluidX3D
#: lattice Boltzmann kernels DRAM-bound. No set is L2- or FP-bound.
REGIME_SETS: dict[str, tuple[str, ...]] = {
    "l1": L1_BOUND_SETS,
    "dram": ("star3d_r4", "fluidx3d_d3q19_A40", "fluidx3d_d3q19_MI100"),
    "l2": (),
    "fp": (),
}
REGIME_NAME = {"l1": "L1", "l2": "L2", "dram": "DRAM", "fp": "FP", "partial wave": "partial-wave"}


@dataclass(frozen=True)
class SetFigure:
    """One development set's scores as ``ACCURACY.json`` records them."""

    dataset: str
    rows: int
    median_ratio: float
    mape: float | None
    spearman: float | None


@functools.cache
def _accuracy() -> dict:
    try:
        data = json.loads(ACCURACY_JSON.read_text())["validation"]
    except (OSError, KeyError, TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def set_figures(model: str, sets: tuple[str, ...]) -> tuple[SetFigure, ...]:
    """The scores of ``sets`` for ``model`` (its table of ``ACCURACY.json``,
    :attr:`warpspeed.timing.base.Timing.accuracy_table`: the paper model's,
    or the default model's with the machine files' exponent); empty where
    ``ACCURACY.json`` is missing or lacks them, or the model was not
    validated."""
    table = _accuracy().get("leave_one_set_out", {})
    entries = table.get(timing_model(model).accuracy_table, [])
    out = []
    for e in entries:
        if e.get("dataset") in sets and e.get("median_ratio") is not None:
            out.append(SetFigure(e["dataset"], int(e.get("rows", 0)), float(e["median_ratio"]),
                                 e.get("mape"), e.get("spearman")))
    return tuple(out)


def l1_bound_scores(model: str) -> tuple[tuple[str, float, float], ...]:
    """(set, median predicted/measured, Spearman) of ``model`` on the
    L1-bound development sets (:func:`set_figures`)."""
    return tuple((f.dataset, f.median_ratio, float(f.spearman))
                 for f in set_figures(model, L1_BOUND_SETS) if f.spearman is not None)


def kernel_sets_on(machine: str) -> tuple[str, ...] | None:
    """The kernel measurement sets run on ``machine`` (None: unknown, e.g.
    a user's machine file or no ``ACCURACY.json``)."""
    for m in _accuracy().get("machines", []):
        if m.get("machine") == machine:
            return tuple(m.get("kernel_sets", ()))
    return None


def _figure(f: SetFigure) -> str:
    extra = f", MAPE {100 * f.mape:.0f} %" if f.mape is not None else ""
    return f"{f.dataset} {f.median_ratio:.2f}x ({f.rows} rows{extra})"


def _no_set(p: Prediction, regime: str) -> str:
    """What measured evidence a regime that no development set is in as a
    whole has: the rows of other sets predicted in it (the error band
    :mod:`warpspeed.timing.evidence` quotes), or none."""
    rows, sets = class_rows(p.limiter, p.model)
    if not rows:
        return (f"no development set is {regime}-bound, so this regime has no measured "
                "evidence; the figures in warpspeed/ACCURACY.md are for DRAM- and L1-bound "
                "kernels")
    return (f"no development set is {regime}-bound as a whole, but {rows} of their rows are "
            f"predicted {regime}-bound ({', '.join(sets)}); the error band quoted with the "
            "machine's grounding is measured on those of machines like this one")


def expected_accuracy(p: Prediction) -> str | None:
    """One sentence: the figures of ``p``'s regime and what was measured on
    its GPU; None when ``ACCURACY.json`` is unreadable. The L1 regime is
    quoted by the ``l1_validation`` hint of :mod:`warpspeed.reports.advice`
    instead."""
    if not _accuracy() or p.limiter == "l1":
        return None
    regime = REGIME_NAME.get(p.limiter, p.limiter)
    figures = set_figures(p.model, REGIME_SETS.get(p.limiter, ()))
    if figures:
        text = (f"on the {regime}-bound development sets this model "
                f"predicts, in the median, {', '.join(_figure(f) for f in figures)} of the "
                "measured GLup/s")
    elif timing_model(p.model).accuracy_table is None:
        text = (f"the {p.model} model was not validated (no table of warpspeed/ACCURACY.json "
                "holds its scores), so no measurement backs this figure")
    else:
        text = _no_set(p, regime)
    sets = kernel_sets_on(p.machine)
    if sets == ():
        text += (f"; no kernel was measured on {p.machine} (its machine file rests on "
                 "micro-benchmarks or data sheets, `warpspeed machines`)")
    elif sets:
        text += f"; kernels measured on {p.machine}: {', '.join(sets)}"
    return text + " (warpspeed/ACCURACY.md)"


__all__ = ["ACCURACY_JSON", "L1_BOUND_SETS", "REGIME_SETS", "SetFigure", "expected_accuracy",
           "kernel_sets_on", "l1_bound_scores", "set_figures"]
