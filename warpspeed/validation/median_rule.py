"""The median rule of a calibration on kernel measurements (MODEL.md §12,
grounding "kernels"; :mod:`.kernel_calibrate` fits the figures with it): the
measured rows with their block stage and wave sets, the predictions of those
rows with a machine's figures, which rows a figure determines, and the
bisection that fits it.

* **Rows** (:class:`Row`, :func:`prepare`): the block stage and wave sets of
  every row are counted once, with the base machine; the fitted figures are
  read only by the timing (:func:`warpspeed.model.finish`), so
  :func:`predict_rows` predicts the rows again with each machine tried.
* **Median ratio** (:func:`median_ratio`): the median of predicted over
  measured GLup/s of the rows; the rule weighs every row alike.
* **Sensitive rows** (:func:`sensitive`, :func:`sensitive_to`): the rows
  whose predicted GLup/s moves by more than :data:`SENSITIVE` when the
  figure is halved, the rows whose prediction depends on it. The value the
  model uses for a figure is :func:`current` (a launch timed alone,
  ``launch_latency_us``, is the back-to-back overhead where the file has not
  measured it: MODEL.md §11, "Waves and launch").
* **Disagreement** (:func:`disagreement`): the rows' sets disagree when one
  set's median ratio lies above 1 + :data:`AGREE` and another's below
  1 - :data:`AGREE`: then no value brings both nearer 1, and the figure is
  carried.
* **Bisection** (:func:`bisect`, :func:`bisect_factor`): bisection of the
  figure's logarithm within a factor 8 of the base value (and the loader's
  range), until the median ratio is within 1e-4 of 1; a figure whose range
  does not bracket 1 stays at the nearer end, and the note says so, in its
  source. Several parameters scaled by one factor (the saturated DRAM
  plateaus) are bisected on the factor.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..machine import Machine
from ..measure import Measurement, generate_variant
from ..model import BlockStage, Prediction, block_stage, finish
from ..timing import DEFAULT_MODEL, MODELS, parameter, parameter_range
from ..timing import with_values as timing_values
from ..timing.latency import launch_us
from ..volumes.capacity import CapacityFits
from ..volumes.waves import WaveVolumes, wave_volumes
from .measured_sets import set_of

#: A row's prediction depends on a figure when halving it moves the GLup/s by more.
SENSITIVE = 0.02
#: Sets whose median ratios lie beyond 1 +- this on both sides disagree.
AGREE = 0.02


@dataclass(frozen=True)
class Row:
    """A measured configuration with its block stage and wave sets."""

    measured: Measurement
    stage: BlockStage
    wave: WaveVolumes


def prepare(rows: Sequence[Measurement], m: Machine, model: str = DEFAULT_MODEL) -> list[Row]:
    """Every row's block stage and wave sets on ``m`` (kernels generated
    once per stencil, parameters and fold)."""
    spec = MODELS[model]
    kernels = {}
    out = []
    for r in rows:
        key = (r.stencil, r.params, r.fold)
        if key not in kernels:
            kernels[key] = generate_variant(r.stencil, r.parameters, r.fold)[0]
        stage = block_stage(kernels[key], m, r.block)
        out.append(Row(r, stage, wave_volumes(kernels[key], stage.launch, stage.bound,
                                              address=spec.address)))
    return out


def with_values(m: Machine, values: Mapping[str, float | None]) -> Machine:
    """``m`` with these parameters set (names of :func:`fittable`), each
    where the models read it (:func:`warpspeed.timing.with_values`)."""
    return timing_values(m, values)


def predict_rows(rows: Sequence[Row], m: Machine, curves: CapacityFits,
                 model: str = DEFAULT_MODEL) -> list[Prediction]:
    """The prediction of every row with the figures of ``m``."""
    return [finish(replace(r.stage, machine=m), r.wave, curves, model) for r in rows]


def median_ratio(rows: Sequence[Row], m: Machine, curves: CapacityFits, model: str) -> float:
    """Median of predicted over measured GLup/s."""
    preds = predict_rows(rows, m, curves, model)
    return statistics.median(p.glups / r.measured.glups for p, r in zip(preds, rows))


def set_name(m: Measurement) -> str:
    """The set a row belongs to: the ``note``'s ``set NAME``, else its kernel
    and parameters."""
    return set_of(m) or f"{m.kernel} {m.params}"


def bisect(rows: Sequence[Row], m: Machine, name: str, curves: CapacityFits, model: str,
           ) -> tuple[float, str]:
    """The value of ``name`` that makes the median ratio of ``rows`` 1, and
    a note when the range does not bracket it (module docstring)."""
    v0 = float(current(m, name) or 0.0)
    lo_lim, hi_lim = parameter_range(name)
    span = (max(1 / 8, lo_lim / v0), min(8.0, hi_lim / v0))
    k, note = bisect_factor(rows, m, {name: v0}, curves, model, span)
    return k * v0, note


def bisect_factor(rows: Sequence[Row], m: Machine, base: Mapping[str, float],
                  curves: CapacityFits, model: str, span: tuple[float, float] = (1 / 8, 8.0)
                  ) -> tuple[float, str]:
    """The factor on the values ``base`` (within ``span``) that makes the
    median ratio of ``rows`` 1, by bisection of its logarithm, and a note
    when the span does not bracket it (module docstring)."""
    def f(k: float) -> float:
        scaled = {n: k * v for n, v in base.items()}
        return math.log(median_ratio(rows, with_values(m, scaled), curves, model))

    lo, hi = span
    f_lo, f_hi = f(lo), f(hi)
    if f_lo * f_hi > 0:
        end = lo if abs(f_lo) < abs(f_hi) else hi
        ends = ", ".join(f"{n} [{lo * v:g}, {hi * v:g}]" for n, v in base.items())
        return end, (f"; the median ratio is {math.exp(f(end)):.3f} at the end of the range "
                     f"({ends}), so the figure stays there")
    a, b, fa = math.log(lo), math.log(hi), f_lo
    for _ in range(60):
        mid = (a + b) / 2
        fm = f(math.exp(mid))
        if abs(fm) < 1e-4:
            return math.exp(mid), ""
        if (fm < 0) == (fa < 0):
            a, fa = mid, fm
        else:
            b = mid
    return math.exp((a + b) / 2), ""


def current(m: Machine, name: str) -> float | None:
    """The value the model uses for ``name``: a launch timed alone
    (``launch_latency_us``) is the back-to-back overhead where the file has
    not measured it (MODEL.md §11, "Waves and launch")."""
    value = parameter(m, name)
    if value is None and name == "launch_latency_us":
        return launch_us(m)  # the timing model's own fallback
    return value


def sensitive(rows: Sequence[Row], m: Machine, name: str, curves: CapacityFits,
              model: str) -> list[Row]:
    """The rows whose predicted GLup/s moves by more than :data:`SENSITIVE`
    when ``name`` is halved."""
    return sensitive_to(rows, m, {name: 0.5}, curves, model)


def sensitive_to(rows: Sequence[Row], m: Machine, factors: Mapping[str, float],
                 curves: CapacityFits, model: str,
                 keep: Callable[[Prediction], bool] = lambda p: True) -> list[Row]:
    """The rows whose prediction ``keep`` accepts and whose predicted GLup/s
    moves by more than :data:`SENSITIVE` when each parameter of ``factors``
    is multiplied by its factor."""
    kept = [(r, p) for r, p in zip(rows, predict_rows(rows, m, curves, model)) if keep(p)]
    moved = with_values(m, {n: float(current(m, n) or 0.0) * k for n, k in factors.items()})
    changed = predict_rows([r for r, _ in kept], moved, curves, model)
    return [r for (r, a), b in zip(kept, changed) if abs(b.glups / a.glups - 1) > SENSITIVE]


def disagreement(rows: Sequence[Row], m: Machine, curves: CapacityFits, model: str) -> str:
    """Which sets of ``rows`` lie above and which below 1 by more than
    :data:`AGREE` (median predicted over measured GLup/s): one figure cannot
    bring both nearer 1. Empty when they agree."""
    ratios: dict[str, list[float]] = {}
    for r, p in zip(rows, predict_rows(rows, m, curves, model)):
        ratios.setdefault(set_name(r.measured), []).append(p.glups / r.measured.glups)
    med = {k: statistics.median(v) for k, v in sorted(ratios.items())}
    high = [f"{k} {v:.3f}" for k, v in med.items() if v > 1 + AGREE]
    low = [f"{k} {v:.3f}" for k, v in med.items() if v < 1 - AGREE]
    if high and low:
        return (f"{', '.join(high)} above 1, {', '.join(low)} below (median predicted / "
                "measured), which no one value brings both nearer 1")
    return ""


__all__ = [
    "AGREE",
    "SENSITIVE",
    "Row",
    "bisect",
    "bisect_factor",
    "current",
    "disagreement",
    "median_ratio",
    "predict_rows",
    "prepare",
    "sensitive",
    "sensitive_to",
    "set_name",
    "with_values",
]
