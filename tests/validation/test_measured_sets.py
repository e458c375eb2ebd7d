"""The project's own H200 measurements as development sets (MODEL.md §9):
the sets of the README's table, the compiled kernels' register counts, and
the launch latency those measurements fix (MODEL.md §11)."""

from __future__ import annotations

import dataclasses

import pytest

import warpspeed as ws
import warpspeed.measure as wm
from warpspeed.timing import parameter, with_values
from warpspeed.validation.measured_sets import (
    H200_SECOND,
    H200_SECOND_SETS,
    H200_SETS,
    H200_THIRD,
    RUNS_DIR,
    measured_rows,
    registers,
    set_of,
)
from warpspeed.validation.reference import dataset_dir, kernel_for, measured_kernel

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


@pytest.mark.slow
def test_the_second_run_is_its_sets_and_the_check_scores_both_models() -> None:
    # fits/measurements/README.md: every set of H200-new.csv, every row in one set
    from warpspeed.validation.transfer import check_scores

    rows = wm.read_csv(RUNS_DIR / f"{H200_SECOND}.csv")
    sizes = {name: len(measured_rows(name, H200_SECOND)) for name in H200_SECOND_SETS}
    assert sum(sizes.values()) == len(rows) == 1746
    assert {set_of(r) for r in rows} == set(H200_SECOND_SETS)
    scores = check_scores(lambda model, data, machine: [_Fixed(r.glups) for r in data])
    third = sum(len(names) for _, names in H200_THIRD)
    assert [m for m, _ in scores] == ["latency", "paper"] * (len(H200_SECOND_SETS) + third)
    assert all(s.median_ratio == pytest.approx(1.0) and s.mape == pytest.approx(0.0)
               for _, s in scores if s.rows > 1)


def test_the_third_run_is_its_sets_and_its_padded_rows_keep_their_shared_memory() -> None:
    # fits/measurements/README.md: every row of the three files in one set; a padded
    # row's kernel carries the pad as shared memory, so its occupancy is the one measured
    for run, names in H200_THIRD:
        rows = wm.read_csv(RUNS_DIR / f"{run}.csv")
        assert {set_of(r) for r in rows} == set(names), run
        assert sum(len(measured_rows(n, run)) for n in names) == len(rows)
    (row,) = [r for r in measured_rows("occ_copy", "H200-occupancy")
              if dict(r.params).get("shared_pad") == 232448 and r.block == (256, 1, 1)]
    kernel = measured_kernel(row)
    assert kernel.shared_memory == 232448
    assert ws.predict(kernel, "H200", row.block).blocks_per_sm == 1


@dataclasses.dataclass(frozen=True)
class _Fixed:
    """A prediction that equals the measurement (its terms recombine to it)."""

    glups: float
    blocks_per_sm: int = 1
    block: tuple[int, int, int] = (256, 1, 1)
    fold: tuple[int, int, int] = (1, 1, 1)
    @property
    def limits(self) -> dict[str, float]:
        return {}  # no L2 limit: the ranking's L2 headroom is infinite

    @property
    def terms(self) -> dict[str, float]:
        t = 1.0 / self.glups
        return {"t_fp_ns": 0.0, "t_l1_ns": 0.0, "t_l2_ns": 0.0, "t_dram_ns": t,
                "t_core_ns": 0.0, "t_memory_ns": t, "t_update_ns": t, "updates": 1.0,
                "waves": 1.0, "block_chain_us": 0.0, "launch_us": 0.0,
                "kernel_time_us": t / 1000.0, "fp_overlap_exponent": 1.0,
                "l1_overlap_exponent": 1.0}


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
