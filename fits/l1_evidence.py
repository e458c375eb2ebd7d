"""What the two L1-bound development sets say about the L1 count
(``python fits/l1_evidence.py [--rows]``; MODEL.md §4 and §11, issue
"L1-bound kernels", part 2: "choose by the data").

Two candidate counts of L1 cycles per warp and lattice update:

* **half warp** (the paper's, MODEL.md §4, what both models use): per half
  warp the most distinct 8 B words in one of 16 banks or the distinct 1 KiB
  regions (:func:`warpspeed.volumes.l1.l1_cycles_per_warp_lup`);
* **warp pipe** (``l1_pipe_cycles_per_warp_lup`` of ``fits/l1_pipe.py``): per warp
  instruction its data wavefronts (32 banks of 4 B, 128 B per pass) or
  ``1 + 0.28 (lines - 1)`` tag cycles, grounded on the public A100 L1
  stride micro-benchmark (``fits/l1_pipe.py``).

The data: the V100 ``box2d_r7`` rows (doubles) and the A100
``convolution_15x15`` rows (floats), both 225 loads per update. Measured
SM cycles per warp-update, ``SMs * clock * 32 / GLup/s``, hold all the
SM's work, so they bound the L1 time from above. Only rows whose memory
time (the default model's ``max(t_L2, t_DRAM)``) is under 30 % of the
measured time are compared ("core-bound"). Convolution rows are counted
with the loads the scan family's guards let the compiler merge
(``convolution2d``'s ``guards="auto"``, MODEL.md §1) and compared in two
groups: the unguarded shapes (4096 a multiple of block times tile, where
repeats merge) and the guarded ones (other widths, every tile of 3: every
load issued). The table printed last shows the measured y-folding gains
absent on the guarded widths.

Printed: per set and count the median and 10-90 % range of
``measured / count``, the Spearman correlation of count and measured cycles
(how well the count orders the configurations), and the consequence of
scaling a count by one constant: fitted (median ratio) on one set, the
error on the other. Then the same for the warp-pipe count with other costs
per further 128 B line than the micro-benchmark's 0.28 (a scan, not a
fit: which cost would reconcile which set). Nothing here changes the
model: the script is the evidence for what MODEL.md §4 says about both
counts.

``--rows`` prints every V100 box row (measured cycles against both counts)
and the median of measured over the half-warp count per block width:
blocks one to four threads wide take 0.84-0.89 of the paper's count (its
1 KiB rule over-charges rows spread over a half warp), eight wide 0.96,
16 and wider 1.13-1.32 (where the measured cycles also hold FP work,
45 % of the count, and the L2 traffic of the flat blocks).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from l1_pipe import TAG_CYCLES_PER_LINE, l1_pipe_cycles_per_warp_lup  # fits/l1_pipe.py
from scipy.stats import spearmanr

from warpspeed.input.addresses import thread_accesses
from warpspeed.machine import load_machine
from warpspeed.model import block_stage, finish
from warpspeed.timing import DEFAULT_MODEL, MODELS
from warpspeed.validation.reference import (
    CONVOLUTION,
    ReferenceDataError,
    Row,
    convolution_rows,
    kernel_for,
    rows,
)
from warpspeed.validation.transfer import DEV_SETS
from warpspeed.volumes.capacity import load_fits
from warpspeed.volumes.sampling import sample
from warpspeed.volumes.waves import wave_volumes

#: Rows whose memory time exceeds this share of the measured time are not
#: compared (their cycles are not SM work).
CORE_BOUND = 0.3
POW2_WIDTHS = (16, 32, 64, 128, 256)
#: Costs per further line scanned for the warp-pipe count.
TAG_SCAN = (TAG_CYCLES_PER_LINE, 0.5, 0.65, 0.8, 1.0)


@dataclass(frozen=True)
class Counted:
    """One measured row with both counts and the model's memory time, all
    in SM cycles per warp-update (32 updates)."""

    dataset: str
    block: tuple[int, int, int]
    fold: tuple[int, int, int]
    measured: float
    half_warp: float
    warp_pipe: float
    memory: float
    #: the warp-pipe count at each cost per line of :data:`TAG_SCAN`
    pipe_by_tag: tuple[float, ...] = ()


def count_row(row: Row, machine: str) -> Counted:
    """Both L1 counts and the default model's memory time of ``row``."""
    m = load_machine(machine)
    kernel = kernel_for(row)
    st = block_stage(kernel, m, row.block)
    loads, stores = thread_accesses(kernel, st.bound, st.launch.block)
    smp = sample(kernel, st.launch, loads + stores, st.bound)
    scan = tuple(l1_pipe_cycles_per_warp_lup(smp, t) for t in TAG_SCAN)
    wave = wave_volumes(kernel, st.launch, st.bound, address=MODELS[DEFAULT_MODEL].address)
    p = finish(st, wave, load_fits(m.fits))
    per_ns = m.sms * m.clock_ghz * m.warp_size  # warp-update SM cycles per ns/update
    return Counted(row.dataset, row.block, row.fold, per_ns / row.glups,  # type: ignore[operator]
                   st.l1_for(False), scan[0], per_ns * p.terms["t_memory_ns"], scan)


def box_counted() -> list[Counted]:
    """Every timed box row, counted (the two runs of a block averaged)."""
    box: dict[tuple[int, int, int], list[Row]] = defaultdict(list)
    for r in rows("box2d_r7"):
        if r.glups:
            box[r.block].append(r)
    return [count_row(Row(rs[0].dataset, rs[0].kernel, rs[0].params, b, rs[0].fold, None, None,
                          float(np.mean([r.glups for r in rs]))), "V100")  # type: ignore[misc]
            for b, rs in box.items()]


def counted_sets() -> dict[str, list[Counted]]:
    """Both sets counted: the box, and every convolution row (tiles of 3
    too), each counted with the loads its guards let the compiler merge
    (``convolution2d``'s ``guards="auto"``, MODEL.md §1)."""
    conv = next(d for d in DEV_SETS if d.name == CONVOLUTION)
    return {
        "box2d_r7 (V100)": box_counted(),
        "convolution (A100)": [count_row(r, conv.machine) for r in convolution_rows()
                               if r.glups],
    }


def divisible(c: Counted) -> bool:
    """A convolution row the scan family compiles unguarded (4096 a
    multiple of block times tile along x and y): its repeats merge."""
    return all(4096 % (b * t) == 0 for b, t in zip(c.block[:2], c.fold[:2]))


def compared(name: str, data: Sequence[Counted]) -> list[Counted]:
    """The core-bound rows of a set (module docstring)."""
    return [c for c in data if c.memory < CORE_BOUND * c.measured]


def ratio_summary(data: Sequence[Counted], count: str) -> tuple[float, float, float, float]:
    """Median, 10 % and 90 % quantiles of measured / count; Spearman."""
    q = np.array([c.measured / getattr(c, count) for c in data])
    rho = spearmanr([getattr(c, count) for c in data], [c.measured for c in data])[0]
    return (float(np.median(q)), float(np.quantile(q, 0.1)), float(np.quantile(q, 0.9)),
            float(rho))


def transfer(sets: dict[str, list[Counted]], count: str) -> list[tuple[str, str, float, float]]:
    """One constant per count, fitted (median ratio) on one set, applied to
    the other: (fitted on, applied to, constant, MAPE of the cycles)."""
    out = []
    for a, da in sets.items():
        c = ratio_summary(da, count)[0]
        for b, db in sets.items():
            if b != a:
                err = np.mean([abs(c * getattr(x, count) / x.measured - 1) for x in db])
                out.append((a, b, c, float(100 * err)))
    return out


def folding_gains(data: Sequence[Counted]) -> list[tuple[str, int, float, float]]:
    """Convolution: the median gain of tile_y 2 and 4 over tile_y 1 at the
    same block and tile_x, measured and by the warp-pipe count, for block
    widths that are powers of two and for the others."""
    base = {(c.block, c.fold[0]): c for c in data if c.fold[1] == 1}
    out = []
    for label, pow2 in (("powers of two", True), ("other widths", False)):
        for ty in (2, 4):
            meas, cnt = [], []
            for c in data:
                b = base.get((c.block, c.fold[0]))
                if c.fold[1] != ty or b is None or (c.block[0] in POW2_WIDTHS) != pow2:
                    continue
                meas.append(b.measured / c.measured)
                cnt.append(b.warp_pipe / c.warp_pipe)
            if meas:
                out.append((label, ty, float(np.median(meas)), float(np.median(cnt))))
    return out


def box_rows(data: Sequence[Counted]) -> list[str]:
    """One line per box row, then the median of measured over the
    half-warp count per block width (the ``--rows`` view)."""
    lines = ["block | measured cycles | half warp | warp pipe | measured / half warp"]
    widths: dict[int, list[float]] = defaultdict(list)
    for c in sorted(data, key=lambda c: c.block):
        widths[c.block[0]].append(c.measured / c.half_warp)
        lines.append(f"{c.block} | {c.measured:.0f} | {c.half_warp:.0f} | {c.warp_pipe:.0f} | "
                     f"{c.measured / c.half_warp:.2f}")
    lines.append("by block width: median measured / half warp (rows)")
    lines += [f"  bx = {bx:4d}: {np.median(v):.2f} ({len(v)})" for bx, v in sorted(widths.items())]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="every V100 box row and the medians "
                    "per block width instead of the comparison")
    args = ap.parse_args(argv)
    try:
        if args.rows:
            print("\n".join(box_rows(box_counted())))
            return 0
        sets = counted_sets()
    except ReferenceDataError as exc:
        print(exc, file=sys.stderr)
        return 2
    core = {name: compared(name, data) for name, data in sets.items()}
    conv = core.pop("convolution (A100)")
    core["convolution (A100), unguarded shapes"] = [c for c in conv if divisible(c)]
    core["convolution (A100), guarded shapes"] = [c for c in conv if not divisible(c)]
    print("measured SM cycles per warp-update / L1 count, core-bound rows")
    print("set | rows | count | median (10-90 %) | Spearman(count, measured)")
    for name, data in core.items():
        for count in ("half_warp", "warp_pipe"):
            med, lo, hi, rho = ratio_summary(data, count)
            print(f"{name} | {len(data)} | {count} | {med:.2f} ({lo:.2f}-{hi:.2f}) | {rho:.2f}")
    print("\none constant per count: fitted on one set, MAPE of the cycles on the other")
    for count in ("half_warp", "warp_pipe"):
        for a, b, c, err in transfer(core, count):
            print(f"{count}: fitted on {a} ({c:.2f}) -> {b}: {err:.1f} %")
    print("\nwarp pipe with another cost per further line: median (10-90 %), Spearman; "
          "one constant fitted on one set, MAPE on the other")
    for i, tag in enumerate(TAG_SCAN):
        scanned = {name: [replace(c, warp_pipe=c.pipe_by_tag[i]) for c in data]
                   for name, data in core.items()}
        cells = [f"{name}: {med:.2f} ({lo:.2f}-{hi:.2f}), {rho:.2f}"
                 for name, data in scanned.items()
                 for med, lo, hi, rho in [ratio_summary(data, "warp_pipe")]]
        moves = [f"{err:.0f} %" for *_, err in transfer(scanned, "warp_pipe")]
        print(f"  {tag:.2f} per line | " + " | ".join(cells) + " | " + ", ".join(moves))
    print("\nconvolution: median speed-up of tile_y over tile_y = 1 (measured, warp-pipe count)")
    for label, ty, meas, cnt in folding_gains(sets["convolution (A100)"]):
        print(f"  block width {label}, tile_y = {ty}: {meas:.2f}, {cnt:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
