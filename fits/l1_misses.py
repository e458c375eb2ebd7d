"""The L1 capacity misses of the V100 data against the paper's ``m1`` curve
(``python fits/l1_misses.py``): the evidence behind the L2-load error that
neither model removes (MODEL.md §5).

For every row of the radius-4 and radius-2 star sets with a measured L2
load, the measured miss fraction of the redundant L1 loads is
``(L2 measured - L2LoadV1) / (L1Load - L2LoadV1)``, with ``L1Load`` and
``L2LoadV1`` counted by warpspeed. The redundant loads split into

* *intra-warp*: a warp reads a sector that an earlier instruction of the
  same warp read (``L1Load`` minus the sectors each warp reads at least
  once, summed over warps);
* *inter-warp*: a warp reads a sector that another warp of its block read
  (the sectors per warp, summed, minus ``L2LoadV1``).

The script prints the measured fraction next to the paper's ``m1(O1)``,
grouped by z-fold and block width, and the rank correlation of the
measured fraction with ``O1``. What it shows on the V100 rows: flat
unfolded blocks (one thread high or deep) measure about zero misses
(radius 4: -0.011 to +0.009 at ``O1`` 1.4-2.2, where ``m1`` gives
4-8 %), radius-2 ones even less than the compulsory ``L2LoadV1`` (down to
-0.19); z-folded blocks four wide or narrower miss at about twice ``m1``
(0.29 against 0.16 at fold 4), more than all their inter-warp re-reads,
so re-reads within a warp miss too. The rank correlation of ``O1`` with
the measured fraction is 0.66: no single coverage on the paper's curve
orders both kinds of blocks.
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
from scipy.stats import spearmanr

from warpspeed.machine import load_machine
from warpspeed.validation.reference import l1_miss_rows
from warpspeed.volumes.capacity import load_fits
from warpspeed.volumes.footprint import SECTOR
from warpspeed.volumes.levels import l1_coverage
from warpspeed.volumes.sampling import WARP, Sample, distinct_sorted, sample, sorted_rows


def warp_sectors(s: Sample, n_loads: int) -> float:
    """Bytes per lattice update of the sectors each warp loads at least
    once (over all its load instructions, per field), summed over warps."""
    nb, threads = s.active.shape
    act = s.active.reshape(nb, threads // WARP, WARP)
    fields: dict[str, list[int]] = defaultdict(list)
    for k in range(n_loads):
        fields[s.accesses[k].field.name].append(k)
    total = np.zeros(nb)
    for idx in fields.values():
        a = s.addresses[idx].reshape(len(idx), nb, threads // WARP, WARP)
        a = np.moveaxis(a, 0, 2).reshape(nb, threads // WARP, -1)
        on = np.tile(act, (1, 1, len(idx)))
        total += distinct_sorted(sorted_rows(a // SECTOR, on), on.any(axis=-1)).sum(axis=1)
    lups = float(np.sum(s.active.sum(axis=1) * s.weights)) * s.lups_per_thread
    return float(np.sum(total * s.weights)) * SECTOR / lups


def main() -> int:
    machine = load_machine("V100")
    m1 = load_fits(machine.fits).m1
    table = []
    for r, k, st, meas in l1_miss_rows(machine):
        smp = sample(k, st.launch, k.loads + k.stores, st.bound)  # type: ignore[attr-defined]
        fp = st.footprint  # type: ignore[attr-defined]
        warp = warp_sectors(smp, len(k.loads))
        o1 = l1_coverage(fp, st.launch, machine)  # type: ignore[attr-defined]
        redundant = fp.l1_load - fp.l2_load_v1
        table.append((r.dataset, r.fold[2], r.block, o1, meas, m1(o1),
                      (fp.l1_load - warp) / redundant))
    print("V100 star data: measured L1 miss fraction of redundant loads against m1(O1)")
    print("set | z-fold | block | O1 | measured | m1(O1) | intra-warp share of redundant")
    for ds, fz, block, o1, meas, model, intra in sorted(table, key=lambda t: (t[1], t[0], t[2])):
        print(f"{ds} | {fz} | {block} | {o1:.2f} | {meas:+.3f} | {model:.3f} | {intra:.2f}")
    print("\nmean measured / mean m1 by z-fold and block width")
    groups: dict[tuple[int, str], list[tuple[float, float]]] = defaultdict(list)
    for _, fz, block, _, meas, model, _ in table:
        width = "bx<=4" if block[0] <= 4 else ("flat" if 1 in block[1:] else "other")
        groups[(fz, width)].append((meas, model))
    for (fz, width), v in sorted(groups.items()):
        a = np.array(v)
        print(f"  fold {fz} {width:6s} rows {len(a):2d}: measured {a[:, 0].mean():+.3f}, "
              f"m1 {a[:, 1].mean():.3f}")
    rho = spearmanr([t[3] for t in table], [t[4] for t in table])[0]
    print(f"\nSpearman(O1, measured fraction) over {len(table)} rows: {rho:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
