"""``warpspeed machines calibrate`` (MODEL.md §12): machine files from
micro-benchmark tables, checked on synthetic tables whose parameters are known
and by rebuilding the shipped files from the public tables."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import warpspeed as ws
from tests.slow import fast_first, slow
from warpspeed.cli import main as cli
from warpspeed.machine import GROUNDINGS, machine_files
from warpspeed.timing import parameter
from warpspeed.timing.latency_parameters import LATENCY_TABLE, PLATEAUS
from warpspeed.timing.memory import MemoryParams, achieved_bandwidth
from warpspeed.validation import microbench as mb
from warpspeed.validation.calibrate import CalibrationError, Tables, calibrate, write_machine
from warpspeed.validation.reference import shared_dir

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "warpspeed" / "machines" / "base"
MICROBENCH = shared_dir() / "data" / "microbench"
needs_tables = pytest.mark.skipif(
    not (MICROBENCH / "stream").is_dir(),
    reason=f"micro-benchmark tables not found at {MICROBENCH}: the public data live in the "
           "project's shared/ folder beside the repository and are not shipped")

#: Machines written by the calibrate command, and what grounds them.
CALIBRATED = {"A40": "micro-benchmarks", "L40": "micro-benchmarks", "MI100": "micro-benchmarks",
              "MI210": "micro-benchmarks", "RX6900XT": "micro-benchmarks",
              "L40S": "datasheet", "MI250X-GCD": "datasheet", "MI300X": "micro-benchmarks",
              "MI300A": "micro-benchmarks", "RX7900XTX": "datasheet", "B200": "datasheet",
              "GH200": "micro-benchmarks"}


def _fits_script(name: str):
    """The script ``fits/NAME.py`` as a module."""
    spec = importlib.util.spec_from_file_location(f"fits_{name}", ROOT / "fits" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------- synthetic truth

TRUE = MemoryParams(dram_latency_ns=400.0, l2_latency_ns=150.0, dram_bw_read=1500.0,
                    dram_bw_copy=1300.0, dram_bw_write=1450.0, shape=0.6, turnover_ns=250.0)
SMS = 200


def _synthetic_stream(path: Path, p: MemoryParams = TRUE) -> None:
    """A stream table in the benchmark's format whose every column is the
    memory model with ``p`` (two blocks per SM, 8 B per array element)."""
    lines = ["block_size,threads_in_flight,occupancy_percent,init_GBs,read_GBs,scale_GBs,"
             "triad_GBs,3pt_GBs,5pt_GBs"]
    for block in range(32, 1025, 32):
        threads = 2 * SMS * block
        cols = []
        for k in ("init", "read", "scale", "triad", "3pt", "5pt"):
            loads, stores = mb.KERNELS[k]
            cols.append(achieved_bandwidth(p, threads * 8.0 * (loads + stores),
                                           loads / (loads + stores)))
        # plateau columns: the saturated values themselves at the largest blocks
        lines.append(f"{block},{SMS * block},{2 * block / 2048 * 100:.1f},"
                     + ",".join(f"{c:.3f}" for c in cols))
    path.write_text("\n".join(lines) + "\n")


def _synthetic_latency(path: Path, l2_mib: float) -> None:
    """Pointer chasing with plateaus 30 ns (L1), 150 ns (L2), 400 ns (DRAM)."""
    rows = ["clock_MHz,chain_footprint_kB,latency_ns,latency_cycles"]
    kb = 1.0
    while kb < 40 * l2_mib * 1024:
        ns = 30.0 if kb < 64 else 150.0 if kb < l2_mib * 1024 else 400.0
        rows.append(f"1000,{kb:.0f},{ns},{ns}")  # 1000 MHz: one cycle per ns
        kb *= 1.3
    path.write_text("\n".join(rows) + "\n")


def _synthetic_l2(path: Path, l2_mib: float) -> None:
    """An L2 table: 3000 GB/s while the data set fits half the L2, 900 beyond."""
    rows = ["block_run_kB,data_set_kB,bandwidth_GBs"]
    for kb in (512, 1024, 2048, 3072, 4096, 6144, 12288, 65536):
        rows.append(f"512,{kb},{3000.0 if kb <= l2_mib * 512 else 900.0}")
    path.write_text("\n".join(rows) + "\n")


def test_scattered_fraction_is_the_dram_end_over_the_read_plateau(tmp_path: Path) -> None:
    """An l2_cache table reaching 1 GiB: its median there over the stream table's
    read plateau; a table that stops short gives no fraction and the file no key."""
    _synthetic_stream(tmp_path / "s.csv")
    read = mb.plateau(mb.load_stream(tmp_path / "s.csv").gbs["read"])[0]
    rows = ["block_run_kB,data_set_kB,bandwidth_GBs", "512,1024,3000"]
    rows += [f"512,{kb},{bw}" for kb, bw in ((2**20, 700.0), (2**21, 720.0), (2**22, 740.0))]
    (tmp_path / "l2.csv").write_text("\n".join(rows) + "\n")
    sc = mb.scattered(tmp_path / "l2.csv", tmp_path / "s.csv")
    assert (sc.bandwidth, sc.rows) == (720.0, 3)
    assert sc.fraction == pytest.approx(720.0 / read)
    data = calibrate(BASE / "MI100.toml", Tables(stream=tmp_path / "s.csv",
                                                 latency=None, l2=tmp_path / "l2.csv"))
    assert data["dram_scattered_fraction"]["value"] == round(720.0 / read, 3)
    assert "l2.csv" in data["dram_scattered_fraction"]["source"]
    _synthetic_l2(tmp_path / "short.csv", 8)
    assert not mb.reaches_dram(tmp_path / "short.csv")
    short = calibrate(BASE / "MI100.toml", Tables(stream=tmp_path / "s.csv",
                                                  l2=tmp_path / "short.csv"))
    assert "dram_scattered_fraction" not in short
    with pytest.raises(mb.TableError, match="no data set of at least 1 GiB"):
        mb.scattered(tmp_path / "short.csv", tmp_path / "s.csv")


def test_plateaus_and_turnover_of_a_synthetic_stream_table(tmp_path: Path) -> None:
    _synthetic_stream(tmp_path / "s.csv")
    fit = mb.memory_fit(mb.load_stream(tmp_path / "s.csv"), 400.0, 150.0)
    p = fit.params
    # init never waits for a load: its shortest residence is the turnover itself
    # (the wall stretches it slightly even at the smallest block)
    assert p.turnover_ns == pytest.approx(TRUE.turnover_ns, rel=0.02)
    # the plateaus are medians within 2 % of the maximum: at most 2 % below saturation
    for got, true in ((p.dram_bw_copy, TRUE.dram_bw_copy), (p.dram_bw_write, TRUE.dram_bw_write)):
        assert 0.97 * true <= got <= true
    # the fitted shape brings every fitted curve back within a few per cent
    for k in mb.FITTED:
        assert np.max(np.abs(mb.relative_errors(p, mb.load_stream(tmp_path / "s.csv"), k))) < 0.05


def _synthetic_newer_stream(path: Path, p: MemoryParams = TRUE) -> None:
    """A stream table of the newer benchmark (README of the tables): one or
    two blocks per SM, both counted in threads_in_flight, and a triad of
    three loads and one store (``A = B * D + C``); every column the memory
    model with ``p``."""
    lines = ["block_size,threads_in_flight,occupancy_percent,init_GBs,read_GBs,scale_GBs,"
             "triad_GBs,3pt_GBs,5pt_GBs,blocks_per_SM"]
    shapes = [(b, 1) for b in (16, 32, 64, 96)] + [(b, 2) for b in range(64, 1025, 32)]
    for block, per_sm in sorted(shapes, key=lambda s: s[0] * s[1]):
        threads = SMS * block * per_sm
        cols = []
        for loads, stores in ((0, 1), (1, 0), (1, 1), (3, 1), (1, 1), (1, 1)):
            cols.append(achieved_bandwidth(p, threads * 8.0 * (loads + stores),
                                           loads / (loads + stores)))
        lines.append(f"{block},{threads},{threads / (SMS * 2048) * 100:.1f},"
                     + ",".join(f"{c:.3f}" for c in cols) + f",{per_sm}")
    path.write_text("\n".join(lines) + "\n")


def test_a_newer_stream_table_counts_its_blocks_and_its_triad(tmp_path: Path) -> None:
    """The newer table's threads are read as they are (not doubled), its
    triad as three loads per store: the fit gives the true parameters back,
    the triad column within a few per cent."""
    _synthetic_newer_stream(tmp_path / "s.csv")
    s = mb.load_stream(tmp_path / "s.csv")
    assert s.sms == SMS and s.kernels["triad"] == (3, 1) and s.threads[0] == SMS * 16
    fit = mb.memory_fit(s, 400.0, 150.0)
    assert fit.params.turnover_ns == pytest.approx(TRUE.turnover_ns, rel=0.02)
    assert 0.97 * TRUE.dram_bw_write <= fit.params.dram_bw_write <= TRUE.dram_bw_write
    for k in mb.FITTED:
        assert np.max(np.abs(mb.relative_errors(fit.params, s, k))) < 0.05, k
    doubled = tmp_path / "doubled.csv"  # the old reading would find 2x the SMs' blocks
    doubled.write_text((tmp_path / "s.csv").read_text().replace(",blocks_per_SM", ",x"))
    with pytest.raises(mb.TableError):
        mb.load_stream(doubled)


def test_latency_plateaus_of_a_synthetic_table(tmp_path: Path) -> None:
    _synthetic_latency(tmp_path / "l.csv", 8)
    lat = mb.load_latency(tmp_path / "l.csv", 8)
    assert (lat.dram_ns, lat.l2_ns) == (400.0, 150.0)
    # an Infinity Cache of 64 MiB behind a 4 MiB L2: the DRAM window moves past it
    _synthetic_latency(tmp_path / "l4.csv", 64)
    lat = mb.load_latency(tmp_path / "l4.csv", 4, llc_mib=64)
    assert lat.dram_ns == 400.0


def _small_kernels(path: Path, rows: list[tuple[int, int, float]]) -> None:
    """A small-kernels table of (elements, block, GB/s), 16 B per element."""
    lines = ["elements,bytes_moved,block,bandwidth_GBs,time_per_launch_us"]
    lines += [f"{n},{16 * n},{b},{bw},{16 * n / bw / 1000:.3f}" for n, b, bw in rows]
    path.write_text("\n".join(lines) + "\n")


def test_block_launch_is_read_from_the_small_blocks_of_the_large_launches(
        tmp_path: Path) -> None:
    # 100 SMs; at 8M elements blocks of 32 and 64 threads move 640 and 1280 GB/s,
    # below 0.9 of the best (3000): 100 * 32 * 16 B / 640 GB/s = 80 ns, and
    # 100 * 64 * 16 / 1280 = 80 ns; the 4M rows (half the largest) likewise at
    # 100 ns; the small launch (1k elements) and the saturated blocks do not count
    table = tmp_path / "small.csv"
    _small_kernels(table, [(1024, 32, 5.0), (8 << 20, 32, 640.0), (8 << 20, 64, 1280.0),
                           (8 << 20, 128, 2900.0), (8 << 20, 256, 3000.0),
                           (4 << 20, 32, 512.0), (4 << 20, 256, 3000.0),
                           (1 << 20, 32, 100.0), (1 << 20, 256, 2000.0)])
    assert mb.block_launch_ns(table, 100) == (pytest.approx(80.0), 3)
    _small_kernels(table, [(8 << 20, 32, 2950.0), (8 << 20, 256, 3000.0)])
    assert mb.block_launch_ns(table, 100) is None  # no block size held back


@needs_tables
def test_block_launch_of_the_shipped_tables_is_one_time_per_block_and_sm() -> None:
    """Independent of the calibrate code path: in the H200 and A100 tables
    every block of 32 or 64 threads at the largest size moves one block's
    bytes per 78-83 ns and SM, whatever its size."""
    for gpu, sms in (("h200", 132), ("a100_80", 108)):
        with (MICROBENCH / "small_kernels" / f"{gpu}.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        top = max(int(r["elements"]) for r in rows)
        times = [sms * int(r["block"]) * 16 / float(r["bandwidth_GBs"]) for r in rows
                 if int(r["elements"]) == top and int(r["block"]) in (32, 64)]
        assert len(times) == 2 and all(78 < t < 83 for t in times), gpu
    assert parameter(ws.load_machine("H200"), "block_launch_ns") == 80.8
    assert parameter(ws.load_machine("MI210"), "block_launch_ns") == 125.9
    assert parameter(ws.load_machine("A40"), "block_launch_ns") is None  # never held back
    # a file built on a related GPU's table carries none (read with its own SMs)
    assert parameter(ws.load_machine("MI300X"), "block_launch_ns") is None


def test_calibrate_writes_a_loadable_machine_with_every_source(tmp_path: Path) -> None:
    # plateaus below MI100's 1229 GB/s data-sheet peak (a file above it is refused)
    _synthetic_stream(tmp_path / "stream.csv", replace(TRUE, dram_bw_read=1150.0,
                                                       dram_bw_copy=1000.0, dram_bw_write=1100.0))
    _synthetic_latency(tmp_path / "latency.csv", 8)
    _synthetic_l2(tmp_path / "l2.csv", 8)
    out = tmp_path / "mine.toml"
    code = cli(["machines", "calibrate", "--base", str(BASE / "MI100.toml"),
                "--stream", str(tmp_path / "stream.csv"), "--l2", str(tmp_path / "l2.csv"),
                "--latency", str(tmp_path / "latency.csv"), "--name", "MINE",
                "--cite", "synthetic tables", "--out", str(out)])
    assert code == 0
    m = ws.load_machine(out)
    assert (m.name, m.vendor, m.architecture, m.grounding) == ("MINE", "AMD", "CDNA",
                                                               "micro-benchmarks")
    assert (parameter(m, "dram_latency_ns"), parameter(m, "l2_latency_ns"),
            m.l2_bandwidth) == (400.0, 150.0, 3000.0)
    assert parameter(m, "turnover_ns") == pytest.approx(TRUE.turnover_ns, rel=0.02)
    assert all(parameter(m, k) is not None for k in LATENCY_TABLE.required())
    for key in ("dram_bw_copy", "memory_shape", "dram_latency_ns", "turnover_ns"):
        source = m.source(f"latency.{key}")
        assert "synthetic tables" in source and "stream.csv" in source or (
            "latency.csv" in source)
    # the header records the command that rebuilds the file
    assert "warpspeed machines calibrate --base" in out.read_text().splitlines()[1]


def test_dram_scale_multiplies_only_the_bandwidths(tmp_path: Path) -> None:
    _synthetic_stream(tmp_path / "s.csv")
    _synthetic_latency(tmp_path / "l.csv", 8)
    _synthetic_l2(tmp_path / "l2.csv", 8)
    t = Tables(stream=tmp_path / "s.csv", latency=tmp_path / "l.csv", l2=tmp_path / "l2.csv")
    one = calibrate(BASE / "MI100.toml", t)
    two = calibrate(BASE / "MI100.toml", t, dram_scale=2.0, grounding="datasheet")
    for k in ("dram_bandwidth", "dram_bw_read", "dram_bw_copy", "dram_bw_write"):
        assert two[k]["value"] == pytest.approx(2 * one[k]["value"], abs=0.11)
        assert "x 2" in two[k]["source"]
    for k in ("turnover_ns", "memory_shape", "dram_latency_ns"):
        assert two[k]["value"] == one[k]["value"]
    assert two["grounding"] == "datasheet"


def test_a_base_without_latencies_needs_a_latency_table(tmp_path: Path) -> None:
    _synthetic_stream(tmp_path / "s.csv")
    with pytest.raises(CalibrationError, match=r"\[dram_latency_ns\].*--latency"):
        calibrate(BASE / "MI210.toml", Tables(stream=tmp_path / "s.csv"))


def test_missing_default_model_keys_are_named(tmp_path: Path) -> None:
    _synthetic_stream(tmp_path / "s.csv")
    _synthetic_latency(tmp_path / "l.csv", 8)
    base = (BASE / "MI100.toml").read_text().replace("[latency.fp_overlap_exponent]", "[x]")
    lines = base.splitlines()
    i = lines.index("[x]")
    (tmp_path / "base.toml").write_text("\n".join(lines[:i] + lines[i + 3:]) + "\n")
    with pytest.raises(CalibrationError, match="l2_bandwidth.*--l2"):
        calibrate(tmp_path / "base.toml", Tables(stream=tmp_path / "s.csv",
                                                 latency=tmp_path / "l.csv"))
    _synthetic_l2(tmp_path / "l2.csv", 8)
    with pytest.raises(CalibrationError, match="fp_overlap_exponent.*--roofline"):
        calibrate(tmp_path / "base.toml", Tables(
            stream=tmp_path / "s.csv", latency=tmp_path / "l.csv", l2=tmp_path / "l2.csv"))


def test_a_table_without_its_columns_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("block_size,threads_in_flight\n32,1600\n")
    with pytest.raises(mb.TableError, match="lacks the columns.*occupancy_percent"):
        mb.load_stream(tmp_path / "s.csv")
    with pytest.raises(mb.TableError, match="cannot read"):
        mb.load_stream(tmp_path / "missing.csv")


@slow
def test_the_cli_reports_a_bad_table_in_one_line_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("block_size\n32\n")
    proc = subprocess.run(
        [sys.executable, "-m", "warpspeed.cli", "machines", "calibrate", "--base",
         str(BASE / "MI100.toml"), "--stream", str(tmp_path / "s.csv"), "--out",
         str(tmp_path / "o.toml")],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "lacks the columns" in proc.stderr


def test_calibrate_refuses_tables_above_the_bases_data_sheet_peak(tmp_path: Path,
                                                                  capsys) -> None:
    """The synthetic tables reach 1500 GB/s, MI100's data sheet says 1229: one
    line names the figure and the peak (issue 46: no file above its peak)."""
    _synthetic_stream(tmp_path / "stream.csv")
    _synthetic_latency(tmp_path / "latency.csv", 8)
    _synthetic_l2(tmp_path / "l2.csv", 8)
    code = cli(["machines", "calibrate", "--base", str(BASE / "MI100.toml"), "--stream",
                str(tmp_path / "stream.csv"), "--latency", str(tmp_path / "latency.csv"),
                "--l2", str(tmp_path / "l2.csv"), "--out", str(tmp_path / "mine.toml")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "is above [dram_peak] 1228.8 GB/s" in err


def test_write_machine_refuses_an_out_of_range_value(tmp_path: Path) -> None:
    data = tomllib.loads((machine_files()["mi210"]).read_text())
    data["memory_shape"] = {"value": 500.0, "source": "x"}
    with pytest.raises(ws.MachineError, match="memory_shape"):
        write_machine(data, tmp_path / "bad.toml")


# ------------------------------------------------ the shipped files, rebuilt

@needs_tables
@pytest.mark.parametrize("name", fast_first(sorted(CALIBRATED)))
def test_shipped_file_is_rebuilt_from_its_tables(name: str, tmp_path: Path) -> None:
    build = _fits_script("build_machines")
    out = tmp_path / f"{name}.toml"
    assert cli(build.command(name, MICROBENCH, out)) == 0
    rebuilt, shipped = ws.load_machine(out), ws.load_machine(name)
    for key in ("dram_bandwidth", "dram_bw_read", "dram_bw_copy", "dram_bw_write",
                "turnover_ns", "memory_shape", "dram_latency_ns", "l2_latency_ns",
                "l2_bandwidth", "fp_overlap_exponent", "launch_overhead_us",
                "block_launch_ns"):
        assert parameter(rebuilt, key) == parameter(shipped, key), key
        if parameter(shipped, key) is None:  # optional and absent in both
            continue
        src = f"latency.{key}" if key in LATENCY_TABLE.keys() else key
        assert rebuilt.source(src) == shipped.source(src), key
    assert rebuilt.grounding == shipped.grounding == CALIBRATED[name]


@needs_tables
def test_mi210_dram_figures_are_its_stream_plateaus() -> None:
    """Independent of the calibrate code path: the scale column's largest
    values (read straight from the CSV) bound the shipped copy bandwidth."""
    import csv

    with (MICROBENCH / "stream" / "mi210.csv").open() as fh:
        scale = sorted(float(r["scale_GBs"]) for r in csv.DictReader(fh))
    m = ws.load_machine("MI210")
    assert 0.98 * scale[-1] <= parameter(m, "dram_bw_copy") <= scale[-1]
    assert m.dram_bandwidth == parameter(m, "dram_bw_copy")


@needs_tables
@pytest.mark.parametrize("name, table, peak", [("GH200", "gh200", 4000),
                                              ("MI300X", "mi300x", 5300),
                                              ("MI300A", "mi300a", 5300)])
def test_newer_benchmark_dram_figures_are_the_gpus_own_stream_plateaus(
        name: str, table: str, peak: float) -> None:
    """Read straight from the GPU's own table (the newer benchmark; MI300X's
    file once took the MI210's, scaled): the shipped stores-only and copy
    figures are its init and scale columns' largest values within the plateau
    band, the paper model's figure is the copy plateau, and no figure exceeds
    the data-sheet peak. The MI300s take no block-launch limit from the MI210's
    small-kernel table that stands in for their launch overhead."""
    with (MICROBENCH / "stream" / f"{table}.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    m = ws.load_machine(name)
    for key, column in (("dram_bw_write", "init_GBs"), ("dram_bw_copy", "scale_GBs")):
        top = max(float(r[column]) for r in rows)
        assert 0.98 * top <= parameter(m, key) <= top, key
    assert m.dram_bandwidth == parameter(m, "dram_bw_copy") and m.grounding == "micro-benchmarks"
    assert max(parameter(m, k) for k in PLATEAUS) <= m.dram_peak == peak
    assert (parameter(m, "block_launch_ns") is None) == name.startswith("MI300")


def _l2_stream_table(path: Path, rows: list[tuple[str, int, float, float]]) -> None:
    """An l2_stream table: (kernel, threads_in_flight, footprint_kB, GB/s)."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["kernel", "arrays", "block_size", "blocks_per_SM", "threads_in_flight",
                    "occupancy_percent", "size_kB", "footprint_kB", "GBs_from_min_time",
                    "GBs_from_median_time", "GBs_from_max_time"])
        for kernel, threads, kb, gbs in rows:
            w.writerow([kernel, 4, 256, 2, threads, 100, kb, kb, gbs, gbs, gbs])


def test_l2_stream_plateau_is_the_full_occupancy_median_inside_half_the_l2(
        tmp_path: Path) -> None:
    """Counted by hand: of the triad rows at the largest occupancy (1000
    threads) with footprints of at most 512 kB (half a 1 MiB L2), the median;
    rows at lower occupancy, beyond half the L2 or of other kernels do not
    count."""
    _l2_stream_table(tmp_path / "s.csv", [
        ("triad", 1000, 100, 90.0), ("triad", 1000, 300, 100.0), ("triad", 1000, 512, 120.0),
        ("triad", 1000, 600, 10.0), ("triad", 500, 100, 999.0), ("read", 1000, 100, 50.0)])
    assert mb.l2_stream_plateau(tmp_path / "s.csv", 2**20) == (100.0, 3)
    assert mb.l2_stream_plateau(tmp_path / "s.csv", 2**20, "read") == (50.0, 1)
    with pytest.raises(mb.TableError, match="no triad row of at most half the L2"):
        mb.l2_stream_plateau(tmp_path / "s.csv", 2**10)
    with pytest.raises(mb.TableError, match="no rows of kernel 'scale'"):
        mb.l2_stream_plateau(tmp_path / "s.csv", 2**20, "scale")


def test_llc_stream_plateau_is_the_read_median_between_the_l2_and_the_cache(
        tmp_path: Path) -> None:
    """Counted by hand, a 1 MiB L2 and a 16 MiB cache: the window is above
    1536 kB and at most 12288 kB; of the read rows at full occupancy inside
    it, the median (2000 and 3000 kB: 80 and 100 -> 90)."""
    _l2_stream_table(tmp_path / "s.csv", [
        ("read", 1000, 1000, 500.0), ("read", 1000, 2000, 80.0), ("read", 1000, 3000, 100.0),
        ("read", 1000, 13000, 20.0), ("read", 10, 3000, 999.0), ("scale", 1000, 3000, 7.0)])
    assert mb.llc_stream_plateau(tmp_path / "s.csv", 2**20, 16 * 2**20) == (90.0, 2)
    with pytest.raises(mb.TableError, match="no read row between 1.5 x the L2"):
        mb.llc_stream_plateau(tmp_path / "s.csv", 2**30, 2**31)


@needs_tables
def test_the_mi300s_infinity_cache_is_their_l2_stream_plateau() -> None:
    """MI300X's and MI300A's mall_bandwidth is what fits/l2_stream.py reads off
    their own tables (no longer AMD's 17 TB/s launch figure), and below the
    tables' triad within the L2: the cache serves less than the L2."""
    script = _fits_script("l2_stream")
    rows = script.llc_plateaus(MICROBENCH)
    for gpu in ("mi300x", "mi300a"):
        name, plateau, shipped = rows[gpu]
        assert shipped == pytest.approx(plateau, abs=0.5)
        assert shipped < 0.5 * ws.load_machine(name).l2_bandwidth


@needs_tables
def test_the_a40_l2_estimate_is_its_triad_over_the_nvidia_ratio() -> None:
    """The A40's l2_bandwidth (no l2_cache table) as fits/l2_stream.py derives
    it: its triad plateau over the median triad / l2_cache ratio of the
    NVIDIA GPUs with both tables, each ratio between 1 and 1.25."""
    script = _fits_script("l2_stream")
    rows = script.ratios(MICROBENCH)
    k = script.nvidia_ratio(rows)
    assert all(1.0 < t / r < 1.25 for name, t, r in rows.values()
               if r and ws.load_machine(name).vendor == "NVIDIA")
    assert round(k, 3) == ws.load_machine("A40").family.l2_stream_ratio
    assert round(k, 3) == ws.load_machine("H200").family.l2_stream_ratio
    assert ws.load_machine("A40").l2_bandwidth == pytest.approx(rows["a40"][1] / k, rel=1e-3)


def test_l2_stream_gives_the_l2_plateau_on_nvidia_only(tmp_path: Path) -> None:
    """--l2-stream: the triad plateau over the NVIDIA ratio (by hand: 1056 GB/s
    -> 1000); refused on an AMD base (the ratio does not carry over) and beside
    an l2_cache table, each in one line naming the way out."""
    _l2_stream_table(tmp_path / "l2s.csv", [("triad", 1000, 100, 1056.0)])
    # plateaus below the A40's 696 GB/s data-sheet peak; its base has the latencies
    _synthetic_stream(tmp_path / "s.csv", replace(TRUE, dram_bw_read=650.0, dram_bw_copy=600.0,
                                                  dram_bw_write=640.0))
    _synthetic_latency(tmp_path / "lat.csv", 8)
    base = tmp_path / "a40.toml"
    base.write_text((BASE / "A40.toml").read_text() + (
        '\n[latency.fp_overlap_exponent]\nvalue = 3.0\nsource = "given"\n'
        '\n[latency.launch_overhead_us]\nvalue = 2.0\nsource = "given"\n'))
    tables = Tables(stream=tmp_path / "s.csv", l2_stream=tmp_path / "l2s.csv")
    data = calibrate(base, tables)
    assert data["l2_bandwidth"]["value"] == pytest.approx(1000.0, abs=0.1)
    assert "l2s.csv" in data["l2_bandwidth"]["source"]
    no_architecture = tmp_path / "no_architecture.toml"  # the family from arch = "sm_86"
    no_architecture.write_text("\n".join(line for line in base.read_text().splitlines()
                                         if not line.startswith("architecture")))
    assert calibrate(no_architecture, tables)["l2_bandwidth"] == data["l2_bandwidth"]
    with pytest.raises(CalibrationError, match="family has none .on AMD GPUs it spreads.*--l2"):
        calibrate(BASE / "MI210.toml", replace(tables, latency=tmp_path / "lat.csv"))
    with pytest.raises(CalibrationError, match="give --l2 or --l2-stream, not both"):
        calibrate(base, replace(tables, l2=tmp_path / "l2s.csv"))


# ------------------------------------------------------------ the listing

@slow
def test_machines_json_shows_vendor_architecture_and_grounding() -> None:
    proc = subprocess.run([sys.executable, "-m", "warpspeed.cli", "machines", "--json"],
                          capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT)})
    rows = {r["name"]: r for r in json.loads(proc.stdout)}
    assert set(CALIBRATED) <= set(rows)
    for name, grounding in CALIBRATED.items():
        assert rows[name]["grounding"] == grounding
    assert rows["MI300X"]["vendor"] == "AMD" and rows["MI300X"]["architecture"] == "CDNA3"
    assert rows["V100"]["grounding"] == "kernels" and rows["V100"]["architecture"] == "Volta"
    assert all(r["grounding"] in GROUNDINGS for r in rows.values())


@pytest.mark.parametrize("text, match", [
    ('vendor = "Intel"', "vendor must be one of"),
    ('grounding = "vibes"', "grounding must be one of"),
    ('vendor = "AMD"\narch = "gfx90a"', "add architecture"),
])
def test_bad_labels_are_refused_by_name(text: str, match: str, tmp_path: Path) -> None:
    lines = [x for x in machine_files()["a100-80gb"].read_text().splitlines()
             if not x.startswith(("vendor", "grounding", "arch", "architecture"))]
    (tmp_path / "m.toml").write_text(text + "\n" + "\n".join(lines) + "\n")
    with pytest.raises(ws.MachineError, match=match):
        ws.load_machine(tmp_path / "m.toml")


def test_validated_needs_kernel_grounding(tmp_path: Path) -> None:
    text = machine_files()["v100"].read_text().replace('grounding = "kernels"',
                                                       'grounding = "datasheet"')
    (tmp_path / "v.toml").write_text(text)
    with pytest.raises(ws.MachineError, match="validated = true needs grounding"):
        ws.load_machine(tmp_path / "v.toml")


def test_old_files_without_labels_get_the_defaults(tmp_path: Path) -> None:
    lines = [x for x in machine_files()["a100"].read_text().splitlines()
             if not x.startswith(("vendor", "grounding", "architecture"))]
    (tmp_path / "old.toml").write_text("\n".join(lines) + "\n")
    m = ws.load_machine(tmp_path / "old.toml")
    assert (m.vendor, m.architecture, m.grounding) == ("NVIDIA", "Ampere", "kernels")
