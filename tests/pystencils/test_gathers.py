"""Index-list (boundary) kernels: gathers from a list of cells (issue 20).

The list is read contiguously, the PDFs at the cells it names. Checked
against hand counts of 32 B sectors on a channel (walls at y = 0 and
y = n - 1), whose list is lbmpy's own, and against the positions evaluated
by hand for a hand-written ``ws.Kernel`` (MODEL.md §1, §4-§6)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pystencils as ps
import pytest
from lbmpy import LBMConfig, LBStencil, Stencil, create_lb_method
from lbmpy.boundaries import UBB, NoSlip
from lbmpy.boundaries.boundaryhandling import create_lattice_boltzmann_boundary_kernel
from pystencils.boundaries.boundaryconditions import Neumann
from pystencils.boundaries.boundaryhandling import create_boundary_kernel
from pystencils.boundaries.createindexlist import (
    create_boundary_index_list,
    numpy_data_type_for_boundary_object,
)

import warpspeed as ws
import warpspeed.pystencils as wps
from tests.corpus.lbm import channel_list
from warpspeed.input.gathers import Gather
from warpspeed.model import _gather_l1
from warpspeed.volumes.gathers import GatherL1, gather_volumes

N = 66  # array extent: 64 interior cells and one ghost layer each side


def _boundary_kernel(boundary, stencil: Stencil, dim: int, n: int = N, layout: str = "fzyx"):
    method = create_lb_method(LBMConfig(stencil=LBStencil(stencil)))
    q = len(LBStencil(stencil))
    pdfs = ps.fields(f"pdfs({q}): double[{', '.join([str(n)] * dim)}]", layout=layout)
    index_field = ps.Field.create_generic(
        "indexField", spatial_dimensions=1, field_type=ps.FieldType.INDEXED,
        dtype=numpy_data_type_for_boundary_object(boundary, dim),
    )
    return create_lattice_boltzmann_boundary_kernel(
        pdfs, index_field, method, boundary, target=ps.Target.CUDA, jit=ps.no_jit
    )


def _channel(stencil: Stencil, dim: int, n: int = N) -> np.ndarray:
    flag = np.ones((n,) * dim, dtype=np.uint32)
    flag[:, 0] = 2
    flag[:, n - 1] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pure-Python fallback, "consider cython"
        return create_boundary_index_list(flag, LBStencil(stencil), 2, 1, 1)


@pytest.mark.parametrize("stencil, dim", [(Stencil.D3Q19, 3), (Stencil.D2Q9, 2)])
def test_corpus_channel_list_is_lbmpys_own(stencil, dim):
    n = 10
    assert np.array_equal(channel_list(stencil.name, n, dim), _channel(stencil, dim, n))


def test_noslip_on_a_channel_matches_the_sector_hand_count():
    # 2 walls x 64 x 64 cells x 5 links into the wall (D3Q19 directions with d_y = -+1).
    # Per entry: the list entry (x, y, z, dir) 16 B. The PDF read pdfs[x, 1, z, dir]: the
    # links of one direction are a whole row of 64 doubles starting at x = 1, bytes 8..519:
    # 17 sectors per 64 entries. The write goes to the inverse direction at the neighbour in
    # that direction: 3 of the 5 rows start at x = 1 (17 sectors), one at x = 0 (bytes
    # 0..511, 16 sectors), one at x = 2 (17 sectors).
    lst = _channel(Stencil.D3Q19, 3)
    assert lst.size == 2 * 64 * 64 * 5
    k = wps.extract(_boundary_kernel(NoSlip(), Stencil.D3Q19, 3),
                    wps.ExtractOptions(index_list=lst)).kernel
    assert k.domain == (lst.size, 1, 1)
    p = ws.predict(k, "A100", (256, 1, 1))
    hand_load = 16 + 17 * 32 / 64
    hand_store = (16 + 4 * 17) * 32 / (5 * 64)
    assert p.volumes.dram_load == pytest.approx(hand_load, rel=1e-3)
    assert p.volumes.dram_store == pytest.approx(hand_store, rel=1e-3)


def test_ubb_on_a_channel_matches_the_sector_hand_count():
    # D2Q9, 2 walls x 64 cells x 3 links; entry (x, y, dir) 12 B; one row of 64 doubles per
    # direction from x = 1: 17 sectors per 64 entries read; written rows: inverse
    # directions at x - 1, x, x + 1 neighbours: 16, 17, 17 sectors per 64 entries.
    lst = _channel(Stencil.D2Q9, 2)
    k = wps.extract(_boundary_kernel(UBB((0.05, 0)), Stencil.D2Q9, 2),
                    wps.ExtractOptions(index_list=lst)).kernel
    p = ws.predict(k, "A100", (128, 1, 1))
    assert p.volumes.dram_load == pytest.approx(12 + 17 * 32 / 64, rel=2e-3)
    assert p.volumes.dram_store == pytest.approx((16 + 17 + 17) * 32 / (3 * 64), rel=2e-3)


def test_list_order_without_the_list_by_hand():
    k = _boundary_kernel(NoSlip(), Stencil.D3Q19, 3)
    ordered = wps.ExtractOptions(index_list=40960)
    sorted_ = ws.predict(wps.extract(k, ordered).kernel, "A100", (256, 1, 1))
    random = ws.predict(wps.extract(k, replace(ordered, list_order="random")).kernel, "A100",
                        (256, 1, 1))
    # the list 16 B; sorted: 8 B per PDF access (whole rows), random: a 32 B sector each
    assert sorted_.volumes.dram_load == pytest.approx(16 + 8, rel=1e-3)
    assert sorted_.volumes.dram_store == pytest.approx(8)
    assert random.volumes.dram_load == pytest.approx(16 + 32, rel=1e-3)
    assert random.volumes.dram_store == pytest.approx(32)
    assert random.limits["dram"] < sorted_.limits["dram"]


def test_an_array_of_structures_channel_matches_the_sector_hand_count():
    # zyxf: a cell's 19 doubles adjacent, 152 B; 4 cells are 19 sectors, so the pattern
    # repeats every 4 cells from a sector boundary (cell index = x + 66 (y + 66 z)). The
    # read pdfs[x, y, z, dir] of the 5 links into the wall y = 0 (dirs 2, 9, 10, 12, 16:
    # bytes 16, 72, 80, 96, 128 of the cell) touches 4, 3, 4, 4 sectors in cells 0..3 of a
    # group, 15 per group; a row x = 1..64 at y = 1 starts at cell 3 of a group: 4 + 15 x 15
    # + 11 = 240 sectors per 320 entries. Wall y = 65 (dirs 1, 7, 8, 11, 15: bytes 8, 56,
    # 64, 88, 120): 4 sectors in each cell of a group, the row starts at cell 1: 12 + 15 x 16
    # + 4 = 256. Per entry (240 + 256) x 32 / 640 = 24.8 B where the rows of an SoA array
    # merge into 8 B (the test above), plus the 16 B list entry.
    lst = _channel(Stencil.D3Q19, 3)
    k = _boundary_kernel(NoSlip(), Stencil.D3Q19, 3, layout="zyxf")
    p = ws.predict(wps.extract(k, wps.ExtractOptions(index_list=lst)).kernel, "A100",
                   (256, 1, 1))
    assert p.volumes.dram_load == pytest.approx(16 + (240 + 256) * 32 / 640, rel=1e-3)
    # the write pdfs[cell + c_dir, inverse dir]: its distinct sectors counted over the list
    dirs = np.array([tuple(d) for d in LBStencil(Stencil.D3Q19)])
    inverse = np.array([np.flatnonzero((dirs == -d).all(axis=1))[0] for d in dirs])
    d = lst["dir"]
    cell = (lst["x"] + dirs[d, 0]) + N * ((lst["y"] + dirs[d, 1]) + N * (lst["z"] + dirs[d, 2]))
    sectors = np.unique((cell * 19 + inverse[d]) * 8 // 32)
    assert p.volumes.dram_store == pytest.approx(sectors.size * 32 / lst.size, rel=1e-3)
    assert p.volumes.dram_store > 3 * 8  # what a sorted list of its length would have said


@pytest.mark.parametrize("layout", ["zyxf", "c"])
def test_a_sorted_list_by_its_length_is_refused_for_an_array_of_structures(layout):
    k = _boundary_kernel(NoSlip(), Stencil.D3Q19, 3, layout=layout)
    with pytest.raises(wps.IndirectAccessError,
                       match=r"^the field pdfs keeps the 19 values of a cell adjacent .*sorted "
                             r"index list given by its length .*give the list itself, "
                             r"index_list=.*list_order='random'"):
        wps.extract(k, wps.ExtractOptions(index_list=40960))
    # random order costs a sector per entry whatever the layout: still predicted
    random = wps.extract(k, wps.ExtractOptions(index_list=40960, list_order="random")).kernel
    p = ws.predict(random, "A100", (256, 1, 1))
    assert p.volumes.dram_load == pytest.approx(16 + 32, rel=1e-3)
    assert p.volumes.dram_store == pytest.approx(32)


def test_pystencils_neumann_boundary_kernel_is_a_gather():
    # Neumann: f[cell] = f[cell + offset(dir)], one link per cell (single_link)
    f = ps.fields(f"f: double[{N}, {N}, {N}]", layout="fzyx")
    index_field = ps.Field.create_generic(
        "indexField", spatial_dimensions=1, field_type=ps.FieldType.INDEXED,
        dtype=numpy_data_type_for_boundary_object(Neumann(), 3),
    )
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    k = create_boundary_kernel(f, index_field, LBStencil(Stencil.D3Q7), Neumann(), cfg)
    n = 64 * 64
    ex = wps.extract(k, wps.ExtractOptions(index_list=n, list_order="random"))
    assert len(ex.kernel.gathers) == 2
    assert {g.store for g in ex.kernel.gathers} == {False, True}
    p = ws.predict(ex.kernel, "A100", (256, 1, 1))
    assert p.volumes.dram_load == pytest.approx(16 + 32, rel=1e-3)


def test_a_gather_needs_the_list_or_its_length():
    k = _boundary_kernel(NoSlip(), Stencil.D3Q19, 3)
    with pytest.raises(wps.IndirectAccessError, match=r"field pdfs .*index_list=<entries>"):
        wps.extract(k)
    with pytest.raises(ws.KernelError, match=r"list_order must be one of"):
        wps.extract(k, wps.ExtractOptions(index_list=10, list_order="zigzag"))
    with pytest.raises(ws.KernelError, match=r"structured NumPy array"):
        wps.extract(k, wps.ExtractOptions(index_list=np.zeros(10)))
    with pytest.raises(ws.KernelError, match=r"do not match the kernel's reads"):
        wps.extract(k, wps.ExtractOptions(index_list=_channel(Stencil.D2Q9, 2)))


def test_hand_written_gathers_count_sectors_per_warp_and_whole_list():
    f = ws.Field("f", shape=(4096,), itemsize=8)
    # contiguous positions: 8 B per entry at every level, 1 cycle per half warp
    contiguous = gather_volumes((Gather(f, positions=np.arange(1024)),))
    assert contiguous.l1_load == 8 and contiguous.dram_load == 8
    assert contiguous.l1_cycles == 2
    # stride 4 doubles: a sector per entry; words 0, 4, 8, ... of a half warp fall in banks
    # 0, 4, 8, 12, four each: 4 cycles per half warp; stride 16: one bank, 16 cycles
    # (MODEL.md §4: B[2*tid] 2, D[16*tid] 16)
    strided = gather_volumes((Gather(f, positions=4 * np.arange(1024)),))
    assert strided.l1_load == 32 and strided.dram_load == 32
    assert strided.l1_cycles == 2 * 4
    wide = ws.Field("w", shape=(1 << 16,), itemsize=8)
    assert gather_volumes((Gather(wide, positions=16 * np.arange(1024)),)).l1_cycles == 2 * 16
    # every entry twice the same cell: the whole list reads each sector once, DRAM 4 B
    twice = gather_volumes((Gather(f, positions=np.repeat(np.arange(512), 2)),))
    assert twice.dram_load == 4 and twice.l1_load == 4
    with pytest.raises(ws.KernelError, match=r"order in"):
        Gather(f, length=10, order="zigzag")


def test_gathers_are_counted_by_the_l1_model_of_the_machine():
    """The hand counts of MODEL.md §4 per L1 model (tag slope 0.25 for round
    figures): a warp pipe takes per warp the larger of its data wavefronts
    (32 banks of 4 B per 128 B pass) and 1 + t (lines - 1); a line-serving
    L1 the distinct lines of each wavefront of 64, at least 64 / lanes per
    cycle; the half-warp count scales to the wavefront."""
    f = ws.Field("f", shape=(1 << 16,), itemsize=8)
    pipe = GatherL1("warppipe", 32, tag_cycles=0.25)

    def cycles(rule: GatherL1, stride: int | None = None, order: str = "sorted") -> float:
        g = (Gather(f, positions=stride * np.arange(1024)) if stride is not None
             else Gather(f, length=1024, order=order))
        return gather_volumes((g,), rule).l1_cycles

    # contiguous doubles: two passes of one wavefront, two lines (1.25)
    assert cycles(pipe, 1) == cycles(pipe) == 2.0
    # 32 B apart: per pass words 8k, 8k+1 of 16 lanes in banks 0, 8, 16, 24 (+1), four
    # each: 4 wavefronts, 8 per warp; 8 lines, 2.75
    assert cycles(pipe, 4) == 8.0
    # 128 B apart: 16 words per bank and pass, 32; 32 lines, 8.75
    assert cycles(pipe, 16) == 32.0
    # random order: every lane its own line, 1 + 0.25 * 31
    assert cycles(pipe, order="random") == 8.75
    lines = GatherL1("lines", 64, line_bytes=128, lanes_per_cycle=16)
    # 64 contiguous doubles: 4 lines, the floor 64 / 16 = 4; 128 B apart: 64 lines
    assert cycles(lines, 1) == cycles(lines) == 4.0
    assert cycles(lines, 16) == cycles(lines, order="random") == 64.0
    # the half-warp count per wavefront of 64: twice that of 32
    assert cycles(GatherL1("halfwarp", 64), 4) == 2 * cycles(GatherL1(), 4) == 16.0


@pytest.mark.parametrize("machine, model, rule", [
    ("A100", "latency", "halfwarp"), ("H200", "latency", "warppipe"),
    ("H200", "paper", "halfwarp"), ("MI300X", "latency", "lines")])
def test_a_prediction_counts_gathers_by_its_machines_l1_model(machine, model, rule):
    """The L1 cycles of a prediction with a gather are its regular accesses'
    count plus the gather's by the machine's L1 model (the paper model keeps
    the half-warp count on Hopper, as for the regular accesses)."""
    f = ws.Field("f", shape=(1 << 16,), itemsize=8)
    out = ws.Field("out", shape=(4096,), itemsize=8)
    plain = ws.Kernel(loads=[], stores=[out[ws.tidx]], domain=(4096, 1, 1))
    gathered = replace(plain, gathers=(Gather(f, positions=4 * np.arange(4096)),))
    m = ws.load_machine(machine)
    l1 = _gather_l1(m, model == "latency")
    assert l1.model == rule and l1.warp == m.warp_size
    p, q = (ws.predict(k, m, (256, 1, 1), model=model) for k in (plain, gathered))
    expected = gather_volumes(gathered.gathers, l1).l1_cycles
    assert q.l1_cycles - p.l1_cycles == pytest.approx(expected)


def _fixed_size_neumann(entries: int):
    f = ps.fields(f"f: double[{N}, {N}, {N}]", layout="fzyx")
    index_field = ps.Field.create_fixed_size(
        "indexField", (entries,), field_type=ps.FieldType.INDEXED,
        dtype=numpy_data_type_for_boundary_object(Neumann(), 3),
    )
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    return create_boundary_kernel(f, index_field, LBStencil(Stencil.D3Q7), Neumann(), cfg)


@pytest.mark.parametrize("given", [99, 101, 4096])
def test_an_index_list_of_another_length_than_its_fixed_size_field_is_refused(given):
    k = _fixed_size_neumann(100)
    with pytest.raises(wps.IndexListLengthError,
                       match=rf"{given} entries.*indexField of 100 entries"):
        wps.extract(k, wps.ExtractOptions(index_list=given))


def test_a_fixed_size_index_field_predicts_its_own_length():
    k = _fixed_size_neumann(100)
    ex = wps.extract(k)  # no list needed: the field fixes 100 entries
    assert ex.kernel.domain == (100, 1, 1)
    assert {g.length for g in ex.kernel.gathers} == {100}
    given = wps.extract(k, wps.ExtractOptions(index_list=100)).kernel
    assert given.domain == ex.kernel.domain and given.loads == ex.kernel.loads


def test_a_boundary_that_writes_per_entry_data_is_refused_naming_the_index_list():
    # NoSlip with the force on the boundary stores into a struct field through
    # a cast pointer; the refusal names the field and the way to predict the rest
    boundary = NoSlip(calculate_force_on_boundary=True)
    kf = _boundary_kernel(boundary, Stencil.D3Q19, 3)
    with pytest.raises(wps.UnsupportedKernelError,
                       match=r"struct members of force_vector .*calculate_force_on_boundary=False"):
        wps.extract(kf, wps.ExtractOptions(index_list=100))
    assert wps.extract(_boundary_kernel(NoSlip(), Stencil.D3Q19, 3),
                       wps.ExtractOptions(index_list=100)).kernel
