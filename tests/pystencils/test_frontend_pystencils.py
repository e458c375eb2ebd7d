"""The pystencils frontend against independent truth: a hand-written kernel,
addresses evaluated by hand, hand-counted FP work, and clear errors for what
it cannot model (MODEL.md §1)."""

import dataclasses

import pystencils as ps
import pytest
import sympy as sp

import warpspeed as ws
from stencils import star3d, star3d_by_hand
from warpspeed.pystencils import (
    CpuTargetError,
    ExtractOptions,
    IndirectAccessError,
    MissingShapeError,
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
    """Given the generated kernel's register count (its load rounds, MODEL.md
    §11, need a count of the compiled code, which the description lacks)."""
    generated, by_hand = paper_star
    p = ws.predict(generated, machine, block)
    counted = dataclasses.replace(by_hand, registers=p.registers,
                                  registers_source=p.registers_source)
    q = ws.predict(counted, machine, block)
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
        assert other.kernel.domain == (960, 1, 1) and other.kernel.fixed_block is None
    else:
        # threadIdx.x walks the 8 interior x points, blockIdx.x/y the 10 y and 12 z points
        assert other.kernel.fixed_block == other.block == (8, 1, 1)
        assert other.kernel.domain == (80, 12, 1)


def test_blockwise4d_kernel_predicts_with_its_own_block_only():
    from warpspeed.pystencils import predict

    k = _cuda(_small_star(), "blockwise4d")
    assert predict(k, "A100", (8, 1, 1)).glups > 0
    with pytest.raises(ws.LaunchError, match=r"fixes the block to \(8, 1, 1\)"):
        predict(k, "A100", (32, 1, 1))


def test_cpu_target_kernel_is_rejected():
    k = ps.create_kernel(_small_star(), ps.CreateKernelConfig(target=ps.Target.CPU, jit=ps.no_jit))
    with pytest.raises(CpuTargetError, match="CPU target"):
        kernel_from_pystencils(k)


def test_data_dependent_index_is_rejected_naming_the_field_and_the_load():
    idx = ps.Field.create_fixed_size("idx", (10, 12, 14), dtype="int64")
    s = ps.Field.create_fixed_size("s", (10, 12, 14), field_type=ps.FieldType.CUSTOM)
    d = ps.Field.create_fixed_size("d", (10, 12, 14))
    i = ps.TypedSymbol("i", "int64")
    asm = [ps.Assignment(i, idx.center), ps.Assignment(d.center, s.absolute_access((i, 1, 1), ()))]
    with pytest.raises(IndirectAccessError, match="field s .*depends on data.*_data_idx"):
        kernel_from_pystencils(_cuda(asm, ghost_layers=1))


def test_not_a_pystencils_kernel_is_a_kernel_error():
    with pytest.raises(ws.KernelError, match="pystencils.create_kernel"):
        kernel_from_pystencils(object())


def test_base_offsets_are_applied_and_unknown_names_rejected():
    k = _cuda(_small_star())
    got = kernel_from_pystencils(k, ExtractOptions(base_offsets={"src": 8}))
    assert {f.name: f.base_offset for f in got.fields} == {"src": 8, "dst": 0}
    with pytest.raises(ws.KernelError, match="base_offsets names fields"):
        kernel_from_pystencils(k, ExtractOptions(base_offsets={"nope": 8}))


def test_fp_instructions_contract_multiply_add_pairs():
    # dst = 0.5 * (a + b + c): two adds and one multiply, nothing to fuse.
    assert kernel_from_pystencils(_cuda(_small_star())).fp_instructions == 3
    src = ps.Field.create_fixed_size("src", (10, 12, 14), layout="fzyx")
    dst = ps.Field.create_fixed_size("dst", (10, 12, 14), layout="fzyx")
    fma = [ps.Assignment(dst.center, 2.0 * src[1, 0, 0] + src[-1, 0, 0])]
    assert kernel_from_pystencils(_cuda(fma)).fp_instructions == 1


def test_fp_work_is_counted_per_class_by_hand():
    # sqrt(a) / b + exp(c) + d**2: pystencils emits d*d + sqrt(a) * (1.0 / b) + exp(c):
    # d*d fuses into the first add (FMA); sqrt(a) * rcp stays a multiply; one more add.
    f, g = ps.fields("f, g: double[10, 12, 14]", layout="fzyx")
    rhs = sp.sqrt(f[1, 0, 0]) / f[-1, 0, 0] + sp.exp(f[0, 1, 0]) + f[0, 0, 1] ** 2
    k = kernel_from_pystencils(_cuda([ps.Assignment(g.center, rhs)]))
    assert dict(k.fp_ops) == {"fma": 3, "div": 1, "sqrt": 1, "exp": 1}
    assert k.fp_instructions == 6
    assert k.precision == 64


def test_integer_powers_are_multiplications_and_math_calls_have_their_class():
    # a**3 -> a*a*a: (a*a) stays, (a*a)*a fuses into the add with pow(b, 0.5) -> 1 FMA;
    # + c and + sin(d) are two adds: fma = 1 + 1 + 2 = 4; pow(b, 0.5) stays a pow.
    f, g = ps.fields("f, g: double[10, 12, 14]", layout="fzyx")
    rhs = f[1, 0, 0] ** 3 + f[-1, 0, 0] + sp.sin(f[0, 1, 0]) + f[0, -1, 0] ** 0.5
    k = kernel_from_pystencils(_cuda([ps.Assignment(g.center, rhs)]))
    assert dict(k.fp_ops) == {"fma": 4, "pow": 1, "trig": 1}


def test_float32_arithmetic_has_precision_32():
    a, b = ps.fields("a, b: float32[10, 12, 14]", layout="fzyx")
    k = kernel_from_pystencils(_cuda([ps.Assignment(b.center, 2 * a[1, 0, 0] + a[-1, 0, 0])]))
    assert k.precision == 32 and dict(k.fp_ops) == {"fma": 1}
    assert {f.itemsize for f in k.fields} == {4}


def test_constant_expressions_are_folded_not_counted():
    # (f[1] + f[-1]) / 3 is emitted as c * f[1] + c * f[-1] with c = 1.0 / 3.0 declared
    # once; the division of two constants is the compiler's: one multiply + one FMA.
    f, g = ps.fields("f, g: double[10, 12, 14]", layout="fzyx")
    k = kernel_from_pystencils(_cuda([ps.Assignment(g.center, (f[1, 0, 0] + f[-1, 0, 0]) / 3)]))
    assert dict(k.fp_ops) == {"fma": 2}


def test_strided_slice_is_a_sparse_iteration_space_not_a_fold():
    # x from 1 to 14 step 2: threads 0..6 update cells 1, 3, ..., 13, one cell each.
    src, dst = ps.fields("src, dst: double[16, 12, 10]", layout="fzyx")
    asm = [ps.Assignment(dst.center, (src[1, 0, 0] + src[-1, 0, 0] + src[0, 1, 0]) / 3)]
    ex = extract(_cuda(asm, iteration_slice=ps.make_slice[1:-1:2, 1:-1, 1:-1]))
    k = ex.kernel
    assert k.fold == (1, 1, 1) and k.lups_per_thread == 1
    assert ex.counter_steps == (2, 1, 1)
    assert k.domain == (7, 10, 8)
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    (store,) = k.stores
    assert [sp.expand(e - h) for e, h in zip(store.index, (2 * x + 1, y + 1, z + 1))] == [0] * 3
    xs = sorted(sp.expand(a.index[0] - 2 * x) for a in k.loads)
    assert xs == [0, 1, 2]


def test_strided_slice_moves_whole_sectors_per_update():
    # stride 2 over doubles: each 32 B sector holds two updated cells -> 16 B stored per
    # update (the old frontend took the stride for a fold and predicted 8 B)
    u, v = ps.fields("u, v: double[1026, 258, 130]", layout="fzyx")
    asm = [ps.Assignment(v.center, 2 * u.center)]
    k = kernel_from_pystencils(_cuda(asm, iteration_slice=ps.make_slice[2:-2:2, 1:-1, 1:-1]))
    p = ws.predict(k, "A100", (128, 2, 2))
    assert p.volumes.dram_store == pytest.approx(16.0, rel=0.1)
    assert p.volumes.dram_load == pytest.approx(16.0, rel=0.1)


def _lbm_rule(layout, shape):
    from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Method, Stencil, create_lb_update_rule

    q = 19
    if shape is None:
        pdfs, tmp = ps.fields(f"pdfs({q}), pdfs_tmp({q}): double[3D]", layout=layout)
    else:
        pdfs, tmp = ps.fields(f"pdfs({q}), pdfs_tmp({q}): double[{shape}]", layout=layout)
    stencil = LBStencil(Stencil.D3Q19)
    cfg = LBMConfig(stencil=stencil, method=Method.SRT, relaxation_rate=sp.Symbol("omega"))
    opt = LBMOptimisation(symbolic_field=pdfs, symbolic_temporary_field=tmp)
    return create_lb_update_rule(lbm_config=cfg, lbm_optimisation=opt), stencil


@pytest.mark.parametrize("symbolic", [False, True])
def test_zyxf_d3q19_pdfs_have_the_direction_as_contiguous_dimension(symbolic):
    rule, stencil = _lbm_rule("zyxf", None if symbolic else "12, 10, 8")
    kf = _cuda(rule)
    opts = ExtractOptions(shape=(12, 10, 8), layout="zyxf") if symbolic else None
    k = kernel_from_pystencils(kf, opts)
    pdfs = next(a.field for a in k.loads if a.field.name == "pdfs")
    assert pdfs.shape == (19, 12, 10, 8)
    assert pdfs.strides == (1, 19, 19 * 12, 19 * 12 * 10)
    assert len(k.loads) == len(k.stores) == 19
    # pull scheme: direction d is read from the neighbour at -c_d, written at the centre
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    centre = (x + 1, y + 1, z + 1)
    got = {(int(a.index[0]), tuple(sp.expand(e - c) for e, c in zip(a.index[1:], centre)))
           for a in k.loads}
    assert got == {(d, tuple(-c for c in stencil[d])) for d in range(19)}
    assert {int(a.index[0]) for a in k.stores} == set(range(19))


def test_symbolic_index_fields_default_to_fzyx_for_x_contiguous_layouts():
    rule, _ = _lbm_rule("fzyx", None)
    k = kernel_from_pystencils(_cuda(rule), ExtractOptions(shape=(12, 10, 8)))
    pdfs = next(a.field for a in k.loads if a.field.name == "pdfs")
    assert pdfs.shape == (12, 10, 8, 19) and pdfs.strides == (1, 12, 120, 960)


def test_lbmpy_default_fields_share_strides_and_predict_like_explicit_fields():
    # without explicit fields lbmpy makes src and dst, and pystencils gives dst
    # src's size and stride parameters (it checks at launch that they agree)
    from lbmpy import LBMConfig, LBStencil, Method, Stencil, create_lb_update_rule

    cfg = LBMConfig(stencil=LBStencil(Stencil.D3Q19), method=Method.SRT,
                    relaxation_rate=sp.Symbol("omega"))
    kf = _cuda(create_lb_update_rule(lbm_config=cfg))
    shared = {p.name for p in kf.parameters if len(p.properties) == 2}
    assert "_stride_src_3" in shared  # the construct under test
    got = kernel_from_pystencils(kf, ExtractOptions(shape=(12, 10, 8)))
    rule, _ = _lbm_rule("fzyx", "12, 10, 8")
    fixed = kernel_from_pystencils(_cuda(rule))
    rename = {"src": "pdfs", "dst": "pdfs_tmp"}

    def named(accesses):
        return {(rename[a.field.name], a.field.shape, a.field.strides, a.index) for a in accesses}

    assert named(got.loads) == {(a.field.name, a.field.shape, a.field.strides, a.index)
                                for a in fixed.loads}
    assert named(got.stores) == {(a.field.name, a.field.shape, a.field.strides, a.index)
                                 for a in fixed.stores}
    assert got.domain == fixed.domain == (10, 8, 6)
    with pytest.raises(ws.KernelError, match=r"share the size parameter _size_src_\d.*one shape"):
        kernel_from_pystencils(kf, ExtractOptions(shape={"src": (12, 10, 8), "dst": (12, 10, 9)}))


@pytest.mark.parametrize("name", ["zyxf", "fzyx", "aos", "soa"])
def test_an_index_layout_name_for_fields_without_index_dimensions_is_their_spatial_order(name):
    # one layout for a kernel of vector and scalar fields (lbmpy's zyxf PDFs
    # with a density output): for the scalar fields only the spatial order counts
    src, dst = ps.fields("src, dst: double[3D]", layout="zyxf")
    kf = _cuda([ps.Assignment(dst.center, src[1, 0, 0] + src[0, 0, -1])])
    got = kernel_from_pystencils(kf, ExtractOptions(shape=(10, 12, 14), layout=name))
    plain = kernel_from_pystencils(kf, ExtractOptions(shape=(10, 12, 14)))
    assert got.fields == plain.fields
    assert set(got.loads) == set(plain.loads) and set(got.stores) == set(plain.stores)
    assert plain.fields[0].strides == (1, 10, 120)
    with pytest.raises(ws.KernelError, match=r"layout 'c' for field (src|dst) contradicts"):
        kernel_from_pystencils(kf, ExtractOptions(shape=(10, 12, 14), layout="c"))


def _vector_read(layout="zyxf", spec="v(4): double[3D]"):
    v = ps.fields(spec, layout=layout)
    s = ps.fields("s: double[" + spec.split("[")[1], layout=layout)
    return [ps.Assignment(s.center, v(0) if v.index_dimensions == 1 else v(0, 1))]


def test_an_assumed_index_layout_is_noted_naming_the_field_and_the_option():
    # pystencils drops the index layout of a symbolic-size field: v is read as fzyx
    # (8 B per update, a row of v(0) per warp) unless zyxf is stated (4 doubles per cell,
    # 32 B apart: a sector per update)
    from warpspeed.pystencils import predict

    cfg = ps.CreateKernelConfig(**CUDA)
    opts = ExtractOptions(shape=(258,) * 3)
    assumed = predict(_vector_read(), "A100", (64, 2, 2), config=cfg, options=opts)
    [note] = [n for n in assumed.notes if n.startswith("field v:")]
    assert "4 values per cell were assumed stored one array per value" in note
    assert "layout 'fzyx'" in note and "ExtractOptions(layout={'v': 'zyxf'})" in note
    assert assumed.volumes.dram_load == pytest.approx(8, rel=0.02)
    stated = predict(_vector_read(), "A100", (64, 2, 2), config=cfg,
                     options=ExtractOptions(shape=(258,) * 3, layout={"v": "zyxf"}))
    assert stated.volumes.dram_load == pytest.approx(32, rel=0.02)
    for layout in ("zyxf", "fzyx"):
        ex = extract(_cuda(_vector_read()), ExtractOptions(shape=(258,) * 3, layout=layout))
        assert not [n for n in ex.notes if "index dimensions" in n]
    fixed = extract(_cuda(_vector_read("fzyx", spec="v(4): double[20, 20, 20]")))
    assert not [n for n in fixed.notes if "index dimensions" in n]
    a, b = ps.fields("a, b: double[3D]")
    scalar = extract(_cuda([ps.Assignment(b.center, a.center)]),
                     ExtractOptions(shape=(20, 20, 20)))
    assert scalar.notes == ()


def test_an_assumed_c_order_index_layout_is_noted_with_its_soa_tuple():
    ex = extract(_cuda(_vector_read(layout="c")), ExtractOptions(shape=(20, 22, 24)))
    [note] = [n for n in ex.notes if n.startswith("field v:")]
    assert "assumed stored adjacent per cell (an array of structures), layout 'c'" in note
    assert "ExtractOptions(layout={'v': (3, 0, 1, 2)})" in note
    k = kernel_from_pystencils(_cuda(_vector_read(layout="c")),
                               ExtractOptions(shape=(20, 22, 24), layout={"v": (3, 0, 1, 2)}))
    v = next(a.field for a in k.loads if a.field.name == "v")
    assert v.strides == (1, 24, 22 * 24, 20 * 22 * 24)  # z, y, x, then the 4 values


def test_a_tensor_field_takes_its_array_of_structures_layout_as_a_tuple():
    spec = "T(3, 3): double[3D]"
    kf = _cuda(_vector_read(layout="fzyx", spec=spec))
    with pytest.raises(ws.KernelError,
                       match=r"^layout 'zyxf' for field T: .*at most one index dimension, T has "
                             r"2: give the order of its 5 dimensions as a tuple, slowest first "
                             r"\(x, y, z = 0, 1, 2, the index dimensions 3, 4\), e\.g\. "
                             r"\(2, 1, 0, 3, 4\) for an array of structures"):
        extract(kf, ExtractOptions(shape=(10, 12, 14), layout="zyxf"))
    # a 3x3 tensor per cell, row-major, cells x fastest: j stride 1, i 3, x 9, y 9 nx, ...
    k = kernel_from_pystencils(kf, ExtractOptions(shape=(10, 12, 14), layout=(2, 1, 0, 3, 4)))
    t = next(a.field for a in k.loads if a.field.name == "T")
    assert t.shape == (3, 3, 10, 12, 14) and t.strides == (1, 3, 9, 90, 1080)
    s = next(a.field for a in k.stores if a.field.name == "s")
    assert s.strides == (1, 10, 120)  # a tuple for all fields leaves the 3D ones alone
    with pytest.raises(ws.KernelError, match=r"^layout \(2, 1, 0, 3, 3\) for field T: give"):
        extract(kf, ExtractOptions(shape=(10, 12, 14), layout={"T": (2, 1, 0, 3, 3)}))
    with pytest.raises(ws.KernelError, match=r"contradicts its spatial layout"):
        extract(kf, ExtractOptions(shape=(10, 12, 14), layout=(0, 1, 2, 3, 4)))


def test_symbolic_field_sizes_need_a_shape_naming_the_size_symbols():
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    asm = [ps.Assignment(dst.center, src[1, 0, 0] + src[0, 0, -1])]
    with pytest.raises(MissingShapeError, match=r"_size_src_0.*shape=\(nx, ny, nz\)"):
        kernel_from_pystencils(_cuda(asm))
    got = kernel_from_pystencils(_cuda(asm), ExtractOptions(shape=(10, 12, 14)))
    fs, fd = ps.fields("src, dst: double[10, 12, 14]", layout="fzyx")
    fixed = kernel_from_pystencils(_cuda([ps.Assignment(fd.center, fs[1, 0, 0] + fs[0, 0, -1])]))
    assert got.fields == fixed.fields
    assert set(got.loads) == set(fixed.loads) and set(got.stores) == set(fixed.stores)
    assert got.domain == fixed.domain == (8, 10, 12)
    with pytest.raises(MissingShapeError, match="has 2 extents"):
        kernel_from_pystencils(_cuda(asm), ExtractOptions(shape=(10, 12)))


def test_load_of_a_value_the_thread_stored_is_not_a_load():
    # g = 2 f; f = g + 1: g is re-read at the address just stored (a register)
    f, g = ps.fields("f, g: double[10, 12, 14]", layout="fzyx")
    ex = extract(_cuda([ps.Assignment(g.center, 2 * f.center),
                        ps.Assignment(f.center, g.center + 1)]))
    assert [a.field.name for a in ex.kernel.loads] == ["f"]
    assert sorted(a.field.name for a in ex.kernel.stores) == ["f", "g"]
    assert any("served from registers" in n for n in ex.notes)


def test_extract_without_fold_is_one_update_per_thread():
    kf = star3d.generate(radius=1, shape=(16, 16, 16), fold=(1, 1, 2))[1]
    assert extract(kf).kernel.fold == (1, 1, 1)
    assert extract(kf, fold=(1, 1, 2)).kernel.fold == (1, 1, 2)
    assert extract(kf).counter_steps == (1, 1, 2)


def test_staggered_field_halo_indices_are_exact_and_the_base_pointer_is_inner():
    # j (Face3D, one low ghost layer per axis) on 8 x 6 x 4 inner cells: allocation
    # 9 x 7 x 5 x 3 faces, x contiguous; its base pointer is inner cell (0, 0, 0) =
    # allocation (1, 1, 1), 1 + 9 + 63 = 73 doubles = 584 B past element 0.
    from pystencils import flow

    n = ps.fields("n: double[3D]", layout="fzyx")
    j = ps.StaggeredField("j", ps.Staggering.Face3D, (), dtype="float64")

    @flow.block
    def flux(b):
        b.store[j["E"]] = n[0, 0, 0] - n[-1, 0, 1]

    k = kernel_from_pystencils(ps.create_kernel(flux, ps.CreateKernelConfig(**CUDA)),
                               ExtractOptions(shape=(8, 6, 4)))
    (store,) = k.stores
    assert store.field.shape == (9, 7, 5, 3) and store.field.strides == (1, 9, 63, 315)
    assert store.field.base_offset == -584 % 128
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    assert [sp.expand(e) for e in store.index] == [x + 1, y + 1, z + 1, 1]  # "E" is face 1
    # n has no ghost layers here: its halo neighbour is at index -1, not wrapped around
    assert {tuple(sp.expand(e) for e in a.index) for a in k.loads} == {(x, y, z),
                                                                        (x - 1, y, z + 1)}
    assert k.domain == (8, 6, 4)


def test_a_configuration_where_predict_takes_the_machine_is_refused_with_the_call():
    """``wps.create_kernel(assignments, config)`` takes the configuration
    second, ``wps.predict`` the machine: a configuration passed there is a
    MachineError that shows the call (not an OSError from looking for a file
    named after the configuration), and nothing is generated first."""
    import warpspeed.pystencils as wps

    cfg = ps.CreateKernelConfig(**CUDA)
    with pytest.raises(ws.MachineError, match=r"config=: predict\(assignments, 'H200'"):
        wps.predict(_small_star(), cfg)
    p = wps.predict(_small_star(), "H200", (64, 2, 1), config=cfg)
    assert p.machine == "H200" and p.glups > 0


@pytest.mark.parametrize("call, error, match", [
    (lambda a, c: wps_create(a, "H200"), TypeError,
     r"config must be a pystencils CreateKernelConfig, got str 'H200'; create_kernel takes the "
     r"machine as machine="),
    (lambda a, c: wps_create(a, c, machine="H200", threads=300), ws.LaunchError,
     r"threads: 300 is not a power of two"),
    (lambda a, c: wps_create(a, c, machine="H200", folds=(1, 2, 1)), ws.LaunchError,
     r"folds is a list of folds"),
    (lambda a, c: wps_generate(a, "H200"), TypeError,
     r"config must be a pystencils CreateKernelConfig, got str 'H200'$"),
    (lambda a, c: wps_predict(a, "H200", (64, 2, 1), config="H200"), TypeError,
     r"config must be a pystencils CreateKernelConfig, got str 'H200'$"),
    (lambda a, c: wps_rank(a, "H200"), TypeError,
     r"rank\(\) ranks extracted variants: .* got Assignment .*create_kernel\(assignments"),
    (lambda a, c: wps_predict(a, "H200", 256, config=c), ws.LaunchError,
     r"block must be three integers \(x, y, z\), got 256"),
    (lambda a, c: wps_predict(a, "H200", "256,1,1", config=c), ws.LaunchError,
     r"block must be three integers"),
])
def test_the_hooks_refuse_mixed_up_arguments_before_generating(call, error, match):
    """Each ended in a message about something else (pystencils' AttributeError
    on a string configuration, every fold skipped for a count create_kernel
    never ranks, 'int object is not iterable') or in a deep TypeError."""
    cfg = ps.CreateKernelConfig(**CUDA)
    with pytest.raises(error, match=match):
        call(_small_star(), cfg)


def test_create_kernel_still_pads_a_short_fold():
    ranked = wps_create(_small_star(), ps.CreateKernelConfig(**CUDA), machine="H200",
                        threads=64, folds=[(1, 2)], jobs=1)
    assert {p.fold for p in ranked.ranking} == {(1, 2, 1)}


def wps_create(*args, **kwargs):
    import warpspeed.pystencils as wps

    return wps.create_kernel(*args, **kwargs)


def wps_generate(*args, **kwargs):
    import warpspeed.pystencils as wps

    return wps.generate(*args, **kwargs)


def wps_rank(*args, **kwargs):
    import warpspeed.pystencils as wps

    return wps.rank(*args, **kwargs)


def wps_predict(*args, **kwargs):
    import warpspeed.pystencils as wps

    return wps.predict(*args, **kwargs)


def test_the_automatic_gpu_target_is_the_machines():
    """``target=ps.Target.GPU`` asks the installed cupy for CUDA or HIP, and
    ended in pystencils' "Cannot infer GPU target since cupy is not
    installed"; predicting for a machine, it is that machine's target, and
    the prediction says so."""
    import warpspeed.pystencils as wps

    auto = ps.CreateKernelConfig(target=ps.Target.GPU, jit=ps.no_jit)
    for machine, target in (("H200", ps.Target.CUDA), ("MI210", ps.Target.HIP)):
        fixed = ps.CreateKernelConfig(target=target, jit=ps.no_jit)
        p = wps.predict(_small_star(), machine, (64, 2, 1), config=auto)
        q = wps.predict(_small_star(), machine, (64, 2, 1), config=fixed)
        assert p.glups == q.glups and p.volumes == q.volumes
        assert p.notes[0].startswith(f"target=Target.GPU: generated for {target.name}, the "
                                     f"target of {machine}")
    try:
        ps.Target.auto_gpu()
    except RuntimeError:  # no cupy here: generating alone cannot choose
        with pytest.raises(ws.KernelError, match="Target.GPU picks CUDA or HIP from the "
                                                 "installed cupy, and cupy is not installed"):
            wps.generate(_small_star(), auto)
