"""Range-``radius`` 3-D star stencil ``dst = c * sum(src over the centre and
±1..radius along each axis)``, double, generated with pystencils.

Defaults: ``radius=4`` on 640 x 512 x 512 interior points, the 25-point star
of the paper (Ernst et al. 2023). Fields ``src`` and ``dst`` carry
``radius`` ghost layers, x contiguous. Per lattice update: ``6 * radius + 1``
loads of ``src`` and one store of ``dst``. MODEL.md §1 is the input this
builds.
"""

from __future__ import annotations

from typing import Any

import pystencils as ps

import warpspeed as ws

from ._checks import check_shape
from ._common import build, field


def assignments(radius: int, src: ps.Field, dst: ps.Field) -> list[ps.Assignment]:
    """The star's single assignment, with ``c = 1 / (6 * radius + 1)``."""
    if radius < 1:
        raise ws.KernelError(f"radius must be at least 1, got {radius}")
    terms = [src.center]
    for axis in range(3):
        for d in range(1, radius + 1):
            for sign in (-1, 1):
                off = [0, 0, 0]
                off[axis] = sign * d
                terms.append(src[tuple(off)])
    return [ps.Assignment(dst.center, (1.0 / (6 * radius + 1)) * sum(terms))]


def fields(radius: int, shape: tuple[int, int, int]) -> tuple[ps.Field, ps.Field]:
    s = check_shape(shape, 3)
    return field("src", s, radius), field("dst", s, radius)


def generate(
    radius: int = 4,
    shape: tuple[int, int, int] = (640, 512, 512),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    src, dst = fields(radius, shape)
    return build(
        assignments(radius, src, dst), (src, dst),
        ghost=radius, fold=fold, alignment=alignment, name=f"star3d_r{radius}", target=target,
    )


def kernel(
    radius: int = 4,
    shape: tuple[int, int, int] = (640, 512, 512),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> ws.Kernel:
    """The star as a :class:`warpspeed.Kernel`.

    ``shape``: interior points (x, y, z), x contiguous; ``fold``: lattice
    updates per thread along x, y, z (each must divide the interior);
    ``alignment``: ``"interior"`` puts the first interior point of each
    field on a 128 B boundary, an integer is the base pointer's byte offset
    from a 128 B boundary; ``target``: the code generator's target,
    ``"cuda"`` or ``"hip"`` (the command line picks the machine's vendor's,
    MODEL.md §15).
    """
    return generate(radius, shape, fold, alignment, target=target)[0]
