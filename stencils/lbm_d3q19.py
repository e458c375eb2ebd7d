"""D3Q19 lattice Boltzmann, single relaxation time, pull scheme
(``stream_pull_collide``), double, generated with lbmpy and pystencils
(MODEL.md §1 input).

Fields ``pdfs`` (read) and ``pdfs_tmp`` (written), 19 components each,
layout ``fzyx`` (x contiguous, the component index slowest), one ghost
layer. Per lattice update: 19 loads of ``pdfs`` (one per direction, pulled
from the neighbour against it) and 19 stores of ``pdfs_tmp``.
The relaxation rate is the kernel parameter ``omega``.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

import warpspeed as ws

from ._checks import check_precision, check_shape
from ._common import build, field, require_lbmpy

#: lbmpy's kernel types this module generates: the whole step, and its two
#: halves (the collision without the neighbour offsets, the streaming without
#: the arithmetic), which separate what each costs (MODEL.md §10).
KERNEL_TYPES = {"stream_pull_collide": "", "collide_only": "_collide",
                "stream_pull_only": "_stream"}


def update_rule(pdfs: Any, pdfs_tmp: Any, kernel_type: str = "stream_pull_collide") -> Any:
    """lbmpy's SRT D3Q19 update rule of ``kernel_type`` between the two fields."""
    require_lbmpy("lbm_d3q19")
    from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Method, Stencil, create_lb_update_rule

    cfg = LBMConfig(
        stencil=LBStencil(Stencil.D3Q19),
        method=Method.SRT,
        relaxation_rate=sp.Symbol("omega"),
        kernel_type=kernel_type,
    )
    opt = LBMOptimisation(symbolic_field=pdfs, symbolic_temporary_field=pdfs_tmp)
    return create_lb_update_rule(lbm_config=cfg, lbm_optimisation=opt)


def generate(
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    precision: int = 64,
    target: str = "cuda",
    kernel_type: str = "stream_pull_collide",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    s = check_shape(shape, 3)
    dtype = check_precision(precision)
    if kernel_type not in KERNEL_TYPES:
        raise ws.KernelError(f"kernel_type must be one of {sorted(KERNEL_TYPES)}, "
                             f"got {kernel_type!r}")
    pdfs, pdfs_tmp = field("pdfs", s, 1, 19, dtype), field("pdfs_tmp", s, 1, 19, dtype)
    name = "lbm_d3q19" + KERNEL_TYPES[kernel_type] + ("" if precision == 64 else "_f32")
    # the collision alone updates pdfs in place: pdfs_tmp is not accessed
    used = (pdfs,) if kernel_type == "collide_only" else (pdfs, pdfs_tmp)
    return build(
        update_rule(pdfs, pdfs_tmp, kernel_type), used,
        ghost=1, fold=fold, alignment=alignment, name=name, target=target,
    )


def kernel(
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    precision: int = 64,
    target: str = "cuda",
    kernel_type: str = "stream_pull_collide",
) -> ws.Kernel:
    """The LBM step on ``shape`` interior cells in double (``precision=64``)
    or float (32) numbers; ``fold``, ``alignment`` and ``target``
    as in :mod:`stencils.star3d` (alignment applies to component 0);
    ``kernel_type`` one of :data:`KERNEL_TYPES` (the whole step by default)."""
    return generate(shape, fold, alignment, precision, target=target,
                    kernel_type=kernel_type)[0]
