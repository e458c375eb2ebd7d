"""Benchmark of warpspeed's pystencils frontend over the kernel corpus (run as
a script, not a test; issue 11).

For every corpus kernel (``tests/corpus``): the time to generate it with
pystencils / lbmpy (a fresh lbmpy cache, so derivations are cold), to
extract the ``ws.Kernel``, to predict one configuration on A100, and to rank
the default design space with the generation hook
``warpspeed.pystencils.create_kernel`` (1024 threads, the default folds).
Prints one row per kernel and the counts of believable predictions,
refusals and silent-implausible predictions (a prediction outside
``[LOWER, upper]`` times the hand count, or where a refusal was expected).

    .venv/bin/python tests/benchmarks/bench_corpus.py [NAME_SUBSTRING ...]
    .venv/bin/python -m tests.benchmarks.bench_corpus --no-hook
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from typing import Any


def _hook(case: Any, built: Any) -> tuple[float | None, str]:
    """Seconds and a one-line summary of ``create_kernel`` over the default
    design space (``None`` seconds when the case has no assignments)."""
    import warpspeed.pystencils as wps
    from tests.corpus.evaluate import MACHINE, describe, options

    if not case.hook:
        return None, "n/a (not made from assignments)"
    t0 = time.perf_counter()
    try:
        ranked = wps.create_kernel(
            built.assignments, built.config, machine=MACHINE, options=options(case)
        )
    except Exception as exc:  # a benchmark reports every failure and goes on
        return time.perf_counter() - t0, f"raised {describe(exc)}"
    seconds = time.perf_counter() - t0
    _, ranking = ranked
    skipped = len(getattr(ranked, "skipped", ()))
    if not ranking:
        return seconds, f"0 ranked, {skipped} skipped"
    best = ranking[0]
    return seconds, f"{len(ranking)} ranked, {skipped} skipped, best {best.block} fold {best.fold}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="only cases whose name contains one of these")
    parser.add_argument("--no-hook", action="store_true", help="skip the create_kernel ranking")
    args = parser.parse_args()

    # A fresh pystencils/lbmpy cache: generation times are cold derivations.
    cache = tempfile.mkdtemp(prefix="warpspeed-bench-corpus-")
    os.environ["PYSTENCILS_CACHE_DIR"] = cache
    os.environ["XDG_CACHE_HOME"] = cache

    import warpspeed as ws
    from tests.corpus import CASES
    from tests.corpus.evaluate import (
        BELIEVABLE,
        CRASH,
        MACHINE,
        REFUSED,
        SILENT,
        WRONG_REFUSAL,
        block_for,
        evaluate,
        extract,
    )

    cases = [c for c in CASES if not args.names or any(n in c.name for n in args.names)]
    start = time.perf_counter()
    header = (
        f"{'kernel':40s} {'class':28s} {'gen s':>6s} {'extr s':>6s} {'pred ms':>7s} "
        f"{'hand':>6s} {'DRAM':>7s} {'ratio':>6s} {'verdict':18s} {'hook s':>6s}  hook"
    )
    print(header)
    print("-" * len(header))
    verdicts: Counter[str] = Counter()
    failures: list[str] = []
    for case in cases:
        t0 = time.perf_counter()
        built = case.build()
        gen = time.perf_counter() - t0

        extr: float | None = None
        pred: float | None = None
        try:
            t0 = time.perf_counter()
            extraction = extract(case, built)
            extr = time.perf_counter() - t0
            t0 = time.perf_counter()
            ws.predict(extraction.kernel, MACHINE, block_for(case, extraction))
            pred = 1e3 * (time.perf_counter() - t0)
        except Exception:  # reported below through evaluate's verdict
            pass
        outcome = evaluate(case, built)
        verdicts[outcome.verdict] += 1
        if not outcome.ok:
            failures.append(outcome.explain())

        hook_s, hook = (None, "skipped (--no-hook)") if args.no_hook else _hook(case, built)
        dram = "-" if outcome.dram is None else f"{outcome.dram:7.1f}"
        ratio = "-" if outcome.ratio is None else f"{outcome.ratio:6.3f}"
        hook_t = "-" if hook_s is None else f"{hook_s:6.2f}"
        extr_t = "-" if extr is None else f"{extr:6.3f}"
        pred_t = "-" if pred is None else f"{pred:7.1f}"
        print(
            f"{case.name:40s} {case.klass:28s} {gen:6.2f} {extr_t:>6s} {pred_t:>7s} "
            f"{case.hand.total:6g} {dram:>7s} {ratio:>6s} {outcome.verdict:18s} {hook_t:>6s}  "
            f"{hook}",
            flush=True,
        )

    print()
    refused = verdicts[REFUSED] + verdicts[WRONG_REFUSAL]
    print(
        f"{len(cases)} kernels: {verdicts[BELIEVABLE]} believable, {refused} refused "
        f"({verdicts[REFUSED]} with the expected class, {verdicts[WRONG_REFUSAL]} otherwise), "
        f"{verdicts[SILENT]} silent-implausible, {verdicts[CRASH]} crashed "
        f"({time.perf_counter() - start:.0f} s in all)"
    )
    if failures:
        print("\nNot as expected:")
        for line in dict.fromkeys(failures):
            print(f"  {line}")


if __name__ == "__main__":
    main()
