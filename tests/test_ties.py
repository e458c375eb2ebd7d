"""Ties and leaders of a ranking (MODEL.md §8, "Ties"): the robust
tie-break order on hand-made predictions, and the note that says when the
leaders lie within the model's measured error."""

from __future__ import annotations

from dataclasses import replace

import pytest

import warpspeed as ws
from stencils import star3d
from warpspeed.search.ties import RULE, leaders_note, ranking_key


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
    assert [ranking_key(p) for p in r.predictions] == sorted(ranking_key(p) for p in r.predictions)
    assert any(RULE in n for n in r.notes)
