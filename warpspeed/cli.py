"""The ``warpspeed`` command: a thin shell over the library.

Every error a user can cause ends in a one-line message on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
import typing
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import WarpspeedError
from .kernel import Kernel
from .machine import load_machine, machine_files
from .model import Prediction, predict
from .rank import DEFAULT_FOLDS, Ranking, rank


class UsageError(WarpspeedError):
    """Bad command-line input."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of usage + error."""

    def error(self, message: str) -> typing.NoReturn:
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def load_kernel_function(spec: str) -> Callable[..., Kernel]:
    """``kernel`` of a stencil: a module name from ``stencils/`` or a path to a .py file."""
    path = Path(spec)
    if spec.endswith(".py") or path.exists():
        if not path.is_file():
            raise UsageError(f"stencil file {spec} does not exist")
        mod_spec = importlib.util.spec_from_file_location(path.stem, path)
        if mod_spec is None or mod_spec.loader is None:
            raise UsageError(f"cannot load {spec} as a Python module")
        module = importlib.util.module_from_spec(mod_spec)
        try:
            mod_spec.loader.exec_module(module)
        except Exception as exc:  # a user's file may fail in any way
            raise UsageError(f"{spec} failed to import: {type(exc).__name__}: {exc}") from exc
    else:
        try:
            module = importlib.import_module(f"stencils.{spec}")
        except ModuleNotFoundError as exc:
            raise UsageError(
                f"unknown stencil {spec!r}; give a name from stencils/ or a path to a .py file"
            ) from exc
    func = getattr(module, "kernel", None)
    if not callable(func):
        raise UsageError(f"{spec} defines no function kernel(**params) returning a ws.Kernel")
    return func


def _convert(text: str, annotation: object, name: str) -> object:
    """Parse a --set value as the parameter's annotated type."""
    ann = annotation
    if isinstance(ann, str):
        ann = {"int": int, "float": float, "str": str, "bool": bool}.get(ann, ann)
    origin = typing.get_origin(ann)
    try:
        if ann is int:
            return int(text)
        if ann is float:
            return float(text)
        if ann is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if origin is tuple or ann is tuple or (isinstance(ann, str) and ann.startswith("tuple")):
            args = typing.get_args(ann)
            item = float if args and args[0] is float else int
            return tuple(item(v) for v in text.split(","))
        if ann is str or ann is inspect.Parameter.empty:
            return _guess(text)
        if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
            for option in typing.get_args(ann):
                if option is type(None):
                    if text.lower() == "none":
                        return None
                    continue
                try:
                    return _convert(text, option, name)
                except UsageError:
                    continue
    except ValueError as exc:
        raise UsageError(f"--set {name}={text}: not a valid {_type_name(ann)}") from exc
    if isinstance(ann, str):
        return _guess(text)
    raise UsageError(f"--set {name}={text}: not a valid {_type_name(ann)}")


def _type_name(ann: object) -> str:
    return getattr(ann, "__name__", str(ann))


def _guess(text: str) -> object:
    """Values of unannotated parameters: int, float, tuple of ints, else a string."""
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if "," in text:
        try:
            return tuple(int(v) for v in text.split(","))
        except ValueError:
            pass
    return text


def parse_params(func: Callable[..., Kernel], items: Sequence[str]) -> dict[str, object]:
    """``NAME=VALUE`` strings to keyword arguments typed by ``func``'s signature."""
    sig = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # unresolvable annotations: fall back to the raw ones
        hints = {}
    out: dict[str, object] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--set expects NAME=VALUE, got {item!r}")
        param = sig.parameters.get(name)
        accepts_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
        if param is None and not accepts_any:
            known = ", ".join(sig.parameters) or "none"
            raise UsageError(f"unknown parameter {name!r}; this stencil takes: {known}")
        ann = hints.get(name, param.annotation if param else inspect.Parameter.empty)
        out[name] = _convert(text.strip(), ann, name)
    return out


def build_kernel(spec: str, items: Sequence[str]) -> Kernel:
    return kernel_factory(spec, items, None)((1, 1, 1))


def _takes_fold(func: Callable[..., Kernel]) -> bool:
    params = inspect.signature(func).parameters
    return "fold" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def kernel_factory(
    spec: str, items: Sequence[str], registers: int | None
) -> Callable[[tuple[int, int, int]], Kernel]:
    """A function ``fold -> Kernel`` for the stencil ``spec`` with the
    ``--set`` parameters and, if given, ``--registers`` applied. A fold other
    than 1,1,1 needs a stencil whose ``kernel()`` takes ``fold``."""
    func = load_kernel_function(spec)
    params = parse_params(func, items)
    takes_fold = _takes_fold(func)
    if "fold" in params:
        raise UsageError("give the fold with --fold X,Y,Z, not --set fold=...")

    def make(fold: tuple[int, int, int]) -> Kernel:
        kwargs = dict(params)
        if takes_fold:
            kwargs["fold"] = fold
        elif fold != (1, 1, 1):
            raise UsageError(
                f"{spec} has no fold parameter; it cannot be folded {','.join(map(str, fold))}"
            )
        try:
            kernel = func(**kwargs)
        except WarpspeedError:
            raise
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{spec}: kernel({kwargs}) failed: {exc}") from exc
        if not isinstance(kernel, Kernel):
            raise UsageError(
                f"{spec}: kernel() returned {type(kernel).__name__}, not a ws.Kernel"
            )
        if registers is not None:
            kernel = dataclasses.replace(kernel, registers=registers)
        return kernel

    return make


def parse_triple(text: str, what: str) -> tuple[int, int, int]:
    parts = text.replace("x", ",").split(",")
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError as exc:
        raise UsageError(f"{what} must be X,Y,Z integers, got {text!r}") from exc
    if len(vals) != 3:
        raise UsageError(f"{what} must be three integers X,Y,Z, got {text!r}")
    return vals  # type: ignore[return-value]


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def prediction_table(preds: Sequence[Prediction], title: str = "") -> object:
    """A rich table of predictions, one row each."""
    from rich.table import Table

    table = Table(title=title or None)
    cols = ["block", "fold", "blk/SM", "L1 cyc", "L1 ld", "L2 ld", "L2 st", "DRAM ld",
            "DRAM st", "FP", "L1", "L2", "DRAM", "GLup/s", "limiter"]
    for c in cols:
        table.add_column(c, justify="right")
    for p in preds:
        d = p.to_dict()
        v, lim = d["volumes"], d["limits"]
        table.add_row(
            ",".join(map(str, p.block)), ",".join(map(str, p.fold)), str(p.blocks_per_sm),
            _fmt(p.l1_cycles), _fmt(v["l1_load"]), _fmt(v["l2_load"]), _fmt(v["l2_store"]),
            _fmt(v["dram_load"]), _fmt(v["dram_store"]), _fmt(lim["fp"]), _fmt(lim["l1"]),
            _fmt(lim["l2"]), _fmt(lim["dram"]), _fmt(p.glups), p.limiter,
        )
    return table


def _print(obj: object) -> None:
    from rich.console import Console

    Console(width=200).print(obj)


def cmd_machines(args: argparse.Namespace) -> int:
    rows = []
    for path in machine_files().values():
        m = load_machine(path)
        rows.append({
            "name": m.name, "description": m.description, "validated": m.validated,
            "sms": m.sms, "clock_ghz": m.clock_ghz, "l2_bytes": m.l2_bytes,
            "dram_bandwidth": m.dram_bandwidth, "l2_bandwidth": m.l2_bandwidth, "fits": m.fits,
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    from rich.table import Table

    table = Table(title="machines")
    for c in ("name", "SMs", "GHz", "L2 (MiB)", "DRAM GB/s", "L2 GB/s", "validated", "description"):
        table.add_column(c)
    for r in rows:
        table.add_row(r["name"], str(r["sms"]), str(r["clock_ghz"]), f"{r['l2_bytes'] / 2**20:g}",
                      f"{r['dram_bandwidth']:g}", f"{r['l2_bandwidth']:g}",
                      "yes" if r["validated"] else "no", r["description"])
    _print(table)
    return 0


def _one_kernel(args: argparse.Namespace) -> tuple[Kernel, tuple[int, int, int]]:
    fold = parse_triple(args.fold, "--fold")
    block = parse_triple(args.block, "--block")
    return kernel_factory(args.stencil, args.set, args.registers)(fold), block


def cmd_predict(args: argparse.Namespace) -> int:
    kernel, block = _one_kernel(args)
    p = predict(kernel, args.machine, block)
    if args.json:
        print(json.dumps(p.to_dict(), indent=2))
    else:
        _print(prediction_table([p], title=f"{kernel.name} on {p.machine}"))
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
        self.bar: object = None
        self.task: object = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if time.monotonic() - self.start < 1.0 or done >= total:
                return
            from rich.console import Console
            from rich.progress import Progress

            self.bar = Progress(console=Console(stderr=True), transient=True)
            self.bar.start()  # type: ignore[attr-defined]
            self.task = self.bar.add_task("ranking", total=total)  # type: ignore[attr-defined]
        self.bar.update(self.task, completed=done, total=total)  # type: ignore[attr-defined]

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()  # type: ignore[attr-defined]


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def cmd_rank(args: argparse.Namespace) -> int:
    make = kernel_factory(args.stencil, args.set, args.registers)
    takes_fold = _takes_fold(load_kernel_function(args.stencil))
    if args.fold:
        folds = list(dict.fromkeys(parse_triple(f, "--fold") for f in args.fold))
    else:
        folds = list(DEFAULT_FOLDS) if takes_fold else [(1, 1, 1)]
    variants = {f: make(f) for f in folds}
    bar = _ProgressBar() if sys.stderr.isatty() else None
    t0 = time.monotonic()
    try:
        r = rank(
            variants, args.machine, threads=args.threads or (1024,), all_shapes=args.all_shapes,
            top=args.top, jobs=args.jobs, progress=bar,
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
        title = f"{r.kernel} on {r.machine}: " + (
            f"best {len(r.predictions)} of {r.configurations}" if r.top
            else f"{r.configurations} configurations"
        )
        _print(prediction_table(list(r.predictions), title=title))
        _print(_rank_summary(r, elapsed))
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
    from rich.table import Table

    from .advice import advise

    kernel, block = _one_kernel(args)
    m = load_machine(args.machine)
    p = predict(kernel, m, block)
    a = advise(p, m, kernel)
    table = Table(title=f"{a.kernel} on {a.machine}, block {','.join(map(str, a.block))}, "
                        f"fold {','.join(map(str, a.fold))}: {a.glups:.2f} GLup/s")
    table.add_column("limit")
    table.add_column("GLup/s", justify="right")
    table.add_column("", justify="left")
    for name, value in a.limits:
        note = "binding" if name == a.limiter else f"{value / a.glups:.2f}x"
        table.add_row(name, f"{value:.2f}", note)
    _print(table)
    lines = [f"binding limiter: {a.limiter}"]
    if a.headroom is not None:
        lines.append(
            f"headroom: {a.headroom:.2f}x until {a.next_limiter} binds "
            "(speedup bound if the binding limiter were removed)"
        )
    if a.hints:
        lines += [f"- [{h.kind}] {h.message}" for h in a.hints]
    else:
        lines.append("no hints: nothing stands out")
    from rich.console import Console

    Console(width=120).print("\n".join(lines), highlight=False, markup=False)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="warpspeed",
        description="Predict GPU kernel performance from address expressions (paper model).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_m = sub.add_parser("machines", help="list the known GPUs")
    p_m.add_argument("--json", action="store_true", help="print JSON")
    p_m.set_defaults(func=cmd_machines)
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("stencil",
                       help="a name from stencils/ or a .py file defining kernel(**params)")
        p.add_argument("--machine", required=True, help="machine name or .toml file")
        p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="stencil parameter (repeatable)")
        p.add_argument("--registers", type=_positive, metavar="R",
                       help="registers per thread (default: the kernel's)")

    p_p = sub.add_parser("predict", help="predict one launch configuration")
    common(p_p)
    p_p.add_argument("--block", required=True, help="block size X,Y,Z")
    p_p.add_argument("--fold", default="1,1,1", help="thread folding X,Y,Z (default 1,1,1)")
    p_p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p_p.set_defaults(func=cmd_predict)

    p_r = sub.add_parser("rank", help="rank block sizes and foldings by predicted GLup/s")
    common(p_r)
    p_r.add_argument("--threads", type=_positive, nargs="+", action="extend", metavar="N",
                     help="threads per block (repeatable; default 1024)")
    p_r.add_argument("--fold", nargs="+", action="extend", metavar="X,Y,Z",
                     help="folding variants (default 1,1,1 1,2,1 1,1,2 if the stencil folds)")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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
