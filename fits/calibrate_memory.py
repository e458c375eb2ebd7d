"""Calibrate the memory-concurrency model (:mod:`warpspeed.timing.memory`) on
public micro-benchmarks and write ``fits/memory.toml``
(``python fits/calibrate_memory.py [--data DIR] [--out FILE]`` from the
repository root).

Data: ``shared/data/microbench`` (see its README), the published results of
te42kyfo/gpu-benches, commit 1c36d50 (same research group as the paper):

* ``stream/<gpu>.csv``, from ``gpu-stream/main.cu``: each thread handles ONE
  double (8 B) per array and exits, no loop, no unrolling; the grid covers
  2^27 + 2 doubles, hundreds of waves, so thread slots turn over. Per thread:
  init stores 8 B; read loads 8 B (compared, never stored); scale loads 8 B
  and then stores 8 B; triad loads 2 x 8 B (independent, issued together)
  and then stores 8 B; 3pt / 5pt load 3 / 5 neighbours of one array (one
  8 B DRAM load per thread, the rest hits the same lines) and store 8 B.
  The benchmark runs TWO blocks per SM (``measureKernels(..., 2)``, a 6 KiB
  shared-memory spoiler with the carve-out chosen so that exactly two fit):
  the column ``threads_in_flight`` is SMs x block size (one block), the
  occupancy column is 2 x block size / 2048. Threads in flight on the GPU
  are therefore ``2 * threads_in_flight``; bandwidth counts 8 B per array
  element (stores of full sectors are not read first).
* ``latency/<gpu>.csv``, from ``gpu-latency``: pointer chasing. Its
  ``latency_ns`` column is wrong for footprints >= 68883 kB (the iteration
  count of the original table was dropped), so latencies are taken from
  ``latency_cycles / clock_MHz``.

Derived, not fitted, per GPU: DRAM and L2 latency (plateaus of pointer
chasing), turnover (shortest init residence), the saturated bandwidths
(plateaus of the read, scale and init columns). Fitted: ``shape``, one
constant per GPU, by minimising the largest relative error over the read,
scale and triad curves (the acceptance criterion is a maximum error). Init
is predicted too (stores only, no fitted constant acts on it); 3pt and 5pt
are validation (same DRAM mix as scale, never fitted).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from warpspeed.timing.memory import STORE_WEIGHT, WALL_EXPONENT, MemoryParams
from warpspeed.validation.microbench import (
    BLOCKS_PER_SM,
    FITTED,
    Latency,
    Stream,
    load_latency,
    load_stream,
    memory_fit,
    relative_errors,
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "microbench"
OUT = Path(__file__).resolve().parent / "memory.toml"
SOURCE = "te42kyfo/gpu-benches, commit 1c36d50 (shared/data/microbench)"

PREDICTED = ("init",)
VALIDATION = ("3pt", "5pt")
TOLERANCE = 0.10


@dataclass(frozen=True)
class Gpu:
    """A GPU of the data set: its machine file, latency table and full L2."""

    machine: str
    latency: str
    l2_mib: float
    l2_source: str
    note: str = ""


GPUS = {
    "v100": Gpu("V100", "v100", 6, "NVIDIA Tesla V100 whitepaper: 6 MB L2"),
    "a100_40": Gpu("A100", "a100_40", 40, "NVIDIA A100 whitepaper: 40 MB L2 (two partitions)"),
    "a100_80": Gpu("A100-80GB", "a100_80", 40, "NVIDIA A100 whitepaper: 40 MB L2"),
    "h100_pcie": Gpu(
        "H100", "h100_pcie", 50, "NVIDIA H100 whitepaper: 50 MB L2 (PCIe)",
        note="data are H100 PCIe (114 SMs, HBM2e); machines/H100.toml is H100 SXM5 "
             "(132 SMs, HBM3): do not copy the bandwidths to it unmeasured",
    ),
    "h200": Gpu(
        "H200", "h100_pcie", 50, "H100 PCIe table used (no H200 latency table)",
        note="no H200 pointer-chasing table: dram/l2 latency are the H100 PCIe values "
             "(FLAG); the stream table implies about t(read, bs 32) - turnover = 321 ns",
    ),
}


@dataclass(frozen=True)
class Calibration:
    gpu: str
    params: MemoryParams
    stream: Stream
    latency: Latency
    plateaus: dict[str, tuple[float, bool]]
    t0_block: int
    errors: dict[str, np.ndarray]


def calibrate(gpu: str, data: Path) -> Calibration:
    """One GPU's parameters (warpspeed.validation.microbench.memory_fit, the
    rules `warpspeed machines calibrate` applies) and its curve errors."""
    g = GPUS[gpu]
    s = load_stream(data / "stream" / f"{gpu}.csv")
    lat = load_latency(data / "latency" / f"{g.latency}.csv", g.l2_mib)
    fit = memory_fit(s, lat.dram_ns, lat.l2_ns)
    p = fit.params
    errors = {k: relative_errors(p, s, k) for k in (*PREDICTED, *FITTED, *VALIDATION)}
    return Calibration(gpu, p, s, lat, fit.plateaus, fit.t0_block, errors)


# --------------------------------------------------------------------- output

def _toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(round(v, 6)) if math.isfinite(v) else "nan"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {v!r} to TOML")


def _table(name: str, entries: dict[str, object]) -> list[str]:
    return [f"[{name}]", *(f"{k} = {_toml_value(v)}" for k, v in entries.items()), ""]


def _entry(value: float, source: str) -> dict[str, object]:
    return {"value": value, "source": source}


def toml_text(cals: list[Calibration]) -> str:
    out = [
        "# Memory-concurrency parameters of warpspeed.timing.memory, one table per GPU of the",
        "# data set. Written by `python fits/calibrate_memory.py`; do not edit by hand.",
        "format_version = 1  # the format of the files of fits/ (MODEL.md §7)",
        f'source = {_toml_value(SOURCE)}',
        "",
        *_table("model", {
            "wall_exponent": WALL_EXPONENT,
            "store_weight": STORE_WEIGHT,
            "fitted": "shape only, per GPU: minimum over shape of the largest relative error "
                      "on the read, scale and triad curves",
            "threads_in_flight": f"{BLOCKS_PER_SM} x the column threads_in_flight (the benchmark "
                                 "runs two blocks per SM; the column counts one)",
            "bytes_per_thread": "8 B per DRAM stream: init 8 (store), read 8 (load), scale 16, "
                                "triad 24, 3pt 16, 5pt 16",
            "tolerance": TOLERANCE,
        }),
    ]
    for c in cals:
        g, p, lat, s = GPUS[c.gpu], c.params, c.latency, c.stream
        stream_csv = f"stream/{c.gpu}.csv"
        lat_csv = f"latency/{g.latency}.csv"
        head: dict[str, object] = {"machine": g.machine, "sms": s.sms}
        out += _table(c.gpu, {**head, "note": g.note} if g.note else head)
        out += _table(f"{c.gpu}.dram_latency_ns", _entry(p.dram_latency_ns, (
            f"{lat_csv}: median of latency_cycles / clock_MHz ({lat.clock_mhz:.0f} MHz) over "
            f"the {lat.dram_rows} rows with footprint >= 1.5 x the {g.l2_mib:g} MB L2 "
            f"({g.l2_source}): the DRAM plateau; physics, not fitted")))
        out += _table(f"{c.gpu}.l2_latency_ns", _entry(p.l2_latency_ns, (
            f"{lat_csv}: median latency over footprints 1 MB .. L2 / 4: the (near) L2 "
            "plateau")))
        out += _table(f"{c.gpu}.l2_far_latency_ns", _entry(lat.l2_far_ns, (
            f"{lat_csv}: median latency over footprints 0.75 .. 0.95 x L2: the far L2 "
            "partition on A100 / H100 (information only, not used by the model)")))
        out += _table(f"{c.gpu}.turnover_ns", _entry(p.turnover_ns, (
            f"{stream_csv}: shortest init residence, threads x 8 B / init_GBs, at block size "
            f"{c.t0_block}: a store-only thread slot's launch-issue-retire time")))
        for name, col, what in (("dram_bw_write", "init", "stores only"),
                                ("dram_bw_copy", "scale", "one load per store")):
            value, reached = c.plateaus[col]
            out += _table(f"{c.gpu}.{name}", {**_entry(value, (
                f"{stream_csv}: column {col}_GBs ({what}), median of the values within 2 % of "
                "the maximum" + ("" if reached else "; NOT REACHED: the column still rises at "
                                 "100 % occupancy, so this is a lower bound"))),
                "plateau_reached": reached})
        rv, rr = c.plateaus["read"]
        out += _table(f"{c.gpu}.dram_bw_read", {**_entry(p.dram_bw_read, (
            f"{stream_csv}: the larger of the read_GBs plateau ({rv:.0f}, median within 2 % of "
            f"the maximum{'' if rr else ', not reached: still rising at 100 % occupancy'}) and "
            "the init plateau: a pure load stream has no bus turnarounds, like a pure store "
            "stream")), "read_column_plateau": rv, "plateau_reached": rr})
        out += _table(f"{c.gpu}.shape", _entry(p.shape, (
            f"fitted (scipy, minimax) on {stream_csv}, columns read, scale, triad: the "
            "latency-under-load coefficient")))
        out += _table(f"{c.gpu}.triad_plateau", {
            "value": c.plateaus["triad"][0], "plateau_reached": c.plateaus["triad"][1],
            "source": f"{stream_csv}: triad_GBs, information only (the model interpolates "
                      "the mix f = 2/3 between copy and read)"})
        for k, e in c.errors.items():
            role = ("fitted" if k in FITTED else "validation, not fitted" if k in VALIDATION
                    else "predicted, no fitted constant acts on it")
            over = [int(b) for b, x in zip(s.block, e) if abs(x) > TOLERANCE]
            out += _table(f"{c.gpu}.errors.{k}", {
                "role": role,
                "max_rel": float(np.max(np.abs(e))),
                "mean_rel": float(np.mean(np.abs(e))),
                "worst_block_size": int(s.block[int(np.argmax(np.abs(e)))]),
                "block_sizes_over_tolerance": over,
            })
    return "\n".join(out).rstrip() + "\n"


def report(cals: list[Calibration]) -> str:
    lines = [
        f"{'gpu':10s} {'L_dram':>7s} {'L_l2':>6s} {'t0':>5s} {'S_read':>7s} {'S_copy':>7s} "
        f"{'S_write':>7s} {'shape':>6s}   (ns, GB/s)",
    ]
    for c in cals:
        p = c.params
        lines.append(f"{c.gpu:10s} {p.dram_latency_ns:7.1f} {p.l2_latency_ns:6.1f} "
                     f"{p.turnover_ns:5.0f} {p.dram_bw_read:7.0f} {p.dram_bw_copy:7.0f} "
                     f"{p.dram_bw_write:7.0f} {p.shape:6.3f}")
    lines += ["", "relative error, max / mean (%); * = some point beyond "
              f"{100 * TOLERANCE:.0f} %; init predicted, 3pt/5pt validation"]
    kernels = (*PREDICTED, *FITTED, *VALIDATION)
    lines.append(f"{'gpu':10s} " + " ".join(f"{k:>12s}" for k in kernels))
    for c in cals:
        cells = []
        for k in kernels:
            e = np.abs(c.errors[k])
            mark = "*" if e.max() > TOLERANCE else " "
            cells.append(f"{100 * e.max():5.1f}/{100 * e.mean():4.1f}{mark}")
        lines.append(f"{c.gpu:10s} " + " ".join(f"{x:>12s}" for x in cells))
    notes = [f"  {c.gpu}: {GPUS[c.gpu].note}" for c in cals if GPUS[c.gpu].note]
    return "\n".join(lines + (["", "notes:", *notes] if notes else []))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the microbench folder")
    ap.add_argument("--out", type=Path, default=OUT, help="the TOML file to write")
    args = ap.parse_args(argv)
    if not (args.data / "stream").is_dir():
        print(f"no stream tables in {args.data}; pass --data DIR", file=sys.stderr)
        return 2
    cals = [calibrate(g, args.data) for g in GPUS]
    args.out.write_text(toml_text(cals))
    print(report(cals))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
