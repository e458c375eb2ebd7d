"""Thread folding generated through pystencils (MODEL.md §1 work per
thread, §8 ranking): volumes stay per lattice update, folding along z
saves DRAM traffic for shallow blocks, and the folded CUDA code compiles."""

import math
import os
import re
import shutil
import subprocess
from dataclasses import replace

import pystencils as ps
import pytest
import sympy as sp
from pystencils.sympyextensions.integer_functions import int_rem

import warpspeed as ws
import warpspeed.pystencils as wps
from stencils import star3d, star3d_by_hand
from tests.ranking_order import is_best_first
from tests.slow import slow
from warpspeed.pystencils import hook
from warpspeed.timing.base import LEAD_SHARE


@pytest.fixture(scope="module")
def folded_stars():
    return {f: star3d.generate(fold=f) for f in [(1, 1, 1), (1, 1, 2), (1, 2, 1)]}


def test_two_z_folding_lowers_dram_volume_for_shallow_blocks(folded_stars):
    plain = ws.predict(folded_stars[(1, 1, 1)][0], "A100", (256, 1, 4))
    folded = ws.predict(folded_stars[(1, 1, 2)][0], "A100", (256, 1, 4))
    assert folded.volumes.dram_load < plain.volumes.dram_load - 1.0


@pytest.mark.parametrize("fold", [(1, 1, 2), (1, 2, 1)])
def test_folded_thread_does_fold_lattice_updates_and_stores(folded_stars, fold):
    kernel, _ = folded_stars[fold]
    assert kernel.fold == fold and kernel.lups_per_thread == 2
    assert len(kernel.stores) == 2
    # 25 points per update, 4*2+2 shared along the folded axis: 2*25 - 8 = 42.
    assert len(kernel.loads) == 42
    assert kernel.domain == tuple(n // f for n, f in zip((640, 512, 512), fold))
    p = ws.predict(kernel, "A100", (256, 1, 4))
    assert p.volumes.dram_store == pytest.approx(8.0, rel=0.02)
    assert p.volumes.l2_store == pytest.approx(8.0, rel=0.02)


@pytest.mark.parametrize("fold", [(1, 1, 2), (1, 2, 1)])
def test_folded_pystencils_star_matches_the_hand_folded_star(folded_stars, fold):
    generated = folded_stars[fold][0]
    by_hand = star3d_by_hand.kernel(fold=fold)
    assert set(generated.loads) == set(by_hand.loads)
    assert set(generated.stores) == set(by_hand.stores)
    for block in [(256, 1, 4), (32, 4, 8)]:
        p = ws.predict(generated, "A100", block)
        # the same occupancy: the hand-made kernel with the registers of the generated one
        q = ws.predict(replace(by_hand, registers=p.registers), "A100", block)
        assert p.volumes == q.volumes


def test_fold_that_does_not_divide_the_interior_is_rejected():
    with pytest.raises(ws.KernelError, match="not a multiple of 2"):
        star3d.kernel(radius=1, shape=(16, 16, 15), fold=(1, 1, 2))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
@slow
def test_folded_cuda_code_compiles_with_nvcc(folded_stars, tmp_path):
    _, kf = folded_stars[(1, 1, 2)]
    include = os.path.join(os.path.dirname(ps.__file__), "include")
    source = "".join(f"#include {h}\n" for h in sorted(kf.required_headers))
    source += "#define RESTRICT __restrict__\n" + kf.get_c_code()
    (tmp_path / "k.cu").write_text(source)
    res = subprocess.run(
        ["nvcc", "-c", "-I", include, "k.cu", "-o", "k.o"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert kf.get_c_code().count("_data_dst[") == 2


def test_create_kernel_returns_best_folding_with_best_block_applied():
    src = ps.Field.create_fixed_size("src", (66, 34, 34), layout="fzyx")
    dst = ps.Field.create_fixed_size("dst", (66, 34, 34), layout="fzyx")
    asm = [ps.Assignment(dst.center, 0.25 * (src[1, 0, 0] + src[-1, 0, 0] + src[0, 0, 1]))]
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    kernel, ranking = wps.create_kernel(asm, cfg, machine="A100", threads=256)
    glups = [p.glups for p in ranking]
    # best first; equal to six digits: the robust tie order (MODEL.md §8)
    assert is_best_first(glups)
    best = ranking[0]
    assert {p.fold for p in ranking} == {(1, 1, 1), (1, 2, 1), (1, 1, 2)}
    for p in ranking:
        assert math.prod(p.block) == 256 and p.block[0] <= 64 and p.block[2] <= 32
    assert tuple(kernel.get_launch_configuration().evaluate()[0]) == best.block
    steps = wps.extract(kernel).counter_steps
    assert steps == best.fold
    again = wps.predict(asm, "A100", best.block, best.fold, config=cfg)
    assert again.glups == pytest.approx(best.glups)


@slow
def test_lbmpy_kernels_with_numbered_subexpressions_fold():
    """lbmpy names subexpressions xi_N; folded copies need fresh numbers."""
    from stencils.allen_cahn_d3q15 import kernel

    plain = kernel(shape=(16, 16, 16))
    folded = kernel(shape=(16, 16, 16), fold=(1, 2, 1))
    assert folded.fold == (1, 2, 1)
    assert len(folded.stores) == 2 * len(plain.stores)
    # the 7-point phase-field stencil shares two loads between the two points
    assert len(folded.loads) == 2 * len(plain.loads) - 2


def _jacobi(shape):
    src, dst = ps.fields(f"src, dst: double[{', '.join(map(str, shape))}]", layout="fzyx")
    return src, dst, [ps.Assignment(dst.center, (src[1, 0, 0] + src[-1, 0, 0] + src[0, 0, 1]) / 3)]


CFG = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)


@slow
def test_hook_skips_a_fold_that_does_not_divide_the_interior_and_keeps_the_best_valid():
    # interior 64 x 32 x 31: folding z by 2 leaves a thread with one invalid point
    *_, asm = _jacobi((66, 34, 33))
    ranked = wps.create_kernel(asm, CFG, machine="A100", threads=256)
    assert [f for f, _ in ranked.skipped] == [(1, 1, 2)]
    assert "31 interior points along z are not a multiple of 2" in ranked.skipped[0][1]
    assert {p.fold for p in ranked.ranking} == {(1, 1, 1), (1, 2, 1)}
    best = ranked.ranking[0]
    assert best.glups >= max(p.glups for p in ranked.ranking) * (1 - LEAD_SHARE)  # a leader
    assert wps.extract(ranked.kernel).counter_steps == best.fold
    assert tuple(ranked.kernel.get_launch_configuration().evaluate()[0]) == best.block


def test_hook_raises_with_every_variants_reason_when_nothing_can_be_ranked():
    # a red-black sweep written as a parity branch: every variant is refused (or cannot be
    # folded); the error lists each fold's reason instead of an empty ranking
    f = ps.fields("f: double[34, 34, 34]", layout="fzyx")
    x, y, z = ps.DEFAULTS.spatial_counters

    @ps.flow.guarded_block(sp.Eq(int_rem(x + y + z, 2), 0))
    def red(b):
        b.store[f.center] = (f[1, 0, 0] + f[-1, 0, 0]) / 2

    with pytest.raises(ws.EmptyRankingError) as info:
        wps.create_kernel(red, CFG, machine="A100", threads=256)
    reasons = info.value.reasons
    assert [r.split(":")[0] for r in reasons] == [f"fold {f}" for f in wps.DEFAULT_FOLDS]
    assert "RedBlackError" in reasons[0] and all(r in str(info.value) for r in reasons)


def test_folding_a_kernel_that_rereads_its_own_store_works_and_drops_the_reload():
    # g = 2 f; h = g + f[1]: folding y by 2 used to trip pystencils' internal assertion
    f, g, h = ps.fields("f, g, h: double[18, 18, 18]", layout="fzyx")
    asm = [ps.Assignment(g.center, 2 * f.center), ps.Assignment(h.center, g.center + f[1, 0, 0])]
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit, ghost_layers=1)
    k = wps.extract(wps.generate(asm, cfg, (1, 2, 1)), fold=(1, 2, 1)).kernel
    assert sorted(a.field.name for a in k.stores) == ["g", "g", "h", "h"]
    # f at (x, y), (x + 1, y), (x, y + 1), (x + 1, y + 1); g only from registers
    assert [a.field.name for a in k.loads] == ["f"] * 4


def test_folding_keeps_pystencils_independence_check_of_the_unfolded_kernel():
    f, g = ps.fields("f, g: double[18, 18, 18]", layout="fzyx")
    # reads a neighbour of what an earlier statement wrote: pystencils refuses it unfolded
    asm = [ps.Assignment(f.center, 2 * g.center), ps.Assignment(g.center, f[1, 0, 0])]
    with pytest.raises(wps.FoldError, match="loop independence"):
        wps.generate(asm, CFG, (1, 2, 1))


@slow
def test_blockwise4d_kernels_are_ranked_with_their_fixed_block_only():
    *_, asm = _jacobi((34, 18, 18))
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    cfg.gpu.indexing_scheme = "blockwise4d"
    kernel, ranking = wps.create_kernel(asm, cfg, machine="A100", threads=256)
    assert ranking and {p.block for p in ranking} == {(32, 1, 1)}
    assert tuple(kernel.get_launch_configuration().evaluate()[0]) == (32, 1, 1)


@slow
def test_symbolic_sizes_are_ranked_with_the_given_shape():
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    asm = [ps.Assignment(dst.center, (src[1, 0, 0] + src[0, 0, -1]) / 2)]
    ranked = wps.create_kernel(asm, CFG, machine="A100", threads=256,
                               options=wps.ExtractOptions(shape=(66, 34, 34)))
    assert not ranked.skipped and {p.fold for p in ranked.ranking} == set(wps.DEFAULT_FOLDS)
    with pytest.raises(ws.EmptyRankingError) as info:
        wps.create_kernel(asm, CFG, machine="A100", threads=256)
    reasons = info.value.reasons
    assert len(reasons) == 3 and "MissingShapeError" in reasons[0]
    assert "FoldError" in reasons[1] and "shape=" in reasons[1]


def test_hook_names_the_registers_when_no_block_can_launch():
    # 255 registers x 1024 threads = 261120 > 65536 registers per SM: no block launches
    *_, asm = _jacobi((34, 34, 34))
    with pytest.raises(ws.EmptyRankingError) as info:
        wps.create_kernel(asm, CFG, machine="A100", threads=1024,
                          options=wps.ExtractOptions(registers=255))
    reasons = info.value.reasons
    assert [r.split(":")[0] for r in reasons] == [f"fold {f}" for f in wps.DEFAULT_FOLDS]
    assert all("no block can be predicted" in r and "255 registers per thread (user)" in r
               for r in reasons)


@pytest.mark.parametrize("threads, text", [
    (2048, "threads=2048: 2048 threads per block, but A100 allows at most 1024"),
    (0, "threads=0: a block needs at least one thread"),
    ([256, -1], "threads=[256, -1]: a block needs at least one thread"),
    (2.5, "threads=2.5: 2.5 is not a whole number of threads"),
])
def test_hook_refuses_a_bad_thread_count_by_name_before_generating(threads, text, monkeypatch):
    *_, asm = _jacobi((34, 34, 34))
    monkeypatch.setattr(hook, "make_variants",
                        lambda *a, **k: pytest.fail("variants were generated"))
    with pytest.raises(ws.LaunchError, match=re.escape(text)) as info:
        wps.create_kernel(asm, CFG, machine="A100", threads=threads,
                          options=wps.ExtractOptions(registers="estimate"))
    assert not isinstance(info.value, ws.EmptyRankingError)


def test_hook_takes_one_thread_count_or_several():
    *_, asm = _jacobi((34, 34, 34))
    for threads, counts in [(128, {128}), ([64, 128], {64, 128}), ((128,), {128})]:
        ranked = wps.create_kernel(asm, CFG, machine="A100", threads=threads, folds=[(1, 1, 1)],
                                   jobs=1, options=wps.ExtractOptions(registers="estimate"))
        assert {math.prod(p.block) for p in ranked.ranking} == counts


@pytest.mark.parametrize("threads, domain", [(256, (2**30,) * 3), (256, (64, 3, 100)),
                                             (1024, (2000, 2000, 2000)), (32, (5, 1, 1))])
def test_hook_blocks_are_the_design_spaces_powers_of_two_within_the_domain(threads, domain):
    # brute force: every power-of-two (x, y, z) of `threads` threads within CUDA's
    # extents (1024, 1024, 64) and the smallest power of two covering the domain
    cover = [min(lim, 1 << max(0, math.ceil(math.log2(d)))) for lim, d in
             zip((1024, 1024, 64), domain)]
    powers = [1 << e for e in range(11)]
    truth = [(x, y, threads // (x * y)) for x in powers for y in powers
             if threads % (x * y) == 0 and x <= cover[0] and y <= cover[1]
             and threads // (x * y) <= cover[2]]
    if not truth:
        with pytest.raises(ws.LaunchError, match=f"no block of {threads} threads fits"):
            wps.blocks(threads, domain)
        return
    assert wps.blocks(threads, domain) == truth
