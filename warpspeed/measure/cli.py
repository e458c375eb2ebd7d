"""``python -m warpspeed.measure`` (MODEL.md §9): ``run`` measures folds and
block sizes into a CSV (``--dry-run`` lists them and needs no GPU);
``launch`` is the child process that ncu profiles."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..closed_pipe import quiet_on_closed_pipe
from ..errors import WarpspeedError
from . import ncu as ncu_mod
from .counters import interior
from .program import design_blocks, generate_variant, load_generator, parse_params, program_for
from .run import child_command, environment, launch_program, measure_fold
from .schema import MeasurementError, Triple, format_triple, params_json, parse_triple, write_csv


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m warpspeed.measure",
        description="Measure stencil kernels on this machine's GPU (MODEL.md §9).",
    )
    sub = p.add_subparsers(dest="command", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--stencil", required=True,
                       help="module of stencils/ or a .py file defining generate()")
        q.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="stencil parameter (repeatable)")
        q.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                       help="kernel scalar argument (default 1.0)")

    run = sub.add_parser("run", help="time and profile configurations, append rows to a CSV")
    common(run)
    which = run.add_mutually_exclusive_group()
    which.add_argument("--threads", type=int, default=1024,
                       help="all power-of-two block shapes of this many threads (default 1024)")
    which.add_argument("--blocks", nargs="+", metavar="X,Y,Z", help="explicit block sizes")
    run.add_argument("--folds", nargs="+", default=["1,1,1"], metavar="X,Y,Z",
                     help="fold variants (default 1,1,1)")
    run.add_argument("--out", help="CSV to append to")
    run.add_argument("--warmup", type=int, default=5)
    run.add_argument("--repetitions", type=int, default=25)
    run.add_argument("--no-ncu", action="store_true", help="time only, leave counters empty")
    run.add_argument("--ncu", default="ncu", help="the ncu executable")
    run.add_argument("--note", default="", help="text for the note column")
    run.add_argument("--dry-run", action="store_true",
                     help="list the configurations and commands; needs no GPU")

    launch = sub.add_parser("launch", help="(internal) launch each block once, for ncu")
    common(launch)
    launch.add_argument("--fold", default="1,1,1")
    launch.add_argument("--blocks", nargs="+", required=True)
    return p


def _dry_run(args: argparse.Namespace, folds: list[Triple], blocks: list[Triple] | None) -> str:
    params = parse_params(args.set, load_generator(args.stencil))
    scalars = {k: float(v) for k, v in parse_params(args.scalar).items()}
    lines = [f"dry run: {args.stencil} {params_json(params)}, nothing is measured"]
    for fold in folds:
        kernel, kernel_function = generate_variant(args.stencil, params, fold)
        program = program_for(kernel_function, kernel, scalars)
        todo = blocks or design_blocks(args.threads, kernel)
        lines.append(
            f"fold {format_triple(fold)}: kernel {kernel.name}, function {program.function}, "
            f"interior {format_triple(interior(kernel))}, {program.lups} Lup per launch, "
            f"{len(todo)} block sizes: {' '.join(format_triple(b) for b in todo)}"
        )
        if not args.no_ncu:
            cmd = ncu_mod.ncu_command(
                child_command(args.stencil, args.set, fold, todo, args.scalar),
                f"^{program.function}$", ncu=args.ncu,
            )
            lines.append("  ncu: " + " ".join(cmd))
    return "\n".join(lines)


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m warpspeed.measure``."""
    args = _parser().parse_args(argv)
    try:
        blocks = [parse_triple(b, "block") for b in args.blocks] if args.blocks else None
        if args.command == "launch":
            params = parse_params(args.set, load_generator(args.stencil))
            scalars = {k: float(v) for k, v in parse_params(args.scalar).items()}
            kernel, kernel_function = generate_variant(
                args.stencil, params, parse_triple(args.fold, "fold")
            )
            launch_program(program_for(kernel_function, kernel, scalars), blocks or [])
            return 0
        folds = [parse_triple(f, "fold") for f in args.folds]
        if args.dry_run:
            print(_dry_run(args, folds, blocks))
            return 0
        if not args.out:
            raise MeasurementError("give --out CSV (or --dry-run)")
        env = environment(args.ncu)
        total = 0
        for fold in folds:
            rows, warnings = measure_fold(
                args.stencil, args.set, fold, threads=args.threads, blocks=blocks,
                warmup=args.warmup, repetitions=args.repetitions, use_ncu=not args.no_ncu,
                ncu=args.ncu, scalar_items=args.scalar, note=args.note, env=env,
            )
            for w in warnings:
                print(f"warning: fold {format_triple(fold)}: {w}", file=sys.stderr)
            write_csv(args.out, rows)
            total += len(rows)
            print(f"fold {format_triple(fold)}: {len(rows)} rows appended to {args.out}",
                  flush=True)
        print(f"{total} configurations measured on {env['machine']}")
        return 0
    except WarpspeedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
