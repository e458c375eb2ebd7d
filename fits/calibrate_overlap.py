"""Calibrate two terms of the default timing model on public micro-benchmarks
(``python fits/calibrate_overlap.py``): the overlap of FP work with the
memory stream, and the launch overhead of a kernel (MODEL.md §11).

Both come from ``shared/data/microbench`` (te42kyfo/gpu-benches, commit
1c36d50; see its README), never from kernel measurements:

* **FP/memory overlap** (``roofline/<gpu>.csv``): every thread streams
  through two arrays and runs ``fma_iterations`` dependent FMA steps per
  element, so the flops per byte grow from 0.25. The memory time per byte
  is the first row's (``1 / bandwidth`` at 0.25 flop/B, FP negligible); the
  FP time per byte is ``flop_per_byte / peak`` with ``peak`` the largest
  GFlop/s of the table (the compute-bound plateau as measured, not the data
  sheet's). The exponent ``p`` of ``t = (t_fp^p + t_mem^p)^(1/p)`` is the
  one that minimises the mean absolute relative error of the measured time
  per byte over the rows where neither side is below a quarter of the
  other (the transition; outside it any ``p >= 2`` fits). Clock and power
  throttling in the transition are part of what the exponent absorbs.
* **Launch overhead** (``small_kernels/<gpu>.csv``): 10 000 back-to-back
  launches of a scale kernel in a stream; the wall time per launch at the
  smallest sizes (at most 16 384 elements, every block size) is the floor
  no kernel goes below: the median of those rows.

Only NVIDIA tables are used (the model's machines are NVIDIA GPUs). The
script prints one line per GPU with the values and where they come from;
copy them into the machine files (the sources there name this script).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warpspeed.validation import microbench as mb

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "microbench"
NVIDIA_ROOFLINE = ("a100_40", "a40", "h200", "l40")
NVIDIA_LAUNCH = ("a100_80", "a40", "h200", "l40")
#: Largest element count whose launches count as "empty" (the overhead floor).
SMALL = mb.SMALL


@dataclass(frozen=True)
class Overlap:
    """The fitted FP/memory overlap exponent of one GPU and its error."""

    gpu: str
    exponent: float
    rows: int
    mape: float


def _table(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: the micro-benchmark tables live in shared/data/microbench "
            "beside the repository (public data of te42kyfo/gpu-benches, not shipped)"
        )
    return path


def fp_overlap(gpu: str, data: Path = DATA) -> Overlap:
    """The exponent ``p`` of one GPU's roofline table (module docstring;
    warpspeed.validation.microbench.fp_overlap)."""
    o = mb.fp_overlap(_table(data / "roofline" / f"{gpu}.csv"))
    return Overlap(gpu, o.exponent, o.rows, o.mape)


def launch_overhead_us(gpu: str, data: Path = DATA) -> float:
    """The median wall time per launch of the smallest kernels, in µs."""
    return mb.launch_overhead_us(_table(data / "small_kernels" / f"{gpu}.csv"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA, help="shared/data/microbench")
    args = ap.parse_args(argv)
    try:
        overlaps = [fp_overlap(g, args.data) for g in NVIDIA_ROOFLINE]
        launches = {g: launch_overhead_us(g, args.data) for g in NVIDIA_LAUNCH}
    except FileNotFoundError as exc:
        print(f"calibrate_overlap: {exc}", file=sys.stderr)
        return 2
    print("FP/memory overlap exponent (roofline/<gpu>.csv, transition rows):")
    for o in overlaps:
        print(f"  {o.gpu:8s} p = {o.exponent:5.2f}   ({o.rows} rows, MAPE {100 * o.mape:.1f} %)")
    med = float(np.median([o.exponent for o in overlaps]))
    print(f"  median   p = {med:5.2f}   (for GPUs without a roofline table)")
    print(f"Launch overhead (small_kernels/<gpu>.csv, <= {SMALL} elements, median):")
    for g, us in launches.items():
        print(f"  {g:8s} {us:5.2f} us")
    print(f"  median   {float(np.median(list(launches.values()))):5.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
