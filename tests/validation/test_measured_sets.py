"""The project's own H200 measurements as development sets (MODEL.md §9):
the sets of the README's table, the compiled kernels' register counts, and
the launch latency those measurements fix (MODEL.md §11)."""

from __future__ import annotations

import dataclasses

import pytest

import warpspeed as ws
import warpspeed.measure as wm
from warpspeed.timing import parameter, with_values
from warpspeed.validation.measured_sets import H200_SETS, measured_rows, registers, set_of
from warpspeed.validation.reference import dataset_dir, kernel_for

HERE = dataset_dir("h200") / "measurements.csv"
needs_h200 = pytest.mark.skipif(not HERE.is_file(), reason=f"no H200 measurements at {HERE}")


def test_a_rows_set_is_the_name_after_set_in_its_note() -> None:
    row = wm.Measurement(machine="NVIDIA H200", stencil="copy3d", params="{}", kernel="copy3d",
                         domain=(64, 64, 64), block=(256, 1, 1), fold=(1, 1, 1), lups=64**3,
                         time_s=1e-5, glups=26.2, note="set copy_size; timed with CUDA events")
    assert set_of(row) == "copy_size"
    assert set_of(dataclasses.replace(row, note="timed alone")) == ""


@needs_h200
def test_every_set_of_the_readme_has_its_rows() -> None:
    # fits/data/h200/README.md: 840, 572, 89, 144 and 60 rows
    sizes = {name: len(measured_rows(name)) for name in H200_SETS}
    assert sizes == {"star_r1_512": 840, "star_r4": 572, "lbm_d3q19_f64": 89,
                     "layer_r1_2048xNYx32": 144, "copy_size": 60}


@needs_h200
def test_a_row_is_predicted_with_the_measured_binary_registers() -> None:
    # the one count Nsight Compute read for the double D3Q19 variant
    counts = {n for (stencil, _, _), n in registers().items() if stencil == "lbm_d3q19"}
    assert len(counts) == 1
    row = measured_rows("lbm_d3q19_f64")[0]
    assert dict(row.params)["registers"] in counts
    k = kernel_for(row)
    assert k.registers in counts and "Nsight Compute" in k.registers_source


@needs_h200
def test_an_unknown_set_is_refused_by_name() -> None:
    with pytest.raises(ws.WarpspeedError, match="no set 'nope'"):
        measured_rows("nope")


def test_a_measured_launch_latency_replaces_the_back_to_back_overhead() -> None:
    a = ws.Field("a", shape=(64, 64, 64))
    b = ws.Field("b", shape=(64, 64, 64))
    k = ws.Kernel(loads=[a[ws.tidx, ws.tidy, ws.tidz]], stores=[b[ws.tidx, ws.tidy, ws.tidz]],
                  domain=(64, 64, 64))
    m = ws.load_machine("H100")
    assert parameter(m, "launch_latency_us") is None
    plain = ws.predict(k, m, (128, 2, 1))
    timed_alone = ws.predict(k, with_values(m, {"launch_latency_us": 8.0}), (128, 2, 1))
    assert plain.terms["launch_us"] == parameter(m, "launch_overhead_us")
    assert timed_alone.terms["launch_us"] == 8.0
    body = plain.terms["kernel_time_us"] - plain.terms["launch_us"]
    assert timed_alone.terms["kernel_time_us"] == pytest.approx(8.0 + body)
