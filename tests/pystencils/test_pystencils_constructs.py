"""Constructs of real pystencils / lbmpy kernels: the frontend models them
with hand-countable work, or refuses them with the error class that names
the construct and a message saying where it is and what to do (MODEL.md §1)."""

import pystencils as ps
import pytest
import sympy as sp
from pystencils import flow
from pystencils.sympyextensions.integer_functions import int_rem
from pystencils.sympyextensions.random import Philox

import warpspeed as ws
from warpspeed.pystencils import (
    BranchError,
    ExtractOptions,
    GridStridedLoopError,
    IndirectAccessError,
    MissingParameterError,
    RedBlackError,
    ReductionError,
    TernaryIndexError,
    UnsupportedKernelError,
    extract,
)

CUDA = dict(target=ps.Target.CUDA, jit=ps.no_jit)
X, Y, Z = ps.DEFAULTS.spatial_counters


def _fields():
    return ps.fields("f, g: double[10, 12, 14]", layout="fzyx")


def _cuda(asm, scheme="linear3d", **options):
    cfg = ps.CreateKernelConfig(**CUDA, **options)
    cfg.gpu.indexing_scheme = scheme
    return ps.create_kernel(asm, cfg)


def test_every_refusal_is_a_kernel_error():
    for cls in (BranchError, GridStridedLoopError, IndirectAccessError, RedBlackError,
                ReductionError, TernaryIndexError):
        assert issubclass(cls, UnsupportedKernelError)
        assert issubclass(cls, ws.KernelError)


def test_reduction_is_an_atomic_per_thread_and_an_fp_add():
    # w += f^2: one FMA per thread, then atomicAdd(w, w_local) per thread
    f, _ = _fields()
    w = ps.TypedSymbol("w", "float64")
    ex = extract(_cuda([ps.AddReductionAssignment(w, f.center ** 2)]))
    k = ex.kernel
    assert k.atomics == ws.Atomics(1, "thread", 1)
    assert dict(k.fp_ops) == {"fma": 1} and not k.stores
    assert any("reduction into w" in n for n in ex.notes)


def test_grid_strided_loop_with_the_automatic_grid_is_the_linear_kernel():
    # pystencils' automatic launch grid covers the domain: one point per thread
    f, g = _fields()
    asm = [ps.Assignment(g.center, f[1, 0, 0])]
    strided = extract(_cuda(asm, "gridstrided_linear3d")).kernel
    linear = extract(_cuda(asm, "linear3d")).kernel
    assert strided.domain == linear.domain and strided.fold == (1, 1, 1)
    assert strided.loads == linear.loads and strided.stores == linear.stores


def _noslip_kernel():
    from lbmpy import LBMConfig, LBStencil, Stencil, create_lb_method
    from lbmpy.boundaries import NoSlip
    from lbmpy.boundaries.boundaryhandling import create_lattice_boltzmann_boundary_kernel
    from pystencils.boundaries.createindexlist import numpy_data_type_for_boundary_object

    method = create_lb_method(LBMConfig(stencil=LBStencil(Stencil.D3Q19)))
    pdfs = ps.fields("pdfs(19): double[18, 18, 18]", layout="fzyx")
    index_field = ps.Field.create_generic(
        "indexField", spatial_dimensions=1, field_type=ps.FieldType.INDEXED,
        dtype=numpy_data_type_for_boundary_object(NoSlip(), 3),
    )
    return create_lattice_boltzmann_boundary_kernel(
        pdfs, index_field, method, NoSlip(), target=ps.Target.CUDA, jit=ps.no_jit
    )


@pytest.mark.parametrize("shape", [None, (18, 18, 18)])
def test_boundary_index_list_kernel_without_its_list_is_refused_naming_the_pdfs(shape):
    with pytest.raises(IndirectAccessError, match=r"field pdfs .*index list.*index_list="):
        extract(_noslip_kernel(), ExtractOptions(shape=shape))


def test_ternary_in_an_index_is_a_modelled_wrap():
    fc = ps.Field.create_fixed_size("fc", (10, 12, 14), field_type=ps.FieldType.CUSTOM,
                                    layout="fzyx")
    _, g = _fields()
    wrap = sp.Piecewise((0, sp.Eq(X, 9)), (X + 1, True))
    k = _cuda([ps.Assignment(g.center, fc.absolute_access((wrap, Y, Z), ()))], ghost_layers=0)
    (load,) = extract(k).kernel.loads
    # x + 1 everywhere, minus 10 at x = 9 only: [x == 9] = floor(x / 9) over 0 <= x < 10
    assert sp.simplify(load.index[0] - (ws.tidx + 1 - 10 * sp.floor(ws.tidx / 9))) == 0


def test_periodic_wrap_with_int_rem_is_quasi_affine_and_modelled():
    fc = ps.Field.create_fixed_size("fc", (10, 12, 14), field_type=ps.FieldType.CUSTOM,
                                    layout="fzyx")
    _, g = _fields()
    k = _cuda([ps.Assignment(g.center, fc.absolute_access((int_rem(X + 1, 10), Y, Z), ()))],
              ghost_layers=0)
    (load,) = extract(k).kernel.loads
    assert sp.simplify(load.index[0] - sp.Mod(ws.tidx + 1, 10)) == 0


def test_red_black_branch_is_refused_pointing_to_strided_slices():
    f, _ = _fields()

    @flow.guarded_block(sp.Eq(int_rem(X + Y + Z, 2), 0))
    def red(b):
        b.store[f.center] = (f[1, 0, 0] + f[-1, 0, 0]) / 2

    with pytest.raises(RedBlackError, match=r"% 2.*every second thread.*checkerboard.*int_rem"):
        extract(ps.create_kernel(red, ps.CreateKernelConfig(**CUDA)))


def test_branch_on_data_is_refused_pointing_to_selects():
    f, g = _fields()

    @flow.guarded_block(f.center > 0)
    def positive(b):
        b.store[g.center] = f[1, 0, 0]

    with pytest.raises(BranchError, match=r"floating-point data.*Piecewise"):
        extract(ps.create_kernel(positive, ps.CreateKernelConfig(**CUDA)))


def test_select_on_fp_values_is_one_compare_and_loads_both_branches():
    f, g = _fields()
    rhs = sp.Piecewise((f[1, 0, 0], f.center > 0), (f[-1, 0, 0], True))
    k = extract(_cuda([ps.Assignment(g.center, rhs)])).kernel
    assert dict(k.fp_ops) == {"fma": 1}
    assert len(k.loads) == 3 and len(k.stores) == 1


def test_parity_select_updates_every_cell_with_both_branches_loaded():
    # u = (x+y+z) even ? (u[1] + u[-1]) / 2 : u: c*u[1] + c*u[-1] (mul + FMA), compare free
    f, _ = _fields()
    rhs = sp.Piecewise(((f[1, 0, 0] + f[-1, 0, 0]) / 2, sp.Eq(int_rem(X + Y + Z, 2), 0)),
                       (f.center, True))
    k = extract(_cuda([ps.Assignment(f.center, rhs)], ghost_layers=1)).kernel
    assert dict(k.fp_ops) == {"fma": 2}
    assert len(k.loads) == 3 and len(k.stores) == 1
    assert k.domain == (8, 10, 12)


def test_philox_random_numbers_are_counted_approximately_and_noted():
    # g = f + r0 * r1: one FMA; philox_float64 (two doubles): 2 FMA + 2 conversions
    f, g = _fields()
    rng = Philox("phil", "float64", seed=42)
    r, call = rng.get_random_vector(ps.TypedSymbol("t", "int64"))
    ex = extract(_cuda([call, ps.Assignment(g.center, f.center + r[0] * r[1])]))
    assert dict(ex.kernel.fp_ops) == {"fma": 3, "other": 2}
    assert [a.field.name for a in ex.kernel.loads] == ["f"]
    assert any("Philox" in n and "not modelled" in n for n in ex.notes)


def test_philox_float32_counts_four_values_at_precision_32():
    a, b = ps.fields("a, b: float32[10, 12, 14]", layout="fzyx")
    rng = Philox("phil", "float32", seed=1)
    r, call = rng.get_random_vector(ps.TypedSymbol("t", "int64"))
    k = extract(_cuda([call, ps.Assignment(b.center, a.center + r[0])])).kernel
    assert dict(k.fp_ops) == {"fma": 5, "other": 4}
    assert k.precision == 32


def test_red_black_start_on_the_fast_axis_of_a_numpy_layout_names_pystencils_counter():
    # the start of the slow axis depends on the fast axis' counter, which
    # pystencils leaves as a kernel parameter; the fzyx layout is predicted
    for layout in ("fzyx", "numpy"):
        u, f = ps.fields("u, f: double[34, 34]", layout=layout)
        cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit,
                                    iteration_slice=ps.make_slice[1 + int_rem(Y + 1, 2):-1:2, 1:-1])
        cfg.gpu.manual_launch_grid = True
        kf = ps.create_kernel([ps.Assignment(u.center, (u[1, 0] + u[-1, 0] - f.center) / 4)], cfg)
        if layout == "fzyx":
            assert ws.predict(extract(kf).kernel, "A100", block=(32, 8, 1)).glups > 0
        else:
            with pytest.raises(MissingParameterError,
                               match=r"ctr_1__0.*pystencils left the counter ctr_1.*fzyx"):
                extract(kf)
