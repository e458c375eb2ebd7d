"""Registers per thread of pystencils kernels (warpspeed.pystencils.registers):
nvcc's count when installed, else an estimate from the code; the hook, the
CLI, ws.rank and ws.predict rank only blocks that launch with them and name
the count's source. The estimate is checked against the compiler's counts
of the project's H200 measurements."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
from pathlib import Path

import pystencils as ps
import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from stencils import allen_cahn_d3q15, box3d, lbm_d3q19, star3d
from tests.cli.test_cli import run
from tests.slow import fast_first, slow
from warpspeed.input import compiler
from warpspeed.input.compiler import RegisterCount
from warpspeed.pystencils import registers as regs

NVCC = shutil.which("nvcc") is not None
CFG = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
#: the count nvcc 13.0 reports for lbmpy's float64 D3Q19 SRT pull kernel on sm_80
D3Q19_NVCC_SM80 = 68


def _d3q19(n: int = 34):
    pdfs, tmp = ps.fields(f"pdfs(19), pdfs_tmp(19): double[{n}, {n}, {n}]", layout="fzyx")
    return lbm_d3q19.update_rule(pdfs, tmp)


def _launches(p: ws.Prediction, m: ws.Machine) -> bool:
    """Independent launch check: registers per warp rounded to the allocation
    unit, times the block's warps, within the registers an SM (and a block) has."""
    threads = math.prod(p.block)
    per_warp = math.ceil(p.registers * m.warp_size / m.register_alloc_unit) * m.register_alloc_unit
    return (threads <= m.max_threads_per_block
            and per_warp * math.ceil(threads / m.warp_size) <= m.registers_per_sm)


def test_estimate_of_a_two_point_stencil_is_its_documented_hand_count():
    src, dst = ps.fields("src, dst: double[34, 34, 34]", layout="fzyx")
    kf = ps.create_kernel([ps.Assignment(dst.center, src[1, 0, 0] + src[-1, 0, 0])], CFG)
    # 8 overhead + 3 int64 counters held from their declarations to the store (2 words
    # each) + the store's need: a load's pointer and int64 index (4 words) while the
    # other load's double (2) is kept
    assert regs.estimate_registers(kf) == 8 + 3 * 2 + (2 + 2 + 2)


def test_estimate_holds_what_several_statements_share_and_not_what_one_uses():
    """Seven loads summed into one store need a few words at a time; the
    same loads shared by two stores are held between them."""
    src, dst = ps.fields("src, dst: double[34, 34, 34]", layout="fzyx")
    seven = sum(src[d] for d in [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0),
                                 (0, 0, 1), (0, 0, -1)])
    one = regs.estimate_registers(ps.create_kernel([ps.Assignment(dst.center, seven)], CFG))
    assert one == regs.estimate_registers(ps.create_kernel(
        [ps.Assignment(dst.center, src[1, 0, 0] + src[-1, 0, 0])], CFG))
    a, b = ps.fields("a, b: double[34, 34, 34]", layout="fzyx")
    t = [ps.TypedSymbol(f"t{i}", "double") for i in range(4)]
    shared = ps.AssignmentCollection(
        [ps.Assignment(b.center, t[0] + t[1] + t[2] + t[3])],
        subexpressions=[ps.Assignment(t[i], a[i, 0, 0]) for i in range(4)])
    held = regs.estimate_registers(ps.create_kernel(shared, CFG))
    assert held >= one + 2 * 3  # three of the four temporaries held while the fourth loads


@pytest.mark.nvcc
@pytest.mark.skipif(not NVCC, reason="nvcc not installed")
@pytest.mark.parametrize("make", fast_first([
    lambda: lbm_d3q19.generate(shape=(256, 256, 256)),
    lambda: star3d.generate(radius=4, shape=(64, 64, 64)),
    lambda: box3d.generate(shape=(64, 64, 64)),
    lambda: _from_corpus("shan_chen_force_d2q9_f64"),
    lambda: _from_corpus("lbm_d3q27_cumulant_pull_f64"),
]), ids=["d3q19", "star3d_r4", "box3d", "shan_chen_exp", "d3q27_cumulant"])
def test_estimate_launches_the_blocks_nvccs_count_launches(make):
    """On an A100 (sm_80): every thread count launches with the estimate
    exactly when it launches with nvcc's count."""
    _, kf = make()
    count = regs.nvcc_registers(kf, "sm_80")
    assert count.registers is not None, count.reason
    m = ws.load_machine("A100")
    est = regs.estimate_registers(kf)
    assert [_fits(est, t, m) for t in (64, 128, 256, 512, 1024)] == [
        _fits(count.registers, t, m) for t in (64, 128, 256, 512, 1024)], (est, count.registers)


@pytest.mark.nvcc
@pytest.mark.skipif(not NVCC, reason="nvcc not installed")
@pytest.mark.parametrize("make", fast_first([
    lambda: star3d.generate(radius=1, shape=(64, 64, 64), fold=(1, 4, 1)),
    lambda: lbm_d3q19.generate(shape=(64, 64, 64), fold=(1, 1, 2)),
    lambda: box3d.generate(shape=(64, 64, 64), fold=(1, 1, 4)),
    lambda: allen_cahn_d3q15.generate(shape=(64, 64, 64), fold=(1, 2, 1)),
]), ids=["star3d_fold_y4", "d3q19_fold_z2", "box3d_fold_z4", "allen_cahn_fold_y2"])
def test_on_folded_kernels_the_estimate_offers_no_block_nvcc_refuses(make):
    """nvcc runs the cells of a folded D3Q19 one after the other (80 on
    sm_80) but interleaves those of a folded Allen-Cahn kernel (168): the
    estimate, in program order, refuses some launchable blocks of the first
    and offers none that fails of either."""
    kernel, kf = make()
    count = regs.nvcc_registers(kf, "sm_80")
    assert count.registers is not None, count.reason
    m = ws.load_machine("A100")
    est = regs.estimate_registers(kf, kernel.lups_per_thread)
    for threads in (64, 128, 256, 512, 1024):
        assert _fits(count.registers, threads, m) or not _fits(est, threads, m), (
            threads, est, count.registers)


@pytest.mark.nvcc
@pytest.mark.skipif(not NVCC, reason="nvcc not installed")
def test_at_the_launch_limit_the_estimate_refuses_rather_than_offers():
    """The double D3Q19 on 32^3 points compiles to 64 registers on sm_80,
    just within a block of 1024 threads (70 on the H200's sm_90 at 256^3,
    just beyond): the estimate, which knows neither the size's effect nor
    the architecture's, keeps it beyond and refuses those blocks rather
    than offer a block that may fail."""
    _, kf = lbm_d3q19.generate(shape=(32, 32, 32))
    m = ws.load_machine("A100")
    assert regs.nvcc_registers(kf, "sm_80").registers == 64
    est = regs.estimate_registers(kf)
    assert not _fits(est, 1024, m) and _fits(est, 512, m)


def _fits(registers: int, threads: int, m: ws.Machine) -> bool:
    """Whether a block of ``threads`` launches with ``registers`` per thread
    (registers per warp rounded to the allocation unit; independent of the model)."""
    per_warp = math.ceil(registers * m.warp_size / m.register_alloc_unit) * m.register_alloc_unit
    return per_warp * math.ceil(threads / m.warp_size) <= m.registers_per_sm


def _from_corpus(name: str):
    from tests.corpus import BY_NAME

    built = BY_NAME[name].build()
    return wps.extract(built.kernel).kernel, built.kernel


def test_a_given_count_is_the_users_and_estimate_replaces_a_missing_nvcc():
    _, kf = star3d.generate(radius=1, shape=(32, 32, 32))
    assert regs.kernel_registers(kf, "sm_80", 40) == regs.Registers(40, "user")
    est = regs.estimate_registers(kf)
    forced = regs.kernel_registers(kf, "sm_80", "estimate")
    assert (forced.count, forced.source) == (est, "estimate")

    def missing(kf, arch):
        return RegisterCount(None, "nvcc is not installed")

    r = regs.kernel_registers(kf, "sm_80", None, counter=missing)
    assert (r.count, r.source, r.note) == (est, "estimate", "nvcc is not installed")
    assert regs.kernel_registers(kf, "sm_80", None,
                                 counter=lambda kf, a: RegisterCount(50, "")).source == "nvcc sm_80"
    with pytest.raises(ws.KernelError, match="'nvcc' or 'estimate'"):
        regs.kernel_registers(kf, "sm_80", "many")
    with pytest.raises(ws.KernelError, match="1..255"):
        regs.kernel_registers(kf, "sm_80", 300)


def test_nvcc_runs_once_per_kernel_source_and_architecture(monkeypatch, tmp_path):
    monkeypatch.setenv("WARPSPEED_CACHE_DIR", str(tmp_path))
    calls = []

    def fake(source, arch, includes=(), timeout=120.0):
        calls.append(arch)
        return RegisterCount(42, f"nvcc -arch={arch}")

    monkeypatch.setattr(compiler, "register_count", fake)
    monkeypatch.setattr(compiler, "_CACHE", {})
    _, kf = star3d.generate(radius=2, shape=(32, 32, 32))
    for arch in ("sm_80", "sm_80", "sm_90", "sm_80"):
        assert regs.nvcc_registers(kf, arch).registers == 42
    assert calls == ["sm_80", "sm_90"]


@pytest.mark.nvcc
def test_register_counts_persist_on_disk_per_nvcc_installation(monkeypatch, tmp_path):
    # a fake nvcc binary: the disk key follows its path and modification time
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    nvcc.write_text("")
    monkeypatch.setattr(compiler.shutil, "which", lambda name: str(nvcc))
    monkeypatch.setenv("WARPSPEED_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def fake(source, arch, includes=(), timeout=120.0):
        calls.append(arch)
        return RegisterCount(40 + len(calls), f"nvcc -arch={arch}")

    monkeypatch.setattr(compiler, "register_count", fake)
    _, kf = star3d.generate(radius=1, shape=(16, 16, 16))
    for _ in range(2):  # a new process: the memory cache is empty, the disk one is not
        monkeypatch.setattr(compiler, "_CACHE", {})
        assert regs.nvcc_registers(kf, "sm_80").registers == 41
    assert calls == ["sm_80"]
    assert len(list((tmp_path / "cache" / "registers").glob("*.json"))) == 1
    os.utime(nvcc, ns=(0, 10**18))  # another nvcc installation: counted again
    monkeypatch.setattr(compiler, "_CACHE", {})
    assert regs.nvcc_registers(kf, "sm_80").registers == 42
    assert calls == ["sm_80", "sm_80"]


def test_amd_architectures_get_the_estimate_without_running_nvcc(monkeypatch):
    monkeypatch.setattr(compiler, "register_count", lambda *a, **k: pytest.fail("nvcc was run"))
    _, kf = star3d.generate(radius=1, shape=(16, 16, 16))
    r = regs.kernel_registers(kf, "gfx90a")
    assert r.source == "estimate" and "gfx90a" in r.note
    # a HIP kernel on an NVIDIA machine: nvcc cannot compile its source either
    src, dst = ps.fields("src, dst: double[2D]", layout="fzyx")
    hip = ps.create_kernel([ps.Assignment(dst.center, src[1, 0] + src[-1, 0])],
                           ps.CreateKernelConfig(target=ps.Target.HIP))
    r = regs.kernel_registers(hip, "sm_80")
    assert r.source == "estimate" and "HIP" in r.note


@pytest.mark.nvcc
def test_hook_ranks_only_blocks_that_launch_with_the_kernels_registers():
    # the case: 256^3 interior cells and one ghost layer, nvcc says 68 on sm_80
    m = ws.load_machine("A100")
    ranked = wps.create_kernel(_d3q19(258), CFG, machine=m, folds=[(1, 1, 1)], jobs=1)
    best = ranked.ranking[0]
    source = f"nvcc {m.arch}" if NVCC else "estimate: nvcc is not installed"
    assert {p.registers_source for p in ranked.ranking} == {source}
    if NVCC:
        assert best.registers == regs.nvcc_registers(ranked.kernel, m.arch).registers
    assert best.registers >= D3Q19_NVCC_SM80
    assert all(_launches(p, m) for p in ranked.ranking)
    # 68 or more registers: 1024 threads cannot launch; smaller blocks are ranked
    counts = {math.prod(p.block) for p in ranked.ranking}
    assert 1024 not in counts and {64, 128, 256} <= counts
    assert tuple(ranked.kernel.get_launch_configuration().evaluate()[0]) == best.block
    d = best.to_dict()
    assert (d["registers"], d["registers_source"]) == (best.registers, source)


def test_hook_estimate_is_named_in_the_notes():
    ranked = wps.create_kernel(_d3q19(), CFG, machine="A100", folds=[(1, 1, 1)], jobs=1,
                               threads=[256], options=wps.ExtractOptions(registers="estimate"))
    assert {p.registers_source for p in ranked.ranking} == {
        "estimate: registers='estimate' given"}
    assert any("an estimate" in n for n in ranked.notes)


@pytest.mark.nvcc
@slow
def test_cli_rank_of_the_d3q19_with_default_threads_names_the_registers():
    res = run("rank", "lbm_d3q19", "--machine", "A100", "--set", "shape=32,32,32",
              "--fold", "1,1,1", "--top", "3", "--jobs", "1")
    line = [x for x in res.stdout.splitlines() if x.startswith("registers per thread")]
    assert line and ("nvcc sm_80" if NVCC else "estimate: nvcc is not installed") in line[0]
    rows = json.loads(run("predict", "lbm_d3q19", "--machine", "A100", "--block", "128,1,1",
                          "--json").stdout)
    assert rows["registers"] >= D3Q19_NVCC_SM80
    assert rows["registers_source"] == ("nvcc sm_80" if NVCC else
                                        "estimate: nvcc is not installed")
    explain = run("explain", "lbm_d3q19", "--machine", "A100", "--set", "shape=32,32,32",
                  "--block", "128,1,1", "--registers", "40").stdout
    assert "registers per thread: 40 (user)" in explain


@pytest.mark.nvcc
@slow
def test_the_cli_says_why_the_register_count_is_an_estimate(monkeypatch):
    est = regs.estimate_registers(star3d.generate(radius=1, shape=(64, 64, 32))[1])
    args = ("predict", "star3d", "--set", "radius=1", "--set", "shape=64,64,32",
            "--block", "64,2,1")
    amd = run(*args, "--machine", "MI210").stdout
    assert f"registers per thread: {est} (estimate: no nvcc for AMD (gfx90a))" in amd
    hip = json.loads(run(*args, "--machine", "A100", "--target", "hip", "--json").stdout)
    assert hip["registers_source"] == "estimate: the kernel was generated for HIP, nvcc " \
        "compiles CUDA"
    # no nvcc on the PATH
    path = [d for d in os.environ["PATH"].split(os.pathsep)
            if not os.path.exists(os.path.join(d, "nvcc"))]
    monkeypatch.setenv("PATH", os.pathsep.join(path))
    none = run(*args, "--machine", "A100").stdout
    assert f"registers per thread: {est} (estimate: nvcc is not installed)" in none
    monkeypatch.setenv("WARPSPEED_NVCC", "none")
    unused = run(*args, "--machine", "A100").stdout
    assert f"registers per thread: {est} (estimate: WARPSPEED_NVCC=none: nvcc not used)" in unused


def test_predict_says_when_the_register_estimate_stands_in_for_nvcc():
    """wps.predict carries the estimate's note as rank and create_kernel do
    (a HIP kernel: nvcc cannot count it)."""
    import pystencils as ps

    import warpspeed.pystencils as wps

    a, b = ps.fields("a, b: double[66, 66, 66]")
    cfg = ps.CreateKernelConfig(target=ps.Target.HIP, jit=ps.no_jit)
    p = wps.predict([ps.Assignment(b.center, a[1, 0, 0] + a[-1, 0, 0])], "MI210", (64, 2, 2),
                    config=cfg)
    assert p.registers_source.startswith("estimate")
    assert any(n.startswith(f"registers per thread: {p.registers}, an estimate")
               for n in p.notes)


# ------------------------------------------------- against the H200 measurements

#: The project's H200 measurements, with the compiler's count of each stencil
#: and fold (``registers``; fits/data/h200/README.md: the 1024-thread blocks
#: of the double D3Q19 failed to launch and have no row).
H200_CSV = Path(__file__).resolve().parents[2] / "fits" / "data" / "h200" / "measurements.csv"
#: The sets that ran every block of 256, 512 and 1024 threads the design space lists.
DESIGN_SETS = ("set star_r1_512", "set star_r4", "set lbm_d3q19_f64")


def _h200_runs() -> dict[tuple[str, str, tuple[int, int, int]], tuple[set, int | None, str]]:
    """(stencil, params, fold) -> (blocks that ran, the compiler's count, set)."""
    from warpspeed.measure.schema import read_csv

    runs: dict = {}
    for row in read_csv(H200_CSV):
        blocks, count, note = runs.get((row.stencil, row.params, row.fold), (set(), None, ""))
        blocks.add(row.block)
        runs[(row.stencil, row.params, row.fold)] = (
            blocks, row.registers if row.registers is not None else count,
            row.note.split(";")[0])
    return runs


@pytest.mark.skipif(not H200_CSV.is_file(), reason="fits/data/h200/measurements.csv absent")
@pytest.mark.parametrize("stencil", fast_first(["lbm_d3q19", "star3d", "copy3d"]))
def test_the_estimate_launches_what_ran_on_the_h200_and_refuses_what_failed(stencil):
    """Without nvcc the estimate decides which blocks launch: every block
    that ran on the H200 launches with it, and of the design space's blocks
    it refuses exactly those that did not run (the double D3Q19's 50 blocks
    of 1024 threads); where the file has the compiler's count, the estimate
    launches the same blocks as that count."""
    from warpspeed.measure.program import design_blocks, generate_variant
    from warpspeed.measure.schema import params_from_json
    from warpspeed.volumes.launch import make_launch

    m = ws.load_machine("H200")
    checked = 0
    for (name, params, fold), (ran, count, kind) in _h200_runs().items():
        if name != stencil:
            continue
        kernel, kf = generate_variant(name, params_from_json(params), fold)
        est = regs.estimate_registers(kf, kernel.lups_per_thread)
        design = set(design_blocks([256, 512, 1024], kernel))

        def launches(registers: int, block, kernel=kernel) -> bool:
            try:
                make_launch(dataclasses.replace(kernel, registers=registers), m, block)
            except ws.LaunchError:
                return False
            return True

        refused = {b for b in design | ran if not launches(est, b)}
        assert not refused & ran, (name, params, fold, est, sorted(refused & ran)[:3])
        if kind in DESIGN_SETS:
            assert refused == design - ran, (name, params, fold, est)
        if count is not None:
            assert all(launches(est, b) == launches(count, b) for b in design), (est, count)
        checked += 1
    assert checked


@pytest.mark.nvcc
def test_ws_rank_and_predict_count_a_shipped_stencils_registers_for_their_machine():
    """A shipped stencil is made without a machine: it carries the estimate,
    never the placeholder 32, and ws.rank / ws.predict count for theirs:
    nvcc's count where installed (68 for the double D3Q19 on sm_80: no block
    of 1024 threads), the estimate on AMD, each named."""
    kernel, kf = lbm_d3q19.generate()
    assert (kernel.registers, kernel.registers_source.split(":")[0]) == (
        regs.estimate_registers(kf), "estimate")
    ranking = ws.rank(kernel, "A100", threads=[256, 1024], folds=[(1, 1, 1)], jobs=1)
    source = "nvcc sm_80" if NVCC else "estimate: nvcc is not installed"
    assert {(p.registers_source, p.registers) for p in ranking.predictions} == {
        (source, regs.kernel_registers(kf, "sm_80").count)}
    assert {math.prod(p.block) for p in ranking.predictions} == {256}
    assert any("launch" in e.reason or "registers" in e.reason for e in ranking.excluded)
    amd = ws.predict(kernel, "MI210", (256, 1, 1))
    assert (amd.registers, amd.registers_source) == (
        regs.estimate_registers(kf), "estimate: no nvcc for AMD (gfx90a)")


def test_a_count_set_on_a_counted_kernel_is_the_callers_and_stays():
    """ws.predict counts a pystencils kernel's registers for its machine only
    while the kernel has the count it was made with: one the caller set
    since (dataclasses.replace, the CLI's --registers) is kept."""
    kernel, _ = star3d.generate(radius=1, shape=(64, 64, 32))
    mine = dataclasses.replace(kernel, registers=200, registers_source="user")
    p = ws.predict(mine, "A100", (256, 1, 1))
    assert (p.registers, p.registers_source) == (200, "user")
    edited = dataclasses.replace(kernel, registers=48)
    assert ws.predict(edited, "A100", (256, 1, 1)).registers == 48
