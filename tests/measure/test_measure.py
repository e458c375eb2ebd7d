"""The GPU-free parts of the measurement harness (MODEL.md §9): ncu CSV
parsing (on FORMAT FIXTURES WITH INVENTED NUMBERS, tests/data/README.md),
normalisation per lattice update, the CSV schema and its round trip, the
CUDA program of a pystencils kernel and the command lines."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
from pathlib import Path

import pytest

import warpspeed.measure as wm
from warpspeed.measure import ncu

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def long_launches() -> list[ncu.KernelMetrics]:
    return ncu.parse_csv((DATA / "ncu_long_fixture.csv").read_text())


# ------------------------------------------------------------------ ncu parsing


def test_long_fixture_parses_every_launch_in_order(long_launches):
    assert [k.id for k in long_launches] == [0, 1]
    assert [k.block for k in long_launches] == [(32, 8, 4), (64, 4, 4)]
    assert long_launches[0].grid == (2, 4, 8)
    assert long_launches[0].kernel == "ws_star3d_r1_f111"
    assert set(long_launches[0].values) == set(ncu.METRICS)


def test_long_fixture_values_are_converted_to_base_units(long_launches):
    first, second = (k.values for k in long_launches)
    assert first[ncu.DRAM_READ] == pytest.approx(8.5e6)  # "8.50" Mbyte
    assert first[ncu.DRAM_WRITE] == 8_000_000  # "8,000,000" byte
    assert first[ncu.L2_READ_SECTORS] == 500_000
    assert first[ncu.DURATION] == pytest.approx(12.5e-6)  # usecond
    assert first[ncu.SM_CLOCK] == pytest.approx(1.98e9)  # cycle/nsecond
    assert first[ncu.OCCUPANCY] == 85.25
    assert first[ncu.REGISTERS] == 32
    assert second[ncu.DRAM_READ] == pytest.approx(9.25e6)  # "9,250.00" Kbyte
    assert second[ncu.L2_READ_SECTORS] == pytest.approx(625_000)  # Ksector
    assert second[ncu.DURATION] == pytest.approx(20e-6)  # msecond
    assert long_launches[0].units[ncu.DRAM_READ] == "byte"
    assert long_launches[0].units[ncu.SM_CLOCK] == "cycle/second"


def test_not_available_counter_parses_as_none(long_launches):
    assert long_launches[1].get(ncu.L1_LOAD_SECTORS) is None


def test_raw_page_fixture_reads_the_units_row():
    launches = ncu.parse_csv((DATA / "ncu_raw_fixture.csv").read_text())
    assert [k.id for k in launches] == [0, 1]
    first, second = launches
    assert first.block == (128, 2, 2)
    assert first.values[ncu.DRAM_READ] == 1_048_576
    assert first.values[ncu.DRAM_WRITE] == pytest.approx(2e6)  # 0.002 Gbyte
    assert first.values[ncu.DURATION] == pytest.approx(5e-6)  # 5,000 nsecond
    assert first.values[ncu.L2_READ_SECTORS] == 65_536
    assert second.values[ncu.DRAM_READ] is None


@pytest.mark.parametrize(
    ("unit", "factor", "base"),
    [
        ("byte", 1.0, "byte"),
        ("Kbyte", 1e3, "byte"),
        ("Mbyte", 1e6, "byte"),
        ("Gbyte", 1e9, "byte"),
        ("KiB", 1024.0, "byte"),
        ("sector", 1.0, "sector"),
        ("Msector", 1e6, "sector"),
        ("cycle", 1.0, "cycle"),
        ("nsecond", 1e-9, "second"),
        ("usecond", 1e-6, "second"),
        ("ms", 1e-3, "second"),
        ("Ghz", 1e9, "hz"),
        ("cycle/nsecond", 1e9, "cycle/second"),
        ("Gbyte/second", 1e9, "byte/second"),
        ("%", 1.0, "%"),
        ("", 1.0, ""),
    ],
)
def test_unit_scale_converts_to_base_units(unit, factor, base):
    f, b = ncu.unit_scale(unit)
    assert f == pytest.approx(factor)
    assert b == base


def test_unknown_unit_is_an_error_not_a_guess():
    with pytest.raises(ncu.NcuError, match="unknown ncu unit"):
        ncu.unit_scale("furlong")


def test_numbers_with_thousands_separators_and_missing_values():
    assert ncu.parse_number("1,234,567.5") == 1234567.5
    assert ncu.parse_number(" 42 ") == 42.0
    assert ncu.parse_number("n/a") is None
    assert ncu.parse_number("") is None
    with pytest.raises(ncu.NcuError):
        ncu.parse_number("twelve")


def test_output_without_a_table_is_an_error():
    with pytest.raises(ncu.NcuError, match="no ncu CSV table"):
        ncu.parse_csv("==PROF== Connected to process 1\n==ERROR== no kernels were profiled\n")


def test_ncu_version_is_read_from_the_version_line():
    text = (
        "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c)\n"
        "Version 2025.3.1.0 (build 1)\n"
    )
    assert ncu.parse_version(text) == "2025.3.1.0"


def test_ncu_command_collects_the_model_counters_of_one_kernel():
    cmd = ncu.ncu_command(["python", "-m", "x"], "^ws_k$", launch_skip=1, launch_count=2)
    assert cmd[0] == "ncu"
    assert cmd[-3:] == ["python", "-m", "x"]
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    for counter in (ncu.DRAM_READ, ncu.DRAM_WRITE, ncu.L2_READ_SECTORS, ncu.L2_WRITE_SECTORS,
                    ncu.L1_WAVEFRONTS):
        assert counter in metrics
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:^ws_k$"
    assert cmd[cmd.index("--cache-control") + 1] == "all"
    assert cmd[cmd.index("--launch-skip") + 1] == "1"
    assert cmd[cmd.index("--launch-count") + 1] == "2"
    assert "--csv" in cmd and "--print-units" in cmd
    with pytest.raises(ValueError):
        ncu.ncu_command(["x"], "k", cache_control="sometimes")


# ------------------------------------------------------------------ normalisation


def test_counters_are_normalised_per_lattice_update_by_hand(long_launches):
    v = wm.normalise(long_launches[0].values, lups=1_000_000)
    assert v["dram_load"] == pytest.approx(8.5)  # 8.5e6 B / 1e6 Lup
    assert v["dram_store"] == pytest.approx(8.0)
    assert v["l2_load"] == pytest.approx(16.0)  # 500,000 sectors * 32 B / 1e6
    assert v["l2_store"] == pytest.approx(8.0)  # 250,000 * 32 / 1e6
    assert v["l1_load"] == pytest.approx(60.5)  # 1,890,625 * 32 / 1e6
    assert v["l1_wavefronts"] == pytest.approx(2.125)
    assert v["ncu_time_s"] == pytest.approx(12.5e-6)  # not per Lup
    assert v["ncu_sm_clock_mhz"] == pytest.approx(1980.0)
    assert v["achieved_occupancy"] == pytest.approx(85.25)


def test_missing_counters_stay_missing(long_launches):
    v = wm.normalise(long_launches[1].values, lups=2_000_000)
    assert v["l1_load"] is None
    assert v["dram_load"] == pytest.approx(4.625)
    assert wm.normalise({}, 10)["dram_load"] is None
    with pytest.raises(wm.MeasurementError):
        wm.normalise({}, 0)


def test_glups_is_lattice_updates_per_nanosecond():
    assert wm.glups(640 * 512 * 512, 640 * 512 * 512 / 10e9) == pytest.approx(10.0)
    with pytest.raises(wm.MeasurementError):
        wm.glups(1, 0.0)


def test_clock_samples_give_median_clocks():
    text = "1980, 2619\n1755, 2619\n[N/A], 2619\n1980, 2619\n"
    assert wm.parse_clock_samples(text) == (1980.0, 2619.0)
    assert wm.parse_clock_samples("") == (None, None)


def test_driver_identity_and_cuda_version():
    assert wm.parse_smi_identity("NVIDIA H100 80GB HBM3, 580.159.04\n") == (
        "NVIDIA H100 80GB HBM3", "580.159.04")
    assert wm.cuda_version_string(12040) == "12.4"
    assert wm.cuda_version_string(13000) == "13.0"


# ------------------------------------------------------------------ CSV schema


def _row(**kw) -> wm.Measurement:
    base = dict(
        machine="NVIDIA H100 80GB HBM3", stencil="star3d",
        params=wm.params_json({"radius": 4, "shape": (640, 512, 512)}), kernel="star3d_r4",
        domain=(640, 512, 512), block=(32, 8, 4), fold=(1, 1, 2), lups=640 * 512 * 512,
        time_s=0.0123, glups=13.637, registers=40, time_min_s=0.0121, repetitions=25,
        dram_load=16.25, dram_store=8.0, l2_load=None, l2_store=8.5, l1_load=0.1 + 0.2,
        l1_wavefronts=1.0 / 3.0, sm_clock_mhz=1980.0, date="2026-01-01T00:00:00+00:00",
        note="test row, invented",
    )
    base.update(kw)
    return wm.Measurement(**base)


def test_schema_names_every_field_and_is_documented():
    names = [f.name for f in dataclasses.fields(wm.Measurement)]
    assert sorted(wm.COLUMNS) == sorted(names) and len(wm.COLUMNS) == len(names)
    for col in wm.SCHEMA:
        assert col.name in wm.__doc__ and col.unit and col.meaning


def test_csv_round_trip_keeps_every_value(tmp_path):
    rows = [_row(), _row(block=(1024, 1, 1), fold=(1, 1, 1), dram_load=None, note="")]
    path = wm.write_csv(tmp_path / "m.csv", rows[:1])
    wm.write_csv(path, rows[1:])  # appends below the same header
    back = wm.read_csv(path)
    assert back == rows
    assert back[0].parameters == {"radius": 4, "shape": (640, 512, 512)}
    assert back[0].l1_load == 0.1 + 0.2  # floats are written exactly
    assert path.read_text().splitlines()[0].split(",") == list(wm.COLUMNS)


def test_appending_to_a_file_of_another_schema_is_refused(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(wm.MeasurementError, match="other columns"):
        wm.write_csv(other, [_row()])
    with pytest.raises(wm.MeasurementError, match="not a warpspeed measurement CSV"):
        wm.read_csv(other)


def test_bad_cells_are_reported_by_column():
    row = _row().to_row()
    row["dram_load"] = "lots"
    with pytest.raises(wm.MeasurementError, match="dram_load"):
        wm.Measurement.from_row(row)
    row = _row().to_row()
    row["glups"] = ""
    with pytest.raises(wm.MeasurementError, match="glups"):
        wm.Measurement.from_row(row)


def test_triples_and_parameters_parse():
    assert wm.parse_triple("32x8x4") == (32, 8, 4)
    assert wm.parse_triple("1,2") == (1, 2, 1)
    with pytest.raises(wm.MeasurementError):
        wm.parse_triple("0,1,1")
    assert wm.parse_params(["radius=4", "shape=64,32,32", "alignment=interior", "w=0.5"]) == {
        "radius": 4, "shape": (64, 32, 32), "alignment": "interior", "w": 0.5}
    with pytest.raises(wm.MeasurementError, match="unknown parameter"):
        wm.parse_params(["colour=red"], wm.load_generator("star3d"))
    with pytest.raises(wm.MeasurementError, match="--folds"):
        wm.parse_params(["fold=1,1,2"])


# ------------------------------------------------------------------ programs


@pytest.fixture(scope="module")
def star_program():
    kernel, kf = wm.generate_variant("star3d", {"radius": 1, "shape": (64, 32, 32)}, (1, 1, 1))
    return kernel, wm.program_for(kf, kernel)


def test_program_of_a_pystencils_kernel_is_compilable_source(star_program):
    kernel, prog = star_program
    assert prog.function == "ws_star3d_r1_f111"
    assert 'extern "C" __global__ void ws_star3d_r1_f111(' in prog.source
    assert "#define RESTRICT __restrict__" in prog.source
    assert "#include <cuda/std/cstdint>" in prog.source
    assert Path(prog.include, "pystencils_runtime", "cuda.cuh").is_file()
    assert prog.compile_options[-1] == "-I" + prog.include
    assert prog.lups == 64 * 32 * 32
    assert prog.domain == (64, 32, 32)


def test_program_buffers_match_the_fields_and_their_alignment(star_program):
    kernel, prog = star_program
    bufs = {a.name: a for a in prog.args}
    assert set(bufs) == {"src", "dst"}
    offsets = {a.field.name: a.field.base_offset for a in kernel.loads + kernel.stores}
    for name, b in bufs.items():
        assert isinstance(b, wm.Buffer)
        assert b.elements == 66 * 34 * 34  # one ghost layer around 64 x 32 x 32
        assert (b.dtype, b.itemsize) == ("float64", 8)
        assert b.base_offset == offsets[name]
        # "interior" alignment: the first interior point sits on 128 B
        assert (b.base_offset + 8 * (1 + 66 + 66 * 34)) % 128 == 0


def test_folded_variant_gets_its_own_function_and_domain():
    kernel, kf = wm.generate_variant("star3d", {"radius": 1, "shape": (64, 32, 32)}, (1, 1, 2))
    prog = wm.program_for(kf, kernel)
    assert prog.function == "ws_star3d_r1_f112"
    assert prog.domain == (64, 32, 16)
    assert prog.lups == 64 * 32 * 32
    assert wm.interior(kernel) == (64, 32, 32)


def test_unknown_scalars_are_rejected(star_program):
    kernel, _ = star_program
    _, kf = wm.generate_variant("star3d", {"radius": 1, "shape": (64, 32, 32)}, (1, 1, 1))
    with pytest.raises(wm.MeasurementError, match="no scalar parameters"):
        wm.program_for(kf, kernel, {"omega": 1.0})


def test_grid_covers_the_domain():
    assert wm.grid_for((640, 512, 512), (32, 8, 4)) == (20, 64, 128)
    assert wm.grid_for((100, 10, 3), (64, 4, 2)) == (2, 3, 2)
    assert math.prod(wm.grid_for((5, 5, 5), (1, 1, 1))) == 125


def test_counters_are_matched_to_launches_in_order(long_launches):
    selection = [("a", (32, 8, 4)), ("b", (64, 4, 4))]
    assert wm.match_counters(long_launches, selection) == long_launches
    named = {"a": "ws_star3d_r1_f111", "b": "ws_star3d_r1_f111"}
    assert wm.match_counters(long_launches, selection, named) == long_launches
    with pytest.raises(wm.MeasurementError, match="profiled 2 launches"):
        wm.match_counters(long_launches, selection[:1])
    with pytest.raises(wm.MeasurementError, match="expected"):
        wm.match_counters(long_launches, [("a", (32, 8, 4)), ("b", (128, 2, 4))])
    with pytest.raises(wm.MeasurementError, match="expected ws_box"):
        wm.match_counters(long_launches, selection, {"a": "ws_box"})


def test_child_command_launches_the_selection_from_the_programs_folder():
    cmd = wm.child_command("progs", "sel.json")
    assert cmd[1:4] == ["-m", "warpspeed.measure", "launch"]
    assert cmd[cmd.index("--programs") + 1] == "progs"
    assert cmd[cmd.index("--selection") + 1] == "sel.json"


# ------------------------------------------------------------------ command line


def test_dry_run_lists_configurations_without_a_gpu(capsys):
    rc = wm.main(["run", "--stencil", "star3d", "--set", "radius=1", "--set", "shape=64,32,32",
                  "--blocks", "32,8,4", "64x4x4", "--folds", "1,1,1", "1,1,2", "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "nothing is measured" in out
    assert "function ws_star3d_r1_f111" in out and "function ws_star3d_r1_f112" in out
    assert "2 block sizes: 32,8,4 64,4,4" in out
    assert out.count("ncu: ncu --csv") == 1  # one ncu process profiles every plan
    assert "--kernel-name regex:^ws_" in out


def test_dry_run_with_threads_lists_the_design_space(capsys):
    rc = wm.main(["run", "--stencil", "star3d", "--set", "radius=1", "--set", "shape=64,32,32",
                  "--threads", "256", "--no-ncu", "--dry-run"])
    out = capsys.readouterr().out
    assert rc == 0 and "30 block sizes" in out and "ncu:" not in out


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_measuring_without_cupy_fails_with_a_message(tmp_path, capsys):
    out = tmp_path / "x.csv"
    rc = wm.main(["run", "--stencil", "star3d", "--set", "radius=1", "--out", str(out)])
    assert rc == 2
    assert "CuPy" in capsys.readouterr().err
    assert not out.exists()


def test_unknown_stencil_is_a_clean_error(capsys):
    rc = wm.main(["run", "--stencil", "no_such_stencil", "--dry-run"])
    assert rc == 2
    assert "unknown stencil" in capsys.readouterr().err
