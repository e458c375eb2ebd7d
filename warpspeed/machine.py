"""GPU descriptions, loaded from TOML data files (MODEL.md §2).

A machine file holds one table per parameter with its value and its source::

    format_version = 1        # the file's format (optional: a file without it is 1)
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

Built-in machines live in ``warpspeed/machines``; :func:`load_machine` also
accepts a path to a user's own file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypedDict

from .errors import MachineError
from .family import L1_MODELS, Family, architecture_of, check_vendor, check_warp_size, family_for
from .fpclasses import FP_CLASSES
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
    # Parameters of the default timing model (warpspeed.timing.latency);
    # None when a user's file lacks them (the paper model does not need them).
    fp32_fma_per_sm_cycle: int | None = None
    dram_latency_ns: float | None = None
    l2_latency_ns: float | None = None
    dram_bw_read: float | None = None
    dram_bw_copy: float | None = None
    dram_bw_write: float | None = None
    memory_shape: float | None = None
    turnover_ns: float | None = None
    overlap_exponent: float | None = None
    fp_overlap_exponent: float | None = None
    launch_overhead_us: float | None = None
    fp64_cost: tuple[tuple[str, float], ...] = ()
    fp32_cost: tuple[tuple[str, float], ...] = ()
    # Atomics to one address per core clock (warpspeed.input.atomics, the reduction
    # limiter); None when a user's file lacks it (kernels without atomics).
    atomics_per_clock: float | None = None
    # The DRAM's bandwidth with many concurrent streams over the read plateau
    # (MODEL.md §11, many streams); None: not measured, no correction.
    dram_scattered_fraction: float | None = None
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
    # One launch timed alone (CUDA events around the host's launch call), for an
    # empty kernel: what a small launch costs as the measurement harness times it
    # (MODEL.md §11, "Waves and launch"). None: the back-to-back launch overhead.
    launch_latency_us: float | None = None
    memory: str = ""
    ecc: bool = False

    def source(self, parameter: str) -> str:
        """Where the value of ``parameter`` comes from."""
        return dict(self.sources)[parameter]


_TEXT = ("name", "description", "validated", "fits", "arch", "sources", "path", "family",
         "vendor", "architecture", "grounding", "l1_model", "memory", "ecc")
#: Plain keys of a machine file (MODEL.md §12).
PLAIN_KEYS = ("format_version", "name", "description", "validated", "fits", "arch", "vendor",
              "architecture", "family", "grounding", "l1_model")
#: How a file's numbers are grounded, strongest first (MODEL.md §12): checked against
#: kernel measurements, calibrated on micro-benchmark tables of this GPU, or data
#: sheets only (figures of a related GPU's tables carried over count as data sheet).
GROUNDINGS = ("kernels", "micro-benchmarks", "datasheet")
#: The versions of the machine-file format this loader reads (MODEL.md §12); a file
#: without ``format_version`` (written before the key existed) is read as version 1.
FORMAT_VERSIONS = (1,)
#: The version the writers write (``warpspeed machines calibrate`` and ``new``).
FORMAT_VERSION = FORMAT_VERSIONS[-1]
_COSTS = ("fp64_cost", "fp32_cost")
#: Optional parameters: of single constructs (atomics: warpspeed.input.atomics) and of
#: many concurrent DRAM streams (MODEL.md §11); a file without them gets no such term.
OPTIONAL_PARAMETERS = {"atomics_per_clock": "float", "dram_scattered_fraction": "float",
                       "dram_peak": "float", "dram_bus_bits": "int", "memory_gib": "float",
                       "launch_latency_us": "float"}
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
#: Parameters only the default timing model needs, with their types.
LATENCY_PARAMETERS = {
    f.name: f.type.split(" |")[0]
    for f in fields(Machine)
    if f.default is None and f.name not in OPTIONAL_PARAMETERS
}
_NUMERIC = {
    f.name: f.type
    for f in fields(Machine)
    if f.name not in _TEXT + _COSTS and f.name not in LATENCY_PARAMETERS
    and f.name not in OPTIONAL_PARAMETERS and f.name not in ARCH_PARAMETERS
}

#: Parameters every machine file needs (the paper model's), with their types.
REQUIRED_PARAMETERS = dict(_NUMERIC)
#: The numbers, costs and memory system read from a file, by field of
#: :class:`Machine`: each value has its field's type, checked against the tables
#: above as it is read, so the type depends on the key (not expressible here).
_Values = dict[str, Any]


def _parse(path: Path) -> Machine:
    data = read_versioned_toml(path, "machine file", FORMAT_VERSIONS, MachineError)
    for key in ("name", "fits"):
        if not isinstance(data.get(key), str):
            raise MachineError(f"machine file {path}: '{key}' must be a string")
    labels = _labels(path, data)
    values: _Values = {}
    sources = []
    for key, typ in {**_NUMERIC, **LATENCY_PARAMETERS, **OPTIONAL_PARAMETERS,
                     **ARCH_PARAMETERS}.items():
        entry = data.get(key)
        if entry is None and (key in LATENCY_PARAMETERS or key in OPTIONAL_PARAMETERS
                              or key in ARCH_PARAMETERS):
            continue
        if not isinstance(entry, dict) or "value" not in entry or "source" not in entry:
            raise MachineError(
                f"machine file {path}: missing table [{key}] with 'value' and 'source'"
            )
        v = entry["value"]
        low, high, why = _RANGE.get(key, (0.0, math.inf, ""))
        zero_ok = key in _RANGE and low == 0.0  # otherwise "positive"
        number = isinstance(v, (int, float)) and not isinstance(v, bool)
        if number and not math.isfinite(v):
            raise MachineError(f"machine file {path}: [{key}] value must be a finite number, "
                               f"got {v!r}: give the figure (and its source)")
        if not number or v < 0 or (v == 0 and not zero_ok):
            kind = "a number >= 0" if zero_ok else "a positive number"
            raise MachineError(f"machine file {path}: [{key}] value must be {kind}, got {v!r}")
        if typ == "int" and not isinstance(v, int):
            raise MachineError(f"machine file {path}: [{key}] value must be an integer, got {v!r}")
        if not low <= v <= high:
            reason = f" ({why})" if why else ""
            raise MachineError(f"machine file {path}: [{key}] value must lie in [{low:g}, "
                               f"{high:g}]{reason}, got {v!r}")
        values[key] = int(v) if typ == "int" else float(v)
        sources.append((key, str(entry["source"])))
    for key in _COSTS:
        values[key] = _costs(path, key, data.get(key))
    for key, value, source in _memory_system(path, data):
        values[key] = value
        sources.append((key, source))
    unknown = (
        set(data) - set(_NUMERIC) - set(LATENCY_PARAMETERS) - set(_COSTS)
        - set(OPTIONAL_PARAMETERS) - set(ARCH_PARAMETERS) - set(MEMORY_SYSTEM)
        - set(PLAIN_KEYS)
    )
    if unknown & set(_REMOVED):
        raise MachineError(
            f"machine file {path}: {sorted(unknown & set(_REMOVED))} are no longer used: "
            f"{_REMOVED[min(unknown & set(_REMOVED))]}; delete them"
        )
    if unknown:
        raise MachineError(f"machine file {path}: unknown keys {sorted(unknown)}")
    _check_granules(path, values)
    check_warp_size(f"machine file {path}", labels["family"], int(values["warp_size"]))
    _scale_stream(path, data.get("dram_bandwidth"), values)
    _check_peak(path, values)
    return Machine(
        name=data["name"],
        description=str(data.get("description", "")),
        validated=bool(data.get("validated", False)),
        fits=data["fits"],
        arch=str(data.get("arch", "sm_80")),
        sources=tuple(sources),
        path=str(path),
        **labels,
        **values,
    )


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


def _scale_stream(path: Path, entry: object, values: _Values) -> None:
    """One DRAM figure for both models (MODEL.md §12): the paper model reads
    ``dram_bandwidth``, the default model the stream plateaus
    ``dram_bw_read/copy/write``. ``[dram_bandwidth] stream_reference`` is the
    ``value`` the plateaus were measured with; a file whose ``value`` differs
    from it (a user's edit) has the plateaus scaled by ``value /
    stream_reference``, so the figure a user edits moves both models."""
    ref = entry.get("stream_reference") if isinstance(entry, dict) else None
    if ref is None:
        return
    if isinstance(ref, bool) or not isinstance(ref, (int, float)) or not 0 < ref < math.inf:
        raise MachineError(f"machine file {path}: [dram_bandwidth] stream_reference must be a "
                           f"positive number (GB/s), got {ref!r}")
    k = float(values["dram_bandwidth"]) / float(ref)
    for key in ("dram_bw_read", "dram_bw_copy", "dram_bw_write"):
        if key in values:
            values[key] = float(values[key]) * k


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


#: Keys of older machine files, with why they went.
_REMOVED = {
    key: "the default model has no TLB term any more (MODEL.md §11): the fitted reach "
         "matched no documented TLB and made lattice Boltzmann kernels 4x too slow"
    for key in ("tlb_page_bytes", "tlb_reach_pages", "tlb_penalty")
}

#: Ranges narrower than "positive", with the reason given in the error.
_RANGE: dict[str, tuple[float, float, str]] = {
    "overlap_exponent": (1.0, math.inf,
                         "1 adds L1 and memory time, larger values overlap them more"),
    "fp_overlap_exponent": (1.0, math.inf,
                            "1 adds FP and memory time, larger values overlap them more"),
    # 0 is a valid fit: the DRAM latency does not grow with utilisation
    "memory_shape": (0.0, 100.0, "fits/calibrate_memory.py fits it in [0, 3]"),
    "mall_bytes": (0.0, math.inf, "0: no last-level cache behind the L2"),
    "dram_scattered_fraction": (0.2, 1.0, "the l2_cache table's DRAM end over the stream "
                                "table's read plateau, capped at 1"),
    "mall_bandwidth": (0.0, math.inf, "0 with mall_bytes 0: no last-level cache"),
    "l1_lanes_per_cycle": (0.0, 1024.0, "0: no floor (NVIDIA's counts of MODEL.md §4)"),
}


def _check_peak(path: Path, values: dict[str, Any]) -> None:
    """No achievable DRAM figure above the data sheet's peak (issue 46: a
    plateau scaled from another GPU's tables, or an edited figure)."""
    peak = values.get("dram_peak")
    if not peak:
        return
    for key in ("dram_bandwidth", "dram_bw_read", "dram_bw_copy", "dram_bw_write"):
        v = values.get(key)
        if v is not None and v > peak * (1 + 1e-9):
            raise MachineError(
                f"machine file {path}: [{key}] {v:g} GB/s is above [dram_peak] {peak:g} GB/s, "
                "the data sheet's peak: no memory reaches more; lower it or correct the peak")


def _costs(path: Path, key: str, entry: object) -> tuple[tuple[str, float], ...]:
    """A table ``[fp64_cost]`` / ``[fp32_cost]``: FMA issue slots per
    instruction of each FP class but ``fma`` (which costs 1), and a source."""
    if entry is None:
        return ()
    if not isinstance(entry, dict) or not isinstance(entry.get("source"), str):
        raise MachineError(f"machine file {path}: [{key}] must be a table with a 'source'")
    out = []
    for cls, v in entry.items():
        if cls == "source":
            continue
        if cls not in FP_CLASSES or cls == "fma":
            raise MachineError(
                f"machine file {path}: [{key}] has unknown FP class {cls!r}; the classes are "
                f"{[c for c in FP_CLASSES if c != 'fma']}"
            )
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
            raise MachineError(
                f"machine file {path}: [{key}] {cls} must be a positive number of FMA slots, "
                f"got {v!r}"
            )
        out.append((cls, float(v)))
    return tuple(sorted(out))


def machine_files() -> dict[str, Path]:
    """Built-in machine files by lower-case name."""
    return {p.stem.lower(): p for p in sorted(MACHINE_DIR.glob("*.toml"))}


def machines() -> list[str]:
    """Names of the built-in machines."""
    return [load_machine(p).name for p in machine_files().values()]


def load_machine(name_or_path: str | Path | Machine) -> Machine:
    """A built-in machine by name (case-insensitive) or a machine file by path."""
    if isinstance(name_or_path, Machine):
        return name_or_path
    text = str(name_or_path)
    files = machine_files()
    if text.lower() in files:
        return _parse(files[text.lower()])
    path = Path(text)
    if path.suffix == ".toml" or path.exists():
        if path.is_dir():
            raise MachineError(f"{path} is a folder, not a machine file: give the path of a "
                               ".toml file (warpspeed machines new ... --out FILE.toml)")
        if not path.is_file():
            raise MachineError(f"machine file {path} does not exist")
        return _parse(path)
    known = ", ".join(load_machine(p).name for p in files.values())
    raise MachineError(
        f"unknown machine {text!r}; known machines: {known} (or a path to a .toml file)"
    )


def parameter_range(key: str) -> tuple[float, float]:
    """The values a machine file may give parameter ``key`` (the loader's
    check): ``(0, inf)`` unless narrower."""
    low, high, _ = _RANGE.get(key, (0.0, math.inf, ""))
    return low, high
