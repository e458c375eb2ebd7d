"""Ties and leaders of a ranking (MODEL.md §8, "Ties"): the robust
tie-break order on hand-made predictions, and the note that says when the
leaders lie within the model's measured error."""

from __future__ import annotations

from dataclasses import replace

import pytest

import warpspeed as ws
from stencils import star3d
from warpspeed.search.ties import RULE, leaders_first, leaders_note, ranking_key


@pytest.fixture(scope="module")
def base() -> ws.Prediction:
    return ws.predict(star3d.kernel(radius=1, shape=(128, 128, 128)), "A100", (128, 2, 1))


def test_equal_predictions_prefer_the_larger_occupancy_then_the_smaller_fold(base):
    a = replace(base, glups=50.0, blocks_per_sm=4, block=(128, 2, 1), fold=(1, 1, 1))  # 1024
    b = replace(base, glups=50.0 * (1 + 1e-9), blocks_per_sm=8, block=(128, 2, 1),
                fold=(1, 1, 2))  # 2048 resident, a tie to six digits
    c = replace(base, glups=50.0, blocks_per_sm=8, block=(256, 1, 1), fold=(1, 1, 1))  # 2048
    d = replace(base, glups=51.0, blocks_per_sm=1, block=(64, 1, 1), fold=(1, 1, 1))
    order = sorted([a, b, c, d], key=ranking_key)
    assert order == [d, c, b, a]


def test_equal_predictions_at_equal_occupancy_prefer_small_flat_wide_blocks(base):
    # all 2048 resident threads and no fold: fewer threads per block first
    # (the H200's 1024-thread blocks run 10-25 % below their prediction),
    # then the shallower block in z, then fewer rows (deep blocks run slower
    # at equal bytes: V100 star, H200 copy; MODEL.md §8, §10)
    def tie(block: tuple[int, int, int], per_sm: int) -> ws.Prediction:
        return replace(base, glups=50.0, blocks_per_sm=per_sm, block=block, fold=(1, 1, 1))

    big, deep, rows, flat = (tie((1024, 1, 1), 2), tie((32, 1, 8), 8), tie((32, 8, 1), 8),
                             tie((256, 1, 1), 8))
    assert sorted([big, deep, rows, flat], key=ranking_key) == [flat, rows, deep, big]


def test_leaders_within_a_hundredth_put_the_most_l2_headroom_first(base):
    # three predictions within 1 % of the best: the one with the largest L2
    # limit leads; one 2 % below keeps its place after them
    def with_l2(glups: float, l2: float, block: tuple[int, int, int]) -> ws.Prediction:
        return replace(base, glups=glups, block=block, limits={**base.limits, "l2": l2})

    a = with_l2(100.0, 300.0, (256, 1, 1))
    b = with_l2(99.5, 900.0, (128, 1, 4))
    c = with_l2(99.2, 600.0, (64, 4, 2))
    d = with_l2(98.0, 2000.0, (32, 8, 2))
    assert leaders_first([a, b, c, d], lambda p: p) == [b, c, a, d]
    # no L2 traffic: no L2 limit, the most headroom
    e = replace(base, glups=99.9, block=(16, 8, 4), limits={**base.limits, "l2": None})
    assert leaders_first([a, e], lambda p: p) == [e, a]


def test_leaders_within_the_measured_error_are_named(base):
    mape = base.evidence.mape
    assert mape and 0 < mape < 0.5  # the A100's star rows give it
    best = replace(base, glups=100.0, block=(256, 1, 1))
    near = replace(base, glups=100.0 * (1 - mape / 2), block=(128, 2, 1))
    far = replace(base, glups=100.0 * (1 - 2 * mape), block=(64, 1, 1))
    note = leaders_note([best, near, far])
    assert note is not None and "2 configurations lie within" in note
    assert "block 256,1,1" in note and "block 128,2,1" in note and "block 64,1,1" not in note
    assert RULE in note
    assert "at least 2" in leaders_note([best, near], complete=False)


def test_exact_ties_are_said_even_without_a_measured_error(base):
    lone = replace(base, grounding="no-such-grounding")
    assert lone.evidence.mape is None
    a, b = replace(lone, glups=7.0), replace(lone, glups=7.0, block=(64, 2, 1))
    note = leaders_note([a, b])
    assert note is not None and note.startswith("2 tie exactly at 7 GLup/s")
    assert leaders_note([a, replace(lone, glups=3.0)]) is None


def test_a_ranking_carries_the_note_and_its_order(base):
    k = star3d.kernel(radius=1, shape=(128, 128, 128))
    r = ws.rank(k, "A100", threads=[128, 256], folds=[(1, 1, 1)], jobs=1)
    by_key = sorted(r.predictions, key=ranking_key)
    assert list(r.predictions) == leaders_first(by_key, lambda p: p)
    assert any(RULE in n for n in r.notes)
