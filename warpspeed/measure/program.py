"""What one measured kernel variant is (MODEL.md §9): the stencil's
``generate(**params, fold=...)`` and the :class:`Program` that the GPU path
compiles and launches: the NVRTC source of the pystencils kernel, buffers at
the warpspeed kernel's base offsets, scalars, the launch grid, and the
paper's block sizes (MODEL.md §8). Pure: needs pystencils, no GPU."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import WarpspeedError
from ..input.kernel import Kernel
from ..input.stencil_spec import UsageError, load_stencil
from ..input.stencil_spec import parse_params as parse_typed
from ..input.triples import as_triple
from .counters import lups_per_launch
from .schema import MeasurementError, Triple

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


def generate_variant(spec: str, params: Mapping[str, Any], fold: Triple) -> tuple[Kernel, Any]:
    """The warpspeed and pystencils kernels of ``spec`` with ``params``
    folded by ``fold``."""
    gen = load_generator(spec)
    try:
        kernel, kernel_function = gen(**dict(params), fold=tuple(fold))
    except WarpspeedError:
        raise
    except (TypeError, ValueError) as exc:
        raise MeasurementError(
            f"{spec}: generate({dict(params)}, fold={fold}) failed: {exc}"
        ) from exc
    if not isinstance(kernel, Kernel):
        raise MeasurementError(f"{spec}: generate() did not return a ws.Kernel first")
    return kernel, kernel_function


# --------------------------------------------------------------------------- programs


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
    domain (the grid follows from it and the block) and the lattice updates
    of one launch."""

    source: str
    function: str
    args: tuple[Buffer | Scalar, ...]
    domain: Triple
    lups: int
    options: tuple[str, ...] = field(default=())


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


def grid_for(domain: Sequence[int], block: Sequence[int]) -> Triple:
    """Blocks per axis covering the thread domain (MODEL.md §3)."""
    d = tuple(domain) + (1,) * (3 - len(domain))
    return as_triple(-(-n // b) for n, b in zip(d, block))


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
        options=("-w", "-std=c++17", "-I" + get_pystencils_include_path()),
    )


def design_blocks(threads: int | Iterable[int], kernel: Kernel) -> list[Triple]:
    """The paper's block sizes of ``threads`` threads (one count or several)
    for ``kernel`` (MODEL.md §8), as :func:`warpspeed.pystencils.blocks`
    lists them."""
    from warpspeed.pystencils import blocks
    from warpspeed.search.variants import thread_counts

    return [b for t in thread_counts(threads, None)
            for b in blocks(t, kernel.domain)]
