"""The ready-made stencils: access counts per lattice update checked by
hand, and the alignment convention (MODEL.md §1)."""

import inspect
from collections import Counter

import pytest

import warpspeed as ws
from stencils import allen_cahn_d3q15, box3d, copy3d, lbm_d3q19, star2d, star3d
from tests.slow import slow

SMALL = (32, 16, 16)


@pytest.fixture(scope="module")
def lbm():
    return lbm_d3q19.kernel(shape=SMALL)


@pytest.fixture(scope="module")
def allen_cahn():
    return allen_cahn_d3q15.kernel(shape=SMALL)


def _per_field(kernel):
    loads = Counter(a.field.name for a in kernel.loads)
    stores = Counter(a.field.name for a in kernel.stores)
    return {f.name: (loads[f.name], stores[f.name]) for f in kernel.fields}


@pytest.mark.parametrize("radius, loads", [(1, 7), (2, 13), (4, 25)])
def test_star3d_loads_6_radius_plus_1_points_and_stores_one(radius, loads):
    k = star3d.kernel(radius=radius, shape=SMALL)
    assert _per_field(k) == {"src": (loads, 0), "dst": (0, 1)}
    assert k.domain == SMALL


def test_lbm_d3q19_pulls_19_populations_and_stores_19(lbm):
    assert _per_field(lbm) == {"pdfs": (19, 0), "pdfs_tmp": (0, 19)}
    # Pull scheme: population q comes from the neighbour against direction q.
    offsets = {tuple(int(e.subs({s: 0 for s in e.free_symbols})) for e in a.index[:3])
               for a in lbm.loads}
    assert len(offsets) == 19


@slow
def test_allen_cahn_d3q15_accesses_match_the_module_docstring(allen_cahn):
    assert _per_field(allen_cahn) == allen_cahn_d3q15.ACCESSES
    assert (len(allen_cahn.loads), len(allen_cahn.stores)) == (25, 16)
    assert allen_cahn.fp_instructions > 100


def test_small_stencils_have_their_hand_counted_accesses():
    assert _per_field(star2d.kernel(shape=(64, 64))) == {"src": (5, 0), "dst": (0, 1)}
    assert _per_field(box3d.kernel(shape=SMALL)) == {"src": (27, 0), "dst": (0, 1)}
    assert _per_field(copy3d.kernel(shape=SMALL)) == {"src": (1, 0), "dst": (0, 1)}


def test_default_alignment_puts_the_first_interior_point_on_128_bytes():
    k = star3d.kernel(radius=4, shape=SMALL)
    for f in k.fields:
        first = 8 * 4 * (f.strides[0] + f.strides[1] + f.strides[2])
        assert (f.base_offset + first) % 128 == 0


def test_alignment_can_give_the_base_pointer_offset(lbm):
    k = star3d.kernel(radius=4, shape=SMALL, alignment=0)
    assert {f.base_offset for f in k.fields} == {0}
    assert {f.base_offset for f in star3d.kernel(shape=SMALL, alignment="8").fields} == {8}
    with pytest.raises(ws.KernelError, match="alignment"):
        star3d.kernel(shape=SMALL, alignment="middle")


@pytest.mark.parametrize(
    "module", [star3d, star2d, box3d, copy3d, lbm_d3q19, allen_cahn_d3q15]
)
def test_stencil_parameters_are_simple_annotated_keywords(module):
    sig = inspect.signature(module.kernel)
    assert "alignment" in sig.parameters and module.kernel.__doc__
    for p in sig.parameters.values():
        assert p.kind is p.KEYWORD_ONLY or p.default is not p.empty
        assert p.annotation in ("int", "int | str", "tuple[int, int, int]", "tuple[int, int]",
                                "str")


@pytest.mark.parametrize(
    "module", [star3d, star2d, box3d, copy3d, lbm_d3q19, pytest.param(allen_cahn_d3q15, marks=slow)]
)
def test_pystencils_stencils_are_generated_for_the_target_they_are_given(module):
    shape = SMALL[:2] if module is star2d else (16, 8, 8)
    assert module.kernel(shape=shape).target == "CUDA"  # the default
    hip = module.kernel(shape=shape, target="hip")
    assert hip.target == "HIP" and hip == module.kernel(shape=shape, target="CUDA")
    with pytest.raises(ws.KernelError, match="target must be one of cuda, hip, got 'sycl'"):
        module.kernel(shape=shape, target="sycl")


def test_lbm_stores_19_doubles_per_update_up_to_partial_sectors(lbm):
    # 32 interior doubles per row touch 8 or, unaligned, 9 sectors of 32 B.
    p = ws.predict(lbm, "A100", (32, 4, 4))
    assert 19 * 8 <= p.volumes.l2_store <= 19 * 8 * 9 / 8
    assert 19 * 8 <= p.volumes.dram_store <= 19 * 8 * 9 / 8


@pytest.mark.parametrize("module, kwargs, match", [
    ("streams3d", {"fields": 0}, "fields must be a whole number from 1 to 64, got 0"),
    ("streams3d", {"fields": True}, "fields must be a whole number"),
    ("streams3d", {"precision": 16}, r"precision must be 32 or 64 \(bits\), got 16"),
    ("streams3d", {"shift": "w"}, "shift must be one of .* got 'w'"),
    ("streams3d", {"fields": 20, "shift": "d3q19"}, "d3q19: at most 19 fields"),
    ("lbm_d3q19", {"precision": 16}, r"precision must be 32 or 64 \(bits\), got 16"),
    ("lbm_d3q19", {"kernel_type": "push"}, "kernel_type must be one of .* got 'push'"),
])
def test_the_stream_and_lbm_variants_refuse_bad_parameters_by_name(module, kwargs, match):
    # checked before anything is generated: no lbmpy rule is derived for these
    import importlib

    with pytest.raises(ws.KernelError, match=match):
        importlib.import_module(f"stencils.{module}").kernel(shape=(8, 8, 8), **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"radius": 0}, "radius must be at least 1"),
    ({"shape": (8, 8)}, "shape must be 3 positive integers"),
    ({"shape": (8, 0, 8)}, "shape must be 3 positive integers"),
    ({"alignment": "foo"}, "alignment must be 'interior' or a byte offset"),
])
def test_the_hand_written_star_refuses_bad_parameters_by_name(kwargs, match):
    from stencils import star3d_by_hand

    with pytest.raises(ws.KernelError, match=match):
        star3d_by_hand.kernel(**kwargs)
