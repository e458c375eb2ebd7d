"""Stencils named on a command line: the front-end contract of a stencil
file (:class:`StencilModule`), loading it once per command
(:func:`stencil`) and parsing ``NAME=VALUE`` parameters by the annotations
of its functions.

Shared by the ``warpspeed`` command and ``python -m warpspeed.measure``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import WarpspeedError
from .kernel import Kernel
from .triples import Triple, as_triple


class UsageError(WarpspeedError):
    """Bad command-line input: an unknown stencil, parameter or value."""


def load_stencil(spec: str) -> types.ModuleType:
    """A stencil module: a name from ``stencils/`` or a path to a .py file."""
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
        except SystemExit as exc:  # would end warpspeed, with the file's status
            raise UsageError(f"{spec} called sys.exit({exc.code!r}) while it was imported: a "
                             "stencil file defines kernel(**params) and must not exit") from None
        except Exception as exc:  # a user's file may fail in any way
            raise UsageError(f"{spec} failed to import: {type(exc).__name__}: {exc}") from exc
        return module
    try:
        return importlib.import_module(f"stencils.{spec}")
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"unknown stencil {spec!r}; give a name from stencils/ or a path to a .py file"
        ) from exc


@runtime_checkable
class StencilModule(Protocol):
    """The front-end contract of a stencil file (``stencils/NAME.py`` or a
    user's ``.py``; the README's ``STENCIL``): ``kernel(**params)``
    returns a :class:`warpspeed.Kernel`; it takes ``fold`` to be folded and
    ``target`` to be generated for a code target. Optional, read by
    :func:`stencil`: ``generate(**params)`` returns the kernel and the code
    generator's kernel object, whose source the front end feeds to the
    compiler for its register count (:mod:`warpspeed.input.compiler`), and
    ``FOLDS`` the foldings ``warpspeed rank`` compares by default."""

    def kernel(self, **params: Any) -> Kernel: ...


@dataclass(frozen=True)
class Stencil:
    """A stencil file as one command reads it, once (:func:`stencil`)."""

    spec: str
    kernel: Callable[..., Kernel]
    #: ``generate`` of the file, None without one.
    generate: Callable[..., tuple[Kernel, Any]] | None
    #: The file's ``FOLDS``, None without them.
    folds: tuple[Triple, ...] | None
    takes_fold: bool
    takes_target: bool


def stencil(spec: str) -> Stencil:
    """The stencil ``spec`` (a name from ``stencils/`` or a .py file), its
    module executed once; one that breaks the contract of
    :class:`StencilModule` is refused in one line."""
    module = load_stencil(spec)
    if not isinstance(module, StencilModule) or not callable(module.kernel):
        raise UsageError(f"{spec} defines no function kernel(**params) returning a ws.Kernel")
    params = inspect.signature(module.kernel).parameters
    generate = getattr(module, "generate", None)
    folds = getattr(module, "FOLDS", None)
    try:
        own = tuple(as_triple(f) for f in folds) if folds else None
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{spec}: FOLDS must be x, y, z triples, got {folds!r}") from exc
    return Stencil(spec, module.kernel, generate if callable(generate) else None, own,
                   "fold" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()),
                   "target" in params)


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
        if origin in (typing.Union, types.UnionType):
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


def parse_params(
    func: Callable[..., object] | None, items: Sequence[str]
) -> dict[str, object]:
    """``NAME=VALUE`` strings to keyword arguments typed by ``func``'s
    signature; without ``func`` every value is guessed (int, float, tuple of
    ints, else text) and every name accepted."""
    if func is None:
        out0: dict[str, object] = {}
        for item in items:
            name, sep, text = item.partition("=")
            if not sep or not name.strip():
                raise UsageError(f"expected NAME=VALUE, got {item!r}")
            out0[name.strip()] = _guess(text.strip())
        return out0
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
