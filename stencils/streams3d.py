"""A copy of ``fields`` arrays at once, ``dst[i] = src[i]`` for every
component, generated with pystencils (MODEL.md §1 input): the streams of a
structure-of-arrays lattice Boltzmann step (19 + 19 for D3Q19) without its
neighbour offsets and arithmetic. Fields ``src`` and ``dst`` with ``fields``
components each, layout ``fzyx`` (x contiguous, the component index
slowest), no ghost layers, double or float. A micro-benchmark of what many
concurrent DRAM streams cost (MODEL.md §11, "Memory systems")."""

from __future__ import annotations

from typing import Any

import pystencils as ps

import warpspeed as ws

from ._checks import check_shape
from ._common import build, field


def generate(
    fields: int = 19,
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    precision: int = 64,
    target: str = "cuda",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    s = check_shape(shape, 3)
    if isinstance(fields, bool) or not isinstance(fields, int) or not 1 <= fields <= 64:
        raise ws.KernelError(f"fields must be a whole number from 1 to 64, got {fields!r}")
    if precision not in (32, 64):
        raise ws.KernelError(f"precision must be 32 or 64 (bits), got {precision!r}")
    dtype = f"float{precision}"
    src, dst = field("src", s, 0, fields, dtype), field("dst", s, 0, fields, dtype)
    asm = [ps.Assignment(dst(i), src(i)) for i in range(fields)]
    name = f"streams3d_{fields}" + ("" if precision == 64 else "_f32")
    return build(asm, (src, dst), ghost=0, fold=fold, alignment=alignment, name=name,
                 target=target)


def kernel(
    fields: int = 19,
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    precision: int = 64,
    target: str = "cuda",
) -> ws.Kernel:
    """The copy of ``fields`` arrays of ``shape`` points in ``precision``
    bits; ``fold``, ``alignment`` and ``target`` as in :mod:`stencils.star3d`."""
    return generate(fields, shape, fold, alignment, precision, target)[0]
