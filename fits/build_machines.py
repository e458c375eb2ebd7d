"""Write the machine files of the GPUs calibrated from micro-benchmark tables
(``python fits/build_machines.py [--data DIR]`` from the repository root):
each is one ``warpspeed machines calibrate`` command (MODEL.md §12) on a
data-sheet base file in ``warpspeed/machines/base/`` and the public tables in
``shared/data/microbench`` (te42kyfo/gpu-benches, commit 1c36d50).

A40, L40, MI100, MI210 and RX6900XT use their own tables (grounding
"micro-benchmarks"); L40S, MI250X-GCD, MI300X, RX7900XTX and B200 have none, so
a related GPU's tables stand in, the DRAM bandwidths scaled by the ratio of the
data-sheet peaks (grounding "datasheet"). Each written file records its command.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from warpspeed.cli import main as warpspeed

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "microbench"
CITE = "te42kyfo/gpu-benches, commit 1c36d50"

#: name -> (tables by flag, extra flags); tables are <kind>/<gpu>.csv under DATA.
BUILDS: dict[str, tuple[dict[str, str], list[str]]] = {
    "A40": ({"stream": "stream/a40", "l1": "l1_cache/a40", "roofline": "roofline/a40",
             "small-kernels": "small_kernels/a40", "scattered": "l2_cache/l40",
             "scattered-stream": "stream/l40"}, []),
    "L40": ({"stream": "stream/l40", "latency": "latency/l40", "l1": "l1_cache/l40",
             "l2": "l2_cache/l40", "roofline": "roofline/l40",
             "small-kernels": "small_kernels/l40"}, []),
    "MI100": ({"stream": "stream/mi100", "l1": "l1_cache/mi100", "l2": "l2_cache/mi100"}, []),
    "MI210": ({"stream": "stream/mi210", "latency": "latency/mi210", "l1": "l1_cache/mi210",
               "l2": "l2_cache/mi210", "small-kernels": "small_kernels/mi210"}, []),
    "RX6900XT": ({"stream": "stream/rx6900xt", "latency": "latency/rx6900xt",
                  "l1": "l1_cache/rx6900xt", "l2": "l2_cache/rx6900xt",
                  "small-kernels": "small_kernels/rx6900xt"}, ["--latency-llc-mib", "128"]),
    # datasheet only: a related GPU's tables stand in
    "L40S": ({"stream": "stream/l40", "latency": "latency/l40", "l2": "l2_cache/l40",
              "roofline": "roofline/l40", "small-kernels": "small_kernels/l40"},
             ["--grounding", "datasheet", "--cite",
              f"{CITE}; the L40's table stands in: same AD102 chip and 864 GB/s GDDR6"]),
    "MI250X-GCD": ({"stream": "stream/mi210", "latency": "latency/mi210",
                    "l2": "l2_cache/mi210", "small-kernels": "small_kernels/mi210"},
                   ["--grounding", "datasheet", "--cite",
                    f"{CITE}; the MI210's table stands in: the same CDNA2 die with the same "
                    "1638 GB/s HBM2e per die"]),
    "MI300X": ({"stream": "stream/mi210", "latency": "latency/mi210",
                "small-kernels": "small_kernels/mi210", "scattered": "l2_cache/mi210",
                "scattered-stream": "stream/mi210"},
               ["--grounding", "datasheet", "--latency-l2-mib", "8", "--dram-scale", "3.2349",
                "--cite", f"{CITE}; the MI210's table stands in (CDNA2, 1638.4 GB/s HBM2e; "
                "MI300X: 5300 GB/s HBM3)"]),
    "RX7900XTX": ({"stream": "stream/rx6900xt", "latency": "latency/rx6900xt",
                   "small-kernels": "small_kernels/rx6900xt", "scattered": "l2_cache/rx6900xt",
                   "scattered-stream": "stream/rx6900xt"},
                  ["--grounding", "datasheet", "--latency-l2-mib", "4", "--latency-llc-mib",
                   "128", "--dram-scale", "1.875", "--cite",
                   f"{CITE}; the RX 6900 XT's table stands in (RDNA2, 512 GB/s GDDR6; RX 7900 "
                   "XTX: 960 GB/s)"]),
    "B200": ({"stream": "stream/h200", "latency": "latency/h100_pcie",
              "roofline": "roofline/h200", "small-kernels": "small_kernels/h200",
              "scattered": "l2_cache/h200", "scattered-stream": "stream/h200"},
             ["--grounding", "datasheet", "--latency-l2-mib", "50", "--dram-scale", "1.6667",
              "--cite", f"{CITE}; the H200's stream table (4.8 TB/s HBM3e; B200: 8 TB/s) and "
              "the H100 PCIe's pointer chasing stand in"]),
}


def command(name: str, data: Path, out: Path) -> list[str]:
    """The ``warpspeed`` arguments that write machine ``name`` to ``out``."""
    tables, extra = BUILDS[name]
    args = ["machines", "calibrate", "--base", str(ROOT / "warpspeed" / "machines" / "base"
                                                    / f"{name}.toml")]
    for flag, table in tables.items():
        args += [f"--{flag}", str(data / f"{table}.csv")]
    if "--cite" not in extra:
        extra = [*extra, "--cite", CITE]
    return [*args, *extra, "--out", str(out)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the microbench folder")
    ap.add_argument("--out", type=Path, default=ROOT / "warpspeed" / "machines",
                    help="folder to write the machine files to")
    ap.add_argument("names", nargs="*", help="machines to build (default: all)")
    args = ap.parse_args(argv)
    for name in args.names or BUILDS:
        code = warpspeed(command(name, args.data, args.out / f"{name}.toml"))
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
