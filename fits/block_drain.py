"""The block drain's stagger from the drain run's copies at equal resident
threads (``python fits/block_drain.py``; MODEL.md §11 "Block drain",
:func:`warpspeed.timing.latency.drain_share`).

The drain run (``fits/measurements/H200-drain.csv``) timed a copy in blocks
of 128 to 1024 threads padded with shared memory to 1024 resident threads
per SM: the same resident threads, so what each block size's bytes in flight
are worth. The stagger ``a`` of the law ``1 / (1 + a (W - 1))`` for blocks of
``W`` warps is the one at which the model's predictions over measured of
these rows agree with the 256-thread block's (least squares of the logs of
their ratios to it); the script prints it beside the model's
:data:`~warpspeed.timing.latency.DRAIN_STAGGER`. As a check it prints the
law beside Nsight Compute's achieved over theoretical occupancy of both H200
runs per block size (rows of at least two full waves). With ``--effect`` it
also prints the default model's table of ``fits/h200_timing.py`` with and
without the drain.

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

#: Rows with fewer full waves than this are left out of the occupancy check: a
#: partial wave's occupancy falls for another reason (its blocks end without
#: successors).
MIN_WAVES = 2.0
#: The smallest padded block of the fit: blocks of 64 threads are bound by
#: their launch (MODEL.md §11, "Block launch").
MIN_THREADS = 128


def padded_rows() -> list[Measurement]:
    """The drain run's copies at equal resident threads (padded), blocks of
    :data:`MIN_THREADS` threads or more."""
    rows = read_csv(RUNS_DIR / "H200-drain.csv")
    return [r for r in rows if "shared_pad" in r.params and math.prod(r.block) >= MIN_THREADS]


def stagger_error(m: Machine, rows: list[Measurement], stagger: float) -> float:
    """Squared logs of each row's predicted over measured GLup/s relative to
    the 256-thread block's, with the drain's stagger at ``stagger``."""
    kernels = h.kernels(rows)
    made = latency.DRAIN_STAGGER
    latency.DRAIN_STAGGER = stagger
    try:
        ratios = {math.prod(r.m.block): r.ratio for r in h.predict_all(m, rows, kernels)}
    finally:
        latency.DRAIN_STAGGER = made
    ref = ratios[latency.DRAIN_REFERENCE_THREADS]
    return sum(math.log(v / ref) ** 2 for v in ratios.values())


def fit_stagger(m: Machine, rows: list[Measurement]) -> float:
    """``a`` minimising :func:`stagger_error`."""
    res = minimize_scalar(lambda a: stagger_error(m, rows, a), bounds=(0.0, 0.2),
                          method="bounded", options={"xatol": 1e-4})
    return float(res.x)


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


def report(points: list[tuple[int, float]], a: float) -> str:
    lines = [f"a = {a:.4f} from the padded drain rows (the model uses {latency.DRAIN_STAGGER})",
             f"check, achieved over theoretical occupancy ({len(points)} counter rows):",
             f"{'warps/block':>11s} {'rows':>5s} {'counted':>8s} {'law':>6s}"]
    for w in sorted({w for w, _ in points}):
        ys = [y for ww, y in points if ww == w]
        lines.append(f"{w:11d} {len(ys):5d} {statistics.mean(ys):8.3f} "
                     f"{latency.drain_share(w, a):6.3f}")
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
    a = fit_stagger(m, padded_rows())
    print(report(occupancy_points(m, counter_rows()), a))
    if args.effect:
        print()
        print(effect(dataclasses.replace(m)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
