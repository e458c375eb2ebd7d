"""Plain scripts run at once (run as a script, not a test; issue 46: "six
copies of such a plain script run at once on two cores: each prints its
output once and gets its ranking").

Each copy is a user's script as most are written: no ``if __name__ ==
"__main__":`` guard, a line printed at module level, the generation hook
called at the top level with the default ``jobs`` (one worker per CPU).
Before issue 46 the hook's workers imported the script again, so that on a
busy machine (where the work lasts long enough to start them) every copy
printed its line twice and the workers' own rankings failed.

* default: ``--copies`` copies (6) of the issue's script, lbmpy's D3Q19 SRT
  at 128^3 on A100, 256 threads, folds (1,1,1) and (1,2,1), all at once;
* ``--corpus``: every hook case of the corpus (``tests/corpus``) as its own
  script, ``--at-once`` (2) at a time.

Each run is checked: exit status 0, the module-level line printed once,
the ranking printed (the same for every copy of one script), no worker
note. Prints one row per script and the wall time.

    .venv/bin/python tests/benchmarks/bench_plain_scripts.py [--copies N] [--start-workers]
    .venv/bin/python tests/benchmarks/bench_plain_scripts.py --corpus [--at-once N]

Figures (2 cores; the D3Q19 copies' lbmpy cache warm):

* six copies, workers as the machine decides (idle machine): 6 of 6 as
  they must be, 8.9 s wall; at load 6-9 from other jobs: 33.5 s;
* six copies, ``--start-workers``: before (ade13b1) 0 of 6: every copy
  printed its module-level line three times (itself and two workers) and
  ended with WorkerError; after: 6 of 6, one line each, the same ranking
  (78 configurations, best 128x1x2 at 4.1654 GLup/s), 23.2 s wall.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: With ``--start-workers``: every pool of a copy waits for its workers
#: before any work (as tests/search/test_workers.py's PLAIN_SCRIPT), so that the
#: workers make folds and rank: what a busy machine makes happen by chance.
START = """
from warpspeed.search import workers
_made = workers.WorkerPool.__init__
def _ready(self, *args, **kwargs):
    _made(self, *args, **kwargs)
    self.start()
    self.ready.wait()
workers.WorkerPool.__init__ = _ready
"""

D3Q19 = """
import pystencils as ps
import warpspeed.pystencils as wps
from lbmpy import LBMConfig, Method, Stencil, create_lb_update_rule
print("module level", flush=True)
rule = create_lb_update_rule(lbm_config=LBMConfig(stencil=Stencil.D3Q19, method=Method.SRT,
                                                   relaxation_rate=1.8))
config = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
ranked = wps.create_kernel(rule, config, machine="A100", threads=256,
                           folds=[(1, 1, 1), (1, 2, 1)],
                           options=wps.ExtractOptions(shape=(128, 128, 128)))
best = ranked.ranking[0]
print("ranking", len(ranked.ranking), best.block, best.fold, f"{best.glups:.4f}", flush=True)
print("worker notes", [n for n in ranked.notes if "worker" in n], flush=True)
from warpspeed.search import workers as _workers
print("workers started", _workers._server_up.is_set(), flush=True)
"""

CORPUS = """
import warpspeed.pystencils as wps
from tests.corpus import CASES
from tests.corpus.evaluate import MACHINE, options
print("module level", flush=True)
case = next(c for c in CASES if c.name == {name!r})
built = case.build()
ranked = wps.create_kernel(built.assignments, built.config, machine=MACHINE,
                           options=options(case))
best = ranked.ranking[0]
print("ranking", len(ranked.ranking), best.block, best.fold, f"{{best.glups:.4f}}", flush=True)
print("worker notes", [n for n in ranked.notes if "worker" in n], flush=True)
from warpspeed.search import workers as _workers
print("workers started", _workers._server_up.is_set(), flush=True)
"""


def _start(script: Path, cache: str) -> subprocess.Popen[bytes]:
    """``script`` started, its output going to ``script``.out and .err."""
    env = dict(os.environ, PYSTENCILS_CACHE_DIR=cache, XDG_CACHE_HOME=cache,
               PYTHONPATH=os.environ.get("BENCH_PYTHONPATH", str(ROOT)))
    with open(script.with_suffix(".out"), "wb") as out, open(script.with_suffix(".err"),
                                                              "wb") as err:
        return subprocess.Popen([sys.executable, str(script)], stdout=out, stderr=err, env=env,
                                cwd=script.parent)


def _verdict(script: Path, returncode: int) -> tuple[bool, str]:
    """Whether the run is as it must be, and its ranking line or what went wrong."""
    lines = script.with_suffix(".out").read_text().splitlines()
    err = script.with_suffix(".err").read_text()
    ranking = next((ln for ln in lines if ln.startswith("ranking")), None)
    problems = []
    if returncode != 0:
        problems.append(f"exit {returncode}: {(err.strip().splitlines() or [''])[-1]}")
    if lines.count("module level") != 1:
        problems.append(f"module level printed {lines.count('module level')} times")
    if ranking is None:
        problems.append("no ranking")
    if "worker notes []" not in lines:
        problems.append(next((ln for ln in lines if ln.startswith("worker notes")),
                             "no worker notes line"))
    if "Traceback" in err:
        problems.append(f"{err.count('Traceback')} tracebacks on stderr")
    started = next((ln for ln in lines if ln.startswith("workers started")), "")
    return not problems, "; ".join(problems) or f"{ranking}; {started}"


def _run(scripts: list[Path], at_once: int, cache: str) -> list[tuple[Path, bool, str, float]]:
    """Every script run, ``at_once`` at a time: (script, ok, what, seconds)."""
    rows: list[tuple[Path, bool, str, float]] = []
    waiting = list(scripts)
    running: list[tuple[Path, subprocess.Popen[bytes], float]] = []
    while waiting or running:
        while waiting and len(running) < at_once:
            script = waiting.pop(0)
            running.append((script, _start(script, cache), time.perf_counter()))
        ended = [r for r in running if r[1].poll() is not None]
        if not ended:
            time.sleep(0.05)
            continue
        for script, proc, t0 in ended:
            running.remove((script, proc, t0))
            seconds = time.perf_counter() - t0
            ok, what = _verdict(script, proc.returncode)
            rows.append((script, ok, what, seconds))
            print(f"{script.stem:44s} {'ok' if ok else 'FAILED':6s} {seconds:6.1f} s  {what}",
                  flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=6, help="copies of the D3Q19 script")
    parser.add_argument("--corpus", action="store_true", help="every corpus hook case instead")
    parser.add_argument("--at-once", type=int, default=None,
                        help="scripts run at once (default: all copies; 2 with --corpus)")
    parser.add_argument("--start-workers", action="store_true",
                        help="start the workers at once (as on a busy machine) in every script")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="warpspeed-plain-scripts-"))
    start = START if args.start_workers else ""
    cache = str(work / "cache")
    if args.corpus:
        sys.path.insert(0, str(ROOT))
        from tests.corpus import CASES

        scripts = []
        for case in (c for c in CASES if c.hook):
            scripts.append(work / f"{case.name}.py")
            scripts[-1].write_text(start + CORPUS.format(name=case.name))
        at_once = args.at_once or 2
    else:
        (work / "warm.py").write_text(D3Q19)  # fills lbmpy's cache: the copies derive nothing
        _run([work / "warm.py"], 1, cache)
        scripts = [work / f"copy{i}.py" for i in range(args.copies)]
        for s in scripts:
            s.write_text(start + D3Q19)
        at_once = args.at_once or len(scripts)
    t0 = time.perf_counter()
    rows = _run(scripts, at_once, cache)
    wall = time.perf_counter() - t0
    rankings = {what for _, ok, what, _ in rows if ok}
    print(f"\n{sum(ok for _, ok, _, _ in rows)} of {len(rows)} as they must be, {at_once} at "
          f"once, {wall:.1f} s wall, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
          + ("" if args.corpus else f"; {len(rankings)} distinct ranking(s)"))


if __name__ == "__main__":
    main()
