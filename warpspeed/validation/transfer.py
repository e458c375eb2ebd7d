"""The development data sets, the joint fit of the default model's one
kernel-fitted constant over all of them, and the leave-one-set-out table
(MODEL.md §9 and §11).

A development set is a list of measured configurations of one kernel on
one GPU (:mod:`warpspeed.validation.reference`):

* ``star3d_r4`` (V100): the paper's 25-point star, 20 timed block shapes;
* ``box2d_r7`` (V100): a 225-point 2D box, 81 timed block shapes;
* ``convolution_15x15`` (A100): a 15x15 float convolution, block shapes x
  foldings strided by the block size, every row (the tile-3 foldings that
  gain nothing are shapes whose guards keep loads apart; the kernel's
  ``guards="auto"`` models that, MODEL.md §1).
* ``convolution_15x15_RTXA4000``, ``convolution_15x15_W7800``: the same scan
  on an RTX A4000 and a Radeon PRO W7800 (``shared/data/crossgpu``), GPUs
  described from their data sheets (``warpspeed machines new``). Reported with
  both models, not fitted: their machine files carry no kernel-fitted
  exponent (MODEL.md §12), so the exponent fitted here would not be the one
  their predictions use.
* ``fluidx3d_d3q19_<GPU>``: FluidX3D's D3Q19 SRT benchmark on eleven GPUs
  (:data:`LBM_GPUS`), FP32 and FP16S storage, two rows per GPU
  (:mod:`stencils.lbm_fluidx3d`). Reported with both models but not fitted
  here: they are DRAM-bound, so the L1 exponent does not act on them; they
  fit the memory systems' constants instead (MODEL.md §11, "Memory systems";
  :mod:`warpspeed.validation.memory_fit`, with its own leave-one-GPU-out
  table).
* ``h200_<set>``: the project's own stencils timed on an H200 SXM
  (``fits/data/h200``, :mod:`warpspeed.validation.measured_sets`): the 7-point
  and 25-point stars over the 256/512/1024-thread design space with folds,
  lbmpy's D3Q19 in double, a layer-condition scan and copies of 2 MB to
  17 GB. Reported with both models; not in the fit of the L1 exponent (the
  H200 file carries the roofline micro-benchmark's exponent, MODEL.md §11).

The table a user reads: for every set, the exponent fitted on the *other*
sets and the scores of the set left out with it; and the scores of the
paper's roofline, which fits nothing, on the same rows.

A set that the model misses by more than 1.5x in the median whatever the
exponent (at both bounds of its range) is misspecified beyond what the
constant can mend: fitting to it would bend the constant to hide another
error. Such a set is reported, fitted on the others like every set, but
takes no part in the fit (:func:`fit_weight`); the report names it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ..model import load_machine
from ..search.ties import l2_headroom, tie_order
from ..timing.kernel_fit import (
    KERNEL_CONSTANTS,
    FitRow,
    SetScore,
    fit_joint,
    leave_one_set_out,
    row_glups,
    score_set,
    scores,
)
from ..timing.latency_parameters import given
from .measured_sets import (
    H200,
    H200_SECOND,
    H200_SECOND_SETS,
    H200_SETS,
    H200_THIRD,
    measured_rows,
)
from .reference import (
    LBM,
    Predict,
    ReferenceDataError,
    Row,
    convolution_rows,
    lbm_rows,
    predictions,
    rows,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ..machine import Machine
    from ..model import Prediction
    from .evidence import Band
    from .memory_fit import LeftOut

#: The GPUs of the lattice Boltzmann development rows (``shared/data/lbm``).
LBM_GPUS = ("A40", "MI100", "A10", "L4", "RTX4090", "RTX3090", "RTXA4000", "RadeonVII", "MI50",
            "W7800", "RX7600")

#: The median predicted/measured band inside which a set can inform the fit.
FIT_BAND = (2 / 3, 1.5)


@dataclass(frozen=True)
class DevSet:
    """A development set: its rows (a function, read on demand) and GPU."""

    name: str
    machine: str
    load: Callable[[], list[Row]]
    #: False for a set reported with both models but kept out of the fit of
    #: the L1 exponent by design (its error is not one the exponent acts on).
    fitted: bool = True


DEV_SETS: tuple[DevSet, ...] = (
    DevSet("star3d_r4", "V100", lambda: [r for r in rows("star3d_r4") if r.glups]),
    DevSet("box2d_r7", "V100", lambda: [r for r in rows("box2d_r7") if r.glups]),
    DevSet("convolution_15x15", "A100", partial(convolution_rows, "A100")),
    DevSet("convolution_15x15_RTXA4000", "RTXA4000", partial(convolution_rows, "RTXA4000"),
           fitted=False),
    DevSet("convolution_15x15_W7800", "W7800", partial(convolution_rows, "W7800"), fitted=False),
    *(DevSet(f"{LBM}_{gpu}", gpu, partial(lbm_rows, gpu), fitted=False) for gpu in LBM_GPUS),
    *(DevSet(f"{H200}_{name}", "H200", partial(measured_rows, name), fitted=False)
      for name in H200_SETS),
)


#: The project's second and third H200 runs (``fits/measurements``): scored
#: with both models as the machine file stands, never fitted (MODEL.md §9),
#: except the drain set's four padded copies: they fix the block drain's
#: stagger (MODEL.md §11).
CHECK_SETS: tuple[DevSet, ...] = (
    *(DevSet(f"h200_second_{name}", "H200", partial(measured_rows, name, H200_SECOND),
             fitted=False) for name in H200_SECOND_SETS),
    *(DevSet(f"h200_third_{name}", "H200", partial(measured_rows, name, run), fitted=False)
      for run, names in H200_THIRD for name in names),
)


def check_scores(predict: Predict = predictions) -> list[tuple[str, SetScore]]:
    """Both models on :data:`CHECK_SETS` (the default model with the exponent
    its machine file carries), as (model, scores); a run the checkout lacks
    is left out."""
    out: list[tuple[str, SetScore]] = []
    for d in CHECK_SETS:
        try:
            data = d.load()
        except ReferenceDataError:
            continue
        latency = fit_rows(data, predict("latency", data, d.machine))
        out.append(("latency", score_set(d.name, latency, shipped_exponent(d.machine))))
        out.append(("paper", paper_scores(d.name, data, predict("paper", data, d.machine))))
    return out


def fit_rows(data: Sequence[Row], preds: Sequence[Prediction]) -> list[FitRow]:
    """The default model's terms (``preds``) and the measured GLup/s of
    every row."""
    return [FitRow(p.terms, float(r.timed_glups()), tie_order(p), domain_of(r))
            for p, r in zip(preds, data)]


def domain_of(r: Row) -> str:
    """The problem a row solves: its kernel and parameters (the domain's
    shape among them); rows of one domain differ in fold and block only."""
    return f"{r.kernel} {r.params}"


def fit_weight(rows: Sequence[FitRow]) -> bool:
    """Whether a set can inform the fit: its median predicted/measured GLup/s
    lies inside :data:`FIT_BAND` at one bound of the exponent at least
    (module docstring)."""
    meas = np.array([r.measured for r in rows])
    low, high = FIT_BAND
    return any(low <= float(np.median(row_glups(rows, p) / meas)) <= high
               for p in KERNEL_CONSTANTS["overlap_exponent"])


@dataclass(frozen=True)
class TransferReport:
    """The joint fit, the in-sample scores with it, the leave-one-set-out
    scores of the default model, the paper model's scores, and the sets
    left out of the fit as misspecified."""

    exponent: float
    joint: tuple[SetScore, ...]
    left_out: tuple[SetScore, ...]
    paper: tuple[SetScore, ...]
    not_fitted: tuple[str, ...] = ()
    reported_only: tuple[str, ...] = ()
    #: Every set scored with the exponent its machine file carries (what a
    #: user's prediction uses), which need not be the joint fit's (MODEL.md §11).
    shipped: tuple[SetScore, ...] = ()


def paper_scores(name: str, data: Sequence[Row], preds: Sequence[Prediction]) -> SetScore:
    """The paper model's GLup/s scores on a set (nothing is fitted), its
    best the one a ranking names first (ties and L2 headroom, MODEL.md §8)."""
    l2 = [1.0 / l2_headroom(p) for p in preds]  # 0 without L2 traffic
    return scores(name, None, np.array([p.glups for p in preds]),
                  np.array([r.glups for r in data], dtype=float), l2,
                  ties=[tie_order(p) for p in preds], domains=[domain_of(r) for r in data])


def transfer_report(sets: Sequence[DevSet] = DEV_SETS, predict: Predict = predictions
                    ) -> TransferReport:
    """Predict every development set with both models (``predict(model,
    rows, machine)``, :func:`warpspeed.validation.reference.predictions` by default),
    fit the exponent jointly on the sets inside the fit band, and leave each
    set out once."""
    fitted: dict[str, list[FitRow]] = {}
    paper = []
    reported_only = tuple(d.name for d in sets if not d.fitted)
    for dev in sets:
        data = dev.load()
        fitted[dev.name] = fit_rows(data, predict("latency", data, dev.machine))
        paper.append(paper_scores(dev.name, data, predict("paper", data, dev.machine)))
    usable = [k for k, v in fitted.items() if k not in reported_only and fit_weight(v)]
    if not usable:
        raise ValueError("no development set lies within the fit band; nothing to fit")
    p = fit_joint({k: fitted[k] for k in usable})
    joint = tuple(score_set(k, v, p) for k, v in fitted.items())
    left_out = tuple(leave_one_set_out(fitted, usable))
    skipped = tuple(k for k in fitted if k not in usable and k not in reported_only)
    shipped = tuple(score_set(d.name, fitted[d.name], shipped_exponent(d.machine)) for d in sets)
    return TransferReport(p, joint, left_out, tuple(paper), skipped, reported_only, shipped)


def shipped_exponent(machine: str) -> float:
    """The L1 overlap exponent the machine file carries (the FP exponent
    where it has none, as the default model reads it; MODEL.md §11)."""
    m = load_machine(machine)
    p = given(m)
    value = p.get("overlap_exponent", p.get("fp_overlap_exponent"))
    if value is None:
        raise ValueError(f"{machine}: the machine file has no overlap exponent")
    return float(value)


def format_transfer(rep: TransferReport) -> str:
    """The leave-one-set-out table as plain text (Markdown-compatible)."""
    def f(v: float | None, pct: bool = False) -> str:
        if v is None or np.isnan(v):
            return "-"
        return f"{100 * v:.1f} %" if pct else f"{v:.3f}"

    head = ("data set", "rows", "fit on", "L1 exponent", "GLup/s MAPE", "median p/m",
            "Spearman", "best/best", "worst domain")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    groups = (("machine file", rep.shipped), ("all sets (in sample)", rep.joint),
              ("the other sets (left out)", rep.left_out))
    for label, group in groups:
        for s in group:
            lines.append(" | ".join((s.dataset, str(s.rows), label, f(s.exponent),
                                     f(s.mape, True), f(s.median_ratio), f(s.spearman),
                                     f(s.best_fraction, True), f(s.worst_domain_best, True))))
    for s in rep.paper:
        lines.append(" | ".join((s.dataset, str(s.rows), "paper model (no fit)", "-",
                                 f(s.mape, True), f(s.median_ratio), f(s.spearman),
                                 f(s.best_fraction, True), f(s.worst_domain_best, True))))
    if rep.not_fitted:
        lines.append("")
        lines.append(f"not used for fitting (median predicted/measured outside "
                     f"{FIT_BAND[0]:.2f}-{FIT_BAND[1]:.2f} at both bounds of the exponent): "
                     f"{', '.join(rep.not_fitted)}")
    if rep.reported_only:
        lines.append(f"reported, not fitted by design (DRAM-bound, or on GPUs whose files carry "
                     f"no kernel-fitted exponent; MODEL.md §9): {', '.join(rep.reported_only)}")
    return "\n".join(lines)


def reference_validation(as_json: bool = False) -> str:
    """What ``warpspeed validate --v100`` prints: both models on the public
    data sets (:func:`warpspeed.validation.reference.report`), the leave-one-set-out
    table, the project's second and third H200 runs (:func:`check_scores`) and the regression
    kernels (:mod:`warpspeed.validation.regression`), as text or JSON."""
    import dataclasses
    import json

    from .reference import format_report, report
    from .regression import BAND, CASES, TINY, format_outcomes, run

    # the V100 sets are both reported and development sets: predict them once
    memo: dict[tuple[object, ...], Sequence[Prediction]] = {}

    def predict(model: str, data: Sequence[Row], machine: str | Path | Machine
                ) -> Sequence[Prediction]:
        key = (model, machine, tuple(data))
        if key not in memo:
            memo[key] = predictions(model, data, machine)
        return memo[key]

    from .evidence import as_records, bands, samples
    from .grounds import format_groundings, format_lbm, groundings, lbm_table
    from .memory_fit import fit_all, format_left_out, leave_one_gpu_out, load

    v100_scores = report(predict=predict)
    transfer = transfer_report(predict=predict)
    second = check_scores(predict)
    lbm = lbm_table([(d.machine, d.load()) for d in DEV_SETS if d.name.startswith(LBM)],
                    predict)
    gpu_rows = load(predict, LBM_GPUS)
    memory = leave_one_gpu_out(gpu_rows)
    memory_joint = fit_all(gpu_rows)
    left = {(r.gpu, s): x for r in memory if r.ratios for s, x in zip(r.storages, r.ratios)}
    found = bands(samples(DEV_SETS, predict, {"latency": left}))
    grounds = groundings(DEV_SETS)
    outcomes = [run(c) for c in CASES + TINY]
    if as_json:
        return json.dumps({
            "datasets": [dataclasses.asdict(s) for s in v100_scores],
            "leave_one_set_out": dataclasses.asdict(transfer),
            "h200_check_runs": [{"model": m, **dataclasses.asdict(c)} for m, c in second],
            "lattice_boltzmann": [{**dataclasses.asdict(r), "paper_over_measured": r.ratios[0],
                                   "default_over_measured": r.ratios[1]} for r in lbm],
            "memory_systems": {"joint_fit": memory_joint,
                               "leave_one_gpu_out": [_left_record(r) for r in memory]},
            "evidence": as_records(found),
            "machines": [dataclasses.asdict(g) for g in grounds],
            "regression_kernels": [{**dataclasses.asdict(o), "default_over_paper": o.ratio}
                                   for o in outcomes],
        }, indent=2)
    return "\n".join((
        format_report(v100_scores),
        f"\nDefault model's L1 overlap exponent fitted jointly on every development set: "
        f"{transfer.exponent:.2f}; each set predicted with the exponent fitted on the others:",
        format_transfer(transfer),
        "\nThe project's second and third H200 runs (fits/measurements: H200-new.csv; "
        "H200-occupancy.csv, H200-lbm_sizes.csv, H200-drain.csv), both models, never fitted "
        "(but the drain set's four padded copies, which fix the block drain, MODEL.md §11):",
        _format_checks(second),
        "\nFluidX3D D3Q19 (shared/data/lbm), both models as the machine files stand, and "
        "the measured bytes per cell over the stream copy plateau:",
        format_lbm(lbm),
        "\nMemory systems (MODEL.md §11): each GPU predicted with its kind's constant fitted on "
        "the other GPUs of that kind:",
        format_left_out(memory, memory_joint),
        "\nError bands a prediction quotes (MODEL.md §14), per grounding and kernel class:",
        _format_bands(found),
        "\nWhat grounds each machine (tables named in its sources, kernel sets run on it):",
        format_groundings(grounds),
        f"\nBuilt-in regression kernels, both models (default/paper must lie in "
        f"{BAND[0]}-{BAND[1]} for grids of many waves; tiny grids within 1.5x of one launch):",
        format_outcomes(outcomes),
    ))


def _left_record(r: LeftOut) -> dict[str, object]:
    """A leave-one-GPU-out row for the JSON (one ratio per storage column)."""
    out: dict[str, object] = {"gpu": r.gpu, "memory_system": r.memory_system,
                              "constant": r.constant or "", "value": r.value}
    for s, x in zip(r.storages, r.ratios or r.shipped):
        out[f"{s}_left_out"] = x
    for s, x in zip(r.storages, r.shipped):
        out[f"{s}_shipped"] = x
    return out


def _format_checks(found: Sequence[tuple[str, SetScore]]) -> str:
    lines = ["data set | model | rows | GLup/s MAPE | median p/m | Spearman | best/best | "
             "worst domain", "--- | --- | --- | --- | --- | --- | --- | ---"]
    for model, c in found:
        rho = "-" if c.spearman is None else f"{c.spearman:.3f}"
        worst = "-" if c.worst_domain_best is None else f"{100 * c.worst_domain_best:.1f} %"
        lines.append(f"{c.dataset} | {model} | {c.rows} | {100 * c.mape:.1f} % | "
                     f"{c.median_ratio:.3f} | {rho} | {100 * c.best_fraction:.1f} % | {worst}")
    return "\n".join(lines) if found else "(not in this checkout)"


def _format_bands(found: Sequence[Band]) -> str:
    lines = ["model | grounding | kernel class | rows | GPUs | pred/meas 10-90 % | median | MAPE",
             "--- | --- | --- | --- | --- | --- | --- | ---"]
    for b in found:
        lines.append(f"{b.model} | {b.grounding} | {b.kernel_class} | {b.rows} | "
                     f"{len(b.gpus)} | {b.low:.2f}-{b.high:.2f} | {b.median:.2f} | "
                     f"{100 * b.mape:.0f} %")
    return "\n".join(lines)


__all__ = ["DEV_SETS", "FIT_BAND", "LBM_GPUS", "DevSet", "TransferReport", "fit_rows", "fit_weight",
           "format_transfer",
           "paper_scores", "reference_validation", "transfer_report"]
