"""The constructs whole pystencils / lbmpy simulations need next to their
stencil kernel (issue 20): symbolic slice bounds, checkerboard (red-black)
sweeps, grid-stride loops. Each is checked against an independent truth: the
cells a brute-force enumeration of every thread updates, and a hand count of
the DRAM bytes per update (MODEL.md §1, §6)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pystencils as ps
import pytest
import sympy as sp
from pystencils.sympyextensions.integer_functions import int_rem

import warpspeed as ws
import warpspeed.pystencils as wps
from warpspeed.input.expr import blockDim, blockIdx, threadIdx
from warpspeed.timing import parameter

CUDA = dict(target=ps.Target.CUDA, jit=ps.no_jit)
X, Y, Z = ps.DEFAULTS.spatial_counters
NEIGHBOURS = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]


def cells(access: ws.Access, domain, block) -> set[tuple[int, ...]]:
    """Every cell ``access`` touches over all threads of ``domain`` launched
    with ``block``: the index expressions evaluated thread by thread."""
    g = np.meshgrid(*(np.arange(d) for d in domain), indexing="ij")
    values = {}
    for a, axis in enumerate("xyz"):
        values[getattr(blockIdx, axis)] = g[a] // block[a]
        values[getattr(threadIdx, axis)] = g[a] % block[a]
        values[getattr(blockDim, axis)] = np.full_like(g[a], block[a])
    syms = list(values)
    out = []
    for e in access.index:
        f = sp.lambdify(syms, sp.sympify(e), modules=[{"Mod": np.mod, "floor": np.floor}, "numpy"])
        out.append(np.broadcast_to(f(*(values[s] for s in syms)), g[0].shape).ravel())
    return set(zip(*(v.astype(int).tolist() for v in out)))


def _dram(p: ws.Prediction) -> tuple[float, float]:
    return p.volumes.dram_load, p.volumes.dram_store


# ---------------------------------------------------------------------------
# Symbolic parameters


def _param_kernel():
    f, g = ps.fields("f, g: double[20, 12, 14]", layout="fzyx")
    sx, ex = ps.TypedSymbol("sx", "int64"), ps.TypedSymbol("ex", "int64")
    cfg = ps.CreateKernelConfig(**CUDA, iteration_slice=ps.make_slice[sx:ex, 1:-1, 1:-1])
    return ps.create_kernel([ps.Assignment(g.center, f[1, 0, 0])], cfg)


def test_missing_parameter_is_refused_naming_it():
    with pytest.raises(wps.MissingParameterError, match=r"parameter sx.*params=\{'sx'"):
        wps.extract(_param_kernel())
    with pytest.raises(wps.MissingParameterError, match=r"parameter ex.*params=\{'ex'"):
        wps.extract(_param_kernel(), wps.ExtractOptions(params={"sx": 2}))


def test_unknown_or_non_integer_parameter_is_a_kernel_error():
    with pytest.raises(ws.KernelError, match=r"'sy'.*integer parameters are \['ex', 'sx'\]"):
        wps.extract(_param_kernel(), wps.ExtractOptions(params={"sx": 2, "sy": 1}))
    with pytest.raises(ws.KernelError, match=r"params\['sx'\] must be an integer"):
        wps.extract(_param_kernel(), wps.ExtractOptions(params={"sx": 2.5, "ex": 8}))


def test_given_parameters_fix_the_slice():
    # x from sx = 3 to ex = 17: 14 threads; g[x] = f[x + 1]
    k = wps.extract(_param_kernel(), wps.ExtractOptions(params={"sx": 3, "ex": 17})).kernel
    assert k.domain == (14, 10, 12)
    (load,), (store,) = k.loads, k.stores
    got = cells(load, k.domain, (8, 2, 2))
    assert {c[0] for c in got} == set(range(4, 18))
    assert {c[0] for c in cells(store, k.domain, (8, 2, 2))} == set(range(3, 17))
    p = wps.predict(_param_kernel(), "A100", (16, 2, 2),
                    options=wps.ExtractOptions(params={"sx": 3, "ex": 17}))
    assert p.volumes.dram_store > 0


def test_hook_ranks_a_kernel_with_parameters():
    sx = ps.TypedSymbol("sx", "int64")
    f, g = ps.fields("f, g: double[66, 66, 66]", layout="fzyx")
    asm = [ps.Assignment(g.center, f[1, 0, 0] + f[-1, 0, 0])]
    cfg = ps.CreateKernelConfig(**CUDA, iteration_slice=ps.make_slice[sx:-1, 1:-1, 1:-1])
    ranked = wps.create_kernel(asm, cfg, threads=64, folds=[(1, 1, 1)], jobs=1,
                               options=wps.ExtractOptions(params={"sx": 1}))
    assert ranked.ranking and ranked.ranking[0].kernel == "kernel"
    with pytest.raises(ws.EmptyRankingError) as info:
        wps.create_kernel(asm, cfg, threads=64, folds=[(1, 1, 1)], jobs=1)
    assert "MissingParameterError" in info.value.reasons[0]


# ---------------------------------------------------------------------------
# Checkerboard (red-black) sweeps


def _red_black(n: int, colour: int, start=None):
    """A red-black Jacobi sweep over the (n+2)^3 field whose x start is
    ``start`` (default: ``1 + (y + z + colour) % 2``)."""
    a = n + 2
    u, rhs = ps.fields(f"u, rhs: double[{a}, {a}, {a}]", layout="fzyx")
    h = sp.Symbol("h")
    update = (sum(u[o] for o in NEIGHBOURS) - h**2 * rhs.center) / 6
    if start is None:
        start = 1 + int_rem(Y + Z + colour, 2)
    cfg = ps.CreateKernelConfig(**CUDA, iteration_slice=ps.make_slice[start:-1:2, 1:-1, 1:-1])
    cfg.gpu.manual_launch_grid = True
    return ps.create_kernel([ps.Assignment(u.center, update)], cfg)


@pytest.mark.parametrize("colour", [0, 1])
def test_checkerboard_threads_update_exactly_one_colour(colour):
    # x = 1 + (y + z + colour) % 2 + 2 g: the cells with x + y + z + colour odd
    n = 8
    k = wps.extract(_red_black(n, colour)).kernel
    assert k.domain == (n // 2, n, n)
    (store,) = k.stores
    want = {(x, y, z) for x in range(1, n + 1) for y in range(1, n + 1) for z in range(1, n + 1)
            if (x + y + z + colour) % 2 == 1}
    got = cells(store, k.domain, (2, 2, 2))
    assert got == want
    # the six neighbours are the other colour
    neighbours = set().union(*(cells(a, k.domain, (2, 2, 2)) for a in k.loads
                               if a.field.name == "u"))
    assert all((x + y + z + colour) % 2 == 0 for x, y, z in neighbours)


def _red_black_piecewise(n: int, colour: int):
    # the same sweep with the start written as pystencils' own red-black test does: a
    # Piecewise of the row parity (test_iteration_slices.py::test_red_black_pattern)
    start = sp.Piecewise((1, sp.Eq(int_rem(Y + Z + colour, 2), 0)), (2, True))
    return _red_black(n, colour, start)


@pytest.mark.parametrize("colour", [0, 1])
def test_piecewise_red_black_start_3d_is_predicted_like_the_int_rem_form(colour):
    n = 8
    k = wps.extract(_red_black_piecewise(n, colour)).kernel
    ref = wps.extract(_red_black(n, colour)).kernel
    (store,) = k.stores
    want = {(x, y, z) for x in range(1, n + 1) for y in range(1, n + 1) for z in range(1, n + 1)
            if (x + y + z + colour) % 2 == 1}
    assert k.domain == ref.domain == (n // 2, n, n)
    assert cells(store, k.domain, (2, 2, 2)) == want  # brute force, thread by thread
    big, big_ref = (wps.extract(f(64, colour)).kernel
                    for f in (_red_black_piecewise, _red_black))
    p, q = (ws.predict(x, "A100", (32, 4, 2)) for x in (big, big_ref))
    assert p.volumes == q.volumes and p.glups == q.glups


def _pystencils_red_black_2d(piecewise: bool):
    # pystencils' test_red_black_pattern: a 16 x 16 C-layout array, the start of the
    # fast index alternating with the parity of the slow one
    f = ps.Field.create_from_numpy_array("f", np.zeros((16, 16)))
    row = ps.DEFAULTS.spatial_counters[0]
    start = (sp.Piecewise((0, sp.Eq(int_rem(row, 2), 0)), (1, True)) if piecewise
             else int_rem(row, 2))
    cfg = ps.CreateKernelConfig(**CUDA, iteration_slice=ps.make_slice[:, start::2])
    cfg.gpu.manual_launch_grid = True
    return ps.create_kernel(ps.Assignment(f.center(), 1), cfg)


def test_pystencils_own_2d_red_black_pattern_is_predicted_like_the_int_rem_form():
    k = wps.extract(_pystencils_red_black_2d(True)).kernel
    ref = wps.extract(_pystencils_red_black_2d(False)).kernel
    (store,) = k.stores
    # pystencils' expected array: row r, columns r % 2, r % 2 + 2, ...; warpspeed's
    # index 0 is the contiguous (column) axis
    want = {(c, r) for r in range(16) for c in range(r % 2, 16, 2)}
    assert k.domain == ref.domain == (8, 16, 1)
    assert cells(store, k.domain, (4, 2, 1)) == want
    p, q = (ws.predict(x, "A100", (8, 16, 1)) for x in (k, ref))
    assert p.volumes == q.volumes and p.glups == q.glups


def test_odd_interior_checkerboard_notes_the_idle_threads():
    ex = wps.extract(_red_black(7, 1))
    assert ex.kernel.domain == (4, 7, 7)
    assert any("checkerboard" in n for n in ex.notes)


def test_checkerboard_dram_volume_matches_a_hand_count():
    # per red update (half the cells): every row of u is read whole, 8 B per cell = 16 B per
    # update; rhs is read and u written at every second cell, whole 32 B sectors: 16 B each.
    hand_load, hand_store = 16 + 16, 16
    k = wps.extract(_red_black(256, 0)).kernel
    load, store = _dram(ws.predict(k, "A100", (64, 4, 2)))
    assert 0.97 <= load / hand_load <= 1.1
    assert 0.97 <= store / hand_store <= 1.1


def test_parity_branch_points_to_the_checkerboard_slice():
    u = ps.fields("u: double[10, 10, 10]", layout="fzyx")

    @ps.flow.guarded_block(sp.Eq(int_rem(X + Y + Z, 2), 0))
    def red(b):
        b.store[u.center] = u[1, 0, 0] + u[-1, 0, 0]

    with pytest.raises(wps.RedBlackError, match=r"checkerboard iteration slice.*manual_launch"):
        wps.extract(ps.create_kernel(red, ps.CreateKernelConfig(**CUDA)))


# ---------------------------------------------------------------------------
# Grid-stride loops


def _grid_strided(scheme: str, a: int = 18):
    f, g = ps.fields(f"f, g: double[{a}, {a}, {a}]", layout="fzyx")
    cfg = ps.CreateKernelConfig(**CUDA)
    cfg.gpu.indexing_scheme = scheme
    asm = [ps.Assignment(g.center, f[1, 0, 0] + f[0, 1, 0] + f[0, 0, -1])]
    return ps.create_kernel(asm, cfg)


@pytest.mark.parametrize(
    "scheme, points, domain",
    [
        ("gridstrided_linear3d", (1, 1, 1), (16, 16, 16)),
        ("gridstrided_linear3d", (2, 1, 1), (8, 16, 16)),
        ("gridstrided_linear3d", (1, 2, 4), (16, 8, 4)),
        ("gridstrided_linear1d", (4, 1, 1), (1024, 1, 1)),
    ],
)
def test_grid_stride_threads_cover_the_interior_once(scheme, points, domain):
    ex = wps.extract(_grid_strided(scheme), wps.ExtractOptions(grid_points=points))
    k = ex.kernel
    assert k.domain == domain
    assert k.lups_per_thread == np.prod(points)
    interior = {(x, y, z) for x in range(1, 17) for y in range(1, 17) for z in range(1, 17)}
    block = (8, 2, 2) if scheme.endswith("3d") else (64, 1, 1)
    stored = [cells(s, k.domain, block) for s in k.stores]
    assert len(stored) == np.prod(points)
    assert set().union(*stored) == interior
    assert sum(len(s) for s in stored) == len(interior)  # each cell once


def test_grid_stride_dram_volume_matches_a_hand_count():
    # f read once (8 B), g written once (8 B) per update, whatever the points per thread
    k1 = wps.extract(_grid_strided("gridstrided_linear3d", 258)).kernel
    k4 = wps.extract(_grid_strided("gridstrided_linear3d", 258),
                     wps.ExtractOptions(grid_points=(1, 1, 4))).kernel
    for k in (k1, k4):
        load, store = _dram(ws.predict(k, "A100", (64, 4, 2)))
        assert 0.97 <= load / 8 <= 1.1 and 0.97 <= store / 8 <= 1.1


def test_grid_points_on_the_wrong_kernel_or_axis_are_refused():
    with pytest.raises(ws.KernelError, match=r"no grid-stride loop along z"):
        wps.extract(_grid_strided("gridstrided_linear1d"),
                    wps.ExtractOptions(grid_points=(1, 1, 2)))
    with pytest.raises(ws.KernelError, match=r"is for grid-strided kernels"):
        wps.extract(_grid_strided("linear3d"), wps.ExtractOptions(grid_points=(2, 1, 1)))


def test_more_grid_points_per_thread_than_the_model_holds_are_refused_before_the_walk():
    # a thread's points count as one folded update; many points a grid apart
    # would over-estimate DRAM traffic (and repeat the body per point)
    kf = _grid_strided("gridstrided_linear3d", 258)
    ok = wps.extract(kf, wps.ExtractOptions(grid_points=(1, 4, 4))).kernel
    assert math.prod(ok.fold) == wps.MAX_GRID_POINTS == 16
    with pytest.raises(wps.GridStridedLoopError, match=r"32 points per thread.*at most 16"):
        wps.extract(kf, wps.ExtractOptions(grid_points=(2, 4, 4)))


# ---------------------------------------------------------------------------
# Reductions


def _reduction(**gpu):
    f = ps.fields("f: double[258, 258, 258]", layout="fzyx")
    w = ps.TypedSymbol("w", "float64")
    cfg = ps.CreateKernelConfig(**CUDA)
    for key, value in gpu.items():
        setattr(cfg.gpu, key, value)
    return ps.create_kernel([ps.AddReductionAssignment(w, f.center**2)], cfg)


@pytest.mark.parametrize(
    "gpu, scope, per_lup, fma",
    [
        # per thread: w_local += f*f (1 FMA), one atomicAdd per thread
        ({}, "thread", 1.0, 1),
        # warp shuffles: 5 combine steps (16, 8, 4, 2, 1), one atomic per 32 threads
        ({"assume_warp_aligned_block_size": True, "warp_size": 32}, "warp", 1 / 32, 6),
        # CUB block reduction with the block fixed to 64x2x2: one atomic per 256 threads
        ({"use_cub_reductions": True, "default_block_size": (64, 2, 2)}, "block", 1 / 256, 6),
    ],
)
def test_reduction_atomics_per_update_and_limit_by_hand(gpu, scope, per_lup, fma):
    k = wps.extract(_reduction(**gpu)).kernel
    assert k.atomics.scope == scope and dict(k.fp_ops) == {"fma": fma}
    block = k.fixed_block or (64, 4, 2)
    if scope == "block":
        assert block == (64, 2, 2)
    p = ws.predict(k, "A100", block)
    m = ws.load_machine("A100")
    # one same-address atomic per clock at 1.41 GHz
    assert p.terms["atomics_per_lup"] == pytest.approx(per_lup)
    assert p.limits["atomics"] == pytest.approx(m.clock_ghz * parameter(m, "per_clock") / per_lup)
    assert p.glups <= p.limits["atomics"] * (1 + 1e-12)
    # f read once (8 B per update), nothing stored per update
    assert 0.97 <= p.volumes.dram_load / 8 <= 1.1 and p.volumes.dram_store == 0
    if scope == "thread":
        assert p.limiter == "atomics" and p.glups == pytest.approx(1.41)


def _warp_reduction(target: str, warp_size: int):
    f = ps.fields("f: double[258, 258, 258]", layout="fzyx")
    w = ps.TypedSymbol("w", "float64")
    cfg = ps.CreateKernelConfig(target=getattr(ps.Target, target), jit=ps.no_jit)
    cfg.gpu.assume_warp_aligned_block_size = True
    cfg.gpu.warp_size = warp_size
    return ps.create_kernel([ps.AddReductionAssignment(w, f.center**2)], cfg)


@pytest.mark.parametrize(
    "target, warp_size, machine, per_lup, noted",
    [
        # lane_id = thread_id % 32, atomic at lane 0: one per 32 threads, also on wave64
        ("HIP", 32, "MI210", 1 / 32, True),
        # code for the machine's wavefront: one per 64 threads
        ("HIP", 64, "MI210", 1 / 64, False),
        ("CUDA", 32, "A100", 1 / 32, False),
    ],
)
def test_warp_reduction_counts_the_warp_it_was_generated_for(
    target, warp_size, machine, per_lup, noted
):
    k = wps.extract(_warp_reduction(target, warp_size)).kernel
    assert k.atomics == ws.Atomics(1, "warp", 1, warp_size)
    # the FMA of f*f plus log2(warp_size) shuffle combines (5 for 32, 6 for 64)
    assert dict(k.fp_ops) == {"fma": 1 + int(math.log2(warp_size))}
    p = ws.predict(k, machine, (64, 2, 2))
    m = ws.load_machine(machine)
    assert p.terms["atomics_per_lup"] == pytest.approx(per_lup)
    assert p.limits["atomics"] == pytest.approx(m.clock_ghz * parameter(m, "per_clock") / per_lup)
    notes = [n for n in p.notes if "warp reduction" in n]
    if noted:
        assert notes == [f"the kernel's warp reduction was generated with gpu.warp_size = 32, "
                         f"{machine} runs warps of 64 lanes: counted as the code runs, one "
                         f"atomic per 32 threads (gpu.warp_size = 64 would issue 2x fewer)"]
    else:
        assert notes == []


def test_warp_reduction_for_wider_warps_than_the_machine_is_refused():
    # shuffles over 64 lanes on 32-wide warps: wrong code, not a slow one
    k = wps.extract(_warp_reduction("CUDA", 64)).kernel
    assert k.atomics.warp == 64
    msg = (r"warp reduction was generated with gpu.warp_size = 64, but A100 runs warps of 32 "
           r"lanes.*generate it with cfg.gpu.warp_size = 32$")
    with pytest.raises(ws.KernelError, match=msg):
        ws.predict(k, "A100", (64, 2, 2))
    with pytest.raises(ws.KernelError, match=msg):
        ws.rank(k, "A100", threads=256)
    assert ws.predict(k, "MI210", (64, 2, 2)).terms["atomics_per_lup"] == pytest.approx(1 / 64)


def test_hand_built_warp_atomics_without_a_warp_take_the_machines():
    base = wps.extract(_warp_reduction("HIP", 64)).kernel
    unset = replace(base, atomics=ws.Atomics(1, "warp"))
    assert ws.predict(unset, "MI210", (64, 2, 2)).terms["atomics_per_lup"] == pytest.approx(1 / 64)
    assert ws.predict(unset, "A100", (64, 2, 2)).terms["atomics_per_lup"] == pytest.approx(1 / 32)
    with pytest.raises(ws.KernelError, match="scope='warp'"):
        ws.Atomics(1, "thread", 1, 32)


def test_explain_names_the_atomics_limiter():
    from warpspeed.reports.advice import explanation_lines

    k = wps.extract(_reduction()).kernel
    p = ws.predict(k, "A100", (64, 4, 2))
    lines = explanation_lines(p, ws.advise(p, ws.load_machine("A100"), k))
    assert lines[0].startswith("binding limiter: atomics")
    assert any(line.startswith("atomics: 1 per update to one address") for line in lines)


def test_two_reductions_are_two_addresses_and_cas_is_noted():
    f = ps.fields("f: double[18, 18, 18]", layout="fzyx")
    w, m = ps.TypedSymbol("w", "float64"), ps.TypedSymbol("m", "float64")
    asm = [ps.AddReductionAssignment(w, f.center**2), ps.MaxReductionAssignment(m, f.center)]
    ex = wps.extract(ps.create_kernel(asm, ps.CreateKernelConfig(**CUDA)))
    assert ex.kernel.atomics == ws.Atomics(1, "thread", 2)
    assert any("atomicMax" in n and "compare-and-swap" in n for n in ex.notes)


def test_machine_without_the_atomics_rate_is_refused_for_reductions(tmp_path):
    text = open(ws.load_machine("A100").path).read()
    mine = tmp_path / "mine.toml"
    mine.write_text(text[: text.index("[atomics.per_clock]")])
    k = wps.extract(_reduction()).kernel
    with pytest.raises(ws.MachineError, match=r"lacks \[atomics.per_clock\]"):
        ws.predict(k, str(mine), (64, 4, 2))
    stencil = ws.Kernel(loads=k.loads, stores=k.loads, domain=k.domain)
    assert ws.predict(stencil, str(mine), (64, 4, 2)).glups > 0


def test_a_slice_one_cell_too_long_is_refused_by_name():
    # x runs over all 34 cells of src but reads x + 1 and x - 1: one cell outside at each end
    src, dst = ps.fields("src, dst: double[34, 34, 34]", layout="fzyx")
    cfg = ps.CreateKernelConfig(**CUDA, iteration_slice=ps.make_slice[0:34, 1:-1, 1:-1])
    kf = ps.create_kernel([ps.Assignment(dst.center, src[1, 0, 0] + src[-1, 0, 0])], cfg)
    with pytest.raises(ws.OutOfBoundsError, match=r"reads outside field src.*extent is 34"):
        wps.extract(kf)
    with pytest.raises(ws.EmptyRankingError, match="OutOfBoundsError"):
        wps.create_kernel([ps.Assignment(dst.center, src[1, 0, 0] + src[-1, 0, 0])], cfg,
                          folds=[(1, 1, 1)], threads=256, jobs=1,
                          options=wps.ExtractOptions(registers="estimate"))
