"""The FluidX3D D3Q19 development sets (``shared/data/lbm``): the hand-written
kernel against hand counts, the rows, the machines' grounding report, and the
rule that keeps these sets out of the fit of the L1 exponent."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import warpspeed as ws
from stencils import lbm_fluidx3d
from warpspeed.timing.latency import glups_from_terms
from warpspeed.validation.grounds import groundings, tables_of
from warpspeed.validation.reference import Row, dataset_dir, lbm_rows
from warpspeed.validation.transfer import DEV_SETS, DevSet, transfer_report

needs_lbm = pytest.mark.skipif(
    not dataset_dir("lbm").is_dir(),
    reason=f"LBM measurements not found at {dataset_dir('lbm')}: neither the project's copy "
           "(fits/data/lbm) nor shared/data beside the repository")


def test_d3q19_velocity_set_by_hand() -> None:
    c = np.array(lbm_fluidx3d.D3Q19)
    assert len(c) == 19 and len(set(map(tuple, c))) == 19
    norms = (c ** 2).sum(axis=1)
    assert list(np.bincount(norms)) == [1, 6, 12]  # rest, faces, edges
    assert (c.sum(axis=0) == 0).all()


@pytest.mark.parametrize("storage, item", [("fp32", 4), ("fp16s", 2)])
def test_bytes_per_cell_are_the_benchmarks(storage: str, item: int) -> None:
    # the data's README: 153 B (FP32), 77 B (FP16S) per cell and step
    assert lbm_fluidx3d.bytes_per_cell(storage) == {"fp32": 153, "fp16s": 77}[storage]
    k = lbm_fluidx3d.kernel(storage=storage)
    assert len(k.loads) == 20 and len(k.stores) == 19
    assert {a.field.itemsize for a in k.stores} == {item}
    assert k.precision == 32


@pytest.mark.parametrize("machine", ["A40", "MI100"])
@pytest.mark.parametrize("storage", ["fp32", "fp16s"])
def test_predicted_dram_volume_is_the_hand_count(machine: str, storage: str) -> None:
    """256^3 cells, a 64-wide block: every population is streamed once, the
    neighbours' rows are reused in the L2; DRAM bytes per cell within 3 % of
    the hand count (the face planes and the partial sectors of the shifted
    pulls add a little)."""
    p = ws.predict(lbm_fluidx3d.kernel(storage=storage), machine, (64, 1, 1), model="paper")
    dram = p.volumes.dram_load + p.volumes.dram_store
    hand = lbm_fluidx3d.bytes_per_cell(storage)
    assert hand <= dram <= 1.03 * hand


def test_bad_storage_is_refused_by_name() -> None:
    with pytest.raises(ws.KernelError, match="storage must be one of"):
        lbm_fluidx3d.kernel(storage="fp8")


@needs_lbm
@pytest.mark.parametrize("gpu, fp32, fp16s", [("A40", 3.378, 6.605), ("MI100", 5.093, 8.133)])
def test_lbm_rows_read_the_measurements(gpu: str, fp32: float, fp16s: float) -> None:
    rows = {dict(r.params)["storage"]: r for r in lbm_rows(gpu)}
    assert rows["fp32"].glups == pytest.approx(fp32) and rows["fp16s"].glups == pytest.approx(
        fp16s)
    assert rows["fp32"].block == (64, 1, 1)


def test_groundings_read_the_sources() -> None:
    by = {g.machine: g for g in groundings(DEV_SETS)}
    assert "stream/mi210" in by["MI210"].tables and "latency/mi210" in by["MI210"].tables
    assert by["V100"].kernel_sets == ("star3d_r4", "box2d_r7")
    assert by["MI100"].kernel_sets == ("fluidx3d_d3q19_MI100",)
    assert by["B200"].grounding == "datasheet" and by["B200"].kernel_sets == ()
    # independent truth: the words of one source, read straight from the file
    m = ws.load_machine("L40")
    assert "stream/l40.csv" in m.source("latency.dram_bw_copy")
    assert "stream/l40" in tables_of(m)


def _fake(sets: dict[str, tuple[float, bool]]):
    """Development sets of synthetic rows: each row's 'measurement' is the
    default model's recombination with exponent 1.4, times a set factor;
    the third element says whether the set is fitted."""
    rng = np.random.default_rng(3)
    rows, preds, devs = {}, {}, []
    for name, (factor, fitted) in sets.items():
        data, pr = [], []
        for i in range(12):
            terms = {"t_fp_ns": rng.uniform(0.001, 0.02), "t_l1_ns": rng.uniform(0.005, 0.1),
                     "t_memory_ns": rng.uniform(0.01, 0.1), "fp_overlap_exponent": 3.0,
                     "l1_overlap_exponent": 1.0, "updates": 1e8, "waves": 50.0,
                     "block_chain_us": 0.5, "launch_us": 2.5}
            g = glups_from_terms(terms, l1_exponent=1.4) * factor
            data.append(Row(name, "x", (("i", i),), (64, 1, 1), (1, 1, 1), None, None, g))
            pr.append(SimpleNamespace(terms=terms, glups=g, blocks_per_sm=1, block=(64, 1, 1),
                                      fold=(1, 1, 1), limits={}))
        rows[name], preds[name] = data, pr
        devs.append(DevSet(name, "V100", lambda d=data: d, fitted=fitted))

    def predict(model: str, data, machine: str):
        return preds[data[0].dataset]

    return devs, predict


def test_a_reported_only_set_does_not_move_the_fitted_exponent() -> None:
    devs, predict = _fake({"a": (1.0, True), "b": (1.0, True), "dram": (0.75, False)})
    with_dram = transfer_report(devs, predict)
    without = transfer_report(devs[:2], predict)
    assert with_dram.exponent == pytest.approx(without.exponent)
    assert with_dram.exponent == pytest.approx(1.4, abs=0.02)
    assert with_dram.reported_only == ("dram",)
    # the reported-only set is still scored: the 1/0.75 miss shows in its median
    (dram,) = [x for x in with_dram.joint if x.dataset == "dram"]
    assert dram.median_ratio == pytest.approx(1 / 0.75, rel=0.01)


def test_validate_csv_names_what_grounds_its_machine() -> None:
    from warpspeed.validation.validate import machine_grounding

    g = machine_grounding(ws.load_machine("MI100"))
    assert g["grounding"] == "micro-benchmarks"
    assert "stream/mi100" in g["tables"] and "latency/mi210" in g["tables"]  # a stand-in
    assert g["kernel_sets"] == ["fluidx3d_d3q19_MI100"]
