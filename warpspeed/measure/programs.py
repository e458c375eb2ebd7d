"""What the GPU path compiles and times (MODEL.md §9), and the files that
carry it to a GPU machine without pystencils.

* :class:`Program`: the CUDA source of one kernel variant, its arguments
  (:class:`Buffer`, :class:`Scalar`), thread domain and lattice updates;
* :class:`Plan`: a program with the block sizes to time and what its rows
  record (stencil, parameters, kernel, fold, interior, set note);
* :func:`write_plans` / :func:`read_plans`: a folder of plans, one JSON file
  each, with the runtime headers the sources include copied beside them
  (``include/``), so that ``python -m warpspeed.measure run --programs DIR``
  times them on a machine that has CuPy but neither pystencils nor islpy.

This module imports neither (nor any of the model): it is what the GPU
machine runs. The plans are made by :mod:`warpspeed.measure.program`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..input.triples import as_triple
from .schema import MeasurementError, Triple, format_triple, parse_triple

#: The version of the plan files this warpspeed writes and reads.
PLAN_FORMAT = 1
#: Header files copied with the plans (the runtime headers of pystencils).
HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


@dataclass(frozen=True)
class Buffer:
    """A field argument: ``elements`` items of ``dtype``, the base pointer at
    ``base_offset`` bytes from a 128 B boundary."""

    name: str
    dtype: str
    itemsize: int
    elements: int
    base_offset: int = 0


@dataclass(frozen=True)
class Scalar:
    """A scalar kernel argument."""

    name: str
    dtype: str
    value: float


@dataclass(frozen=True)
class Program:
    """Everything the GPU path needs to compile and launch one kernel
    variant: CUDA source, function name, arguments in order, the thread
    domain (the grid follows from it and the block), the lattice updates of
    one launch, NVRTC options and the folder of the runtime headers the
    source includes (``include``, passed as ``-I``; empty: none).
    ``shared_bytes`` is dynamic shared memory each block reserves at launch
    and the kernel never touches: it caps the blocks per SM, so that one
    kernel can be timed at several occupancies (MODEL.md §9)."""

    source: str
    function: str
    args: tuple[Buffer | Scalar, ...]
    domain: Triple
    lups: int
    options: tuple[str, ...] = field(default=())
    include: str = ""
    shared_bytes: int = 0

    @property
    def compile_options(self) -> tuple[str, ...]:
        """The NVRTC options: ``options`` and ``-I include``."""
        return self.options + ((f"-I{self.include}",) if self.include else ())


def grid_for(domain: Sequence[int], block: Sequence[int]) -> Triple:
    """Blocks per axis covering the thread domain (MODEL.md §3)."""
    d = tuple(domain) + (1,) * (3 - len(domain))
    return as_triple(-(-n // b) for n, b in zip(d, block))


@dataclass(frozen=True)
class Plan:
    """One kernel variant to measure: its :class:`Program`, the blocks to
    time, and what its rows record (the columns of
    :data:`~warpspeed.measure.SCHEMA` that do not come from the GPU)."""

    name: str
    stencil: str
    params: str
    kernel: str
    fold: Triple
    interior: Triple
    blocks: tuple[Triple, ...]
    program: Program
    note: str = ""
    pystencils: str = ""
    warpspeed: str = ""


def plan_name(function: str, stencil: str, params: str, shared_bytes: int = 0) -> str:
    """A file stem unique per variant: the function (kernel and fold), a
    short hash of the stencil and its parameters (sizes are baked into the
    source, so a kernel at two sizes is two plans) and the shared-memory
    pad, where there is one."""
    digest = hashlib.sha1(f"{stencil} {params}".encode()).hexdigest()[:8]
    pad = f"-smem{shared_bytes}" if shared_bytes else ""
    return f"{function}-{digest}{pad}"


def plan_to_json(plan: Plan) -> dict[str, Any]:
    """The JSON object of a plan (its program's ``include`` is not kept:
    the folder's ``include/`` stands in for it where the plan is read)."""
    p = plan.program
    args = [{"kind": "buffer" if isinstance(a, Buffer) else "scalar", **vars(a)}
            for a in p.args]
    return {
        "format": PLAN_FORMAT, "name": plan.name, "stencil": plan.stencil,
        "params": plan.params, "kernel": plan.kernel, "fold": format_triple(plan.fold),
        "interior": format_triple(plan.interior),
        "blocks": [format_triple(b) for b in plan.blocks], "note": plan.note,
        "pystencils": plan.pystencils, "warpspeed": plan.warpspeed,
        "program": {"function": p.function, "domain": format_triple(p.domain),
                    "lups": p.lups, "options": list(p.options), "args": args,
                    "shared_bytes": p.shared_bytes, "source": p.source},
    }


def _arg(a: dict[str, Any]) -> Buffer | Scalar:
    kind = a.pop("kind", None)
    if kind == "buffer":
        return Buffer(**a)
    if kind == "scalar":
        return Scalar(**a)
    raise MeasurementError(f"plan argument of unknown kind {kind!r}")


def plan_from_json(data: dict[str, Any], include: str = "") -> Plan:
    """A plan read back (:func:`plan_to_json`), its headers in ``include``."""
    if data.get("format") != PLAN_FORMAT:
        raise MeasurementError(f"plan format {data.get('format')!r} is not {PLAN_FORMAT}: "
                               "prepare the programs again with this warpspeed")
    try:
        p = data["program"]
        program = Program(
            source=p["source"], function=p["function"],
            args=tuple(_arg(dict(a)) for a in p["args"]),
            domain=parse_triple(p["domain"], "domain"), lups=int(p["lups"]),
            options=tuple(p["options"]), include=include,
            shared_bytes=int(p.get("shared_bytes", 0)),
        )
        return Plan(
            name=data["name"], stencil=data["stencil"], params=data["params"],
            kernel=data["kernel"], fold=parse_triple(data["fold"], "fold"),
            interior=parse_triple(data["interior"], "interior"),
            blocks=tuple(parse_triple(b, "block") for b in data["blocks"]),
            program=program, note=data.get("note", ""),
            pystencils=data.get("pystencils", ""), warpspeed=data.get("warpspeed", ""),
        )
    except (KeyError, TypeError) as exc:
        raise MeasurementError(f"plan {data.get('name', '?')} lacks {exc}") from exc


def copy_headers(source: str | Path, folder: Path) -> None:
    """The runtime headers under ``source`` (only :data:`HEADER_SUFFIXES`)
    into ``folder``, keeping their paths."""
    src = Path(source)
    for path in src.rglob("*"):
        if path.is_file() and path.suffix in HEADER_SUFFIXES:
            target = folder / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def write_plans(folder: str | Path, plans: Iterable[Plan]) -> list[Path]:
    """Write each plan to ``folder/NAME.json`` and the headers its program
    includes to ``folder/include`` (a later plan of the same name replaces
    an earlier one)."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for plan in plans:
        if plan.program.include and not (out / "include").is_dir():
            copy_headers(plan.program.include, out / "include")
        path = out / f"{plan.name}.json"
        path.write_text(json.dumps(plan_to_json(plan), indent=1) + "\n")
        written.append(path)
    return written


def read_plans(folder: str | Path, only: Sequence[str] = ()) -> list[Plan]:
    """The plans of ``folder`` in name order (those whose name contains one
    of ``only``, when given), their headers in ``folder/include``."""
    src = Path(folder)
    if not src.is_dir():
        raise MeasurementError(f"no programs folder {src}: write one with "
                               "'python -m warpspeed.measure prepare ... --out DIR'")
    include = str((src / "include").resolve()) if (src / "include").is_dir() else ""
    plans = []
    for path in sorted(src.glob("*.json")):
        if only and not any(o in path.stem for o in only):
            continue
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise MeasurementError(f"{path} is not valid JSON: {exc}") from exc
        plans.append(plan_from_json(data, include))
    if not plans:
        raise MeasurementError(f"no programs (*.json) in {src}" + (
            f" matching {list(only)}" if only else ""))
    return plans


__all__ = [
    "PLAN_FORMAT",
    "Buffer",
    "Plan",
    "Program",
    "Scalar",
    "copy_headers",
    "grid_for",
    "plan_from_json",
    "plan_name",
    "plan_to_json",
    "read_plans",
    "write_plans",
]
