"""Load rounds (MODEL.md §11): a thread issues as many loads as its
registers hold besides the others and waits an L2 latency for each further
round. The independent truth is the SASS of pystencils' kernels for sm_90
(nvcc 13.0, read with nvdisasm): the registers, the loads each thread issues
and how many of them go out before the first FMA (the window); the rounds
are the loads over the window, rounded up."""

from __future__ import annotations

import dataclasses
import math

import pytest

import warpspeed as ws
from stencils.star3d_by_hand import kernel as star
from warpspeed.measure import generate_variant
from warpspeed.timing.latency import load_rounds, load_rounds_ns
from warpspeed.timing.latency_parameters import require

#: The H200 file's L2 latency: one round's wait.
L2_NS = float(require(ws.load_machine("H200")).l2_latency_ns)

R1 = {"radius": 1, "shape": (512, 512, 512)}
#: (stencil, parameters, fold, registers, loads per thread, loads before the first FMA)
SASS = (
    ("star3d", R1, (1, 1, 1), 22, 7, 7),
    ("star2d", {"shape": (8192, 8192)}, (1, 1, 1), 17, 5, 5),
    ("copy3d", {"shape": (512, 512, 512)}, (1, 1, 1), 12, 1, 1),
    ("box3d", {"shape": (640, 512, 512)}, (1, 1, 1), 32, 27, 11),
    ("star3d", {"radius": 2, "shape": (640, 512, 512)}, (1, 1, 1), 32, 13, 11),
    ("star3d", {"radius": 4, "shape": (640, 512, 512)}, (1, 1, 1), 32, 25, 11),
    ("star3d", R1, (1, 4, 1), 32, 22, 11),
    ("box3d", {"shape": (640, 512, 512)}, (1, 1, 2), 56, 36, 23),
    ("lbm_d3q19", {"precision": 64, "shape": (256, 256, 256)}, (1, 1, 1), 70, 19, 19),
    ("lbm_d3q19", {"precision": 32, "shape": (256, 256, 256)}, (1, 1, 1), 40, 19, 19),
)
#: Two kernels whose compiled code takes one round more than the count gives.
ONE_MORE = (
    ("star3d", {"radius": 1, "shape": (2048, 512, 32)}, (1, 4, 1), 32, 22, 10),
    ("box3d", {"shape": (640, 512, 512)}, (1, 2, 1), 32, 36, 11),
)


def compiled(stencil, params, fold, registers):
    k = generate_variant(stencil, params, fold)[0]
    return dataclasses.replace(k, registers=registers, registers_source="nvcc sm_90")


@pytest.mark.parametrize(("stencil", "params", "fold", "registers", "loads", "window"), SASS)
def test_rounds_follow_the_compiled_windows(stencil, params, fold, registers, loads, window):
    k = compiled(stencil, params, fold, registers)
    p = ws.predict(k, "H200", (64, 4, 1))
    assert p.traits.loads_per_lup * k.lups_per_thread == pytest.approx(loads)
    rounds = math.ceil(loads / window)
    assert load_rounds(k, loads) == rounds
    assert p.terms["load_rounds_ns"] == pytest.approx((rounds - 1) * L2_NS)


@pytest.mark.parametrize(("stencil", "params", "fold", "registers", "loads", "window"), ONE_MORE)
def test_two_long_folded_kernels_take_one_round_more_than_counted(stencil, params, fold,
                                                                  registers, loads, window):
    k = compiled(stencil, params, fold, registers)
    assert load_rounds(k, loads) == math.ceil(loads / window) - 1


def test_a_hand_written_description_and_an_amd_gpu_wait_no_rounds():
    hand = star(radius=4, shape=(640, 512, 512), fold=(1, 1, 1), alignment=0)
    assert hand.registers_source == "kernel" and load_rounds(hand, 25) == 1
    box = compiled(*SASS[3][:4])
    assert load_rounds(box, 27) == 3
    assert load_rounds_ns(ws.load_machine("MI210"), box, 27) == 0.0
    assert load_rounds_ns(ws.load_machine("H200"), box, 27) == pytest.approx(2 * L2_NS)


def test_rounds_lengthen_the_residence_only_where_the_bytes_in_flight_bind():
    """One block of 256 threads per SM (the occupancy run's padded box): the
    DRAM bandwidth falls with the longer residence. With every SM full the
    box is L2-bound and its GLup/s do not move. The same kernel as a
    hand-written description (one round) is the reference."""
    box = compiled(*SASS[3][:4])
    no_rounds = dataclasses.replace(box, registers_source="kernel")
    padded, padded_ref = (dataclasses.replace(k, shared_memory=230000) for k in (box, no_rounds))
    slow, ref = (ws.predict(k, "H200", (256, 1, 1)) for k in (padded, padded_ref))
    assert slow.blocks_per_sm == ref.blocks_per_sm == 1
    assert ref.terms["load_rounds_ns"] == 0.0
    assert slow.terms["dram_bandwidth_achieved"] < 0.8 * ref.terms["dram_bandwidth_achieved"]
    assert slow.glups < 0.8 * ref.glups
    full, full_ref = (ws.predict(k, "H200", (256, 1, 1)) for k in (box, no_rounds))
    assert full.limiter == full_ref.limiter == "l2"
    assert full.glups == pytest.approx(full_ref.glups, rel=0.01)
