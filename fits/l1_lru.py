"""Can an LRU simulation of the L1 replace the paper's ``m1`` curve?
(``python fits/l1_lru.py``; a few minutes). The record of an experiment
that did not work, kept so that it is not repeated blindly (MODEL.md §5).

For one interior block of every radius-4 and radius-2 star row with a
measured L2 load, the script replays the block's load instructions
through a fully associative LRU cache of 128 B lines with 32 B sectors,
of the L1 size divided by the resident blocks per SM, in two issue
orders with no fitted constant:

* ``burst``: each warp issues all its loads before the next warp starts
  (greedy scheduling of independent loads);
* ``lockstep``: all warps of the block issue load 1, then all load 2, ...

and compares the simulated miss fraction of the redundant loads with the
measured one (as ``fits/l1_misses.py`` computes it). Loads are replayed
in the kernel's program order; the order nvcc emits is not known.

What it shows on the V100 data: *burst* misses almost nothing (Spearman
0.19 with the measured fractions, mean absolute error 0.056);
*lockstep* gets the z-folded radius-2 blocks about right (fold 4, four
wide, three of four rows: 0.21-0.26 against 0.30-0.31 measured) but makes the narrow
unfolded radius-4 blocks miss 0.29-0.64 where 0.03-0.12 is measured
(Spearman 0.67, as the paper's ``O1``). The real warp interleaving lies
between the two and would need a fitted constant the issue does not
allow, so the model keeps ``m1``.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np
from scipy.stats import spearmanr

from warpspeed.machine import load_machine
from warpspeed.validation.reference import l1_miss_rows
from warpspeed.volumes.footprint import SECTOR
from warpspeed.volumes.sampling import WARP, sample

LINE = 128
ORDERS = ("burst", "lockstep")


def lru_sectors(events: Iterable[tuple[object, frozenset[int]]], capacity: int) -> int:
    """Sectors fetched by a fully associative LRU cache of ``capacity``
    lines, for a sequence of (line, sectors read in it) events: a line
    that is resident costs only its sectors not yet fetched; a line that
    is not is allocated (evicting the least recently used) and costs all
    the sectors read."""
    cache: OrderedDict[object, set[int]] = OrderedDict()
    fetched = 0
    for line, sectors in events:
        have = cache.get(line)
        if have is None:
            fetched += len(sectors)
            cache[line] = set(sectors)
            if len(cache) > capacity:
                cache.popitem(last=False)
        else:
            fetched += len(sectors - have)
            have |= sectors
            cache.move_to_end(line)
    return fetched


def block_events(addresses: np.ndarray, active: np.ndarray, fields: list[str], order: str
                 ) -> list[tuple[object, frozenset[int]]]:
    """The (line, sectors) events of one block's loads, ``addresses`` of
    shape (loads, threads), in ``burst`` or ``lockstep`` order."""
    n_loads, threads = addresses.shape
    warps = range(threads // WARP)
    pairs = ([(w, i) for w in warps for i in range(n_loads)] if order == "burst"
             else [(w, i) for i in range(n_loads) for w in warps])
    out: list[tuple[object, frozenset[int]]] = []
    for w, i in pairs:
        lanes = slice(w * WARP, (w + 1) * WARP)
        a = addresses[i, lanes][active[lanes]]
        lines: dict[int, set[int]] = {}
        for s in np.unique(a // SECTOR).tolist():
            lines.setdefault(s * SECTOR // LINE, set()).add(s)
        out.extend(((fields[i], ln), frozenset(ss)) for ln, ss in lines.items())
    return out


def simulated_fractions(kernel: object, machine: object, stage: object) -> dict[str, float]:
    """Simulated miss fraction of the redundant loads of one interior block
    of the block stage ``stage``, per issue order."""
    launch = stage.launch  # type: ignore[attr-defined]
    smp = sample(kernel, launch, kernel.loads, stage.bound)  # type: ignore[attr-defined]
    b = int(np.argmax(smp.weights))  # the most common (interior) block
    fields = [a.field.name for a in kernel.loads]  # type: ignore[attr-defined]
    capacity = machine.l1_bytes // LINE // launch.occupancy.blocks_per_sm  # type: ignore[attr-defined]
    out = {}
    for order in ORDERS:
        events = block_events(smp.addresses[:, b, :], smp.active[b], fields, order)
        unique = len({(ln[0], s) for ln, ss in events for s in ss})  # type: ignore[index]
        redundant = sum(len(ss) for _, ss in events) - unique
        out[order] = (lru_sectors(events, capacity) - unique) / redundant if redundant else 0.0
    return out


def main() -> int:
    machine = load_machine("V100")
    table = []
    for r, k, st, meas in l1_miss_rows(machine):
        sims = simulated_fractions(k, machine, st)
        table.append((r.dataset, r.fold[2], r.block, meas, *(sims[o] for o in ORDERS)))
    print("V100 star data: measured L1 miss fraction of redundant loads against LRU replays")
    print("set | z-fold | block | measured | burst | lockstep")
    for ds, fz, block, meas, burst, lock in table:
        print(f"{ds} | {fz} | {block} | {meas:+.3f} | {burst:.3f} | {lock:.3f}")
    a = np.array([t[3:] for t in table])
    for j, name in ((1, "burst"), (2, "lockstep")):
        print(f"{name}: Spearman {spearmanr(a[:, 0], a[:, j])[0]:.2f}, "
              f"mean absolute error {np.mean(np.abs(a[:, 0] - a[:, j])):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
