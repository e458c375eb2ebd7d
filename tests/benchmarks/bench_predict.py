"""Benchmark of one prediction (issue: the estimator core).

Run: .venv/bin/python tests/benchmarks/bench_predict.py

Measures, for the 3D 25-point range-4 star on 640x512x512, block (256,1,2),
on A100:
* the median wall time of ``ws.predict`` after warm-up (target <= 50 ms);
* the median time of the DRAM part (wave sets) for the domain and for a
  domain with 10x the points (target: at most 1.5x the time), both with the
  default method (direct strided-box images) and forced through islpy;
* the peak memory of a prediction (tracemalloc, target < 500 MB) and the
  process's maximum resident set size;
* on every built-in machine, both models: the first prediction (the kernel
  already analysed on A100) and the median after warm-up (target < 10 ms);
* the first prediction in a fresh process (what a plain script or
  ``python -c`` pays once, the package imported) and the wall time of
  ``warpspeed predict star3d`` (medians of three fresh processes).
Prints one line per figure; not a test, so a noisy machine cannot flake CI.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import warpspeed as ws
from stencils.star3d_by_hand import kernel
from warpspeed.model import block_stage
from warpspeed.volumes.waves import wave_volumes


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


FIRST = ("import time, warpspeed as ws; from stencils.star3d_by_hand import kernel; "
         "k = kernel(); t = time.perf_counter(); ws.predict(k, 'A100', (256, 1, 2)); "
         "print(1000 * (time.perf_counter() - t))")


def fresh_process_ms(repeat: int = 3) -> tuple[float, float]:
    """Medians over ``repeat`` fresh processes: the first ``ws.predict`` after
    importing warpspeed, and the whole ``warpspeed predict`` command."""
    firsts, commands = [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", FIRST], capture_output=True, text=True,
                             check=True)
        firsts.append(float(out.stdout.strip().splitlines()[-1]))
        t = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "warpspeed"), "predict", "star3d",
                        "--block", "256,1,2", "--machine", "A100"], capture_output=True,
                       check=True)
        commands.append(1000 * (time.perf_counter() - t))
    return statistics.median(firsts), statistics.median(commands)


def main() -> None:
    machine = ws.load_machine("A100")
    block = (256, 1, 2)
    k = kernel()
    for _ in range(3):
        ws.predict(k, machine, block)
    t = median_ms(lambda: ws.predict(k, machine, block), 30)
    print(f"predict star3d r4 640x512x512 (256,1,2) A100: median {t:.1f} ms (target <= 50 ms)")

    big = kernel(shape=(2048, 1280, 640))  # 10.0x the points of 640x512x512
    ratio_pts = 2048 * 1280 * 640 / (640 * 512 * 512)
    for method in ("auto", "isl"):
        times = {}
        for name, kk in (("640x512x512", k), ("2048x1280x640", big)):
            stage = block_stage(kk, machine, block)
            wave_volumes(kk, stage.launch, stage.bound, method)
            times[name] = median_ms(
                lambda s=stage, q=kk, m=method: wave_volumes(q, s.launch, s.bound, m), 30
            )
            print(f"DRAM part (wave sets, method={method}) {name}: median {times[name]:.1f} ms")
        r = times["2048x1280x640"] / times["640x512x512"]
        print(f"DRAM part (method={method}) for {ratio_pts:.1f}x the domain: {r:.2f}x the time "
              "(target <= 1.5x)")

    worst = 0.0
    for name in ws.machines():
        for model in ("paper", "latency"):
            t0 = time.perf_counter()
            ws.predict(k, name, block, model=model)
            first = 1000 * (time.perf_counter() - t0)
            t = median_ms(lambda n=name, mo=model: ws.predict(k, n, block, model=mo), 10)
            worst = max(worst, t)
            print(f"predict star3d r4 (256,1,2) {name:10s} {model:7s}: first {first:6.1f} ms, "
                  f"median {t:5.1f} ms")
    print(f"slowest median over every machine and model: {worst:.1f} ms (target < 10 ms)")

    first, command = fresh_process_ms()
    print(f"first prediction in a fresh process: median {first:.0f} ms; 'warpspeed predict "
          f"star3d' wall time: median {command:.0f} ms")

    tracemalloc.start()
    ws.predict(k, machine, block)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak traced memory of one prediction: {peak / 2**20:.1f} MB (target < 500 MB)")
    print(f"max resident set size of this process: {rss:.0f} MB")


if __name__ == "__main__":
    main()
