"""The evidence for the AMD register budget of merged loads (MODEL.md §15,
"Merged loads and registers"; ``python fits/amd_registers.py [GPU]``,
default W7800).

For every unguarded folding of the convolution scan whose thread repeats
loads, the VGPRs holding them need in lockstep order
(:func:`warpspeed.volumes.held.held_registers`) and the measured GLup/s over
the prediction with the loads issued again (``reload_repeated=True``): a
merge that pays runs above 1, one the compiler cannot hold at or below it.
Printed per register count (median, range and blocks), with the machine's
budget (:func:`warpspeed.volumes.launch.register_budget`). Nothing is
fitted here: the budget is the VGPR file over HIP's default work-group
bound.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Collection

import numpy as np

import warpspeed as ws
from stencils import convolution2d
from warpspeed.input.addresses import guarded_separately
from warpspeed.input.expr import bind_all
from warpspeed.validation.reference import CROSSGPU, ReferenceDataError, convolution_rows
from warpspeed.volumes.held import held_registers, register_budget


def ratios(gpu: str, blocks: Collection[tuple[int, ...]] | None = None
           ) -> dict[int, list[tuple[tuple[int, ...], tuple[int, ...], float]]]:
    """Register count -> (block, fold, measured / reloaded prediction) of the
    unguarded rows of ``gpu`` whose threads repeat loads (of ``blocks`` only,
    if given)."""
    m = ws.load_machine(gpu)
    out: dict[int, list[tuple[tuple[int, ...], tuple[int, ...], float]]] = defaultdict(list)
    for r in convolution_rows(gpu):
        if blocks is not None and r.block not in blocks:
            continue
        k = convolution2d.kernel(tile_x=r.fold[0], tile_y=r.fold[1])
        if not r.glups or guarded_separately(k, r.block):  # the scan family's switch
            continue
        need = held_registers(k, bind_all((a.forms for a in k.loads + k.stores), r.block))
        if not need:
            continue
        again = convolution2d.kernel(tile_x=r.fold[0], tile_y=r.fold[1], reload_repeated=True)
        out[need].append((r.block, r.fold, float(r.glups) / ws.predict(again, m, r.block).glups))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gpu", nargs="?", default="W7800", help=f"of {list(CROSSGPU)}")
    args = ap.parse_args(argv)
    if args.gpu not in CROSSGPU:
        ap.error(f"unknown GPU {args.gpu!r}: choose from {list(CROSSGPU)}")
    try:
        table = ratios(args.gpu)
    except ReferenceDataError as exc:
        print(f"amd_registers: {exc}", file=sys.stderr)
        return 2
    budget = register_budget(ws.load_machine(args.gpu))
    print(f"{args.gpu}: register budget {budget} (None: no budget on this vendor)")
    print("| VGPRs | foldings (tile, block rows) | measured / reloaded: median | range | blocks |")
    print("|---|---|---|---|---|")
    for need in sorted(table):
        rows = table[need]
        r = np.array([x for *_, x in rows])
        folds = sorted({f"{f[0]}x{f[1]} at {b[1]}" for b, f, _ in rows})
        print(f"| {need} | {', '.join(folds)} | {np.median(r):.2f} | {r.min():.2f}-{r.max():.2f} "
              f"| {len(rows)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
