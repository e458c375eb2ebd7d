"""``warpspeed machines calibrate``: a machine file from micro-benchmark tables
(MODEL.md §12, "A new GPU in minutes"; the work is
:mod:`warpspeed.validation.calibrate`), or from kernel measurements
(``--measurements FILE.csv``: :mod:`warpspeed.validation.kernel_calibrate`)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

HELP = ("write a machine file from a data-sheet base file and micro-benchmark tables, or from "
        "a machine and kernel measurements (--measurements; MODEL.md §12)")


def add_parser(machines: argparse.ArgumentParser) -> None:
    """Add the ``calibrate`` subcommand to the ``machines`` parser."""
    sub = machines.add_subparsers(dest="machines_command")
    p = sub.add_parser("calibrate", help=HELP, description=HELP)
    p.add_argument("--base", type=Path,
                   help="data-sheet base file (a machine file without the calibrated keys); "
                        "with --measurements a machine name or file (default: the CSV's GPU)")
    p.add_argument("--stream", type=Path, help="stream/<gpu>.csv (micro-benchmark tables)")
    p.add_argument("--measurements", type=Path, metavar="FILE.csv",
                   help="kernel measurements (warpspeed.measure's CSV) instead of tables: fits "
                        "the DRAM plateau, small-launch cost, L2 plateau and many-stream term "
                        "they determine and carries the rest of --base")
    p.add_argument("--subset", default="all", choices=("all", "train", "test"),
                   help="with --measurements: all rows, or the train or test half")
    p.add_argument("--fit", action="append", default=[], metavar="NAME[:SET]",
                   help="with --measurements: also fit this float parameter of the machine on "
                        "the rows of one set (the note's 'set NAME'), or all rows")
    p.add_argument("--model", default=None,
                   help="with --measurements: the timing model the fits go through "
                        "(default: the default model)")
    p.add_argument("--latency", type=Path,
                   help="latency/<gpu>.csv (else the base gives dram_latency_ns, l2_latency_ns)")
    p.add_argument("--l1", type=Path, help="l1_cache/<gpu>.csv (checks l1_bytes)")
    p.add_argument("--l2", type=Path,
                   help="l2_cache/<gpu>.csv (l2_bandwidth, dram_scattered_fraction)")
    p.add_argument("--l2-stream", type=Path,
                   help="l2_stream/<gpu>.csv (the newer benchmark) for l2_bandwidth when the GPU "
                        "has no l2_cache table: its triad plateau over the NVIDIA GPUs' ratio "
                        "(NVIDIA only)")
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
    p.add_argument("--copy-from-triad", action="store_true",
                   help="when the scale column still rises at full occupancy, take the triad "
                        "column's plateau for the copy bandwidth if it is larger")
    p.add_argument("--grounding", default="micro-benchmarks",
                   choices=("micro-benchmarks", "datasheet"),
                   help="datasheet when the tables are a related GPU's")
    p.set_defaults(func=cmd_calibrate)
    _add_new(sub)


NEW_HELP = ("write a machine file for a GPU from its data sheet, like a known GPU of the same "
            "architecture (MODEL.md §12)")


def _add_new(sub: argparse._SubParsersAction) -> None:
    """The ``new`` subcommand: a GPU from its data sheet."""
    p = sub.add_parser("new", help=NEW_HELP, description=NEW_HELP)
    p.add_argument("name", help="the new machine's name")
    p.add_argument("--like", required=True,
                   help="a known machine of the same architecture and memory kind (a shipped "
                        "name or a machine file)")
    p.add_argument("--sms", required=True, type=int, help="SMs (NVIDIA) or CUs (AMD)")
    p.add_argument("--clock-ghz", required=True, type=float, help="boost clock, GHz")
    p.add_argument("--dram-gbs", required=True, type=float, help="DRAM peak bandwidth, GB/s")
    p.add_argument("--l2-mib", required=True, type=float, help="L2 of the whole chip, MiB")
    p.add_argument("--llc-mib", type=float,
                   help="last-level cache behind the L2 (AMD Infinity Cache), MiB; 0: none")
    p.add_argument("--l1-kib", type=float, help="L1 per SM / CU, KiB (default: the known's)")
    p.add_argument("--bus-bits", type=int,
                   help="DRAM bus width in bits (default: the known's; HBM: 1024 per stack)")
    p.add_argument("--ecc", choices=("on", "off"),
                   help="ECC on or off (default: the known's; data-centre boards run with it "
                        "on, consumer and workstation boards off)")
    p.add_argument("--memory", help="kind of DRAM (default: the known's), e.g. GDDR6X")
    p.add_argument("--architecture", help="the new GPU's architecture, checked against the "
                                          "known's (e.g. RDNA3; GCN5 is described like "
                                          "CDNA)")
    p.add_argument("--arch", help="the compiler target (default: the known's), e.g. gfx906 "
                                  "or sm_86; on AMD it decides whether AGPRs widen the "
                                  "register budget")
    p.add_argument("--register-kib", type=float,
                   help="register file per SM / CU, KiB (default: the known's)")
    p.add_argument("--memory-gib", type=float,
                   help="the GPU's memory, GB (the largest variant; without it a kernel's "
                        "size is not checked against it)")
    p.add_argument("--cite", default="the data sheet",
                   help="where the figures come from, written into their sources")
    p.add_argument("--out", required=True, type=Path, help="the machine file to write (.toml)")
    p.add_argument("--force", action="store_true", help="replace an existing file")
    p.set_defaults(func=cmd_new)


def cmd_new(args: argparse.Namespace) -> int:
    from .validation.datasheet import DataSheet, describe, write

    sheet = DataSheet(args.name, args.sms, args.clock_ghz, args.dram_gbs, args.l2_mib,
                      llc_mib=args.llc_mib, l1_kib=args.l1_kib, bus_bits=args.bus_bits,
                      ecc=None if args.ecc is None else args.ecc == "on", memory=args.memory,
                      architecture=args.architecture, arch=args.arch,
                      register_kib=args.register_kib, memory_gib=args.memory_gib,
                      cite=args.cite)
    data = describe(args.like, sheet)
    words = ["warpspeed", "machines", "new", args.name, "--like", str(args.like)]
    for flag in ("sms", "clock_ghz", "dram_gbs", "l2_mib", "llc_mib", "l1_kib", "bus_bits",
                 "ecc", "memory", "architecture", "arch", "register_kib", "memory_gib",
                 "cite"):
        value = getattr(args, flag)
        if value is not None:
            words += [f"--{flag.replace('_', '-')}", f"{value:g}" if isinstance(value, float)
                      else str(value)]
    m = write(data, args.out, [*words, "--out", "FILE"], force=args.force)
    print(f"wrote {args.out}: {m.name} ({m.vendor} {m.architecture}, {m.memory or 'memory kind '
          'unknown'}, ECC {'on' if m.ecc else 'off'}), grounding {m.grounding}; predict with "
          f"--machine {args.out}")
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .timing.latency_parameters import given
    from .validation.calibrate import DEFAULT_CITE, Tables, calibrate, write_machine

    if args.measurements is not None:
        return cmd_from_kernels(args)
    if args.base is None or args.stream is None:
        from .errors import MachineError

        raise MachineError("machines calibrate needs --base and --stream (micro-benchmark "
                           "tables), or --measurements FILE.csv (kernel measurements)")

    tables = Tables(stream=args.stream, latency=args.latency, l1=args.l1, l2=args.l2,
                    small_kernels=args.small_kernels, roofline=args.roofline,
                    scattered=args.scattered, scattered_stream=args.scattered_stream,
                    l2_stream=args.l2_stream)
    data = calibrate(args.base, tables, cite=args.cite or DEFAULT_CITE,
                     latency_l2_mib=args.latency_l2_mib, latency_llc_mib=args.latency_llc_mib,
                     dram_scale=args.dram_scale, grounding=args.grounding, name=args.name,
                     copy_from_triad=args.copy_from_triad)
    words = ["warpspeed", "machines", "calibrate", "--base", _rel(args.base)]
    for flag in ("stream", "latency", "l1", "l2", "l2_stream", "small_kernels", "roofline",
                 "scattered", "scattered_stream"):
        if getattr(args, flag) is not None:
            words += [f"--{flag.replace('_', '-')}", _rel(getattr(args, flag))]
    for flag in ("name", "cite", "latency_l2_mib", "latency_llc_mib"):
        if getattr(args, flag) is not None:
            words += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.dram_scale != 1.0:
        words += ["--dram-scale", f"{args.dram_scale:g}"]
    if args.grounding != "micro-benchmarks":
        words += ["--grounding", args.grounding]
    if args.copy_from_triad:
        words += ["--copy-from-triad"]
    header = ("Written by `warpspeed machines calibrate` (MODEL.md §12); rebuild with:\n"
              + shlex.join(words) + " --out FILE")
    m = write_machine(data, args.out, header)
    print(f"wrote {args.out}: {m.name} ({m.vendor} {m.architecture}), grounding {m.grounding}")
    if given(m).get("dram_scattered_fraction") is None:
        print("no dram_scattered_fraction: no l2_cache table with data sets of at least 1 GiB "
              "(--l2, or a related GPU's with --scattered); the default model assumes many "
              "concurrent DRAM streams lose nothing (MODEL.md §11)")
    return 0


def cmd_from_kernels(args: argparse.Namespace) -> int:
    """``machines calibrate --measurements``: the work is
    :func:`warpspeed.validation.kernel_calibrate.calibrate_kernels`."""
    from .timing import DEFAULT_MODEL
    from .validation.calibrate import write_machine
    from .validation.kernel_calibrate import calibrate_kernels

    c = calibrate_kernels(args.measurements, args.base, args.subset, args.fit,
                          args.model or DEFAULT_MODEL)
    if args.name:
        c.data["name"] = args.name
    words = ["warpspeed", "machines", "calibrate", "--measurements", _rel(args.measurements)]
    if args.base is not None:
        words += ["--base", str(args.base)]
    if args.subset != "all":
        words += ["--subset", args.subset]
    for f in args.fit:
        words += ["--fit", f]
    if args.model:
        words += ["--model", args.model]
    header = ("Written by `warpspeed machines calibrate --measurements` (MODEL.md §12) from "
              f"{c.base.name}'s file and {c.run}; rebuild with:\n"
              + shlex.join(words) + " --out FILE")
    m = write_machine(c.data, args.out, header)
    print(f"wrote {args.out}: {m.name} ({m.vendor} {m.architecture}), grounding {m.grounding}")
    print("\n".join(c.lines()))
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
