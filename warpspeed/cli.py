"""The ``warpspeed`` command: a thin shell over the library.

Every error a user can cause ends in a one-line message on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import WarpspeedError
from .kernel import Kernel
from .machine import load_machine, machine_files
from .model import Prediction, predict


class UsageError(WarpspeedError):
    """Bad command-line input."""


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
    func = load_kernel_function(spec)
    params = parse_params(func, items)
    try:
        kernel = func(**params)
    except WarpspeedError:
        raise
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{spec}: kernel({params}) failed: {exc}") from exc
    if not isinstance(kernel, Kernel):
        raise UsageError(f"{spec}: kernel() returned {type(kernel).__name__}, not a ws.Kernel")
    return kernel


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


def cmd_predict(args: argparse.Namespace) -> int:
    kernel = build_kernel(args.stencil, args.set)
    block = parse_triple(args.block, "--block")
    p = predict(kernel, args.machine, block)
    if args.json:
        print(json.dumps(p.to_dict(), indent=2))
    else:
        _print(prediction_table([p], title=f"{kernel.name} on {p.machine}"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="warpspeed",
        description="Predict GPU kernel performance from address expressions (paper model).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_m = sub.add_parser("machines", help="list the known GPUs")
    p_m.add_argument("--json", action="store_true", help="print JSON")
    p_m.set_defaults(func=cmd_machines)
    p_p = sub.add_parser("predict", help="predict one launch configuration")
    p_p.add_argument("stencil",
                     help="a name from stencils/ or a .py file defining kernel(**params)")
    p_p.add_argument("--machine", required=True, help="machine name or .toml file")
    p_p.add_argument("--block", required=True, help="block size X,Y,Z")
    p_p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                     help="stencil parameter (repeatable)")
    p_p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p_p.set_defaults(func=cmd_predict)
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
