"""Benchmark: prediction time against the number of accesses (issue 21).

Run: .venv/bin/python tests/benchmarks/bench_accesses.py [--rank] [--jobs J]

The 15x15 convolution of ``stencils/convolution2d.py`` on A100 with tiles
1x1, 2x2, 2x4 and 4x4 (225, 900, 1800 and 3600 loads per thread) at block
(32, 16, 1), where no two loads of a thread coincide (columns 32 apart,
rows 16 apart), so every access is counted. Prints the median warm
prediction time of each (targets: 225 accesses <= 50 ms, 3600 <= 0.5 s),
the kernel construction time, and the growth exponent ``p`` of a
least-squares fit ``time ~ accesses**p`` (1 is linear).

``--rank`` also ranks the scan's whole design space from the command-line
path (``rank`` with 60 block shapes, ``bx`` = 16..256 in steps of 16,
``by`` = 1, 2, 4, 8, 16 with at most 1024 threads, times the 16 foldings:
960 configurations; target <= 60 s on 2 cores) and prints the time.
Not a test, so a noisy machine cannot flake CI.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import warpspeed as ws
from stencils import convolution2d

TILES = ((1, 1), (2, 2), (2, 4), (4, 4))
BLOCK = (32, 16, 1)


def median_s(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def scan_blocks() -> list[tuple[int, int, int]]:
    """The 60 block shapes of the convolution scan's design space."""
    return [(bx, by, 1) for by in (1, 2, 4, 8, 16) for bx in range(16, 257, 16)
            if bx * by <= 1024]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rank", action="store_true", help="also rank the 960 configurations")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for --rank")
    args = ap.parse_args()
    machine = ws.load_machine("A100")
    ws.predict(convolution2d.kernel(filter_size=3), machine, BLOCK)  # imports, caches
    counts, times = [], []
    for tx, ty in TILES:
        build = median_s(lambda a=tx, b=ty: convolution2d.kernel(tile_x=a, tile_y=b), 3)
        k = convolution2d.kernel(tile_x=tx, tile_y=ty)
        ws.predict(k, machine, BLOCK)
        t = median_s(lambda q=k: ws.predict(q, machine, BLOCK), 5)
        n = len(k.loads) + len(k.stores)
        counts.append(n)
        times.append(t)
        print(f"tile {tx}x{ty}: {len(k.loads)} loads + {len(k.stores)} stores, "
              f"predict median {1000 * t:.1f} ms, kernel construction {1000 * build:.1f} ms")
    p = np.polyfit(np.log(counts), np.log(times), 1)[0]
    print(f"growth exponent (time ~ accesses^p, least squares over {len(counts)} sizes): "
          f"p = {p:.2f}")
    print(f"targets: 225 accesses <= 50 ms ({1000 * times[0]:.1f} ms), "
          f"3600 <= 500 ms ({1000 * times[-1]:.1f} ms)")
    if args.rank:
        blocks = scan_blocks()
        t = time.perf_counter()
        r = ws.rank(lambda f: convolution2d.kernel(fold=f), machine,
                    folds=list(convolution2d.FOLDS), blocks=blocks, jobs=args.jobs)
        dt = time.perf_counter() - t
        print(f"rank: {r.configurations} configurations ({len(blocks)} blocks x "
              f"{len(convolution2d.FOLDS)} foldings), {r.evaluated} evaluated, "
              f"{dt:.1f} s with {args.jobs} jobs (target <= 60 s)")
        best = r.predictions[0]
        print(f"predicted best: block {best.block}, fold {best.fold}, "
              f"{best.glups:.2f} GLup/s; worst {r.predictions[-1].glups:.2f}")
    assert math.isfinite(p)


if __name__ == "__main__":
    main()
