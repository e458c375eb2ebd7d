"""The ``warpspeed`` command: a thin shell over the library.

Every error a user can cause ends in a one-line message on stderr and exit
code 2, never a traceback. Output into a pipe whose reader has gone
(``| head``) ends the command quietly with exit code 1
(:mod:`warpspeed.closed_pipe`).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import sys
import time
import typing
from collections.abc import Sequence

from .cli_stencils import (
    build_variants,
    code_target,
    ranked_variants,
    registers_line,
)
from .closed_pipe import quiet_on_closed_pipe
from .errors import WarpspeedError
from .input.kernel import Kernel
from .input.stencil_spec import UsageError, stencil
from .input.triples import parse_triple
from .machine import machine_files
from .model import Prediction, load_machine, predict
from .search.rank import Ranking, rank
from .timing import DEFAULT_MODEL, MODELS, listing

if typing.TYPE_CHECKING:
    from rich.progress import Progress, TaskID


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of usage + error."""

    def error(self, message: str) -> typing.NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def prediction_table(preds: Sequence[Prediction], title: str = "",
                     vendor: str = "NVIDIA") -> object:
    """The predictions table in ``vendor``'s words, with its title above it
    (:mod:`warpspeed.reports.tables`)."""
    from rich.console import Group

    from .reports.tables import prediction_table as table

    return Group(title, table(preds, vendor=vendor)) if title else table(preds, vendor=vendor)


def _print(obj: object) -> None:
    """Print text or a table wrapped to the terminal's width."""
    from .reports.tables import console

    console().print(obj)


def cmd_machines(args: argparse.Namespace) -> int:
    from .reports.tables import machine_row, machine_table
    from .validation.grounds import groundings
    from .validation.transfer import DEV_SETS

    sets = {g.machine: g.kernel_sets for g in groundings(DEV_SETS)}
    rows = [machine_row(m, sets.get(m.name, ()))
            for m in map(load_machine, machine_files().values())]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    _print("machines (DRAM paper: the paper model's figure; DRAM default: the default model's "
           "copy and loads-only plateaus; validated on: kernel measurements run on the GPU)")
    _print(machine_table(rows))
    return 0


def _one_kernel(args: argparse.Namespace) -> tuple[Kernel, tuple[int, int, int]]:
    fold = parse_triple(args.fold, "--fold", error=UsageError)
    block = parse_triple(args.block, "--block", error=UsageError)
    m = load_machine(args.machine)
    kernels = build_variants(stencil(args.stencil), args.set, args.registers, m.arch, [fold],
                             code_target(args, m), args.target is not None)
    return kernels[fold], block


def cmd_predict(args: argparse.Namespace) -> int:
    kernel, block = _one_kernel(args)
    m = load_machine(args.machine)
    p = predict(kernel, m, block, model=args.model)
    if args.json:
        print(json.dumps(p.to_dict(), indent=2))
    else:
        _print(prediction_table([p], title=f"{kernel.name} on {p.machine} ({p.model} model)",
                                vendor=m.vendor))
        for note in p.notes:  # MODEL.md §15
            _print(f"note: {note}")
        _print(registers_line([(kernel.fold, kernel)]))
        _print(f"{p.machine}: {p.evidence.phrase}")  # MODEL.md §14
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    rows = listing()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['name']}{' (default)' if r['default'] else ''}: {r['description']}")
    return 0


def _flatten(d: dict[str, object], prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, f"{name}."))
        elif isinstance(v, list):
            out[name] = "x".join(map(str, v))
        else:
            out[name] = "" if v is None else v
    return out


class _ProgressBar:
    """A rich progress bar on stderr that appears only once a sweep has run
    for more than a second, and only on a terminal."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None or self.task is None:  # set together, below
            if time.monotonic() - self.start < 1.0 or done >= total:
                return
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("ranking", total=total)
        self.bar.update(self.task, completed=done, total=total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _threads(text: str) -> int:
    """A ``--threads`` count: a positive integer (the machine's limit is
    checked once the machine is known)."""
    try:
        return _positive(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive number of threads per block (e.g. --threads 256), got {text!r}"
        ) from None


def cmd_rank(args: argparse.Namespace) -> int:
    m = load_machine(args.machine)
    chosen = ranked_variants(args, m)
    variants = chosen.kernels
    bar = _ProgressBar() if sys.stderr.isatty() else None
    t0 = time.monotonic()
    try:
        r = rank(
            variants, m, threads=chosen.threads, all_shapes=args.all_shapes,
            top=args.top, jobs=args.jobs, progress=bar, model=args.model,
        )
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.monotonic() - t0
    if args.json:
        print(json.dumps(r.to_dicts(), indent=2))
    elif args.csv:
        rows = [_flatten(d) for d in r.to_dicts()]
        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["block"])
        writer.writeheader()
        writer.writerows(rows)
    else:
        title = f"{r.kernel} on {r.machine} ({r.model} model): " + (
            f"best {len(r.predictions)} of {r.configurations}" if r.top
            else f"{r.configurations} configurations"
        )
        _print(prediction_table(list(r.predictions), title=title, vendor=m.vendor))
        _print(_rank_summary(r, elapsed))
        _print(registers_line(list(variants.items())))
        for line in chosen.left_out:
            _print(line)
        if r.predictions:  # the best's grounding and error band, MODEL.md §14
            _print(f"{r.machine}: {r.predictions[0].evidence.phrase}")
        for note in list(r.notes) + list(r.predictions[0].notes if r.predictions else ()):
            _print(note)
    return 0


def _rank_summary(r: Ranking, elapsed: float) -> str:
    parts = [
        f"{len(r.excluded)} excluded",
        f"{len(r.classes)} classes of identical configurations",
        f"{r.stages} block stages",
        f"{r.waves} wave sets",
        f"{r.evaluated} full evaluations",
    ]
    if r.top:
        parts.append(f"{r.skipped} skipped by the bound")
    return ", ".join(parts) + f"; {elapsed:.1f} s"


def cmd_explain(args: argparse.Namespace) -> int:
    from .reports.advice import advise, explanation_lines
    from .reports.tables import Column, fitted_table

    kernel, block = _one_kernel(args)
    m = load_machine(args.machine)
    p = predict(kernel, m, block, model=args.model)
    a = advise(p, m, kernel)
    _print(f"{a.kernel} on {a.machine}, block {','.join(map(str, a.block))}, "
           f"fold {','.join(map(str, a.fold))}: {a.glups:.2f} GLup/s")
    rows = [[name, f"{value:.2f}",
             "binding" if name == a.limiter else f"{value / a.binding_limit:.2f}x"]
            for name, value in a.limits]
    _print(fitted_table((Column("limiter", justify="left"), Column("limit", "GLup/s"),
                         Column("headroom", "x binding", justify="left")), rows))
    lines = explanation_lines(p, a) + [registers_line([(kernel.fold, kernel)]),
                                       f"{p.machine}: {p.evidence.phrase}"]
    _print("\n".join(lines))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """The web calculator (``warpspeed.web``, imported only here)."""
    from .web import serve

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    return serve(port=args.port, host=args.host)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="warpspeed",
        description="Predict GPU kernel performance from address expressions. Models: "
        + "; ".join(f"{r['name']}{' (default)' if r['default'] else ''}" for r in listing())
        + " (see 'warpspeed models').",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"warpspeed {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p_m = sub.add_parser("machines", help="list the known GPUs")
    p_m.add_argument("--json", action="store_true", help="print JSON")
    p_m.set_defaults(func=cmd_machines)
    from .cli_calibrate import add_parser as add_calibrate

    add_calibrate(p_m)
    p_mo = sub.add_parser("models", help="list the timing models and what each adds")
    p_mo.add_argument("--json", action="store_true", help="print JSON")
    p_mo.set_defaults(func=cmd_models)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("stencil",
                       help="a name from stencils/ or a .py file defining kernel(**params)")
        p.add_argument("--machine", required=True, help="machine name or .toml file")
        p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="stencil parameter (repeatable)")
        p.add_argument("--registers", type=_positive, metavar="R",
                       help="registers per thread (default: nvcc's count when installed, "
                            "else a conservative estimate, for pystencils stencils; else the "
                            "kernel's)")
        p.add_argument("--model", default=DEFAULT_MODEL, choices=tuple(MODELS),
                       help=f"timing model (default {DEFAULT_MODEL}; 'warpspeed models')")
        p.add_argument("--target", choices=("cuda", "hip"),
                       help="code generator target of the stencils made with pystencils "
                            "(default: the machine's vendor's, hip on AMD, cuda on NVIDIA); "
                            "recorded as the target of a hand-written stencil")

    p_p = sub.add_parser("predict", help="predict one launch configuration")
    common(p_p)
    p_p.add_argument("--block", required=True, help="block size X,Y,Z")
    p_p.add_argument("--fold", default="1,1,1", help="thread folding X,Y,Z (default 1,1,1)")
    p_p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p_p.set_defaults(func=cmd_predict)

    p_r = sub.add_parser("rank", help="rank block sizes and foldings by predicted GLup/s")
    common(p_r)
    p_r.add_argument("--threads", type=_threads, nargs="+", action="extend", metavar="N",
                     help="threads per block (repeatable; default every power of two from "
                          "64 to the machine's limit; counts that cannot launch are excluded)")
    p_r.add_argument("--fold", nargs="+", action="extend", metavar="X,Y,Z",
                     help="folding variants (default: the stencil module's FOLDS, else "
                          "1,1,1 1,2,1 1,1,2 if the stencil folds)")
    p_r.add_argument("--top", type=_positive, metavar="K",
                     help="only the best K, pruning the rest by an upper bound")
    p_r.add_argument("--jobs", type=_positive, default=os.cpu_count() or 1, metavar="J",
                     help="worker processes (default: all CPUs)")
    p_r.add_argument("--all-shapes", action="store_true",
                     help="every block shape, not only powers of two")
    out = p_r.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="a JSON array, best first")
    out.add_argument("--csv", action="store_true", help="CSV, best first")
    p_r.set_defaults(func=cmd_rank)

    p_e = sub.add_parser("explain", help="why a configuration performs as predicted")
    common(p_e)
    p_e.add_argument("--block", required=True, help="block size X,Y,Z")
    p_e.add_argument("--fold", default="1,1,1", help="thread folding X,Y,Z (default 1,1,1)")
    p_e.set_defaults(func=cmd_explain)

    p_s = sub.add_parser("serve", help="start the web calculator (needs warpspeed[web])")
    p_s.add_argument("--port", type=int, default=5006, metavar="N",
                     help="port (default 5006; 0: any free port)")
    p_s.add_argument("--host", default="127.0.0.1",
                     help="address to listen on (default 127.0.0.1: this machine only)")
    p_s.set_defaults(func=cmd_serve)

    from .cli_tune import add_parser as add_tune

    add_tune(sub, common)

    p_v = sub.add_parser("validate", help="compare predictions with a measurements CSV, or "
                         "both models with the public V100 data (--v100)")
    p_v.add_argument("csv", nargs="?", help="measurements CSV (schema: warpspeed.measure)")
    p_v.add_argument("--measurements", metavar="FILE.csv",
                     help="the measurements CSV (the same as giving it first)")
    p_v.add_argument("--model", default=DEFAULT_MODEL, choices=tuple(MODELS),
                     help=f"timing model for a CSV (default {DEFAULT_MODEL})")
    p_v.add_argument("--v100", action="store_true",
                     help="compare both models with the public data in shared/data beside the "
                     "repository (V100 stencils, A100 convolution), with the leave-one-set-out "
                     "table of the default model's fitted constant")
    p_v.add_argument("--machine", help="machine name or .toml (default: from the CSV's GPU)")
    p_v.add_argument("--fits", help="capacity fits name or .toml (default: the machine's)")
    p_v.add_argument("--subset", default="all", choices=("all", "train", "test"),
                     help="all rows, or the deterministic train or test half")
    p_v.add_argument("--json", action="store_true", help="print the report as JSON")
    p_v.set_defaults(func=cmd_validate)
    return parser


def cmd_validate(args: argparse.Namespace) -> int:
    if args.measurements is not None:
        if args.csv is not None:
            raise UsageError("give the measurements CSV once: first, or with --measurements")
        args.csv = args.measurements
    if args.v100 or args.csv is None:
        if args.csv is not None:
            raise UsageError("give either a measurements CSV or --v100, not both")
        if not args.v100:
            raise UsageError("give a measurements CSV, or --v100 for the public V100 data")
        from .validation.transfer import reference_validation

        print(reference_validation(as_json=args.json))
        return 0
    from .validation.validate import validate_command

    print(validate_command(args.csv, machine=args.machine, fits=args.fits, json=args.json,
                           subset=args.subset, model=args.model))
    return 0


#: A value that argparse would take for an option because it starts with
#: '-': a negative number in a list ('-256,1,1').
_NEGATIVE_LIST = re.compile(r"-[0-9][0-9,\s]*,[0-9,\s-]*")


def _joined(argv: Sequence[str]) -> list[str]:
    """``argv`` with every option followed by a negative number list joined
    to it (``--block -256,1,1`` -> ``--block=-256,1,1``), so that the value
    reaches its own check (its one-line error), not argparse's "expected one
    argument"."""
    out: list[str] = []
    for token in argv:
        if (out and out[-1].startswith("--") and "=" not in out[-1]
                and _NEGATIVE_LIST.fullmatch(token)):
            out[-1] = f"{out[-1]}={token}"
        else:
            out.append(token)
    return out


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(_joined(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse already printed a one-line usage error
        return int(exc.code or 0)
    try:
        return int(args.func(args))
    except WarpspeedError as exc:
        print(f"warpspeed: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("warpspeed: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
