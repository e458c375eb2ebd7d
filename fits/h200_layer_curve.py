"""The z layer condition's capacity curve ``h_z`` refitted on the H200's own
DRAM counters, and what it would change (``python fits/h200_layer_curve.py``;
MODEL.md §7, §10; issue 44).

Every H200 file carries the paper's curves (``fits = "paper"``, fitted on
V100 and A100). Where the counters show the z layer condition, the H200
keeps it longer and loses it faster than the paper's ``h_z``: the radius-4
star in 256x1x1 blocks reads 10.7-11.0 B/LUP from DRAM at ``O_z = 0.84``
where the paper's ``h_z = 0.905`` gives 14.3.

The script takes every H200 counter row with a DRAM read count (the
development half ``fits/data/h200`` and every run in ``fits/measurements``)
whose z layer overlap is at least half a byte per update and whose ``O_z``
lies inside the curve's range, lattice Boltzmann rows left out (their DRAM
excess is another matter, MODEL.md §10). With the model's other terms as
they are, it fits ``b`` and ``c`` of ``h_z(O) = exp(-b exp(c O))`` (``a = 1``
as the paper's) by least squares on the relative error of the DRAM read,
and prints:

* the fit on all rows and with each set left out;
* the DRAM read's mean relative error and the rows within 10 %, paper's
  curve against the refit;
* the same with a steeper curve (``c`` held at :data:`STEEP_C`, ``b`` refitted);
* predicted over measured GLup/s per set of both H200 runs
  (:mod:`h200_timing`'s table) with the paper's curve and either refit.

Not a test and not adopted (MODEL.md §10 says why).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import h200_timing as h  # fits/ is the script's folder
from scipy.optimize import least_squares

from warpspeed.machine import Machine, load_machine
from warpspeed.measure import Measurement, read_csv
from warpspeed.validation.measured_sets import H200_SECOND, RUNS_DIR, set_of
from warpspeed.volumes.capacity import CapacityFits, Gompertz, load_fits

#: The paper's curves (``fits/paper.toml``), which every H200 prediction uses.
PAPER_FITS = load_fits("paper")
#: The paper's ``h_z`` as ``b`` and ``c`` of ``exp(-b exp(c O))`` (``a = 1``, no ``x0``).
PAPER = (PAPER_FITS.h_z.b, -PAPER_FITS.h_z.c)
#: A steeper curve, ``b`` refitted with ``c`` held here: how steep the H200's fall is.
STEEP_C = 7.0


@dataclass(frozen=True)
class Point:
    """One counter row: its set, ``O_z``, z overlap and the rest of the
    model's DRAM read (B/LUP), and the counted DRAM read."""

    set: str
    o_z: float
    overlap: float
    rest: float
    counted: float

    def predicted(self, b: float, c: float) -> float:
        return self.rest + self.overlap * (1.0 - hz(self.o_z, b, c))


def hz(o: float, b: float, c: float) -> float:
    return math.exp(-b * math.exp(c * o))


def counter_rows() -> list[Measurement]:
    """Every H200 row with a DRAM read count, all runs."""
    rows = [r for r in h.measurements() if r.dram_load]
    for path in sorted(RUNS_DIR.glob("H200-*.csv")):
        rows += [r for r in read_csv(path) if r.dram_load]
    return rows


def points(m: Machine, rows: Sequence[Measurement]) -> list[Point]:
    """The rows the curve decides (module docstring), with their terms."""
    ks = h.kernels(rows)
    out = []
    for r in h.predict_all(m, rows, ks):
        p, kernel = r.p, ks[(r.m.stencil, r.m.params, r.m.fold)]
        overlap = p.wave.overlap[1] / (p.wave.threads * kernel.lups_per_thread)
        o_z = p.oversubscription["o_z"]
        if r.m.stencil == "lbm_d3q19" or overlap <= 0.5 or not 0.05 < o_z < 9.9:
            continue
        rest = p.volumes.dram_load - overlap * (1.0 - p.hit_fractions["h_z"])
        out.append(Point(set_of(r.m), o_z, overlap, rest, float(r.m.dram_load or 0.0)))
    return out


def fit(pts: Sequence[Point], c: float | None = None) -> tuple[float, float]:
    """``b``, ``c`` minimising the squared relative error of the DRAM read
    (``b`` alone where ``c`` is given)."""
    def residuals(x: Sequence[float]) -> list[float]:
        cc = x[1] if c is None else c
        return [(q.predicted(math.exp(x[0]), cc) - q.counted) / q.counted for q in pts]

    res = least_squares(residuals, [math.log(PAPER[0]), PAPER[1]] if c is None
                        else [math.log(PAPER[0])])
    return math.exp(res.x[0]), float(res.x[1]) if c is None else c


def agreement(pts: Sequence[Point], b: float, c: float) -> tuple[float, int]:
    """Mean relative error of the DRAM read (%) and the rows within 10 %."""
    errors = [abs(q.predicted(b, c) / q.counted - 1.0) for q in pts]
    return 100.0 * statistics.mean(errors), sum(e <= 0.10 for e in errors)


def with_curve(b: float, c: float) -> CapacityFits:
    """The paper's curves with ``h_z``'s ``b`` and ``c`` (``predict``'s ``fits``)."""
    return dataclasses.replace(PAPER_FITS, h_z=Gompertz(a=1.0, b=b, c=-c),
                               source=f"the paper's curves, h_z refitted on H200 counters "
                                      f"(b = {b:.3g}, c = {c:.3g})")


def report(m: Machine) -> str:
    pts = points(m, counter_rows())
    b, c = fit(pts)
    grid = (0.5, 0.8, 1.0, 1.2, 1.4, 1.6)
    lines = [f"h_z refitted on {len(pts)} H200 counter rows: b = {b:.3g}, c = {c:.2f} "
             f"(paper {PAPER[0]}, {PAPER[1]})",
             "O_z:      " + " ".join(f"{o:5.1f}" for o in grid),
             "paper:    " + " ".join(f"{hz(o, *PAPER):5.2f}" for o in grid),
             "refit:    " + " ".join(f"{hz(o, b, c):5.2f}" for o in grid),
             f"{'set left out':24s} {'rows':>4s} {'b':>8s} {'c':>5s}  DRAM error paper -> refit"]
    for name in sorted({q.set for q in pts}):
        test = [q for q in pts if q.set == name]
        bb, cc = fit([q for q in pts if q.set != name])
        (e0, n0), (e1, n1) = agreement(test, *PAPER), agreement(test, bb, cc)
        lines.append(f"{name:24s} {len(test):4d} {bb:8.3g} {cc:5.2f}  {e0:5.1f} % ({n0} within "
                     f"10 %) -> {e1:5.1f} % ({n1})")
    (e0, n0), (e1, n1) = agreement(pts, *PAPER), agreement(pts, b, c)
    lines.append(f"all rows: {e0:.1f} % ({n0} of {len(pts)} within 10 %) -> {e1:.1f} % ({n1})")
    bs = fit(pts, STEEP_C)[0]
    es, ns = agreement(pts, bs, STEEP_C)
    lines.append(f"steeper, c = {STEEP_C} and b = {bs:.3g}: {es:.1f} % ({ns} within 10 %); "
                 "hit fraction " + " ".join(f"{hz(o, bs, STEEP_C):5.2f}" for o in grid))
    lines += timing_lines(m, {"refit": with_curve(b, c), "steeper": with_curve(bs, STEEP_C)})
    return "\n".join(lines)


def timing_lines(m: Machine, curves: dict[str, CapacityFits]) -> list[str]:
    """Median, MAPE and best/best per set of both H200 runs, with the paper's
    ``h_z`` and with each of ``curves``."""
    lines = []
    for title, rows in (("development half", h.measurements()),
                        ("second run", read_csv(RUNS_DIR / f"{H200_SECOND}.csv"))):
        ks = h.kernels(rows)
        groups = [h.groups(h.predict_all(m, rows, ks, fits)) for fits in (None, *curves.values())]
        lines.append(f"{title}: median, MAPE, best/best; paper's h_z -> " + " -> ".join(curves))
        for name in (k for k in groups[0] if " " not in k):
            scores = [h.score(g[name]) for g in groups]
            lines.append(f"  {name:28s} " + " -> ".join(
                f"{s.median:.2f} {s.mape:5.1f} % {s.best:.3f}" for s in scores))
    return lines


def main() -> int:
    print(report(load_machine("H200")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
