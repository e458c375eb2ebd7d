"""What one measured kernel variant is (MODEL.md §9): the stencil's
``generate(**params, fold=...)``, the :class:`~warpspeed.measure.programs.Program`
that the GPU path compiles and launches (the NVRTC source of the pystencils
kernel, buffers at the warpspeed kernel's base offsets, scalars), the
paper's block sizes (MODEL.md §8), and the
:class:`~warpspeed.measure.programs.Plan` of each variant that
``python -m warpspeed.measure prepare`` writes. Pure: needs pystencils, no GPU."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import WarpspeedError
from ..input.kernel import Kernel
from ..input.stencil_spec import UsageError, load_stencil
from ..input.stencil_spec import parse_params as parse_typed
from ..search.design_space import design_blocks as shapes_of
from .counters import interior, lups_per_launch
from .programs import Buffer, Plan, Program, Scalar, plan_name
from .schema import MeasurementError, Triple, params_json

# --------------------------------------------------------------------------- stencils


def load_generator(spec: str) -> Callable[..., tuple[Kernel, Any]]:
    """``generate`` of a stencil: a module of ``stencils/`` or a .py file;
    it must return ``(warpspeed kernel, pystencils kernel)``."""
    try:
        module = load_stencil(spec)
    except UsageError as exc:
        raise MeasurementError(str(exc)) from exc
    gen = getattr(module, "generate", None)
    if not callable(gen):
        raise MeasurementError(
            f"{spec} defines no generate(**params, fold=...) returning (ws.Kernel, pystencils "
            "kernel)"
        )
    return gen


def parse_params(items: Sequence[str], func: Callable[..., Any] | None = None) -> dict[str, Any]:
    """``NAME=VALUE`` strings as keyword arguments, typed by ``func``'s
    annotations when given (names it does not take are rejected), else
    guessed: integers, floats, comma-separated integer tuples, else text.
    ``fold`` is given separately."""
    if any(item.partition("=")[0].strip() == "fold" for item in items):
        raise MeasurementError("give folds with --folds, not as a parameter")
    try:
        return parse_typed(func, items)
    except UsageError as exc:
        raise MeasurementError(str(exc)) from exc


#: A row parameter of the harness, not of the generator: the dynamic shared
#: memory each block reserved at launch (``Program.shared_bytes``, the
#: occupancy series of ``fits/device_prepare.py``).
SHARED_PAD = "shared_pad"


def generate_variant(spec: str, params: Mapping[str, Any], fold: Triple) -> tuple[Kernel, Any]:
    """The warpspeed and pystencils kernels of ``spec`` with ``params``
    folded by ``fold``; a :data:`SHARED_PAD` among the parameters becomes
    the warpspeed kernel's shared memory per block (the pystencils kernel
    never touches it)."""
    gen = load_generator(spec)
    rest = dict(params)
    pad = rest.pop(SHARED_PAD, 0)
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 0:
        raise MeasurementError(f"{spec}: {SHARED_PAD} must be a number of bytes, got {pad!r}")
    try:
        kernel, kernel_function = gen(**rest, fold=tuple(fold))
    except WarpspeedError:
        raise
    except (TypeError, ValueError) as exc:
        raise MeasurementError(
            f"{spec}: generate({dict(params)}, fold={fold}) failed: {exc}"
        ) from exc
    if not isinstance(kernel, Kernel):
        raise MeasurementError(f"{spec}: generate() did not return a ws.Kernel first")
    if pad:
        kernel = replace(kernel, shared_memory=kernel.shared_memory + pad)
    return kernel, kernel_function


# --------------------------------------------------------------------------- programs


def function_name(kernel: Kernel) -> str:
    """A C identifier naming the variant, unique per kernel and fold; ncu
    selects the measured kernel by it."""
    base = re.sub(r"\W", "_", kernel.name)
    return f"ws_{base}_f{''.join(str(f) for f in kernel.fold)}"


def cuda_source(code: str, old_name: str, new_name: str, headers: Iterable[str]) -> str:
    """Compilable NVRTC source of a pystencils kernel's C code: the
    headers it needs, ``RESTRICT`` defined, C linkage (no name mangling) and
    the function renamed to ``new_name``."""
    pattern = re.compile(rf"\b__global__\s+void\s+{re.escape(old_name)}\s*\(")
    if not pattern.search(code):
        raise MeasurementError(f"no __global__ function {old_name!r} in the kernel code")
    body = pattern.sub(f'extern "C" __global__ void {new_name}(', code, count=1)
    skip = '"pystencils_runtime/half.h"'  # CuPy's NVRTC has its own half type
    includes = ["<cuda/std/cstdint>"] + sorted(h for h in headers if h != skip)
    head = "\n".join(f"#include {h}" for h in includes)
    return f"{head}\n\n#define RESTRICT __restrict__\n\n{body}\n"


def program_for(
    kernel_function: Any, kernel: Kernel, scalars: Mapping[str, float] | None = None
) -> Program:
    """The :class:`Program` of a pystencils GPU kernel and its warpspeed
    kernel (same fold): source, buffers at the kernel's base offsets,
    scalars (``scalars`` or 1.0)."""
    from pystencils.codegen.properties import FieldBasePtr
    from pystencils.include import get_pystencils_include_path

    offsets = {a.field.name: a.field.base_offset for a in kernel.loads + kernel.stores}
    values = dict(scalars or {})
    args: list[Buffer | Scalar] = []
    for p in kernel_function.parameters:
        if p.is_field_parameter:
            ptr = [prop for prop in p.properties if isinstance(prop, FieldBasePtr)]
            if not ptr:
                raise MeasurementError(
                    f"parameter {p.name}: only fixed-size fields are supported (no shape or "
                    "stride arguments)"
                )
            f = ptr[0].field
            # pystencils types the field as Field | IField, a protocol without them
            shape = [int(s) for s in f.shape]  # type: ignore[union-attr]
            strides = [int(s) for s in f.strides]  # type: ignore[union-attr]
            dtype = f.dtype.numpy_dtype  # type: ignore[union-attr]
            if dtype is None:
                raise MeasurementError(f"field {f.name} of type {f.dtype} is not supported")
            args.append(
                Buffer(
                    name=f.name,
                    dtype=dtype.name,
                    itemsize=int(dtype.itemsize),
                    elements=1 + sum((n - 1) * s for n, s in zip(shape, strides)),
                    base_offset=int(offsets.get(f.name, 0)),
                )
            )
        else:
            np_dtype = p.dtype.numpy_dtype
            if np_dtype is None:
                raise MeasurementError(f"parameter {p.name} of type {p.dtype} is not supported")
            args.append(Scalar(p.name, np_dtype.name, float(values.pop(p.name, 1.0))))
    if values:
        raise MeasurementError(f"the kernel has no scalar parameters {sorted(values)}")
    name = function_name(kernel)
    return Program(
        source=cuda_source(
            kernel_function.get_c_code(), kernel_function.name, name,
            kernel_function.required_headers,
        ),
        function=name,
        args=tuple(args),
        domain=kernel.domain,
        lups=lups_per_launch(kernel),
        options=("-w", "-std=c++17"),
        include=get_pystencils_include_path(),
    )


def design_blocks(threads: int | Iterable[int], kernel: Kernel) -> list[Triple]:
    """The paper's block sizes of ``threads`` threads (one count or several)
    for ``kernel`` (MODEL.md §8), as :func:`warpspeed.pystencils.blocks`
    lists them."""
    from ..search.variants import thread_counts

    return [b for t in thread_counts(threads, None) for b in shapes_of(t, kernel.domain)]


def versions() -> dict[str, str]:
    """pystencils' version and warpspeed's (with the commit of a git
    checkout), for the rows of plans made here."""
    import pystencils

    from .. import __version__

    try:
        commit = subprocess.run(
            ["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        commit = ""
    return {"pystencils": str(pystencils.__version__),
            "warpspeed": f"{__version__}+{commit}" if commit else __version__}


def plan_for(
    spec: str, params: Mapping[str, Any], fold: Triple, *,
    threads: int | Sequence[int] = 1024, blocks: Sequence[Triple] | None = None,
    scalars: Mapping[str, float] | None = None, note: str = "",
    info: Mapping[str, str] | None = None,
) -> Plan:
    """The :class:`Plan` of one fold of ``spec`` with ``params``: its
    program and ``blocks`` (default: the design space of ``threads``)."""
    kernel, kernel_function = generate_variant(spec, params, fold)
    program = program_for(kernel_function, kernel, scalars)
    todo = tuple(blocks) if blocks else tuple(design_blocks(threads, kernel))
    text = params_json(params)
    meta = dict(info) if info is not None else versions()
    return Plan(
        name=plan_name(program.function, spec, text), stencil=spec, params=text,
        kernel=kernel.name, fold=kernel.fold, interior=interior(kernel), blocks=todo,
        program=program, note=note, pystencils=meta.get("pystencils", ""),
        warpspeed=meta.get("warpspeed", ""),
    )
