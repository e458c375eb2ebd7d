"""Corpus kernels of the constructs whole simulations need next to their
stencil (issue 20): symbolic iteration-slice bounds, checkerboard
(red-black) sweeps, grid-stride loops, lbmpy's built-in periodicity and
reductions (residual norms).

Written as pystencils' and lbmpy's documentation and tests write them:
``ps.make_slice`` with ``ps.TypedSymbol`` bounds, a slice start of
``1 + int_rem(y + z, 2)`` with ``gpu.manual_launch_grid``, the
``gridstrided_linear3d`` indexing scheme, ``LBMOptimisation(builtin_periodicity=...)``
and ``ps.AddReductionAssignment`` / ``ps.MaxReductionAssignment``.
"""

from __future__ import annotations

from typing import Any

import pystencils as ps
import sympy as sp
from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Stencil, create_lb_update_rule
from pystencils.sympyextensions.integer_functions import int_rem

from ._base import (
    A2,
    A3,
    BLOCK_2D,
    F32,
    F64,
    Built,
    Case,
    HandCount,
    cuda,
    from_assignments,
    registrar,
)

CASES: list[Case] = []
X, Y, Z = ps.DEFAULTS.spatial_counters


def _star(dim: int) -> list[tuple[int, ...]]:
    return [tuple(s if a == axis else 0 for a in range(dim)) for axis in range(dim)
            for s in (-1, 1)]


# ---------------------------------------------------------------------------
# Symbolic slice bounds (values given with params=)

params = registrar(CASES, "symbolic parameters")


@params(
    "fd3d_jacobi_7pt_symbolic_slice_f64",
    HandCount(F64, F64, "src: 1 field x 8 B read; dst: 1 field x 8 B written"),
    options={"params": {"sx": 1, "ex": A3 - 1, "sy": 1, "ey": A3 - 1, "sz": 1, "ez": A3 - 1}},
)
def fd3d_jacobi_7pt_symbolic_slice_f64() -> Built:
    src, dst = ps.fields(f"src, dst: double[{A3}, {A3}, {A3}]", layout="fzyx")
    b = [ps.TypedSymbol(n, "int64") for n in ("sx", "ex", "sy", "ey", "sz", "ez")]
    cfg = cuda(iteration_slice=ps.make_slice[b[0]:b[1], b[2]:b[3], b[4]:b[5]])
    return from_assignments([ps.Assignment(dst.center, sum(src[o] for o in _star(3)) / 6)], cfg)


@params(
    "fd2d_heat_symbolic_start_f32",
    HandCount(F32, F32, "u: 1 field x 4 B read; u_new: 1 field x 4 B written"),
    block=BLOCK_2D,
    options={"params": {"start": 1}},
)
def fd2d_heat_symbolic_start_f32() -> Built:
    u, u_new = ps.fields(f"u, u_new: float32[{A2}, {A2}]", layout="fzyx")
    start = ps.TypedSymbol("start", "int64")
    k = sp.Symbol("k")
    rhs = u.center + k * (sum(u[o] for o in _star(2)) - 4 * u.center)
    cfg = cuda(iteration_slice=ps.make_slice[start:-1, start:-1], default_dtype="float32")
    return from_assignments([ps.Assignment(u_new.center, rhs)], cfg)


# ---------------------------------------------------------------------------
# Checkerboard (red-black) sweeps: the slice start alternates with the row parity

checker = registrar(CASES, "strided / red-black")


def _checkerboard(dim: int, colour: int) -> ps.CreateKernelConfig:
    parity = Y + Z if dim == 3 else Y
    start = 1 + int_rem(parity + colour, 2)
    sl = (slice(start, -1, 2),) + (slice(1, -1),) * (dim - 1)
    cfg = cuda(iteration_slice=sl)
    cfg.gpu.manual_launch_grid = True
    return cfg


@checker(
    "red_black_gs_checkerboard_3d_f64",
    HandCount(
        2 * F64 + 16,
        16,
        "u: every row read whole (red and black cells: 2 x 8 B per red update); rhs read and u "
        "written at every second cell, whole 32 B sectors: 16 B each",
    ),
)
def red_black_gs_checkerboard_3d_f64() -> Built:
    u, rhs = ps.fields(f"u, rhs: double[{A3}, {A3}, {A3}]", layout="fzyx")
    h = sp.Symbol("h")
    update = (sum(u[o] for o in _star(3)) - h**2 * rhs.center) / 6
    return from_assignments([ps.Assignment(u.center, update)], _checkerboard(3, 0))


@checker(
    "red_black_sor_checkerboard_2d_f64",
    HandCount(
        2 * F64 + 16,
        16,
        "u: every row read whole (2 x 8 B per update of one colour); rhs read and u written at "
        "every second cell: 16 B each (whole sectors)",
    ),
    block=BLOCK_2D,
)
def red_black_sor_checkerboard_2d_f64() -> Built:
    u, rhs = ps.fields(f"u, rhs: double[{A2}, {A2}]", layout="fzyx")
    h, omega = sp.symbols("h omega")
    gs = (sum(u[o] for o in _star(2)) - h**2 * rhs.center) / 4
    update = (1 - omega) * u.center + omega * gs
    return from_assignments([ps.Assignment(u.center, update)], _checkerboard(2, 1))


# ---------------------------------------------------------------------------
# Grid-stride loops (gpu.indexing_scheme = "gridstrided_linear3d")

gridstride = registrar(CASES, "grid-stride loops")


def _gridstrided(**options: Any) -> ps.CreateKernelConfig:
    cfg = cuda(**options)
    cfg.gpu.indexing_scheme = "gridstrided_linear3d"
    return cfg


@gridstride(
    "fd3d_jacobi_7pt_gridstrided_f64",
    HandCount(F64, F64, "src: 1 field x 8 B read; dst: 1 field x 8 B written"),
)
def fd3d_jacobi_7pt_gridstrided_f64() -> Built:
    src, dst = ps.fields(f"src, dst: double[{A3}, {A3}, {A3}]", layout="fzyx")
    asm = [ps.Assignment(dst.center, sum(src[o] for o in _star(3)) / 6)]
    return from_assignments(asm, _gridstrided())


@gridstride(
    "lbm_d2q9_srt_gridstrided_4_points_f64",
    HandCount(9 * F64, 9 * F64, "pdfs: 9 x 8 B read; pdfs_tmp: 9 x 8 B written"),
    block=BLOCK_2D,
    options={"grid_points": (1, 4, 1)},
)
def lbm_d2q9_srt_gridstrided_4_points_f64() -> Built:
    src, dst = ps.fields(f"pdfs(9), pdfs_tmp(9): double[{A2}, {A2}]", layout="fzyx")
    rule = create_lb_update_rule(
        lbm_config=LBMConfig(stencil=LBStencil(Stencil.D2Q9), relaxation_rate=1.8),
        lbm_optimisation=LBMOptimisation(symbolic_field=src, symbolic_temporary_field=dst),
    )
    return from_assignments(rule, _gridstrided())


# ---------------------------------------------------------------------------
# lbmpy's built-in periodicity: the pull wraps to the other side at the border

periodic = registrar(CASES, "built-in periodicity")


def _periodic(stencil: Stencil, q: int, size: str, periodicity: tuple[bool, ...]) -> Built:
    src, dst = ps.fields(f"pdfs({q}), pdfs_tmp({q}): double[{size}]", layout="fzyx")
    rule = create_lb_update_rule(
        lbm_config=LBMConfig(stencil=LBStencil(stencil), relaxation_rate=1.8),
        lbm_optimisation=LBMOptimisation(
            builtin_periodicity=periodicity, symbolic_field=src, symbolic_temporary_field=dst
        ),
    )
    return from_assignments(rule, cuda(ghost_layers=1))


@periodic(
    "lbm_d2q9_builtin_periodic_f64",
    HandCount(
        9 * F64,
        9 * F64,
        "pdfs: 9 x 8 B read (the wrapped pulls read interior cells of the other side, read "
        "anyway); pdfs_tmp: 9 x 8 B written",
    ),
    block=BLOCK_2D,
)
def lbm_d2q9_builtin_periodic_f64() -> Built:
    return _periodic(Stencil.D2Q9, 9, f"{A2}, {A2}", (True, True))


@periodic(
    "lbm_d3q19_builtin_periodic_xz_f64",
    HandCount(
        19 * F64,
        19 * F64,
        "pdfs: 19 x 8 B read (wrapped pulls along x and z read interior cells; the y pulls at "
        "the border read the ghost layers, 2 of 256 layers); pdfs_tmp: 19 x 8 B written",
    ),
)
def lbm_d3q19_builtin_periodic_xz_f64() -> Built:
    return _periodic(Stencil.D3Q19, 19, f"{A3}, {A3}, {A3}", (True, False, True))


# ---------------------------------------------------------------------------
# Reductions: per-thread accumulation, then atomics (per thread, warp or block)

reduction = registrar(CASES, "reduction")


@reduction(
    "reduction_residual_norm_warp_3d_f64",
    HandCount(
        2 * F64, 0,
        "u and rhs: 2 fields x 8 B read (the residual is not stored); one atomic per warp",
    ),
)
def reduction_residual_norm_warp_3d_f64() -> Built:
    u, rhs = ps.fields(f"u, rhs: double[{A3}, {A3}, {A3}]", layout="fzyx")
    norm = ps.TypedSymbol("norm", "float64")
    residual = rhs.center - (sum(u[o] for o in _star(3)) - 6 * u.center)
    cfg = cuda()
    cfg.gpu.assume_warp_aligned_block_size = True
    cfg.gpu.warp_size = 32
    return from_assignments([ps.AddReductionAssignment(norm, residual**2)], cfg)


@reduction(
    "reduction_max_abs_cub_block_f32",
    HandCount(F32, 0, "f: 1 field x 4 B read; one atomic per block (CUB block reduction)"),
)
def reduction_max_abs_cub_block_f32() -> Built:
    f = ps.fields(f"f: float32[{A3}, {A3}, {A3}]", layout="fzyx")
    peak = ps.TypedSymbol("peak", "float32")
    cfg = cuda(default_dtype="float32")
    cfg.gpu.use_cub_reductions = True
    cfg.gpu.default_block_size = (64, 4, 2)
    return from_assignments([ps.MaxReductionAssignment(peak, sp.Abs(f.center))], cfg)
