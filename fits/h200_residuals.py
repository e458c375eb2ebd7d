"""Terms tried on the H200 residuals and not adopted (MODEL.md §10, "Terms
tried on the H200's residuals"; ``python fits/h200_residuals.py``).

Every row of the three H200 runs (``fits/data/h200``; ``fits/measurements``:
the second run and the third run's check sets) is predicted once with the
default model; each variant then recombines the prediction's ``terms``, as
:func:`warpspeed.timing.latency.glups_from_terms` does, with one term changed:

* ``request rate``: the L2 serves a request of one sector at ``q`` times the
  rate of whole lines (``q = 1.12``: the H200 copies one to four doubles wide
  move 0.33-0.34 one-sector misses per SM and cycle, the ``l2_cache`` plateau
  0.305 whole lines), so the line ratio ``r`` charges ``max(1, r / q)``;
* ``fills``: every DRAM byte also passes the L2 (``t_l2 + D / bw_l2``);
* ``L1-L2 exponent 3``: L1 work overlaps the L2 stream with an exponent of
  its own (3) and the DRAM stream with the machine file's;
* ``... and drain^0.2``: the same, with every regime's GLup/s times the
  block drain share (MODEL.md §11) to the power 0.2;
* ``lines 0.8, fills 0.5``: 0.8 of the line charge beyond the sectors and
  half the DRAM bytes passing the L2 (:func:`lines_fills_l2`).

For each: per set the median predicted/measured GLup/s, the MAPE and the
measured GLup/s of the configuration the ranking names first over the
measured best; and the rms log error of the development and the held-out
rows. ``--regression`` fits ``t = (S + a S (r - 1) + phi D) / B`` (L2 sector
bytes ``S``, DRAM bytes ``D``, line ratio ``r``) on the counter rows that move
at least 6 TB/s through the L2 or are L2-bound by the model;
``--inflight`` prints Little's law over the load line requests per SM
(latency ``l2_latency_ns``, and 500 ns for the DRAM share of the sectors);
``--wavefronts`` compares the model's L1 cycles with Nsight Compute's L1
wavefronts on the counter rows, and on the L2-bound ones the counted L1
time and the model's L2 time with the measured time; ``--across-gpus``
scores the L1-L2 exponent as a ratio ``k`` of the L1-DRAM one on the
validation's development sets of every GPU (V100, A100, RTX A4000, W7800,
H200), with the joint mean MAPE and each GPU left out in turn.

Not a test: it predicts about 3800 rows (a minute or two on two cores;
``--across-gpus`` adds the other GPUs' 2400 rows).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-resid-"))

import h200_timing as h  # noqa: E402  (fits/ is the script's folder)
import numpy as np  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

from warpspeed.machine import Machine  # noqa: E402
from warpspeed.measure import Measurement, read_csv  # noqa: E402
from warpspeed.model import Prediction, load_machine, predict  # noqa: E402
from warpspeed.search.ties import first_choice  # noqa: E402
from warpspeed.timing.kernel_fit import FitRow, rank_correlation  # noqa: E402
from warpspeed.timing.latency import (  # noqa: E402
    glups_from_terms,
    kernel_time_ns,
    overlap,
    require,
)
from warpspeed.validation.measured_sets import H200_SECOND, RUNS_DIR, set_of  # noqa: E402
from warpspeed.validation.reference import (  # noqa: E402
    LBM,
    ReferenceDataError,
    predictions,
)
from warpspeed.validation.transfer import DEV_SETS, FIT_BAND, fit_rows  # noqa: E402

#: The third run's files whose sets are scored (the check sets of ACCURACY.md
#: that time whole kernels on unpadded and padded blocks).
THIRD = ("H200-heldout", "H200-occupancy", "H200-check")
#: The one-sector request rate over the whole-line rate (module docstring).
REQUEST_RATE = 1.12
#: DRAM latency of a loaded sector for ``--inflight`` (ns).
LOADED_DRAM_NS = 500.0


def recombine(p: Prediction, t_l2: float | None = None, l1_l2: float | None = None,
              drain_power: float = 0.0) -> float:
    """GLup/s of ``p`` with another L2 time, L1-L2 overlap exponent or drain
    power; with none given, the model's own GLup/s (MODEL.md §11)."""
    return recombine_terms(p.terms, t_l2, l1_l2, drain_power)


def recombine_terms(t: Mapping[str, float], t_l2: float | None = None,
                    l1_l2: float | None = None, drain_power: float = 0.0) -> float:
    """:func:`recombine` on a prediction's ``terms`` alone."""
    tl2 = t["t_l2_ns"] if t_l2 is None else t_l2
    if l1_l2 is None:  # the model's own overlap: glups_from_terms
        glups = glups_from_terms({**t, "t_memory_ns": max(tl2, t["t_dram_ns"])})
    else:
        tf, tl1, td = t["t_fp_ns"], t["t_l1_ns"], t["t_dram_ns"]
        pf, pl = t["fp_overlap_exponent"], t["l1_overlap_exponent"]
        tu = max(overlap(tf, td, pf), overlap(tl1, td, pl), overlap(tf, tl2, l1_l2),
                 overlap(tl1, tl2, l1_l2), t.get("t_block_launch_ns", 0.0))
        glups = t["updates"] / kernel_time_ns(tu, t["updates"], t["waves"],
                                              1000.0 * t["block_chain_us"],
                                              1000.0 * t["launch_us"])
    return glups * t["block_drain"] ** drain_power


def request_rate_l2(p: Prediction, q: float = REQUEST_RATE) -> float:
    """The L2 time with one-sector requests at ``q`` times the line rate."""
    ratio = p.terms["l2_line_ratio"]
    return p.terms["t_l2_ns"] / ratio * max(1.0, ratio / q)


def fills_l2(p: Prediction, phi: float = 1.0) -> float:
    """The L2 time with ``phi`` of the DRAM bytes passing the L2 as well."""
    dram = p.volumes.dram_load + p.volumes.dram_store
    return p.terms["t_l2_ns"] + phi * dram / p.terms["l2_bandwidth_achieved"]


def lines_fills_l2(p: Prediction, a: float = 0.8, phi: float = 0.5) -> float:
    """The L2 time with ``a`` of the line charge beyond the sectors and
    ``phi`` of the DRAM bytes passing the L2: ``(S (1 + a (r - 1)) + phi D) /
    bw_l2`` (the shape of ``--regression``, with its fitted values rounded
    towards the shipped model)."""
    t, v = p.terms, p.volumes
    sectors = v.l2_load + v.l2_store
    dram = v.dram_load + v.dram_store
    charged = sectors * (1.0 + a * (t["l2_line_ratio"] - 1.0)) + phi * dram
    return charged / t["l2_bandwidth_achieved"]


VARIANTS: dict[str, Callable[[Prediction], float]] = {
    "shipped": lambda p: recombine(p),
    "request rate": lambda p: recombine(p, t_l2=request_rate_l2(p)),
    "fills": lambda p: recombine(p, t_l2=fills_l2(p)),
    "L1-L2 exponent 3": lambda p: recombine(p, l1_l2=3.0),
    "... and drain^0.2": lambda p: recombine(p, l1_l2=3.0, drain_power=0.2),
    "lines 0.8, fills 0.5": lambda p: recombine(p, t_l2=lines_fills_l2(p)),
}


def runs() -> dict[str, list[Measurement]]:
    """The development half, the second run and the third run's check sets."""
    third = [r for name in THIRD for r in read_csv(RUNS_DIR / f"{name}.csv")]
    return {"dev": h.measurements(), "second": read_csv(RUNS_DIR / f"{H200_SECOND}.csv"),
            "third": third}


def predicted(rows: dict[str, list[Measurement]]) -> dict[tuple[str, str], list[h.Row]]:
    """Each run's rows predicted by the shipped model, per (run, set)."""
    m = load_machine("H200")
    out: dict[tuple[str, str], list[h.Row]] = collections.defaultdict(list)
    for run, data in rows.items():
        ks = h.kernels(data)
        for r in data:
            out[(run, set_of(r))].append(
                h.Row(r, predict(ks[(r.stencil, r.params, r.fold)], m, r.block)))
    return dict(out)


def set_line(group: Sequence[h.Row], glups: Callable[[Prediction], float]) -> str:
    """Median, MAPE and first pick of one set under one variant."""
    preds = [dataclasses.replace(r.p, glups=glups(r.p)) for r in group]
    ratios = [p.glups / r.m.glups for p, r in zip(preds, group)]
    best = group[first_choice(preds)].m.glups / max(r.m.glups for r in group)
    mape = 100.0 * statistics.mean(abs(x - 1.0) for x in ratios)
    return f"{statistics.median(ratios):5.2f} {mape:5.1f}% {best:5.3f}"


def rms_log(groups: dict[tuple[str, str], list[h.Row]], dev: bool,
            glups: Callable[[Prediction], float]) -> float:
    logs = [math.log(glups(r.p) / r.m.glups) for (run, _), g in groups.items()
            if (run == "dev") == dev for r in g]
    return math.sqrt(statistics.mean(x * x for x in logs))


def variants_table(groups: dict[tuple[str, str], list[h.Row]]) -> str:
    """Per set and variant: median, MAPE, first pick; then the rms log errors."""
    names = list(VARIANTS)
    lines = ["set (run)".ljust(30) + " | ".join(f"{n[:19]:>19s}" for n in names)]
    for (run, name), g in sorted(groups.items()):
        cells = " | ".join(set_line(g, VARIANTS[n]) for n in names)
        lines.append(f"{name[:22]:22s} {run:7s}" + cells)
    for dev in (True, False):
        errs = " | ".join(f"{rms_log(groups, dev, VARIANTS[n]):19.4f}" for n in names)
        lines.append(f"{'rms log, ' + ('development' if dev else 'held out'):30s}" + errs)
    return "\n".join(lines)


def counter_rows(groups: dict[tuple[str, str], list[h.Row]]) -> list[h.Row]:
    """Counter rows that move much through the L2 (the regression's rows)."""
    out = []
    for g in groups.values():
        for r in g:
            if r.m.l2_load is None or r.m.l2_store is None or r.m.dram_load is None:
                continue
            l2_tbs = (r.m.l2_load + r.m.l2_store) * r.m.glups / 1000.0
            if r.p.limiter == "l2" or l2_tbs >= 6.0:
                out.append(r)
    return out


def regression(rows: Sequence[h.Row]) -> str:
    """Fit ``t = (S + a S (r - 1) + phi D) / B`` (ps per update, counters)."""
    s = np.array([r.m.l2_load + r.m.l2_store for r in rows])
    x = s * np.array([r.p.terms["l2_line_ratio"] - 1.0 for r in rows])
    d = np.array([(r.m.dram_load or 0.0) + (r.m.dram_store or 0.0) for r in rows])
    t = np.array([1000.0 / r.m.glups for r in rows])
    fit = least_squares(lambda q: np.log((s + q[0] * x + q[1] * d) / q[2] / t),
                        [1.0, 0.0, 10.0], bounds=([0.0, 0.0, 1.0], [2.0, 2.0, 30.0]))
    a, phi, bw = fit.x
    rms = math.sqrt(float(np.mean(fit.fun ** 2)))
    return (f"{len(rows)} counter rows: a = {a:.2f}, phi = {phi:.2f}, B = {bw:.1f} TB/s, "
            f"rms log error {rms:.3f}")


def inflight(rows: Sequence[h.Row], l2_ns: float, sms: int) -> str:
    """Little's law over the load line requests per SM, largest first."""
    out = []
    for r in rows:
        lines = (r.m.l2_load or 0.0) * r.p.terms["l2_line_ratio"] / 128.0
        dram_share = min(1.0, (r.m.dram_load or 0.0) / r.m.l2_load) if r.m.l2_load else 0.0
        latency = l2_ns + dram_share * (LOADED_DRAM_NS - l2_ns)
        per_sm = lines * r.m.glups / sms * latency
        out.append((per_sm, f"{r.m.kernel:16s} {str(r.m.block):14s} {str(r.m.fold):10s} "
                            f"{per_sm:6.1f} line requests in flight per SM, DRAM share "
                            f"{dram_share:.2f}, predicted/measured {r.ratio:.2f}"))
    return "\n".join(line for _, line in sorted(out, reverse=True)[:40])


#: The L1-L2 overlap exponent over the L1-DRAM one, tried on every GPU's
#: sets (``--across-gpus``; 1.0 is the model as shipped).
RATIOS = (1.0, 1.15, 1.3, 1.5)


def gpu_sets() -> dict[str, tuple[str, list[FitRow]]]:
    """The validation's development sets but the lattice Boltzmann pairs
    (two DRAM-bound rows per GPU): name -> (GPU, the default model's terms
    and the measured GLup/s of every row)."""
    out = {}
    for s in DEV_SETS:
        if not s.name.startswith(LBM):
            data = s.load()
            out[s.name] = (s.machine, fit_rows(data, predictions("latency", data, s.machine)))
    return out


def ratio_scores(rows: Sequence[FitRow], k: float) -> tuple[float, float, float | None]:
    """MAPE, median predicted/measured and Spearman of ``rows`` with L1 work
    overlapping the L2 at ``k`` times its L1-DRAM exponent."""
    pred = np.array([recombine_terms(r.terms, l1_l2=k * r.terms["l1_overlap_exponent"])
                     for r in rows])
    meas = np.array([r.measured for r in rows])
    ratio = pred / meas
    mape = float(np.mean(np.abs(ratio - 1.0)))
    return mape, float(np.median(ratio)), rank_correlation(pred, meas)


def across_gpus(sets: dict[str, tuple[str, list[FitRow]]]) -> str:
    """Each set's scores per ratio; the joint mean MAPE over the sets whose
    median lies in the fit's band (:data:`FIT_BAND`) and, leaving each GPU
    out, the ratio the other GPUs' sets choose and the left-out GPU's MAPE
    with it and as shipped."""
    table = {name: {k: ratio_scores(rows, k) for k in RATIOS} for name, (_, rows) in sets.items()}
    lines = ["set".ljust(30) + "".join(f"{'k = ' + str(k):>22s}" for k in RATIOS)]
    for name, by_k in table.items():
        cells = "".join(f"{100 * a:7.1f}% {b:5.2f} {'-' if c is None else f'{c:5.2f}':>6s}"
                        for a, b, c in by_k.values())
        lines.append(f"{name[:29]:30s}{cells}")
    fitted = [n for n, by_k in table.items() if FIT_BAND[0] <= by_k[1.0][1] <= FIT_BAND[1]]

    def mean_mape(names: Sequence[str], k: float) -> float:
        return statistics.mean(table[n][k][0] for n in names)

    lines.append("joint mean MAPE (" + ", ".join(fitted) + "): " + ", ".join(
        f"k {k}: {100 * mean_mape(fitted, k):.2f} %" for k in RATIOS))
    for gpu in sorted({sets[n][0] for n in fitted}):
        out = [n for n in fitted if sets[n][0] == gpu]
        rest = [n for n in fitted if sets[n][0] != gpu]
        k = min(RATIOS, key=lambda x: mean_mape(rest, x))
        lines.append(f"{gpu} left out: the others choose k = {k}; {gpu}'s mean MAPE "
                     f"{100 * mean_mape(out, k):.1f} % (shipped {100 * mean_mape(out, 1.0):.1f} %)")
    return "\n".join(lines)


def wavefronts(groups: dict[tuple[str, str], list[h.Row]], m: Machine) -> str:
    """Per set, on its counter rows: the model's L1 cycles per update over
    Nsight Compute's L1 wavefronts per update (median); and on the rows the
    model calls L2-bound the counted wavefronts' time (one per SM and
    cycle) and the model's L2 time as shares of the measured time."""
    lines = []
    per_lup = m.sms * m.clock_ghz  # SM cycles per ns on the whole GPU
    for (run, name), g in sorted(groups.items()):
        rows = [(r, r.m.l1_wavefronts) for r in g if r.m.l1_wavefronts]
        if not rows:
            continue
        model = statistics.median(r.p.l1_cycles / m.warp_size / wf for r, wf in rows)
        line = f"{name[:22]:22s} {run:7s} {len(rows):3d} rows: model / counted {model:4.2f}"
        bound = [(r, wf) for r, wf in rows if r.p.limiter == "l2"]
        if bound:
            l1 = statistics.median(wf / per_lup * r.m.glups for r, wf in bound)
            l2 = statistics.median(r.p.terms["t_l2_ns"] * r.m.glups for r, _ in bound)
            line += (f"; {len(bound)} L2-bound: counted L1 {l1:4.2f}, model L2 {l2:4.2f} "
                     "of the measured time")
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--regression", action="store_true", help="the fill regression")
    ap.add_argument("--inflight", action="store_true", help="line requests in flight")
    ap.add_argument("--across-gpus", action="store_true",
                    help="the L1-L2 exponent ratio on every GPU's development sets")
    ap.add_argument("--wavefronts", action="store_true",
                    help="the model's L1 cycles against the counted L1 wavefronts")
    args = ap.parse_args(argv)
    try:
        groups = predicted(runs())
    except (ReferenceDataError, OSError) as exc:
        print(f"h200_residuals: {exc}", file=sys.stderr)
        return 2
    print("median predicted/measured GLup/s, MAPE, first pick over the measured best")
    print(variants_table(groups))
    rows = counter_rows(groups)
    if args.regression:
        print(regression(rows))
    if args.inflight:
        m = load_machine("H200")
        print(inflight(rows, float(require(m).l2_latency_ns), m.sms))
    if args.wavefronts:
        print(wavefronts(groups, load_machine("H200")))
    if args.across_gpus:
        print(across_gpus(gpu_sets()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
