"""``warpspeed machines new``: a GPU from its data sheet, like a known one
(MODEL.md §12). Checked against the known file itself (its own figures give
it back), hand-scaled plateaus, and every refusal the command promises."""

from __future__ import annotations

import tomllib

import pytest

import warpspeed as ws
from stencils import convolution2d, star3d
from tests.slow import slow
from warpspeed.cli import main
from warpspeed.machine_format import flatten
from warpspeed.timing import parameter
from warpspeed.validation.datasheet import DataSheet, describe


def _new(tmp_path, *flags, name="MYGPU"):
    out = tmp_path / f"{name}.toml"
    code = main(["machines", "new", name, *flags, "--out", str(out)])
    return code, out


def test_the_known_gpus_own_figures_give_its_numbers_back(tmp_path):
    a40 = ws.load_machine("A40")
    code, out = _new(tmp_path, "--like", "A40", "--sms", "84", "--clock-ghz", "1.74",
                     "--dram-gbs", "696", "--l2-mib", "6")
    assert code == 0
    m = ws.load_machine(out)
    for key in ("sms", "clock_ghz", "l1_bytes", "l2_bytes", "dram_bandwidth", "dram_bw_read",
                "dram_bw_copy", "dram_bw_write", "l2_bandwidth", "dram_latency_ns",
                "turnover_ns", "memory_shape", "max_threads_per_sm", "registers_per_sm",
                "fp32_fma_per_sm_cycle", "overlap_exponent", "launch_overhead_us",
                "dram_scattered_fraction", "ecc"):
        assert parameter(m, key) == pytest.approx(parameter(a40, key), rel=1e-3), key
    assert m.memory == a40.memory == "GDDR6"
    assert (m.validated, m.grounding, m.vendor, m.architecture) == (
        False, "datasheet", "NVIDIA", "Ampere")


def test_plateaus_scale_with_the_dram_peak_and_l2_bandwidth_with_sms_times_clock(tmp_path):
    a40 = ws.load_machine("A40")
    code, out = _new(tmp_path, "--like", "A40", "--sms", "42", "--clock-ghz", "0.87",
                     "--dram-gbs", "348", "--l2-mib", "3", "--ecc", "off")
    assert code == 0
    m = ws.load_machine(out)
    # half the peak: half every plateau (rounded to 0.1 GB/s); a quarter of SMs x clock
    assert parameter(m, "dram_bw_copy") == pytest.approx(parameter(a40, "dram_bw_copy") / 2,
                                                         abs=0.06)
    assert m.dram_bandwidth == pytest.approx(a40.dram_bandwidth / 2, abs=0.06)
    assert m.l2_bandwidth == pytest.approx(a40.l2_bandwidth / 4, abs=0.06)
    assert m.l2_bytes == 3 * 2**20 and m.ecc is False and m.dram_peak == 348
    # the latencies are carried over unchanged
    assert parameter(m, "dram_latency_ns") == parameter(a40, "dram_latency_ns")


def test_a_split_l2_is_divided_by_the_known_gpus_partitions(tmp_path):
    code, out = _new(tmp_path, "--like", "A100", "--sms", "108", "--clock-ghz", "1.41",
                     "--dram-gbs", "1555", "--l2-mib", "40")
    assert code == 0 and ws.load_machine(out).l2_bytes == 20 * 2**20


def test_every_number_says_where_it_comes_from(tmp_path):
    code, out = _new(tmp_path, "--like", "RX7900XTX", "--sms", "70", "--clock-ghz", "2.5",
                     "--dram-gbs", "576", "--l2-mib", "6", "--llc-mib", "64",
                     "--cite", "vendor page")
    assert code == 0
    data = flatten(tomllib.loads(out.read_text()))
    rules = ("vendor page", "carried over from RX7900XTX", "the ratio of")
    for key, entry in data.items():
        if isinstance(entry, dict):
            assert any(r in entry["source"] for r in rules), (key, entry["source"])
    assert data["mall_bytes"]["value"] == 64 * 2**20
    assert out.read_text().startswith("# Written by `warpspeed machines new`")


def test_the_written_file_predicts_and_ranks(tmp_path):
    code, out = _new(tmp_path, "--like", "MI100", "--sms", "60", "--clock-ghz", "1.725",
                     "--dram-gbs", "1024", "--l2-mib", "4")
    assert code == 0
    k = star3d.kernel(radius=1, shape=(64, 64, 64))
    p = ws.predict(k, str(out), block=(64, 2, 1))
    assert p.glups > 0
    r = ws.rank(k, str(out), threads=[128], folds=[(1, 1, 1)], jobs=1)
    assert r.predictions and r.predictions[0].glups > 0


@pytest.mark.parametrize("flags, words", [
    (["--like", "A40", "--sms", "0", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4"],
     "--sms must lie in"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "-1", "--dram-gbs", "500", "--l2-mib", "4"],
     "--clock-ghz must lie in"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "nan", "--l2-mib", "4"],
     "--dram-gbs must be a number"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--llc-mib", "64"], "has no last-level cache"),
    (["--like", "RX7900XTX", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500",
      "--l2-mib", "4"], "give MYGPU's with --llc-mib"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--memory", "HBM3"], "choose a known GPU with HBM memory"),
    (["--like", "MI100", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--architecture", "RDNA3"], "MYGPU is RDNA3 but MI100 is CDNA"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--l1-kib", "16"], "implies another architecture"),
    (["--like", "MI100", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--arch", "sm_80"], "--arch 'sm_80' is no AMD compiler target"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--arch", "gfx90a"], "--arch 'gfx90a' is no NVIDIA compiler target"),
    (["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500", "--l2-mib", "4",
      "--register-kib", "0"], "--register-kib must lie in"),
    (["--like", "NOSUCHGPU", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500",
      "--l2-mib", "4"], "unknown machine"),
])
def test_bad_figures_get_a_one_line_error(tmp_path, capsys, flags, words):
    code, out = _new(tmp_path, *flags)
    err = capsys.readouterr().err
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_missing_figure_is_named(tmp_path, capsys):
    code, _ = _new(tmp_path, "--like", "A40", "--sms", "40", "--clock-ghz", "1", "--l2-mib", "4")
    assert code == 2 and "--dram-gbs" in capsys.readouterr().err


def test_an_existing_file_needs_force(tmp_path, capsys):
    flags = ["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500",
             "--l2-mib", "4"]
    assert _new(tmp_path, *flags)[0] == 0
    code, out = _new(tmp_path, *flags)
    assert code == 2 and "--force" in capsys.readouterr().err
    assert _new(tmp_path, *flags, "--force")[0] == 0


def test_describe_is_a_function_of_the_figures():
    sheet = DataSheet("X", 72, 1.695, 600.0, 6.0, cite="sheet")
    assert describe("A40", sheet) == describe("A40", sheet)
    assert describe("A40", sheet)["sms"]["value"] == 72


@slow
def test_the_readme_example_runs_as_written(tmp_path, monkeypatch):
    """The README's "Your GPU is not listed" commands, run as written. Slow
    (over 4 s of CPU: it generates lbmpy's D3Q19 for HIP); a file of
    ``machines new`` predicted on stays fast in
    :func:`test_the_hook_takes_a_data_sheet_file_and_says_how_grounded_it_is`."""
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text[text.index("## Your GPU is not listed"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1).replace("\\\n", " ")
    monkeypatch.chdir(tmp_path)
    for line in block.strip().splitlines():
        words = shlex.split(line)
        assert words[0].endswith("warpspeed")
        assert main(words[1:]) == 0, line


def test_the_hook_takes_a_data_sheet_file_and_says_how_grounded_it_is(tmp_path):
    """``wps.create_kernel(machine="FILE.toml")`` ranks on a file written by
    ``machines new``; its best prediction names the grounding "data sheet"."""
    import pystencils as ps

    import warpspeed.pystencils as wps

    code, out = _new(tmp_path, "--like", "A40", "--sms", "48", "--clock-ghz", "1.56",
                     "--dram-gbs", "448", "--l2-mib", "4", "--ecc", "off")
    assert code == 0
    src, dst = ps.fields("src, dst: double[3D]", layout="fzyx")
    update = ps.Assignment(dst.center, (src[1, 0, 0] + src[-1, 0, 0]) / 2)
    cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
    _, ranking = wps.create_kernel([update], cfg, machine=str(out), threads=[128],
                                   folds=[(1, 1, 1)], jobs=1,
                                   options=wps.ExtractOptions(shape=(66, 34, 34),
                                                              registers="estimate"))
    best = ranking[0]
    assert best.machine == "MYGPU" and best.grounding == "datasheet"
    assert best.evidence.grounding == "data sheet"
    assert "grounding: data sheet" in best.evidence.phrase


def test_a_dram_bound_kernel_quotes_the_dram_band_not_the_cache_bound_one():
    """DRAM-bound and L2-bound predictions quote separate bands (MODEL.md §14):
    the lattice Boltzmann rows of data-sheet GPUs are not scored with the
    cache-bound convolution rows of the same GPUs."""
    from warpspeed.timing.evidence import _recorded, evidence

    if not _recorded():
        pytest.skip("warpspeed/ACCURACY.json has no recorded bands")
    dram = evidence("datasheet", "dram", "latency")
    l2 = evidence("datasheet", "l2", "latency")
    assert (dram.kernel_class, l2.kernel_class) == ("DRAM-bound", "L2-bound")
    bands = {(b["kernel_class"], b["model"], b["grounding"]): b for b in _recorded()}
    assert any(d.startswith("fluidx3d") for d in bands["DRAM-bound", "latency", "data sheet"]
               ["datasets"])
    assert "memory-bound" not in {k[0] for k in bands}
    assert dram.rows and dram.mape is not None and dram.mape < 0.25


def test_the_error_band_is_the_vendors_own():
    """A data-sheet machine's band comes from rows of its vendor's GPUs only
    (MODEL.md §14): the RTX A4000's convolution for NVIDIA, the W7800's for AMD."""
    from warpspeed.timing.evidence import _recorded, evidence

    if not _recorded():
        pytest.skip("warpspeed/ACCURACY.json has no recorded bands")
    nvidia = evidence("datasheet", "l1", "latency", "NVIDIA")
    amd = evidence("datasheet", "l1", "latency", "AMD")
    assert nvidia.gpus == ("RTXA4000",) and amd.gpus == ("W7800",)
    assert nvidia.mape is not None and amd.mape is not None and nvidia.mape < amd.mape
    assert "AMD machines" in amd.phrase
    p = ws.predict(convolution2d.kernel(), "MI250X-GCD", block=(64, 4, 1))
    assert p.vendor == "AMD" and p.evidence.vendor == "AMD"


def test_a_gcn5_card_like_a_cdna_one_gets_no_agprs_in_its_register_budget(tmp_path):
    """gfx906 has one VGPR file of 256 KiB per CU and no AGPRs: HIP's default
    bound of 1024 threads leaves 65536 / 1024 = 64 VGPRs (MODEL.md §15), where
    MI100's gfx908 may spill into AGPRs, 128."""
    from warpspeed.volumes.launch import register_budget

    code, out = _new(tmp_path, "--like", "MI100", "--sms", "60", "--clock-ghz", "1.725",
                     "--dram-gbs", "1024", "--l2-mib", "4", "--architecture", "GCN5",
                     "--arch", "gfx906")
    m = ws.load_machine(out)
    assert code == 0 and (m.arch, m.architecture) == ("gfx906", "GCN5")
    assert register_budget(m) == 64 and register_budget(ws.load_machine("MI100")) == 128
    for name in ("MI50", "RadeonVII"):
        shipped = ws.load_machine(name)
        assert (shipped.arch, register_budget(shipped)) == ("gfx906", 64)
    # and a GCN5 card may be described like a shipped GCN5 one
    code, out = _new(tmp_path, "--like", "MI50", "--sms", "64", "--clock-ghz", "1.8",
                     "--dram-gbs", "1024", "--l2-mib", "4", "--architecture", "GCN5",
                     name="MI60")
    assert code == 0 and ws.load_machine(out).arch == "gfx906"


def test_a_smaller_register_file_scales_the_allocation_granule(tmp_path):
    """Navi 33 (gfx1102) keeps RDNA2's 128 KiB VGPRs per SIMD: 256 KiB per CU,
    and LLVM's wave32 granule of 16 VGPRs (gfx1100: 24 of a 1.5x file)."""
    from warpspeed.volumes.launch import register_budget

    code, out = _new(tmp_path, "--like", "RX7900XTX", "--sms", "32", "--clock-ghz", "2.655",
                     "--dram-gbs", "288", "--l2-mib", "2", "--llc-mib", "32", "--arch",
                     "gfx1102", "--register-kib", "256")
    m = ws.load_machine(out)
    assert code == 0 and m.registers_per_sm == 65536 and m.register_alloc_unit == 16 * 32
    # WGP mode: two CUs' files over 1024 threads
    assert register_budget(m) == 128 and register_budget(ws.load_machine("RX7900XTX")) == 192
    assert ws.load_machine("RX7600").registers_per_sm == 65536


def test_the_memory_is_given_or_not_checked_never_carried_over(tmp_path):
    """A new GPU's memory is its own: without --memory-gib the file has none
    (and a kernel's size is not checked), with it the figure and its source."""
    flags = ["--like", "A40", "--sms", "40", "--clock-ghz", "1", "--dram-gbs", "500",
             "--l2-mib", "4"]
    code, out = _new(tmp_path, *flags)
    assert code == 0 and ws.load_machine("A40").memory_gib == 48
    assert ws.load_machine(out).memory_gib is None
    code, out = _new(tmp_path, *flags, "--memory-gib", "12", "--cite", "sheet", name="B")
    data = tomllib.loads(out.read_text())
    assert code == 0 and data["memory_gib"] == {"value": 12.0, "source": "sheet: 12 GB of memory"}


def test_the_infinity_cache_gpus_named_in_errors_and_the_readme_are_the_shipped_ones(
        tmp_path, capsys):
    """Issue 46: the list was typed by hand and went stale (W7800 and RX7600
    have an Infinity Cache too)."""
    import re
    from pathlib import Path

    from warpspeed.validation.datasheet import with_llc

    shipped = [n for n in ws.machines() if ws.load_machine(n).mall_bytes]
    assert with_llc() == shipped and {"W7800", "RX7600", "MI300X"} <= set(shipped)
    code, _ = _new(tmp_path, "--like", "A40", "--sms", "84", "--clock-ghz", "1.74",
                   "--dram-gbs", "696", "--l2-mib", "6", "--llc-mib", "32")
    assert code == 2 and f"needs a known one that has it ({', '.join(shipped)})" in (
        capsys.readouterr().err)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    listed = re.search(r"the Infinity Cache of ([^.]*?) as a level", " ".join(readme.split()))
    assert listed is not None
    assert re.split(r", | and ", listed.group(1)) == shipped


def test_fp_rates_name_the_new_gpus_count_not_the_known_ones(tmp_path):
    """Issue 46: an MI50 described like MI100 carried "120 CUs x 32 FMA" (the
    MI100's total) into its source, against its own 60."""
    code, out = _new(tmp_path, "--like", "MI100", "--sms", "60", "--clock-ghz", "1.725",
                     "--dram-gbs", "1024", "--l2-mib", "4", "--architecture", "GCN5",
                     "--arch", "gfx906")
    assert code == 0
    m = ws.load_machine(out)
    for key in ("fp64_fma_per_sm_cycle", "fp32_fma_per_sm_cycle"):
        source = m.source(key if key.startswith("fp64") else f"latency.{key}")
        assert "120 CUs" not in source and source.startswith("carried over from MI100")
        rate = parameter(m, key)
        assert f"60 x {rate:g} FMA x 2 flop x 1.725 GHz = {60 * rate * 2 * 1.725 / 1000:.3g}" in (
            source)
