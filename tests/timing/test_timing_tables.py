"""Each timing model's own table of a machine file (MODEL.md §12): a new
timing term needs its table, its dataclass and its registration, and no
change to the loader; files of format 1 still load."""

from __future__ import annotations

import dataclasses
import math
import tomllib
from pathlib import Path

import pytest

import warpspeed as ws
from stencils.star3d_by_hand import kernel as star
from warpspeed import timing
from warpspeed.input.kernel import Kernel
from warpspeed.machine import Machine, machine_files
from warpspeed.machine_format import V1_TABLES
from warpspeed.timing import tables
from warpspeed.timing.base import Limiter
from warpspeed.timing.latency_parameters import require
from warpspeed.timing.tables import ParameterTable, bounds
from warpspeed.validation.calibrate import toml_text
from warpspeed.volumes.launch import Launch


@dataclasses.dataclass(frozen=True)
class PageParameters:
    """A throwaway term's table: pages the TLB reaches and what a miss costs."""

    reach_pages: int
    miss_ns: float = dataclasses.field(metadata=bounds(0.0, 1000.0, "a miss, in ns"))


PAGES = ParameterTable("pages", PageParameters, "the page term; add [pages.KEY]")


@dataclasses.dataclass(frozen=True)
class PageLimit(Limiter):
    """The throwaway term, one place: GLup/s that the TLB misses allow."""

    def limit(self, kernel: Kernel, machine: Machine,
              launch: Launch) -> tuple[float, dict[str, float]] | None:
        p = tables.read(machine, PAGES)
        if p is None:
            return None
        pages = math.prod(kernel.domain) * 16 / 2**21  # two fields of doubles
        ns = p.miss_ns / 1000 * max(0.0, 1.0 - p.reach_pages / pages)  # per update
        return 1.0 / max(ns, 1e-12), {"t_pages_ns": ns}


def _with_pages(tmp_path: Path, reach: str, miss: str = "400") -> Path:
    text = machine_files()["v100"].read_text()
    path = tmp_path / "pages.toml"
    path.write_text(text + f'\n[pages.reach_pages]\nvalue = {reach}\nsource = "a test"\n'
                    f'\n[pages.miss_ns]\nvalue = {miss}\nsource = "a test"\n')
    return path


def test_a_new_timing_term_needs_its_table_and_registration_only(tmp_path, monkeypatch):
    path = _with_pages(tmp_path, "2")
    k = star(radius=1, shape=(256, 256, 256))
    with pytest.raises(ws.MachineError, match=r"unknown table \[pages\]; the timing tables are "
                                              r"\[latency\], \[atomics\]"):
        ws.predict(k, path, (64, 4, 1))
    monkeypatch.setitem(timing.SHARED_LIMITERS, "pages", PageLimit("pages", PAGES))
    p = ws.predict(k, path, (64, 4, 1))
    plain = ws.predict(k, "V100", (64, 4, 1))
    assert p.limiter == "pages" and p.glups < plain.glups and p.terms["t_pages_ns"] > 0
    assert ws.predict(k, "V100", (64, 4, 1)).glups == plain.glups  # no table, no term
    assert ws.load_machine(path).source("pages.miss_ns") == "a test"
    # the model's dataclass checks the table, naming file, table and key
    with pytest.raises(ws.MachineError, match=r"pages.toml: \[pages.reach_pages\] value must "
                                              r"be an integer, got 2.5"):
        ws.load_machine(_with_pages(tmp_path, "2.5"))
    with pytest.raises(ws.MachineError, match=r"\[pages.miss_ns\] value must lie in \[0, 1000\]"):
        ws.load_machine(_with_pages(tmp_path, "2", "5000"))


def test_a_format_1_file_loads_with_the_same_parameters(tmp_path):
    for name, path in machine_files().items():
        new = ws.load_machine(path)
        old = tmp_path / f"{name}.toml"
        old.write_text(_as_format_1(toml_text(tomllib.loads(path.read_text()))))
        m = ws.load_machine(old)
        assert "format_version = 1" in old.read_text() and "[latency." not in old.read_text()
        assert require(m) == require(new), name
        assert m.table("atomics") == new.table("atomics"), name


def _as_format_1(text: str) -> str:
    """A file as format 1 wrote it: every timing table's entry at the top level."""
    text = text.replace("format_version = 2", "format_version = 1")
    for key, (table, name) in V1_TABLES.items():
        text = text.replace(f"[{table}.{name}]\n", f"[{key}]\n")
    return text


def test_a_format_1_key_in_a_format_2_file_names_its_table(tmp_path):
    text = machine_files()["v100"].read_text().replace("[latency.turnover_ns]",
                                                        "[turnover_ns]")
    (tmp_path / "m.toml").write_text(text)
    with pytest.raises(ws.MachineError, match=r"\[turnover_ns\] belongs to the \[latency\] "
                                              r"table since format_version 2: write it as "
                                              r"\[latency.turnover_ns\]"):
        ws.load_machine(tmp_path / "m.toml")


def test_a_table_key_the_model_does_not_read_is_named(tmp_path):
    text = (machine_files()["v100"].read_text()
            + '\n[latency.dram_bw_raed]\nvalue = 1\nsource = "x"\n')
    (tmp_path / "m.toml").write_text(text)
    with pytest.raises(ws.MachineError, match=r"\[latency\] has unknown keys \['dram_bw_raed'\]"):
        ws.load_machine(tmp_path / "m.toml")


def test_a_missing_parameter_names_the_table_and_the_fix(tmp_path):
    k = star(radius=1, shape=(64, 64, 64))
    path = tmp_path / "lacks.toml"
    full = machine_files()["v100"].read_text()
    head, _, tail = full.partition("[latency.turnover_ns]")
    path.write_text(head + tail[tail.index("\n[") + 1:])
    with pytest.raises(ws.MachineError, match=r"lacks \[latency.turnover_ns\], needed by the "
                                              r"default 'latency' model"):
        ws.predict(k, path, (64, 4, 1))
    assert ws.predict(k, path, (64, 4, 1), model="paper").glups > 0
