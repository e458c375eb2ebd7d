"""Benchmark of one prediction of the golden sample (issue 47: one bound
kernel per block, one prediction under 2 ms).

Run: .venv/bin/python tests/benchmarks/bench_golden.py

The 3D 25-point range-4 star (``stencils/star3d_by_hand.py``) on A100 with
block (256, 1, 2), the default model: after three warm-up predictions, the
median of 7 timed ones (target < 2 ms), and the fastest of them. Prints
one line; not a test, so a noisy machine cannot flake CI.
"""

from __future__ import annotations

import statistics
import time

import warpspeed as ws
from stencils.star3d_by_hand import kernel


def main() -> None:
    machine = ws.load_machine("A100")
    block = (256, 1, 2)
    k = kernel()
    for _ in range(3):
        ws.predict(k, machine, block)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        ws.predict(k, machine, block)
        times.append(1000 * (time.perf_counter() - t))
    print(f"predict star3d r4 (256,1,2) A100: median of 7 {statistics.median(times):.2f} ms, "
          f"fastest {min(times):.2f} ms (target < 2 ms)")


if __name__ == "__main__":
    main()
