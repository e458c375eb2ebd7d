"""GPU descriptions, loaded from TOML data files (MODEL.md §2).

A machine file holds one table per fact of the GPU with its value and its
source, and one table per timing model (``[latency.KEY]``, each entry again
with ``value`` and ``source``), which the loader keeps as written for the
models to check (:mod:`warpspeed.machine_format`, :mod:`warpspeed.timing.tables`)::

    format_version = 2        # the file's format (optional: a file without it is 1)
    name = "A100"
    validated = true
    description = "NVIDIA A100 SXM4 40GB"
    fits = "paper"            # a file in fits/ (without .toml) or a path
    arch = "sm_80"            # nvcc -arch for register counts (optional)
    vendor = "NVIDIA"         # or "AMD" (optional, default NVIDIA)
    architecture = "Ampere"   # optional, derived from arch on NVIDIA
    family = "nvidia"         # optional: a GPU family (warpspeed.family) or a
                              # .toml file of one; default: the one of architecture
    grounding = "kernels"     # or "micro-benchmarks", "datasheet" (optional)

    [sms]
    value = 108
    source = "paper Table 1"

    [latency.dram_latency_ns]
    value = 406.6
    source = "latency/a100_40.csv: the DRAM plateau"

Built-in machines live in ``warpspeed/machines``; :func:`load_machine` also
accepts a path to a user's own file.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypedDict

from .errors import MachineError
from .family import L1_MODELS, Family, architecture_of, check_vendor, check_warp_size, family_for
from .machine_format import FrozenTable, freeze, nest, refuse_v1_keys, thaw
from .tomlfile import read_versioned_toml

MACHINE_DIR = Path(__file__).parent / "machines"


@dataclass(frozen=True)
class Machine:
    """A GPU as the model sees it. Bandwidths in GB/s, sizes in bytes."""

    name: str
    description: str
    validated: bool
    fits: str
    arch: str
    sms: int
    clock_ghz: float
    l1_bytes: int
    l2_bytes: int
    dram_bandwidth: float
    l2_bandwidth: float
    fp64_fma_per_sm_cycle: int
    warp_size: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    register_alloc_unit: int
    max_threads_per_block: int
    shared_memory_per_sm: int
    shared_memory_per_block: int
    sources: tuple[tuple[str, str], ...]
    path: str
    #: The GPU family's capabilities (warpspeed.family; MODEL.md §12).
    family: Family
    # What the file describes and what grounds its numbers (MODEL.md §12).
    vendor: str = "NVIDIA"
    architecture: str = ""
    grounding: str = "datasheet"
    #: The L1 count (MODEL.md §4, §15): NVIDIA's half warps and banks, or one
    #: cache line per clock (AMD's vL1D and vector L0); the family's.
    l1_model: str = "halfwarp"
    # The memory hierarchy's granules and the AMD levels (MODEL.md §15); the
    # defaults are NVIDIA's, so files without these tables describe an NVIDIA GPU.
    l1_sector_bytes: int = 32
    l1_line_bytes: int = 128
    simds_per_sm: int = 1
    #: Partitions of the data sheet's L2, each seen by its own SMs (A100, H100: two
    #: halves; MI300X: one L2 per XCD): ``l2_bytes`` is one of them (MODEL.md §12).
    l2_partitions: int = 1
    mall_bytes: int = 0
    mall_bandwidth: float = 0.0
    # Lanes whose addresses the L1 takes per clock (MODEL.md §15): a wavefront
    # instruction costs at least warp_size / this many cycles, idle lanes
    # included (CDNA: 16; 0: no such floor, NVIDIA's counts of §4).
    l1_lanes_per_cycle: int = 0
    # The memory system as its data sheet describes it (MODEL.md §11 "Memory
    # systems", §12): the DRAM's peak bandwidth, its kind and whether ECC is on.
    # A file without them gets no memory-system term.
    dram_peak: float | None = None
    dram_bus_bits: int | None = None
    # The GPU's memory in GiB (the data sheet's largest variant): a kernel whose
    # fields need more cannot run there (MODEL.md §3). None: not checked.
    memory_gib: float | None = None
    memory: str = ""
    ecc: bool = False
    #: The timing models' own tables, as the file wrote them (MODEL.md §12; the
    #: models read and check them: :mod:`warpspeed.timing.tables`).
    tables: tuple[tuple[str, FrozenTable], ...] = ()
    #: ``[dram_bandwidth]``'s ``value / stream_reference`` (1: no reference): the
    #: factor of a user's edit that every DRAM figure of a timing table follows.
    stream_scale: float = 1.0
    #: The factor on the DRAM's bandwidths of this prediction (MODEL.md §15: a
    #: last-level cache serving the DRAM volume; 1 for a machine as loaded).
    dram_scale: float = 1.0

    def source(self, parameter: str) -> str:
        """Where the value of ``parameter`` comes from."""
        return dict(self.sources)[parameter]

    def table(self, name: str) -> dict[str, dict[str, Any]] | None:
        """The timing table ``[name]`` as the file wrote it, None without one."""
        found = dict(self.tables).get(name)
        return None if found is None else thaw(found)


_TEXT = ("name", "description", "validated", "fits", "arch", "sources", "path", "family",
         "vendor", "architecture", "grounding", "l1_model", "memory", "ecc", "tables",
         "stream_scale", "dram_scale")
#: Plain keys of a machine file (MODEL.md §12).
PLAIN_KEYS = ("format_version", "name", "description", "validated", "fits", "arch", "vendor",
              "architecture", "family", "grounding", "l1_model")
#: How a file's numbers are grounded, strongest first (MODEL.md §12): checked against
#: kernel measurements, calibrated on micro-benchmark tables of this GPU, or data
#: sheets only (figures of a related GPU's tables carried over count as data sheet).
GROUNDINGS = ("kernels", "micro-benchmarks", "datasheet")
#: The versions of the machine-file format this loader reads (MODEL.md §12); a file
#: without ``format_version`` (written before the key existed) is read as version 1.
FORMAT_VERSIONS = (1, 2)
#: The version the writers write (``warpspeed machines calibrate`` and ``new``): the
#: timing models' parameters in their own tables (:mod:`warpspeed.machine_format`).
FORMAT_VERSION = FORMAT_VERSIONS[-1]
#: Optional facts of the data sheet: the DRAM's peak and bus, the GPU's memory.
OPTIONAL_PARAMETERS = {"dram_peak": "float", "dram_bus_bits": "int", "memory_gib": "float"}
#: Parameters of the memory hierarchy with NVIDIA defaults (MODEL.md §15): the L1
#: sector and line (32 B, 128 B), SIMDs per SM/CU sharing its register file (1: one
#: pool), the last-level cache behind the L2 (AMD Infinity Cache / MALL; 0: none),
#: and the L1's address rate in lanes per clock (0: no floor).
ARCH_PARAMETERS = {f.name: f.type for f in fields(Machine)
                   if f.name in ("l1_sector_bytes", "l1_line_bytes", "simds_per_sm",
                                 "l2_partitions", "mall_bytes", "mall_bandwidth",
                                 "l1_lanes_per_cycle")}
#: The kinds of DRAM a file may name in ``[memory]`` (MODEL.md §11, "Memory systems").
MEMORY_TYPES = ("GDDR5", "GDDR5X", "GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3",
                "HBM3e", "LPDDR5", "LPDDR5X")
#: Tables of the memory system whose value is not a number: ``[memory]`` (a name of
#: :data:`MEMORY_TYPES`) and ``[ecc]`` (true or false), each with its source.
MEMORY_SYSTEM = {"memory": "str", "ecc": "bool"}
_NUMERIC = {
    f.name: f.type
    for f in fields(Machine)
    if f.name not in _TEXT and f.name not in OPTIONAL_PARAMETERS
    and f.name not in ARCH_PARAMETERS
}

#: Parameters every machine file needs (the paper model's), with their types.
REQUIRED_PARAMETERS = dict(_NUMERIC)
#: The numbers and memory system read from a file, by field of
#: :class:`Machine`: each value has its field's type, checked against the tables
#: above as it is read, so the type depends on the key (not expressible here).
_Values = dict[str, Any]


def _parse(path: Path) -> Machine:
    data = read_versioned_toml(path, "machine file", FORMAT_VERSIONS, MachineError)
    if data.get("format_version", 1) == 1:
        data = nest(data)  # machine_format: version 1 kept the timing tables at the top
    else:
        refuse_v1_keys(path, data)
    for key in ("name", "fits"):
        if not isinstance(data.get(key), str):
            raise MachineError(f"machine file {path}: '{key}' must be a string")
    labels = _labels(path, data)
    values: _Values = {}
    sources = []
    for key, typ in {**_NUMERIC, **OPTIONAL_PARAMETERS, **ARCH_PARAMETERS}.items():
        entry = data.get(key)
        if entry is None and (key in OPTIONAL_PARAMETERS or key in ARCH_PARAMETERS):
            continue
        if not isinstance(entry, dict) or "value" not in entry or "source" not in entry:
            raise MachineError(
                f"machine file {path}: missing table [{key}] with 'value' and 'source'"
            )
        values[key] = number(path, key, entry["value"], str(typ), _RANGE.get(key))
        sources.append((key, str(entry["source"])))
    for key, value, source in _memory_system(path, data):
        values[key] = value
        sources.append((key, source))
    tables = _timing_tables(path, data)
    sources += [(f"{t}.{k}", str(dict(e)["source"])) for t, table in tables for k, e in table]
    _check_granules(path, values)
    check_warp_size(f"machine file {path}", labels["family"], int(values["warp_size"]))
    _check_peak(path, values)
    return Machine(
        name=data["name"],
        description=str(data.get("description", "")),
        validated=bool(data.get("validated", False)),
        fits=data["fits"],
        arch=str(data.get("arch", "sm_80")),
        sources=tuple(sources),
        path=str(path),
        tables=tables,
        stream_scale=_stream_scale(path, data.get("dram_bandwidth"), values),
        **labels,
        **values,
    )


def number(path: object, key: str, v: object, typ: str,
           bounds: tuple[float, float, str] | None = None) -> int | float:
    """The ``value`` of table ``[key]``: a finite number, an integer where
    ``typ`` is "int", positive, or within ``bounds`` (low, high, why) where
    given (low 0: zero allowed). One rule for every table of a file, the
    timing tables' included (:mod:`warpspeed.timing.tables`)."""
    low, high, why = bounds or (0.0, math.inf, "")
    zero_ok = bounds is not None and low == 0.0  # otherwise "positive"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        kind = "a number >= 0" if zero_ok else "a positive number"
        raise MachineError(f"machine file {path}: [{key}] value must be {kind}, got {v!r}")
    if not math.isfinite(v):
        raise MachineError(f"machine file {path}: [{key}] value must be a finite number, "
                           f"got {v!r}: give the figure (and its source)")
    if v < 0 or (v == 0 and not zero_ok):
        kind = "a number >= 0" if zero_ok else "a positive number"
        raise MachineError(f"machine file {path}: [{key}] value must be {kind}, got {v!r}")
    if typ == "int" and not isinstance(v, int):
        raise MachineError(f"machine file {path}: [{key}] value must be an integer, got {v!r}")
    if not low <= v <= high:
        reason = f" ({why})" if why else ""
        raise MachineError(f"machine file {path}: [{key}] value must lie in [{low:g}, "
                           f"{high:g}]{reason}, got {v!r}")
    return int(v) if typ == "int" else float(v)


def _timing_tables(path: Path, data: dict[str, Any]) -> tuple[tuple[str, FrozenTable], ...]:
    """The timing models' tables (MODEL.md §12), as written: every other
    top-level table without a ``value``. What they hold the models check
    (:mod:`warpspeed.timing.tables`); another unknown key is refused here."""
    known = (set(_NUMERIC) | set(OPTIONAL_PARAMETERS) | set(ARCH_PARAMETERS)
             | set(MEMORY_SYSTEM) | set(PLAIN_KEYS))
    rest = {k: v for k, v in data.items() if k not in known}
    unknown = [k for k, v in rest.items() if not isinstance(v, dict) or "value" in v]
    if unknown:
        raise MachineError(f"machine file {path}: unknown keys {sorted(unknown)}")
    return tuple((k, freeze(path, k, v)) for k, v in rest.items())


def _memory_system(path: Path, data: dict) -> list[tuple[str, object, str]]:
    """``[memory]`` and ``[ecc]`` of a file (MODEL.md §12): each a table with a
    ``value`` (a kind of :data:`MEMORY_TYPES`; true or false) and a ``source``."""
    out: list[tuple[str, object, str]] = []
    for key, typ in MEMORY_SYSTEM.items():
        entry = data.get(key)
        if entry is None:
            continue
        if not isinstance(entry, dict) or "value" not in entry or "source" not in entry:
            raise MachineError(
                f"machine file {path}: [{key}] must be a table with 'value' and 'source'")
        v = entry["value"]
        if typ == "bool" and not isinstance(v, bool):
            raise MachineError(f"machine file {path}: [ecc] value must be true or false, "
                               f"got {v!r}")
        if typ == "str" and v not in MEMORY_TYPES:
            raise MachineError(f"machine file {path}: [memory] value must be one of "
                               f"{list(MEMORY_TYPES)}, got {v!r}")
        out.append((key, v, str(entry["source"])))
    return out


def _stream_scale(path: Path, entry: object, values: _Values) -> float:
    """One DRAM figure for both models (MODEL.md §12): the paper model reads
    ``dram_bandwidth``, the default model the stream plateaus of its table.
    ``[dram_bandwidth] stream_reference`` is the ``value`` the plateaus were
    measured with; a file whose ``value`` differs from it (a user's edit) has
    them scaled by ``value / stream_reference`` (this factor; 1 without a
    reference), so the figure a user edits moves both models."""
    ref = entry.get("stream_reference") if isinstance(entry, dict) else None
    if ref is None:
        return 1.0
    if isinstance(ref, bool) or not isinstance(ref, (int, float)) or not 0 < ref < math.inf:
        raise MachineError(f"machine file {path}: [dram_bandwidth] stream_reference must be a "
                           f"positive number (GB/s), got {ref!r}")
    return float(values["dram_bandwidth"]) / float(ref)


def _check_granules(path: Path, values: _Values) -> None:
    """The L1 sector divides the line and both are powers of two; a last-level
    cache has both its size and its bandwidth (MODEL.md §15)."""
    sector = int(values.get("l1_sector_bytes", 32))
    line = int(values.get("l1_line_bytes", 128))
    if sector & (sector - 1) or line & (line - 1) or line % sector:
        raise MachineError(f"machine file {path}: [l1_sector_bytes] ({sector}) and "
                           f"[l1_line_bytes] ({line}) must be powers of two, the sector "
                           "no larger than the line")
    if ("mall_bytes" in values) != ("mall_bandwidth" in values) or (
            bool(values.get("mall_bytes")) != bool(values.get("mall_bandwidth"))):
        raise MachineError(f"machine file {path}: give [mall_bytes] and [mall_bandwidth] "
                           "together, both 0 or both positive (the last-level cache's size "
                           "and bandwidth)")


class _Labels(TypedDict):
    """The labels of a file (:func:`_labels`), as :class:`Machine` takes them."""

    vendor: str
    architecture: str
    grounding: str
    l1_model: str
    family: Family


def _labels(path: Path, data: dict[str, Any]) -> _Labels:
    """``vendor``, ``architecture``, ``grounding`` and the GPU family of a file
    (MODEL.md §12), with the defaults of files written before they existed:
    NVIDIA, the architecture of ``arch`` and its family, and "kernels" if
    ``validated`` else "datasheet"; ``l1_model`` is the family's (a file that
    names another is refused)."""
    for key in ("vendor", "architecture", "grounding", "arch", "description", "l1_model",
                "family"):
        if key in data and not isinstance(data[key], str):
            raise MachineError(f"machine file {path}: '{key}' must be a string")
    vendor = data.get("vendor", "NVIDIA")
    check_vendor(f"machine file {path}", vendor)
    arch = data.get("arch", "sm_80")
    architecture = data.get("architecture") or architecture_of(vendor, arch)
    if not architecture:
        raise MachineError(f"machine file {path}: add architecture = \"...\" (e.g. \"CDNA2\"); "
                           f"it cannot be derived from arch = {arch!r}")
    validated = bool(data.get("validated", False))
    grounding = data.get("grounding", "kernels" if validated else "datasheet")
    if grounding not in GROUNDINGS:
        raise MachineError(f"machine file {path}: grounding must be one of {list(GROUNDINGS)}, "
                           f"got {grounding!r}")
    if validated and grounding != "kernels":
        raise MachineError(f"machine file {path}: validated = true needs grounding = "
                           f"\"kernels\" (checked against kernel measurements), got {grounding!r}")
    family = family_for(f"machine file {path}", vendor, architecture, data.get("family"),
                        path.parent)
    l1_model = data.get("l1_model", family.l1_model)
    if l1_model not in L1_MODELS:
        raise MachineError(f"machine file {path}: l1_model must be one of {list(L1_MODELS)}, "
                           f"got {l1_model!r}")
    if l1_model != family.l1_model:
        raise MachineError(f"machine file {path}: l1_model {l1_model!r}, but the {family.name} "
                           f"family counts the L1 as {family.l1_model!r}: delete the key")
    return {"vendor": vendor, "architecture": architecture, "grounding": grounding,
            "l1_model": l1_model, "family": family}


#: Ranges narrower than "positive", with the reason given in the error.
_RANGE: dict[str, tuple[float, float, str]] = {
    "mall_bytes": (0.0, math.inf, "0: no last-level cache behind the L2"),
    "mall_bandwidth": (0.0, math.inf, "0 with mall_bytes 0: no last-level cache"),
    "l1_lanes_per_cycle": (0.0, 1024.0, "0: no floor (NVIDIA's counts of MODEL.md §4)"),
}


def _check_peak(path: Path, values: dict[str, Any]) -> None:
    """No achievable DRAM figure above the data sheet's peak (issue 46: an
    edited figure; the timing tables' figures are their models' to check)."""
    peak = values.get("dram_peak")
    if not peak:
        return
    v = values["dram_bandwidth"]
    if v > peak * (1 + 1e-9):
        raise MachineError(
            f"machine file {path}: [dram_bandwidth] {v:g} GB/s is above [dram_peak] {peak:g} "
            "GB/s, the data sheet's peak: no memory reaches more; lower it or correct the peak")


def machine_files() -> dict[str, Path]:
    """Built-in machine files by lower-case name."""
    return dict(_machine_files(MACHINE_DIR, MACHINE_DIR.stat().st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _machine_files(folder: Path, stamp: int) -> tuple[tuple[str, Path], ...]:
    """The ``*.toml`` files of ``folder`` by lower-case name, listed again
    when the folder's time stamp ``stamp`` changes (a file added or
    removed)."""
    return tuple((p.stem.lower(), p) for p in sorted(folder.glob("*.toml")))


def machines() -> list[str]:
    """Names of the built-in machines."""
    return [load_machine(p).name for p in machine_files().values()]


def load_machine(name_or_path: str | Path | Machine) -> Machine:
    """A built-in machine by name (case-insensitive) or a machine file by path,
    its GPU facts checked; its timing tables are the timing models' to check
    (:func:`warpspeed.load_machine` does both, and every prediction checks
    them), so this loader imports no model code (MODEL.md §12). Anything
    else (another type, an empty or unknown name, a name too long for a
    file) is a :class:`MachineError` that lists the built-in machines."""
    if isinstance(name_or_path, Machine):
        return name_or_path
    files = machine_files()
    if not isinstance(name_or_path, (str, os.PathLike)):
        raise MachineError(
            f"a machine is a built-in name ({_known(files)}), the path of a .toml machine "
            f"file or a warpspeed Machine; got a {type(name_or_path).__name__}"
        )
    text = os.fspath(name_or_path)
    if not text.strip():
        raise MachineError(f"the machine is empty; known machines: {_known(files)} (or a path "
                           "to a .toml file)")
    if text.lower() in files:
        return _parse(files[text.lower()])
    try:
        path = _machine_file(Path(text))
    except OSError as exc:  # a name no file system takes (too long, ...)
        raise MachineError(f"unknown machine {_short(text)!r} ({exc.strerror}); known "
                           f"machines: {_known(files)} (or a path to a .toml file)") from None
    if path is not None:
        return _parse(path)
    raise MachineError(f"unknown machine {_short(text)!r}; known machines: {_known(files)} (or a "
                       "path to a .toml file)")


def _machine_file(path: Path) -> Path | None:
    """``path`` if it names a machine file, None if it names nothing (a
    name to look up); a :class:`MachineError` for a folder or a missing
    ``.toml`` file."""
    if path.suffix != ".toml" and not path.exists():
        return None
    if path.is_dir():
        raise MachineError(f"{path} is a folder, not a machine file: give the path of a "
                           ".toml file (warpspeed machines new ... --out FILE.toml)")
    if not path.is_file():
        raise MachineError(f"machine file {path} does not exist")
    return path


def _known(files: dict[str, Path]) -> str:
    """The built-in machines' names, for messages."""
    return ", ".join(load_machine(p).name for p in files.values())


def _short(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters for a message."""
    return text if len(text) <= limit else text[:limit] + "..."


def parameter_range(key: str) -> tuple[float, float]:
    """The values a machine file may give parameter ``key`` (the loader's
    check): ``(0, inf)`` unless narrower."""
    low, high, _ = _RANGE.get(key, (0.0, math.inf, ""))
    return low, high
