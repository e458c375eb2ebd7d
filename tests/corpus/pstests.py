"""Kernels of pystencils' own GPU tests (lssfau/pystencils, ``tests/kernelcreation``:
``test_gpu.py``, ``test_iteration_slices.py``, ``test_index_kernels.py``,
``test_half_precision.py``), rebuilt here from their assignments and
configurations, each naming the test it comes from.

A case is what a user of warpspeed hands over: the kernel pystencils 2.1
generates for CUDA without a GPU (``jit=no_jit``), and the keywords the
prediction needs (``shape`` for symbolic sizes, ``params`` for symbolic
slice bounds, ``grid_points`` for grid-strided loops). pystencils' tests
run them on tiny arrays; the sizes here are the same kernels on arrays a GPU
is used for. A case pystencils 2.1 refuses to generate is recorded with
pystencils' reason (:func:`generate` returns the exception).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pystencils as ps
import sympy as sp
from pystencils.sympyextensions.integer_functions import int_rem

from warpspeed.pystencils import ExtractOptions

#: Interior extents of the 2D and 3D cases (arrays one ghost layer wider).
N2 = 1024
N3 = 128


@dataclass(frozen=True)
class PsCase:
    """A kernel of pystencils' tests: ``build`` returns ``(assignments,
    config)``; ``options`` are warpspeed's options for it; ``source`` names
    the pystencils test; ``dram`` is the hand count of DRAM bytes per
    update (loads + stores), where one is simple to write."""

    name: str
    source: str
    build: Callable[[], tuple[Any, ps.CreateKernelConfig]]
    options: ExtractOptions = field(default_factory=ExtractOptions)
    dram: float | None = None


def _cfg(**gpu: Any) -> ps.CreateKernelConfig:
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    for k, v in gpu.items():
        if k in ("iteration_slice", "ghost_layers", "index_field"):
            setattr(cfg, k, v)
        else:
            setattr(cfg.gpu, k, v)
    return cfg


def _star3d(dtype: str = "double") -> list[ps.Assignment]:
    src, dst = ps.fields(f"src, dst: {dtype}[3D]")
    return [ps.Assignment(dst.center(), sum(src[o] for o in (
        (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1), (0, 0, 1))))]


def _star2d(src: ps.Field, dst: ps.Field, scale: Any = 1) -> list[ps.Assignment]:
    return [ps.Assignment(dst[0, 0], (src[0, 1] + src[0, -1] + src[1, 0] + src[-1, 0])
                          * scale)]


def _fixed2d(name: str, shape: tuple[int, ...], index_dimensions: int = 0,
             dtype: Any = np.float64) -> ps.Field:
    return ps.Field.create_from_numpy_array(name, np.zeros(shape, dtype=dtype),
                                            index_dimensions=index_dimensions)


def _indexing(scheme: str, warp_aligned: bool, dims: int) -> PsCase:
    shape = (N3 + 2,) * 3 if dims == 3 else (N2 + 2,) * 2
    options = ExtractOptions(shape=shape,
                             grid_points=(4,) if scheme.startswith("gridstrided") else None)

    def build() -> tuple[Any, ps.CreateKernelConfig]:
        if dims == 3:
            asm = _star3d()
        else:
            src, dst = ps.fields("src, dst: double[2D]")
            asm = _star2d(src, dst)
        return asm, _cfg(indexing_scheme=scheme, assume_warp_aligned_block_size=warp_aligned)

    # linear1d: pystencils 2.1 maps the fastest part of the linear index to the
    # slowest memory axis (uncoalesced), so no simple hand count
    dram = None if "linear1d" in scheme else 16.0
    return PsCase(f"indexing_{dims}d_{scheme}{'_aligned' if warp_aligned else ''}",
                  f"test_gpu.py::test_indexing_options_{dims}d", build, options, dram)


SCHEMES = ("linear1d", "gridstrided_linear1d", "linear3d", "gridstrided_linear3d",
           "blockwise4d")


def _averaging() -> tuple[Any, ps.CreateKernelConfig]:
    src = _fixed2d("src", (N2 + 2, N2 + 2))
    dst = _fixed2d("dst", (N2 + 2, N2 + 2))
    return _star2d(src, dst, sp.Rational(1, 4)), _cfg()


def _variable_sized() -> tuple[Any, ps.CreateKernelConfig]:
    src = ps.Field.create_generic("src", spatial_dimensions=2)
    dst = ps.Field.create_generic("dst", spatial_dimensions=2)
    return _star2d(src, dst, sp.Rational(1, 4)), _cfg()


def _multiple_index_dimensions() -> tuple[Any, ps.CreateKernelConfig]:
    src = _fixed2d("src", (N2, N2, 4), index_dimensions=1)
    dst = _fixed2d("dst", (N2, N2))
    return [ps.Assignment(dst[0, 0], sum(src[-2, -1](i) for i in range(4)))], _cfg()


def _ghost_layer() -> tuple[Any, ps.CreateKernelConfig]:
    src = _fixed2d("src", (N2 + 3, N2 + 3))
    dst = _fixed2d("dst", (N2 + 3, N2 + 3))
    return [ps.Assignment(dst[0, 0], src[0, 0])], _cfg(
        ghost_layers=[(1, 2), (2, 1)], indexing_scheme="blockwise4d")


def _setting_value() -> tuple[Any, ps.CreateKernelConfig]:
    f = ps.Field.create_generic("f", 2)
    return [ps.Assignment(f(0), sp.Symbol("value"))], _cfg(
        iteration_slice=ps.make_slice[:, :])


def _sliced_iteration() -> tuple[Any, ps.CreateKernelConfig]:
    src = _fixed2d("src", (N2, N2))
    dst = _fixed2d("dst", (N2, N2))
    a, b = sp.symbols("a b")
    rule = ps.Assignment(dst[0, 0], (a * src[0, 1] + a * src[0, -1] + b * src[1, 0]
                                     + b * src[-1, 0]) / 4)
    x_end = ps.TypedSymbol("x_end", "int")
    return [rule], _cfg(iteration_slice=ps.make_slice[1:x_end, 1])


def _numerical_slice(islice: Any) -> Callable[[], tuple[Any, ps.CreateKernelConfig]]:
    def build() -> tuple[Any, ps.CreateKernelConfig]:
        f = _fixed2d("f", (N2, N2))
        return [ps.Assignment(f.center(), 1)], _cfg(iteration_slice=islice)
    return build


def _symbolic_slice() -> tuple[Any, ps.CreateKernelConfig]:
    f = _fixed2d("f", (N2, N2))
    sx, sy, ex, ey = (ps.TypedSymbol(n, ps.DynamicType.INDEX_TYPE)
                      for n in ("sx", "sy", "ex", "ey"))
    return [ps.Assignment(f.center(), 1)], _cfg(iteration_slice=ps.make_slice[sy:ey, sx:ex])


def _triangle() -> tuple[Any, ps.CreateKernelConfig]:
    f = _fixed2d("f", (N2, N2))
    islice = ps.make_slice[:, ps.DEFAULTS.spatial_counters[0]:]
    return [ps.Assignment(f.center(), 1)], _cfg(iteration_slice=islice,
                                                  manual_launch_grid=True)


def _red_black(dims: int) -> Callable[[], tuple[Any, ps.CreateKernelConfig]]:
    def build() -> tuple[Any, ps.CreateKernelConfig]:
        f = _fixed2d("f", (N2, N2) if dims == 2 else (N3, N3, N3))
        counters = ps.DEFAULTS.spatial_counters
        parity = int_rem(sum(counters[:dims - 1]), 2)
        start = sp.Piecewise((0, sp.Eq(parity, 0)), (1, True))
        islice = (ps.make_slice[:, start::2] if dims == 2
                  else ps.make_slice[:, :, start::2])
        return [ps.Assignment(f.center(), 1)], _cfg(iteration_slice=islice,
                                                      manual_launch_grid=True)
    return build


def _index_kernel() -> tuple[Any, ps.CreateKernelConfig]:
    arr = _fixed2d("f", (N2, N2))
    index_arr = np.zeros((4096,), dtype=np.dtype([("x", np.int64), ("y", np.int64)],
                                                  align=True))
    idx = ps.Field.create_from_numpy_array("indexField", index_arr,
                                           field_type=ps.FieldType.INDEXED)
    return [ps.Assignment(arr[0, 0], arr[1, 0] + arr[-1, 0])], _cfg(index_field=idx)


def _half_precision() -> tuple[Any, ps.CreateKernelConfig]:
    src, dst = ps.fields("src, dst: float16[3D]")
    return [ps.Assignment(dst.center(), src[1, 0, 0] + src[-1, 0, 0])], _cfg()


CASES: tuple[PsCase, ...] = (
    *(_indexing(s, a, d) for d in (3, 2) for s in SCHEMES for a in (False, True)),
    PsCase("averaging_kernel", "test_gpu.py::test_averaging_kernel", _averaging,
           ExtractOptions(), 16.0),
    PsCase("variable_sized_fields", "test_gpu.py::test_variable_sized_fields",
           _variable_sized, ExtractOptions(shape=(N2 + 2, N2 + 2)), 16.0),
    PsCase("multiple_index_dimensions", "test_gpu.py::test_multiple_index_dimensions",
           _multiple_index_dimensions, ExtractOptions(), 40.0),
    PsCase("ghost_layer_blockwise4d", "test_gpu.py::test_ghost_layer", _ghost_layer,
           ExtractOptions(), 16.0),
    PsCase("setting_value", "test_gpu.py::test_setting_value", _setting_value,
           ExtractOptions(shape=(N2, N2)), 8.0),
    PsCase("sliced_iteration", "test_iteration_slices.py::test_sliced_iteration",
           _sliced_iteration, ExtractOptions(params={"x_end": N2 - 1}), 64.0),
    *(PsCase(f"numerical_slice_{i}", "test_iteration_slices.py::test_numerical_slices",
             _numerical_slice(s)) for i, s in enumerate((
                 ps.make_slice[1:-1, 1:-1], ps.make_slice[3, 2:-2], ps.make_slice[2:-2:2, ::3],
                 ps.make_slice[10:, :-5:2], ps.make_slice[-5:-1, -1], ps.make_slice[-3, -1]))),
    PsCase("symbolic_slice", "test_iteration_slices.py::test_symbolic_slice", _symbolic_slice,
           ExtractOptions(params={"sx": 1, "ex": N2 - 1, "sy": 1, "ey": N2 - 1}), 8.0),
    PsCase("triangle_pattern", "test_iteration_slices.py::test_triangle_pattern", _triangle),
    PsCase("red_black_pattern_2d", "test_iteration_slices.py::test_red_black_pattern",
           _red_black(2)),
    PsCase("red_black_pattern_3d", "test_iteration_slices.py::test_red_black_pattern (3D)",
           _red_black(3)),
    PsCase("index_kernel", "test_index_kernels.py::test_indexed_kernel", _index_kernel,
           ExtractOptions(index_list=4096)),
    PsCase("half_precision", "test_half_precision.py", _half_precision,
           ExtractOptions(shape=(N3 + 2,) * 3), 4.0),
)


def generate(case: PsCase, target: ps.Target = ps.Target.CUDA) -> Any:
    """pystencils' kernel of ``case`` for ``target`` (CUDA or HIP), or the
    exception pystencils raised."""
    asm, cfg = case.build()
    cfg.target = target
    if target == ps.Target.HIP:
        cfg.gpu.warp_size = 64  # CDNA wavefronts (pystencils cannot know the GPU)
    try:
        return ps.create_kernel(asm, cfg)
    except Exception as exc:  # pystencils' own refusal is recorded, not raised
        return exc


__all__ = ["CASES", "PsCase", "generate"]
