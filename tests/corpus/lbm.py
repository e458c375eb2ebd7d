"""lbmpy corpus kernels: stream-collide with every collision operator family
(SRT, TRT, MRT, cumulant, central moment, KBC), the in-place AA and
esoteric-twist streaming patterns, collide-only and stream-only sweeps,
macroscopic getters and setters, force models, Shan-Chen multiphase, the
conservative Allen-Cahn phase-field LB, fluctuating LB (Philox RNG),
index-list boundary kernels and periodicity copies.

Built the way lbmpy's tutorials and waLBerla's generation scripts build them:
``LBMConfig`` / ``LBMOptimisation`` / ``create_lb_update_rule`` with
symbolic PDF fields, then ``ps.create_kernel`` for CUDA (``jit=ps.no_jit``).

Hand counts: a PDF field of ``Q`` populations contributes ``Q`` values per
cell, read once and written once per update whatever the streaming pattern
(pull reads neighbours, AA and esoteric twist swap in place; cache serves
the neighbours). Velocity and force fields add ``D`` values, density one.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pystencils as ps
import sympy as sp
from lbmpy import (
    ForceModel,
    LBMConfig,
    LBMOptimisation,
    LBStencil,
    Method,
    Stencil,
    create_lb_method,
    create_lb_update_rule,
)
from lbmpy.advanced_streaming import Timestep, is_inplace
from lbmpy.boundaries import UBB, NoSlip
from lbmpy.boundaries.boundaryhandling import create_lattice_boltzmann_boundary_kernel
from lbmpy.macroscopic_value_kernels import macroscopic_values_getter, macroscopic_values_setter
from lbmpy.phasefield_allen_cahn.kernel_equations import interface_tracking_force
from lbmpy.phasefield_allen_cahn.parameter_calculation import AllenCahnParameters
from lbmpy.updatekernels import create_stream_only_kernel
from pystencils.boundaries.createindexlist import (
    numpy_data_type_for_boundary_object,
)

from ._base import (
    A2,
    A3,
    BLOCK_2D,
    F32,
    F64,
    I32,
    N3,
    SECTOR,
    Built,
    Case,
    HandCount,
    cuda,
    from_assignments,
    registrar,
)

CASES: list[Case] = []
case = registrar(CASES, "LBM stream-collide")

OMEGA = sp.Symbol("omega")


def _pdfs(
    q: int,
    dim: int,
    dtype: str = "float64",
    layout: str = "fzyx",
    names: tuple[str, str] = ("pdfs", "pdfs_tmp"),
) -> tuple[ps.Field, ps.Field]:
    """Fixed-size source and destination PDF fields with one ghost layer."""
    size = ", ".join([str(A3 if dim == 3 else A2)] * dim)
    return ps.fields(f"{names[0]}({q}), {names[1]}({q}): {dtype}[{size}]", layout=layout)


def _stencil(name: str) -> Any:
    return LBStencil(getattr(Stencil, name))


def _update_rule(src: Any, dst: Any | None, **lbm: Any) -> Any:
    opt = LBMOptimisation(symbolic_field=src, symbolic_temporary_field=dst)
    return create_lb_update_rule(lbm_config=LBMConfig(**lbm), lbm_optimisation=opt)


def _pull(stencil: str, q: int, dtype: str = "float64", layout: str = "fzyx", **lbm: Any) -> Built:
    dim = 3 if stencil.startswith("D3") else 2
    src, dst = _pdfs(q, dim, dtype, layout)
    rule = _update_rule(src, dst, stencil=_stencil(stencil), **lbm)
    return from_assignments(rule, cuda(default_dtype=dtype))


# ---------------------------------------------------------------------------
# Collision operators, pull stream-collide


@case(
    "lbm_d3q19_srt_pull_f64",
    HandCount(19 * F64, 19 * F64, "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B written"),
)
def lbm_d3q19_srt_pull_f64() -> Built:
    return _pull("D3Q19", 19, method=Method.SRT, relaxation_rate=OMEGA)


@case(
    "lbm_d3q19_trt_pull_f32",
    HandCount(19 * F32, 19 * F32, "pdfs: 19 x 4 B read; pdfs_tmp: 19 x 4 B written"),
)
def lbm_d3q19_trt_pull_f32() -> Built:
    return _pull("D3Q19", 19, "float32", method=Method.TRT, relaxation_rate=OMEGA)


@case(
    "lbm_d3q19_mrt_pull_f64",
    HandCount(19 * F64, 19 * F64, "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B written"),
)
def lbm_d3q19_mrt_pull_f64() -> Built:
    rates = [OMEGA, sp.Symbol("omega_bulk"), 1.4, 1.5, 1.6, 1.7]
    return _pull("D3Q19", 19, method=Method.MRT, relaxation_rates=rates)


@case(
    "lbm_d3q27_cumulant_pull_f64",
    HandCount(27 * F64, 27 * F64, "pdfs: 27 x 8 B read; pdfs_tmp: 27 x 8 B written"),
)
def lbm_d3q27_cumulant_pull_f64() -> Built:
    return _pull("D3Q27", 27, method=Method.CUMULANT, relaxation_rate=OMEGA, compressible=True)


@case(
    "lbm_d2q9_central_moment_pull_f64",
    HandCount(9 * F64, 9 * F64, "pdfs: 9 x 8 B read; pdfs_tmp: 9 x 8 B written"),
    block=BLOCK_2D,
)
def lbm_d2q9_central_moment_pull_f64() -> Built:
    return _pull("D2Q9", 9, method=Method.CENTRAL_MOMENT, relaxation_rate=OMEGA, compressible=True)


@case(
    "lbm_d2q9_kbc_n4_entropic_pull_f64",
    HandCount(9 * F64, 9 * F64, "pdfs: 9 x 8 B read; pdfs_tmp: 9 x 8 B written"),
    block=BLOCK_2D,
)
def lbm_d2q9_kbc_n4_entropic_pull_f64() -> Built:
    return _pull(
        "D2Q9",
        9,
        method=Method.TRT_KBC_N4,
        relaxation_rates=[OMEGA, sp.Symbol("omega_free")],
        entropic=True,
        compressible=True,
        zero_centered=False,
    )


@case(
    "lbm_d3q19_srt_pull_aos_zyxf_f64",
    HandCount(19 * F64, 19 * F64, "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B written (AoS zyxf)"),
)
def lbm_d3q19_srt_pull_aos_zyxf_f64() -> Built:
    return _pull("D3Q19", 19, layout="zyxf", method=Method.SRT, relaxation_rate=OMEGA)


@case(
    "lbm_d3q19_trt_pull_symbolic_f64",
    HandCount(19 * F64, 19 * F64, "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B written"),
    shape=(A3, A3, A3),
)
def lbm_d3q19_trt_pull_symbolic_f64() -> Built:
    src, dst = ps.fields("pdfs(19), pdfs_tmp(19): double[3D]", layout="fzyx")
    rule = _update_rule(
        src, dst, stencil=_stencil("D3Q19"), method=Method.TRT, relaxation_rate=OMEGA
    )
    return from_assignments(rule)


@case(
    "lbm_d3q19_srt_default_fields_f64",
    HandCount(19 * F64, 19 * F64, "src: 19 x 8 B read; dst: 19 x 8 B written"),
    shape=(A3, A3, A3),
)
def lbm_d3q19_srt_default_fields_f64() -> Built:
    # lbmpy's tutorials: no fields given, lbmpy makes src and dst of symbolic
    # size, and dst shares src's size and stride parameters
    rule = create_lb_update_rule(
        lbm_config=LBMConfig(stencil=_stencil("D3Q19"), method=Method.SRT, relaxation_rate=OMEGA)
    )
    return from_assignments(rule)


# ---------------------------------------------------------------------------
# In-place streaming: AA and esoteric twist (one PDF field)

inplace = registrar(CASES, "LBM in-place streaming")


def _inplace(pattern: str, even: bool, method: str) -> Built:
    if not is_inplace(pattern):
        raise ValueError(f"{pattern} is not an in-place streaming pattern")
    pdfs = ps.fields(f"pdfs(19): double[{A3}, {A3}, {A3}]", layout="fzyx")
    rule = _update_rule(
        pdfs,
        None,
        stencil=_stencil("D3Q19"),
        method=getattr(Method, method),
        relaxation_rate=OMEGA,
        streaming_pattern=pattern,
        timestep=Timestep.EVEN if even else Timestep.ODD,
    )
    return from_assignments(rule)


_ONE_FIELD = HandCount(19 * F64, 19 * F64, "pdfs: 19 x 8 B read and 19 x 8 B written in place")


@inplace("lbm_d3q19_srt_aa_even_f64", _ONE_FIELD)
def lbm_d3q19_srt_aa_even_f64() -> Built:
    return _inplace("aa", True, "SRT")


@inplace("lbm_d3q19_srt_aa_odd_f64", _ONE_FIELD)
def lbm_d3q19_srt_aa_odd_f64() -> Built:
    return _inplace("aa", False, "SRT")


@inplace("lbm_d3q19_trt_esotwist_even_f64", _ONE_FIELD)
def lbm_d3q19_trt_esotwist_even_f64() -> Built:
    return _inplace("esotwist", True, "TRT")


@inplace("lbm_d3q19_trt_esotwist_odd_f64", _ONE_FIELD)
def lbm_d3q19_trt_esotwist_odd_f64() -> Built:
    return _inplace("esotwist", False, "TRT")


# ---------------------------------------------------------------------------
# Collide only, stream only

split = registrar(CASES, "LBM collide/stream only")


@split("lbm_d3q19_srt_collide_only_f64", _ONE_FIELD)
def lbm_d3q19_srt_collide_only_f64() -> Built:
    pdfs = ps.fields(f"pdfs(19): double[{A3}, {A3}, {A3}]", layout="fzyx")
    rule = _update_rule(
        pdfs,
        None,
        stencil=_stencil("D3Q19"),
        method=Method.SRT,
        relaxation_rate=OMEGA,
        kernel_type="collide_only",
    )
    return from_assignments(rule)


@split(
    "lbm_d3q19_stream_only_f64",
    HandCount(19 * F64, 19 * F64, "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B written"),
)
def lbm_d3q19_stream_only_f64() -> Built:
    src, dst = _pdfs(19, 3)
    return from_assignments(create_stream_only_kernel(_stencil("D3Q19"), src, dst))


@split(
    "lbm_d3q19_stream_pull_with_output_f64",
    HandCount(
        19 * F64,
        19 * F64 + F64 + 3 * F64,
        "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B, rho: 8 B, u: 3 x 8 B written",
    ),
)
def lbm_d3q19_stream_pull_with_output_f64() -> Built:
    src, dst = _pdfs(19, 3)
    rho, u = ps.fields(f"rho, u(3): double[{A3}, {A3}, {A3}]", layout="fzyx")
    rule = _update_rule(
        src,
        dst,
        stencil=_stencil("D3Q19"),
        method=Method.SRT,
        relaxation_rate=OMEGA,
        kernel_type="stream_pull_only",
        output={"density": rho, "velocity": u},
    )
    return from_assignments(rule)


# ---------------------------------------------------------------------------
# Macroscopic values

macro = registrar(CASES, "LBM macroscopic values")


def _method(stencil: str, **lbm: Any) -> Any:
    lbm.setdefault("method", Method.SRT)
    lbm.setdefault("relaxation_rate", OMEGA)
    return create_lb_method(LBMConfig(stencil=_stencil(stencil), **lbm))


@macro(
    "lbm_d3q19_macroscopic_getter_f64",
    HandCount(19 * F64, F64 + 3 * F64, "pdfs: 19 x 8 B read; rho: 8 B and u: 3 x 8 B written"),
)
def lbm_d3q19_macroscopic_getter_f64() -> Built:
    pdfs = ps.fields(f"pdfs(19): double[{A3}, {A3}, {A3}]", layout="fzyx")
    rho, u = ps.fields(f"rho, u(3): double[{A3}, {A3}, {A3}]", layout="fzyx")
    getter = macroscopic_values_getter(
        _method("D3Q19", compressible=True), rho.center, u.center_vector, pdfs
    )
    return from_assignments(getter)


@macro(
    "lbm_d3q19_macroscopic_setter_f64",
    HandCount(F64 + 3 * F64, 19 * F64, "rho: 8 B and u: 3 x 8 B read; pdfs: 19 x 8 B written"),
)
def lbm_d3q19_macroscopic_setter_f64() -> Built:
    pdfs = ps.fields(f"pdfs(19): double[{A3}, {A3}, {A3}]", layout="fzyx")
    rho, u = ps.fields(f"rho, u(3): double[{A3}, {A3}, {A3}]", layout="fzyx")
    setter = macroscopic_values_setter(
        _method("D3Q19", compressible=True), rho.center, u.center_vector, pdfs
    )
    return from_assignments(setter)


# ---------------------------------------------------------------------------
# Forcing

forcing = registrar(CASES, "LBM forcing")


@forcing(
    "lbm_d3q19_trt_guo_force_field_f64",
    HandCount(
        19 * F64 + 3 * F64,
        19 * F64,
        "pdfs: 19 x 8 B and force: 3 x 8 B read; pdfs_tmp: 19 x 8 B written",
    ),
)
def lbm_d3q19_trt_guo_force_field_f64() -> Built:
    src, dst = _pdfs(19, 3)
    force = ps.fields(f"force(3): double[{A3}, {A3}, {A3}]", layout="fzyx")
    rule = _update_rule(
        src,
        dst,
        stencil=_stencil("D3Q19"),
        method=Method.TRT,
        relaxation_rate=OMEGA,
        force_model=ForceModel.GUO,
        force=force.center_vector,
        compressible=True,
    )
    return from_assignments(rule)


@forcing(
    "lbm_d2q9_srt_simple_constant_force_f64",
    HandCount(
        9 * F64,
        9 * F64,
        "pdfs: 9 x 8 B read; pdfs_tmp: 9 x 8 B written (force is a kernel parameter)",
    ),
    block=BLOCK_2D,
)
def lbm_d2q9_srt_simple_constant_force_f64() -> Built:
    return _pull(
        "D2Q9",
        9,
        method=Method.SRT,
        relaxation_rate=OMEGA,
        force_model=ForceModel.SIMPLE,
        force=(sp.Symbol("F_x"), sp.Symbol("F_y")),
    )


# ---------------------------------------------------------------------------
# Shan-Chen multiphase (lbmpy's Shan-Chen tutorial: force from a pseudopotential
# of the density, then a stream-collide with the Shan-Chen force model)

shan_chen = registrar(CASES, "Shan-Chen multiphase")


@shan_chen(
    "shan_chen_force_d2q9_f64",
    HandCount(F64, 2 * F64, "rho: 1 x 8 B read (9-point stencil); force: 2 x 8 B written"),
    block=BLOCK_2D,
)
def shan_chen_force_d2q9_f64() -> Built:
    rho, force = ps.fields(f"rho, force(2): double[{A2}, {A2}]", layout="fzyx")
    stencil = _stencil("D2Q9")
    method = _method("D2Q9")
    g, rho0 = sp.symbols("G rho_0")

    def psi(density: Any) -> Any:
        return rho0 * (1 - sp.exp(-density / rho0))

    asm = []
    for d in range(2):
        total = sum(w * psi(rho[c]) * c[d] for c, w in zip(stencil, method.weights))
        asm.append(ps.Assignment(force.center(d), -g * psi(rho.center) * total))
    return from_assignments(asm)


@shan_chen(
    "shan_chen_lb_d2q9_f64",
    HandCount(
        9 * F64 + 2 * F64,
        9 * F64,
        "pdfs: 9 x 8 B and force: 2 x 8 B read; pdfs_tmp: 9 x 8 B written",
    ),
    block=BLOCK_2D,
)
def shan_chen_lb_d2q9_f64() -> Built:
    src, dst = _pdfs(9, 2)
    force = ps.fields(f"force(2): double[{A2}, {A2}]", layout="fzyx")
    rule = _update_rule(
        src,
        dst,
        stencil=_stencil("D2Q9"),
        method=Method.SRT,
        relaxation_rate=OMEGA,
        compressible=True,
        force_model=ForceModel.SHANCHEN,
        force=force.center_vector,
    )
    return from_assignments(rule)


# ---------------------------------------------------------------------------
# Conservative Allen-Cahn phase-field LB (lbmpy.phasefield_allen_cahn)

phase = registrar(CASES, "phase-field / Cahn-Hilliard")


@phase(
    "allen_cahn_phase_field_lb_d2q9_f64",
    HandCount(
        9 * F64 + F64 + 2 * F64,
        9 * F64 + F64,
        "h: 9 x 8 B, C: 1 x 8 B (isotropic gradient), u: 2 x 8 B read; h_tmp: 9 x 8 B and "
        "C_tmp: 1 x 8 B written",
    ),
    block=BLOCK_2D,
)
def allen_cahn_phase_field_lb_d2q9_f64() -> Built:
    h, h_tmp = _pdfs(9, 2, names=("h", "h_tmp"))
    c, c_tmp = ps.fields(f"C, C_tmp: double[{A2}, {A2}]", layout="fzyx")
    u = ps.fields(f"u(2): double[{A2}, {A2}]", layout="fzyx")
    stencil = _stencil("D2Q9")
    params = AllenCahnParameters(
        density_heavy=1.0,
        density_light=0.001,
        dynamic_viscosity_heavy=0.3,
        dynamic_viscosity_light=0.003,
        surface_tension=1e-4,
    )
    rule = _update_rule(
        h,
        h_tmp,
        stencil=stencil,
        method=Method.SRT,
        relaxation_rate=sp.Symbol("omega_phi"),
        compressible=True,
        zero_centered=False,
        velocity_input=u.center_vector,
        force=interface_tracking_force(c, stencil, params),
        output={"density": c_tmp.center},
    )
    return from_assignments(rule)


# ---------------------------------------------------------------------------
# Fluctuating LB (Philox counter-based RNG inside the kernel)

fluct = registrar(CASES, "fluctuating LBM")


@fluct(
    "lbm_d3q19_mrt_fluctuating_f64",
    HandCount(
        19 * F64,
        19 * F64,
        "pdfs: 19 x 8 B read; pdfs_tmp: 19 x 8 B written (the RNG reads no memory)",
    ),
    # 256 threads: without nvcc the register estimate (180 per thread) does
    # not launch the default 512 on an A100, rightly refused (LaunchError)
    block=(64, 2, 2),
)
def lbm_d3q19_mrt_fluctuating_f64() -> Built:
    return _pull(
        "D3Q19",
        19,
        method=Method.MRT,
        weighted=True,
        relaxation_rates=[OMEGA, 1.3, 1.4, 1.5, 1.6, 1.7],
        compressible=True,
        fluctuating={"temperature": sp.Symbol("kT")},
    )


# ---------------------------------------------------------------------------
# Boundaries: lbmpy's index-list kernels (LatticeBoltzmannBoundaryHandling)

bounds = registrar(CASES, "LBM boundaries")


def _boundary_kernel(boundary: Any, stencil: str, q: int) -> Built:
    dim = 3 if stencil.startswith("D3") else 2
    size = ", ".join([str(A3 if dim == 3 else A2)] * dim)
    pdfs = ps.fields(f"pdfs({q}): double[{size}]", layout="fzyx")
    index_field = ps.Field.create_generic(
        "indexField",
        spatial_dimensions=1,
        field_type=ps.FieldType.INDEXED,
        dtype=numpy_data_type_for_boundary_object(boundary, dim),
    )
    kernel = create_lattice_boltzmann_boundary_kernel(
        pdfs,
        index_field,
        _method(stencil),
        boundary,
        target=ps.Target.CUDA,
        jit=ps.no_jit,
    )
    return Built(kernel)


@functools.cache
def channel_list(stencil: str, extent: int, dim: int) -> np.ndarray:
    """The index list lbmpy's boundary handling makes for a channel: walls
    at y = 0 and y = extent - 1 of an ``extent``^dim array with one ghost
    layer. One entry per link from an interior fluid cell next to a wall
    into it, in pystencils' order (``create_boundary_index_list``: cells with
    x fastest, then y, then z; the directions of a cell in stencil order),
    built with NumPy because pystencils' pure-Python fallback takes minutes
    at this size (``tests/pystencils/test_gathers.py`` checks they agree)."""
    dirs = np.array([tuple(d) for d in LBStencil(getattr(Stencil, stencil))])
    names = ["x", "y", "z"][:dim] + ["dir"]
    inner = np.arange(1, extent - 1)
    zs = inner if dim == 3 else np.zeros(1, dtype=np.int64)
    columns: list[list[np.ndarray]] = [[] for _ in names]
    for z in zs:
        for y, dy in ((1, -1), (extent - 2, 1)):
            links = np.flatnonzero(dirs[:, 1] == dy)  # the directions into the wall
            x = np.repeat(inner, links.size)
            values = [x, np.full_like(x, y), np.full_like(x, z), np.tile(links, inner.size)]
            for c, v in zip(columns, values[:dim] + values[3:]):
                c.append(v)
    out = np.empty(sum(v.size for v in columns[0]), dtype=[(n, "<i4") for n in names])
    for n, c in zip(names, columns):
        out[n] = np.concatenate(c)
    return out


@bounds(
    "lbm_d3q19_noslip_index_list_f64",
    HandCount(
        4 * I32 + F64,
        F64,
        "per boundary link of a channel (walls at y = 0 and y = N + 1, the list sorted by cell): "
        "index entry (x, y, z, dir) 4 x 4 B and one PDF 8 B read (the links of one direction "
        "form whole rows along x: whole sectors); one PDF 8 B written",
    ),
    block=(256, 1, 1),
    hook=False,
    options={"index_list": lambda: channel_list("D3Q19", A3, 3)},
)
def lbm_d3q19_noslip_index_list_f64() -> Built:
    return _boundary_kernel(NoSlip(), "D3Q19", 19)


@bounds(
    "lbm_d2q9_ubb_index_list_f64",
    HandCount(
        3 * I32 + F64,
        F64,
        "per boundary link of a channel (moving walls at y = 0 and y = N + 1, sorted by cell): "
        "index entry (x, y, dir) 3 x 4 B and one PDF 8 B read; one PDF 8 B written (the wall "
        "velocity is a constant)",
    ),
    block=(256, 1, 1),
    hook=False,
    options={"index_list": lambda: channel_list("D2Q9", A2, 2)},
)
def lbm_d2q9_ubb_index_list_f64() -> Built:
    return _boundary_kernel(UBB((0.05, 0)), "D2Q9", 9)


# ---------------------------------------------------------------------------
# Periodicity: copy one PDF across the domain, as lbmpy's GPU periodicity
# handling does (one kernel per direction and population, a slice copy)

periodic = registrar(CASES, "periodicity copy")


def _periodic_copy(axis: int, population: int) -> Built:
    pdfs = ps.fields(f"pdfs(19): double[{A3}, {A3}, {A3}]", layout="fzyx")
    # the ghost layer at 0 along ``axis`` receives the last interior layer (index N3)
    offset = tuple(N3 if a == axis else 0 for a in range(3))
    dst = tuple(0 if a == axis else slice(1, -1) for a in range(3))
    cfg = cuda(iteration_slice=dst, skip_independence_check=True)
    copy = ps.Assignment(pdfs.center(population), pdfs[offset](population))
    return from_assignments(ps.AssignmentCollection([copy]), cfg)


@periodic(
    "periodic_copy_z_face_d3q19_f64",
    HandCount(F64, F64, "one population, x-y face: 8 B read, 8 B written, rows contiguous"),
    block=(64, 4, 1),
)
def periodic_copy_z_face_d3q19_f64() -> Built:
    return _periodic_copy(2, 5)


@periodic(
    "periodic_copy_x_face_d3q19_f64",
    HandCount(
        SECTOR,
        SECTOR,
        "one population, y-z face: every update reads and writes one double of its own row, "
        "a whole 32 B sector each",
    ),
    block=(1, 32, 8),
)
def periodic_copy_x_face_d3q19_f64() -> Built:
    return _periodic_copy(0, 4)
