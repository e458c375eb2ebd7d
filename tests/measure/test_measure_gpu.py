"""The GPU path of the harness (MODEL.md §9) on a stand-in for CuPy
(``tests/fake_cupy.py``: a device clock, no GPU): compiling, buffers at their
offsets, CUDA-event timing and its repetitions, refusals instead of aborts,
rows appended as plans finish, counters from (a stand-in for) ncu merged in,
the plan files, and the GPU path's imports (no pystencils, lbmpy or islpy)."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

import warpspeed.measure as wm
from tests import fake_cupy
from warpspeed.measure import gpu, programs
from warpspeed.measure.run import RunOptions, compile_all, measure_plans, select_counters

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cp(monkeypatch):
    module = fake_cupy.build()
    monkeypatch.setitem(sys.modules, "cupy", module)
    monkeypatch.setattr(fake_cupy, "CUDA_PATH", None)
    return module


def make_plan(name="p", registers=32, domain=(256, 64, 8), blocks=((256, 1, 1), (32, 8, 4)),
              fold=(1, 1, 1), extra="", note="set test") -> programs.Plan:
    lups = math.prod(domain) * math.prod(fold)
    source = f"// fake: registers={registers}\n{extra}\nextern \"C\" __global__ void ws_{name}()"
    prog = programs.Program(
        source=source, function=f"ws_{name}",
        args=(programs.Buffer("dst", "float64", 8, 10_000, base_offset=72),
              programs.Buffer("src", "float32", 4, 10_000, base_offset=4),
              programs.Scalar("omega", "float64", 1.5)),
        domain=domain, lups=lups, options=("-std=c++17",))
    return programs.Plan(name=name, stencil="fake", params=json.dumps({"n": name}),
                         kernel=f"fake_{name}", fold=fold,
                         interior=tuple(d * f for d, f in zip(domain, fold)),
                         blocks=tuple(blocks), program=prog, note=note,
                         pystencils="2.1", warpspeed="test")


def expected_glups(plan: programs.Plan, block) -> float:
    seconds = fake_cupy.launch_seconds(wm.grid_for(plan.program.domain, block), block)
    return plan.program.lups / seconds / 1e9


# ------------------------------------------------------------------ one plan on the device


def test_buffers_sit_at_their_offsets_and_scalars_keep_their_type(cp, tmp_path, monkeypatch):
    log = tmp_path / "log"
    monkeypatch.setenv("FAKE_CUPY_LOG", str(log))
    dev = gpu.Loaded(cp, make_plan().program)
    arrays = [json.loads(x) for x in log.read_text().splitlines() if '"array"' in x]
    assert [(a["ptr"] % 128, a["dtype"]) for a in arrays] == [(72, "float64"), (4, "float32")]
    assert dev.args[2] == 1.5 and type(dev.args[2]).__name__ == "float64"
    assert dev.args[0].filled == "uniform[0,1) x 10000 float64"
    assert (dev.registers, dev.max_threads) == (32, 1024)


def test_timing_is_the_median_of_event_times_with_the_repetition_rule(cp):
    plan = make_plan()
    dev = gpu.Loaded(cp, plan.program)
    rule = gpu.TimingRule(warmup=2, repetitions=7, short_s=1e-3, short_repetitions=25)
    t = gpu.time_block(dev, (256, 1, 1), rule)
    seconds = fake_cupy.launch_seconds(wm.grid_for(plan.program.domain, (256, 1, 1)),
                                       (256, 1, 1))
    assert seconds < 1e-3  # a short kernel: 25 timed launches
    assert len(t.times) == 25 and t.median == pytest.approx(seconds) and not t.skipped
    long = gpu.TimingRule(warmup=0, repetitions=7, short_s=0.0, long_s=seconds / 2,
                          long_repetitions=3)
    assert len(gpu.time_block(dev, (256, 1, 1), long).times) == 3
    assert gpu.TimingRule().count(1e-3) == 7 and gpu.TimingRule().count(1e-5) == 25


def test_a_block_the_kernel_cannot_launch_is_refused_in_one_line(cp):
    plan = make_plan(registers=128, blocks=((1024, 1, 1), (512, 1, 1)))
    dev = gpu.Loaded(cp, plan.program)
    refused, timed = gpu.time_blocks(dev, plan.blocks, gpu.TimingRule())
    assert refused.skipped == ("block of 1024 threads exceeds this kernel's limit of 512 "
                               "(128 registers per thread)")
    assert refused.times == () and timed.times and not timed.skipped
    tall = make_plan(domain=(64, 64, 2**20), blocks=((64, 1, 1),))
    assert "grid of 1048576 blocks along z exceeds CUDA's 65535" in gpu.Loaded(
        cp, tall.program).refusal((64, 1, 1))


def test_a_launch_that_fails_is_a_refusal_not_an_abort(cp):
    plan = make_plan(extra="// fake: fail", blocks=((256, 1, 1), (32, 8, 4)))
    timings = gpu.time_blocks(gpu.Loaded(cp, plan.program), plan.blocks, gpu.TimingRule())
    assert [t.skipped.split(":")[0] for t in timings] == ["launch failed"] * 2
    assert "CUDA_ERROR_LAUNCH_FAILED" in timings[0].skipped


def test_a_missing_toolkit_header_is_found_in_the_toolkit(cp, tmp_path, monkeypatch):
    (tmp_path / "include" / "cccl").mkdir(parents=True)
    plan = make_plan(extra="#include <fake_toolkit.h>")
    with pytest.raises(wm.MeasurementError, match="does not compile.*fake_toolkit.h"):
        gpu.compile_kernel(cp, plan.program)  # no toolkit: the error, in one line
    monkeypatch.setattr(fake_cupy, "CUDA_PATH", str(tmp_path))
    kernel = gpu.compile_kernel(cp, plan.program)
    assert kernel.options[-2:] == (f"-I{tmp_path}/include", f"-I{tmp_path}/include/cccl")
    assert gpu.toolkit_includes(str(tmp_path), 12) == (f"-I{tmp_path}/include",)
    assert gpu.toolkit_includes(None, 13) == ()


# ------------------------------------------------------------------ a run


def test_a_run_appends_a_row_per_block_and_refusals_with_reasons(cp, tmp_path):
    out = tmp_path / "m.csv"
    plans = [make_plan("a", blocks=((256, 1, 1), (32, 8, 4), (16, 16, 4))),
             make_plan("b", registers=255, blocks=((1024, 1, 1), (64, 4, 1)), fold=(1, 2, 1)),
             make_plan("c", extra="#error nope", blocks=((64, 1, 1),))]
    lines = []
    rows = measure_plans(plans, out, RunOptions(ncu=None), cupy=cp, report=lines.append)
    measured = wm.read_csv(out)
    refused = wm.read_refusals(out)
    assert len(rows) == 6 and len(measured) == 4 and len(refused) == 2
    for m in measured:
        plan = next(p for p in plans if p.kernel == m.kernel)
        assert m.glups == pytest.approx(expected_glups(plan, m.block))
        assert m.glups == pytest.approx(m.lups / m.time_s / 1e9)
        assert (m.machine, m.cupy, m.cuda, m.pystencils) == ("Fake GPU", "0.0+fake", "13.0",
                                                             "2.1")
        assert m.note == "set test" and m.dram_load is None
    b = [m for m in measured if m.kernel == "fake_b"]
    assert [(m.block, m.fold, m.registers) for m in b] == [((64, 4, 1), (1, 2, 1), 255)]
    assert {(r.kernel, r.block) for r in refused} == {("fake_b", (1024, 1, 1)),
                                                      ("fake_c", (64, 1, 1))}
    assert next(r for r in refused if r.kernel == "fake_b").reason.startswith(
        "block of 1024 threads exceeds this kernel's limit of 256")
    assert "does not compile" in next(r for r in refused if r.kernel == "fake_c").reason
    assert lines[-1] == "c: 0 blocks timed, 1 refused (" + refused[-1].reason + ")"


def test_rows_are_appended_after_each_plan(cp, tmp_path, monkeypatch):
    out = tmp_path / "m.csv"
    seen = []
    real = wm.write_csv

    def spy(path, rows, append=True):
        real(path, rows, append)
        seen.append(len(wm.read_csv(path)))

    monkeypatch.setattr("warpspeed.measure.run.write_csv", spy)
    measure_plans([make_plan("a"), make_plan("b")], out, RunOptions(ncu=None), cupy=cp)
    assert seen == [2, 4]


def test_without_ncu_the_rows_say_the_counters_are_missing(cp, tmp_path):
    out = tmp_path / "m.csv"
    measure_plans([make_plan("a")], out, RunOptions(ncu="no-such-ncu-here"), cupy=cp)
    rows = wm.read_csv(out)
    assert all(r.note == "set test; no counters: no-such-ncu-here not found" for r in rows)
    assert all(r.dram_load is None for r in rows)


def test_the_counter_selection_spreads_over_each_plans_blocks():
    blocks = [(2**i, 1, 1) for i in range(7)]
    picked = select_counters({"a": blocks, "b": blocks[:2]}, 3)
    assert picked == [("a", blocks[0]), ("a", blocks[3]), ("a", blocks[6]),
                      ("b", blocks[0]), ("b", blocks[1])]
    assert select_counters({"a": blocks}, 1) == [("a", blocks[0])]
    assert select_counters({"a": blocks}, 0) == []
    assert len(select_counters({"a": blocks}, None)) == 7


# ------------------------------------------------------------------ plan files


def test_a_shared_memory_pad_is_reserved_at_each_launch_and_travels(cp, tmp_path, monkeypatch):
    """A plan's ``shared_bytes`` (occupancy series, MODEL.md §9): beyond 48 KiB
    the kernel asks the driver for it, every launch reserves it, it survives
    the plan file and names the plan; more than the GPU grants is a refusal."""
    from dataclasses import replace

    log = tmp_path / "log"
    monkeypatch.setenv("FAKE_CUPY_LOG", str(log))
    plan = make_plan("pad")
    padded = replace(plan, name="pad-smem100000",
                     program=replace(plan.program, shared_bytes=100_000))
    dev = gpu.Loaded(cp, padded.program)
    assert dev.kernel.max_dynamic_shared_size_bytes == 100_000
    assert not gpu.time_block(dev, (256, 1, 1), gpu.TimingRule()).skipped
    launches = [json.loads(x) for x in log.read_text().splitlines() if '"launch"' in x]
    assert launches and {e["shared_mem"] for e in launches} == {100_000}
    wm.write_plans(tmp_path / "dir", [padded])
    (back,) = wm.read_plans(tmp_path / "dir")
    assert back.program.shared_bytes == 100_000
    assert programs.plan_name("f", "s", "{}", 100_000).endswith("-smem100000")
    too_much = gpu.Loaded(cp, replace(plan.program, shared_bytes=300_000))
    timing = gpu.time_block(too_much, (256, 1, 1), gpu.TimingRule())
    assert timing.skipped.startswith("300000 B of shared memory per block refused")


def test_plans_travel_as_json_with_their_headers(tmp_path):
    headers = tmp_path / "src"
    (headers / "pystencils_runtime").mkdir(parents=True)
    (headers / "pystencils_runtime" / "cuda.cuh").write_text("#pragma once\n")
    (headers / "__init__.py").write_text("")
    plan = make_plan("a")
    plan = programs.Plan(**{**vars(plan), "program": programs.Program(
        **{**vars(plan.program), "include": str(headers)})})
    wm.write_plans(tmp_path / "dir", [plan])
    assert (tmp_path / "dir" / "include" / "pystencils_runtime" / "cuda.cuh").is_file()
    assert not (tmp_path / "dir" / "include" / "__init__.py").exists()
    (back,) = wm.read_plans(tmp_path / "dir")
    assert back.program.include == str((tmp_path / "dir" / "include").resolve())
    assert vars(back) | {"program": None} == vars(plan) | {"program": None}
    assert vars(back.program) | {"include": ""} == vars(plan.program) | {"include": ""}
    with pytest.raises(wm.MeasurementError, match="no programs"):
        wm.read_plans(tmp_path / "dir", only=["zzz"])
    with pytest.raises(wm.MeasurementError, match="no programs folder"):
        wm.read_plans(tmp_path / "none")


def test_a_prepared_star_is_the_program_the_stencil_path_compiles(tmp_path):
    plan = wm.plan_for("star3d", {"radius": 1, "shape": (64, 32, 32)}, (1, 2, 1),
                       threads=[256], info={"pystencils": "2.1", "warpspeed": "x"})
    assert plan.blocks == tuple(wm.design_blocks(256, wm.generate_variant(
        "star3d", {"radius": 1, "shape": (64, 32, 32)}, (1, 2, 1))[0]))
    assert plan.program.function == "ws_star3d_r1_f121" and plan.fold == (1, 2, 1)
    assert plan.interior == (64, 32, 32) and plan.program.domain == (64, 16, 32)
    wm.write_plans(tmp_path, [plan])
    (back,) = wm.read_plans(tmp_path)
    assert back.program.source == plan.program.source
    assert (tmp_path / "include" / "pystencils_runtime" / "generic_gpu.hpp").is_file()


# ------------------------------------------------------------------ processes


def fake_environment(tmp_path: Path, blocked: tuple[str, ...]) -> dict[str, str]:
    """PYTHONPATH for child processes: ``cupy`` is the fake, and importing
    any of ``blocked`` fails (a meta path finder in sitecustomize)."""
    shim = tmp_path / "shim"
    (shim / "cupy").mkdir(parents=True, exist_ok=True)
    (shim / "cupy" / "__init__.py").write_text(
        "import sys\nfrom tests import fake_cupy\nsys.modules[__name__] = fake_cupy.build()\n")
    (shim / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Block:\n"
        f"    names = {blocked!r}\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in self.names:\n"
        "            raise ImportError(f'blocked on the GPU machine: {name}')\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(shim), str(ROOT)]),
                FAKE_CUPY_LOG=str(tmp_path / "cupy.log"))


FAKE_NCU = '''#!{python}
"""A stand-in for ncu: runs the profiled program, then prints a long-format
table with invented counters for each launch the selection names."""
import json, subprocess, sys
argv = sys.argv[1:]
if argv == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0 (build 1)")
    sys.exit(0)
prog = argv[argv.index("-m") - 1:]
assert subprocess.run(prog).returncode == 0
pairs = json.loads(open(prog[prog.index("--selection") + 1]).read())
folder = prog[prog.index("--programs") + 1]
head = ["ID", "Kernel Name", "Block Size", "Metric Name", "Metric Unit", "Metric Value"]
print(",".join(f'"{{h}}"' for h in head))
for i, (name, block) in enumerate(pairs):
    fn = json.loads(open(f"{{folder}}/{{name}}.json").read())["program"]["function"]
    for metric, unit, value in (("dram__bytes_read.sum", "byte", 1000 * (i + 1)),
                                ("launch__registers_per_thread", "register/thread", 40)):
        cells = [str(i), fn, "(" + block.replace(",", ", ") + ")", metric, unit, str(value)]
        print(",".join(f'"{{c}}"' for c in cells))
'''


def test_programs_run_in_processes_without_pystencils_lbmpy_or_islpy(tmp_path):
    """The GPU machine's path, end to end in child processes: the command line
    reads the plans, two spawned workers compile, the ncu child launches the
    selection, and none of them imports pystencils, lbmpy or islpy."""
    plans = [make_plan("a", blocks=((256, 1, 1), (32, 8, 4), (16, 16, 4))),
             make_plan("b", registers=255, blocks=((1024, 1, 1), (64, 4, 1)))]
    wm.write_plans(tmp_path / "progs", plans)
    ncu = tmp_path / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable))
    ncu.chmod(0o755)
    env = fake_environment(tmp_path, ("pystencils", "lbmpy", "islpy"))
    out = tmp_path / "m.csv"
    res = subprocess.run(
        [sys.executable, "-m", "warpspeed.measure", "run", "--programs", str(tmp_path / "progs"),
         "--out", str(out), "--jobs", "2", "--ncu", str(ncu), "--counter-blocks", "2"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "4 configurations measured, 1 refused, on Fake GPU" in res.stdout
    log = [json.loads(x) for x in (tmp_path / "cupy.log").read_text().splitlines()]
    main_pid = {e["pid"] for e in log if e["event"] == "launch" and e["name"] == "ws_a"}
    workers = {e["pid"] for e in log if e["event"] == "compile"} - main_pid
    assert len(workers) >= 1  # the plans were compiled in spawned workers first
    rows = {(m.kernel, m.block): m for m in wm.read_csv(out)}
    # the selection: blocks 1 and 3 of a, the one timed block of b, in that order
    counted = {("fake_a", (256, 1, 1)): 1000, ("fake_a", (16, 16, 4)): 2000,
               ("fake_b", (64, 4, 1)): 3000}
    for key, m in rows.items():
        if key in counted:
            assert m.dram_load == pytest.approx(counted[key] / m.lups)
            assert m.registers == 40 and m.ncu == "2099.1.0"
        else:
            assert m.dram_load is None and m.registers == 32
    assert wm.read_refusals(out)[0].block == (1024, 1, 1)


def test_the_gpu_path_imports_nothing_of_the_model(tmp_path):
    """What ``run --programs`` imports, read from ``python -X importtime``:
    the harness's own modules and no pystencils, lbmpy, islpy or sympy."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-c",
         "import warpspeed.measure.cli, warpspeed.measure.run, warpspeed.measure.gpu"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    names = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if "|" in line}
    assert "warpspeed.measure.gpu" in names and "warpspeed.measure.programs" in names
    heavy = sorted(n for n in names if n.split(".")[0] in ("pystencils", "lbmpy", "islpy",
                                                            "sympy", "scipy", "rich"))
    assert heavy == []
    model = sorted(n for n in names if n.split(".")[:2] in (
        ["warpspeed", "model"], ["warpspeed", "volumes"], ["warpspeed", "timing"]))
    assert model == []


def test_compile_workers_are_spawned_processes(tmp_path, monkeypatch):
    env = fake_environment(tmp_path, ())
    monkeypatch.syspath_prepend(str(tmp_path / "shim"))  # spawned workers get this sys.path
    monkeypatch.setenv("FAKE_CUPY_LOG", env["FAKE_CUPY_LOG"])
    plans = [make_plan("a"), make_plan("b", extra="#error x"), make_plan("c")]
    errors = compile_all(plans, jobs=2)
    assert errors["a"] == errors["c"] == "" and "does not compile" in errors["b"]
    pids = {json.loads(x)["pid"] for x in (tmp_path / "cupy.log").read_text().splitlines()}
    assert pids and os.getpid() not in pids


def test_median_and_minimum_of_a_timing():
    t = gpu.Timing((1, 1, 1), (3.0, 1.0, 2.0, 5.0), 32)
    assert t.median == statistics.median([3.0, 1.0, 2.0, 5.0]) and t.minimum == 1.0
