"""Write the machine files of the GPUs calibrated from micro-benchmark tables
(``python fits/build_machines.py [--data DIR]`` from the repository root):
each is one ``warpspeed machines calibrate`` command (MODEL.md §12) on a
data-sheet base file in ``warpspeed/machines/base/`` and the public tables in
``shared/data/microbench`` (te42kyfo/gpu-benches, commit 1c36d50).

A40, L40, MI100, MI210, RX6900XT, GH200, MI300X and MI300A use their own
tables (grounding "micro-benchmarks"; GH200's and the MI300s' stream and latency tables
are the newer benchmark's, xxrjun/gpu-benches, commit 23e586d, a related GPU's
standing in for the rest); L40S, MI250X-GCD, RX7900XTX and B200 have none,
so a related GPU's tables stand in, the DRAM bandwidths scaled by the ratio
of the data-sheet peaks (grounding "datasheet"). The GPUs of the lattice
Boltzmann and convolution development sets that have no tables at all
(``DATASHEETS``) are described from their data sheets with ``warpspeed
machines new --like KNOWN``, as a user would.
Each written file records its command.
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
             "l2-stream": "l2_stream/a40",
             "small-kernels": "small_kernels/a40", "scattered": "l2_cache/l40",
             "scattered-stream": "stream/l40"},
            ["--cite", f"{CITE}; l2_stream/a40.csv: xxrjun/gpu-benches, commit 23e586d"]),
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
    # its own stream and latency tables (the newer benchmark, README of the tables);
    # the MI210's l2_cache table stands in for the many-stream term, its small-kernel
    # table for the launch overhead (in the base file: no block-launch limit from it)
    "MI300X": ({"stream": "stream/mi300x", "latency": "latency/mi300x",
                "scattered": "l2_cache/mi210", "scattered-stream": "stream/mi210"},
               ["--latency-llc-mib", "256", "--cite",
                "xxrjun/gpu-benches, commit 23e586d (MI300X's stream and latency tables); "
                f"{CITE} (the MI210's l2_cache table stands in for the many-stream term)"]),
    # the same: MI300A's GPU, six of MI300X's eight XCDs beside CPU cores
    "MI300A": ({"stream": "stream/mi300a", "latency": "latency/mi300a",
                "scattered": "l2_cache/mi210", "scattered-stream": "stream/mi210"},
               ["--latency-llc-mib", "256", "--cite",
                "xxrjun/gpu-benches, commit 23e586d (MI300A's stream and latency tables); "
                f"{CITE} (the MI210's l2_cache table stands in for the many-stream term)"]),
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
              "--copy-from-triad",
              "--cite", f"{CITE}; the H200's stream table (4.8 TB/s HBM3e; B200: 8 TB/s) and "
              "the H100 PCIe's pointer chasing stand in"]),
    # its own stream and latency tables (the newer benchmark, README of the tables);
    # the H200's roofline, small-kernel and L2 tables stand in: the same GH100 chip
    "GH200": ({"stream": "stream/gh200", "latency": "latency/gh200", "l2": "l2_cache/h200",
               "roofline": "roofline/h200", "small-kernels": "small_kernels/h200",
               "scattered": "l2_cache/h200", "scattered-stream": "stream/h200"},
              ["--latency-l2-mib", "60", "--cite",
               "xxrjun/gpu-benches, commit 23e586d (GH200's stream and latency tables); "
               f"{CITE} (the H200's roofline, small-kernel and L2 tables stand in: the same "
               "GH100 chip)"]),
}


#: name -> (known GPU, SMs, boost GHz, DRAM GB/s, bus bits, L2 MiB, further flags, the data
#: sheet cited): ``warpspeed machines new`` for each; figures from the vendors' pages.
DATASHEETS: dict[str, tuple[str, int, float, float, int, float, list[str], str]] = {
    "A10": ("A40", 72, 1.695, 600, 384, 6, ["--memory-gib", "24"],
            "NVIDIA A10 datasheet and GA102 whitepaper (72 SMs, boost 1695 MHz, 600 GB/s "
            "384-bit GDDR6 with ECC, 6 MB L2, 24 GB)"),
    "L4": ("L40", 58, 2.04, 300, 192, 48, ["--memory-gib", "24"],
           "NVIDIA L4 datasheet and Ada whitepaper (AD104: 58 SMs, boost 2040 MHz, 300 GB/s "
           "192-bit GDDR6 with ECC, 48 MB L2, 24 GB)"),
    "RTX4090": ("L40", 128, 2.52, 1008, 384, 72, ["--ecc", "off", "--memory", "GDDR6X",
                                                    "--memory-gib", "24"],
                "NVIDIA Ada whitepaper (RTX 4090: 128 SMs, boost 2520 MHz, 1008 GB/s 384-bit "
                "GDDR6X, 72 MB L2, 24 GB; GeForce: no ECC)"),
    "RTX3090": ("A40", 82, 1.695, 936, 384, 6, ["--ecc", "off", "--memory", "GDDR6X",
                                                 "--memory-gib", "24"],
                "NVIDIA GA102 whitepaper (RTX 3090: 82 SMs, boost 1695 MHz, 936 GB/s 384-bit "
                "GDDR6X, 6 MB L2, 24 GB; GeForce: no ECC)"),
    "RTXA4000": ("A40", 48, 1.56, 448, 256, 4, ["--ecc", "off", "--memory-gib", "16"],
                 "NVIDIA RTX A4000 datasheet (GA104: 48 SMs, boost 1560 MHz, 448 GB/s 256-bit "
                 "GDDR6, 4 MB L2, 16 GB; a workstation board: ECC off by default)"),
    "RadeonVII": ("MI100", 60, 1.75, 1024, 4096, 4, ["--architecture", "GCN5", "--arch", "gfx906",
                                                      "--memory-gib", "16"],
                  "AMD Radeon VII specifications (Vega 20, GCN5, wave64 like CDNA: 60 CUs, boost "
                  "1750 MHz, 1024 GB/s HBM2 on 4096 bits, 4 MB L2, 16 GB)"),
    "MI50": ("MI100", 60, 1.725, 1024, 4096, 4, ["--architecture", "GCN5", "--arch", "gfx906",
                                                  "--memory-gib", "32"],
             "AMD Instinct MI50 datasheet (Vega 20, GCN5, wave64 like CDNA: 60 CUs, peak engine "
             "clock 1725 MHz, 1024 GB/s HBM2 on 4096 bits, 4 MB L2, 16 or 32 GB: the larger)"),
    "W7800": ("RX7900XTX", 70, 2.499, 576, 256, 6, ["--llc-mib", "64", "--memory-gib", "48"],
              "AMD Radeon PRO W7800 specifications (70 CUs, boost 2499 MHz, 576 GB/s 256-bit "
              "GDDR6, 6 MB L2, 64 MB Infinity Cache, 32 GB; the later 48 GB edition: the larger)"),
    "RX7600": ("RX7900XTX", 32, 2.655, 288, 128, 2,
               ["--llc-mib", "32", "--arch", "gfx1102", "--register-kib", "256",
                "--memory-gib", "8"],
               "AMD Radeon RX 7600 specifications (Navi 33: 32 CUs, boost 2655 MHz, 288 GB/s "
               "128-bit GDDR6, 2 MB L2, 32 MB Infinity Cache, 8 GB); its VGPR file is RDNA2's "
               "128 KiB per SIMD, 256 KiB per CU (LLVM AMDGPU: gfx1102 lacks "
               "FeatureGFX11FullVGPRs, the 192 KiB file of gfx1100/gfx1101; Chips and Cheese, "
               "'AMD's RX 7600: Small RDNA 3 Appears', 2023)"),
}


def datasheet_command(name: str, out: Path) -> list[str]:
    """The ``warpspeed`` arguments that describe ``name`` from its data sheet."""
    known, sms, clock, dram, bus, l2, flags, cite = DATASHEETS[name]
    return ["machines", "new", name, "--like", known, "--sms", str(sms), "--clock-ghz",
            f"{clock:g}", "--dram-gbs", f"{dram:g}", "--bus-bits", str(bus), "--l2-mib",
            f"{l2:g}", *flags, "--cite", cite, "--out", str(out), "--force"]


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
    for name in args.names or [*BUILDS, *DATASHEETS]:
        argv_ = (datasheet_command(name, args.out / f"{name}.toml")
                 if name in DATASHEETS else command(name, args.data, args.out / f"{name}.toml"))
        code = warpspeed(argv_)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
