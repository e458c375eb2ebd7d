"""Capacity curves (MODEL.md §7): paper spot values, loading and fitting."""

import numpy as np
import pytest

import warpspeed as ws

SPOTS = {
    "m1": [(1, 0.03), (3, 0.14), (6, 0.40), (10, 0.63)],
    "h_xy": [(0.01, 0.94), (1, 0.84), (3, 0.25)],
    "h_z": [(0.5, 0.97), (1, 0.83), (1.5, 0.25)],
    "s": [(1, 0.08), (3, 0.24), (5, 0.60)],
    "m2": [(1, 0.06), (2, 0.35), (3, 0.47)],
}


@pytest.mark.parametrize("curve", sorted(SPOTS))
def test_paper_curves_reproduce_the_spot_values(curve):
    fits = ws.load_fits("paper")
    for x, expected in SPOTS[curve]:
        assert getattr(fits, curve)(x) == pytest.approx(expected, abs=0.006)


def test_paper_fits_carry_their_source():
    assert "JPDC" in ws.load_fits("paper").source


@pytest.mark.parametrize("name", ["V100", "A100"])
def test_paper_machines_use_the_paper_fits(name):
    assert ws.load_machine(name).fits == "paper"


def test_fitting_recovers_a_known_curve():
    truth = ws.Gompertz(a=0.6, b=8.0, c=1.5)
    x = np.linspace(0, 6, 40)
    y = np.array([truth(v) for v in x])
    curve, rms = ws.fit_gompertz(x, y, guess=(0.5, 5.0, 1.0))
    assert rms < 1e-6
    assert (curve.a, curve.b, curve.c) == pytest.approx((0.6, 8.0, 1.5), rel=1e-4)


def test_fitting_a_complement_curve_recovers_it():
    truth = ws.Gompertz(a=1.0, b=0.044, c=-0.61, complement=True)
    x = np.linspace(0.5, 5, 30)
    y = np.array([truth(v) for v in x])
    curve, rms = ws.fit_gompertz(x, y, complement=True, guess=(1.0, 0.05, -0.5))
    assert rms < 1e-6
    assert curve(2.0) == pytest.approx(truth(2.0), rel=1e-5)


def test_unknown_fits_name_is_an_error_listing_the_known_ones():
    with pytest.raises(ws.FitError, match="known: .*paper"):
        ws.load_fits("nonexistent")


def test_malformed_fits_file_names_the_missing_curve(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[m1]\na = 1\nb = 2\nc = 3\n')
    with pytest.raises(ws.FitError, match=r"missing table \[h_xy\]"):
        ws.load_fits(bad)


def test_fitting_needs_enough_points():
    with pytest.raises(ws.FitError, match="at least three"):
        ws.fit_gompertz(np.array([1.0, 2.0]), np.array([0.1, 0.2]))


@pytest.mark.parametrize("x, y, match", [
    ([1, 2, 3, 4], [0.1, float("nan"), 0.3, 0.4], "finite numbers"),
    ([1, 2, 3], [0.1, 0.5, float("inf")], "finite numbers"),
    ([1, 2, "a"], [0.1, 0.2, 0.3], "sequences of numbers"),
])
def test_a_fit_of_non_finite_or_non_numeric_data_is_a_fit_error(x, y, match):
    """A NaN ended in numpy's "array must not contain infs or NaNs"."""
    with pytest.raises(ws.FitError, match=match):
        ws.fit_gompertz(x, y)
