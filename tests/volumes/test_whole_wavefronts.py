"""Whole warps and wavefronts issued, and guarded bodies on AMD (MODEL.md §3,
§4, §15): hand counts and the public L1 stride micro-benchmark."""

from __future__ import annotations

import csv
import math

import pytest

import warpspeed as ws
from stencils import convolution2d
from warpspeed.machine import load_machine
from warpspeed.model import block_stage
from warpspeed.search.rank import rank
from warpspeed.timing import parameter
from warpspeed.validation.reference import shared_dir
from warpspeed.volumes.launch import occupancy


def _copy(n: int = 3072, itemsize: int = 4, stride: int = 1) -> ws.Kernel:
    a = ws.Field("A", shape=(n * stride + 64,), itemsize=itemsize)
    return ws.Kernel(loads=[a[ws.tidx * stride]], stores=[], domain=(n, 1, 1))


def test_an_idle_half_warp_costs_what_its_active_half_costs():
    # contiguous floats: every half warp is 64 B, one cycle; a 48-thread block
    # is a full warp (2 cycles) and a warp with one active half (charged 2):
    # 4 cycles for 48 updates, 32 x 4 / 48 per warp-update; 64 threads: 2
    k = _copy()
    full = block_stage(k, load_machine("A100"), (64, 1, 1)).l1_cycles
    part = block_stage(k, load_machine("A100"), (48, 1, 1)).l1_cycles
    assert full == pytest.approx(2.0)
    assert part == pytest.approx(32 * 4 / 48)


def test_thread_slots_are_whole_warps():
    k = _copy()
    # 64 warp slots of A100 (2048 threads), two per 48-thread block: 32
    # (also the block limit); RX 7900 XTX: 32 wave32 slots per CU, 16 blocks
    assert occupancy(k, load_machine("A100"), (48, 1, 1)).by_threads == 32
    assert occupancy(k, load_machine("RX7900XTX"), (48, 1, 1)).by_threads == 16


def test_a_cdna_wavefront_takes_four_clocks_whatever_its_lines():
    # wave64 of contiguous floats: 4 lines of 64 B, 4 clocks; a block of 32
    # issues a whole wavefront for 32 updates: its 2 lines take the 4 clocks
    m = load_machine("MI210")
    k = _copy()
    assert block_stage(k, m, (64, 1, 1)).l1_cycles == pytest.approx(4.0)
    assert block_stage(k, m, (32, 1, 1)).l1_cycles == pytest.approx(4.0 * 64 / 32)


L1_STRIDES = shared_dir() / "data" / "microbench" / "l1_strides"


@pytest.mark.skipif(not (L1_STRIDES / "mi210.csv").is_file(),
                    reason="public micro-benchmark tables kept outside the repository")
def test_one_address_per_wavefront_costs_the_measured_clocks_on_mi210():
    with (L1_STRIDES / "mi210.csv").open() as fh:
        row = next(r for r in csv.DictReader(fh)
                   if r["type"] == "float" and r["pattern"] == "stride"
                   and r["stride_or_width"] == "0")
    measured = float(row["cycles_per_warp_load"])  # per 32 lanes
    a = ws.Field("A", shape=(64,), itemsize=4)
    k = ws.Kernel(loads=[a[ws.threadIdx.x * 0]], stores=[], domain=(1024, 1, 1))
    counted = block_stage(k, load_machine("MI210"), (1024, 1, 1)).l1_cycles * 32 / 64
    assert counted == pytest.approx(measured, rel=0.1)  # one line, but 2 clocks per 32 lanes


def test_partial_wavefronts_are_predicted_ranked_and_noted():
    k = _copy()
    p = ws.predict(k, "MI210", (32, 1, 1))
    assert any("whole wavefronts" in n for n in p.notes)
    assert not any("whole wavefronts" in n for n in ws.predict(k, "MI210", (64, 1, 1)).notes)
    r = rank(k, "MI210", threads=(32, 64), folds=[(1, 1, 1)], jobs=1)
    assert any(math.prod(q.block) == 32 for q in r.predictions)
    assert not any("wavefront" in e.reason for e in r.excluded)


def _guarded(machine: str, block, tile):
    k = convolution2d.kernel(tile_x=tile[0], tile_y=tile[1])
    return ws.predict(k, machine, block)


def test_a_guarded_body_on_amd_waits_an_l2_round_trip_per_load():
    m = load_machine("RX7900XTX")
    p = _guarded("RX7900XTX", (48, 1, 1), (2, 1))
    # 225 loads per update (nothing merges across 48-wide outputs), 16 blocks
    # of 48 threads resident per CU (32 wave32 slots, two per block)
    resident = 16 * 48
    l2_ns = parameter(m, "l2_latency_ns")
    assert p.terms["t_l1_guarded_ns"] == pytest.approx(225 * l2_ns / (resident * m.sms))
    assert p.terms["t_l1_ns"] >= p.terms["t_l1_guarded_ns"]


@pytest.mark.parametrize("machine,block,tile", [
    ("A100", (48, 1, 1), (2, 1)),        # NVIDIA predicates the guarded blocks
    ("RX7900XTX", (48, 1, 1), (1, 1)),   # one output: one guard
    ("RX7900XTX", (64, 1, 1), (2, 1)),   # 4096 divisible: the unguarded body
])
def test_no_guard_latency_where_loads_stay_in_flight(machine, block, tile):
    assert _guarded(machine, block, tile).terms["t_l1_guarded_ns"] == 0.0
