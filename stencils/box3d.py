"""27-point 3-D box ``dst = c * sum(src over the 3x3x3 neighbourhood)``,
double, generated with pystencils (MODEL.md §1 input). Fields carry one
ghost layer, x contiguous. Per lattice update: 27 loads of ``src``, 1 store
of ``dst``."""

from __future__ import annotations

import itertools
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
    src, dst = field("src", s, 1), field("dst", s, 1)
    rhs = sum(src[off] for off in itertools.product((-1, 0, 1), repeat=3))
    asm = [ps.Assignment(dst.center, (1.0 / 27) * rhs)]
    return build(asm, (src, dst), ghost=1, fold=fold, alignment=alignment, name="box3d",
                 target=target)


def kernel(
    shape: tuple[int, int, int] = (640, 512, 512),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> ws.Kernel:
    """The 27-point box on ``shape`` interior points; ``fold`` and
    ``alignment`` and ``target`` as in :mod:`stencils.star3d`."""
    return generate(shape, fold, alignment, target=target)[0]
