"""Narrow blocks on the H200: is their time set by L2 *requests* rather than
L2 bytes? (``python fits/l2_requests.py``; MODEL.md §10, issue 44). An
experiment: nothing here is used by a model.

The development half of the project's H200 run (``fits/data/h200``) shows
the 7-point star over-predicted on blocks at most 8 wide (median 1.22) and
the more so the more it is folded: a block (1, 16, 16) runs 36.8 GLup/s
unfolded and 24.5 with a y-fold of 4, while the model's L1 count falls with
the fold (fewer load instructions per update) and says 31.0 and 35.6. Per
SM and update, the measured time of those rows is close to a constant
number of L2 sectors per cycle (0.25-0.32 on blocks 1, 2 and 4 wide, folded
or not), one sector per 128 B line at these widths: each L1 miss is one
request, and a request of one sector costs about what a request of a whole
line does. The L2 bandwidth of the machine file (its plateau, measured with
whole lines) is then 128 B per request.

The script prints, per set and block-width class (x extent times x fold),
median predicted/measured GLup/s, MAPE and Spearman of three variants, all
recombined from the default model's terms (:func:`warpspeed.timing.latency.
glups_from_terms`), nothing refitted:

* ``model``: the default model as shipped;
* ``lines``: the L2 time charged per line request, ``t_l2 * 4 q`` with ``q``
  the block's lines per sector (its L1 allocation over its compulsory
  sectors, MODEL.md §5; at least the sector time);
* ``lines+pipe``: as ``lines``, and the L1 time from what each warp
  issues (``fits/l1_pipe.py``: per instruction its data wavefronts or
  ``1 + t (lines - 1)`` tag cycles) with the H200 L1 micro-benchmark's slope
  ``t`` (``l1_strides/h200.csv``: 0.249 cycles per further line), instead
  of the half-warp count of §4.

What it shows (H200, development rows): ``lines`` moves the 7-point star
from 1.15 (MAPE 19.7 %) to 0.99 (13.5 %) and the lattice Boltzmann kernel's
MAPE from 15.0 % to 10.5 %, but the radius-4 star falls from 0.98 to 0.82
(its narrow blocks 0.70): their half-warp L1 count already charges them
1.3-1.45 times their measured time. With the micro-benchmark's L1 count
(``lines+pipe``) the 7-point star is 1.05 (11.9 %), the 25-point star 0.90
(15.1 %; narrow blocks 0.87, Spearman 0.97), the lattice Boltzmann set 0.98
(11.2 %): nearer, but a request of two sectors charged as a whole line is
too much for the 25-point star's 8-wide blocks, and a cost per request
between a sector and a line would be a constant fitted on one GPU. Not
adopted: the warp-pipe count misses the V100 box and the A100 convolution
by 1.6-1.9x (MODEL.md §4), so it cannot replace §4's count on every GPU.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import tempfile

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-l2req-"))

import h200_timing as h  # noqa: E402  (fits/ is the script's folder)
import l1_pipe  # noqa: E402

from warpspeed.machine import Machine, load_machine  # noqa: E402
from warpspeed.model import BlockStage, Prediction, block_stage, predict  # noqa: E402
from warpspeed.timing.latency import glups_from_terms  # noqa: E402
from warpspeed.validation.validate import spearman  # noqa: E402
from warpspeed.volumes.sampling import sample  # noqa: E402

LINE, SECTOR = 128, 32


def pipe_cycles(st: BlockStage, slope: float) -> float:
    """L1 cycles per warp and update from what each warp issues
    (:func:`l1_pipe.l1_pipe_cycles_per_warp_lup`, tag slope ``slope``)."""
    k = st.kernel
    return l1_pipe.l1_pipe_cycles_per_warp_lup(sample(k, st.launch, k.loads + k.stores, st.bound),
                                               tag_cycles=slope)


def lines_per_sector(st: BlockStage) -> float:
    """The block's distinct lines over its distinct sectors (MODEL.md §5)."""
    fp = st.footprint
    sectors = fp.l2_load_v1 * math.prod(st.launch.block) * st.kernel.lups_per_thread / SECTOR
    return fp.alloc_per_block / LINE / sectors if sectors else SECTOR / LINE


def variants(p: Prediction, q: float, m: Machine, pipe: float) -> tuple[float, float, float]:
    """GLup/s of ``model``, ``lines`` and ``lines+pipe`` (module docstring);
    ``pipe``: the warp-pipe L1 cycles per warp and update."""
    t = p.terms
    memory = max(t["t_l2_ns"] * max(1.0, LINE / SECTOR * q), t["t_dram_ns"])
    lines = glups_from_terms({**t, "t_memory_ns": memory})
    t_l1 = pipe / (m.sms * m.clock_ghz * m.warp_size)
    both = glups_from_terms({**t, "t_memory_ns": memory, "t_l1_ns": t_l1,
                             "t_core_ns": max(t["t_fp_ns"], t_l1)})
    return p.glups, lines, both


def summary(rows: list[tuple[float, float, float, float]], i: int) -> str:
    ratios = [a[i] / a[0] for a in rows]
    rho = spearman([a[i] for a in rows], [a[0] for a in rows])
    mape = 100 * statistics.mean(abs(x - 1) for x in ratios)
    rank = rho if rho is not None else math.nan
    return f"{statistics.median(ratios):5.2f} {mape:5.1f}% {rank:5.2f}"


def main() -> int:
    m = load_machine("H200")
    slope = l1_pipe.fit_slope(l1_pipe.rows("h200"))
    ms = h.measurements()
    ks = h.kernels(ms)
    groups: dict[str, list[tuple[float, float, float, float]]] = {}
    for r in ms:
        k = ks[(r.stencil, r.params, r.fold)]
        st = block_stage(k, m, r.block)  # for both counts below
        row = h.Row(r, predict(k, m, r.block))
        out = variants(row.p, lines_per_sector(st), m, pipe_cycles(st, slope))
        for key in (row.set, f"{row.set} {row.width}"):
            groups.setdefault(key, []).append((r.glups, *out))
    print("H200 development rows: predicted/measured GLup/s, median MAPE Spearman")
    heads = " | ".join(f"{v:^19s}" for v in ("model", "lines", "lines+pipe"))
    print(f"{'set / block width':30s} {'rows':>4s}  {heads}")
    for key, rows in sorted(groups.items()):
        cols = " | ".join(summary(rows, i) for i in (1, 2, 3))
        print(f"{key:30s} {len(rows):4d}  {cols}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
