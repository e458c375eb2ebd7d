"""Benchmark of the whole generation hook on D3Q19 (run as a script, not a
test; issue 20: "whole hook, generation included, for a D3Q19 kernel
<= 5 s on 2 cores").

Times ``warpspeed.pystencils.create_kernel`` (generation of the default
folds, extraction, registers from nvcc or the estimate, ranking of every
launchable block of 64 to 1024 threads (1024 only before issue 28),
regeneration of the best) on the corpus' plain SRT pull D3Q19 and on the D3Q19 with lbmpy's
built-in periodicity along x and z, whose wrapped indices the wave stage
cuts into affine pieces (before: the isl route). Prints wall and CPU seconds of this process
(``jobs=1`` makes the CPU figure the whole work).

Figures (2 cores shared with other jobs, load average 1.6 to 2.5 with
this run), CPU seconds with ``--jobs 1`` / wall seconds with the default
jobs:

* before (f978c68): plain 16.6 / 15.2, periodic 54.4 / 42.6; most of it
  ``np.unique``'s hash table in the block footprints;
* after: plain 7.5 / 4.0, periodic 26.2 / 20.8 (periodic: about half in
  the isl wave counts of the wrapped images, half in the block stages);
* wrapped images cut into affine pieces instead of isl (idle machine):
  plain 4.0 / 3.2, periodic 8.9 / 5.9 (before, same machine: 18.4 s CPU).
* issue 28 (every thread count from 64, nvcc's 68 registers: 453 launchable
  configurations instead of 147 of 1024 threads, of which none launches),
  default jobs, load 0.8: plain 2.8 s wall, periodic 5.6 s wall.

    .venv/bin/python tests/benchmarks/bench_hook.py [--jobs J] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

CASES = ("lbm_d3q19_srt_pull_f64", "lbm_d3q19_builtin_periodic_xz_f64")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(CASES))
    parser.add_argument("--jobs", type=int, default=None, help="ranking workers (default: CPUs)")
    args = parser.parse_args()
    os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="warpspeed-bench-"))

    import warpspeed.pystencils as wps
    from tests.corpus import BY_NAME
    from tests.corpus.evaluate import options

    for name in args.names:
        case = BY_NAME[name]
        built = case.build()
        w0, c0 = time.perf_counter(), time.process_time()
        ranked = wps.create_kernel(built.assignments, built.config, machine="A100",
                                   jobs=args.jobs, options=options(case))
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        best = ranked.ranking[0]
        print(f"{name}: hook {wall:.2f} s wall, {cpu:.2f} s CPU in this process "
              f"(jobs={args.jobs}, load {os.getloadavg()[0]:.1f}); {len(ranked.ranking)} "
              f"ranked, best {best.block} fold {best.fold}")


if __name__ == "__main__":
    main()
