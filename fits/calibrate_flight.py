"""Calibrate the bytes-in-flight model of the default timing model on the
public stream micro-benchmarks (``python fits/calibrate_flight.py``).

For each shipped GPU with a stream table in ``shared/data/microbench``
(te42kyfo/gpu-benches, commit 1c36d50) it takes the plateaus of the read,
scale and init columns, starts the latency at the pointer-chasing DRAM
plateau, fits the latency under load and the sharpness
(:mod:`warpspeed.timing.flight`) to the read, scale and triad curves by
minimising the largest relative error, and prints both with the largest
and mean error per curve. Copy the values into the machine files.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from warpspeed.timing.flight import MemoryParams, achieved_bandwidth

ROOT = Path(__file__).resolve().parents[2] / "shared" / "data" / "microbench"
#: table name, clock (GHz) of its latency table, latency table (None: none).
GPUS = {
    "v100": ("v100", 1.38),
    "a100_40": ("a100_40", 1.41),
    "a100_80": ("a100_80", 1.41),
    "h100_pcie": ("h100_pcie", 1.755),
    "h200": ("h100_pcie", 1.755),  # no H200 latency table: H100's, flagged
}
#: column: (load bytes in flight per thread, load fraction of the bytes)
CURVES = {"read": (8.0, 1.0), "scale": (8.0, 0.5), "triad": (16.0, 2.0 / 3.0)}


def table(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def unloaded_latency(name: str, clock: float) -> float:
    """The DRAM plateau of pointer chasing (largest buffers), ns."""
    rows = table(ROOT / "latency" / f"{name}.csv")
    return float(np.median([float(r["latency_cycles"]) for r in rows[-5:]])) / clock


def errors(p: MemoryParams, rows: list[dict[str, str]]) -> dict[str, np.ndarray]:
    out = {}
    for col, (per_thread, f) in CURVES.items():
        pred = [achieved_bandwidth(p, float(r["threads_in_flight"]) * per_thread, f)
                for r in rows]
        meas = [float(r[f"{col}_GBs"]) for r in rows]
        out[col] = np.array(pred) / np.array(meas) - 1.0
    return out


def calibrate(gpu: str) -> tuple[MemoryParams, float, dict[str, np.ndarray]]:
    lat_name, clock = GPUS[gpu]
    rows = table(ROOT / "stream" / f"{gpu}.csv")
    last = rows[-1]
    l0 = unloaded_latency(lat_name, clock)

    def params(x: np.ndarray) -> MemoryParams:
        return MemoryParams(float(x[0]), float(last["read_GBs"]), float(last["scale_GBs"]),
                            float(last["init_GBs"]), float(x[1]))

    res = minimize(
        lambda x: max(np.max(np.abs(e)) for e in errors(params(x), rows).values()),
        np.array([l0, 3.0]), method="Nelder-Mead",
    )
    p = params(res.x)
    return p, l0, errors(p, rows)


def main() -> int:
    if not ROOT.is_dir():
        print(f"no micro-benchmark data at {ROOT}", file=sys.stderr)
        return 1
    for gpu in GPUS:
        p, l0, err = calibrate(gpu)
        print(f"{gpu:10s} latency {p.dram_latency_ns:6.1f} ns (unloaded {l0:6.1f}), "
              f"shape {p.shape:.2f}, plateaus read {p.dram_bw_read:g} copy {p.dram_bw_copy:g} "
              f"write {p.dram_bw_write:g} GB/s")
        for col, e in err.items():
            print(f"{'':10s} {col:6s} max {100 * np.max(np.abs(e)):5.1f} %  "
                  f"mean {100 * np.mean(np.abs(e)):5.1f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
