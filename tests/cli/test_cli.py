"""The ``warpspeed`` command end to end, in a subprocess: every command, its
output formats, and one-line errors with exit code 2."""

import csv
import dataclasses
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import warpspeed as ws
from stencils import star3d_by_hand
from tests.ranking_order import is_best_first
from tests.slow import fast_first, slow

SCRIPT = Path(sys.executable).with_name("warpspeed")
SMALL = ["--set", "radius=1", "--set", "shape=64,64,32"]

NO_FOLD = '''
import warpspeed as ws

def kernel(n: int = 64) -> ws.Kernel:
    a = ws.Field("a", shape=(n,))
    b = ws.Field("b", shape=(n,))
    return ws.Kernel(loads=[a[ws.tidx]], stores=[b[ws.tidx]], domain=(n,), name="copy1d")
'''


def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "warpspeed.cli"]
    res = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).parents[2])
    if ok:
        assert res.returncode == 0, res.stderr
    return res


def one_line_error(res: subprocess.CompletedProcess, text: str) -> None:
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and text in lines[0], res.stderr


@slow
def test_machines_lists_every_builtin_gpu_as_json():
    rows = json.loads(run("machines", "--json").stdout)
    assert {r["name"] for r in rows} >= {"A100", "V100"}
    assert "A100" in run("machines").stdout


def test_predict_json_equals_the_library_with_fold_and_registers():
    res = run("predict", "star3d_by_hand", *SMALL, "--machine", "A100", "--block", "32,4,2",
              "--fold", "1,2,1", "--registers", "128", "--json")
    k = star3d_by_hand.kernel(radius=1, shape=(64, 64, 32), fold=(1, 2, 1))
    k = dataclasses.replace(k, registers=128)
    expected = ws.predict(k, "A100", (32, 4, 2)).to_dict()
    got = json.loads(res.stdout)
    assert got["fold"] == [1, 2, 1] and got["blocks_per_sm"] == expected["blocks_per_sm"] == 2
    assert got["glups"] == pytest.approx(expected["glups"])
    # the text form of predict: tests/reports/test_output_width.py


def test_rank_of_a_2d_stencil_leaves_the_z_fold_out_and_says_so():
    res = run("rank", "star2d", "--set", "shape=512,512", "--machine", "H200", "--threads",
              "256", "--top", "1")
    assert "fold 1,1,2 left out: fold (1, 1, 2) folds an axis that 2-dimensional" in res.stdout
    one_line_error(run("rank", "star2d", "--set", "shape=512,512", "--machine", "H200",
                       "--fold", "1,1,2", ok=False), "fold only the first 2")


SHIPPED = sorted(p.stem for p in (Path(__file__).parents[2] / "stencils").glob("[!_]*.py"))


@slow
@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_stencil_ranks_with_its_default_folds(name):
    # 'rank star2d' once failed on the default z fold of a 2-D stencil
    res = run("rank", name, "--machine", "MI210", "--threads", "256", "--top", "1", "--json")
    rows = json.loads(res.stdout)
    assert len(rows) == 1 and rows[0]["glups"] > 0 and "Traceback" not in res.stderr


@slow
def test_rank_json_is_sorted_best_first_over_all_folds_and_thread_counts():
    res = run("rank", "star3d_by_hand", *SMALL, "--machine", "V100", "--threads", "256",
              "--threads", "512", "--jobs", "2", "--json")
    rows = json.loads(res.stdout)
    glups = [r["glups"] for r in rows]
    # best first; equal to six digits: the robust tie order (MODEL.md §8)
    assert is_best_first(glups)
    assert {tuple(r["fold"]) for r in rows} == {(1, 1, 1), (1, 2, 1), (1, 1, 2)}
    assert {r["block"][0] * r["block"][1] * r["block"][2] for r in rows} == {256, 512}
    assert res.stderr == ""  # no progress bar when stderr is not a terminal


@slow
def test_rank_top_k_csv_and_table_agree_with_the_json():
    args = ["rank", "star3d_by_hand", *SMALL, "--machine", "A100", "--fold", "1,1,1",
            "--top", "3", "--jobs", "1"]
    rows = json.loads(run(*args, "--json").stdout)
    table = list(csv.DictReader(io.StringIO(run(*args, "--csv").stdout)))
    assert len(rows) == len(table) == 3
    assert [r["block"] for r in table] == ["x".join(map(str, r["block"])) for r in rows]
    assert [float(r["glups"]) for r in table] == pytest.approx([r["glups"] for r in rows])
    assert {"limits.dram", "volumes.dram_load", "limiter"} <= set(table[0])
    out = run(*args).stdout
    assert "skipped by the bound" in out and rows[0]["limiter"] in out


@slow
def test_rank_registers_change_the_occupancy():
    args = ["rank", "star3d_by_hand", *SMALL, "--machine", "A100", "--fold", "1,1,1",
            "--threads", "256", "--jobs", "1", "--json"]
    default = json.loads(run(*args).stdout)
    heavy = json.loads(run(*args, "--registers", "128").stdout)
    assert {r["blocks_per_sm"] for r in default} == {8}
    assert {r["blocks_per_sm"] for r in heavy} == {2}
    assert {r["occupancy_limited_by"] for r in heavy} == {"registers"}


def test_explain_names_the_limiter_the_headroom_and_hints():
    out = run("explain", "star3d_by_hand", "--machine", "A100", "--block", "8,8,16").stdout
    assert "binding limiter: l1" in out and "headroom:" in out
    assert "[narrow_block_x]" in out and "[layer_condition_z]" in out


@slow
def test_explain_of_a_launch_bound_star_names_the_launch_and_the_headroom_from_it():
    from stencils.star3d import kernel as star_ps

    p = ws.predict(star_ps(radius=1, shape=(4, 4, 4)), "A100", (64, 4, 1))
    out = run("explain", "star3d", "--machine", "A100", "--set", "radius=1",
              "--set", "shape=4,4,4", "--block", "64,4,1").stdout
    assert "binding limiter: launch (latency model)" in out and "[launch_bound]" in out
    # headroom: the DRAM limit over 64 updates per 2.75 us of launch
    assert f"headroom: {p.limits['dram'] * 2750 / 64:.2f}x until dram binds" in out
    rows = {line.split()[1]: line.split() for line in out.splitlines()
            if line.startswith("│")}
    assert rows["launch"][5] == "binding" and rows["dram"][5] == (
        f"{p.limits['dram'] * 2750 / 64:.2f}x")
    js = json.loads(run("predict", "star3d", "--machine", "A100", "--set", "radius=1",
                        "--set", "shape=4,4,4", "--block", "64,4,1", "--json").stdout)
    assert js["limiter"] == "launch" and set(js["limits"]) == {"fp", "l1", "l2", "dram"}


def _notes(*args: str) -> list[str]:
    return json.loads(run("predict", *args, "--block", "64,2,1", "--json").stdout)["notes"]


@slow
def test_shipped_stencils_are_generated_for_the_machines_vendor_unless_told():
    vendor_note = "the kernel was generated for"
    # pystencils stencils: HIP on an AMD machine, CUDA on an NVIDIA one, no note either way
    for machine in ("MI210", "A100"):
        assert not any(vendor_note in n for n in _notes("star3d", *SMALL, "--machine", machine))
    hip = json.loads(run("predict", "star3d", *SMALL, "--machine", "MI210", "--block", "64,2,1",
                         "--json").stdout)
    cuda = json.loads(run("predict", "star3d", *SMALL, "--machine", "MI210", "--block",
                          "64,2,1", "--target", "cuda", "--json").stdout)
    assert any("generated for CUDA, but MI210 is an AMD GPU" in n for n in cuda["notes"])
    assert cuda["glups"] == hip["glups"]  # the same accesses either way
    # a hand-written kernel has no target unless one is given
    assert not any(vendor_note in n for n in _notes("star3d_by_hand", *SMALL,
                                                    "--machine", "MI210"))
    assert any("generated for HIP, but A100" in n for n in _notes(
        "star3d_by_hand", *SMALL, "--machine", "A100", "--target", "hip"))
    out = run("rank", "star3d", *SMALL, "--machine", "MI210", "--fold", "1,1,1",
              "--threads", "256", "--top", "2", "--jobs", "1").stdout
    assert "Target.HIP" not in out and "generated for" not in out
    one_line_error(run("predict", "star3d", "--machine", "A100", "--block", "64,2,1",
                       "--set", "target=hip", ok=False), "--target cuda|hip")


@slow
def test_explain_prints_the_notes_that_predict_prints():
    args = ("star3d", *SMALL, "--machine", "MI210", "--block", "64,2,1", "--model", "paper")
    notes = json.loads(run("predict", *args, "--json").stdout)["notes"]
    # an AMD prediction with the paper model: the L1 line count and the NVIDIA curves
    assert len(notes) == 2
    explain = " ".join(run("explain", *args).stdout.split())  # tables wrap long lines
    assert all(" ".join(f"note: {n}".split()) in explain for n in notes)


@slow
def test_amd_output_says_cu_and_wavefront(monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # no wrapped lines
    words = re.compile(r"\b(SMs?|warps?|half warps?)\b")
    amd = run("predict", "star3d", *SMALL, "--machine", "MI210", "--block", "64,2,1").stdout
    assert "blk/CU" in amd and "cyc/wave-Lup" in amd and not words.search(amd.split("note:")[0])
    nvidia = run("predict", "star3d", *SMALL, "--machine", "A100", "--block", "64,2,1").stdout
    assert "blk/SM" in nvidia and "cyc/warp-Lup" in nvidia
    ranked = run("rank", "star3d", *SMALL, "--machine", "MI210", "--fold", "1,1,1",
                 "--threads", "64", "--top", "2", "--jobs", "1").stdout
    assert "blk/CU" in ranked and "blk/SM" not in ranked
    explain = run("explain", "star3d", *SMALL, "--machine", "MI210", "--block", "8,8,1",
                  "--registers", "128").stdout
    said = [line for line in explain.splitlines() if not line.startswith("note:")]
    assert "per CU" in explain and "cycles per wavefront" in explain
    assert not any(words.search(line) for line in said), explain
    machines = run("machines").stdout
    rows = {line.split()[1]: line for line in machines.splitlines() if line.startswith("│")}
    assert "104 CUs" in rows["MI210"] and "108 SMs" in rows["A100"]


@slow
def test_stencil_without_fold_parameter_runs_unfolded_and_rejects_a_fold(tmp_path):
    path = tmp_path / "copy1d.py"
    path.write_text(NO_FOLD)
    rows = json.loads(run("rank", str(path), "--machine", "A100", "--threads", "64",
                          "--jobs", "1", "--json").stdout)
    assert [r["block"] for r in rows] == [[64, 1, 1]]
    one_line_error(run("rank", str(path), "--machine", "A100", "--fold", "1,2,1", ok=False),
                   "no fold parameter")
    one_line_error(run("predict", str(path), "--machine", "A100", "--block", "64,1,1",
                       "--fold", "2,1,1", ok=False), "no fold parameter")


@pytest.mark.parametrize("args, text", fast_first([
    (["predict", "star3d_by_hand", "--machine", "A100", "--block", "32,4"], "three integers"),
    (["predict", "nosuchstencil", "--machine", "A100", "--block", "32,4,1"], "unknown stencil"),
    (["predict", "star3d_by_hand", "--machine", "Z80", "--block", "32,4,1"], "unknown machine"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--json", "--csv"], "not allowed with"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--jobs", "0"], "positive integer"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--threads", "1000"], "power of two"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--threads", "0"],
     "expected a positive number of threads per block (e.g. --threads 256), got '0'"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--threads", "256", "2048"],
     "--threads 256 2048: 2048 threads per block, but A100 allows at most 1024"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--registers", "300"], "registers"),
    (["explain", "star3d_by_hand", "--machine", "A100", "--block", "64,64,1"], "1024"),
    (["rank", "star3d_by_hand", "--machine", "A100", "--set", "fold=1,2,1"], "--fold"),
], unpack=True))
def test_bad_arguments_end_in_one_line_and_exit_code_2(args, text):
    one_line_error(run(*args, ok=False), text)


@slow
def test_validate_without_the_reference_data_says_where_they_come_from(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPSPEED_SHARED", str(tmp_path / "nowhere"))
    r = subprocess.run([str(SCRIPT), "validate", "--v100"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "micro-benchmark tables are not shipped" in lines[0] and "shared/ folder" in lines[0]
    assert "WARPSPEED_SHARED" in lines[0]


RANK_SMALL = ["rank", "star3d_by_hand", *SMALL, "--machine", "A100", "--threads", "256",
              "--fold", "1,1,1", "--jobs", "1"]


@pytest.mark.parametrize("args", fast_first([
    [*RANK_SMALL, "--csv"],
    [*RANK_SMALL, "--json"],
    RANK_SMALL,
    ["predict", "star3d_by_hand", *SMALL, "--machine", "A100", "--block", "32,4,2"],
    ["predict", "star3d_by_hand", *SMALL, "--machine", "A100", "--block", "32,4,2", "--json"],
    ["explain", "star3d_by_hand", *SMALL, "--machine", "A100", "--block", "32,4,2"],
    ["machines"],
    ["models", "--json"],
]))
def test_output_into_a_closed_pipe_ends_quietly(args):
    """The reader of the output is gone before anything is written (as
    ``| head -0``): every write fails, and the command stops without a word."""
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "warpspeed.cli"]
    proc = subprocess.Popen(cmd + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=Path(__file__).parents[2])
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1
    assert err == ""


@slow
def test_rank_csv_into_head_ends_quietly():
    """The command of the issue: 600 rows, far more than a pipe holds, so
    ``head`` closes it while the command still writes."""
    cmd = f"'{SCRIPT}' rank star3d --machine A100 --csv | head -3"
    res = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True,
                         timeout=300, cwd=Path(__file__).parents[2])
    assert res.stderr == ""
    assert len(res.stdout.splitlines()) == 3 and res.stdout.startswith("machine,kernel,block")
    assert res.returncode == 1


def test_a_stencil_whose_kernel_raises_and_an_unwritable_out_end_in_one_line(tmp_path):
    """A user's kernel() may fail in any way, and --out may name a folder that
    does not exist: one line and exit code 2, never a traceback."""
    path = tmp_path / "broken.py"
    path.write_text("def kernel():\n    raise RuntimeError('fixed-shape fields of different "
                    "sizes')\n")
    one_line_error(run("predict", str(path), "--machine", "A100", "--block", "64,1,1",
                       ok=False), "kernel({}) failed: RuntimeError: fixed-shape fields")
    one_line_error(run("machines", "new", "X", "--like", "A100", "--sms", "108", "--clock-ghz",
                       "1.4", "--dram-gbs", "1555", "--l2-mib", "40", "--out",
                       str(tmp_path / "no" / "such" / "x.toml"), ok=False),
                   "give --out a file in an existing, writable folder")


# -------------------------------------------- issue 46: one-line errors, a version

def test_version_prints_the_package_version():
    res = run("--version")
    assert res.stdout.strip() == f"warpspeed {ws.__version__}"


@pytest.mark.parametrize("block", fast_first(["-256,1,1", "256,-1,1"]))
def test_a_negative_block_is_refused_by_its_own_check(block):
    """argparse read "-256,1,1" as an option ("expected one argument")."""
    res = run("predict", "star3d_by_hand", *SMALL, "--machine", "A100", "--block", block,
              ok=False)
    one_line_error(res, f"--block must be positive integers, got '{block}'")


def test_a_stencil_file_that_exits_is_an_error_not_a_silent_success(tmp_path):
    at_import = tmp_path / "exits.py"
    at_import.write_text("import sys\nsys.exit(0)\n")
    res = run("predict", str(at_import), "--machine", "A100", "--block", "64,1,1", ok=False)
    one_line_error(res, "called sys.exit(0) while it was imported")
    in_kernel = tmp_path / "exits_later.py"
    in_kernel.write_text("import sys\n\ndef kernel():\n    sys.exit(0)\n")
    res = run("predict", str(in_kernel), "--machine", "A100", "--block", "64,1,1", ok=False)
    one_line_error(res, "kernel({}) called sys.exit(0)")


@slow
def test_a_star_too_large_to_generate_is_one_clear_line():
    """radius=100: pystencils recursed too deeply (a RecursionError)."""
    res = run("predict", "star3d", "--set", "radius=100", "--set", "shape=256,256,256",
              "--machine", "A100", "--block", "256,1,1", ok=False)
    one_line_error(res, "star3d_r100: pystencils cannot generate an expression this large")
    assert "RecursionError" not in res.stderr
