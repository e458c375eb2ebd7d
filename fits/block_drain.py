"""The block drain's spread from the achieved occupancy of the project's two
H200 runs (``python fits/block_drain.py``; MODEL.md §11 "Block drain",
:func:`warpspeed.timing.latency.drain_share`).

Every row of ``fits/data/h200`` and ``fits/measurements/H200-new.csv`` that
has Nsight Compute's achieved occupancy (``sm__warps_active``) and runs at
least two full waves gives achieved over theoretical occupancy, the
theoretical one by the model's launch with the row's own register count.
The law ``(1 + k) / (1 + k H_W)`` for blocks of ``W`` warps is fitted to them
by least squares; the script prints ``k`` (the model's
:data:`~warpspeed.timing.latency.DRAIN_SPREAD`) and the law beside the
counters per block size. With ``--effect`` it also prints the default
model's table of ``fits/h200_timing.py`` with and without the drain.

Not a test: it predicts every counter row (a minute on two cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import statistics
import sys
import tempfile

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-drain-"))

import h200_timing as h  # noqa: E402  (fits/ is the script's folder)
from scipy.optimize import minimize_scalar  # noqa: E402

from warpspeed.machine import Machine, load_machine  # noqa: E402
from warpspeed.measure import Measurement, read_csv  # noqa: E402
from warpspeed.timing import latency  # noqa: E402
from warpspeed.validation.measured_sets import H200_SECOND, RUNS_DIR  # noqa: E402
from warpspeed.volumes.launch import make_launch  # noqa: E402

#: Rows with fewer full waves than this are left out: a partial wave's
#: occupancy falls for another reason (its blocks end without successors).
MIN_WAVES = 2.0


def counter_rows() -> list[Measurement]:
    """The rows of both H200 runs with an achieved occupancy."""
    rows = h.measurements() + read_csv(RUNS_DIR / f"{H200_SECOND}.csv")
    return [r for r in rows if r.achieved_occupancy is not None]


def occupancy_points(m: Machine, rows: list[Measurement]) -> list[tuple[int, float]]:
    """(warps per block, achieved over theoretical occupancy) of each row
    that runs :data:`MIN_WAVES` full waves or more."""
    kernels = h.kernels(rows)
    points = []
    for r in rows:
        kernel = kernels[(r.stencil, r.params, r.fold)]
        launch = make_launch(kernel, m, r.block)
        if math.prod(launch.grid) / launch.wave_blocks < MIN_WAVES:
            continue
        threads = math.prod(r.block)
        theoretical = launch.occupancy.blocks_per_sm * threads / m.max_threads_per_sm
        points.append((math.ceil(threads / m.warp_size),
                       float(r.achieved_occupancy) / 100.0 / theoretical))
    return points


def fit_spread(points: list[tuple[int, float]]) -> float:
    """``k`` minimising the squared differences of the law to the points."""
    res = minimize_scalar(
        lambda k: sum((latency.drain_share(w, k) - y) ** 2 for w, y in points),
        bounds=(0.0, 2.0), method="bounded", options={"xatol": 1e-4})
    return float(res.x)


def report(points: list[tuple[int, float]], k: float) -> str:
    lines = [f"k = {k:.3f} from {len(points)} rows (the model uses "
             f"{latency.DRAIN_SPREAD})",
             f"{'warps/block':>11s} {'rows':>5s} {'counted':>8s} {'law':>6s}"]
    for w in sorted({w for w, _ in points}):
        ys = [y for ww, y in points if ww == w]
        lines.append(f"{w:11d} {len(ys):5d} {statistics.mean(ys):8.3f} "
                     f"{latency.drain_share(w, k):6.3f}")
    return "\n".join(lines)


def effect(m: Machine) -> str:
    """The table of ``fits/h200_timing.py`` with the drain and without."""
    rows = h.measurements()
    kernels = h.kernels(rows)
    shipped = h.table(h.predict_all(m, rows, kernels), "with the block drain")
    made = latency.block_drain
    latency.block_drain = lambda kernel, launch, warp_size: 1.0  # type: ignore[assignment]
    try:
        without = h.table(h.predict_all(m, rows, kernels), "without")
    finally:
        latency.block_drain = made  # type: ignore[assignment]
    return f"{shipped}\n\n{without}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--effect", action="store_true", help="the H200 table with and without")
    args = parser.parse_args(argv)
    m = load_machine("H200")
    points = occupancy_points(m, counter_rows())
    print(report(points, fit_spread(points)))
    if args.effect:
        print()
        print(effect(dataclasses.replace(m)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
