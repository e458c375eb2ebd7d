"""Periodic wraps in indices (issue 20): lbmpy's built-in periodicity and
pystencils selects ``c ? a : b`` are modelled as the interior access for the
interior threads and the wrapped access for the border threads. Checked
against brute force: the cells every thread touches, and the DRAM sectors of
the whole domain on a small one that one wave covers (MODEL.md §1, §6)."""

from __future__ import annotations

import itertools

import pystencils as ps
import pytest
import sympy as sp
from lbmpy import LBMConfig, LBMOptimisation, LBStencil, Stencil, create_lb_update_rule

import warpspeed as ws
import warpspeed.pystencils as wps
from tests.pystencils.test_simulation_constructs import cells
from tests.slow import slow

CUDA = dict(target=ps.Target.CUDA, jit=ps.no_jit)
X, Y, Z = ps.DEFAULTS.spatial_counters


def _periodic_lbm(stencil: Stencil, n: int, periodic: tuple[bool, ...]):
    q = len(LBStencil(stencil))
    size = ", ".join([str(n)] * len(periodic))
    src, dst = ps.fields(f"pdfs({q}), pdfs_tmp({q}): double[{size}]", layout="fzyx")
    rule = create_lb_update_rule(
        lbm_config=LBMConfig(stencil=LBStencil(stencil), relaxation_rate=1.8),
        lbm_optimisation=LBMOptimisation(
            builtin_periodicity=periodic, symbolic_field=src, symbolic_temporary_field=dst
        ),
    )
    return ps.create_kernel(rule, ps.CreateKernelConfig(**CUDA, ghost_layers=1))


def _pull_sources(stencil: Stencil, n: int, periodic: tuple[bool, ...]):
    """Population i of cell c is pulled from c - d_i, wrapped into the
    interior 1..n-2 along the periodic axes (lbmpy's semantics)."""
    dim = len(periodic)
    out = {}
    for i, d in enumerate(LBStencil(stencil)):
        src = set()
        for c in itertools.product(range(1, n - 1), repeat=dim):
            s = []
            for a in range(dim):
                v = c[a] - d[a]
                if periodic[a]:
                    v = (v - 1) % (n - 2) + 1
                s.append(v)
            src.add(tuple(s))
        out[i] = src
    return out


def _sector_bytes(stencil: Stencil, n: int, periodic: tuple[bool, ...]) -> tuple[float, float]:
    """Unique 32 B sectors loaded / stored over the whole domain, per cell."""
    dim = len(periodic)
    strides = [n**a for a in range(dim)]
    loads, stores = set(), set()
    for i, src in _pull_sources(stencil, n, periodic).items():
        loads |= {(i * n**dim + sum(v * s for v, s in zip(c, strides))) * 8 // 32 for c in src}
    for i in range(len(LBStencil(stencil))):
        for c in itertools.product(range(1, n - 1), repeat=dim):
            stores.add((i * n**dim + sum(v * s for v, s in zip(c, strides))) * 8 // 32)
    cells_ = (n - 2) ** dim
    return len(loads) * 32 / cells_, len(stores) * 32 / cells_


@pytest.mark.parametrize(
    "stencil, n, periodic, block",
    [
        (Stencil.D2Q9, 20, (True, True), (32, 8, 1)),
        pytest.param(Stencil.D3Q19, 16, (True, False, True), (16, 4, 16), marks=slow),
    ],
)
def test_builtin_periodicity_pulls_from_the_other_side(stencil, n, periodic, block):
    ex = wps.extract(_periodic_lbm(stencil, n, periodic))
    k = ex.kernel
    assert any("periodic wrap" in note for note in ex.notes)
    want = _pull_sources(stencil, n, periodic)
    dim = len(periodic)
    by_population: dict[int, set] = {}
    for a in k.loads:
        got = cells(a, k.domain, block)
        (pop,) = {c[dim] for c in got}
        by_population.setdefault(pop, set()).update(c[:dim] for c in got)
    assert by_population == want


@pytest.mark.parametrize(
    "stencil, n, periodic, block",
    [
        (Stencil.D2Q9, 20, (True, False), (64, 8, 1)),
        (Stencil.D3Q19, 16, (True, True, True), (16, 4, 16)),
    ],
)
def test_periodic_dram_volume_matches_brute_force(stencil, n, periodic, block):
    # one wave holds the whole domain: the compulsory volume is every sector touched
    # (32 registers: a block of 1024 threads launches; the volumes do not depend on them)
    kernel = wps.extract(_periodic_lbm(stencil, n, periodic), wps.ExtractOptions(registers=32))
    p = ws.predict(kernel.kernel, "A100", block)
    assert p.wave.threads == (n - 2) ** len(periodic)
    load, store = _sector_bytes(stencil, n, periodic)
    assert p.volumes.dram_load_v1 == pytest.approx(load, rel=1e-9)
    assert p.volumes.dram_store_v1 == pytest.approx(store, rel=1e-9)


def _wrap_kernel(wrap):
    fc = ps.Field.create_fixed_size("fc", (10, 12, 14), field_type=ps.FieldType.CUSTOM,
                                    layout="fzyx")
    _, g = ps.fields("f, g: double[10, 12, 14]", layout="fzyx")
    cfg = ps.CreateKernelConfig(**CUDA, ghost_layers=0)
    return ps.create_kernel([ps.Assignment(g.center, fc.absolute_access((wrap, Y, Z), ()))], cfg)


@pytest.mark.parametrize(
    "wrap, source",
    [
        (sp.Piecewise((0, sp.Eq(X, 9)), (X + 1, True)), lambda x: (x + 1) % 10),
        (sp.Piecewise((9, sp.Eq(X, 0)), (X - 1, True)), lambda x: (x - 1) % 10),
        (sp.Piecewise((X + 1, sp.Ne(X, 9)), (0, True)), lambda x: (x + 1) % 10),
        (sp.Piecewise((X + 2, X < 8), (X - 8, True)), lambda x: (x + 2) % 10),
        (sp.Piecewise((X - 3, X >= 3), (X + 7, True)), lambda x: (x - 3) % 10),
    ],
)
def test_select_wraps_read_the_cell_of_the_other_side(wrap, source):
    k = wps.extract(_wrap_kernel(wrap)).kernel
    (load,) = k.loads
    got = cells(load, k.domain, (4, 2, 2))
    want = {(source(x), y, z) for x in range(10) for y in range(12) for z in range(14)}
    assert got == want


def test_select_on_two_coordinates_is_refused_by_name():
    wrap = sp.Piecewise((0, X + Y > 12), (X + 1, True))
    with pytest.raises(wps.TernaryIndexError, match=r"more than one thread coordinate"):
        wps.extract(_wrap_kernel(wrap))


def test_select_with_branches_apart_over_many_threads_is_refused_by_name():
    wrap = sp.Piecewise((2 * X - 9, X > 4), (X + 1, True))
    with pytest.raises(wps.TernaryIndexError, match=r"differ by a thread-dependent amount"):
        wps.extract(_wrap_kernel(wrap))


@pytest.mark.parametrize("stencil, n, periodic, block", [
    (Stencil.D2Q9, 66, (True, True), (64, 2, 1)),
    (Stencil.D3Q19, 34, (True, False, True), (16, 4, 2)),
    (Stencil.D3Q19, 40, (False, True, False), (32, 1, 1)),
])
def test_wrapped_images_cut_into_affine_pieces_count_as_isl_does(stencil, n, periodic, block):
    # the direct route cuts a wrapped index's thread box where its indicator
    # changes (two affine pieces) instead of handing it to isl: the counts
    # must agree exactly, in both address modes, and isl enumerates nothing
    import dataclasses

    from warpspeed.model import block_stage
    from warpspeed.volumes.waves import wave_volumes

    k = wps.extract(_periodic_lbm(stencil, n, periodic)).kernel
    st = block_stage(k, ws.load_machine("A100"), block)
    for address in ("paper", "linear"):
        direct = wave_volumes(k, st.launch, st.bound, method="auto", address=address)
        exact = wave_volumes(k, st.launch, st.bound, method="isl", address=address)
        assert direct.enumerated == 0
        assert direct == dataclasses.replace(exact, enumerated=0)


def test_a_wrap_indicator_cuts_the_thread_box_in_two():
    from warpspeed.input.expr import LinForm
    from warpspeed.volumes.direct_images import _floor_pieces

    # index x - 1 + 62 * [x < 2] over x in [1, 63): the indicator
    # floor((62 - x) / 61) is 1 for x = 1 only (wraps.py, t <= E / 2 form)
    zero = (0,) * 6
    ind = LinForm(62, (-1, 0, 0, -1, 0, 0), (), 61)  # blockDim.x = 1: g = blockIdx + threadIdx
    form = LinForm(-1, (1, 0, 0, 1, 0, 0), ((62, ind, 1),), 1)
    pieces = _floor_pieces([form], (1, 1, 1), ((1, 63), (0, 1), (0, 1)))
    assert [p for p, _ in pieces] == [((1, 2), (0, 1), (0, 1)), ((2, 63), (0, 1), (0, 1))]
    assert [f[0].const for _, f in pieces] == [61, -1]  # x - 1 + 62 at x = 1, x - 1 after
    assert all(not f[0].floors for _, f in pieces)
    assert _floor_pieces([LinForm(0, zero, ((1, LinForm(0, (1, 1, 0, 1, 1, 0), (), 2), 1),), 1)],
                         (1, 1, 1), ((0, 8), (0, 8), (0, 1))) is None  # two coordinates
