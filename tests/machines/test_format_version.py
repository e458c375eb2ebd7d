"""``format_version`` of machine and capacity-curve files (MODEL.md §7, §12):
a file without it is read as version 1, a version the loader does not know is
refused in one line naming the file, the version and the versions it reads,
and the writers write it. The files here are written by hand."""

import tomllib
from pathlib import Path

import pytest

import warpspeed as ws
from warpspeed.validation.calibrate import toml_text

#: A paper-model machine file, every number by hand (MODEL.md §12).
MACHINE = """\
name = "Hand"
description = "a machine written by hand"
fits = "paper"

[sms]
value = 10
source = "by hand"
[clock_ghz]
value = 1.5
source = "by hand"
[l1_bytes]
value = 131072
source = "by hand"
[l2_bytes]
value = 4194304
source = "by hand"
[dram_bandwidth]
value = 500
source = "by hand"
[l2_bandwidth]
value = 2000
source = "by hand"
[fp64_fma_per_sm_cycle]
value = 32
source = "by hand"
[warp_size]
value = 32
source = "by hand"
[max_threads_per_sm]
value = 2048
source = "by hand"
[max_blocks_per_sm]
value = 32
source = "by hand"
[registers_per_sm]
value = 65536
source = "by hand"
[register_alloc_unit]
value = 256
source = "by hand"
[max_threads_per_block]
value = 1024
source = "by hand"
[shared_memory_per_sm]
value = 167936
source = "by hand"
[shared_memory_per_block]
value = 49152
source = "by hand"
"""

#: The five curves of MODEL.md §7, constants by hand.
FITS = """\
source = "by hand"

[m1]
a = 0.5
b = 4.0
c = 0.25
[h_xy]
a = 1.0
b = 0.5
c = -1.0
x0 = 0.2
[h_z]
a = 1.0
b = 0.25
c = -2.0
[s]
a = 1.0
b = 0.5
c = -0.5
complement = true
[m2]
a = 0.5
b = 8.0
c = 2.0
"""


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("head", ["", "format_version = 1\n"])
def test_a_machine_file_with_or_without_format_version_is_read_as_version_1(
        head: str, tmp_path: Path) -> None:
    m = ws.load_machine(_write(tmp_path, "hand.toml", head + MACHINE))
    assert (m.name, m.sms, m.clock_ghz, m.l2_bytes, m.dram_bandwidth) == (
        "Hand", 10, 1.5, 4194304, 500.0)


@pytest.mark.parametrize("version, shown", [("3", "3"), ("0", "0"), ('"1"', "'1'"),
                                            ("true", "True"), ("1.0", "1.0")])
def test_a_machine_file_of_an_unknown_format_version_is_refused_in_one_line(
        version: str, shown: str, tmp_path: Path) -> None:
    path = _write(tmp_path, "future.toml", f"format_version = {version}\n" + MACHINE)
    with pytest.raises(ws.MachineError) as err:
        ws.load_machine(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    assert f"format_version {shown} " in message
    assert message.endswith("(it reads 1, 2)")


@pytest.mark.parametrize("head", ["", "format_version = 1\n"])
def test_a_fits_file_with_or_without_format_version_is_read_as_version_1(
        head: str, tmp_path: Path) -> None:
    fits = ws.load_fits(_write(tmp_path, "hand.toml", head + FITS))
    assert (fits.m1.a, fits.h_xy.x0, fits.s.complement, fits.m2.b) == (0.5, 0.2, True, 8.0)
    assert fits.source == "by hand"


def test_a_fits_file_of_an_unknown_format_version_is_refused_in_one_line(
        tmp_path: Path) -> None:
    path = _write(tmp_path, "future.toml", "format_version = 2\n" + FITS)
    with pytest.raises(ws.FitError) as err:
        ws.load_fits(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message and "format_version 2 " in message
    assert message.endswith("(it reads 1)")


def test_every_shipped_machine_file_has_format_version_2_and_fits_file_1_first() -> None:
    root = Path(ws.__file__).parent
    machines = [*(root / "machines").glob("*.toml"), *(root / "machines" / "base").glob("*.toml")]
    fits = [*(root.parent / "fits").glob("*.toml")]
    assert len(machines) > 30 and fits
    for path, version in [*((p, 2) for p in machines), *((p, 1) for p in fits)]:
        data = tomllib.loads(path.read_text())
        assert next(iter(data)) == "format_version" and data["format_version"] == version, path


def test_the_machine_writer_writes_format_version_first(tmp_path: Path) -> None:
    data = tomllib.loads(MACHINE)
    text = toml_text(data, "a header")
    assert text.splitlines()[:4] == ["# a header", "", "format_version = 2", 'name = "Hand"']
    path = _write(tmp_path, "written.toml", text)
    assert ws.load_machine(path).name == "Hand"
