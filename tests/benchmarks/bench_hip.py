"""HIP kernels on AMD machines (issue 27; MODEL.md §15): DRAM volumes against
the hand count, prediction time per machine, and the FluidX3D D3Q19 rows.

Run: PYTHONPATH=. .venv/bin/python tests/benchmarks/bench_hip.py

* a 7-point double star and lbmpy's D3Q19 SRT (structure of arrays, double
  and float) generated for ``Target.HIP`` by pystencils on 258^3 arrays
  (256^3 updates), predicted with both models on MI210, MI100, RX6900XT and
  the other AMD machines: DRAM bytes per update over the hand count
  (every array element read once, every interior one written once; issue
  target 0.97-1.35). The Infinity Cache does not hold these data sets
  (0.27-2.6 GB), so DRAM is the level counted;
* the median time of one prediction of the HIP star per machine (target
  < 10 ms; the kernel analysed once before);
* the FluidX3D D3Q19 rows of ``shared/data/lbm`` (FP32 and FP16S storage, 64
  threads per block) on MI100 and A40: predicted against measured MLUP/s.
Prints one line per figure; not a test.
"""

from __future__ import annotations

import csv
import statistics
import time

import pystencils as ps
import sympy as sp

import warpspeed as ws
from stencils import lbm_fluidx3d
from stencils.lbm_d3q19 import update_rule
from warpspeed.pystencils import extract
from warpspeed.validation.reference import shared_dir

N = 258
MACHINES = ("MI210", "MI100", "RX6900XT", "MI250X-GCD", "MI300X", "RX7900XTX")


def _hip(rule, dtype: str = "float64"):
    cfg = ps.CreateKernelConfig(target=ps.Target.HIP, jit=ps.no_jit, default_dtype=dtype)
    return extract(ps.create_kernel(rule, cfg)).kernel


def star() -> tuple[ws.Kernel, float]:
    src, dst = ps.fields(f"src, dst: float64[{N}, {N}, {N}]", layout="fzyx")
    nb = [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
    rule = [ps.Assignment(dst.center, sp.Rational(1, 7) * sum(src[o] for o in nb))]
    return _hip(rule), 8.0 * (N**3 / (N - 2) ** 3 + 1)


def d3q19(dtype: str) -> tuple[ws.Kernel, float]:
    size = 8 if dtype == "float64" else 4
    pdfs, tmp = ps.fields(f"pdfs(19), pdfs_tmp(19): {dtype}[{N}, {N}, {N}]", layout="fzyx")
    return _hip(update_rule(pdfs, tmp), dtype), 19.0 * size * (N**3 / (N - 2) ** 3 + 1)


def main() -> None:
    kernels = {"star7 f64": star(), "D3Q19 SoA f64": d3q19("float64"),
               "D3Q19 SoA f32": d3q19("float32")}
    for name, (k, hand) in kernels.items():
        for m in MACHINES:
            for model in ("paper", "latency"):
                p = ws.predict(k, m, (64, 4, 1) if "star" in name else (64, 2, 1), model=model)
                v = p.volumes
                print(f"{name:14s} {m:10s} {model:7s} DRAM {v.dram_load + v.dram_store:7.2f} B/LUP"
                      f" hand {hand:7.2f}  ratio {(v.dram_load + v.dram_store) / hand:.3f}"
                      f"  {p.glups:7.2f} GLup/s ({p.limiter})")
    k = kernels["star7 f64"][0]
    for m in ws.machines():
        for model in ("paper", "latency"):
            ws.predict(k, m, (64, 4, 1), model=model)
            ms = statistics.median(
                _timed(lambda m=m, model=model: ws.predict(k, m, (64, 4, 1), model=model))
                for _ in range(7))
            print(f"predict HIP star on {m:10s} {model:7s} median {ms:6.2f} ms (target < 10 ms)")
    path = shared_dir() / "data" / "lbm" / "fluidx3d_d3q19.csv"
    if not path.is_file():
        print(f"FluidX3D rows not found at {path}")
        return
    with path.open() as fh:
        rows = list(csv.DictReader(line for line in fh if not line.startswith("#")))
    for r in rows:
        machine = r["gpu"]
        for storage, col in (("fp32", "fp32_fp32_MLUPs"), ("fp16s", "fp32_fp16s_MLUPs")):
            k = lbm_fluidx3d.kernel((256, 256, 256), storage)
            for model in ("paper", "latency"):
                p = ws.predict(k, machine, (64, 1, 1), model=model)
                meas = float(r[col]) / 1000
                print(f"FluidX3D {machine:6s} {storage:5s} {model:7s} predicted {p.glups:6.2f} "
                      f"measured {meas:6.2f} GLup/s  ratio {p.glups / meas:.3f} ({p.limiter})")


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - t)


if __name__ == "__main__":
    main()
