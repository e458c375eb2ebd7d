"""``python -m warpspeed.measure`` (MODEL.md §9).

* ``prepare``: write the plans of a stencil's folds (CUDA source, arguments,
  blocks; :mod:`warpspeed.measure.programs`) to a folder, with pystencils'
  runtime headers: what a GPU machine without pystencils measures.
* ``run``: measure plans into a CSV (:mod:`warpspeed.measure.run`), either
  generated here (``--stencil``, needs pystencils) or read from a folder
  (``--programs DIR``, needs CuPy and nothing of pystencils, lbmpy or
  islpy); ``--dry-run`` lists them and needs no GPU.
* ``launch``: the child that ncu profiles (internal).

This module imports the pystencils side (:mod:`warpspeed.measure.program`)
only inside the commands that generate kernels.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..closed_pipe import quiet_on_closed_pipe
from ..errors import WarpspeedError
from . import ncu as ncu_mod
from .gpu import TimingRule
from .programs import Plan, read_plans, write_plans
from .run import FUNCTION_PREFIX, RunOptions, child_command, launch_selection, measure_plans
from .schema import MeasurementError, Refusal, Triple, format_triple, parse_triple


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m warpspeed.measure",
        description="Measure stencil kernels on this machine's GPU (MODEL.md §9).",
    )
    sub = p.add_subparsers(dest="command", required=True)

    def stencil(q: argparse.ArgumentParser, required: bool) -> None:
        q.add_argument("--stencil", required=required,
                       help="module of stencils/ or a .py file defining generate()")
        q.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="stencil parameter (repeatable)")
        q.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                       help="kernel scalar argument (default 1.0)")
        which = q.add_mutually_exclusive_group()
        which.add_argument("--threads", type=int, nargs="+", default=[1024], metavar="N",
                           help="all power-of-two block shapes of these many threads "
                                "(default 1024)")
        which.add_argument("--blocks", nargs="+", metavar="X,Y,Z", help="explicit block sizes")
        q.add_argument("--folds", nargs="+", default=["1,1,1"], metavar="X,Y,Z",
                       help="fold variants (default 1,1,1)")
        q.add_argument("--note", default="", help="text for the note column (e.g. 'set NAME')")

    prep = sub.add_parser("prepare", help="write the plans of a stencil's folds to a folder")
    stencil(prep, True)
    prep.add_argument("--out", required=True, help="folder to write the plans to")

    run = sub.add_parser("run", help="time (and profile) plans, append rows to a CSV")
    stencil(run, False)
    run.add_argument("--programs", help="a folder written by 'prepare' (instead of --stencil)")
    run.add_argument("--only", nargs="+", default=[], metavar="TEXT",
                     help="with --programs: only the plans whose name contains one of these")
    run.add_argument("--out", help="CSV to append to")
    run.add_argument("--warmup", type=int, default=TimingRule.warmup)
    run.add_argument("--repetitions", type=int, default=TimingRule.repetitions,
                     help=f"timed launches per block (default {TimingRule.repetitions}; "
                          f"{TimingRule.short_repetitions} under "
                          f"{TimingRule.short_s * 1e3:g} ms, {TimingRule.long_repetitions} "
                          f"over {TimingRule.long_s * 1e3:g} ms)")
    run.add_argument("--jobs", type=int, default=1,
                     help="worker processes that compile the programs first (default 1)")
    run.add_argument("--no-ncu", action="store_true", help="time only, leave counters empty")
    run.add_argument("--ncu", default="ncu", help="the ncu executable")
    run.add_argument("--counter-blocks", type=int, default=None, metavar="N",
                     help="profile N blocks of each plan, evenly spread (default: all)")
    run.add_argument("--dry-run", action="store_true",
                     help="list the plans and the ncu command; needs no GPU")

    launch = sub.add_parser("launch", help="(internal) launch selected blocks once, for ncu")
    launch.add_argument("--programs", required=True)
    launch.add_argument("--selection", required=True, help="JSON list of [plan, block]")
    return p


def _stencil_plans(args: argparse.Namespace) -> list[Plan]:
    """The plans of ``--stencil`` (generated here, with pystencils)."""
    from .program import load_generator, parse_params, plan_for, versions

    params = parse_params(args.set, load_generator(args.stencil))
    scalars = {k: float(v) for k, v in parse_params(args.scalar).items()}
    blocks = [parse_triple(b, "block") for b in args.blocks] if args.blocks else None
    info = versions()
    return [plan_for(args.stencil, params, parse_triple(f, "fold"), threads=args.threads,
                     blocks=blocks, scalars=scalars, note=args.note, info=info)
            for f in args.folds]


def _plans(args: argparse.Namespace) -> list[Plan]:
    if args.programs and args.stencil:
        raise MeasurementError("give either --stencil or --programs, not both")
    if args.programs:
        return read_plans(args.programs, args.only)
    if not args.stencil:
        raise MeasurementError("give --stencil NAME (generated here) or --programs DIR "
                               "(written by 'prepare')")
    return _stencil_plans(args)


def _dry_run(args: argparse.Namespace, plans: Sequence[Plan]) -> str:
    lines = [f"dry run: {len(plans)} plans, "
             f"{sum(len(p.blocks) for p in plans)} configurations, nothing is measured"]
    for p in plans:
        lines.append(
            f"{p.name}: {p.stencil} {p.params} fold {format_triple(p.fold)}, kernel {p.kernel},"
            f" function {p.program.function}, interior {format_triple(p.interior)}, "
            f"{p.program.lups} Lup per launch, {len(p.blocks)} block sizes: "
            f"{' '.join(format_triple(b) for b in p.blocks)}")
    if not args.no_ncu:
        cmd = ncu_mod.ncu_command(child_command(args.programs or "DIR", "SELECTION.json"),
                                  f"^{FUNCTION_PREFIX}", ncu=args.ncu)
        lines.append("ncu: " + " ".join(cmd))
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    plans = _plans(args)
    if args.dry_run:
        print(_dry_run(args, plans))
        return 0
    if not args.out:
        raise MeasurementError("give --out CSV (or --dry-run)")
    options = RunOptions(
        rule=TimingRule(warmup=args.warmup, repetitions=args.repetitions), jobs=args.jobs,
        ncu=None if args.no_ncu else args.ncu, counter_blocks=args.counter_blocks,
    )

    def report(line: str) -> None:
        print(line, flush=True)

    if args.programs:
        rows = measure_plans(plans, args.out, options, programs=args.programs, report=report)
    else:
        with tempfile.TemporaryDirectory() as tmp:  # the ncu child reads the plans here
            write_plans(tmp, plans)
            rows = measure_plans(plans, args.out, options, programs=tmp, report=report)
    timed = sum(1 for r in rows if not isinstance(r, Refusal))
    machine = rows[0].machine if rows else "?"
    print(f"{timed} configurations measured, {len(rows) - timed} refused, on {machine}: "
          f"{args.out}")
    return 0


def _launch(args: argparse.Namespace) -> int:
    plans = read_plans(args.programs)
    try:
        pairs = json.loads(Path(args.selection).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise MeasurementError(f"cannot read the selection {args.selection}: {exc}") from exc
    selection: list[tuple[str, Triple]] = [(str(n), parse_triple(b, "block")) for n, b in pairs]
    launch_selection(plans, selection)
    return 0


def _prepare(args: argparse.Namespace) -> int:
    plans = _stencil_plans(args)
    write_plans(args.out, plans)
    print(f"{len(plans)} plans, {sum(len(p.blocks) for p in plans)} configurations written "
          f"to {args.out}")
    return 0


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m warpspeed.measure``."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "launch":
            return _launch(args)
        if args.command == "prepare":
            return _prepare(args)
        return _run(args)
    except WarpspeedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
