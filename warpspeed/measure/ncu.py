"""Nsight Compute (``ncu``) counters: the command that collects them and the
parser of its CSV output (MODEL.md §9, "what measured means").

Everything here is pure and needs neither a GPU nor ``ncu``; the harness in
:mod:`warpspeed.measure` runs the command on a GPU machine.

The counters of MODEL.md §9, and a few more that explain a measurement:

=================================================  ===========  =============================
counter                                            base unit    becomes (per lattice update)
=================================================  ===========  =============================
``dram__bytes_read.sum``                           byte         ``dram_load``
``dram__bytes_write.sum``                          byte         ``dram_store``
``lts__t_sectors_srcunit_tex_op_read.sum``         sector       ``l2_load`` (x 32 B)
``lts__t_sectors_srcunit_tex_op_write.sum``        sector       ``l2_store`` (x 32 B)
``l1tex__data_pipe_lsu_wavefronts.sum``            (count)      ``l1_wavefronts``
``l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum`` sector       ``l1_load`` (x 32 B)
``gpu__time_duration.sum``                         second       ``ncu_time_s`` (not per Lup)
``sm__cycles_elapsed.avg.per_second``              hz           ``ncu_sm_clock_mhz``
``sm__warps_active.avg.pct_of_peak_sustained_active``  %        ``achieved_occupancy``
``launch__registers_per_thread``                   (count)      ``registers``
=================================================  ===========  =============================

The L2 counters with ``srcunit_tex`` count only the requests of the SMs'
L1/TEX units, not the traffic between the two L2 partitions of A100/H100
(MODEL.md §9).

CSV format (``ncu --csv``). Two layouts exist and both are parsed:

* **long** (the default ``details`` page with ``--metrics``): one row per
  kernel launch and metric, with the header
  ``"ID","Process ID","Process Name","Host Name","Kernel Name","Context",
  "Stream","Block Size","Grid Size","Device","CC","Section Name",
  "Metric Name","Metric Unit","Metric Value"``; older releases have a
  ``"Kernel Time"`` column instead of block, grid, device and CC. The
  section of ``--metrics`` counters is ``"Command line profiler metrics"``.
* **wide** (``--page raw``): one row per launch and one column per metric,
  the second row holding the units (its identifying cells empty).

Lines that are not CSV records of the table (``==PROF==`` progress lines, the
profiled program's own output) are skipped: the table starts at the first
line whose first cell is ``"ID"``. Values may carry thousands separators
(``"1,234,567"``; ncu's en-US formatting, which :func:`ncu_command` makes
sure of by running under ``LC_ALL=C``) and ``"n/a"`` for a counter the GPU
does not support (parsed as ``None``). Units are converted to base units:
``byte`` (decimal prefixes ``Kbyte`` = 10^3 B, ``Mbyte``, ``Gbyte``,
``Tbyte``, as ncu prints them; ``KiB`` ... binary), ``sector``, ``cycle``
and other counts (same decimal prefixes), ``second`` (``nsecond``,
``usecond``, ``msecond``, ``ns``, ``us``, ``ms``), ``hz`` (``Khz``, ``Mhz``,
``Ghz``) and rates ``a/b`` (``cycle/nsecond`` -> cycle/second). The harness
asks for ``--print-units base`` anyway.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from ..errors import WarpspeedError
from ..input.triples import triple_or_none


class NcuError(WarpspeedError, ValueError):
    """``ncu`` output that cannot be parsed (no table, an unknown unit)."""


DRAM_READ = "dram__bytes_read.sum"
DRAM_WRITE = "dram__bytes_write.sum"
L2_READ_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
L2_WRITE_SECTORS = "lts__t_sectors_srcunit_tex_op_write.sum"
L1_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts.sum"
L1_LOAD_SECTORS = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
DURATION = "gpu__time_duration.sum"
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
OCCUPANCY = "sm__warps_active.avg.pct_of_peak_sustained_active"
REGISTERS = "launch__registers_per_thread"

#: The counters the harness collects, in the order of the ``--metrics`` list.
METRICS: tuple[str, ...] = (
    DRAM_READ,
    DRAM_WRITE,
    L2_READ_SECTORS,
    L2_WRITE_SECTORS,
    L1_WAVEFRONTS,
    L1_LOAD_SECTORS,
    DURATION,
    SM_CLOCK,
    OCCUPANCY,
    REGISTERS,
)

SECTOR_BYTES = 32

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
_BINARY = {"kib": 2.0**10, "mib": 2.0**20, "gib": 2.0**30, "tib": 2.0**40}
_TIME = {
    "second": 1.0, "s": 1.0, "sec": 1.0,
    "msecond": 1e-3, "ms": 1e-3, "msec": 1e-3,
    "usecond": 1e-6, "us": 1e-6, "usec": 1e-6,
    "nsecond": 1e-9, "ns": 1e-9, "nsec": 1e-9,
}
_COUNTS = (
    "byte", "sector", "cycle", "wavefront", "request", "inst", "warp", "thread", "block",
    "register", "transaction", "sm", "instruction",
)
_DIMENSIONLESS = ("", "%", "percent", "register/thread", "ratio", "none")


def unit_scale(unit: str) -> tuple[float, str]:
    """The factor that converts a value in ``unit`` to base units, and the
    base unit: ``unit_scale("Kbyte") == (1000.0, "byte")``,
    ``unit_scale("usecond") == (1e-6, "second")``,
    ``unit_scale("cycle/nsecond") == (1e9, "cycle/second")``.

    Raises :class:`NcuError` for a unit it does not know, rather than
    guessing a factor."""
    u = unit.strip()
    low = u.lower()
    if low in _DIMENSIONLESS:
        return 1.0, u
    if low in _BINARY:
        return _BINARY[low], "byte"
    if low in _TIME:
        return _TIME[low], "second"
    if low.endswith("hz") and low[:-2] in _PREFIX:
        return _PREFIX[low[:-2]], "hz"
    if "/" in low:
        num, _, den = u.partition("/")
        f_num, b_num = unit_scale(num)
        f_den, b_den = unit_scale(den)
        return f_num / f_den, f"{b_num}/{b_den}"
    for base in _COUNTS:
        for form in (base, base + "s"):
            if low.endswith(form) and low[: -len(form)] in _PREFIX:
                return _PREFIX[low[: -len(form)]], base
    raise NcuError(f"unknown ncu unit {unit!r}; run ncu with --print-units base")


def parse_number(text: str) -> float | None:
    """A metric value as ncu prints it: ``"1,234,567.5"`` -> 1234567.5;
    ``"n/a"`` and empty cells -> ``None``."""
    t = text.strip().replace(",", "").replace("\u202f", "").replace(" ", "")
    if t.lower() in ("", "n/a", "nan", "-"):
        return None
    try:
        return float(t)
    except ValueError as exc:
        raise NcuError(f"not a number in ncu output: {text!r}") from exc


def parse_value(text: str, unit: str) -> float | None:
    """``text`` in ``unit`` converted to base units (see :func:`unit_scale`)."""
    v = parse_number(text)
    return None if v is None else v * unit_scale(unit)[0]


@dataclass(frozen=True)
class KernelMetrics:
    """The counters of one profiled kernel launch, in base units
    (``units`` names them); ``None`` where ncu printed ``n/a``."""

    id: int
    kernel: str
    block: tuple[int, int, int] | None
    grid: tuple[int, int, int] | None
    values: Mapping[str, float | None]
    units: Mapping[str, str]

    def get(self, metric: str) -> float | None:
        return self.values.get(metric)


def _table(text: str) -> list[list[str]]:
    """The CSV records from the first ``"ID"`` header on; other lines dropped."""
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.lstrip().startswith(('"ID"', "ID,"))), None
    )
    if start is None:
        raise NcuError("no ncu CSV table found (no header line starting with \"ID\")")
    table = [ln for ln in lines[start:] if ln.strip() and not ln.startswith("==")]
    return [row for row in csv.reader(io.StringIO("\n".join(table)))]


def parse_csv(text: str) -> list[KernelMetrics]:
    """Every kernel launch in ``ncu --csv`` output, in profiling order (by
    ``ID``). Accepts the long and the wide layout (module docstring)."""
    rows = _table(text)
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in enumerate(header)}
    if "Metric Name" in col:
        return _parse_long(rows[1:], col)
    return _parse_wide(rows[1:], header, col)


def _cell(row: Sequence[str], col: Mapping[str, int], name: str) -> str:
    i = col.get(name)
    return row[i] if i is not None and i < len(row) else ""


class _Launch(TypedDict):
    """One launch's rows of a long-format CSV as they are read (:class:`KernelMetrics`)."""

    kernel: str
    block: tuple[int, int, int] | None
    grid: tuple[int, int, int] | None
    values: dict[str, float | None]
    units: dict[str, str]


def _parse_long(rows: list[list[str]], col: dict[str, int]) -> list[KernelMetrics]:
    for need in ("ID", "Metric Unit", "Metric Value"):
        if need not in col:
            raise NcuError(f"ncu CSV header lacks the column {need!r}")
    launches: dict[int, _Launch] = {}
    for row in rows:
        try:
            lid = int(_cell(row, col, "ID").replace(",", ""))
        except ValueError:
            continue
        entry = launches.setdefault(
            lid,
            {
                "kernel": _cell(row, col, "Kernel Name"),
                "block": triple_or_none(_cell(row, col, "Block Size")),
                "grid": triple_or_none(_cell(row, col, "Grid Size")),
                "values": {},
                "units": {},
            },
        )
        name = _cell(row, col, "Metric Name").strip()
        values, units = entry["values"], entry["units"]
        if not name or name in values:  # a metric shown in two sections: keep the first
            continue
        unit = _cell(row, col, "Metric Unit")
        values[name] = parse_value(_cell(row, col, "Metric Value"), unit)
        units[name] = unit_scale(unit)[1]
    return [
        KernelMetrics(id=lid, **e)
        for lid, e in sorted(launches.items())
    ]


def _parse_wide(
    rows: list[list[str]], header: list[str], col: dict[str, int]
) -> list[KernelMetrics]:
    metric_cols = [(i, h) for i, h in enumerate(header) if "__" in h]
    if not metric_cols:
        raise NcuError("ncu CSV has neither a 'Metric Name' column nor metric columns")
    unit_of = {h: "" for _, h in metric_cols}
    out = []
    for row in rows:
        ident = _cell(row, col, "ID").strip()
        if not ident:  # the units row of the raw page
            unit_of = {h: (row[i] if i < len(row) else "") for i, h in metric_cols}
            continue
        try:
            lid = int(ident.replace(",", ""))
        except ValueError:
            continue
        out.append(
            KernelMetrics(
                id=lid,
                kernel=_cell(row, col, "Kernel Name"),
                block=triple_or_none(_cell(row, col, "Block Size")),
                grid=triple_or_none(_cell(row, col, "Grid Size")),
                values={h: parse_value(row[i] if i < len(row) else "", unit_of[h])
                        for i, h in metric_cols},
                units={h: unit_scale(unit_of[h])[1] for _, h in metric_cols},
            )
        )
    return sorted(out, key=lambda k: k.id)


def ncu_command(
    program: Sequence[str],
    kernel_regex: str,
    *,
    metrics: Sequence[str] = METRICS,
    ncu: str = "ncu",
    launch_skip: int = 0,
    launch_count: int | None = None,
    cache_control: str = "all",
    clock_control: str = "none",
) -> list[str]:
    """The ``ncu`` command line that profiles ``program`` (argv of the
    profiled process) and prints the counters as CSV (MODEL.md §9).

    ``kernel_regex`` selects the measured kernel by function name (other
    kernels of the process, e.g. CuPy's random fill, are not profiled).
    ``cache_control="all"`` flushes the caches before every profiled launch
    (and replay pass), so that every launch starts cold and the counts do
    not depend on what ran before. ``clock_control="none"`` leaves the clocks
    alone (counts do not depend on them; "base" would lock them to base).
    Run it under ``LC_ALL=C`` so that numbers are formatted en-US."""
    if cache_control not in ("all", "none"):
        raise ValueError(f"cache_control must be 'all' or 'none', got {cache_control!r}")
    if clock_control not in ("base", "none"):
        raise ValueError(f"clock_control must be 'base' or 'none', got {clock_control!r}")
    cmd = [
        ncu,
        "--csv",
        "--print-units", "base",
        "--target-processes", "all",
        "--cache-control", cache_control,
        "--clock-control", clock_control,
        "--kernel-name", f"regex:{kernel_regex}",
        "--metrics", ",".join(metrics),
    ]
    if launch_skip:
        cmd += ["--launch-skip", str(int(launch_skip))]
    if launch_count is not None:
        cmd += ["--launch-count", str(int(launch_count))]
    return cmd + list(program)


def parse_version(text: str) -> str:
    """The version of ``ncu --version`` output (its ``Version X`` line), or
    the stripped last line when there is none."""
    m = re.search(r"Version\s+([0-9][0-9A-Za-z.\-]*)", text)
    if m:
        return m.group(1)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


__all__ = [
    "DRAM_READ",
    "DRAM_WRITE",
    "DURATION",
    "L1_LOAD_SECTORS",
    "L1_WAVEFRONTS",
    "L2_READ_SECTORS",
    "L2_WRITE_SECTORS",
    "METRICS",
    "OCCUPANCY",
    "REGISTERS",
    "SECTOR_BYTES",
    "SM_CLOCK",
    "KernelMetrics",
    "NcuError",
    "ncu_command",
    "parse_csv",
    "parse_number",
    "parse_value",
    "parse_version",
    "unit_scale",
]
