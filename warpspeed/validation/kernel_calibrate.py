"""Learn from what was timed (MODEL.md §12, grounding "kernels"): a machine
file from a base machine and kernel measurements
(``warpspeed machines calibrate --measurements FILE.csv [--base M]``).

The figures the measurements determine are fitted; every other number of the
base is carried with its source. Each fitted figure's ``source`` names the
run (the file, the GPU and driver its rows name, their dates) and the rule:

* **DRAM plateau** (``dram_bandwidth``, the attainable copy bandwidth the
  paper model and the reports read): measured directly, not through the
  model: the bytes per second of the copy kernel (``copy3d``) at its largest
  sizes (every size with at least half the largest's lattice updates), each
  size's fastest block, the median over those sizes. Bytes per update: the
  DRAM counters where the row has them, else the model's DRAM volume (a
  copy's is exact: one load and one store).
* **Saturated DRAM plateaus** (``dram_bw_read``, ``dram_bw_copy``,
  ``dram_bw_write``, scaled by one factor so their ratios stay the base's):
  the default model's asymptotes of Little's law (MODEL.md §11), which no
  kernel reaches: a copy at full occupancy still waits its loaded latency,
  so the asymptote lies above the measured copy (on the H200 about 9 %).
  Fitted through the model on the copy rows of the largest sizes that reach
  the plateau (within :data:`NEAR_FASTEST` of their size's fastest block),
  so that the model gives the measured copy there.
* **Small-launch cost** (``launch_latency_us``: a launch timed alone, as the
  harness times it; from the back-to-back ``launch_overhead_us`` where the
  base has not measured it), **the many-stream term**
  (``dram_scattered_fraction``) and **L2 plateau** (``l2_bandwidth``): each
  fitted through the model, so that the median of predicted over measured
  GLup/s is 1 on the rows whose prediction depends on it: the rows whose
  predicted GLup/s moves by more than :data:`SENSITIVE` when the figure is
  halved (the many-stream term: of those, the rows of at least
  :data:`MANY_STREAMS` concurrent DRAM streams; the L2 plateau: of those,
  the rows the model calls L2-bound, since a row that becomes L2-bound only
  when the figure is halved says nothing about the figure). A figure is carried, and
  the report says why, when fewer than :data:`MIN_ROWS` rows determine it, or
  when their sets disagree: one set's median ratio above 1 + :data:`AGREE`
  and another's below 1 - :data:`AGREE` (then no value brings both nearer 1,
  and the figure does not describe what the rows have in common). They are
  fitted in this order, each with the figures before it in place.
* ``extra``: any other parameter of :class:`~warpspeed.machine.Machine` of
  type ``float`` (their names are read from the dataclass, so a parameter a
  newer model adds can be fitted too), on the rows of one set (the ``note``
  column's ``set NAME``) or on all rows, by the same median rule.

How a figure is fitted (:mod:`.median_rule`): bisection of its logarithm
within a factor 8 of the base value (and the loader's range), until the
median ratio is within 1e-4 of 1; a figure whose range does not bracket 1
stays at the nearer end, said in its source. The block stage and wave sets
of every row are counted once with the base machine: the fitted figures are
read only by the timing (:func:`warpspeed.model.finish`). Approximation: the
median rule weighs every row of the selection alike.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

from ..errors import MachineError
from ..machine import FORMAT_VERSIONS, Machine, read_versioned_toml
from ..machine_format import flatten
from ..measure import Measurement, MeasurementError, read_csv
from ..model import load_machine
from ..timing import DEFAULT_MODEL, MODELS, parameter, parameter_tables
from ..volumes.capacity import CapacityFits, curves_for
from .measured_sets import set_of
from .median_rule import (
    AGREE,
    SENSITIVE,
    Row,
    bisect,
    bisect_factor,
    current,
    disagreement,
    median_ratio,
    predict_rows,
    prepare,
    sensitive,
    sensitive_to,
    set_name,
    with_values,
)
from .pairing import config_key, infer_machine, train_test_split

#: Fewest rows a figure is fitted on.
MIN_ROWS = 5
#: Concurrent DRAM streams from which a kernel counts as "many streams".
MANY_STREAMS = 16
#: The stencil whose rows measure the DRAM plateau.
COPY = "copy3d"
#: Copies within this share of their size's fastest block reach the plateau.
NEAR_FASTEST = 0.02
#: The default model's saturated DRAM plateaus, fitted together (read, copy, write).
SATURATED = ("dram_bw_read", "dram_bw_copy", "dram_bw_write")
#: Parameters read by the block stage or the wave sets (counted once, with the base).
STRUCTURAL = frozenset({"memory_gib", "stream_scale", "dram_scale"})


def fittable() -> tuple[str, ...]:
    """The parameters a calibration may fit: those of type ``float`` that only
    the timing reads, of :class:`Machine` and of the timing tables (module
    docstring)."""
    found = [*fields(Machine), *(f for t in parameter_tables() for f in fields(t.kind))]
    return tuple(f.name for f in found
                 if str(f.type).split(" |")[0] == "float" and f.name not in STRUCTURAL)


@dataclass(frozen=True)
class Fitted:
    """One figure: its parameters' new value, the base's, the rows it was
    fitted on, and the words of its source (``value`` None: carried, and
    ``rule`` says why)."""

    figure: str
    parameters: tuple[str, ...]
    value: float | None
    before: float | None
    rows: int
    rule: str
    #: The parameters' new values where they differ (a figure scaled by one
    #: factor); empty: every parameter takes ``value``.
    values: tuple[float, ...] = ()

    def assignments(self) -> dict[str, float]:
        """Each parameter's new value (empty when carried)."""
        if self.value is None:
            return {}
        return dict(zip(self.parameters, self.values or (self.value,) * len(self.parameters)))


def largest_copies(rows: Sequence[Row]) -> list[Row]:
    """The copy rows (:data:`COPY`) of the largest sizes: at least half the
    largest's lattice updates."""
    copies = [r for r in rows if r.measured.stencil == COPY]
    largest = max((r.measured.lups for r in copies), default=0)
    return [r for r in copies if r.measured.lups * 2 >= largest]


def near_fastest(rows: Sequence[Row]) -> list[Row]:
    """The rows within :data:`NEAR_FASTEST` of the fastest row of their
    lattice-update count."""
    fastest: dict[int, float] = {}
    for r in rows:
        fastest[r.measured.lups] = max(fastest.get(r.measured.lups, 0.0), r.measured.glups)
    return [r for r in rows if r.measured.glups >= (1 - NEAR_FASTEST) * fastest[r.measured.lups]]


def saturated_plateaus(rows: Sequence[Row], m: Machine, curves: CapacityFits, model: str
                       ) -> Fitted:
    """The default model's saturated DRAM plateaus scaled by the one factor
    that makes the median of predicted over measured GLup/s 1 on the largest
    copies whose prediction depends on them (module docstring)."""
    names = SATURATED
    given = [v for n in names if (v := parameter(m, n)) is not None]
    if len(given) < len(names):
        return Fitted("saturated DRAM plateaus", names, None, None, 0,
                      "carried: the base has no saturated plateaus")
    base = tuple(float(v) for v in given)
    chosen = sensitive_to(near_fastest(largest_copies(rows)), m, dict.fromkeys(names, 0.5),
                          curves, model)
    words = (f"of the copy ({COPY}) at its largest sizes within {NEAR_FASTEST:.0%} of the "
             "size's fastest block whose prediction depends on them")
    if len(chosen) < MIN_ROWS:
        return Fitted("saturated DRAM plateaus", names, None, None, len(chosen),
                      f"carried: {len(chosen)} rows {words}, fewer than {MIN_ROWS}")
    top = 8.0 if not m.dram_peak else min(8.0, m.dram_peak / max(base))  # no plateau above peak
    k, note = bisect_factor(chosen, m, dict(zip(names, base)), curves, model, (1 / 8, top))
    values = tuple(float(f"{k * b:.5g}") for b in base)
    return Fitted("saturated DRAM plateaus", names, values[1], base[1], len(chosen),
                  f"the default model's asymptotes of Little's law, scaled together so that "
                  f"the median of predicted over measured GLup/s is 1 on the {len(chosen)} rows "
                  f"{words} ({model} model){note}", values)


def dram_plateau(rows: Sequence[Row], m: Machine, curves: CapacityFits, model: str
                 ) -> Fitted:
    """The copy's bytes per second at its largest sizes (module docstring)."""
    names = ("dram_bandwidth",)
    copies = largest_copies(rows)
    if not copies:
        return Fitted("DRAM plateau", names, None, None, 0, "carried: no copy3d rows")
    preds = predict_rows(copies, m, curves, model)
    best: dict[int, float] = {}
    for r, p in zip(copies, preds):
        c = r.measured
        counted = None if c.dram_load is None or c.dram_store is None else (
            c.dram_load + c.dram_store)
        volume = counted if counted is not None else p.volumes.dram_load + p.volumes.dram_store
        best[c.lups] = max(best.get(c.lups, 0.0), c.glups * volume)  # GB/s
    value = statistics.median(best.values())
    sizes = ", ".join(f"{n / 2**20:g} Mi" for n in sorted(best))
    return Fitted("DRAM plateau", names, round(value, 1), float(parameter(m, names[0]) or 0.0),
                  len(best), f"the copy ({COPY}) at its largest sizes ({sizes} lattice updates): "
                  "median over the sizes of the fastest block's bytes per second (DRAM "
                  "counters where measured, else the model's copy volume)")


@dataclass(frozen=True)
class Figure:
    """A figure fitted through the model: its parameter, the rows that
    determine it, and the words that say which."""

    name: str
    parameter: str
    select: Callable[[Sequence[Row], Machine, CapacityFits, str], list[Row]]
    rows_words: str


def _many_streams(rows: Sequence[Row], m: Machine, curves: CapacityFits, model: str
                  ) -> list[Row]:
    return sensitive_to(rows, m, {"dram_scattered_fraction": 0.5}, curves, model,
                        keep=lambda p: p.traits.dram_streams >= MANY_STREAMS)


def _l2_bound(rows: Sequence[Row], m: Machine, curves: CapacityFits, model: str
              ) -> list[Row]:
    return sensitive_to(rows, m, {"l2_bandwidth": 0.5}, curves, model,
                        keep=lambda p: p.limiter == "l2")


FIGURES = (
    Figure("small-launch cost", "launch_latency_us",
           lambda rows, m, c, model: sensitive(rows, m, "launch_latency_us", c, model),
           "whose prediction depends on it (small launches)"),
    Figure("many-stream term", "dram_scattered_fraction", _many_streams,
           f"of at least {MANY_STREAMS} concurrent DRAM streams whose prediction depends on it"),
    Figure("L2 plateau", "l2_bandwidth", _l2_bound,
           "that the model calls L2-bound and whose prediction depends on it"),
)


def fit_figure(rows: Sequence[Row], m: Machine, name: str, parameter: str,
               chosen: Sequence[Row], words: str, curves: CapacityFits, model: str) -> Fitted:
    """``parameter`` fitted on ``chosen`` by the median rule, or carried
    when fewer than :data:`MIN_ROWS` rows determine it."""
    before = current(m, parameter)
    if not before:  # no value, or 0: no factor moves it
        return Fitted(name, (parameter,), None, None, 0,
                      f"carried: the base has {'no value' if before is None else 'the value 0'}")
    if len(chosen) < MIN_ROWS:
        return Fitted(name, (parameter,), None, float(before), len(chosen),
                      f"carried: {len(chosen)} rows {words}, fewer than {MIN_ROWS}")
    split = disagreement(chosen, m, curves, model)
    if split:
        return Fitted(name, (parameter,), None, float(before), len(chosen),
                      f"carried: the {len(chosen)} rows {words} disagree: {split}")
    value, note = bisect(chosen, m, parameter, curves, model)
    sets = sorted({set_name(r.measured) for r in chosen})
    return Fitted(name, (parameter,), float(f"{value:.4g}"), float(before), len(chosen),
                  f"fitted so that the median of predicted over measured GLup/s is 1 on the "
                  f"{len(chosen)} rows {words} (sets {', '.join(sets)}; {model} model){note}")


def parse_extra(text: str) -> tuple[str, str]:
    """``NAME`` or ``NAME:SET`` of ``--fit``, the name checked against
    :func:`fittable`."""
    name, _, subset = text.partition(":")
    if name not in fittable():
        raise MachineError(f"--fit {text}: {name!r} is not a parameter a calibration can fit; "
                           f"they are {', '.join(fittable())}")
    return name, subset


def fit_all(rows: Sequence[Row], base: Machine, curves: CapacityFits, model: str,
            extra: Sequence[str] = ()) -> tuple[Machine, list[Fitted]]:
    """Every figure in order (module docstring), each with those before it
    in place; the fitted machine and what each fit did."""
    m = base
    out = []
    for fit in (dram_plateau, saturated_plateaus):
        f = fit(rows, m, curves, model)
        out.append(f)
        m = with_values(m, f.assignments())
    for fig in FIGURES:
        if parameter(m, fig.parameter) is None:
            continue
        f = fit_figure(rows, m, fig.name, fig.parameter, fig.select(rows, m, curves, model),
                       fig.rows_words, curves, model)
        out.append(f)
        if f.value is not None:
            m = with_values(m, {fig.parameter: f.value})
    for text in extra:
        name, subset = parse_extra(text)
        chosen = [r for r in rows if not subset or set_of(r.measured) == subset]
        f = fit_figure(rows, m, name, name, chosen, f"of set {subset}" if subset else "",
                       curves, model)
        out.append(f)
        if f.value is not None:
            m = with_values(m, {name: f.value})
    return m, out


def run_name(path: str | Path, rows: Sequence[Measurement]) -> str:
    """The run as sources name it: the file, its GPU and driver, its dates."""
    machines = sorted({r.machine for r in rows if r.machine})
    drivers = sorted({r.driver for r in rows if r.driver})
    dates = sorted({r.date[:10] for r in rows if r.date})
    when = dates[0] if len(dates) == 1 else f"{dates[0]} .. {dates[-1]}" if dates else "undated"
    return (f"kernel measurements {Path(path).name} ({', '.join(machines) or 'GPU unnamed'}, "
            f"driver {', '.join(drivers) or 'unknown'}, {when}; {len(rows)} rows)")


def machine_data(base: Machine, fitted: Sequence[Fitted], run: str) -> dict:
    """The base's file with the fitted figures and grounding "kernels"
    (module docstring): a dict :func:`warpspeed.validation.calibrate.write_machine`
    writes."""
    data = flatten(read_versioned_toml(Path(base.path), "machine file", FORMAT_VERSIONS,
                                       MachineError))
    for f in fitted:
        if f.value is None:
            continue
        for name, value in f.assignments().items():
            entry = dict(data.get(name) or {})
            was = entry.get("value")
            entry["value"] = value
            entry["source"] = f"{run}: {f.rule}" + (f" (was {was:g})" if isinstance(
                was, (int, float)) else "")
            if name == "dram_bandwidth" and "stream_reference" in entry:
                # the plateaus of the base were measured with the base's figure; the
                # fitted one does not scale them (machine.py: stream_reference)
                entry["stream_reference"] = entry["value"]
            data[name] = entry
    data["grounding"] = "kernels"
    return data


def select(rows: Sequence[Measurement], subset: str) -> list[Measurement]:
    """All rows, or the train or test half (:func:`~.pairing.train_test_split`)."""
    if subset == "all":
        return list(rows)
    if subset not in ("train", "test"):
        raise MeasurementError(f"subset must be all, train or test, got {subset!r}")
    train, test = train_test_split(rows, config_key)
    return train if subset == "train" else test


@dataclass(frozen=True)
class Calibration:
    """A calibration's result: the data of the machine file, the base it
    started from and what each figure did."""

    data: dict
    base: Machine
    fitted: tuple[Fitted, ...]
    run: str

    def lines(self) -> list[str]:
        """What was fitted and what was carried, one line each."""
        out = []
        for f in self.fitted:
            names = ", ".join(f.parameters)
            if f.value is None:
                out.append(f"{f.figure} ({names}): {f.rule}")
            else:
                out.append(f"{f.figure} ({names}): {f.before:g} -> {f.value:g} from {f.rows} "
                           f"rows")
        return out


def calibrate_kernels(csv_path: str | Path, base: str | Path | None = None,
                      subset: str = "all", extra: Sequence[str] = (),
                      model: str = DEFAULT_MODEL, fits: str | Path | None = None
                      ) -> Calibration:
    """``warpspeed machines calibrate --measurements CSV``: the machine file
    of ``base`` (default: the built-in machine of the CSV's GPU) with the
    figures the measurements (``subset`` of them) determine (module
    docstring)."""
    if model not in MODELS:
        raise MeasurementError(f"unknown model {model!r}; the models are {', '.join(MODELS)}")
    rows = read_csv(csv_path)
    if not rows:
        raise MeasurementError(f"{csv_path} holds no measurements")
    m = load_machine(base or infer_machine(rows))
    chosen = select(rows, subset)
    curves = curves_for(m, fits)
    prepared = prepare(chosen, m, model)
    _, fitted = fit_all(prepared, m, curves, model, extra)
    run = run_name(csv_path, chosen) + ("" if subset == "all" else f", the {subset} half")
    return Calibration(machine_data(m, fitted, run), m, tuple(fitted), run)


__all__ = [
    "AGREE",
    "COPY",
    "Calibration",
    "calibrate_kernels",
    "select",
    "FIGURES",
    "MANY_STREAMS",
    "MIN_ROWS",
    "SENSITIVE",
    "Fitted",
    "Row",
    "bisect",
    "disagreement",
    "dram_plateau",
    "largest_copies",
    "near_fastest",
    "NEAR_FASTEST",
    "saturated_plateaus",
    "sensitive_to",
    "bisect_factor",
    "SATURATED",
    "fit_all",
    "fit_figure",
    "fittable",
    "machine_data",
    "median_ratio",
    "parse_extra",
    "predict_rows",
    "prepare",
    "run_name",
    "sensitive",
    "set_name",
]
