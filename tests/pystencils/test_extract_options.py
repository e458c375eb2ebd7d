"""The pystencils front end's options object, ``wps.ExtractOptions``
(issue 36): each field checked when it is made, with a one-line error
naming it; the same options given the old way, as keywords of ``extract``,
``kernel_from_pystencils``, ``predict``, ``rank`` and ``create_kernel``,
give the same kernels and predictions with a DeprecationWarning naming the
replacement. The old spelling's results are the independent truth here:
the suite before the options object checked them against hand counts."""

from __future__ import annotations

import pickle
import re
import warnings
from dataclasses import FrozenInstanceError, fields, replace

import pystencils as ps
import pytest

import warpspeed as ws
import warpspeed.pystencils as wps

CUDA = dict(target=ps.Target.CUDA, jit=ps.no_jit)


def _symbolic_star():
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    return [ps.Assignment(dst.center, (src[1, 0, 0] + src[-1, 0, 0] + src[0, 0, 1]) / 3)]


def _symbolic_kernel():
    return ps.create_kernel(_symbolic_star(), ps.CreateKernelConfig(**CUDA))


def _param_kernel():
    f, g = ps.fields("f, g: double[20, 12, 14]", layout="fzyx")
    sx, ex = ps.TypedSymbol("sx", "int64"), ps.TypedSymbol("ex", "int64")
    cfg = ps.CreateKernelConfig(**CUDA, iteration_slice=ps.make_slice[sx:ex, 1:-1, 1:-1])
    return ps.create_kernel([ps.Assignment(g.center, f[1, 0, 0])], cfg)


def _old(function, *args, **kwargs):
    """``function`` called the old way: its DeprecationWarning names the
    keywords given and the replacement, and points at this caller."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = function(*args, **kwargs)
    (w,) = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    text = str(w.message)
    assert "is deprecated: pass options=warpspeed.pystencils.ExtractOptions(" in text
    named = [f.name for f in fields(wps.ExtractOptions) if f.name in kwargs]
    assert all(f"{n}=..." in text for n in named), text
    assert w.filename == __file__
    return out


# ---------------------------------------------------------------- the object


def test_defaults_are_the_old_keywords_defaults():
    opts = wps.ExtractOptions()
    assert (opts.shape, opts.layout, opts.base_offsets, opts.params, opts.grid_points,
            opts.index_list, opts.list_order, opts.registers, opts.model, opts.fits) == (
        None, None, None, None, None, None, "sorted", None, "latency", None)


def test_options_are_frozen_comparable_and_travel_to_workers():
    opts = wps.ExtractOptions(shape=(66, 34, 34), params={"sx": 1}, grid_points=(2,))
    with pytest.raises(FrozenInstanceError):
        opts.shape = (1, 1, 1)  # type: ignore[misc]
    assert opts.grid_points == (2, 1, 1)  # padded as extract pads it
    assert pickle.loads(pickle.dumps(opts)) == opts
    assert replace(opts, model="paper") != opts


@pytest.mark.parametrize("given, error, text", [
    ({"grid_points": (2, 0)}, ws.KernelError, "grid_points must be positive integers, got (2, 0)"),
    ({"grid_points": "2,2"}, ws.KernelError, "grid_points must be one to three integers"),
    ({"grid_points": (1, 1, 2.5)}, ws.KernelError, "grid_points must be one to three integers"),
    ({"grid_points": (4, 4, 2)}, wps.GridStridedLoopError, "32 points per thread"),
    ({"shape": "66,34,34"}, ws.KernelError, "shape must be the array extents"),
    ({"shape": (66, 0, 34)}, ws.KernelError, "shape must be positive integers"),
    ({"shape": {"src": (66, 34.5)}}, ws.KernelError, "shape of field src must be a sequence"),
    ({"layout": 3}, ws.KernelError, "layout must be a layout name"),
    ({"layout": {"T": (2, 1, "x")}}, ws.KernelError, r"a tuple of dimensions slowest first"),
    ({"base_offsets": 8}, ws.KernelError, "base_offsets must map field names to byte offsets"),
    ({"base_offsets": {"src": 8.0}}, ws.KernelError, "base_offsets['src'] must be an integer"),
    ({"params": [("sx", 1)]}, ws.KernelError, "params must be a mapping"),
    ({"params": {"sx": 2.5}}, ws.KernelError, "params['sx'] must be an integer, got 2.5"),
    ({"index_list": 0}, ws.KernelError, "index_list has no entries"),
    ({"index_list": "all"}, ws.KernelError, "index_list must be the list"),
    ({"list_order": "zigzag"}, ws.KernelError, "list_order must be one of ('sorted', 'random')"),
    ({"registers": 300}, ws.KernelError, "registers per thread must be 1..255, got 300"),
    ({"registers": "many"}, ws.KernelError, "registers must be a count (1..255), 'nvcc' or"),
    ({"model": "magic"}, ws.LaunchError, "unknown model 'magic'; the models are latency, paper"),
    ({"fits": 3}, ws.FitError, "fits must be a name in fits/"),
])
def test_a_bad_field_is_refused_when_made_naming_it(given, error, text):
    with pytest.raises(error, match=re.escape(text)) as info:
        wps.ExtractOptions(**given)
    assert "\n" not in str(info.value)


def test_extract_takes_a_count_or_the_estimate_and_never_the_placeholder():
    kf = _param_kernel()
    opts = wps.ExtractOptions(params={"sx": 3, "ex": 17})
    default = wps.extract(kf, opts).kernel
    # no machine: the estimate until a prediction counts for its machine (MODEL.md §1)
    assert default.registers == wps.registers.estimate_registers(kf)
    assert default.registers_source.startswith("estimate: no machine yet")
    assert default.register_counter is not None
    assert wps.extract(kf, replace(opts, registers="nvcc")).kernel == default  # no arch
    assert wps.extract(kf, replace(opts, registers=64)).kernel.registers == 64
    # the estimate needs no machine: extract gives the count predict gives
    estimate = wps.extract(kf, replace(opts, registers="estimate"))
    p = wps.predict(kf, "A100", (16, 2, 2), options=replace(opts, registers="estimate"))
    assert (estimate.kernel.registers, estimate.kernel.registers_source) == (
        p.registers, p.registers_source)
    assert p.registers_source.startswith("estimate") and estimate.notes


def test_options_must_be_the_options_object():
    with pytest.raises(TypeError, match="options must be a warpspeed.pystencils.ExtractOptions"):
        wps.extract(_param_kernel(), {"params": {"sx": 3, "ex": 17}})


def test_an_unknown_keyword_is_a_type_error_as_before():
    with pytest.raises(TypeError, match="extract\\(\\) got an unexpected keyword argument 'bogus'"):
        wps.extract(_param_kernel(), bogus=1)
    # kernel_from_pystencils never took index_list, and rank never took shape
    with pytest.raises(TypeError, match="unexpected keyword argument 'index_list'"):
        wps.kernel_from_pystencils(_param_kernel(), index_list=10)
    with pytest.raises(TypeError, match="unexpected keyword argument 'shape'"):
        wps.rank({}, "A100", shape=(8, 8, 8))


# ---------------------------------------------------------------- both spellings


def test_extract_old_keywords_and_options_read_the_same_kernel():
    kf = _symbolic_kernel()
    new = wps.extract(kf, wps.ExtractOptions(shape=(66, 34, 34), base_offsets={"src": 8},
                                             registers=40))
    old = _old(wps.extract, kf, shape=(66, 34, 34), base_offsets={"src": 8}, registers=40)
    assert new == old
    assert new.kernel.registers == 40 and new.kernel.domain == (64, 32, 32)
    assert {f.name: f.base_offset for f in new.kernel.fields} == {"src": 8, "dst": 0}
    same = _old(wps.kernel_from_pystencils, kf, shape=(66, 34, 34), base_offsets={"src": 8},
                registers=40)
    opts = wps.ExtractOptions(shape=(66, 34, 34), base_offsets={"src": 8}, registers=40)
    assert same == new.kernel == wps.kernel_from_pystencils(kf, opts)


def test_keywords_given_with_options_override_their_fields():
    kf = _param_kernel()
    opts = wps.ExtractOptions(params={"sx": 1, "ex": 19})
    got = _old(wps.extract, kf, opts, params={"sx": 3, "ex": 17})
    assert got.kernel.domain == (14, 10, 12)  # x from 3 to 17, as the keywords say
    assert wps.extract(kf, opts).kernel.domain == (18, 10, 12)


def test_predict_old_keywords_and_options_predict_the_same():
    asm = _symbolic_star()
    cfg = ps.CreateKernelConfig(**CUDA)
    opts = wps.ExtractOptions(shape=(66, 34, 34), registers="estimate", model="paper")
    new = wps.predict(asm, "A100", (64, 2, 2), (1, 1, 2), config=cfg, options=opts)
    old = _old(wps.predict, asm, "A100", (64, 2, 2), (1, 1, 2), config=cfg,
               shape=(66, 34, 34), registers="estimate", model="paper")
    assert new == old
    assert new.model == "paper" and new.fold == (1, 1, 2)


def test_rank_old_keywords_and_options_rank_the_same():
    ex = wps.extract(_param_kernel(), wps.ExtractOptions(params={"sx": 3, "ex": 17}))
    new = wps.rank({(1, 1, 1): ex}, "V100", 128, options=wps.ExtractOptions(model="paper"),
                   jobs=1)
    old = _old(wps.rank, {(1, 1, 1): ex}, "V100", 128, model="paper", jobs=1)
    assert new == old and {p.model for p in new} == {"paper"}
    assert new == list(ws.rank(ex.kernel, "V100", threads=128, folds=[(1, 1, 1)],
                               model="paper", jobs=1).predictions)


def test_create_kernel_old_keywords_and_options_choose_the_same():
    asm = _symbolic_star()
    cfg = ps.CreateKernelConfig(**CUDA)
    common = dict(machine="A100", threads=128, folds=[(1, 1, 1), (1, 2, 1)], jobs=1)
    opts = wps.ExtractOptions(shape=(66, 34, 34), registers=48)
    new = wps.create_kernel(asm, cfg, **common, options=opts)
    old = _old(wps.create_kernel, asm, cfg, **common, shape=(66, 34, 34), registers=48)
    assert new.ranking == old.ranking and new.skipped == old.skipped == ()
    assert new.notes == old.notes
    assert new.kernel.get_c_code() == old.kernel.get_c_code()
    assert {p.registers for p in new.ranking} == {48}


def test_an_invalid_option_is_refused_before_anything_is_generated(monkeypatch):
    from warpspeed.pystencils import hook

    monkeypatch.setattr(hook, "make_variants",
                        lambda *a, **k: pytest.fail("variants were generated"))
    with pytest.raises(ws.LaunchError, match="unknown model 'magic'") as info, \
            pytest.warns(DeprecationWarning, match="create_kernel\\(model=\\)"):
        wps.create_kernel(_symbolic_star(), ps.CreateKernelConfig(**CUDA), model="magic")
    assert not isinstance(info.value, ws.EmptyRankingError)


def test_index_list_options_reach_the_gathers():
    # the list's order matters only without the list itself: the kernel says so
    from lbmpy import Stencil

    from tests.pystencils.test_gathers import NoSlip, _boundary_kernel

    k = _boundary_kernel(NoSlip(), Stencil.D3Q19, 3)
    opts = wps.ExtractOptions(index_list=4096, list_order="random")
    new = wps.extract(k, opts)
    old = _old(wps.extract, k, index_list=4096, list_order="random")
    assert {(g.order, g.length) for g in new.kernel.gathers} == {("random", 4096)}
    assert [(g.field, g.store) for g in new.kernel.gathers] == [
        (g.field, g.store) for g in old.kernel.gathers]  # gathers compare by identity
    assert ws.predict(new.kernel, "A100", (256, 1, 1)) == ws.predict(old.kernel, "A100",
                                                                      (256, 1, 1))


def test_a_base_offset_that_splits_an_item_is_refused():
    """A double at byte offset 3 cannot be read by a GPU: the offset must be a
    multiple of the field's item size (8 B), and naming it passes."""
    kf = _symbolic_kernel()
    with pytest.raises(ws.KernelError, match=r"base_offsets\['src'\] = 3 is not a multiple "
                                             "of the field's 8-byte items"):
        wps.extract(kf, wps.ExtractOptions(shape=(66, 34, 34), base_offsets={"src": 3}))
    ok = wps.extract(kf, wps.ExtractOptions(shape=(66, 34, 34), base_offsets={"src": 24}))
    assert {f.name: f.base_offset for f in ok.kernel.fields}["src"] == 24
