"""Measure and tune (MODEL.md §8, §9): which configurations ``tune`` times, the
measured best it returns, the replay of a measurement CSV, the GPU backend on
a stand-in for CuPy, the answer without a GPU, and ``warpspeed tune``."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace

import pytest

import warpspeed as ws
import warpspeed.measure as wm
from stencils import star3d
from tests import fake_cupy
from tests.measure.test_measure_gpu import make_plan
from warpspeed.cli import main
from warpspeed.measure.tune import (
    GpuBackend,
    Replay,
    candidates,
    gpu_missing,
    tune,
    untimed,
)
from warpspeed.validation.reference import dataset_dir

H200 = dataset_dir("h200") / "measurements.csv"
needs_h200 = pytest.mark.skipif(not H200.is_file(), reason=f"no H200 measurements at {H200}")


@pytest.fixture(scope="module")
def base() -> ws.Prediction:
    return ws.predict(star3d.kernel(radius=1, shape=(128, 128, 128)), "A100", (128, 2, 1))


def ranking(base, glups):
    """Predictions with these GLup/s, best first, each its own block."""
    return [replace(base, glups=g, block=(2 ** (i % 10), 1, 1), fold=(1, 1 + i // 10, 1))
            for i, g in enumerate(glups)]


class Table:
    """A backend from a dict: (fold, block) -> GLup/s or a refusal."""

    name = "a table"

    def __init__(self, values):
        self.values, self.asked = values, []

    def time(self, configs):
        self.asked.append(list(configs))
        return [self.values.get(c, "not in the table") for c in configs]


# ------------------------------------------------------------------ what is timed


def test_the_best_k_and_their_ties_are_timed(base):
    r = ranking(base, [10.0, 9.0, 9.0, 9.0000001, 8.0, 7.0])  # 9.0000001: 9.0 to six digits
    assert candidates(r, 2) == ([0, 1, 2, 3], False)
    assert candidates(r, 5) == ([0, 1, 2, 3, 4], False)
    assert candidates(ranking(base, [5.0] * 8), 2) == ([0, 1, 2, 3], True)  # at most k more


def test_tune_returns_the_measured_best_beside_its_prediction(base):
    r = ranking(base, [10.0, 9.0, 8.0, 7.0, 6.0])
    table = Table({(p.fold, p.block): m for p, m in zip(r, [8.0, 9.5, 7.0, 11.0, 12.0])})
    t = tune(r, table, k=3)
    assert [x.rank for x in t.tried] == [1, 2, 3]  # the model's best 3, nothing beyond
    assert (t.chosen.rank, t.chosen.measured, t.chosen.predicted) == (2, 9.5, 9.0)
    assert t.model_first is t.tried[0] and t.chosen.ratio == pytest.approx(9.0 / 9.5)
    text = "\n".join(t.lines())
    assert "chosen: fold 1,1,1 block 2,1,1 (rank 2 of the model), 9.50 GLup/s measured" in text
    assert "measured 8.00 GLup/s, 84.2 % of the chosen" in text
    assert "off by -5.3 % on the chosen" in text
    d = t.to_dict()
    assert d["chosen"]["measured_glups"] == 9.5 and len(d["timed"]) == 3


def test_configurations_that_cannot_launch_give_way_to_the_next(base):
    r = ranking(base, [10.0, 9.0, 8.0, 7.0, 6.0, 5.0])
    values = {(p.fold, p.block): m for p, m in zip(r, [None, 5.0, None, 4.0, 6.0, 3.0])
              if m is not None}
    table = Table(values)
    t = tune(r, table, k=2)
    assert [x.rank for x in t.timed] == [2, 4]  # 1 and 3 refused, 4 took their place
    assert t.tried[0].refused == "not in the table" and t.chosen.rank == 2
    assert len(table.asked) == 3  # the best two, then one more, then one more
    none = tune(ranking(base, [20.0 - i for i in range(12)]), Table({}), k=2)
    assert none.chosen.rank == 1 and none.chosen.measured is None
    assert len(none.tried) == 8 and "none of the 8" in none.notes[0]  # 4 k tried at most
    with pytest.raises(wm.MeasurementError):
        tune(r, table, k=0)


def test_without_a_gpu_the_ranking_stands(base, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    why = gpu_missing()
    assert why.startswith("no GPU: CuPy is not installed")
    t = untimed(ranking(base, [3.0, 2.0]), why)
    assert t.chosen.rank == 1 and t.timed == () and t.backend == "none"
    assert t.lines()[0].startswith("no GPU: CuPy is not installed") and "nothing was timed" in \
        t.lines()[0]
    cp = fake_cupy.build()
    assert gpu_missing(cp) == ""
    cp.cuda.runtime.getDeviceCount = lambda: 0
    assert gpu_missing(cp) == "no GPU: CUDA sees no device"


# ------------------------------------------------------------------ backends


def test_the_gpu_backend_times_each_fold_on_the_device(base):
    cp = fake_cupy.build()
    plan = make_plan("g", registers=128, domain=(256, 64, 8))
    gpu = GpuBackend({(1, 1, 1): plan}, cupy=cp)
    out = gpu.time([((1, 1, 1), (256, 1, 1)), ((1, 1, 1), (1024, 1, 1)), ((1, 2, 1), (64, 1, 1))])
    seconds = fake_cupy.launch_seconds(wm.grid_for(plan.program.domain, (256, 1, 1)), (256, 1, 1))
    assert out[0] == pytest.approx(plan.program.lups / seconds / 1e9)
    assert out[1].startswith("block of 1024 threads exceeds this kernel's limit of 512")
    assert out[2] == "no program for this fold"
    assert gpu.name == "this GPU (Fake GPU)"


def test_a_replay_reads_one_kernel_of_a_csv(tmp_path):
    rows = []
    for radius, block, g in [(1, (64, 1, 1), 5.0), (1, (64, 1, 1), 7.0), (1, (128, 1, 1), 6.0),
                             (2, (64, 1, 1), 1.0)]:
        params = wm.params_json({"radius": radius, "shape": (64, 64, 64)})
        rows.append(wm.Measurement(
            machine="X", stencil="star3d", params=params, kernel=f"star3d_r{radius}",
            domain=(64, 64, 64), block=block, fold=(1, 1, 1), lups=64**3,
            time_s=64**3 / g / 1e9, glups=g))
    rows.append(wm.Refusal(machine="X", stencil="star3d",
                           params=wm.params_json({"radius": 1, "shape": (64, 64, 64)}),
                           kernel="star3d_r1", domain=(64, 64, 64), block=(1024, 1, 1),
                           fold=(1, 1, 1), lups=64**3, reason="too many registers"))
    path = wm.write_csv(tmp_path / "m.csv", rows)
    with pytest.raises(wm.MeasurementError, match="holds 2 kernels"):
        Replay.from_csv(path)
    defaults = {"radius": 1, "shape": (640, 512, 512), "alignment": "interior"}
    r = Replay.from_csv(path, "star3d", {"shape": (64, 64, 64)}, defaults)
    assert r.glups == {((1, 1, 1), (64, 1, 1)): 6.0, ((1, 1, 1), (128, 1, 1)): 6.0}  # median
    assert r.time([((1, 1, 1), (1024, 1, 1)), ((1, 1, 1), (32, 1, 1))]) == [
        "too many registers", "not in m.csv: could not launch"]
    assert Replay.from_csv(path, "star3d", {"radius": 2, "shape": [64, 64, 64]},
                           defaults).glups == {((1, 1, 1), (64, 1, 1)): 1.0}
    with pytest.raises(wm.MeasurementError, match="no measurements of box3d"):
        Replay.from_csv(path, "box3d")


# ------------------------------------------------------------------ the command


@needs_h200
def test_tune_replays_the_shipped_h200_star(capsys):
    args = ["tune", "star3d", "--set", "radius=1", "--set", "shape=512,512,512",
            "--machine", "H200", "--threads", "1024", "--fold", "1,1,1", "--measure", "5",
            "--replay", str(H200), "--jobs", "1"]
    assert main([*args, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    shipped = [m for m in wm.read_csv(H200) if m.note.startswith("set star_r1_512;")
               and m.fold == (1, 1, 1) and math.prod(m.block) == 1024]
    measured = {m.block: m.glups for m in shipped}
    assert d["kernel"] == "star3d_r1" and d["machine"] == "H200"
    timed = [t for t in d["timed"] if t["measured_glups"] is not None]
    assert len(timed) >= 5 and [t["rank"] for t in d["timed"]][:5] == [1, 2, 3, 4, 5]
    for t in timed:
        assert t["measured_glups"] == measured[tuple(t["block"])]
    best = max(timed, key=lambda t: t["measured_glups"])
    assert d["chosen"]["block"] == best["block"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "timed on a replay of measurements.csv" in text and "chosen: fold 1,1,1" in text


def test_tune_without_a_gpu_says_so_and_keeps_the_ranking(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert main(["tune", "star3d", "--set", "shape=64,64,64", "--machine", "A100",
                 "--threads", "256", "--fold", "1,1,1", "--jobs", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("no GPU: CuPy is not installed")
    assert out[2].startswith("the model's choice: fold 1,1,1 block ")
    ranked = [line.split() for line in out[4:]]
    assert [r[0] for r in ranked] == [str(i) for i in range(1, len(ranked) + 1)]
    assert len(ranked) == min(10, len(ranked)) and out[2].split("block ")[1].startswith(
        ranked[0][2])


def test_tune_errors_are_one_line(tmp_path, capsys):
    assert main(["tune", "star3d", "--machine", "A100", "--threads", "256", "--fold", "1,1,1",
                 "--replay", str(tmp_path / "none.csv"), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert main(["tune", "star3d", "--machine", "A100", "--measure", "0"]) == 2
    assert "positive" in capsys.readouterr().err


# ------------------------------------------------------------------ the generation hook


def star_assignments(shape):
    from stencils._common import config

    src, dst = star3d.fields(1, shape)
    return star3d.assignments(1, src, dst), config(1)


@needs_h200
def test_create_kernel_measures_its_best_by_replay():
    import warpspeed.pystencils as wps

    assignments, cfg = star_assignments((512, 512, 512))
    replay = Replay.from_csv(H200, "star3d", {"radius": 1, "shape": (512, 512, 512)})
    kernel, ranking = r = wps.create_kernel(assignments, cfg, machine="H200", threads=1024,
                                            folds=[(1, 1, 1)], jobs=1, measure=4,
                                            replay=replay)
    t = r.tuned
    assert t is not None and [x.rank for x in t.tried][:4] == [1, 2, 3, 4]
    assert [(x.fold, x.block) for x in t.tried] == [(p.fold, p.block) for p in ranking[
        :len(t.tried)]]
    for x in t.timed:
        assert x.measured == replay.glups[(x.fold, x.block)]
    assert t.chosen.measured == max(x.measured for x in t.timed)
    assert kernel.get_launch_configuration().default_block_size == t.chosen.block
    plain = wps.create_kernel(assignments, cfg, machine="H200", threads=1024,
                              folds=[(1, 1, 1)], jobs=1)
    assert plain.tuned is None and plain.ranking == r.ranking


def test_create_kernel_measures_on_the_gpu(monkeypatch):
    """On a stand-in for CuPy: the fake device's times decide (wider blocks
    run faster there), and the kernel returned is the measured best's."""
    import warpspeed.pystencils as wps

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy.build())
    assignments, cfg = star_assignments((64, 64, 64))
    kernel, ranking = r = wps.create_kernel(assignments, cfg, machine="A100", threads=256,
                                            folds=[(1, 1, 1)], jobs=1, measure=3)
    t = r.tuned
    assert t is not None and t.backend == "this GPU (Fake GPU)" and len(t.timed) >= 3
    for x in t.timed:
        grid = wm.grid_for((64, 64, 64), x.block)
        assert x.measured == pytest.approx(64**3 / fake_cupy.launch_seconds(grid, x.block)
                                           / 1e9)
    assert t.chosen.block == max(t.timed, key=lambda x: (x.measured, -x.rank)).block
    assert kernel.get_launch_configuration().default_block_size == t.chosen.block


def test_measure_and_replay_are_checked_options():
    import warnings

    import warpspeed.pystencils as wps
    from warpspeed.pystencils.options import TUNE_KEYWORDS, with_keywords

    assert wps.ExtractOptions(measure=5, replay="m.csv").measure == 5
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ws.LaunchError, match="measure must be a positive number"):
            wps.ExtractOptions(measure=bad)
    with pytest.raises(ws.LaunchError, match="replay= needs measure=K"):
        wps.ExtractOptions(replay="m.csv")
    with pytest.raises(ws.LaunchError, match="replay must be the path"):
        wps.ExtractOptions(measure=1, replay=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # measure= and replay= are no deprecated keywords
        opts = with_keywords(None, {"measure": 3}, "create_kernel", TUNE_KEYWORDS, TUNE_KEYWORDS)
    assert opts.measure == 3
