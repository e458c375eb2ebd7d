"""``warpspeed machines calibrate``: a machine file from micro-benchmark tables
(MODEL.md §12, "A new GPU in minutes"; the work is
:mod:`warpspeed.validation.calibrate`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

HELP = ("write a machine file from a data-sheet base file and micro-benchmark tables "
        "(MODEL.md §12)")


def add_parser(machines: argparse.ArgumentParser) -> None:
    """Add the ``calibrate`` subcommand to the ``machines`` parser."""
    sub = machines.add_subparsers(dest="machines_command")
    p = sub.add_parser("calibrate", help=HELP, description=HELP)
    p.add_argument("--base", required=True, type=Path,
                   help="data-sheet base file (a machine file without the calibrated keys)")
    p.add_argument("--stream", required=True, type=Path, help="stream/<gpu>.csv")
    p.add_argument("--latency", type=Path,
                   help="latency/<gpu>.csv (else the base gives dram_latency_ns, l2_latency_ns)")
    p.add_argument("--l1", type=Path, help="l1_cache/<gpu>.csv (checks l1_bytes)")
    p.add_argument("--l2", type=Path,
                   help="l2_cache/<gpu>.csv (l2_bandwidth, dram_scattered_fraction)")
    p.add_argument("--scattered", type=Path,
                   help="a related GPU's l2_cache table for dram_scattered_fraction when this "
                        "GPU has none (with --scattered-stream)")
    p.add_argument("--scattered-stream", type=Path,
                   help="the stream table of the GPU whose --scattered table it is")
    p.add_argument("--small-kernels", type=Path,
                   help="small_kernels/<gpu>.csv (launch_overhead_us)")
    p.add_argument("--roofline", type=Path, help="roofline/<gpu>.csv (fp_overlap_exponent)")
    p.add_argument("--out", required=True, type=Path, help="the machine file to write")
    p.add_argument("--name", help="the machine's name (default: the base's)")
    p.add_argument("--cite", default=None,
                   help="where the tables come from, written into every source")
    p.add_argument("--latency-l2-mib", type=float,
                   help="whole L2 (MiB) of the GPU the latency table was measured on "
                        "(default: the base's l2_bytes)")
    p.add_argument("--latency-llc-mib", type=float,
                   help="a last-level cache behind the L2 (Infinity Cache, MiB) of that GPU")
    p.add_argument("--dram-scale", type=float, default=1.0,
                   help="scale the stream table's DRAM bandwidths (a related GPU's table "
                        "standing in: the ratio of the data-sheet peaks)")
    p.add_argument("--grounding", default="micro-benchmarks",
                   choices=("micro-benchmarks", "datasheet"),
                   help="datasheet when the tables are a related GPU's")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .validation.calibrate import DEFAULT_CITE, Tables, calibrate, write_machine

    tables = Tables(stream=args.stream, latency=args.latency, l1=args.l1, l2=args.l2,
                    small_kernels=args.small_kernels, roofline=args.roofline,
                    scattered=args.scattered, scattered_stream=args.scattered_stream)
    data = calibrate(args.base, tables, cite=args.cite or DEFAULT_CITE,
                     latency_l2_mib=args.latency_l2_mib, latency_llc_mib=args.latency_llc_mib,
                     dram_scale=args.dram_scale, grounding=args.grounding, name=args.name)
    words = ["warpspeed", "machines", "calibrate", "--base", _rel(args.base)]
    for flag in ("stream", "latency", "l1", "l2", "small_kernels", "roofline", "scattered",
                 "scattered_stream"):
        if getattr(args, flag) is not None:
            words += [f"--{flag.replace('_', '-')}", _rel(getattr(args, flag))]
    for flag in ("name", "cite", "latency_l2_mib", "latency_llc_mib"):
        if getattr(args, flag) is not None:
            words += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.dram_scale != 1.0:
        words += ["--dram-scale", f"{args.dram_scale:g}"]
    if args.grounding != "micro-benchmarks":
        words += ["--grounding", args.grounding]
    header = ("Written by `warpspeed machines calibrate` (MODEL.md §12); rebuild with:\n"
              + shlex.join(words) + " --out FILE")
    m = write_machine(data, args.out, header)
    print(f"wrote {args.out}: {m.name} ({m.vendor} {m.architecture}), grounding {m.grounding}")
    if m.dram_scattered_fraction is None:
        print("no dram_scattered_fraction: no l2_cache table with data sets of at least 1 GiB "
              "(--l2, or a related GPU's with --scattered); the default model assumes many "
              "concurrent DRAM streams lose nothing (MODEL.md §11)")
    return 0


def _rel(path: Path) -> str:
    """A path as the header records it: relative to the working folder, else
    from its data folder on (``microbench/stream/...``), else its name."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd()))
    except ValueError:
        pass
    parts = p.parts
    for i, part in enumerate(parts):
        if part == "microbench":
            return str(Path(*parts[i:]))
    return str(p) if not p.is_absolute() else p.name
