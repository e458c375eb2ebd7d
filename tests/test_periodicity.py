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
from tests.test_simulation_constructs import cells

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
        (Stencil.D3Q19, 16, (True, False, True), (16, 4, 16)),
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
    p = ws.predict(wps.extract(_periodic_lbm(stencil, n, periodic)).kernel, "A100", block)
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
