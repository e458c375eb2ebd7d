"""The hook's kernel rebuilt with the best block as its default
(warpspeed.pystencils.default_block) against the kernel pystencils
generates with that block: the same code, parameters and launch
configuration; a new generation where the block is part of the code."""

import pickle

import pystencils as ps
import pytest

import warpspeed.pystencils as wps
from tests.corpus import BY_NAME
from tests.corpus.evaluate import options
from warpspeed.pystencils.default_block import portable, with_default_block
from warpspeed.pystencils.fold import generate

BLOCK = (32, 2, 4)


def _launch_facts(kernel):
    lc = kernel.get_launch_configuration()
    values = {p.name: 66 for p in lc.parameters}
    return (type(lc), lc.default_block_size, lc.evaluate(**values), lc.hardware_properties,
            lc._assume_warp_aligned_block_size)  # the flag has no public reader


def _same(rebuilt, generated):
    assert rebuilt.get_c_code() == generated.get_c_code()
    assert [(p.name, str(p.dtype)) for p in rebuilt.parameters] == [
        (p.name, str(p.dtype)) for p in generated.parameters]
    assert rebuilt.required_headers == generated.required_headers
    assert rebuilt.func_prefix == generated.func_prefix
    assert rebuilt.metadata == generated.metadata
    assert _launch_facts(rebuilt) == _launch_facts(generated)


@pytest.mark.parametrize("name, fold", [
    ("fd3d_jacobi_7pt_f64", (1, 2, 1)),
    ("fd3d_jacobi_7pt_symbolic_f64", (1, 1, 1)),  # sizes are kernel parameters
    pytest.param("lbm_d2q9_srt_simple_constant_force_f64", (1, 2, 1), marks=pytest.mark.slow),
    ("strided_x2_axpy_3d_f64", (1, 1, 1)),  # a strided iteration slice
])
def test_rebuilt_kernel_is_the_kernel_generated_with_the_block(name, fold):
    case = BY_NAME[name]
    built = case.build()
    shape = options(case).shape
    kernel = generate(built.assignments, built.config, fold, shape=shape)
    generated = generate(built.assignments, built.config, fold, BLOCK, shape=shape)
    parts = portable(kernel)
    assert parts is not None
    for source in (kernel, parts, pickle.loads(pickle.dumps(parts))):
        _same(with_default_block(source, built.config, BLOCK), generated)


@pytest.mark.parametrize("target", [ps.Target.CUDA, ps.Target.HIP])
def test_warp_aligned_assumption_and_target_are_kept(target):
    src, dst = ps.fields("src, dst: double[34, 34, 34]", layout="fzyx")
    asm = [ps.Assignment(dst.center, (src[1, 0, 0] + src[-1, 0, 0]) / 2)]
    cfg = ps.CreateKernelConfig(target=target, jit=ps.no_jit)
    cfg.gpu.assume_warp_aligned_block_size = True
    cfg.gpu.warp_size = 32
    kernel = ps.create_kernel(asm, cfg)
    generated = generate(asm, cfg, (1, 1, 1), BLOCK)
    _same(with_default_block(portable(kernel), cfg, BLOCK), generated)


def _jacobi_cfg(**gpu):
    src, dst = ps.fields("src, dst: double[34, 34, 34]", layout="fzyx")
    asm = [ps.Assignment(dst.center, (src[1, 0, 0] + src[-1, 0, 0]) / 2)]
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    for key, value in gpu.items():
        setattr(cfg.gpu, key, value)
    return asm, cfg


@pytest.mark.parametrize("gpu", [
    {"generate_launch_bounds": True},  # __launch_bounds__(threads) is in the code
    {"indexing_scheme": "blockwise4d"},  # the scheme fixes the block
    {"manual_launch_grid": True},  # the user sets block and grid
])
def test_block_in_the_code_or_no_dynamic_launch_is_generated_again(gpu):
    asm, cfg = _jacobi_cfg(**gpu)
    kernel = ps.create_kernel(asm, cfg)
    assert with_default_block(kernel, cfg, BLOCK) is None


def test_cub_reduction_is_generated_again():
    f = ps.fields("f: double[34, 34, 34]", layout="fzyx")
    w = ps.TypedSymbol("w", "float64")
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    cfg.gpu.use_cub_reductions = True
    cfg.gpu.default_block_size = (64, 2, 2)
    kernel = ps.create_kernel([ps.AddReductionAssignment(w, f.center**2)], cfg)
    assert portable(kernel) is None and with_default_block(kernel, cfg, BLOCK) is None


def test_hook_with_launch_bounds_writes_the_best_block_into_the_code():
    asm, cfg = _jacobi_cfg(generate_launch_bounds=True)
    kernel, ranking = wps.create_kernel(asm, cfg, machine="A100", threads=128, jobs=2)
    best = ranking[0]
    assert "__launch_bounds__(128)" in kernel.get_c_code()
    assert kernel.get_launch_configuration().default_block_size == best.block


def test_hook_kernel_from_a_worker_has_the_best_block():
    # the folds after the first are generated in worker processes and come
    # back as parts; whichever fold wins, its kernel defaults to the best block
    asm, cfg = _jacobi_cfg()
    kernel, ranking = wps.create_kernel(asm, cfg, machine="A100", threads=256, jobs=2,
                                        folds=[(1, 1, 1), (1, 1, 2), (1, 2, 1)])
    best = ranking[0]
    assert wps.extract(kernel).counter_steps == best.fold
    assert kernel.get_launch_configuration().evaluate()[0] == best.block
    assert kernel.get_c_code() == generate(asm, cfg, best.fold, best.block).get_c_code()
