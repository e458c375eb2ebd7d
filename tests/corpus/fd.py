"""Finite-difference corpus kernels: stars and boxes in 2D and 3D, fourth
order, the explicit heat equation, advection-diffusion, Cahn-Hilliard
phase-field steps, strided sweeps (red-black Gauss-Seidel), a reduction,
AoS/``c`` layouts, symbolic sizes and the ``blockwise4d`` indexing scheme.

Every kernel is written the way pystencils' tutorials and waLBerla's code
generation scripts write them (``ps.fields``, ``ps.Assignment``,
``ps.assignment_from_stencil``, ``ps.fd``), generated for CUDA without a GPU.
"""

from __future__ import annotations

from typing import Any

import pystencils as ps
import sympy as sp
from lbmpy.phasefield.kerneleqs import cahn_hilliard_fd_eq
from pystencils.fd.derivation import FiniteDifferenceStencilDerivation
from pystencils.sympyextensions.integer_functions import int_rem

from ._base import (
    A2,
    A3,
    BLOCK_2D,
    F32,
    F64,
    N3,
    Built,
    Case,
    HandCount,
    cuda,
    from_assignments,
    registrar,
    strided,
)

CASES: list[Case] = []
case = registrar(CASES, "finite differences")

#: Array extents with two ghost layers.
A3_2 = N3 + 4


def _neighbours(dim: int, radius: int = 1) -> list[tuple[int, ...]]:
    """The 2 * dim * radius star neighbours (without the centre)."""
    out = []
    for axis in range(dim):
        for r in range(1, radius + 1):
            for sign in (-1, 1):
                out.append(tuple(sign * r if a == axis else 0 for a in range(dim)))
    return out


# ---------------------------------------------------------------------------
# Stars and boxes


@case(
    "fd2d_jacobi_5pt_f64",
    HandCount(F64, F64, "src: 1 field x 8 B read; dst: 1 field x 8 B written"),
    block=BLOCK_2D,
)
def fd2d_jacobi_5pt_f64() -> Built:
    src, dst = ps.fields(f"src, dst: double[{A2}, {A2}]", layout="fzyx")
    h = sp.Symbol("h")
    rhs = sum(src[o] for o in _neighbours(2)) / (4 * h**2)
    return from_assignments([ps.Assignment(dst.center, rhs)])


@case(
    "fd2d_box_9pt_f32",
    HandCount(F32, F32, "f: 1 field x 4 B read; g: 1 field x 4 B written"),
    block=BLOCK_2D,
)
def fd2d_box_9pt_f32() -> Built:
    f, g = ps.fields(f"f, g: float32[{A2}, {A2}]", layout="fzyx")
    weights = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
    asm = ps.assignment_from_stencil(weights, f, g, normalization_factor=sp.Rational(1, 16))
    return from_assignments([asm], cuda(default_dtype="float32"))


@case(
    "fd3d_jacobi_7pt_f64",
    HandCount(F64, F64, "src: 1 field x 8 B read; dst: 1 field x 8 B written"),
)
def fd3d_jacobi_7pt_f64() -> Built:
    src, dst = ps.fields(f"src, dst: double[{A3}, {A3}, {A3}]", layout="fzyx")
    h = sp.Symbol("h")
    rhs = sum(src[o] for o in _neighbours(3)) / (6 * h**2)
    return from_assignments([ps.Assignment(dst.center, rhs)])


@case(
    "fd3d_box_27pt_f32",
    HandCount(F32, F32, "src: 1 field x 4 B read; dst: 1 field x 4 B written"),
)
def fd3d_box_27pt_f32() -> Built:
    src, dst = ps.fields(f"src, dst: float32[{A3}, {A3}, {A3}]", layout="fzyx")
    offsets = [(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)]
    weight = {
        0: sp.Rational(8, 27),
        1: sp.Rational(1, 27),
        2: sp.Rational(1, 54),
        3: sp.Rational(1, 108),
    }
    rhs = sum(weight[sum(map(abs, o))] * src[o] for o in offsets)
    return from_assignments([ps.Assignment(dst.center, rhs)], cuda(default_dtype="float32"))


@case(
    "fd3d_laplace_4th_order_f64",
    HandCount(F64, F64, "u: 1 field x 8 B read (13-point star, radius 2); lap: 1 x 8 B written"),
)
def fd3d_laplace_4th_order_f64() -> Built:
    u, lap = ps.fields(f"u, lap: double[{A3_2}, {A3_2}, {A3_2}]", layout="fzyx")
    rhs = 0
    for axis in range(3):
        points = [tuple(r if a == axis else 0 for a in range(3)) for r in range(-2, 3)]
        second = FiniteDifferenceStencilDerivation((axis, axis), points).get_stencil()
        rhs += second.apply(u.center)
    return from_assignments([ps.Assignment(lap.center, rhs)])


@case(
    "fd3d_heat_explicit_euler_f64",
    HandCount(F64, F64, "u: 1 field x 8 B read; u_new: 1 field x 8 B written"),
)
def fd3d_heat_explicit_euler_f64() -> Built:
    u, u_new = ps.fields(f"u, u_new: double[{A3}, {A3}, {A3}]", layout="fzyx")
    kappa = sp.Symbol("kappa")
    pde = ps.fd.transient(u) - ps.fd.diffusion(u, kappa)
    update = ps.fd.Discretization2ndOrder(dx=sp.Symbol("dx"), dt=sp.Symbol("dt"))(pde)
    return from_assignments([ps.Assignment(u_new.center, update)])


# ---------------------------------------------------------------------------
# Layouts, indexing schemes, symbolic sizes


@case(
    "fd3d_vector_laplace_aos_zyxf_f64",
    HandCount(3 * F64, 3 * F64, "u: 3 components x 8 B read; u_new: 3 x 8 B written (AoS zyxf)"),
)
def fd3d_vector_laplace_aos_zyxf_f64() -> Built:
    u, u_new = ps.fields(f"u(3), u_new(3): double[{A3}, {A3}, {A3}]", layout="zyxf")
    nu = sp.Symbol("nu")
    return from_assignments(
        [
            ps.Assignment(
                u_new.center(i),
                u.center(i) + nu * sum(u[o](i) - u.center(i) for o in _neighbours(3)),
            )
            for i in range(3)
        ]
    )


@case(
    "fd3d_vector_laplace_c_layout_f32",
    HandCount(
        3 * F32,
        3 * F32,
        "u: 3 components x 4 B read; u_new: 3 x 4 B written (layout 'c': component fastest, "
        "x slowest; pystencils puts threadIdx.x on z)",
    ),
)
def fd3d_vector_laplace_c_layout_f32() -> Built:
    u, u_new = ps.fields(f"u(3), u_new(3): float32[{A3}, {A3}, {A3}]", layout="c")
    nu = sp.Symbol("nu")
    return from_assignments(
        [
            ps.Assignment(
                u_new.center(i),
                u.center(i) + nu * sum(u[o](i) - u.center(i) for o in _neighbours(3)),
            )
            for i in range(3)
        ],
        cuda(default_dtype="float32"),
    )


@case(
    "fd3d_jacobi_7pt_blockwise4d_f64",
    HandCount(F64, F64, "src: 1 field x 8 B read; dst: 1 field x 8 B written"),
)
def fd3d_jacobi_7pt_blockwise4d_f64() -> Built:
    src, dst = ps.fields(f"src, dst: double[{A3}, {A3}, {A3}]", layout="fzyx")
    cfg = cuda()
    cfg.gpu.indexing_scheme = "blockwise4d"
    rhs = sum(src[o] for o in _neighbours(3)) / 6
    return from_assignments([ps.Assignment(dst.center, rhs)], cfg)


@case(
    "fd3d_jacobi_7pt_symbolic_f64",
    HandCount(F64, F64, "src: 1 field x 8 B read; dst: 1 field x 8 B written"),
    shape=(A3, A3, A3),
)
def fd3d_jacobi_7pt_symbolic_f64() -> Built:
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    rhs = sum(src[o] for o in _neighbours(3)) / 6
    return from_assignments([ps.Assignment(dst.center, rhs)])


@case(
    "fd3d_jacobi_7pt_symbolic_no_shape_f64",
    HandCount(F64, F64, "as fd3d_jacobi_7pt_symbolic_f64, but no shape is given"),
    refusal="MissingShapeError",
    reason="symbolic field sizes and no shape to predict with",
)
def fd3d_jacobi_7pt_symbolic_no_shape_f64() -> Built:
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    rhs = sum(src[o] for o in _neighbours(3)) / 6
    return from_assignments([ps.Assignment(dst.center, rhs)])


# ---------------------------------------------------------------------------
# Advection-diffusion


@case(
    "advection_diffusion_fd3d_f64",
    HandCount(
        F64 + 3 * F64,
        F64,
        "c: 1 x 8 B and u: 3 components x 8 B read; c_new: 1 x 8 B written",
    ),
    klass="advection-diffusion",
)
def advection_diffusion_fd3d_f64() -> Built:
    c, c_new = ps.fields(f"c, c_new: double[{A3}, {A3}, {A3}]", layout="fzyx")
    u = ps.fields(f"u(3): double[{A3}, {A3}, {A3}]", layout="fzyx")
    pde = ps.fd.transient(c) + ps.fd.advection(c, u) - ps.fd.diffusion(c, sp.Symbol("D"))
    update = ps.fd.Discretization2ndOrder(dx=1, dt=sp.Symbol("dt"))(pde)
    return from_assignments([ps.Assignment(c_new.center, update)])


@case(
    "advection_upwind_2d_f32",
    HandCount(
        F32 + 2 * F32,
        F32,
        "c: 1 x 4 B and u: 2 components x 4 B read; c_new: 1 x 4 B written",
    ),
    klass="advection-diffusion",
    block=BLOCK_2D,
)
def advection_upwind_2d_f32() -> Built:
    c, c_new = ps.fields(f"c, c_new: float32[{A2}, {A2}]", layout="fzyx")
    u = ps.fields(f"u(2): float32[{A2}, {A2}]", layout="fzyx")
    dt = sp.Symbol("dt")
    rate = 0
    for axis in range(2):
        e = tuple(1 if a == axis else 0 for a in range(2))
        back = tuple(-v for v in e)
        ua = u.center(axis)
        # first-order upwind: backward difference for positive, forward for negative velocity
        rate += sp.Max(ua, 0) * (c.center - c[back]) + sp.Min(ua, 0) * (c[e] - c.center)
    return from_assignments(
        [ps.Assignment(c_new.center, c.center - dt * rate)], cuda(default_dtype="float32")
    )


# ---------------------------------------------------------------------------
# Phase-field: Cahn-Hilliard (pystencils' spinodal decomposition tutorial, lbmpy)


def _ch_fields() -> tuple[ps.Field, ps.Field]:
    c, mu = ps.fields(f"c, mu: double[{A2}, {A2}]", layout="fzyx")
    return c, mu


@case(
    "cahn_hilliard_mu_2d_f64",
    HandCount(F64, F64, "c: 1 x 8 B read (gradient stencil); mu: 1 x 8 B written"),
    klass="phase-field / Cahn-Hilliard",
    block=BLOCK_2D,
)
def cahn_hilliard_mu_2d_f64() -> Built:
    c_field, mu_field = _ch_fields()
    kappa, a = sp.symbols("kappa A")
    c = c_field.center
    free_energy = a * c**2 * (1 - c) ** 2 + kappa / 2 * sum(ps.fd.diff(c, i) ** 2 for i in range(2))
    mu = ps.fd.expand_diff_linear(ps.fd.functional_derivative(free_energy, c), constants=[kappa])
    mu = ps.fd.Discretization2ndOrder(dx=1, dt=sp.Rational(1, 100))(mu)
    return from_assignments([ps.Assignment(mu_field.center, mu)])


@case(
    "cahn_hilliard_c_2d_f64",
    HandCount(2 * F64, F64, "c: 1 x 8 B and mu: 1 x 8 B read; c: 1 x 8 B written (in place)"),
    klass="phase-field / Cahn-Hilliard",
    block=BLOCK_2D,
)
def cahn_hilliard_c_2d_f64() -> Built:
    c_field, mu_field = _ch_fields()
    pde = ps.fd.transient(c_field) - ps.fd.diffusion(mu_field, sp.Symbol("M"))
    update = ps.fd.Discretization2ndOrder(dx=1, dt=sp.Rational(1, 100))(pde)
    return from_assignments([ps.Assignment(c_field.center, update)])


@case(
    "cahn_hilliard_2phase_fd3d_f32",
    HandCount(
        2 * F32 + 2 * F32 + 3 * F32,
        2 * F32,
        "phi: 2 phases x 4 B, mu: 2 x 4 B, velocity: 3 x 4 B read; phi_tmp: 2 x 4 B written",
    ),
    klass="phase-field / Cahn-Hilliard",
)
def cahn_hilliard_2phase_fd3d_f32() -> Built:
    phi, mu, phi_tmp = ps.fields(
        f"phi(2), mu(2), phi_tmp(2): float32[{A3}, {A3}, {A3}]", layout="fzyx"
    )
    vel = ps.fields(f"vel(3): float32[{A3}, {A3}, {A3}]", layout="fzyx")
    asm = [
        ps.Assignment(
            phi_tmp(i), cahn_hilliard_fd_eq(i, phi, mu, vel, sp.Symbol("M"), 1, sp.Symbol("dt"))
        )
        for i in range(2)
    ]
    return from_assignments(asm, cuda(default_dtype="float32"))


# ---------------------------------------------------------------------------
# Strided sweeps


@case(
    "red_black_gs_2d_f64",
    HandCount(
        # Updates at odd x of odd rows y. Per row of updates (N / 2 of them): its own row of u
        # is read whole (x - 1, x, x + 1): 2 x 8 B per update; one even row of u (rows y +- 1
        # are shared with the neighbouring update rows) is read at every second x, whole
        # sectors: 16 B per update; rhs likewise: 16 B.
        2 * F64 + strided(F64, 2) + strided(F64, 2),
        strided(F64, 2),
        "u read: the updated row whole (2 x 8 B per update) + one even row at stride 2 (16 B, "
        "whole sectors); rhs at stride 2: 16 B; u written at stride 2: 16 B (whole sectors)",
    ),
    klass="strided / red-black",
    block=BLOCK_2D,
)
def red_black_gs_2d_f64() -> Built:
    u, rhs = ps.fields(f"u, rhs: double[{A2}, {A2}]", layout="fzyx")
    h = sp.Symbol("h")
    update = (sum(u[o] for o in _neighbours(2)) - h**2 * rhs.center) / 4
    # the red points (x + y even) whose x and y are odd; the other red quarter starts at (2, 2)
    cfg = cuda(iteration_slice=ps.make_slice[1:-1:2, 1:-1:2])
    return from_assignments([ps.Assignment(u.center, update)], cfg)


@case(
    "strided_x2_axpy_3d_f64",
    HandCount(
        2 * strided(F64, 2),
        strided(F64, 2),
        "x and y read at stride 2 along x: 2 arrays x 16 B (whole sectors); y written at "
        "stride 2: 16 B",
    ),
    klass="strided / red-black",
)
def strided_x2_axpy_3d_f64() -> Built:
    x, y = ps.fields(f"x, y: double[{A3}, {A3}, {A3}]", layout="fzyx")
    a = sp.Symbol("a")
    cfg = cuda(iteration_slice=ps.make_slice[1:-1:2, 1:-1, 1:-1])
    return from_assignments([ps.Assignment(y.center, a * x.center + y.center)], cfg)


@case(
    "red_black_gs_parity_branch_3d_f64",
    HandCount(
        2 * F64 + strided(F64, 2),
        strided(F64, 2),
        "u read everywhere (red centres and black neighbours): 2 points x 8 B per red update; "
        "rhs read and u written at every second x: whole sectors, 16 B each",
    ),
    klass="strided / red-black",
    shape=(N3, N3, N3),
    refusal="RedBlackError",
    reason="the parity branch switches every second thread off; strided slices model it",
)
def red_black_gs_parity_branch_3d_f64() -> Built:
    # a ps.flow block iterates the fields' size parameters (the interior, like a
    # StaggeredField kernel): symbolic sizes, a shape to predict with
    u, rhs = ps.fields("u, rhs: double[3D]", layout="fzyx")
    x, y, z = ps.DEFAULTS.spatial_counters
    h = sp.Symbol("h")

    @ps.flow.guarded_block(sp.Eq(int_rem(x + y + z, 2), 0))
    def red(b: Any) -> None:
        b.store[u.center] = (sum(u[o] for o in _neighbours(3)) - h**2 * rhs.center) / 6

    return from_assignments(red)


# ---------------------------------------------------------------------------
# Reduction


@case(
    "reduction_sum_of_squares_3d_f64",
    HandCount(
        F64, 0, "r: 1 field x 8 B read; the sum is one atomic per thread (no per-update store)"
    ),
    klass="reduction",
)
def reduction_sum_of_squares_3d_f64() -> Built:
    r = ps.fields(f"r: double[{A3}, {A3}, {A3}]", layout="fzyx")
    norm = ps.TypedSymbol("norm", "float64")
    return from_assignments([ps.AddReductionAssignment(norm, r.center**2)])
