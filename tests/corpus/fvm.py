"""Staggered-flux corpus kernels: pystencils' finite-volume discretisation
(``ps.fd.FVM1stOrder``) writing face fluxes to a ``ps.StaggeredField`` and
the continuity update reading them back, as in pystencils' own
advection-diffusion tests.

A ``StaggeredField`` always has symbolic sizes, and its base pointer sits at
the first interior cell (the halo is reached with negative offsets); the
other fields are then symbolic too (pystencils does not mix fixed and
variable shapes). ``shape`` is the value of the kernel's size parameters
``_size_j_d``: the interior cell counts.
"""

from __future__ import annotations

import pystencils as ps
import sympy as sp

from ._base import BLOCK_2D, F64, N2, N3, Built, Case, HandCount, from_assignments, registrar

CASES: list[Case] = []
case = registrar(CASES, "staggered fluxes")


def _grad(access: sp.Expr, dim: int) -> sp.Matrix:
    return sp.Matrix([ps.fd.diff(access, i) for i in range(dim)])


def _advection_diffusion_3d() -> tuple[ps.fd.FVM1stOrder, ps.StaggeredField]:
    n = ps.fields("n: double[3D]", layout="fzyx")
    v = ps.fields("v(3): double[3D]", layout="fzyx")
    j = ps.StaggeredField("j", ps.Staggering.Face3D, (), dtype="float64")
    flux = -sp.Symbol("D") * _grad(n.center, 3) + sp.Matrix(v.center_vector) * n.center
    return ps.fd.FVM1stOrder(n, flux=flux), j


@case(
    "fvm_advection_diffusion_flux_3d_f64",
    HandCount(F64 + 3 * F64, 3 * F64, "n: 1 x 8 B and v: 3 x 8 B read; j: 3 faces x 8 B written"),
    shape=(N3, N3, N3),
)
def fvm_advection_diffusion_flux_3d_f64() -> Built:
    fvm, j = _advection_diffusion_3d()
    return from_assignments(fvm.discrete_flux(j))


@case(
    "fvm_continuity_3d_f64",
    HandCount(
        3 * F64 + F64, F64, "j: 3 faces x 8 B and n: 1 x 8 B read; n: 1 x 8 B written (in place)"
    ),
    shape=(N3, N3, N3),
)
def fvm_continuity_3d_f64() -> Built:
    fvm, j = _advection_diffusion_3d()
    return from_assignments(fvm.discrete_continuity(j))


@case(
    "fvm_diffusion_flux_d2q9_edges_2d_f64",
    HandCount(F64, 4 * F64, "c: 1 x 8 B read; j: 4 stored edges (E, N, NE, SE) x 8 B written"),
    block=BLOCK_2D,
    shape=(N2, N2),
)
def fvm_diffusion_flux_d2q9_edges_2d_f64() -> Built:
    c = ps.fields("c: double[2D]", layout="fzyx")
    j = ps.StaggeredField("j", ps.Staggering.Corner2D, (), dtype="float64")
    fvm = ps.fd.FVM1stOrder(c, flux=-sp.Symbol("D") * _grad(c.center, 2))
    return from_assignments(fvm.discrete_flux(j))
