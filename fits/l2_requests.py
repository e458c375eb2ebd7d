"""What the Hopper family's two terms do on the project's H200 measurements
(``python fits/l2_requests.py``; MODEL.md §4 "warppipe", §11 "L2", §10;
issue 44).

The Hopper family (``warpspeed/machines/families/nvidia-hopper.toml``)
differs from the other NVIDIA GPUs in two capabilities: its L1 count is the
warp-pipe count of what each warp issues (``l1_model = "warppipe"``, with
the H200 L1 stride table's 0.249 tag cycles per further line) instead of the
paper's half warps, and its L2 serves every L1 miss as a request of a whole
line (``l2_line_requests``: the L2 time is the block's line bytes over its
sector bytes times the sector time). Neither is fitted.

The script predicts every row of ``fits/data/h200`` (the development half)
and of ``fits/measurements/H200-new.csv`` (the project's second run: other
stencils, float, folds; registers from its counter rows) four ways, the
H200 file with its family as shipped and with either term or both taken
out, and prints per set and block-width class (x extent times x fold)
median predicted/measured GLup/s, MAPE and Spearman:

* ``shipped``: both terms (the default model);
* ``sectors``: the L2 serving sectors (``l2_line_requests = false``);
* ``half warps``: the half-warp L1 count of §4;
* ``neither``: the family of the other NVIDIA GPUs.

What it shows is in MODEL.md §10 ("narrow folded star blocks") and §11.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
import sys
import tempfile
from collections.abc import Callable

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-l2req-"))

import h200_timing as h  # noqa: E402  (fits/ is the script's folder)

from warpspeed.family import Family, families  # noqa: E402
from warpspeed.machine import Machine  # noqa: E402
from warpspeed.measure import Measurement, read_csv  # noqa: E402
from warpspeed.model import load_machine, predict  # noqa: E402
from warpspeed.validation.reference import dataset_dir  # noqa: E402
from warpspeed.validation.validate import spearman  # noqa: E402

NEW = os.path.join(os.path.dirname(os.path.abspath(__file__)), "measurements", "H200-new.csv")


def variants(m: Machine) -> dict[str, Machine]:
    """The H200 with its family as shipped and with each term taken out."""
    fam = m.family

    def with_family(f: Family) -> Machine:
        return dataclasses.replace(m, family=f, l1_model=f.l1_model)

    sectors = dataclasses.replace(fam, l2_line_requests=False)
    half = dataclasses.replace(fam, l1_model="halfwarp", l1_tag_cycles_per_line=0.0)
    return {"shipped": m, "sectors": with_family(sectors), "half warps": with_family(half),
            "neither": with_family(families()["nvidia"])}


def summary(ratios: list[float], pred: list[float], meas: list[float]) -> str:
    rho = spearman(pred, meas)
    mape = 100 * statistics.mean(abs(x - 1) for x in ratios)
    rank = rho if rho is not None else math.nan
    return f"{statistics.median(ratios):5.2f} {mape:5.1f}% {rank:5.2f}"


def table(rows: list[Measurement], ms: dict[str, Machine], name: Callable[[Measurement], str]
          ) -> list[str]:
    ks = h.kernels(rows)
    got = {v: [predict(ks[(r.stencil, r.params, r.fold)], m, r.block).glups for r in rows]
           for v, m in ms.items()}
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        x = r.block[0] * r.fold[0]
        width = "64+" if x >= 64 else "16-32" if x >= 16 else "<=8"
        for key in (name(r), f"{name(r)} {width}"):
            groups.setdefault(key, []).append(i)
    out = []
    for key, idx in sorted(groups.items()):
        meas = [rows[i].glups for i in idx]
        cols = " | ".join(summary([got[v][i] / rows[i].glups for i in idx],
                                  [got[v][i] for i in idx], meas) for v in ms)
        out.append(f"{key:28s} {len(idx):4d}  {cols}")
    return out


def main() -> int:
    ms = variants(load_machine("H200"))
    dev = read_csv(dataset_dir("h200") / "measurements.csv")
    new = read_csv(NEW) if os.path.exists(NEW) else []
    print("H200: predicted/measured GLup/s, median MAPE Spearman")
    print(f"{'set / block width':28s} {'rows':>4s}  " + " | ".join(f"{v:^18s}" for v in ms))
    for line in table(dev, ms, h.set_of) + table(new, ms, h.set_of):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
