"""The device scripts of ``fits/`` (MODEL.md §9): ``device_prepare.py`` writes
the series the lent GPU measures, ``device_measure.sh`` runs them there. The
measuring script runs here end to end on the stand-ins for CuPy and ncu
(``tests/fake_cupy.py``), in processes that cannot import pystencils, lbmpy
or islpy, as on the GPU machine."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import warpspeed as ws
import warpspeed.measure as wm
from tests.fits.test_fits_scripts import script
from tests.measure.test_measure_gpu import FAKE_NCU, fake_environment, make_plan
from warpspeed.validation.measured_sets import set_of
from warpspeed.validation.reference import dataset_dir

ROOT = Path(__file__).resolve().parents[2]
MEASURE = ROOT / "fits" / "device_measure.sh"


def fake_programs(folder: Path) -> None:
    wm.write_plans(folder / "check", [make_plan("c", blocks=((256, 1, 1), (32, 8, 4)))])
    wm.write_plans(folder / "new", [make_plan("n1"), make_plan("n2", registers=128,
                                                               blocks=((1024, 1, 1),))])


def run_script(tmp_path: Path, *args: str, budget: int = 300) -> subprocess.CompletedProcess:
    env = fake_environment(tmp_path, ("pystencils", "lbmpy", "islpy"))
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    env.update(PYTHON=sys.executable, NCU=str(ncu), JOBS="2", BUDGET_S=str(budget),
               PATH=os.environ["PATH"])
    return subprocess.run(["bash", str(MEASURE), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_device_script_measures_every_series_into_a_few_files(tmp_path):
    fake_programs(tmp_path / "progs")
    out = tmp_path / "out"
    res = run_script(tmp_path, str(tmp_path / "progs"), str(out))
    assert res.returncode == 0, res.stderr
    files = sorted(p.name for p in out.iterdir())
    assert files == ["GPU-check.csv", "GPU-new.csv", "log.txt", "smi-after.txt",
                     "smi-before.txt"]
    check, new = wm.read_csv(out / "GPU-check.csv"), wm.read_csv(out / "GPU-new.csv")
    assert [m.block for m in check] == [(256, 1, 1), (32, 8, 4)]
    assert all(m.dram_load is not None for m in check)  # every check block profiled
    assert len(new) == 2 and wm.read_refusals(out / "GPU-new.csv")[0].block == (1024, 1, 1)
    log = (out / "log.txt").read_text()
    assert "== check: exit 0" in log and "== new: exit 0" in log
    assert "2 configurations measured, 0 refused, on Fake GPU" in log
    assert "cupy 0.0+fake" in log and "Version 2099.1.0" in log


def test_the_device_script_keeps_to_its_budget(tmp_path):
    fake_programs(tmp_path / "progs")
    out = tmp_path / "out"
    res = run_script(tmp_path, str(tmp_path / "progs"), str(out), budget=30)
    assert res.returncode == 0, res.stderr
    log = (out / "log.txt").read_text()
    assert "== check: skipped" in log and "== new: skipped" in log
    assert not (out / "GPU-check.csv").exists()


def test_the_device_script_dry_run_lists_each_series(tmp_path):
    fake_programs(tmp_path / "progs")
    res = run_script(tmp_path, "--dry-run", str(tmp_path / "progs"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("nothing is measured") == 2
    assert "--counter-blocks 12" in res.stdout and "--counter-blocks 3" in res.stdout
    missing = run_script(tmp_path, str(tmp_path / "none"), str(tmp_path / "o"))
    assert missing.returncode == 2 and "no programs folder" in missing.stderr


@pytest.mark.skipif(not (dataset_dir("h200") / "measurements.csv").is_file(),
                    reason="the shipped H200 measurements (fits/data/h200) are missing")
def test_the_cross_check_series_spreads_over_the_shipped_run(tmp_path):
    prep = script("device_prepare")
    (plan,) = prep.check_plans({"pystencils": "2.1", "warpspeed": "x"})
    shipped = sorted((m for m in wm.read_csv(dataset_dir("h200") / "measurements.csv")
                      if set_of(m) == "star_r1_512" and m.fold == (1, 1, 1)),
                     key=lambda m: m.glups)
    assert len(plan.blocks) == 12 and plan.note == "set check_star_r1_512"
    assert plan.blocks[0] == shipped[0].block and plan.blocks[-1] == shipped[-1].block
    assert set(plan.blocks) <= {m.block for m in shipped}
    assert plan.params == wm.params_json({"radius": 1, "shape": (512, 512, 512)})
    assert prep.spread([1, 2, 3, 4, 5], 3) == [1, 3, 5] and prep.spread([1, 2], 5) == [1, 2]


def test_two_runs_are_compared_configuration_by_configuration(tmp_path, capsys):
    cmp = script("compare_runs")
    old = [wm.Measurement(machine="X", stencil="star3d", params="{}", kernel="k",
                          domain=(8, 8, 8), block=(b, 1, 1), fold=(1, 1, 1), lups=512,
                          time_s=512 / g / 1e9, glups=g, note="set star")
           for b, g in ((32, 10.0), (64, 20.0), (128, 30.0))]
    new = [dataclasses.replace(m, glups=m.glups * f, note="set check_star; timed")
           for m, f in zip(old[:2], (1.1, 0.9))]
    pairs = cmp.compare(new, old)
    assert list(pairs) == ["star"] and len(pairs["star"]) == 2
    a, b = wm.write_csv(tmp_path / "new.csv", new), wm.write_csv(tmp_path / "old.csv", old)
    assert cmp.main([str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| star | 2 | 1.000 | 0.900 | 1.100 | 1.00 |" in out
    empty = wm.write_csv(tmp_path / "other.csv", [dataclasses.replace(old[2], stencil="box3d")])
    assert cmp.main([str(a), str(empty)]) == 2
    assert "share no configuration" in capsys.readouterr().err


def test_a_series_is_predicted_before_it_is_measured(tmp_path):
    """``device_prepare.py --predictions``: one row per configuration, the
    model's own prediction of the generated kernel, under a comment naming
    the machine and the commit."""
    prep, series = script("device_prepare"), script("device_series")
    (narrow,) = [e for e in series.R4PROBE if e[0] == "r4probe_narrow"]
    plans = series.listed_plans([narrow], {"pystencils": "2.1", "warpspeed": "x"})
    rows = prep.prediction_rows(plans, "H200")
    assert [r["block"] for r in rows] == [prep.triple(b) for b in narrow[4]]
    kernel = wm.generate_variant("star3d", narrow[2], narrow[3])[0]
    direct = ws.predict(kernel, "H200", narrow[4][0])
    assert float(rows[0]["predicted_glups"]) == pytest.approx(direct.glups, abs=0.006)
    assert rows[0]["limiter"] == direct.limiter and rows[0]["fold"] == "1x2x1"
    out = tmp_path / "p.csv"
    prep.write_predictions(out, rows, "H200", ["r4probe"], "abc123")
    first, *rest = out.read_text().splitlines()
    assert first.startswith("# predicted by the default model on H200") and "abc123" in first
    assert rest[0] == ",".join(prep.PREDICTION_COLUMNS) and len(rest) == 1 + len(rows)
    bad = ["--series", "r4probe", "--predictions", str(tmp_path / "q.csv"), "--machine", "NOPE"]
    assert prep.main(bad) == 2 and not (tmp_path / "q.csv").exists()


def test_the_capacity_series_lists_each_kernel_once_with_all_its_blocks():
    """``capacity``: one plan per kernel (the unfolded 2048 x 768 x 32 star's
    blocks joined, each pad of the folded D3Q19 its own program), every
    configuration of :data:`CAPACITY` and :data:`SPLIT_PADS` in it once."""
    series = script("device_series")
    plans = series.capacity_plans({"pystencils": "2.1", "warpspeed": "x"})
    assert len({p.name for p in plans}) == len(plans)
    configs = sum(len(p.blocks) for p in plans)
    assert configs == sum(len(e[4]) for e in series.CAPACITY) + len(series.SPLIT_PADS)
    (joined,) = [p for p in plans if p.fold == (1, 1, 1) and '"shape":[2048,768,32]' in p.params]
    assert joined.blocks == ((256, 1, 1), (128, 2, 1), (64, 4, 1))
    split = [p for p in plans if p.stencil == "lbm_d3q19"]
    assert sorted(p.program.shared_bytes for p in split) == sorted(
        series.shared_pad(n) for n in series.SPLIT_PADS)
