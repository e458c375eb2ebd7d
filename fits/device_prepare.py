"""Prepare the kernels a lent GPU machine measures (MODEL.md §9), here, where
pystencils and lbmpy are installed: ``python fits/device_prepare.py [OUT]``
(default ``.measure_programs``) writes one folder of plans per series
(``python -m warpspeed.measure prepare``'s format), which
``fits/device_measure.sh`` times on the GPU machine with CuPy alone.

The series, in the order the device script runs them:

* ``check``: a dozen blocks of the shipped H200 run's 7-point star (512^3,
  fold 1x1x1), spread over its measured GLup/s: the new run against the
  shipped one, same kernels, same blocks;
* ``probe``: the configurations MODEL.md §10 names as still missed on the
  H200 (:data:`PROBE`), every one with Nsight Compute counters;
* ``new``: the project's stencils and variants the shipped H200 set lacks,
  every block of 256, 512 and 1024 threads of the design space
  (``design_blocks``), a few folds (:data:`NEW`);
* ``dev``: every configuration of the shipped H200 set again
  (``fits/data/h200/measurements.csv``): the design-space sets with every
  block of 256/512/1024 threads (so blocks that cannot launch come back as
  refusals), the layer and copy sets with the blocks the file names; the
  ``note`` keeps the set's name.

* ``occupancy``: the same kernel at several occupancies (:data:`OCCUPANCY`):
  each block reserves dynamic shared memory it never touches (the program's
  ``shared_bytes``, also in the row's parameters as ``shared_pad``) so that
  at most ``n`` blocks fit on an SM; every configuration profiled. What it
  separates: how the DRAM bandwidth of many-stream kernels (lbmpy's D3Q19 in
  double and float) and of a copy grows with the threads resident per SM,
  and whether 1024-thread blocks are slow for their size or their
  occupancy. Every padded block asks for the largest shared-memory carve-out
  (228 KiB of the SM's 256 KiB, leaving 28 KiB of L1); the unpadded block
  is timed beside them for the L1's share.

* ``lbm_sizes``: lbmpy's D3Q19 in double and float at four domain sizes
  and four block shapes (:data:`LBM_SIZES`), every row profiled: whether the
  float kernel's lower DRAM bandwidth at 256^3 (0.78 of the double's at the
  same blocks and occupancy, ``H200-occupancy.csv``) holds at other sizes,
  where the 19 fields lie at other distances from each other; and both
  folded 2x1x1 and 1x2x1 at 256^3 (a float thread folded along x moves a
  double's bytes per access).

* ``drain``: a copy 1024 wide (every thread works) in blocks of 64 to
  1024 threads x 1 x 1, unpadded and padded to 1024 resident threads per
  SM (:data:`DRAIN_BLOCKS`), every row profiled: what a block's size costs
  at equal resident threads (MODEL.md §11, "Block drain").

* ``heldout``: configurations no term was fitted on, predicted before they
  were measured (:data:`HELDOUT`): stars and the box in blocks of 32-256
  threads (where the block launch of MODEL.md §11 binds or not) and the
  7-point star folded along x, every row profiled.

* ``streams``: copies of 1-19 arrays at once (``stencils/streams3d.py``),
  double and float, in four block shapes (:data:`STREAMS`), every row
  profiled: what many concurrent streams cost the H200's DRAM without a
  lattice Boltzmann kernel's neighbour offsets and arithmetic.

* ``lbm_parts``: lbmpy's D3Q19 whole and in its halves (``kernel_type``:
  the collision alone, in place; the pull streaming alone), double and
  float, six blocks (:data:`LBM_PARTS`), every row profiled: which half
  carries the loss the copy of 19 arrays does not show.

* ``shifts``: the copy of 19 arrays with each read shifted one cell
  (``streams3d``'s ``shift``: none, along x, y or z, or as D3Q19's pull),
  double and float, three blocks (:data:`SHIFTS`), every row profiled:
  which of the pull streaming's offsets costs what (``lbm_parts``: the
  streaming alone is as slow as the whole step).

* ``pitch``: the same with one ghost layer and no shift, a shift along x
  or y, at 256 and 254 cells along x (rows of 258 and 256 elements: every
  row off the 128 B lines, or none), and lbmpy's D3Q19 at both
  (:data:`PITCH`), every row profiled: whether the shifts' cost is the
  rows' misalignment.

* ``pitch2``: copies of 2, 8 and 19 arrays with one ghost layer and lbmpy's
  D3Q19 at 250-256 cells along x (rows of 252-258 elements), both
  precisions, blocks 128x2x1 (:data:`PITCH2`), every row profiled: how the
  cost of rows that are not whole lines grows with the streams and the
  row's offset, for a term of its own.

* ``r4probe``: the radius-4 star folded 1x4x1 in the blocks the model ranks
  first (DRAM-bound, predicted 1.1x fast) and the ones measured fastest
  (16 wide and deep, predicted L2-bound at 0.85), and three unfolded
  (:data:`R4PROBE`), every row profiled: whether the pick's error is the
  DRAM volume of the folded blocks or the L2's whole-line charge of 16-wide
  ones (MODEL.md §10; ``fits/data/h200`` has no counters for these rows);
  and six narrow blocks folded 1x2x1, the largest share of the set's error
  (predicted L2-bound at 0.5-0.8 of the measured GLup/s, which follow the
  L1 time): whether their L2 volume holds the L1 capacity misses the
  paper's ``m1`` curve charges them (up to 0.72 of the redundant loads;
  the counters of 1-wide unfolded 7-point stars show 0.01 where ``m1``
  gives 0.15, MODEL.md §10).

* ``capacity``: what decides the L2's capacity misses (MODEL.md §10), every
  row profiled (:data:`device_series.CAPACITY`): the 7-point star on 2048 x
  NY x 32 at NY = 640, 768, 896 (``O_z`` 1.3-1.9) in 256x1x1 blocks unfolded
  and folded 1x2x1 and 1x4x1, and unfolded in 128x2x1 and 64x4x1 at 768
  (at 768 the counters show the unfolded block missing its z reuse and the
  folded one keeping half of it at the same ``O_z``: the fold, or the
  wave's depth in y?); the radius-4 star on 640 x NY x 512 at NY = 384-640
  in 256x1x1 blocks (``O_z`` 0.6-1.1, where the paper's curve and the
  counters part); and lbmpy's D3Q19 in float folded 2x1x1 in 16x4x4 blocks
  at 1 and 3 blocks per SM and unpadded (:data:`device_series.SPLIT_PADS`):
  whether the DRAM reads and writes its half-written sectors add
  (1.2-1.3x the wave's) fall with the L2's load, as the unfolded kernel's
  do when padded.

The series' lists are in ``fits/device_series.py``.

``--predictions FILE`` writes the default model's predictions on the H200
for every configuration of the chosen series (``--machine`` for another),
with the commit they were made at, so that a series is predicted before
it is measured (``fits/*_predictions.csv``).

``--list`` prints the series and their sizes without writing anything.
Stencils without generated code (``lbm_fluidx3d``, ``convolution2d``: kernel
descriptions written by hand) and the hand-written twin ``star3d_by_hand``
cannot be measured by the harness and are not in the list.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from device_series import (  # fits/ is the script's folder
    F111,
    F112,
    F121,
    F141,
    capacity_plans,
    drain_plans,
    heldout_plans,
    lbm_part_plans,
    lbm_size_plans,
    occupancy_plans,
    pitch2_plans,
    pitch_plans,
    probe_plans,
    r4probe_plans,
    shift_plans,
    stream_plans,
)

from warpspeed.errors import WarpspeedError
from warpspeed.measure import (
    Plan,
    generate_variant,
    params_from_json,
    plan_for,
    read_csv,
    write_plans,
)
from warpspeed.measure.program import versions
from warpspeed.model import load_machine, predict
from warpspeed.validation.measured_sets import set_of
from warpspeed.validation.reference import dataset_dir

THREADS = (256, 512, 1024)

#: The new series: (set name, stencil, parameters, folds).
NEW: tuple[tuple[str, str, dict[str, Any], tuple[tuple[int, int, int], ...]], ...] = (
    ("star_r2", "star3d", {"radius": 2, "shape": (640, 512, 512)}, (F111, F121, F112)),
    ("box3d", "box3d", {"shape": (640, 512, 512)}, (F111, F121, F112)),
    ("star2d", "star2d", {"shape": (8192, 8192)}, (F111, F121, F141)),
    ("lbm_d3q19_f32", "lbm_d3q19", {"precision": 32, "shape": (256, 256, 256)}, (F111,)),
    ("allen_cahn", "allen_cahn_d3q15", {"shape": (256, 256, 256)}, (F111,)),
    *(("copy_design", "copy3d", {"shape": s}, (F111,))
      for s in ((128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 1024, 512))),
)
#: Sets of the shipped run timed over the whole design space of :data:`THREADS`.
DESIGN_SETS = ("star_r1_512", "star_r4", "lbm_d3q19_f64")
CHECK_SET, CHECK_BLOCKS = "star_r1_512", 12


def spread(items: Sequence[Any], n: int) -> list[Any]:
    """``n`` items evenly spread from the first to the last."""
    if n >= len(items):
        return list(items)
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]


def check_plans(info: dict[str, str]) -> list[Plan]:
    """The cross-check series (module docstring)."""
    rows = [m for m in read_csv(dataset_dir("h200") / "measurements.csv")
            if set_of(m) == CHECK_SET and m.fold == F111]
    rows.sort(key=lambda m: m.glups)
    blocks = [m.block for m in spread(rows, CHECK_BLOCKS)]
    return [plan_for("star3d", rows[0].parameters, F111, blocks=blocks,
                     note=f"set check_{CHECK_SET}", info=info)]


def new_plans(info: dict[str, str]) -> list[Plan]:
    """The new series (module docstring)."""
    return [plan_for(stencil, params, fold, threads=THREADS, note=f"set {name}", info=info)
            for name, stencil, params, folds in NEW for fold in folds]


def dev_plans(info: dict[str, str]) -> list[Plan]:
    """The shipped H200 set again (module docstring)."""
    groups: dict[tuple[str, str, str, tuple[int, int, int]], list[tuple[int, int, int]]] = {}
    for m in read_csv(dataset_dir("h200") / "measurements.csv"):
        groups.setdefault((set_of(m), m.stencil, m.params, m.fold), []).append(m.block)
    out = []
    for (name, stencil, params, fold), blocks in sorted(groups.items()):
        design = name in DESIGN_SETS
        out.append(plan_for(stencil, params_from_json(params), fold,
                            threads=THREADS, blocks=None if design else blocks,
                            note=f"set {name}", info=info))
    return out


SERIES = {"check": check_plans, "probe": probe_plans, "new": new_plans, "dev": dev_plans,
          "occupancy": occupancy_plans, "lbm_sizes": lbm_size_plans, "drain": drain_plans,
          "heldout": heldout_plans, "streams": stream_plans, "lbm_parts": lbm_part_plans,
          "shifts": shift_plans, "pitch": pitch_plans, "pitch2": pitch2_plans,
          "r4probe": r4probe_plans, "capacity": capacity_plans}


#: The columns of ``--predictions``: the configuration, then what the model says.
PREDICTION_COLUMNS = ("set", "stencil", "params", "fold", "block", "predicted_glups", "limiter",
                      "dram_load", "dram_store", "l2_load", "l2_store", "l2_line_ratio",
                      "l1_miss_share")


def triple(t: tuple[int, int, int]) -> str:
    return "x".join(map(str, t))


def prediction_rows(plans: Sequence[Plan], machine: str) -> list[dict[str, str]]:
    """The default model's prediction of every configuration of ``plans`` on
    ``machine`` (:data:`PREDICTION_COLUMNS`), registers the kernel's own count."""
    m = load_machine(machine)
    out = []
    for plan in plans:
        kernel = generate_variant(plan.stencil, params_from_json(plan.params), plan.fold)[0]
        for block in plan.blocks:
            p = predict(kernel, m, block)
            v = p.volumes
            values = (plan.note.removeprefix("set "), plan.stencil, plan.params,
                      triple(plan.fold), triple(block), f"{p.glups:.2f}", p.limiter,
                      f"{v.dram_load:.2f}", f"{v.dram_store:.2f}", f"{v.l2_load:.2f}",
                      f"{v.l2_store:.2f}", f"{p.traits.l2_line_ratio:.3f}",
                      f"{p.hit_fractions['m1']:.3f}")
            out.append(dict(zip(PREDICTION_COLUMNS, values, strict=True)))
    return out


def write_predictions(path: Path, rows: Sequence[dict[str, str]], machine: str,
                      series: Sequence[str], commit: str) -> None:
    """``rows`` as CSV under a comment naming the machine, series and commit."""
    with path.open("w", newline="") as f:
        f.write(f"# predicted by the default model on {machine} before the series "
                f"{', '.join(series)} were measured (warpspeed {commit}; registers: the "
                "kernel's own count): python fits/device_prepare.py --predictions\n")
        writer = csv.DictWriter(f, fieldnames=PREDICTION_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=".measure_programs", type=Path)
    parser.add_argument("--series", nargs="+", choices=tuple(SERIES), default=list(SERIES))
    parser.add_argument("--list", action="store_true", help="print the series, write nothing")
    parser.add_argument("--predictions", type=Path,
                        help="write the default model's predictions of the series to this CSV")
    parser.add_argument("--machine", default="H200", help="the machine of --predictions")
    args = parser.parse_args(argv)
    info = versions()
    if args.predictions:
        plans = [p for name in args.series for p in SERIES[name](info)]
        try:
            rows = prediction_rows(plans, args.machine)
        except WarpspeedError as exc:
            print(f"device_prepare: {exc}", file=sys.stderr)
            return 2
        write_predictions(args.predictions, rows, args.machine, args.series,
                          info.get("warpspeed", "unknown"))
        print(f"{sum(len(p.blocks) for p in plans)} predictions written to {args.predictions}")
        return 0
    for name in args.series:
        plans = SERIES[name](info)
        configs = sum(len(p.blocks) for p in plans)
        print(f"{name}: {len(plans)} plans, {configs} configurations, "
              f"{sum(p.program.lups * len(p.blocks) for p in plans) / 1e9:.0f} GLup timed "
              "once each")
        if not args.list:
            write_plans(args.out / name, plans)
    if not args.list:
        print(f"written to {args.out}/ (carry it to the GPU machine)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
