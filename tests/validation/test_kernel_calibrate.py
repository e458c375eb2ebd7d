"""Learn from what was timed (MODEL.md §12): ``warpspeed machines calibrate
--measurements`` recovers figures from rows whose 'measurements' are the
model's own predictions on a machine with known figures, measures the DRAM
plateau from the copy by hand, carries what the rows do not determine or
disagree on, and writes a machine file whose fitted sources name the run."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

import warpspeed.measure as wm
from warpspeed.cli import main
from warpspeed.machine import load_machine
from warpspeed.model import predict
from warpspeed.timing import parameter, with_values
from warpspeed.validation import kernel_calibrate as kc
from warpspeed.validation.reference import dataset_dir

SHAPES = ((32, 32, 32), (64, 64, 64), (128, 128, 64))
BLOCKS = ((64, 2, 1), (128, 1, 1), (32, 4, 2), (256, 1, 1), (32, 8, 1), (64, 1, 4))


def rows_on(truth, stencil="star3d", shapes=SHAPES, blocks=BLOCKS, note="set s",
            extra=None) -> list[wm.Measurement]:
    """Rows 'measured' on ``truth``: its predictions (default model)."""
    out = []
    for shape in shapes:
        params = {"radius": 1, "shape": shape} if stencil == "star3d" else {"shape": shape}
        kernel = wm.generate_variant(stencil, params, (1, 1, 1))[0]
        for b in blocks:
            g = predict(kernel, truth, b).glups
            lups = kernel.domain[0] * kernel.domain[1] * kernel.domain[2]
            out.append(wm.Measurement(
                machine="NVIDIA H200", stencil=stencil, params=wm.params_json(params),
                kernel=kernel.name, domain=kernel.domain, block=b, fold=(1, 1, 1), lups=lups,
                time_s=lups / g / 1e9, glups=g, driver="580.1", date="2026-12-01T00:00:00Z",
                note=note, **(extra or {})))
    return out


def test_fittable_parameters_are_read_from_the_machine_dataclass():
    names = kc.fittable()
    for n in ("dram_bw_copy", "dram_bandwidth", "launch_overhead_us", "l2_bandwidth",
              "dram_scattered_fraction", "overlap_exponent", "memory_shape"):
        assert n in names
    for n in ("sms", "l2_bytes", "name", "memory_gib", "fp64_cost"):
        assert n not in names
    with pytest.raises(Exception, match="not a parameter a calibration can fit"):
        kc.parse_extra("sms:s")
    assert kc.parse_extra("overlap_exponent:star") == ("overlap_exponent", "star")


def test_the_small_launch_cost_is_recovered(tmp_path):
    h200 = load_machine("H200")
    truth = with_values(h200, {"launch_latency_us": 6.0})
    path = wm.write_csv(tmp_path / "m.csv", rows_on(truth))
    c = kc.calibrate_kernels(path, "H200")
    fitted = {f.figure: f for f in c.fitted}
    assert fitted["small-launch cost"].value == pytest.approx(6.0, rel=1e-3)
    assert fitted["small-launch cost"].before == parameter(h200, "launch_latency_us")
    assert fitted["DRAM plateau"].value is None and "no copy3d rows" in fitted[
        "DRAM plateau"].rule
    assert fitted["many-stream term"].value is None  # no kernel of many streams
    l2 = fitted["L2 plateau"]
    assert l2.value is None or l2.value == pytest.approx(h200.l2_bandwidth, rel=1e-3)


def test_an_extra_parameter_is_fitted_by_the_median_rule():
    h200 = load_machine("H200")
    truth = with_values(h200, {"overlap_exponent": 2.6})
    rows = rows_on(truth, shapes=((256, 128, 64), (128, 128, 128)), note="set big")
    prepared = kc.prepare(rows, h200)
    curves = kc.curves_for(h200, None)
    f = kc.fit_figure(prepared, h200, "overlap", "overlap_exponent", prepared, "of set big",
                      curves, "latency")
    assert f.value == pytest.approx(2.6, rel=2e-3)
    assert f.before == parameter(h200, "overlap_exponent")
    assert kc.median_ratio(prepared, with_values(h200, {"overlap_exponent": f.value}),
                           curves, "latency") == pytest.approx(1.0, abs=1e-3)


def test_fit_names_a_parameter_and_a_set(tmp_path):
    rows = rows_on(load_machine("H200"), shapes=((256, 128, 64),), note="set big") + rows_on(
        load_machine("H200"), shapes=((96, 96, 96),), blocks=BLOCKS[:2], note="set other")
    path = wm.write_csv(tmp_path / "m.csv", rows)
    c = kc.calibrate_kernels(path, "H200", extra=["overlap_exponent:big", "l2_bandwidth:other"])
    big, other = c.fitted[-2:]
    assert big.parameters == ("overlap_exponent",) and big.rows == len(BLOCKS)
    assert "sets big" in big.rule
    assert other.value is None and "2 rows of set other, fewer than 5" in other.rule


def test_the_dram_plateau_is_the_copy_at_its_largest_sizes_by_hand(tmp_path):
    rows = []
    for shape, per_block in (((512, 512, 256), (150.0, 230.0)), ((512, 512, 512), (200.0, 240.0)),
                             ((64, 64, 64), (10.0, 20.0))):
        n = shape[0] * shape[1] * shape[2]
        for b, g in zip(((128, 1, 1), (256, 1, 1)), per_block):
            rows.append(wm.Measurement(
                machine="NVIDIA H200", stencil="copy3d", params=wm.params_json({"shape": shape}),
                kernel="copy3d", domain=shape, block=b, fold=(1, 1, 1), lups=n,
                time_s=n / g / 1e9, glups=g, note="set copy"))
    # the largest (512^3) and every size of at least half its updates (512x512x256):
    # each size's fastest block, bytes per update 8 + 8 (the model's copy volume)
    expected = statistics.median([230.0 * 16, 240.0 * 16])
    m = load_machine("H200")
    prepared = kc.prepare(rows, m)
    f = kc.dram_plateau(prepared, m, kc.curves_for(m, None), "latency")
    assert f.value == pytest.approx(expected) and f.rows == 2
    counted = [dataclasses.replace(r, dram_load=9.0, dram_store=8.0) for r in rows]
    f2 = kc.dram_plateau(kc.prepare(counted, m), m, kc.curves_for(m, None), "latency")
    assert f2.value == pytest.approx(statistics.median([230.0 * 17, 240.0 * 17]))


def test_the_saturated_plateaus_are_recovered_together_through_the_model():
    # copies 'measured' on a machine whose three asymptotes are 7 % higher: one
    # factor on all three gives the model the measured copy again, their ratios kept
    h200 = load_machine("H200")
    truth = with_values(h200, {n: 1.07 * parameter(h200, n) for n in kc.SATURATED})
    rows = rows_on(truth, stencil="copy3d", shapes=((256, 256, 256), (512, 256, 256)),
                   note="set copy")
    prepared = kc.prepare(rows, h200)
    assert {r.measured.lups for r in kc.largest_copies(prepared)} == {2**24, 2**25}
    f = kc.saturated_plateaus(prepared, h200, kc.curves_for(h200, None), "latency")
    assert f.parameters == kc.SATURATED and f.rows >= kc.MIN_ROWS
    for name, value in f.assignments().items():
        assert value == pytest.approx(parameter(truth, name), rel=2e-3), name
    assert "asymptotes" in f.rule


def test_sets_that_disagree_leave_the_figure_carried(tmp_path):
    h200 = load_machine("H200")
    fast = with_values(h200, {"launch_latency_us": 11.0})
    slow = with_values(h200, {"launch_latency_us": 1.0})
    rows = rows_on(fast, note="set a") + rows_on(slow, note="set b")
    m = load_machine("H200")
    prepared = kc.prepare(rows, m)
    text = kc.disagreement(prepared, m, kc.curves_for(m, None), "latency")
    assert "b " in text and "above 1" in text and "a " in text and "below" in text
    c = kc.calibrate_kernels(wm.write_csv(tmp_path / "m.csv", rows), "H200")
    launch = next(f for f in c.fitted if f.figure == "small-launch cost")
    assert launch.value is None and "disagree" in launch.rule


def test_the_machine_file_names_the_run_and_loads(tmp_path, capsys):
    truth = with_values(load_machine("H200"), {"launch_latency_us": 6.0})
    path = wm.write_csv(tmp_path / "m.csv", rows_on(truth))
    out = tmp_path / "H200-k.toml"
    assert main(["machines", "calibrate", "--measurements", str(path), "--base", "H200",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("small-launch cost"))
    assert line.startswith("small-launch cost (launch_latency_us): 8.29 -> ")
    assert float(line.split("-> ")[1].split()[0]) == pytest.approx(6.0, rel=1e-3)
    assert line.endswith(f"from {len(SHAPES) * len(BLOCKS)} rows")
    m = load_machine(out)
    assert m.grounding == "kernels"
    assert parameter(m, "launch_latency_us") == pytest.approx(6.0, rel=1e-3)
    source = m.source("latency.launch_latency_us")
    assert source.startswith("kernel measurements m.csv (NVIDIA H200, driver 580.1, "
                             f"2026-12-01; {len(SHAPES) * len(BLOCKS)} rows): fitted so that "
                             "the median")
    assert source.endswith("(was 8.29)")
    base = load_machine("H200")
    assert m.source("latency.dram_latency_ns") == base.source("latency.dram_latency_ns")  # carried
    assert parameter(m, "dram_bw_read") == parameter(base, "dram_bw_read")
    text = out.read_text()
    assert "--measurements" in text.splitlines()[0] and "rebuild with" in text.splitlines()[0]


def test_calibrate_errors_are_one_line(tmp_path, capsys):
    assert main(["machines", "calibrate", "--out", str(tmp_path / "x.toml")]) == 2
    assert "--measurements" in capsys.readouterr().err
    path = wm.write_csv(tmp_path / "m.csv", rows_on(load_machine("H200"), shapes=SHAPES[:1]))
    assert main(["machines", "calibrate", "--measurements", str(path), "--fit", "sms",
                 "--out", str(tmp_path / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'sms' is not a parameter" in err


@pytest.mark.skipif(not (dataset_dir("h200") / "measurements.csv").is_file(),
                    reason="the shipped H200 measurements (fits/data/h200) are missing")
@pytest.mark.slow  # validates several sets through the model: about 9 s
def test_validate_prints_the_median_ratio_and_top_1_per_set(capsys):
    path = dataset_dir("h200") / "measurements.csv"
    assert main(["validate", "--measurements", str(path), "--model", "latency", "--json",
                 "--subset", "test"]) == 0
    import json

    d = json.loads(capsys.readouterr().out)
    names = [g["name"] for g in d["groups"]]
    assert names == sorted(["copy_size", "layer_r1_2048xNYx32", "lbm_d3q19_f64",
                            "star_r1_512", "star_r4"])
    rows = wm.read_csv(path)
    test = kc.select(rows, "test")
    copy = [m for m in test if m.note.startswith("set copy_size")]
    g = next(g for g in d["groups"] if g["name"] == "copy_size")
    assert g["rows"] == len(copy) and 0.5 < g["median_ratio"] < 2 and 0 < g["best_fraction"] <= 1


def test_a_figure_whose_base_value_is_0_is_carried_not_scaled():
    # a fit scales the base value by a factor; 0 stays 0, so the figure is carried
    m = with_values(load_machine("H200"), {"memory_shape": 0.0})
    f = kc.fit_figure([], m, "shape", "memory_shape", [], "", kc.curves_for(m, None), "latency")
    assert f.value is None and f.rule == "carried: the base has the value 0"
