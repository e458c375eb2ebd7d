"""Thread folding generated through pystencils (MODEL.md §1 work per
thread, §8 ranking): volumes stay per lattice update, folding along z
saves DRAM traffic for shallow blocks, and the folded CUDA code compiles."""

import math
import os
import shutil
import subprocess

import pystencils as ps
import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from stencils import star3d, star3d_by_hand


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
        p, q = ws.predict(generated, "A100", block), ws.predict(by_hand, "A100", block)
        assert p.volumes == q.volumes


def test_fold_that_does_not_divide_the_interior_is_rejected():
    with pytest.raises(ws.KernelError, match="not a multiple of 2"):
        star3d.kernel(radius=1, shape=(16, 16, 15), fold=(1, 1, 2))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
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
    assert glups == sorted(glups, reverse=True)
    best = ranking[0]
    assert {p.fold for p in ranking} == {(1, 1, 1), (1, 2, 1), (1, 1, 2)}
    for p in ranking:
        assert math.prod(p.block) == 256 and p.block[0] <= 64 and p.block[2] <= 32
    assert tuple(kernel.get_launch_configuration().evaluate()[0]) == best.block
    steps = wps.extract(kernel).counter_steps
    assert steps == best.fold
    again = wps.predict(asm, "A100", best.block, best.fold, config=cfg)
    assert again.glups == pytest.approx(best.glups)


def test_lbmpy_kernels_with_numbered_subexpressions_fold():
    """lbmpy names subexpressions xi_N; folded copies need fresh numbers."""
    from stencils.allen_cahn_d3q15 import kernel

    plain = kernel(shape=(16, 16, 16))
    folded = kernel(shape=(16, 16, 16), fold=(1, 2, 1))
    assert folded.fold == (1, 2, 1)
    assert len(folded.stores) == 2 * len(plain.stores)
    # the 7-point phase-field stencil shares two loads between the two points
    assert len(folded.loads) == 2 * len(plain.loads) - 2
