"""Refitting capacity curves (MODEL.md §7, §9).

The end-to-end tests are SELF-CONSISTENCY tests on SYNTHETIC data: the
"measured" volumes are produced by the model itself with known curves
(hypothetical H100 variants whose L1 and L2 sizes are scaled to spread the
oversubscriptions), and the refit must recover those curves. Nothing here
is, or is written as, a measurement.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import warpspeed as ws
from warpspeed.errors import FitError
from warpspeed.measure import Measurement
from warpspeed.model import block_stage, finish
from warpspeed.validation.refit import (
    Point,
    fits_toml,
    m1_fractions,
    overlap_fractions,
    point,
    refit,
    reuse,
    s_fractions,
    split_points,
)
from warpspeed.volumes.capacity import CapacityFits, Gompertz, load_fits
from warpspeed.volumes.waves import wave_volumes

#: The fits run warning-free (issue 46: the optimiser's steep trial curves
#: overflowed an exponential and the suite printed RuntimeWarnings).
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

PAPER = load_fits("paper")
TRUTH = CapacityFits(
    m1=Gompertz(0.6, 5.0, 0.45),
    h_xy=Gompertz(1.0, 0.05, -1.4, x0=0.2),
    h_z=Gompertz(0.95, 0.01, -2.5),
    s=Gompertz(1.0, 0.08, -0.5, complement=True),
    m2=Gompertz(0.4, 10.0, 1.2),
    source="synthetic truth for a self-consistency test",
    path="",
)
SCALES = ((0.25, 0.02), (0.5, 0.05), (1.0, 0.1), (2.0, 0.3), (4.0, 1.0))


@pytest.fixture(scope="module")
def stages():
    """Block stages and wave volumes of a few star3d configurations."""
    from stencils import star3d

    machine = ws.load_machine("H100")
    out = []
    for radius, shape, blocks in (
        (1, (1024, 1024, 16), [(256, 4, 1), (64, 4, 4), (32, 8, 4), (32, 32, 1)]),
        (2, (256, 128, 64), [(64, 4, 4), (1024, 1, 1), (16, 16, 4)]),
    ):
        kernel = star3d.kernel(radius=radius, shape=shape)
        for b in blocks:
            st = block_stage(kernel, machine, b)
            out.append((st, wave_volumes(kernel, st.launch, st.bound)))
    return out


def synthetic(stages, dram: str):
    """(measurement, paper-mode prediction, stage, wave) of every configuration
    on every hypothetical cache size; the 'measurement' is the model's
    volumes with TRUTH curves (dram: which DRAM load, V3 or V4)."""
    out = []
    for (st, wave), (l1s, l2s) in itertools.product(stages, SCALES):
        m = st.machine
        hypo = dataclasses.replace(
            m, l1_bytes=int(m.l1_bytes * l1s), l2_bytes=int(m.l2_bytes * l2s)
        )
        stage = dataclasses.replace(st, machine=hypo)
        truth = finish(stage, wave, TRUTH, "paper")
        v = truth.volumes
        meas = Measurement(
            machine="synthetic (model-generated, not measured)",
            stencil="star3d",
            params=f'{{"kernel":"{truth.kernel}","l2_scale":{l2s}}}',
            kernel=truth.kernel,
            domain=(1, 1, 1),
            block=truth.block,
            fold=truth.fold,
            lups=1,
            time_s=1.0,
            glups=truth.glups,
            dram_load=v.dram_load if dram == "v3" else v.dram_load_v4,
            dram_store=v.dram_store,
            l2_load=v.l2_load,
            l2_store=v.l2_store,
            note="synthetic",
        )
        out.append((meas, finish(stage, wave, PAPER, "paper"), stage, wave))
    return out


def _max_dev(a: Gompertz, b: Gompertz, xs) -> float:
    return max(abs(a(x) - b(x)) for x in xs)


def test_refit_recovers_known_curves_from_model_generated_volumes(stages):
    data = synthetic(stages, "v3")
    result = refit([(m, p) for m, p, _, _ in data], PAPER, split=True)
    xs = {
        "m1": [p.oversubscription["o1"] for _, p, _, _ in data],
        "s": [p.oversubscription["o2"] for _, p, _, _ in data],
        "h_z": [p.oversubscription["o_z"] for _, p, _, _ in data],
        "h_xy": [p.oversubscription["o_xy"] for _, p, _, _ in data],
    }
    for name, tol in (("m1", 1e-6), ("s", 1e-6), ("h_z", 1e-4), ("h_xy", 1e-3)):
        cf = result.curves[name]
        assert cf.fitted, (name, cf.reason)
        assert cf.points >= 3 and cf.test_points >= 3
        assert _max_dev(cf.curve, getattr(TRUTH, name), xs[name]) < tol, name
        assert cf.rms < 1e-3 and cf.test_rms < 1e-3
    assert not result.curves["m2"].fitted  # v3 reads loads as memLoadV3: m2 unused
    assert result.fits.m2 == PAPER.m2
    # the refitted model reproduces the synthetic DRAM loads
    for m, _, stage, wave in data:
        assert finish(stage, wave, result.fits, "paper").volumes.dram_load == pytest.approx(
            m.dram_load, rel=1e-4)


def test_refit_v4_separates_l2_capacity_misses_by_regime(stages):
    data = synthetic(stages, "v4")
    result = refit([(m, p) for m, p, _, _ in data], PAPER, split=True, dram_model="v4")
    o2 = [p.oversubscription["o2"] for _, p, _, _ in data]
    assert result.curves["m2"].fitted
    assert _max_dev(result.curves["m2"].curve, TRUTH.m2, o2) < 0.01
    for m, _, stage, wave in data:
        assert finish(stage, wave, result.fits, "paper").volumes.dram_load_v4 == pytest.approx(
            m.dram_load, rel=0.01)


def test_train_and_test_halves_are_disjoint_and_deterministic(stages):
    data = synthetic(stages, "v3")
    pairs = [(m, p) for m, p, _, _ in data]
    a = refit(pairs, PAPER, split=True)
    b = refit(list(reversed(pairs)), PAPER, split=True)
    assert a.train == b.train and a.test == b.test
    assert not set(a.train) & set(a.test)
    assert len(a.train) + len(a.test) == len(pairs)
    assert abs(len(a.train) - len(a.test)) <= 1
    whole = refit(pairs, PAPER, split=False)
    assert whole.test == () and len(whole.train) == len(pairs)


def test_fits_file_round_trips_through_load_fits(stages, tmp_path):
    data = synthetic(stages, "v3")
    result = refit([(m, p) for m, p, _, _ in data], PAPER, split=True)
    text = fits_toml(result, machines=["H100"], data_file="synthetic.csv",
                     source="self-consistency test")
    path = tmp_path / "refit.toml"
    path.write_text(text)
    back = load_fits(path)
    for name in ("m1", "h_xy", "h_z", "s", "m2"):
        assert getattr(back, name) == result.curves[name].curve
    assert back.source == "self-consistency test"
    import tomllib

    doc = tomllib.loads(text)
    assert doc["format_version"] == 1  # the format load_fits reads (MODEL.md §7)
    assert doc["data"] == "synthetic.csv"
    assert doc["split"]["train"] == list(result.train)
    assert doc["split"]["test"] == list(result.test)
    assert doc["m1"]["fitted"] is True and doc["m1"]["rms"] < 1e-3
    assert doc["m2"]["fitted"] is False and "note" in doc["m2"]


# ------------------------------------------------------------------ hit fractions by hand


def _point(**kw) -> Point:
    base = dict(
        key="k", o1=1.0, o_xy=0.5, o_z=0.8, o2=2.0, l1_load=60.0, l2_load_v1=10.0,
        l2_store=10.0, dram_load_v1=12.0, dram_store_v1=8.0, overlap_xy=2.0, overlap_z=4.0,
        measured_l2_load=20.0, measured_dram_load=9.0, measured_dram_store=9.0,
    )
    base.update(kw)
    return Point(**base)


def test_m1_hit_fraction_by_hand():
    xs, ys = m1_fractions([_point(), _point(l1_load=10.0), _point(measured_l2_load=None)])
    assert xs.tolist() == [1.0]  # no redundant loads / no measurement: left out
    assert ys.tolist() == [pytest.approx((20.0 - 10.0) / (60.0 - 10.0))]


def test_store_eviction_fraction_by_hand():
    xs, ys = s_fractions([_point(), _point(l2_store=8.0)])
    assert xs.tolist() == [2.0]
    assert ys.tolist() == [pytest.approx((9.0 - 8.0) / (10.0 - 8.0))]


def test_overlap_hit_fractions_by_hand():
    q = _point()
    zero = Gompertz(0.0, 1.0, 1.0)  # s(x) = 0: no store evictions
    s_half = Gompertz(0.5, 0.0, 0.0)  # g(x) = 0.5 everywhere
    assert reuse(q, zero, zero, None) == pytest.approx(12.0 - 9.0)
    assert reuse(q, zero, s_half, None) == pytest.approx(12.0 + 0.5 * 2.0 - 9.0)
    h = [3.0]
    other = Gompertz(0.25, 0.0, 0.0)  # the other curve: 0.25 everywhere
    xs, ys = overlap_fractions([q], h, other, "xy")
    assert xs.tolist() == [0.5] and ys.tolist() == [pytest.approx((3.0 - 4.0 * 0.25) / 2.0)]
    xs, ys = overlap_fractions([q], h, other, "z")
    assert xs.tolist() == [0.8] and ys.tolist() == [pytest.approx((3.0 - 2.0 * 0.25) / 4.0)]


def test_curves_without_enough_points_keep_the_prior(stages):
    data = synthetic(stages, "v3")[:2]
    result = refit([(m, p) for m, p, _, _ in data], PAPER, split=False)
    for name in ("m1", "h_xy", "h_z", "s"):
        assert not result.curves[name].fitted
        assert "kept the prior" in result.curves[name].reason
        assert result.curves[name].curve == getattr(PAPER, name)


def test_split_points_alternates_over_sorted_keys():
    pts = [_point(key=k) for k in "dbca"]
    train, test = split_points(pts, True)
    assert [q.key for q in train] == ["a", "c"] and [q.key for q in test] == ["b", "d"]


def test_a_prediction_of_another_configuration_is_rejected(stages):
    (m, p, _, _), (_, other, _, _) = synthetic(stages, "v3")[0], synthetic(stages, "v3")[-1]
    with pytest.raises(FitError, match="does not belong"):
        point(m, other)
    assert point(m, p).measured_dram_load == m.dram_load
    with pytest.raises(FitError, match="no measured"):
        refit([], PAPER)
    with pytest.raises(FitError, match="dram_model"):
        refit([(m, p)], PAPER, dram_model="v9")
    assert np.isfinite(point(m, p).overlap_z)
