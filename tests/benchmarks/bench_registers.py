"""The register estimate against nvcc over the kernel corpus (run as a
script, not a test; issue 28, issue 46: the estimate must launch the blocks
nvcc's count launches: refuse none that launches, offer none that fails).

For every corpus kernel (``tests/corpus``) that extracts: the estimate of
:mod:`warpspeed.pystencils.register_estimate`, nvcc's count for the
architecture (default ``sm_80``, the A100's), and the seconds nvcc took.
Prints one row per kernel, and the kernels where the estimate launches
other blocks than nvcc's count (1024 threads need at most 64 registers,
512 at most 128).

Figures (nvcc 13.0, sm_80, 59 extracted kernels):

* issue 28's estimate (every value held to the end of the thread): at or
  above nvcc everywhere, refusing launchable blocks on 25 kernels (float64
  D3Q19 SRT pull: 104 vs 68; a central-moment D2Q9: 146 vs 32);
* issue 46's (values held from their first to their last statement, a
  one-cell thread's values computed just before their first use): 0.74 to
  2.5 times nvcc, 1.16 in the median; the same blocks on 54 kernels,
  launchable ones refused on 5 (MRT and fluctuating D3Q19, the D3Q19 at
  exactly 64 in two layouts, the Allen-Cahn D2Q9), none offered that
  fails. nvcc takes 0.25 to 0.5 s per kernel (1.5 s for the CUB block
  reduction).

    .venv/bin/python tests/benchmarks/bench_registers.py [--arch sm_80] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only cases whose name contains one of these")
    parser.add_argument("--arch", default="sm_80")
    args = parser.parse_args()
    os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="warpspeed-bench-"))

    from tests.corpus import CASES
    from tests.corpus.evaluate import extract
    from warpspeed.pystencils.registers import estimate_registers, nvcc_registers

    below: list[str] = []
    print(f"{'kernel':42s} {'estimate':>8s} {'nvcc':>5s} {'nvcc s':>6s}")
    for case in CASES:
        if args.names and not any(n in case.name for n in args.names):
            continue
        built = case.build()
        try:
            extraction = extract(case, built)
        except Exception as exc:  # a benchmark reports every refusal and goes on
            print(f"{case.name:42s} not extracted: {type(exc).__name__}")
            continue
        est = estimate_registers(built.kernel, extraction.kernel.lups_per_thread)
        t0 = time.perf_counter()
        count = nvcc_registers(built.kernel, args.arch)
        seconds = time.perf_counter() - t0
        nv = "-" if count.registers is None else str(count.registers)
        print(f"{case.name:42s} {est:8d} {nv:>5s} {seconds:6.2f}", flush=True)
        if count.registers is not None and _threads(est) != _threads(count.registers):
            below.append(f"{case.name} ({est} vs {count.registers})")
    print(f"other blocks than nvcc's count: {below or 'none'}")


def _threads(registers: int) -> int:
    """The largest block (threads) that launches with ``registers`` per
    thread on 64 Ki registers per SM, as on every NVIDIA GPU since Kepler."""
    return 1024 if registers <= 64 else 512 if registers <= 128 else 256


if __name__ == "__main__":
    main()
