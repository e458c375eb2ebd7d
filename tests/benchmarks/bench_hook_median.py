"""Median wall time of the generation hook over the kernel corpus (run as a
script, not a test; issue 28: "hook median <= 0.5 s on the corpus").

Times ``warpspeed.pystencils.create_kernel`` on every corpus case made from
assignments (generation of the case itself not included), with the
default settings or the keyword arguments given as JSON, and prints one
row per kernel and the median.

Figures (2 cores shared with other jobs, load 1.0 to 1.4; nvcc 13.0
installed):

* before issue 28 (1024 threads only, 32 registers assumed): 0.32 s;
* default (every thread count from 64 that launches, nvcc's registers):
  1.17 s (1.22 s at load 1.5 with an empty register cache; 0.78 s on the
  second run, when nvcc's counts come from the on-disk cache of
  ``warpspeed.pystencils.registers``; after the footprints were vectorised
  over blocks: 1.17 s cold, 0.72 s warm, 0.72 s with the estimate). The
  median kernels spend about half their time in pystencils generating the
  three folds and the best one again; with ``{"registers": "estimate"}`` (no nvcc): 0.70 s; with
  ``{"threads": 1024, "registers": "estimate"}``: 0.25 s, but 29 of the 58
  kernels then cannot launch any block (their registers exceed 64 per
  thread) and raise ``EmptyRankingError``.
* on a slower machine of the same kind (2 cores, load 1.0-1.6; the
  7-point Jacobi hook 1.8 s here against 0.78 s above): 2.03 s cold, 1.33 s
  warm, 1.51 s with the estimate. Split of the estimate run (medians over
  the kernels): pystencils generating the folds 0.16 s, extraction 0.06 s,
  ranking 0.80 s; the 3D kernels rank 450-600 configurations (five thread
  counts, three folds) at about 3 ms each with two workers.
* after the counting shortcuts, stacked block stages, pipelined ranking and
  folds made in parallel (same predictions), same machine, estimate:
  0.575 s on a first pass, 0.560 s best of two (0.90 s of CPU in the hook
  and its workers); run interleaved with the code before them, each in a
  fresh process and best of two: 1.04 s before, 0.65 s after (CPU 1.32 s,
  1.10 s). The 3D kernels rank their 450-600 configurations in about
  0.5 s; the D2Q9 LBM kernels spend most of their 0.6-0.9 s in pystencils,
  generating the folds and the best fold again with its block as default.
* with the faster wave volumes (shared progressions, slice-set unions) and
  the 59th corpus kernel (lbmpy's default fields), same machine, estimate,
  best of two: 0.559 s before, 0.538 s and 0.582 s in two runs after (CPU
  0.89-0.92 s): the median kernels are unchanged within this host's noise;
  the lbmpy D3Q19 kernels dropped from a median of 1.40 s to 1.08-1.17 s.
* with the best fold's kernel taking the best block without a second
  generation, no cyclic garbage collection during the hook, and faster
  sampling (same predictions), on a slower day of the same machine (load
  1.6-2.1): the code before and after run in turn, three single passes
  each, best pass per kernel: 0.670 s before, 0.500 s after (CPU 1.10 s,
  0.85 s); single-pass medians 0.75-0.83 s before, 0.50-0.62 s after. The
  D2Q9 LBM hooks lost their 0.2-0.3 s second generation (KBC 0.75 ->
  0.41 s best), the fluctuating MRT 7.9 -> 4.3 s; the median kernels are
  the 3D stencils (0.47-0.54 s), bound by ranking 500-600 configurations
  on two cores that slow each other by 15-30 % when both compute. The
  final code alone, best of two (load 1.9): 0.527 s, CPU 0.90 s.
* with the workers started by a fork server instead of forked from the
  caller (issue 37), the code before and after run in turn, two single
  passes each, best pass per kernel, at load 3.2-4.9 (other jobs on the
  host): 0.630 s before, 0.653 s after, every kernel's best configuration
  the same. The CPU column now leaves the workers out: they are children
  of the fork server, not of this process.

    .venv/bin/python tests/benchmarks/bench_hook_median.py ['{"registers": "estimate"}'] \
        [--repeat N]

Each kernel's wall and CPU time (this process and the ranking's workers)
are printed; with ``--repeat`` the corpus is timed N times in turn and each
kernel's best pass counts (the host of these figures steals up to half the
CPU time at random, so single passes vary by 20 % and more).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import tempfile
import time


def _cpu() -> float:
    """CPU seconds of this process and of its finished children: steadier
    than wall time where the host steals. The ranking's workers are the
    fork server's children, not counted here (module docstring)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kwargs", nargs="?", default="{}",
                        help="keyword arguments of create_kernel as JSON; fields of ExtractOptions "
                        "among them (e.g. registers) go into its options")
    parser.add_argument("--repeat", type=int, default=1,
                        help="passes over the corpus; each kernel's best pass counts")
    args = parser.parse_args()
    kwargs = json.loads(args.kwargs)
    os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="warpspeed-bench-"))

    import warpspeed.pystencils as wps
    from tests.corpus import CASES
    from tests.corpus.evaluate import MACHINE, options

    option_fields = {f.name for f in dataclasses.fields(wps.ExtractOptions)}

    cases = [(case, case.build()) for case in CASES if case.hook]
    best: dict[str, tuple[float, float]] = {}
    for _ in range(max(1, args.repeat)):
        for case, built in cases:
            t0, c0 = time.perf_counter(), _cpu()
            try:
                opts = dataclasses.replace(options(case), **{
                    k: v for k, v in kwargs.items() if k in option_fields})
                rest = {k: v for k, v in kwargs.items() if k not in option_fields}
                ranked = wps.create_kernel(built.assignments, built.config, machine=MACHINE,
                                           options=opts, **rest)
                top = ranked.ranking[0]
                what = (f"{len(ranked.ranking)} ranked, best {top.block} fold {top.fold}, "
                        f"{top.registers} registers ({top.registers_source})")
            except Exception as exc:  # a benchmark reports every failure and goes on
                what = f"raised {type(exc).__name__}"
            wall, cpu = time.perf_counter() - t0, _cpu() - c0
            old = best.get(case.name, (float("inf"), float("inf")))
            best[case.name] = (min(old[0], wall), min(old[1], cpu))
            print(f"{case.name:45s} {wall:6.2f} s  {cpu:6.2f} s cpu  {what}", flush=True)
    walls = [w for w, _ in best.values()]
    cpus = [c for _, c in best.values()]
    print(f"{len(best)} hooks, best of {max(1, args.repeat)}: median "
          f"{statistics.median(walls):.3f} s wall, {statistics.median(cpus):.3f} s cpu "
          f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
