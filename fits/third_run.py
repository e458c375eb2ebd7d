"""The project's third H200 run against the default model, row by row
(``python fits/third_run.py``; MODEL.md §10, fits/measurements/README.md):

* ``occupancy``: one kernel at several occupancies, each block padded with
  shared memory it never touches (the rows' ``shared_pad``, the kernel's
  shared memory here): the measured and predicted GLup/s, the DRAM bandwidth
  the counters give and Nsight Compute's achieved occupancy;
* ``lbm_sizes``: lbmpy's D3Q19 in double and float at four sizes and two
  folds, with the float's DRAM bandwidth over the double's at the same size
  and block;
* ``drain``: a copy 1024 wide in blocks of 64-1024 threads, unpadded and at
  1024 resident threads per SM (where the block launch binds).

Not a test: it prints tables (about half a minute).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-third-"))

from warpspeed.measure import Measurement, read_csv  # noqa: E402
from warpspeed.model import predict  # noqa: E402
from warpspeed.validation import reference  # noqa: E402
from warpspeed.validation.measured_sets import (  # noqa: E402
    H200_THIRD,
    RUNS_DIR,
    measured_rows,
    set_of,
)


def dram_bandwidth(m: Measurement) -> float | None:
    """GB/s of DRAM traffic the counters give (read and write), or None."""
    if m.dram_load is None:
        return None
    return (m.dram_load + (m.dram_store or 0.0)) * m.glups


def line(m: Measurement, dev: reference.Row) -> str:
    """One row: configuration, occupancy, measured and predicted GLup/s."""
    p = predict(reference.measured_kernel(dev), "H200", m.block)
    pad = m.parameters.get("shared_pad", 0)
    bw = dram_bandwidth(m)
    occ = "-" if m.achieved_occupancy is None else f"{m.achieved_occupancy:4.0f}%"
    shape = "x".join(str(n) for n in m.parameters.get("shape", ()))
    return (f"{m.kernel:14s} {shape:12s} fold {','.join(map(str, m.fold)):5s} "
            f"block {','.join(map(str, m.block)):9s} pad {pad:6d} occ {occ:>5s} "
            f"DRAM {'-' if bw is None else f'{bw:5.0f}'} GB/s  measured {m.glups:7.2f} "
            f"predicted {p.glups:7.2f} ({p.glups / m.glups:4.2f}, {p.limiter})")


def table(run: str, names: Sequence[str]) -> list[str]:
    """The rows of one file of the run, set by set."""
    rows = read_csv(RUNS_DIR / f"{run}.csv")
    out = [f"== {run}.csv"]
    for name in names:
        out.append(f"-- set {name}")
        devs = measured_rows(name, run)
        mine = [m for m in rows if set_of(m) == name]
        out += [line(m, d) for m, d in zip(mine, devs)]
    return out


def main() -> int:
    try:
        for run, names in H200_THIRD:
            print("\n".join(table(run, names)))
    except reference.ReferenceDataError as exc:
        print(f"third_run: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
