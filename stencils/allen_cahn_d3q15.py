"""Conservative Allen-Cahn interface tracking: a D3Q15 lattice Boltzmann
step for the phase field, SRT, pull scheme (``stream_pull_collide``),
double, generated with lbmpy and pystencils (MODEL.md §1 input).

The interface-tracking force ``F = (1 - 4 (phi - 1/2)^2) / xi * n / 3`` uses
the interface normal ``n = grad phi / |grad phi|`` from a hand-written
7-point central difference ``(phi[+e_i] - phi[-e_i]) / 2`` (lbmpy's
isotropic gradient helper does not accept D3Q7). The velocity enters as
input, the new phase field (the zeroth moment) is written out.

Fields (all ``fzyx``, x contiguous, one ghost layer) and their unique
accesses per lattice update:

* ``g``: 15 loads (the pulled populations), ``g_tmp``: 15 stores;
* ``phi``: 7 loads (the centre and its 6 face neighbours);
* ``u``: 3 loads (the velocity components at the centre);
* ``phi_tmp``: 1 store (the phase field after the step).

In total 25 loads and 16 stores. Kernel parameters: ``omega_phi`` (the
relaxation rate) and ``xi`` (the interface thickness).
"""

from __future__ import annotations

from typing import Any

import sympy as sp

import warpspeed as ws

from ._checks import check_shape
from ._common import build, field, require_lbmpy

#: Unique accesses per lattice update, per field: (loads, stores).
ACCESSES = {"g": (15, 0), "g_tmp": (0, 15), "phi": (7, 0), "u": (3, 0), "phi_tmp": (0, 1)}


def central_normal(phi: Any) -> list[sp.Expr]:
    """The interface normal from 7-point central differences."""
    grad = []
    for axis in range(3):
        plus = tuple(1 if i == axis else 0 for i in range(3))
        minus = tuple(-1 if i == axis else 0 for i in range(3))
        grad.append((phi[plus] - phi[minus]) / 2)
    norm = sp.sqrt(sum(gi**2 for gi in grad) + sp.Float(1e-32))
    return [gi / norm for gi in grad]


def update_rule(g: Any, g_tmp: Any, phi: Any, phi_tmp: Any, u: Any) -> Any:
    """lbmpy's D3Q15 SRT pull update rule with the interface-tracking force."""
    require_lbmpy("allen_cahn_d3q15")
    from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Method, Stencil, create_lb_update_rule

    xi = sp.Symbol("xi")
    fraction = (1 - 4 * (phi.center - sp.Rational(1, 2)) ** 2) / xi
    force = [sp.Rational(1, 3) * fraction * n for n in central_normal(phi)]
    cfg = LBMConfig(
        stencil=LBStencil(Stencil.D3Q15),
        method=Method.SRT,
        relaxation_rate=sp.Symbol("omega_phi"),
        compressible=True,
        force=force,
        velocity_input=u.center_vector,
        output={"density": phi_tmp.center},
        kernel_type="stream_pull_collide",
    )
    opt = LBMOptimisation(symbolic_field=g, symbolic_temporary_field=g_tmp)
    return create_lb_update_rule(lbm_config=cfg, lbm_optimisation=opt)


def generate(
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> tuple[ws.Kernel, Any]:
    """``(warpspeed kernel, pystencils kernel)``; see :func:`kernel`."""
    s = check_shape(shape, 3)
    g, g_tmp = field("g", s, 1, 15), field("g_tmp", s, 1, 15)
    phi, phi_tmp = field("phi", s, 1), field("phi_tmp", s, 1)
    u = field("u", s, 1, 3)
    fields = (g, g_tmp, phi, phi_tmp, u)
    return build(
        update_rule(g, g_tmp, phi, phi_tmp, u), fields,
        ghost=1, fold=fold, alignment=alignment, name="allen_cahn_d3q15", target=target,
    )


def kernel(
    shape: tuple[int, int, int] = (256, 256, 256),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
    target: str = "cuda",
) -> ws.Kernel:
    """The phase-field step on ``shape`` interior cells; ``fold``,
    ``alignment`` and ``target`` as in :mod:`stencils.star3d`."""
    return generate(shape, fold, alignment, target=target)[0]
