"""A copy of ``fields`` arrays at once, ``dst[i] = src[i]`` for every
component, generated with pystencils (MODEL.md §1 input): the streams of a
structure-of-arrays lattice Boltzmann step (19 + 19 for D3Q19) without its
neighbour offsets and arithmetic. Fields ``src`` and ``dst`` with ``fields``
components each, layout ``fzyx`` (x contiguous, the component index
slowest), double or float. A micro-benchmark of what many concurrent DRAM
streams cost (MODEL.md §11, "Memory systems").

``shift`` moves each array's read by one cell (one ghost layer then; ``"ghost"``:
the ghost layer without a shift): ``"x"``
(every read one element off its warp's lines), ``"y"`` or ``"z"`` (one row or
plane over, aligned), ``"d3q19"`` (array ``i`` read from the neighbour
against D3Q19 direction ``i``, as lbmpy's pull streaming reads it; at most
19 arrays); ``"none"`` (default) reads each array where it writes, without
ghost layers."""

from __future__ import annotations

from typing import Any

import pystencils as ps

import warpspeed as ws

from ._checks import check_precision, check_shape
from ._common import build, field

#: D3Q19's directions in lbmpy's order (rest, the six faces, the twelve edges).
D3Q19 = ((0, 0, 0), (0, 1, 0), (0, -1, 0), (-1, 0, 0), (1, 0, 0), (0, 0, 1), (0, 0, -1),
         (-1, 1, 0), (1, 1, 0), (-1, -1, 0), (1, -1, 0), (0, 1, 1), (0, -1, 1), (-1, 0, 1),
         (1, 0, 1), (0, 1, -1), (0, -1, -1), (-1, 0, -1), (1, 0, -1))
#: The read offset of array ``i`` for each ``shift``.
SHIFTS = {"none": lambda i: (0, 0, 0), "ghost": lambda i: (0, 0, 0),
          "x": lambda i: (1, 0, 0), "y": lambda i: (0, 1, 0),
          "z": lambda i: (0, 0, 1), "d3q19": lambda i: tuple(-c for c in D3Q19[i])}


def generate(
    fields: int = 19,
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    precision: int = 64,
    target: str = "cuda",
    shift: str = "none",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    s = check_shape(shape, 3)
    if isinstance(fields, bool) or not isinstance(fields, int) or not 1 <= fields <= 64:
        raise ws.KernelError(f"fields must be a whole number from 1 to 64, got {fields!r}")
    dtype = check_precision(precision)
    if shift not in SHIFTS or (shift == "d3q19" and fields > len(D3Q19)):
        raise ws.KernelError(f"shift must be one of {sorted(SHIFTS)} (d3q19: at most 19 "
                             f"fields), got {shift!r} with {fields} fields")
    ghost = 0 if shift == "none" else 1
    src, dst = field("src", s, ghost, fields, dtype), field("dst", s, ghost, fields, dtype)
    asm = [ps.Assignment(dst.center(i), src[SHIFTS[shift](i)](i)) for i in range(fields)]
    name = (f"streams3d_{fields}" + ("" if shift == "none" else f"_{shift}")
            + ("" if precision == 64 else "_f32"))
    return build(asm, (src, dst), ghost=ghost, fold=fold, alignment=alignment, name=name,
                 target=target)


def kernel(
    fields: int = 19,
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    precision: int = 64,
    target: str = "cuda",
    shift: str = "none",
) -> ws.Kernel:
    """The copy of ``fields`` arrays of ``shape`` points in ``precision``
    bits, each read shifted by ``shift`` (module docstring); ``fold``,
    ``alignment`` and ``target`` as in :mod:`stencils.star3d`."""
    return generate(fields, shape, fold, alignment, precision, target, shift)[0]
