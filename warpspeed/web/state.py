"""The web calculator's page logic, without a browser or Panel: form values
(:class:`Form`, all text, as the widgets and the link hold them) become a
kernel, a machine, a prediction and its advice (the machines, shipped or
uploaded, are in :mod:`warpspeed.web.machines` and re-exported here; the
layer-condition sweep and the ranking are in :mod:`warpspeed.web.explore`).

Every function raises :class:`FieldError` (a :class:`warpspeed.WarpspeedError`)
naming the form field at fault, with the library's own message where the
library found the fault. User text is only ever read by
:mod:`warpspeed.web.parser` or by the library's typed parameter parser
(:func:`warpspeed.input.stencil_spec.parse_params`); nothing is evaluated. The
limits below bound the work a single request can cause.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import pkgutil
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from ..errors import WarpspeedError
from ..input import triples
from ..input.kernel import Access, Field, Kernel
from ..input.stencil_spec import load_stencil, parse_params
from ..machine import Machine
from ..model import Prediction, predict
from ..reports.advice import Advice, advise
from ..timing import MODELS
from .errors import FieldError
from .form import Form
from .machines import (
    MAX_MACHINE_FILE,
    UPLOADED,
    build_machine,
    machine_from_toml,
    machine_names,
    pack_machine,
    unpack_machine,
)
from .parser import ExpressionError, parse_access

#: Most characters of one text box, and most lines of the kernel boxes.
MAX_TEXT = 20_000
MAX_LINES = 200
#: Most fields and most accesses (loads + stores) of a hand-written kernel.
MAX_FIELDS = 16
MAX_ACCESSES = 256
#: Most lattice points of a domain, most elements of a field.
MAX_DOMAIN_POINTS = 2**33
MAX_FIELD_ELEMENTS = 2**38
#: Largest fold factor per axis, largest integer stencil parameter.
MAX_FOLD = 16
MAX_PARAM = 4096
#: Limits of the stencil parameters that multiply the work (accesses per thread).
PARAM_LIMITS = {"radius": 16}

# --------------------------------------------------------------------------
# Small parsers


def checked_text(value: str, where: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str):
        raise FieldError(where, f"expected text, got {type(value).__name__}")
    if len(value) > limit:
        raise FieldError(where, f"{len(value)} characters; at most {limit} are accepted")
    return value


def _lines(value: str, where: str) -> list[tuple[int, str]]:
    """Numbered non-blank lines of a text box, without ``#`` comments."""
    out = []
    for no, line in enumerate(checked_text(value, where).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            out.append((no, line))
    if len(out) > MAX_LINES:
        raise FieldError(where, f"{len(out)} lines; at most {MAX_LINES} are accepted")
    return out


def parse_ints(text: str, where: str, what: str, count: int | None = None,
               low: int = 1, high: int = 2**40) -> tuple[int, ...]:
    """``"256,1,2"`` or ``"256x1x2"`` to integers in ``[low, high]``
    (:func:`warpspeed.input.triples.parse_ints`), errors in field ``where``."""
    return triples.parse_ints(checked_text(text, where, 200), what, count=count, low=low,
                              high=high, error=functools.partial(FieldError, where))


def triple(text: str, where: str, what: str, high: int = 2**20) -> tuple[int, int, int]:
    """Three positive integers (a block size or a fold)."""
    return triples.as_triple(parse_ints(text, where, what, 3, 1, high))


# --------------------------------------------------------------------------
# Kernels


@dataclass(frozen=True)
class HandKernel:
    """A hand-written kernel, parsed: field specs, accesses, domain, work."""

    fields: tuple[tuple[str, tuple[int, ...], int], ...]
    loads: tuple[tuple[int, str, tuple[object, ...]], ...]  # (line, field, index)
    stores: tuple[tuple[int, str, tuple[object, ...]], ...]
    domain: tuple[int, ...]
    fp: float | None
    registers: int | None
    fold: tuple[int, int, int]


def parse_fields(text: str) -> tuple[tuple[str, tuple[int, ...], int], ...]:
    """``NAME SHAPE [ITEMSIZE]`` lines to field specs."""
    out: dict[str, tuple[str, tuple[int, ...], int]] = {}
    for no, line in _lines(text, "fields"):
        parts = line.split()
        if len(parts) not in (2, 3):
            raise FieldError("fields", f"line {no}: expected NAME SHAPE [ITEMSIZE] like "
                             f"'src 648,520,520 8', got {line[:60]!r}")
        name = parts[0]
        if not (name.isascii() and name.isidentifier()) or len(name) > 40:
            raise FieldError("fields", f"line {no}: field name must be an identifier, "
                             f"got {name[:40]!r}")
        shape = parse_ints(parts[1], "fields", f"line {no}: the shape of {name}", None, 1, 2**30)
        if len(shape) > 4:
            raise FieldError("fields", f"line {no}: {name} has more than 4 dimensions")
        if math.prod(shape) > MAX_FIELD_ELEMENTS:
            raise FieldError("fields", f"line {no}: {name} has more than 2**38 elements")
        size = parse_ints(parts[2] if len(parts) == 3 else "8", "fields",
                          f"line {no}: the element size of {name}", 1, 1, 64)[0]
        if name in out:
            raise FieldError("fields", f"line {no}: field {name} is defined twice")
        out[name] = (name, shape, size)
    if not out:
        raise FieldError("fields", "define at least one field, e.g. 'src 648,520,520 8'")
    if len(out) > MAX_FIELDS:
        raise FieldError("fields", f"{len(out)} fields; at most {MAX_FIELDS} are accepted")
    return tuple(out.values())


def _accesses(text: str, where: str,
              names: set[str]) -> tuple[tuple[int, str, tuple[object, ...]], ...]:
    out = []
    for no, line in _lines(text, where):
        try:
            name, index = parse_access(line)
        except ExpressionError as exc:
            raise FieldError(where, f"line {no}: {exc}") from None
        if name not in names:
            raise FieldError(where, f"line {no}: unknown field {name[:40]!r}; the fields are "
                             f"{', '.join(sorted(names))}")
        out.append((no, name, index))
    return tuple(out)


def parse_hand(form: Form) -> HandKernel:
    """The hand-written kernel of ``form``, parsed and checked against the limits."""
    fields = parse_fields(form.fields)
    names = {f[0] for f in fields}
    loads = _accesses(form.loads, "loads", names)
    stores = _accesses(form.stores, "stores", names)
    if len(loads) + len(stores) > MAX_ACCESSES:
        raise FieldError("loads", f"{len(loads) + len(stores)} accesses; at most "
                         f"{MAX_ACCESSES} are accepted")
    if not loads and not stores:
        raise FieldError("loads", "a kernel needs at least one load or store")
    domain = parse_ints(form.domain, "domain", "the domain", None, 1, 2**30)
    if len(domain) > 3:
        raise FieldError("domain", f"the domain has 1 to 3 extents (x, y, z), got {domain}")
    fold = triple(form.fold, "fold", "the fold", MAX_FOLD)
    if math.prod(domain) * math.prod(fold) > MAX_DOMAIN_POINTS:
        raise FieldError("domain", "the domain has more than 2**33 lattice points")
    fp = None
    if form.fp.strip():
        fp = float(parse_ints(form.fp, "fp", "FP instructions per thread", 1, 0, 10**6)[0])
    return HandKernel(fields, loads, stores, domain, fp, _registers(form), fold)


def _registers(form: Form) -> int | None:
    if not form.registers.strip():
        return None
    return parse_ints(form.registers, "registers", "registers per thread", 1, 1, 255)[0]


class _KernelOptions(TypedDict, total=False):
    """What a hand-written kernel gives :class:`Kernel` only when the form says it."""

    registers: int


def hand_kernel(spec: HandKernel, domain: Sequence[int] | None = None) -> Kernel:
    """The :class:`warpspeed.Kernel` of ``spec``; with ``domain`` (threads),
    every field grows along x, y, z by the change of the domain times the
    fold (the halo stays), as the layer-condition sweep needs."""
    grow = [0, 0, 0]
    if domain is not None:
        old = tuple(spec.domain) + (1,) * (3 - len(spec.domain))
        grow = [(int(domain[d]) - old[d]) * spec.fold[d] for d in range(3)]
    fields = {}
    for name, shape, size in spec.fields:
        new = tuple(s + grow[d] if d < 3 else s for d, s in enumerate(shape))
        try:
            fields[name] = Field(name, shape=new, itemsize=size)
        except WarpspeedError as exc:
            raise FieldError("fields", str(exc)) from None

    def build(items: tuple[tuple[int, str, tuple[object, ...]], ...], where: str) -> list[Access]:
        out = []
        for no, name, index in items:
            try:
                out.append(fields[name][index])
            except WarpspeedError as exc:  # the library's message, which names the access
                raise FieldError(where, f"line {no}: {exc}") from None
        return out

    loads, stores = build(spec.loads, "loads"), build(spec.stores, "stores")
    kwargs: _KernelOptions = {}
    if spec.registers is not None:
        kwargs["registers"] = spec.registers
    try:
        return Kernel(loads=loads, stores=stores, domain=tuple(domain or spec.domain),
                      fold=spec.fold, fp_instructions=spec.fp, name="hand-written", **kwargs)
    except WarpspeedError as exc:
        raise FieldError("domain" if "domain" in str(exc) else "loads", str(exc)) from None


@functools.cache
def stencil_names() -> tuple[str, ...]:
    """The shipped stencils (modules of ``stencils/``)."""
    import stencils

    return tuple(sorted(m.name for m in pkgutil.iter_modules(stencils.__path__)
                        if not m.name.startswith("_")))


def stencil_function(name: str) -> Callable[..., Kernel]:
    """``kernel`` of a shipped stencil; only names of :func:`stencil_names`."""
    if name not in stencil_names():
        raise FieldError("stencil", f"unknown stencil {name[:40]!r}; the stencils are "
                         f"{', '.join(stencil_names())}")
    return load_stencil(name).kernel


def stencil_defaults(name: str) -> dict[str, str]:
    """The parameters of a shipped stencil but ``fold`` and ``target`` (the
    machine's vendor's), with their defaults as text."""
    out = {}
    for p in inspect.signature(stencil_function(name)).parameters.values():
        if p.name in ("fold", "target") or p.default is inspect.Parameter.empty:
            continue
        d = p.default
        out[p.name] = ",".join(map(str, d)) if isinstance(d, tuple) else str(d)
    return out


def takes_fold(name: str) -> bool:
    """Whether the shipped stencil's ``kernel`` has a ``fold`` parameter."""
    return "fold" in inspect.signature(stencil_function(name)).parameters


def stencil_params(form: Form) -> dict[str, object]:
    """The stencil's keyword arguments from ``form.params`` (the library's
    typed parser), checked against the limits."""
    func = stencil_function(form.stencil)
    items = checked_text(form.params, "params", 2000).split()
    if any(item.split("=", 1)[0].strip() == "fold" for item in items):
        raise FieldError("params", "give the fold in the fold box, not as a parameter")
    try:
        params = parse_params(func, items)
    except WarpspeedError as exc:
        raise FieldError("params", str(exc)) from None
    for name, value in params.items():
        values = value if isinstance(value, tuple) else (value,)
        high = PARAM_LIMITS.get(name, MAX_PARAM if name != "shape" else 2**30)
        for v in values:
            if isinstance(v, (int, float)) and not -high <= v <= high:
                raise FieldError("params", f"{name}={v} is outside the accepted range "
                                 f"-{high}..{high}")
        if name == "shape" and math.prod(v for v in values if isinstance(v, int)) > (
                MAX_DOMAIN_POINTS):
            raise FieldError("params", "the shape has more than 2**33 lattice points")
    return params


def vendor_target(machine: Machine | None) -> str | None:
    """The code generator target of ``machine``'s GPU family ("hip" on AMD,
    "cuda" on NVIDIA; MODEL.md §15), None without a machine."""
    return None if machine is None else machine.family.target.lower()


@functools.lru_cache(maxsize=128)
def stencil_kernel(name: str, params: tuple[tuple[str, object], ...],
                    fold: tuple[int, int, int], target: str | None = None) -> Kernel:
    """The shipped stencil ``name`` with ``params``, folded by ``fold`` and,
    if it generates code and ``params`` name none, for ``target``."""
    kwargs = dict(params)
    takes = inspect.signature(stencil_function(name)).parameters
    if target and "target" in takes and "target" not in kwargs:
        kwargs["target"] = target
    if takes_fold(name):
        kwargs["fold"] = fold
    elif fold != (1, 1, 1):
        raise FieldError("fold", f"{name} has no fold parameter; use the fold 1,1,1")
    try:
        kernel = stencil_function(name)(**kwargs)
    except WarpspeedError as exc:
        raise FieldError("params", str(exc)) from None
    except Exception as exc:  # a stencil may fail in any way on odd parameters
        raise FieldError("params", f"{name}: {type(exc).__name__}: {exc}") from None
    if not isinstance(kernel, Kernel):
        raise FieldError("stencil", f"{name}: kernel() returned no ws.Kernel")
    if math.prod(kernel.domain) * math.prod(kernel.fold) > MAX_DOMAIN_POINTS:
        raise FieldError("params", "the domain has more than 2**33 lattice points")
    return kernel


def build_kernel(form: Form, fold: tuple[int, int, int] | None = None,
                 machine: Machine | None = None) -> Kernel:
    """The kernel of ``form`` (a shipped stencil or the hand-written one); a
    stencil made with pystencils is generated for ``machine``'s vendor
    (:func:`vendor_target`)."""
    if form.mode == "hand":
        spec = parse_hand(form)
        if fold is not None and fold != spec.fold:
            spec = dataclasses.replace(spec, fold=fold)
        return hand_kernel(spec)
    if form.mode != "stencil":
        raise FieldError("mode", f"unknown mode {form.mode[:20]!r}; use stencil or hand")
    if fold is None:
        fold = triple(form.fold, "fold", "the fold", MAX_FOLD)
    kernel = stencil_kernel(form.stencil, tuple(sorted(stencil_params(form).items())), fold,
                            vendor_target(machine))
    registers = _registers(form)
    return kernel if registers is None else dataclasses.replace(kernel, registers=registers)


# --------------------------------------------------------------------------
# Timing model


def model_of(form: Form) -> str:
    """The timing model of ``form``, one of :data:`warpspeed.timing.MODELS`."""
    if form.model not in MODELS:
        raise FieldError("model", f"unknown model {form.model[:20]!r}; the models are "
                         f"{', '.join(MODELS)}")
    return form.model


# --------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Outcome:
    """What the page shows for a form: the prediction and its advice, or the
    errors by form field (``""``: not tied to one field)."""

    kernel: Kernel | None = None
    machine: Machine | None = None
    prediction: Prediction | None = None
    advice: Advice | None = None
    errors: dict[str, str] = field(default_factory=dict)


def _attempt[T](errors: dict[str, str], fn: Callable[[], T], default_field: str) -> T | None:
    try:
        return fn()
    except FieldError as exc:
        errors.setdefault(exc.field, str(exc))
    except WarpspeedError as exc:
        errors.setdefault(default_field, str(exc))
    return None


def evaluate(form: Form) -> Outcome:
    """Kernel, machine, prediction and advice of ``form``, collecting the
    error of every field at fault instead of raising."""
    errors: dict[str, str] = {}
    machine = _attempt(errors, lambda: build_machine(form), "machine")
    kernel = _attempt(errors, lambda: build_kernel(
        form, machine=machine if isinstance(machine, Machine) else None), "loads")
    block = _attempt(errors, lambda: triple(form.block, "block", "the block size"), "block")
    model = _attempt(errors, lambda: model_of(form), "model")
    if errors:
        return Outcome(kernel, machine, errors=errors)
    assert isinstance(kernel, Kernel) and isinstance(machine, Machine)
    assert block is not None and model is not None  # else an error was recorded
    pred = _attempt(errors, lambda: predict(kernel, machine, block, model=model), "block")
    if not isinstance(pred, Prediction):
        return Outcome(kernel, machine, errors=errors)
    return Outcome(kernel, machine, pred, advise(pred, machine, kernel))


def link_errors(query: str) -> dict[str, str]:
    """The choices of a shared link's query string (``?machine=A1000``) that
    name no option of their list: field -> message naming the value and the
    options. The page shows them and predicts nothing until each is picked
    again, instead of showing another GPU's (or stencil's) prediction."""
    choices = {
        "machine": (*machine_names(), UPLOADED),
        "stencil": stencil_names(),
        "model": tuple(MODELS),
        "mode": ("stencil", "hand"),
    }
    out = {}
    for key, values in urllib.parse.parse_qs(query.lstrip("?"), keep_blank_values=True).items():
        known = choices.get(key)
        if known is None or not values or values[-1] in known:
            continue
        what = "machine" if key == "machine" else key
        out[key] = (f"the link names an unknown {what} {values[-1][:40]!r}; known: "
                    f"{', '.join(k for k in known if k != UPLOADED)}. Pick one: nothing is "
                    "predicted until then")
    return out


__all__ = [
    "link_errors",
    "MAX_MACHINE_FILE",
    "UPLOADED",
    "FieldError",
    "Form",
    "Outcome",
    "build_kernel",
    "build_machine",
    "evaluate",
    "machine_from_toml",
    "machine_names",
    "pack_machine",
    "stencil_defaults",
    "stencil_names",
    "vendor_target",
    "unpack_machine",
]
