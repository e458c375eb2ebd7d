"""The L1 cost of what a warp issues, an experiment beside MODEL.md §4's
half-warp count (issue 21, part 2; :func:`l1_pipe_cycles_per_warp_lup`,
which ``fits/l1_evidence.py`` compares with the half-warp count), and its
check against the public A100 L1 stride benchmark (``python
fits/l1_pipe.py [GPU]``, default ``a100``): the evidence and the fit behind
:data:`TAG_CYCLES_PER_LINE`.

``shared/data/microbench/l1_strides/<gpu>.csv`` (te42kyfo/gpu-benches
1c36d50) measures one warp-wide load instruction from the L1 for float and
double: lanes ``stride`` elements apart, or 2-D blocks ``w x (1024 / w)``
over rows of 4098 elements. For each pattern the script counts, from the
addresses alone, the data wavefronts (32 banks of 4 B, passes of 128 B:
a warp of floats, half warps of doubles; :func:`pass_wavefronts`)
and the distinct 128 B lines, and compares them with the measured
wavefront counter and cycles. The tag cost per further line is the least
squares slope of ``cycles - 1`` over ``lines - 1`` on the rows whose data
stage needs one wavefront per pass; the model is then
``max(wavefronts, 1 + slope * (lines - 1))`` on every row.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

from warpspeed.validation.reference import shared_dir
from warpspeed.volumes.l1 import lanes_per_pass, pass_wavefronts, pipe_cycles_per_warp_lup
from warpspeed.volumes.sampling import Sample

LINE = 128
#: Tag-stage cycles per further 128 B line a warp instruction touches,
#: least squares (0.283) over the A100 rows of the public L1 stride benchmark
#: (``fits/l1_pipe.py``, ``shared/data/microbench/l1_strides/a100.csv``,
#: te42kyfo/gpu-benches 1c36d50) where the data stage needs one wavefront.
#: (The Hopper family file carries the H200's own slope, 0.249.)
TAG_CYCLES_PER_LINE = 0.28


def l1_pipe_cycles_per_warp_lup(s: Sample, tag_cycles: float = TAG_CYCLES_PER_LINE) -> float:
    """The warp-pipe count of MODEL.md §4
    (:func:`warpspeed.volumes.l1.pipe_cycles_per_warp_lup`, the L1 count of
    the Hopper family) at ``tag_cycles`` per further line (the A100
    micro-benchmark's slope by default; ``fits/l1_evidence.py`` scans it)."""
    return pipe_cycles_per_warp_lup(s, tag_cycles)


def pattern_addresses(kind: str, itemsize: int, param: int, pitch: int) -> np.ndarray:
    """Byte addresses of one warp's 32 lanes in a benchmark pattern."""
    lane = np.arange(32)
    if kind == "stride":
        return lane * param * itemsize
    return ((lane // param) * pitch + lane % param) * itemsize


def counts(kind: str, itemsize: int, param: int, pitch: int) -> tuple[int, int]:
    """(data wavefronts, distinct 128 B lines) of one warp instruction."""
    a = pattern_addresses(kind, itemsize, param, pitch)
    lanes = lanes_per_pass(itemsize)
    wf = pass_wavefronts(a.reshape(-1, lanes), np.ones((32 // lanes, lanes), bool), itemsize)
    return int(wf.sum()), len(np.unique(a // LINE))


def rows(gpu: str = "a100") -> list[dict[str, object]]:
    path = shared_dir() / "data" / "microbench" / "l1_strides" / f"{gpu}.csv"
    out = []
    with Path(path).open() as fh:
        for r in csv.DictReader(fh):
            itemsize = 4 if r["type"] == "float" else 8
            wf, lines = counts(r["pattern"], itemsize, int(r["stride_or_width"]),
                               int(r["stride_or_pitch"]))
            out.append({**r, "itemsize": itemsize, "wf": wf, "lines": lines,
                        "cycles": float(r["cycles_per_warp_load"]),
                        "lsu": float(r["lsu_wavefronts_per_warp_load"])})
    return out


def fit_slope(data: list[dict[str, object]]) -> float:
    """Least squares slope through the origin of ``cycles - 1`` over
    ``lines - 1`` where one wavefront per pass suffices."""
    sel = [r for r in data if r["wf"] == 32 // lanes_per_pass(r["itemsize"])  # type: ignore[arg-type]
           and r["lines"] > 1]  # type: ignore[operator]
    x = np.array([r["lines"] for r in sel], float) - 1
    y = np.array([r["cycles"] for r in sel], float) - 1
    return float(x @ y / (x @ x))


def main(argv: list[str]) -> int:
    gpu = argv[0] if argv else "a100"
    data = rows(gpu)
    slope = fit_slope(data)
    err = []
    print("type pattern param | wavefronts (counter) | lines | cycles measured, model")
    for r in data:
        model = max(r["wf"], 1 + slope * (r["lines"] - 1))  # type: ignore[operator]
        err.append(abs(model / r["cycles"] - 1))  # type: ignore[operator]
        print(f"{r['type']:6s} {r['pattern']:6s} {r['stride_or_width']:>3s} | "
              f"{r['wf']:3d} ({r['lsu']:5.2f}) | {r['lines']:3d} | "
              f"{r['cycles']:6.2f} {model:6.2f}")
    agree = np.mean([r["wf"] == round(r["lsu"]) for r in data])  # type: ignore[arg-type]
    print(f"tag cycles per further line: {slope:.3f}; wavefronts equal the counter on "
          f"{100 * agree:.0f} % of rows; cycles MAPE {100 * np.mean(err):.1f} % "
          f"over {len(data)} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
