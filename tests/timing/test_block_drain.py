"""The block drain of the default model's bytes in flight (MODEL.md §11,
"Block drain"; warpspeed.timing.latency.drain_share): hand values of the law,
and what it does to a prediction."""

import math

import pytest

import warpspeed as ws
from warpspeed.timing.latency import DRAIN_STAGGER, block_drain, drain_share
from warpspeed.volumes.launch import make_launch


def test_the_law_by_hand():
    # one warp keeps its slot for its whole life; a = 0.5: 1 / (1 + 0.5 (W - 1))
    assert drain_share(1, 0.5) == 1.0
    assert drain_share(2, 0.5) == pytest.approx(1 / 1.5)
    assert drain_share(4, 0.5) == pytest.approx(1 / 2.5)
    # no stagger, no drain; the share falls with the block's warps
    assert drain_share(32, 0.0) == 1.0
    shares = [drain_share(w) for w in (1, 2, 4, 8, 16, 32)]
    assert shares == sorted(shares, reverse=True)
    # the model's stagger: 256-thread blocks (8 warps) against 1024-thread ones (32)
    assert drain_share(8) == pytest.approx(1 / (1 + 7 * DRAIN_STAGGER))
    assert drain_share(32) / drain_share(8) == pytest.approx(1.14 / 1.62)


def _copy() -> ws.Kernel:
    shape = (1024, 512, 256)
    a, b = ws.Field("a", shape=shape), ws.Field("b", shape=shape)
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    return ws.Kernel(loads=[a[x, y, z]], stores=[b[x, y, z]], domain=shape)


@pytest.mark.parametrize("machine, threads", [("H200", 32), ("MI300X", 64)])
def test_blocks_of_256_threads_are_the_reference(machine, threads):
    """256-thread blocks (8 warps, 4 wavefronts of 64) keep their bytes in
    flight; 1024-thread blocks lose the share of 32 (16) warps over 8 (4)."""
    m, k = ws.load_machine(machine), _copy()
    assert block_drain(k, make_launch(k, m, (256, 1, 1)), m.warp_size) == 1.0
    big = block_drain(k, make_launch(k, m, (1024, 1, 1)), m.warp_size)
    warps = 1024 // threads
    assert big == pytest.approx(drain_share(warps) / drain_share(256 // threads))
    assert ws.predict(k, m, (256, 1, 1)).terms["block_drain"] == 1.0
    assert ws.predict(k, m, (1024, 1, 1)).terms["block_drain"] == pytest.approx(big)


def test_the_drain_scales_the_bytes_in_flight():
    """A 1024-thread copy holds the drain's share of what 256-thread blocks
    of the same occupancy hold, and a flight-limited copy runs slower for it."""
    k = _copy()
    small, big = (ws.predict(k, "H200", b) for b in ((256, 1, 1), (1024, 1, 1)))
    assert math.isclose(big.terms["dram_bytes_in_flight"] / small.terms["dram_bytes_in_flight"],
                        big.terms["block_drain"], rel_tol=1e-9)
    assert big.terms["block_drain"] < 1.0 and big.glups < small.glups


def test_threads_beyond_the_domain_are_not_warps_of_the_block():
    """On a flat domain the block (32, 1, 2) has one working warp, as
    (32, 1, 1): the same drain and the same prediction."""
    shape = (64, 32, 1)
    a, b = ws.Field("a", shape=shape), ws.Field("b", shape=shape)
    k = ws.Kernel(loads=[a[ws.tidx, ws.tidy, ws.tidz]], stores=[b[ws.tidx, ws.tidy, ws.tidz]],
                  domain=shape)
    m = ws.load_machine("A100")
    flat, deep = (block_drain(k, make_launch(k, m, blk), 32) for blk in ((32, 1, 1), (32, 1, 2)))
    assert flat == deep == pytest.approx(drain_share(1) / drain_share(8))
