"""Many concurrent DRAM streams (MODEL.md §11): the address runs of a kernel
counted by hand, the efficiency curve at hand-computed points, and the
machine figure read from its micro-benchmark tables."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import warpspeed as ws
from stencils import lbm_fluidx3d
from warpspeed.timing import parameter
from warpspeed.timing.memory_systems import DRAM_BANKS
from warpspeed.timing.memory_systems import scattered_efficiency as stream_efficiency
from warpspeed.validation import microbench as mb
from warpspeed.validation.reference import shared_dir
from warpspeed.volumes.streams import STREAM_GAP

x, y, z = ws.tidx, ws.tidy, ws.tidz
MICRO = shared_dir() / "data" / "microbench"
needs_micro = pytest.mark.skipif(
    not MICRO.is_dir(), reason=f"micro-benchmark tables not found at {MICRO}: public data kept "
    "in the project's shared/ folder beside the repository, not shipped")


def _streams(kernel: ws.Kernel, block: tuple[int, int, int] = (64, 1, 1),
             machine: str = "MI100") -> ws.Prediction:
    return ws.predict(kernel, machine, block)


def test_a_copy_has_two_streams_and_runs_at_its_plateau() -> None:
    a = ws.Field("a", shape=(256, 256, 256))
    b = ws.Field("b", shape=(256, 256, 256))
    p = _streams(ws.Kernel(loads=[a[x, y, z]], stores=[b[x, y, z]], domain=(256, 256, 256)))
    assert p.traits.dram_streams == 2.0
    assert p.terms["dram_stream_efficiency"] == 1.0


def test_volumes_hold_bytes_and_the_traits_how_they_move() -> None:
    # a 3-point stencil in x: one load stream and one store stream, three load
    # instructions per update (MODEL.md §11); Volumes has bytes per update only
    a = ws.Field("a", shape=(4096,))
    b = ws.Field("b", shape=(4096,))
    k = ws.Kernel(loads=[a[x], a[x + 1], a[x + 2]], stores=[b[x]], domain=(4094,))
    p = _streams(k)
    assert (p.traits.dram_streams, p.traits.loads_per_lup) == (2.0, 3.0)
    assert p.to_dict()["details"]["traits"]["loads_per_lup"] == 3.0
    assert all(f.name.startswith(("l1_", "l2_", "dram_load", "dram_store"))
               for f in dataclasses.fields(p.volumes))


def test_rows_of_one_plane_are_one_stream_planes_are_separate() -> None:
    # 3-point stencils along y (rows 2 KiB apart: one run) and along z (planes
    # 512 KiB apart, more than the 64 KiB gap: three runs)
    a = ws.Field("a", shape=(256, 258, 258))
    b = ws.Field("b", shape=(256, 258, 258))
    along_y = ws.Kernel(loads=[a[x, y + 1 + d, z + 1] for d in (-1, 0, 1)],
                        stores=[b[x, y + 1, z + 1]], domain=(256, 256, 256))
    along_z = ws.Kernel(loads=[a[x, y + 1, z + 1 + d] for d in (-1, 0, 1)],
                        stores=[b[x, y + 1, z + 1]], domain=(256, 256, 256))
    assert 256 * 8 < STREAM_GAP < 256 * 258 * 8
    fy = _streams(along_y).footprint.streams
    fz = _streams(along_z).footprint.streams
    assert (fy.load_runs, fy.store_runs) == (1, 1)
    assert (fz.load_runs, fz.store_runs) == (3, 1)


def test_streams_are_bounded_by_what_dram_moves() -> None:
    """A z-star whose planes the L2 holds (256 x 64 rows: 128 KiB planes, a
    block of 256 x 1 x 4) reads each element once from DRAM: one read stream,
    not three."""
    a = ws.Field("a", shape=(256, 64, 258))
    b = ws.Field("b", shape=(256, 64, 258))
    k = ws.Kernel(loads=[a[x, y, z + 1 + d] for d in (-1, 0, 1)], stores=[b[x, y, z + 1]],
                  domain=(256, 64, 256))
    p = _streams(k, (256, 1, 4))
    assert p.footprint.streams.load_runs == 3
    assert p.volumes.dram_load < 1.2 * 8  # the layer condition holds
    assert p.traits.dram_streams == 1 + 1


def test_an_array_of_structures_is_one_stream_a_structure_of_arrays_many() -> None:
    n = 64
    aos = ws.Field("f", shape=(19, n, n, n))  # the 19 components of a cell adjacent
    soa = ws.Field("g", shape=(n, n, n, 19))  # each component an array of n^3
    k_aos = ws.Kernel(loads=[aos[i, x, y, z] for i in range(19)],
                      stores=[aos[i, x, y, z] for i in range(19)], domain=(n, n, n))
    k_soa = ws.Kernel(loads=[soa[x, y, z, i] for i in range(19)],
                      stores=[soa[x, y, z, i] for i in range(19)], domain=(n, n, n))
    assert _streams(k_aos).traits.dram_streams == 2.0
    assert _streams(k_soa).traits.dram_streams == 38.0


@pytest.mark.parametrize("storage", ["fp32", "fp16s"])
def test_fluidx3d_esoteric_pull_has_39_streams(storage: str) -> None:
    """19 population arrays loaded and stored in place, and the flag bytes:
    20 read runs, 19 write runs (the neighbours' rows lie within the gap)."""
    p = _streams(lbm_fluidx3d.kernel(storage=storage))
    s = p.footprint.streams
    assert (s.load_runs, s.store_runs) == (20, 19)
    assert p.traits.dram_streams == 39.0


def test_esoteric_pull_stores_exactly_what_it_loads() -> None:
    k = lbm_fluidx3d.kernel()
    populations = [a for a in k.loads if a.field.name == "fi"]
    assert set(populations) == set(k.stores) and len(set(k.stores)) == 19
    slots = sorted(int(a.index[3]) for a in k.stores)
    assert slots == list(range(19))  # every population once


def test_efficiency_curve_at_hand_computed_points() -> None:
    q = 1 - 1 / DRAM_BANKS
    assert stream_efficiency(1, 0.7) == stream_efficiency(2, 0.7) == 1.0
    assert stream_efficiency(3, 0.7) == pytest.approx(0.7 + 0.3 * q)
    assert stream_efficiency(10, 0.7) == pytest.approx(0.7 + 0.3 * q ** 8)
    assert stream_efficiency(1000, 0.7) == pytest.approx(0.7)
    assert stream_efficiency(39, None) == 1.0  # not measured: no term
    assert stream_efficiency(39, 1.0) == 1.0


def _without(text: str, *tables: str) -> str:
    """A machine file's text without the named tables."""
    for table in tables:
        head, _, tail = text.partition(f"[{table}]")
        tail = tail[tail.index("\n[") + 1:] if "\n[" in tail else ""
        text = head + tail
    return text


def test_a_machine_file_without_the_fraction_gets_no_term(tmp_path: Path) -> None:
    """Neither the micro-benchmark fraction nor the memory system stated: no
    many-stream term at all (MODEL.md §11)."""
    text = (Path(ws.__file__).parent / "machines" / "L40.toml").read_text()
    (tmp_path / "m.toml").write_text(_without(text, "latency.dram_scattered_fraction", "memory",
                                              "ecc"))
    m = ws.load_machine(tmp_path / "m.toml")
    assert parameter(m, "dram_scattered_fraction") is None and not m.memory
    p = ws.predict(lbm_fluidx3d.kernel(), m, (64, 1, 1))
    assert p.terms["dram_stream_efficiency"] == 1.0
    assert p.glups > ws.predict(lbm_fluidx3d.kernel(), "L40", (64, 1, 1)).glups


def test_an_out_of_range_fraction_is_refused_by_name(tmp_path: Path) -> None:
    text = (Path(ws.__file__).parent / "machines" / "MI100.toml").read_text()
    bad = text.replace("[latency.dram_scattered_fraction]\nvalue = 0.759",
                       "[latency.dram_scattered_fraction]\nvalue = 1.5")
    (tmp_path / "m.toml").write_text(bad)
    with pytest.raises(ws.MachineError, match=r"dram_scattered_fraction.*\[0.2, 1\]"):
        ws.load_machine(tmp_path / "m.toml")


@needs_micro
@pytest.mark.parametrize("machine, gpu", [("MI100", "mi100"), ("MI210", "mi210"),
                                          ("RX6900XT", "rx6900xt"), ("L40", "l40"),
                                          ("A100-80GB", "a100_80"), ("H100", "h100_pcie")])
def test_machine_fraction_is_the_rule_on_its_tables(machine: str, gpu: str) -> None:
    sc = mb.scattered(MICRO / "l2_cache" / f"{gpu}.csv", MICRO / "stream" / f"{gpu}.csv")
    m = ws.load_machine(machine)
    assert parameter(m, "dram_scattered_fraction") == round(sc.fraction, 3)
    assert f"l2_cache/{gpu}.csv" in m.source("latency.dram_scattered_fraction")


@pytest.mark.parametrize("block, run", [
    ((4, 8, 1), 32.0),     # 4 doubles of a row: one sector
    ((8, 4, 1), 64.0),     # 8 doubles: two sectors
    ((64, 2, 1), 512.0),   # 64 doubles: sixteen sectors
    ((1, 32, 1), 32.0),    # one double still moves its whole sector
])
def test_a_block_visits_each_row_for_its_run_of_sectors(block, run) -> None:
    # a copy of aligned rows of 256 doubles: each row of the block is one run of
    # block_x * 8 bytes, rounded up to whole 32 B sectors (MODEL.md §11)
    a = ws.Field("a", shape=(256, 256, 256))
    b = ws.Field("b", shape=(256, 256, 256))
    k = ws.Kernel(loads=[a[x, y, z]], stores=[b[x, y, z]], domain=(256, 256, 256))
    assert ws.predict(k, "H200", block).traits.dram_run_bytes == run


def test_a_stencil_run_spans_its_neighbours() -> None:
    # a 3-point stencil along x on rows of 258 doubles (2064 B: the rows start 0
    # or 16 B into a sector): a block 8 wide reads x - 1 .. x + 8 of each row,
    # 80 B over three sectors at either alignment, and stores 64 B from one
    # double further, over three sectors too
    a = ws.Field("a", shape=(258, 256, 256))
    b = ws.Field("b", shape=(258, 256, 256))
    k = ws.Kernel(loads=[a[x + 1 + d, y, z] for d in (-1, 0, 1)], stores=[b[x + 1, y, z]],
                  domain=(256, 256, 256))
    assert ws.predict(k, "H200", (8, 4, 1)).traits.dram_run_bytes == 96.0
