"""5-point 2-D star ``dst = c * (src centre + 4 neighbours)``, double,
generated with pystencils (MODEL.md §1 input). Fields carry one ghost
layer, x contiguous. Per lattice update: 5 loads of ``src``, 1 store of
``dst``."""

from __future__ import annotations

from typing import Any

import pystencils as ps

import warpspeed as ws

from ._checks import check_shape
from ._common import build, field


def generate(
    shape: tuple[int, int] = (8192, 8192),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    s = check_shape(shape, 2)
    src, dst = field("src", s, 1), field("dst", s, 1)
    rhs = src[0, 0] + src[1, 0] + src[-1, 0] + src[0, 1] + src[0, -1]
    asm = [ps.Assignment(dst.center, 0.2 * rhs)]
    return build(asm, (src, dst), ghost=1, fold=fold, alignment=alignment, name="star2d",
                 target=target)


def kernel(
    shape: tuple[int, int] = (8192, 8192),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> ws.Kernel:
    """The 5-point star on ``shape`` interior points (x, y); ``fold`` along
    x, y (z must be 1); ``alignment`` and ``target`` as in
    :mod:`stencils.star3d`."""
    return generate(shape, fold, alignment, target=target)[0]
