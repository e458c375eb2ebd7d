"""The pystencils frontend against independent truth: a hand-written kernel,
addresses evaluated by hand, and clear errors for what it cannot model."""

import pystencils as ps
import pytest
import sympy as sp

import warpspeed as ws
from stencils import star3d, star3d_by_hand
from warpspeed.frontends.pystencils import (
    UnsupportedKernelError,
    extract,
    kernel_from_pystencils,
)

CUDA = dict(target=ps.Target.CUDA, jit=ps.no_jit)


def _cuda(asm, scheme="linear3d", **options):
    cfg = ps.CreateKernelConfig(**CUDA, **options)
    cfg.gpu.indexing_scheme = scheme
    return ps.create_kernel(asm, cfg)


def _small_star(layout="fzyx", components=0):
    shape = (10, 12, 14) + ((components,) if components else ())
    idx = dict(index_dimensions=1) if components else {}
    src = ps.Field.create_fixed_size("src", shape, dtype="float64", layout=layout, **idx)
    dst = ps.Field.create_fixed_size("dst", (10, 12, 14), dtype="float64", layout="fzyx")
    c = (lambda a: a(components - 1)) if components else (lambda a: a)
    rhs = c(src[1, 0, 0]) + c(src[0, -1, 0]) + c(src[0, 0, 1])
    return [ps.Assignment(dst.center, 0.5 * rhs)]


def _addresses(kernel, values):
    """Byte addresses of every access at one thread, evaluated with sympy."""
    subs = {getattr(getattr(ws, n), a): v for (n, a), v in values.items()}
    out = []
    for acc in kernel.loads + kernel.stores:
        lin = sum(sp.sympify(e).subs(subs) * s for e, s in zip(acc.index, acc.field.strides))
        out.append((acc.field.name, int(lin)))
    return sorted(out)


@pytest.fixture(scope="module")
def paper_star():
    return star3d.kernel(), star3d_by_hand.kernel()


@pytest.mark.parametrize("machine", ["A100", "V100"])
@pytest.mark.parametrize("block", [(256, 1, 4), (32, 8, 4), (1024, 1, 1), (64, 4, 2)])
def test_pystencils_25_point_star_predicts_like_the_hand_written_star(paper_star, machine, block):
    generated, by_hand = paper_star
    p, q = ws.predict(generated, machine, block), ws.predict(by_hand, machine, block)
    assert p.glups == pytest.approx(q.glups, rel=1e-12)
    assert p.limiter == q.limiter
    for key, value in p.to_dict()["volumes"].items():
        assert value == pytest.approx(q.to_dict()["volumes"][key], rel=1e-12, abs=1e-12)


def test_pystencils_star_has_the_hand_written_fields_accesses_and_domain(paper_star):
    generated, by_hand = paper_star
    assert set(generated.loads) == set(by_hand.loads)
    assert set(generated.stores) == set(by_hand.stores)
    assert generated.fields == by_hand.fields
    assert generated.domain == by_hand.domain == (640, 512, 512)
    assert generated.fp_instructions == by_hand.fp_instructions == 25


@pytest.mark.parametrize("layout", ["fzyx", "zyxf"])
def test_vector_field_contiguous_dimension_comes_first_in_both_layouts(layout):
    k = kernel_from_pystencils(_cuda(_small_star(layout, components=3)))
    src = next(a.field for a in k.loads if a.field.name == "src")
    assert src.strides[0] == 1
    assert list(src.strides) == sorted(src.strides)
    # Element (x, y, z, f) = (2, 1, 1) + thread lies at the hand-computed address.
    t = {("threadIdx", "x"): 3, ("threadIdx", "y"): 2, ("threadIdx", "z"): 1,
         ("blockIdx", "x"): 0, ("blockIdx", "y"): 0, ("blockIdx", "z"): 0,
         ("blockDim", "x"): 8, ("blockDim", "y"): 8, ("blockDim", "z"): 8}
    f = ps.Field.create_fixed_size("s", (10, 12, 14, 3), index_dimensions=1, layout=layout)
    st = f.strides
    x, y, z = 1 + 3, 1 + 2, 1 + 1
    expect = sorted(
        [("src", (x + 1) * st[0] + y * st[1] + z * st[2] + 2 * st[3]),
         ("src", x * st[0] + (y - 1) * st[1] + z * st[2] + 2 * st[3]),
         ("src", x * st[0] + y * st[1] + (z + 1) * st[2] + 2 * st[3]),
         ("dst", x + 10 * y + 120 * z)]
    )
    assert _addresses(k, t) == expect


def test_c_order_fields_map_the_contiguous_axis_to_threadidx_x():
    src = ps.Field.create_fixed_size("src", (14, 12, 10), dtype="float64")
    dst = ps.Field.create_fixed_size("dst", (14, 12, 10), dtype="float64")
    k = kernel_from_pystencils(_cuda([ps.Assignment(dst.center, src[0, 0, 1] + src[1, 0, 0])]))
    assert k.domain == (8, 10, 12)
    for acc in k.loads + k.stores:
        assert acc.field.shape == (10, 12, 14)
        assert ws.threadIdx.x in sp.sympify(acc.index[0]).free_symbols


@pytest.mark.parametrize("scheme", ["linear1d", "blockwise4d"])
def test_other_indexing_schemes_address_the_same_points_as_linear3d(scheme):
    asm = _small_star()
    ref = extract(_cuda(asm))
    other = extract(_cuda(asm, scheme))
    assert len(other.kernel.loads) == 3 and len(other.kernel.stores) == 1
    # Global point (gx, gy, gz) of the interior, reached by each scheme's thread.
    for gx, gy, gz in [(0, 0, 0), (7, 9, 11), (3, 5, 2)]:
        lin3 = {("threadIdx", "x"): gx, ("threadIdx", "y"): gy, ("threadIdx", "z"): gz,
                ("blockIdx", "x"): 0, ("blockIdx", "y"): 0, ("blockIdx", "z"): 0,
                ("blockDim", "x"): 8, ("blockDim", "y"): 16, ("blockDim", "z"): 16}
        if scheme == "linear1d":
            t = gx + 8 * gy + 80 * gz
            th = {("threadIdx", "x"): t % 64, ("blockIdx", "x"): t // 64, ("blockDim", "x"): 64}
        else:
            th = {("threadIdx", "x"): gx, ("blockIdx", "x"): gy, ("blockIdx", "y"): gz}
        th = {**{k: 0 for k in lin3}, **th}
        assert _addresses(other.kernel, th) == _addresses(ref.kernel, lin3)
    if scheme == "linear1d":
        assert other.kernel.domain == (960, 1, 1) and other.block is None
    else:
        assert other.block == (8, 1, 1) and other.kernel.domain == (80, 12, 1)


def test_blockwise4d_kernel_predicts_with_its_own_block_only():
    from warpspeed.pystencils import predict

    k = _cuda(_small_star(), "blockwise4d")
    assert predict(k, "A100", (8, 1, 1)).glups > 0
    with pytest.raises(ws.LaunchError, match=r"fixes the block to \(8, 1, 1\)"):
        predict(k, "A100", (32, 1, 1))


def test_gridstrided_scheme_is_rejected_as_a_loop_with_dynamic_bounds():
    with pytest.raises(UnsupportedKernelError, match="loop .*dynamic bounds"):
        kernel_from_pystencils(_cuda(_small_star(), "gridstrided_linear3d"))


def test_cpu_target_kernel_is_rejected():
    k = ps.create_kernel(_small_star(), ps.CreateKernelConfig(target=ps.Target.CPU, jit=ps.no_jit))
    with pytest.raises(UnsupportedKernelError, match="CPU target"):
        kernel_from_pystencils(k)


def test_symbolic_field_sizes_are_rejected():
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    k = _cuda([ps.Assignment(dst.center, src[1, 0, 0])])
    with pytest.raises(UnsupportedKernelError, match="symbolic shape"):
        kernel_from_pystencils(k)


def test_data_dependent_index_is_rejected_naming_the_load():
    idx = ps.Field.create_fixed_size("idx", (10, 12, 14), dtype="int64")
    s = ps.Field.create_fixed_size("s", (10, 12, 14), field_type=ps.FieldType.CUSTOM)
    d = ps.Field.create_fixed_size("d", (10, 12, 14))
    i = ps.TypedSymbol("i", "int64")
    asm = [ps.Assignment(i, idx.center), ps.Assignment(d.center, s.absolute_access((i, 1, 1), ()))]
    with pytest.raises(UnsupportedKernelError, match="data-dependent index.*_data_idx"):
        kernel_from_pystencils(_cuda(asm, ghost_layers=1))


def test_not_a_pystencils_kernel_is_a_kernel_error():
    with pytest.raises(ws.KernelError, match="pystencils.create_kernel"):
        kernel_from_pystencils(object())


def test_base_offsets_are_applied_and_unknown_names_rejected():
    k = _cuda(_small_star())
    got = kernel_from_pystencils(k, base_offsets={"src": 8})
    assert {f.name: f.base_offset for f in got.fields} == {"src": 8, "dst": 0}
    with pytest.raises(ws.KernelError, match="base_offsets names fields"):
        kernel_from_pystencils(k, base_offsets={"nope": 8})


def test_fp_instructions_contract_multiply_add_pairs():
    # dst = 0.5 * (a + b + c): two adds and one multiply, nothing to fuse.
    assert kernel_from_pystencils(_cuda(_small_star())).fp_instructions == 3
    src = ps.Field.create_fixed_size("src", (10, 12, 14), layout="fzyx")
    dst = ps.Field.create_fixed_size("dst", (10, 12, 14), layout="fzyx")
    fma = [ps.Assignment(dst.center, 2.0 * src[1, 0, 0] + src[-1, 0, 0])]
    assert kernel_from_pystencils(_cuda(fma)).fp_instructions == 1
