"""Validation metrics against hand-computed small examples, the report of a
CSV end to end, and the validation notebook without data.

The 'measured' rows here are invented test inputs (the model's predictions
scaled by known factors), never measurements."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import warpspeed as ws
from tests.slow import slow
from warpspeed.errors import MachineError
from warpspeed.measure import Measurement, MeasurementError, params_json, write_csv
from warpspeed.search.ties import first_choice
from warpspeed.validation.validate import (
    QUANTITIES,
    best_fraction,
    group_report,
    infer_machine,
    machine_for_device,
    mape,
    report,
    select_subset,
    spearman,
    validate_command,
)

ROOT = Path(__file__).resolve().parents[2]
PARAMS = {"radius": 1, "shape": (64, 32, 32)}
BLOCKS = [(32, 8, 4), (64, 4, 4), (256, 4, 1), (1024, 1, 1)]


def test_mape_by_hand():
    assert mape([110.0, 90.0, 50.0], [100.0, 100.0, None]) == pytest.approx(10.0)
    assert mape([1.0, 3.0], [2.0, 0.0]) == pytest.approx(50.0)  # zero measured: left out
    assert mape([None], [1.0]) is None
    assert mape([], []) is None


def test_spearman_by_hand():
    # measured ranks 1, 2, 4, 3: sum d^2 = 2, rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 40.0, 30.0]) == pytest.approx(0.8)
    assert spearman([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)
    assert spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert spearman([1.0], [2.0]) is None


def test_best_fraction_by_hand():
    assert best_fraction([5.0, 9.0, 7.0], [8.0, 6.0, 10.0]) == pytest.approx(0.6)
    assert best_fraction([1.0, 2.0], [1.0, 4.0]) == pytest.approx(1.0)
    assert best_fraction([3.0, 3.0], [2.0, 4.0]) == pytest.approx(0.5)  # tie: first
    assert best_fraction([], []) is None


@pytest.mark.parametrize(
    ("name", "machine"),
    [
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H200", "H200"),
        ("NVIDIA GH200 480GB", "GH200"),
        ("NVIDIA A100-SXM4-40GB", "A100"),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB"),
        ("Tesla V100-PCIE-32GB", "V100"),
        ("NVIDIA H100 PCIe", None),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_driver_names_map_to_built_in_machines(name, machine):
    assert machine_for_device(name) == machine
    if machine is not None:
        assert ws.load_machine(machine).name == machine


@pytest.fixture(scope="module")
def predictions():
    from stencils import star3d

    kernel = star3d.kernel(**PARAMS)
    return [ws.predict(kernel, "H100", b) for b in BLOCKS]


def _rows(predictions, scale: float = 0.8, machine: str = "NVIDIA H100 80GB HBM3"):
    """Invented rows: every volume and GLup/s is the prediction / 1.25 (MAPE
    25 %), except GLup/s, whose order is reversed for the last two blocks."""
    rows = []
    for i, p in enumerate(predictions):
        v = p.volumes
        glups = p.glups * scale * (1.0 + 0.01 * i)
        rows.append(Measurement(
            machine=machine, stencil="star3d", params=params_json(PARAMS), kernel=p.kernel,
            domain=(64, 32, 32), block=p.block, fold=p.fold, lups=64 * 32 * 32,
            time_s=64 * 32 * 32 / glups / 1e9, glups=glups,
            dram_load=v.dram_load * scale, dram_store=v.dram_store * scale,
            l2_load=v.l2_load * scale, l2_store=v.l2_store * scale,
            l1_wavefronts=p.l1_cycles / 32 * scale, note="invented test row",
        ))
    return rows


def test_group_report_by_hand(predictions):
    rows = _rows(predictions)
    g = group_report("star", list(zip(rows, predictions)))
    for q in ("dram_load", "dram_store", "l2_load", "l2_store", "l1_cycles"):
        assert g.mape[q] == pytest.approx(25.0), q  # |p - 0.8 p| / 0.8 p
        assert g.measured[q] == len(BLOCKS)
    pg = [p.glups for p in predictions]
    mg = [r.glups for r in rows]
    assert g.mape["glups"] == pytest.approx(
        100 * sum(abs(a - b) / b for a, b in zip(pg, mg)) / len(BLOCKS))
    assert g.spearman == pytest.approx(spearman(pg, mg))
    first = first_choice(predictions)  # the configuration the ranking names first
    assert g.best_fraction == pytest.approx(mg[first] / max(mg))
    assert g.rows == len(BLOCKS)


def test_report_groups_by_stencil_and_selects_halves(predictions):
    rows = _rows(predictions)
    pairs = list(zip(rows, predictions))
    r = report(pairs, machine="H100", fits="paper")
    assert [g.name for g in r.groups] == [f"star3d_r1 {params_json(PARAMS)}"]
    assert r.overall.rows == len(BLOCKS)
    train, test = select_subset(pairs, "train"), select_subset(pairs, "test")
    assert len(train) + len(test) == len(pairs)
    assert not {id(m) for m, _ in train} & {id(m) for m, _ in test}
    assert report(pairs, subset="test").overall.rows == len(test)
    with pytest.raises(ValueError):
        select_subset(pairs, "validation")
    with pytest.raises(MeasurementError):
        report([])


def test_validate_command_reports_a_csv(predictions, tmp_path):
    path = write_csv(tmp_path / "m.csv", _rows(predictions))
    text = validate_command(path)
    assert "validation on H100 with fits paper" in text
    assert "star3d_r1" in text and "spearman" in text
    for q in QUANTITIES:
        assert q in text
    assert "25.0%" in text
    data = json.loads(validate_command(path, machine="H100", fits="paper", json=True))
    assert data["machine"] == "H100" and data["overall"]["rows"] == len(BLOCKS)
    assert data["overall"]["mape"]["dram_load"] == pytest.approx(25.0)


def test_validate_command_errors_are_warpspeed_errors(predictions, tmp_path):
    with pytest.raises(MeasurementError, match="does not exist"):
        validate_command(tmp_path / "none.csv")
    unknown = write_csv(tmp_path / "u.csv", _rows(predictions, machine="Mystery GPU"))
    with pytest.raises(MachineError, match="Mystery GPU"):
        validate_command(unknown)
    mixed = _rows(predictions) + _rows(predictions, machine="NVIDIA H200")
    with pytest.raises(MeasurementError, match="several GPUs"):
        infer_machine(mixed)
    empty = write_csv(tmp_path / "e.csv", [])
    with pytest.raises(MeasurementError, match="no measurements"):
        validate_command(empty)


@pytest.mark.slow  # a notebook: under CI's main Python only
def test_validation_notebook_says_there_is_no_data_and_stops_cleanly(monkeypatch, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    spec = tmp_path / "kernels" / "warpspeed-validate"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "warpspeed tests", "language": "python",
    }))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("WARPSPEED_MEASUREMENTS", raising=False)
    nb = nbformat.read(ROOT / "notebooks" / "validation.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="warpspeed-validate",
                                     resources={"metadata": {"path": str(ROOT)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert "No measured CSV" in "".join(o.get("text", "") for o in outputs)
    assert not any(o.get("output_type") == "error" for o in outputs)


@slow
def test_validate_command_line_prints_the_report_and_fails_cleanly(predictions, tmp_path):
    import subprocess

    path = write_csv(tmp_path / "m.csv", _rows(predictions))
    exe = Path(sys.executable).with_name("warpspeed")
    ok = subprocess.run([str(exe), "validate", str(path), "--subset", "test"],
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "validation on H100" in ok.stdout and "spearman" in ok.stdout
    bad = subprocess.run([str(exe), "validate", str(tmp_path / "none.csv")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "does not exist" in bad.stderr


def test_rank_correlation_is_none_where_undefined_and_never_nan():
    from warpspeed.timing.kernel_fit import rank_correlation

    assert rank_correlation([1.0, 2.0, 3.0], [10.0, 20.0, 30.0]) == pytest.approx(1.0)
    assert rank_correlation([3.0, 2.0, 1.0], [10.0, 20.0, 30.0]) == pytest.approx(-1.0)
    # a model that predicts one figure for every row (the paper model on an FP-bound scan)
    assert rank_correlation([5.0, 5.0, 5.0], [1.0, 2.0, 3.0]) is None
    assert rank_correlation([1.0, 2.0], [1.0, 2.0]) is None


def test_the_recorded_validation_is_strict_json():
    def refuse(token: str) -> float:
        raise ValueError(f"{token} in ACCURACY.json: not JSON")

    path = Path(ws.__file__).with_name("ACCURACY.json")
    json.loads(path.read_text(), parse_constant=refuse)


def test_worst_domain_best_by_hand():
    """Two domains of two rows each: the model picks the slower row in the
    second one (3 of 4), the right one in the first; across the set it picks
    the overall best (10 of 10). A set of one domain has no worst domain."""
    import numpy as np

    from warpspeed.timing.kernel_fit import scores

    pred = np.array([9.0, 5.0, 8.0, 7.0])
    meas = np.array([10.0, 6.0, 3.0, 4.0])
    s = scores("two", None, pred, meas, domains=["a", "a", "b", "b"])
    assert s.best_fraction == pytest.approx(1.0)
    assert s.worst_domain_best == pytest.approx(0.75)
    assert scores("one", None, pred, meas, domains=["a"] * 4).worst_domain_best is None
    # a domain of one row is no choice: left out
    assert scores("lone", None, pred, meas, domains=["a", "a", "b", "c"]).worst_domain_best is None
    assert scores("none", None, pred, meas).worst_domain_best is None
