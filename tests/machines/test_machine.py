"""Machine files (MODEL.md §2)."""

import re

import pytest

import warpspeed as ws
from warpspeed.machine import machine_files
from warpspeed.timing import parameter
from warpspeed.timing.latency_parameters import given


def test_builtin_machines_are_listed():
    assert set(ws.machines()) >= {"V100", "A100", "A100-80GB", "H100", "H200", "GH200"}


def test_machine_names_are_case_insensitive():
    assert ws.load_machine("a100").name == "A100"
    assert ws.load_machine("h100").sms == 132


def test_paper_machines_have_the_paper_values():
    a, v = ws.load_machine("A100"), ws.load_machine("V100")
    assert (a.sms, a.clock_ghz, a.l2_bytes, a.dram_bandwidth, a.l2_bandwidth) == (
        108, 1.41, 20 * 2**20, 1400, 4500)
    assert (v.sms, v.clock_ghz, v.l2_bytes, v.dram_bandwidth, v.l2_bandwidth) == (
        80, 1.38, 6 * 2**20, 790, 2500)
    assert a.validated and v.validated


@pytest.mark.parametrize("name", ["A100-80GB", "H100", "H200", "GH200"])
def test_newer_machines_are_marked_not_validated(name):
    assert not ws.load_machine(name).validated


@pytest.mark.parametrize("path", sorted(machine_files().values()))
def test_every_number_has_a_source(path):
    m = ws.load_machine(path)
    assert all(src.strip() for _, src in m.sources)
    assert m.source("sms")


#: Where a bandwidth may come from (MODEL.md §12): a micro-benchmark table
#: (``stream/h200.csv``), the project's own measurements (``fits/data/h200``),
#: the paper's constants, another shipped file's figure scaled by a stated
#: ratio (``A40's 2150 GB/s x 0.835``), or an estimate that says so and how.
CHECKABLE = re.compile(r"[a-z0-9_]+/[a-z0-9_]+\.csv|^fits/data/|^paper code constant|"
                       r"^ESTIMATE|^[A-Z][\w-]*'s (value|[\d.]+ GB/s) x [\d.]+")


@pytest.mark.parametrize("path", sorted(machine_files().values()))
def test_every_bandwidth_names_a_source_a_user_can_check(path):
    """No figure quoted from unnamed benchmarks ("public micro-benchmarks:
    ~7-10 TB/s", as H100 and GH200 once had): each DRAM and L2 bandwidth
    names its table, data, constant or derivation."""
    m = ws.load_machine(path)
    for key in ("dram_bandwidth", "l2_bandwidth"):
        assert CHECKABLE.search(m.source(key)), f"{m.name} {key}: {m.source(key)}"
        assert "~" not in m.source(key), f"{m.name} {key} quotes an approximate figure"


#: A bandwidth's source that states its arithmetic: another figure scaled by
#: SMs x clock, times a ratio, or over a ratio (MODEL.md §12).
ARITHMETIC = (
    (re.compile(r"([\d.]+) GB/s[^;]*?scaled by SMs x clock \(([\d.]+) x ([\d.]+) over "
                r"([\d.]+) x ([\d.]+)\)"), lambda a, b, c, d, e: a * b * c / (d * e)),
    (re.compile(r"^[A-Z][\w-]*'s ([\d.]+) GB/s x ([\d.]+)"), lambda a, b: a * b),
    (re.compile(r"\(([\d.]+) GB/s, median[^)]*\) over ([\d.]+),"), lambda a, b: a / b),
)


@pytest.mark.parametrize("path", sorted(machine_files().values()))
def test_a_bandwidth_is_what_its_sources_arithmetic_gives(path):
    """Where the source states how the figure was made, redo it: B200's L2
    once said 'the H200's plateau scaled by SMs x clock' (11.4 TB/s) and was
    16.8."""
    m = ws.load_machine(path)
    for key in ("dram_bandwidth", "l2_bandwidth"):
        value, source = getattr(m, key), m.source(key)
        for pattern, rule in ARITHMETIC:
            found = pattern.search(source)
            if found:
                assert value == pytest.approx(rule(*map(float, found.groups())), rel=2e-3), (
                    f"{m.name} {key} = {value}: {source}")


def test_unknown_machine_error_lists_the_known_ones():
    with pytest.raises(ws.MachineError, match="unknown machine 'B300'.*A100.*V100"):
        ws.load_machine("B300")


@pytest.mark.parametrize("bad", [42, None, {"name": "A100"}, ("A100",)])
def test_a_machine_of_another_type_is_refused_by_type(bad):
    with pytest.raises(ws.MachineError, match=f"built-in name .*A100.*got a {type(bad).__name__}"):
        ws.load_machine(bad)


def test_a_name_no_file_system_takes_is_an_unknown_machine():
    """A 300-character name (what ``str`` of a mistaken object gives) is too
    long for a file name: a MachineError naming its start, not the OSError
    (which Python versions before 3.14 raise where they look for the file)."""
    with pytest.raises(ws.MachineError, match=r"unknown machine 'x{60}\.\.\.'.*; known"):
        ws.load_machine("x" * 300)
    with pytest.raises(ws.MachineError):
        ws.load_machine("x" * 300 + ".toml")
    with pytest.raises(ws.MachineError, match="the machine is empty; known machines: .*A100"):
        ws.load_machine(" ")


def test_user_machine_file_is_loaded_from_a_path(tmp_path):
    text = (machine_files()["a100"]).read_text().replace('name = "A100"', 'name = "MyGPU"')
    text = text.replace("value = 108", "value = 54")
    path = tmp_path / "mygpu.toml"
    path.write_text(text)
    m = ws.load_machine(str(path))
    assert (m.name, m.sms) == ("MyGPU", 54)
    from stencils.star3d_by_hand import kernel

    k = kernel(radius=1, shape=(64, 64, 64))
    assert ws.predict(k, path, (64, 4, 1)).machine == "MyGPU"


def test_malformed_machine_file_names_the_problem(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "X"\nfits = "paper"\n[sms]\nvalue = 10\nsource = "me"\n')
    with pytest.raises(ws.MachineError, match=r"missing table \[clock_ghz\]"):
        ws.load_machine(bad)
    bad.write_text("name = [")
    with pytest.raises(ws.MachineError, match="not valid TOML"):
        ws.load_machine(bad)
    text = machine_files()["a100"].read_text().replace("value = 108", "value = -1")
    bad.write_text(text)
    with pytest.raises(ws.MachineError, match=r"\[sms\] value must be a positive number"):
        ws.load_machine(bad)


def test_latency_constants_out_of_range_are_refused(tmp_path):
    # p < 1 would make overlapping core and memory slower than running them
    # one after the other; tiny values overflow the p-norm
    for bad_value in ("0.5", "1e-300"):
        text = re.sub(r"\[latency.overlap_exponent\]\nvalue = \S+",
                      f"[latency.overlap_exponent]\nvalue = {bad_value}",
                      machine_files()["v100"].read_text())
        assert bad_value in text
        path = tmp_path / "p.toml"
        path.write_text(text)
        with pytest.raises(ws.MachineError,
                           match=r"\[latency.overlap_exponent\] value must lie in \[1,"):
            ws.load_machine(path)
    text = re.sub(r"\[latency.memory_shape\]\nvalue = \S+",
                  "[latency.memory_shape]\nvalue = 1e300", machine_files()["v100"].read_text())
    path.write_text(text)
    with pytest.raises(ws.MachineError,
                       match=r"\[latency.memory_shape\] value must lie in \[0, 100\]"):
        ws.load_machine(path)


def test_memory_shape_zero_is_a_valid_fit(tmp_path):
    # calibrate_memory.py scans the shape from 0 (latency that does not grow
    # under load); the loader must accept what the fit can produce
    text = re.sub(r"\[latency.memory_shape\]\nvalue = \S+", "[latency.memory_shape]\nvalue = 0.0",
                  machine_files()["v100"].read_text())
    path = tmp_path / "zero.toml"
    path.write_text(text)
    m = ws.load_machine(path)
    assert given(m)["memory_shape"] == 0.0
    from stencils.star3d_by_hand import kernel

    k = kernel(radius=1, shape=(64, 64, 64))
    no_growth = ws.predict(k, m, (32, 4, 1))
    fitted = ws.predict(k, "V100", (32, 4, 1))
    # no latency growth under load: the DRAM bandwidth can only be higher
    assert no_growth.terms["dram_bandwidth_achieved"] > fitted.terms["dram_bandwidth_achieved"]
    text = text.replace("[latency.memory_shape]\nvalue = 0.0",
                        "[latency.memory_shape]\nvalue = -0.1")
    path.write_text(text)
    with pytest.raises(ws.MachineError,
                       match=r"\[latency.memory_shape\] value must be a number >= 0"):
        ws.load_machine(path)


def test_missing_machine_file_is_an_error(tmp_path):
    with pytest.raises(ws.MachineError, match="does not exist"):
        ws.load_machine(tmp_path / "nothing.toml")


def test_kernel_fitted_constants_lie_in_their_fit_bounds():
    # the three constants fitted to kernel rows are bounded by the fit; a
    # shipped machine file outside the bounds was not produced by the fit
    from warpspeed.timing.kernel_fit import KERNEL_CONSTANTS

    for name, path in machine_files().items():
        m = ws.load_machine(path)
        for key, (low, high) in KERNEL_CONSTANTS.items():
            assert low <= parameter(m, key) <= high, (name, key)


def test_a_folder_given_as_machine_is_named_a_folder(tmp_path):
    with pytest.raises(ws.MachineError, match="is a folder, not a machine file"):
        ws.load_machine(tmp_path)


@pytest.mark.parametrize("key", ["latency.dram_latency_ns", "sms", "latency.dram_bw_read"])
def test_a_nan_or_infinite_figure_is_named_in_one_clear_line(tmp_path, key):
    """Issue 46: a NaN read "must lie in [0, inf] (), got nan"."""
    for bad in ("nan", "inf"):
        text = re.sub(rf"\[{key}\]\nvalue = \S+", f"[{key}]\nvalue = {bad}",
                      machine_files()["h100"].read_text())
        assert f"[{key}]\nvalue = {bad}" in text
        path = tmp_path / "bad.toml"
        path.write_text(text)
        with pytest.raises(ws.MachineError) as raised:
            ws.load_machine(path)
        message = str(raised.value)
        assert f"[{key}] value must be a finite number, got {bad}" in message
        assert "()" not in message and "\n" not in message


def test_a_plateau_above_the_data_sheet_peak_is_refused(tmp_path):
    text = re.sub(r"\[latency.dram_bw_write\]\nvalue = \S+",
                  "[latency.dram_bw_write]\nvalue = 3549", machine_files()["h100"].read_text())
    path = tmp_path / "over.toml"
    path.write_text(text)
    with pytest.raises(ws.MachineError, match=r"\[latency.dram_bw_write\] 3549 GB/s is above "
                                               r"\[dram_peak\] 3350 GB/s"):
        ws.load_machine(path)
