"""The L2 plateau of a GPU with no ``l2_cache`` table, from its ``l2_stream``
table (``python fits/l2_stream.py``; MODEL.md §12, ``l2_bandwidth``).

``shared/data/microbench/l2_stream/<gpu>.csv`` (xxrjun/gpu-benches, commit
23e586d) streams arrays that fit the L2 over and over with four kernels; its
triad (three loads and a store per thread and pass) at full occupancy on
footprints of at most half the L2 is the closest to a saturated L2
(:func:`warpspeed.validation.microbench.l2_stream_plateau`), but it is not
the ``l2_cache`` benchmark's plateau that every other machine file's
``l2_bandwidth`` is. On the GPUs with both tables the script prints the
ratio of the two; the A40's file (no ``l2_cache`` table) takes its triad
plateau over the median ratio of the NVIDIA GPUs. The AMD ratios spread too
far (0.62-0.93) to carry over, so MI300X keeps its whitepaper estimate, which
the table bounds from below. Nothing here is fitted to kernel measurements.

The same tables measure the Infinity Cache of the GPUs that have one
(:func:`warpspeed.validation.microbench.llc_stream_plateau`: the read kernel
between 1.5 x the whole L2 and 0.75 x the cache); MI300X's and MI300A's
``mall_bandwidth`` are theirs (:data:`LLC`), and RX 6900 XT's, which its
``l2_cache`` table gives, is the check (0.87 of it).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import warpspeed as ws
from warpspeed.validation.microbench import l2_bandwidth, l2_stream_plateau, llc_stream_plateau
from warpspeed.validation.reference import ReferenceDataError, dataset_dir

#: GPU of the l2_stream table -> (machine file, the l2_cache table of the same
#: chip, or None where there is none).
PAIRS: dict[str, tuple[str, str | None]] = {
    "a100_80": ("A100-80GB", "a100_80"), "l40": ("L40", "l40"),
    "gh200": ("GH200", "h200"),  # the same GH100 chip and clock
    "mi100": ("MI100", "mi100"), "mi210": ("MI210", "mi210"),
    "rx6900xt": ("RX6900XT", "rx6900xt"),
    "a40": ("A40", None), "mi300x": ("MI300X", None),
}


#: GPU of the l2_stream table -> machine file with an Infinity Cache: the
#: window of its plateau is the file's whole L2 (every partition) and cache.
LLC: dict[str, str] = {"mi300x": "MI300X", "mi300a": "MI300A", "rx6900xt": "RX6900XT"}


def llc_plateaus(data: Path) -> dict[str, tuple[str, float, float]]:
    """Per table with a last-level cache: its machine, the read plateau in the
    cache's window and the machine file's ``mall_bandwidth`` (GB/s)."""
    out = {}
    for gpu, machine in LLC.items():
        m = ws.load_machine(machine)
        bw, _ = llc_stream_plateau(data / "l2_stream" / f"{gpu}.csv",
                                   m.l2_bytes * m.l2_partitions, m.mall_bytes)
        out[gpu] = (machine, bw, m.mall_bandwidth)
    return out


def ratios(data: Path) -> dict[str, tuple[str, float, float | None]]:
    """Per table: its machine, the triad plateau and the ``l2_cache`` plateau
    (GB/s; None without such a table), each over the machine's ``l2_bytes``."""
    out = {}
    for gpu, (machine, cache) in PAIRS.items():
        m = ws.load_machine(machine)
        triad, _ = l2_stream_plateau(data / "l2_stream" / f"{gpu}.csv", m.l2_bytes)
        ref = (l2_bandwidth(data / "l2_cache" / f"{cache}.csv", m.l2_bytes)[0]
               if cache else None)
        out[gpu] = (machine, triad, ref)
    return out


def nvidia_ratio(rows: dict[str, tuple[str, float, float | None]]) -> float:
    """The median triad / l2_cache ratio of the NVIDIA GPUs with both tables."""
    return statistics.median(t / r for name, t, r in rows.values()
                             if r and ws.load_machine(name).vendor == "NVIDIA")


def main() -> int:
    try:
        data = dataset_dir("microbench")
        rows = ratios(data)
    except (ReferenceDataError, OSError) as exc:
        print(f"l2_stream: {exc}", file=sys.stderr)
        return 2
    print(f"{'table':10s} {'machine':10s} {'triad':>8s} {'l2_cache':>9s} {'ratio':>6s} "
          f"{'file':>8s}")
    for gpu, (name, triad, ref) in rows.items():
        file = ws.load_machine(name).l2_bandwidth
        ratio = f"{triad / ref:6.2f}" if ref else "     -"
        print(f"{gpu:10s} {name:10s} {triad:8.0f} {ref or float('nan'):9.0f} {ratio} "
              f"{file:8.0f}")
    k = nvidia_ratio(rows)
    a40 = rows["a40"][1]
    print(f"NVIDIA median ratio {k:.3f}: A40 l2_bandwidth = {a40:.0f} / {k:.3f} = {a40 / k:.0f} "
          "GB/s")
    print("Infinity Cache, read plateau between 1.5 x the whole L2 and 0.75 x the cache:")
    for gpu, (name, bw, file) in llc_plateaus(data).items():
        print(f"  {gpu:10s} {name:10s} {bw:8.0f} GB/s, file's mall_bandwidth {file:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
