"""Shared helpers of the ready-made stencils: fields with ghost layers,
the alignment convention, and the path through pystencils and the
warpspeed frontend (MODEL.md §1)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import pystencils as ps
from pystencils.types import PsIeeeFloatType

import warpspeed as ws
from warpspeed.input.stencil_spec import UsageError
from warpspeed.input.triples import Triple
from warpspeed.pystencils import ExtractOptions, generate, kernel_from_pystencils

INTERIOR = "interior"


def require_lbmpy(stencil: str) -> None:
    """lbmpy is an optional dependency (the ``lbm`` extra): a stencil made
    with it says so in one line where it is missing."""
    try:
        import lbmpy  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"the stencil {stencil} is generated with lbmpy, which is not "
                         "installed: pip install 'warpspeed[lbm]'") from exc


def field(
    name: str, interior: Sequence[int], ghost: int, components: int = 0,
    dtype: str = "float64",
) -> ps.Field:
    """A field of ``dtype`` (double by default) with ``ghost`` layers around
    ``interior``, x contiguous (``fzyx``); ``components`` > 0 adds an index
    dimension (slowest)."""
    spatial = tuple(n + 2 * ghost for n in interior)
    if components:
        return ps.Field.create_fixed_size(
            name, spatial + (components,), index_dimensions=1, dtype=dtype, layout="fzyx"
        )
    return ps.Field.create_fixed_size(name, spatial, dtype=dtype, layout="fzyx")


def first_interior_offset(strides: Sequence[int], ghost: int, spatial: int, itemsize: int) -> int:
    """Byte offset of the first interior point from the base pointer."""
    return itemsize * ghost * sum(int(s) for s in list(strides)[:spatial])


def base_offsets(
    fields: Sequence[ps.Field], ghost: int, alignment: int | str, itemsize: int = 8
) -> dict[str, int]:
    """Base-pointer offsets (bytes mod 128) of the alignment convention.

    ``alignment == "interior"``: the first interior point of every field
    sits on a 128 B boundary; an integer (or a string of one) is the byte
    offset of every base pointer from a 128 B boundary."""
    if isinstance(alignment, str) and alignment != INTERIOR:
        try:
            alignment = int(alignment)
        except ValueError:
            raise ws.KernelError(
                f"alignment must be {INTERIOR!r} or a byte offset, got {alignment!r}"
            ) from None
    if alignment == INTERIOR:
        return {
            f.name: -first_interior_offset(f.strides, ghost, f.spatial_dimensions, itemsize) % 128
            for f in fields
        }
    if isinstance(alignment, bool) or not isinstance(alignment, int):
        raise ws.KernelError(f"alignment must be {INTERIOR!r} or a byte offset, got {alignment!r}")
    return {f.name: alignment % 128 for f in fields}


#: The code generator targets of the ready stencils (MODEL.md §15), by name.
TARGETS = {"cuda": ps.Target.CUDA, "hip": ps.Target.HIP}


def target_of(target: str) -> ps.Target:
    """The pystencils target named ``target`` ("cuda" or "hip", any case)."""
    found = TARGETS.get(str(target).lower())
    if found is None:
        raise ws.KernelError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    return found


def config(ghost: int, dtype: str = "float64", target: str = "cuda") -> ps.CreateKernelConfig:
    """The configuration of the ready stencils for ``target`` (CUDA or HIP;
    no JIT, no GPU needed); ``dtype`` types the kernel's free symbols (e.g. a
    relaxation rate)."""
    return ps.CreateKernelConfig(target=target_of(target), jit=ps.no_jit, ghost_layers=ghost,
                                 default_dtype=dtype)


def build(
    assignments: Any,
    fields: Sequence[ps.Field],
    *,
    ghost: int,
    fold: Sequence[int],
    alignment: int | str,
    name: str,
    target: str = "cuda",
) -> tuple[ws.Kernel, Any]:
    """The warpspeed kernel and the pystencils kernel of ``assignments``
    folded by ``fold``, generated for ``target`` ("cuda" or "hip")."""
    # the stencils' fields are floating point (pystencils types a field's dtype
    # PsType | DynamicType)
    itemsize = int(cast(PsIeeeFloatType, fields[0].dtype).itemsize) if fields else 8
    dtype = "float32" if itemsize == 4 else "float64"
    try:
        kernel_function = generate(assignments, config(ghost, dtype, target), tuple(fold))
    except RecursionError:  # pystencils recurses once per term of a sum
        raise ws.KernelError(
            f"{name}: pystencils cannot generate an expression this large (it recursed too "
            "deeply): choose fewer points, e.g. a smaller radius") from None
    kernel = kernel_from_pystencils(
        kernel_function,
        ExtractOptions(base_offsets=base_offsets(fields, ghost, alignment, itemsize)),
        name=name,
        fold=cast(Triple, tuple(fold) + (1,) * (3 - len(tuple(fold)))),  # 1-3 factors, padded
    )
    return kernel, kernel_function
