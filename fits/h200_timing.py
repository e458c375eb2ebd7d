"""The default model against the project's own H200 measurements
(``fits/data/h200``, MODEL.md §11): the figures the measurements fix, and the
table per set and block-width class (``python fits/h200_timing.py``).

Every row is predicted with the register count of its compiled kernel (the
``registers`` column, read by Nsight Compute on one row of each stencil and
fold; the same binary ran on its other rows). Options:

* ``--fit``: the two figures the kernel measurements fix on the H200, printed
  for the machine file's sources:

  - ``dram_bw_copy``: the copy plateau that makes the model's copy, through
    its Little's law, run as fast as the measured copy at the largest sizes
    (every launch moving at least 2 GB, blocks of 256 threads: the 1024-thread
    blocks run 20 % slower, MODEL.md §10);
  - ``launch_latency_us``: one launch timed alone, the median over the copy
    launches moving under 64 MB of the measured time less the model's time of
    the kernel body;

  and the activation gap of NVIDIA's HBM (``hbm_activate_ns`` of
  :class:`warpspeed.timing.memory_systems.Constants`), fitted on the lattice
  Boltzmann rows, with the check that splits them by block width: fitted on
  the blocks at least 16 wide, scored on the narrower ones, and the reverse.
* ``--ablate``: the table again with each mechanism of MODEL.md §11 taken out
  in turn (what each contributes).
* ``--json FILE``: the per-set figures as JSON.
* ``--split``: a free factor on the split store sectors of NVIDIA's HBM
  (MODEL.md §11), fitted on the third run's lattice Boltzmann and copy rows
  (:data:`SPLIT_SETS`, shipped in ``fits/measurements``); the model counts 1.
* ``--exponent``: the rms log error of predicted over measured GLup/s with
  other L1 overlap exponents (:data:`EXPONENTS`), on the development half and
  on the second run (``fits/measurements/H200-new.csv``): the check of the
  roofline micro-benchmark's exponent that the H200 file carries for L1
  work (MODEL.md §11, "Overlap").

Not a test: it takes about a minute per table on two cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-h200-"))

from scipy.optimize import brentq  # noqa: E402

from warpspeed.input.kernel import Kernel  # noqa: E402
from warpspeed.machine import Machine, load_machine  # noqa: E402
from warpspeed.measure import Measurement, generate_variant, read_csv  # noqa: E402
from warpspeed.measure.program import SHARED_PAD  # noqa: E402
from warpspeed.model import Prediction, predict  # noqa: E402
from warpspeed.search.ties import first_choice  # noqa: E402
from warpspeed.timing import with_values  # noqa: E402
from warpspeed.timing.latency import (  # noqa: E402
    glups_from_terms,
    glups_with_efficiency,
    require,
)
from warpspeed.timing.memory_systems import FITTED, stream_efficiency  # noqa: E402
from warpspeed.validation.measured_sets import (  # noqa: E402
    H200_SECOND,
    H200_THIRD,
    RUNS_DIR,
    set_of,
)
from warpspeed.validation.reference import ReferenceDataError, dataset_dir  # noqa: E402
from warpspeed.validation.validate import spearman  # noqa: E402
from warpspeed.volumes.capacity import CapacityFits  # noqa: E402

#: Launches that move at least this many bytes give the copy plateau.
LARGE = 2e9
#: Launches that move fewer bytes than this give the launch latency.
SMALL = 64e6
#: The micro-benchmarks' lower bounds of the pure plateaus (GB/s): the l2_cache
#: table's DRAM-bound end (loads) and the stream table's init column (stores).
READ_FLOOR, WRITE_FLOOR = 3888.0, 3891.0


@dataclass(frozen=True)
class Row:
    """One measured configuration with the model's prediction."""

    m: Measurement
    p: Prediction

    @property
    def set(self) -> str:
        return set_of(self.m)

    @property
    def width(self) -> str:
        x = self.m.block[0] * self.m.fold[0]
        return "64+" if x >= 64 else "16-32" if x >= 16 else "<=8"

    @property
    def ratio(self) -> float:
        return self.p.glups / self.m.glups


def measurements() -> list[Measurement]:
    """The H200 rows of ``fits/data/h200``."""
    return read_csv(dataset_dir("h200") / "measurements.csv")


def kernels(rows: Sequence[Measurement]) -> dict[tuple[str, str, tuple[int, int, int]], Kernel]:
    """Each stencil variant's kernel, with the compiled kernel's register count
    as the run's counter rows give it (``fits/data/h200``, or another run of
    the same harness such as ``fits/measurements/H200-new.csv``)."""
    regs = {(r.stencil, r.params, r.fold): int(r.registers) for r in rows if r.registers}
    out = {}
    for r in rows:
        key = (r.stencil, r.params, r.fold)
        if key not in out:
            k = generate_variant(r.stencil, r.parameters, r.fold)[0]
            if key in regs:
                k = dataclasses.replace(k, registers=regs[key],
                                        registers_source="Nsight Compute (the run's counters)")
            out[key] = k
    return out


def predict_all(m: Machine, rows: Sequence[Measurement],
                ks: dict[tuple[str, str, tuple[int, int, int]], Kernel],
                fits: CapacityFits | None = None) -> list[Row]:
    """Each row's prediction, with other capacity curves where ``fits`` is given."""
    return [Row(r, predict(ks[(r.stencil, r.params, r.fold)], m, r.block, fits=fits))
            for r in rows]


@dataclass(frozen=True)
class Score:
    """Predicted over measured GLup/s of a group of rows (MODEL.md §9)."""

    rows: int
    median: float
    mape: float
    spearman: float | None
    best: float


def score(group: Sequence[Row]) -> Score:
    ratios = [r.ratio for r in group]
    pred, meas = [r.p.glups for r in group], [r.m.glups for r in group]
    return Score(len(group), statistics.median(ratios),
                 100.0 * statistics.mean(abs(x - 1.0) for x in ratios),
                 spearman(pred, meas), best_fraction_of(group))


def best_fraction_of(group: Sequence[Row]) -> float:
    """The measured GLup/s of the configuration the ranking names first
    (:func:`warpspeed.search.ties.first_choice`) over the measured best."""
    first = first_choice([r.p for r in group])
    return group[first].m.glups / max(r.m.glups for r in group)


def groups(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """Rows per set, and per set and block-width class (x extent times x fold)."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(r.set, []).append(r)
        out.setdefault(f"{r.set} {r.width}", []).append(r)
    return dict(sorted(out.items()))


def table(rows: Sequence[Row], title: str) -> str:
    lines = [title, f"{'set / block width':34s} {'rows':>5s} {'median':>7s} {'MAPE':>6s} "
             f"{'Spearman':>8s} {'best':>6s}"]
    for name, g in groups(rows).items():
        s = score(g)
        sp = "-" if s.spearman is None else f"{s.spearman:.2f}"
        best = "-" if s.best is None else f"{s.best:.3f}"
        lines.append(f"{name:34s} {s.rows:5d} {s.median:7.2f} {s.mape:5.1f}% {sp:>8s} {best:>6s}")
    return "\n".join(lines)


def copy_rows(rows: Sequence[Measurement], lo: float, hi: float,
              threads: int | None = None) -> list[Measurement]:
    """Copy launches moving between ``lo`` and ``hi`` bytes (read + write)."""
    return [r for r in rows if r.stencil == "copy3d" and lo <= 16 * r.lups < hi
            and (threads is None or math.prod(r.block) == threads)]


def fit_copy_plateau(m: Machine, rows: Sequence[Measurement],
                     ks: dict[tuple[str, str, tuple[int, int, int]], Kernel]) -> float:
    """``dram_bw_copy`` at which the model's median copy over the large launches
    equals the measured (module docstring); the pure read and write plateaus are
    raised to it where lower (a stream of one direction has no bus turnarounds)."""
    large = copy_rows(rows, LARGE, math.inf, threads=256)

    def excess(bw: float) -> float:
        mm = with_values(m, {"dram_bw_copy": bw, "dram_bw_read": max(bw, READ_FLOOR),
                             "dram_bw_write": max(bw, WRITE_FLOOR)})
        return statistics.median(r.ratio for r in predict_all(mm, large, ks)) - 1.0

    return float(brentq(excess, 2000.0, float(m.dram_peak or 10000.0), xtol=1.0))


def fit_launch_latency(m: Machine, rows: Sequence[Measurement],
                       ks: dict[tuple[str, str, tuple[int, int, int]], Kernel]) -> float:
    """The median over the small copy launches of the measured time less the
    model's kernel body (its time without the launch), in µs."""
    small = predict_all(m, copy_rows(rows, 0.0, SMALL), ks)
    return statistics.median(r.m.time_s * 1e6 - (r.p.terms["kernel_time_us"]
                                                 - r.p.terms["launch_us"]) for r in small)


def lbm_log_error(rows: Sequence[Row], m: Machine, activate_ns: float,
                  split: float = 1.0) -> float:
    """Mean squared log of predicted over measured GLup/s of lattice Boltzmann
    rows with the activation gap ``activate_ns`` of NVIDIA's HBM, and its
    split store sectors scaled by ``split`` (1: as the model counts them, 0:
    without)."""
    c = dataclasses.replace(FITTED, hbm_activate_ns=activate_ns)
    err = 0.0
    for r in rows:
        v = r.p.volumes
        a = r.p.traits
        e = stream_efficiency(a.dram_streams, m, a.dram_access_bytes, c, run_bytes=a.dram_run_bytes,
                              split_share=a.dram_split_share * split)
        err += math.log(glups_with_efficiency(r.p.terms, m, v, e) / r.m.glups) ** 2
    return err / len(rows)


def fit_activate(m: Machine, rows: Sequence[Row]) -> float:
    """The activation gap minimising :func:`lbm_log_error` (0 to 20 ns)."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda a: lbm_log_error(rows, m, a), bounds=(0.0, 20.0),
                          method="bounded", options={"xatol": 1e-3})
    return float(res.x)


def activate_report(m: Machine, rows: Sequence[Row]) -> str:
    """The joint fit on the lattice Boltzmann rows and the width split."""
    lbm = [r for r in rows if r.m.stencil == "lbm_d3q19"]
    wide = [r for r in lbm if r.width != "<=8"]
    narrow = [r for r in lbm if r.width == "<=8"]
    joint = fit_activate(m, lbm)
    lines = [f"hbm_activate_ns, joint fit on {len(lbm)} lattice Boltzmann rows: {joint:.3f}"]
    for name, train, test in (("wide -> narrow", wide, narrow), ("narrow -> wide", narrow, wide)):
        a = fit_activate(m, train)
        lines.append(f"  fitted on the {name.split()[0]} ({len(train)} rows): {a:.3f} ns; rms log "
                     f"error on the other {len(test)}: {math.sqrt(lbm_log_error(test, m, a)):.3f} "
                     f"(joint value: {math.sqrt(lbm_log_error(test, m, joint)):.3f}, none: "
                     f"{math.sqrt(lbm_log_error(test, m, 0.0)):.3f})")
    return "\n".join(lines)


#: The third H200 run's lattice Boltzmann and copy sets on which ``--split``
#: fits a free factor on the split store sectors (MODEL.md §11, "Memory systems").
SPLIT_SETS = ("occ_lbm_f64", "occ_lbm_f32", "lbm_sizes_f64", "lbm_sizes_f32", "lbm_folds_f64",
              "lbm_folds_f32", "streams_f64", "streams_f32", "lbm_parts_f64", "lbm_parts_f32",
              "shifts_f64", "shifts_f32", "pitch_f64", "pitch_f32", "pitch_lbm_f64",
              "pitch_lbm_f32")


def split_rows(m: Machine) -> list[Row]:
    """The rows of :data:`SPLIT_SETS` (``fits/measurements``, unpadded), predicted."""
    rows = [r for run, _ in H200_THIRD for r in read_csv(RUNS_DIR / f"{run}.csv")
            if set_of(r) in SPLIT_SETS and SHARED_PAD not in r.parameters]
    return predict_all(m, rows, kernels(rows))


def fit_split_factor(m: Machine, rows: Sequence[Row]) -> float:
    """The factor on the split store sectors minimising :func:`lbm_log_error`
    (0 to 5; the model counts 1, no constant fitted)."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda k: lbm_log_error(rows, m, FITTED.hbm_activate_ns, k),
                          bounds=(0.0, 5.0), method="bounded", options={"xatol": 1e-3})
    return float(res.x)


#: The L1 overlap exponents ``--exponent`` scores.
EXPONENTS = (1.5, 1.7, 1.92, 2.2, 2.5, 3.0)


def rms_log_error(rows: Sequence[Row], l1_exponent: float | None = None) -> float:
    """Root mean square of log(predicted / measured GLup/s), the predictions
    recombined with another L1 overlap exponent where one is given."""
    return math.sqrt(statistics.mean(
        math.log(glups_from_terms(r.p.terms, l1_exponent) / r.m.glups) ** 2 for r in rows))


def exponent_report(m: Machine, dev: Sequence[Row]) -> str:
    """``--exponent``: the rms log error per half and exponent."""
    second = read_csv(RUNS_DIR / f"{H200_SECOND}.csv")
    new = predict_all(m, second, kernels(second))
    lines = [f"L1 overlap exponent: rms log error of predicted / measured GLup/s "
             f"(the H200 file carries {require(m).overlap_exponent})",
             f"{'exponent':>8s} {'development':>12s} {'second run':>11s}"]
    for p in EXPONENTS:
        lines.append(f"{p:8.2f} {rms_log_error(dev, p):12.3f} {rms_log_error(new, p):11.3f}")
    return "\n".join(lines)


#: Mechanisms of MODEL.md §11 that ``--ablate`` takes out one at a time: the
#: machine as the model would see it without each.
ABLATIONS: dict[str, Callable[[Machine], Machine]] = {
    "L2 plateau of the micro-benchmark (7000 GB/s instead)":
        lambda m: dataclasses.replace(m, l2_bandwidth=7000.0),
    "copy plateau of the kernels (stream table's 3534 GB/s instead)":
        lambda m: with_values(m, {"dram_bw_copy": 3534.0, "dram_bw_read": 3891.0,
                                  "dram_bw_write": 3891.0}),
    "launch latency (back-to-back launch overhead instead)":
        lambda m: with_values(m, {"launch_latency_us": None}),
    "load rounds (every thread's loads in one round)":
        lambda m: dataclasses.replace(m, family=dataclasses.replace(m.family, load_rounds=False)),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fit", action="store_true", help="fit the H200's kernel figures")
    ap.add_argument("--ablate", action="store_true", help="take each mechanism out in turn")
    ap.add_argument("--json", help="write the per-set figures to this file")
    ap.add_argument("--exponent", action="store_true",
                    help="score other L1 overlap exponents on both H200 runs")
    ap.add_argument("--split", action="store_true",
                    help="fit a free factor on the split store sectors (third run)")
    args = ap.parse_args(argv)
    if args.split:
        m = load_machine("H200")
        rows3 = split_rows(m)
        print(f"free factor on the split store sectors, fitted on {len(rows3)} rows of the third "
              f"run: {fit_split_factor(m, rows3):.2f} (the model counts 1)")
        return 0
    try:
        rows = measurements()
    except (ReferenceDataError, OSError) as exc:
        print(f"h200_timing: {exc}", file=sys.stderr)
        return 2
    ks = kernels(rows)
    m = load_machine("H200")
    if args.fit:
        print(f"dram_bw_copy: {fit_copy_plateau(m, rows, ks):.0f} GB/s")
        print(f"launch_latency_us: {fit_launch_latency(m, rows, ks):.2f}")
    pairs = predict_all(m, rows, ks)
    print(table(pairs, "H200, default model (predicted / measured GLup/s)"))
    if args.fit:
        print(activate_report(m, pairs))
    if args.exponent:
        print(exponent_report(m, pairs))
    if args.ablate:
        for name, change in ABLATIONS.items():
            print()
            print(table(predict_all(change(m), rows, ks), f"without the {name}"))
        print()
        lbm = [r for r in pairs if r.m.stencil == "lbm_d3q19"]
        gap = FITTED.hbm_activate_ns
        print("lattice Boltzmann rows, rms log error of predicted over measured GLup/s:")
        for name, error in (("as the model stands", lbm_log_error(lbm, m, gap)),
                            ("without the split stores of NVIDIA's HBM",
                             lbm_log_error(lbm, m, gap, split=0.0)),
                            ("without the activation gap", lbm_log_error(lbm, m, 0.0))):
            print(f"  {name} {math.sqrt(error):.3f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({k: dataclasses.asdict(score(g)) for k, g in groups(pairs).items()}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
