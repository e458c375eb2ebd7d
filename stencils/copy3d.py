"""3-D copy ``dst = src``, double, generated with pystencils (MODEL.md §1
input): one load and one store per lattice update, no ghost layers, x
contiguous."""

from __future__ import annotations

from typing import Any

import pystencils as ps

import warpspeed as ws

from ._checks import check_shape
from ._common import build, field


def generate(
    shape: tuple[int, int, int] = (640, 512, 512),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    s = check_shape(shape, 3)
    src, dst = field("src", s, 0), field("dst", s, 0)
    asm = [ps.Assignment(dst.center, src.center)]
    return build(asm, (src, dst), ghost=0, fold=fold, alignment=alignment, name="copy3d",
                 target=target)


def kernel(
    shape: tuple[int, int, int] = (640, 512, 512),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> ws.Kernel:
    """The copy on ``shape`` points; ``fold``, ``alignment`` and ``target``
    as in :mod:`stencils.star3d` (without ghost layers the interior starts at the
    base pointer)."""
    return generate(shape, fold, alignment, target=target)[0]
