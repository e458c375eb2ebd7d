"""Benchmark of the fast suite's wall time (issue 47: under 60 s on two
cores).

Run: .venv/bin/python tests/benchmarks/bench_fast_suite.py [--runs N]

Runs the README's fast-suite command, ``python -m pytest -q -m "not slow"
-n 2``, N times (default 3) with this interpreter from the repository root,
and prints each run's wall time, the tests it reports and the median. A run
that fails is reported as failed and ends the benchmark with exit code 1.
Not a test, so a noisy machine cannot flake CI.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-n", "2"]


def one_run() -> tuple[float, str, int]:
    """Wall seconds, pytest's summary line and its exit code."""
    start = time.perf_counter()
    res = subprocess.run(COMMAND, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = res.stdout.strip().splitlines()
    return wall, lines[-1] if lines else res.stderr.strip()[-200:], res.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="how many times (default 3)")
    args = parser.parse_args(argv)
    walls = []
    for i in range(args.runs):
        wall, summary, code = one_run()
        print(f"run {i + 1}: {wall:.1f} s  {summary}")
        if code != 0:
            print("the fast suite failed")
            return 1
        walls.append(wall)
    print(f"median of {len(walls)}: {statistics.median(walls):.1f} s (target < 60 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
