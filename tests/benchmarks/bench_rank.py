"""Benchmark of ``warpspeed rank`` (a script, not a test): wall time of the
command including start-up, peak memory of its process tree, and the top 5.

Targets (issue 4): the full default design space of star3d (every
1024-thread power-of-two shape x 3 foldings) in at most 10 s with
``--jobs 2``; allen_cahn_d3q15 with 512 threads in at most 60 s; peak
memory under 2 GB.

The D3Q19 rows time the pruned top-k ranking against the full one (issue
28): the top-k path had solved each pair of accesses exactly at every block
(8.2 s for the corpus D3Q19 against 1.4 s in full); its disjointness
checks are now kept per access tuple.

Run: ``python tests/benchmarks/bench_rank.py [--jobs 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants, from /proc."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def run(args: list[str]) -> tuple[float, int, subprocess.CompletedProcess]:
    """Wall time, peak tree RSS (sampled every 20 ms) and the result."""
    exe = Path(sys.executable).with_name("warpspeed")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "warpspeed.cli"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd + args, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss(proc.pid))
            time.sleep(0.02)

    th = threading.Thread(target=sample)
    th.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    th.join()
    return wall, peak[0], subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def report(name: str, args: list[str], target: float) -> None:
    wall, peak, res = run(args)
    if res.returncode != 0:
        print(f"{name}: FAILED (exit {res.returncode}): {res.stderr.strip()}")
        return
    rows = json.loads(res.stdout)
    ok = "ok" if wall <= target and peak < 2e9 else "MISSED"
    print(f"{name}: {len(rows)} configurations in {wall:.1f} s wall (target {target:.0f} s), "
          f"peak RSS of the process tree {peak / 2**20:.0f} MiB [{ok}]")
    print(f"  $ warpspeed {' '.join(args[:-1])}")
    for r in rows[:5]:
        lim = r["limits"]
        print(f"  block {','.join(map(str, r['block'])):>10}  fold {','.join(map(str, r['fold']))}"
              f"  {r['glups']:7.2f} GLup/s  {r['limiter']:>4}   (FP {lim['fp'] or 0:.0f}, "
              f"L1 {lim['l1']:.0f}, L2 {lim['l2']:.0f}, DRAM {lim['dram']:.0f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", default="2")
    ap.add_argument("--machine", default="A100")
    a = ap.parse_args()
    print(f"{os.cpu_count()} CPUs, jobs={a.jobs}, machine={a.machine}")
    report("star3d", ["rank", "star3d", "--machine", a.machine, "--jobs", a.jobs, "--json"], 10)
    report("star3d --top 5", ["rank", "star3d", "--machine", a.machine, "--jobs", a.jobs,
                              "--top", "5", "--json"], 10)
    report("lbm_d3q19", ["rank", "lbm_d3q19", "--machine", a.machine, "--jobs", a.jobs,
                         "--json"], 10)
    report("lbm_d3q19 --top 5", ["rank", "lbm_d3q19", "--machine", a.machine, "--jobs", a.jobs,
                                 "--top", "5", "--json"], 10)
    report("allen_cahn_d3q15", ["rank", "allen_cahn_d3q15", "--machine", a.machine,
                                "--threads", "512", "--jobs", a.jobs, "--json"], 60)
    report("allen_cahn_d3q15 unfolded", ["rank", "allen_cahn_d3q15", "--machine", a.machine,
                                         "--threads", "512", "--fold", "1,1,1", "--jobs", a.jobs,
                                         "--json"], 60)


if __name__ == "__main__":
    main()
