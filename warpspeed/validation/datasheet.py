"""A GPU from its data sheet in one command (MODEL.md §12, "Your GPU from its
data sheet"): ``warpspeed machines new NAME --like KNOWN --sms N --clock-ghz F
--dram-gbs F --l2-mib F [--llc-mib F] [--l1-kib F] [--ecc on|off] [--arch ISA]
[--register-kib F]``.

The new file is a machine of KNOWN's architecture with the figures a data
sheet gives. Every other number is derived from KNOWN's file by a rule that its
``source`` states:

* **given**: SMs (CUs), boost clock, the DRAM's peak, the L2 (the whole chip's,
  divided by KNOWN's ``l2_partitions``), the last-level cache, the L1, the DRAM
  bus width, the kind of DRAM, ECC, the compiler's target (``arch``: on AMD
  it decides whether AGPRs widen the register budget, MODEL.md §15) and the
  register file per SM / CU, the memory in GiB (never carried over: without
  it a kernel's size is not checked against the GPU's memory);
* **scaled with the DRAM peak**: the stream plateaus of the default model and
  the paper model's DRAM figure (KNOWN's plateaus over KNOWN's peak: the share
  of its peak the memory system reaches, carried over);
* **scaled with SMs x clock**: the L2 bandwidth (bytes per SM and cycle carried
  over); the Infinity Cache's bandwidth scales with its size and the clock;
* **scaled with the register file** (AMD, when it is given): the VGPR
  allocation granule, as LLVM keeps the number of granules per SIMD
  (gfx1100: 24 VGPRs of 1536, gfx1102: 16 of 1024);
* **carried over unchanged**: latencies (ns), thread turnover, the
  latency-under-load shape, the overlap exponents, the launch overhead, the
  many-stream fraction, FP rates per SM and cycle, occupancy limits, FP costs,
  atomics, cache granules and the L1 count, the kind of DRAM.

The file says ``validated = false`` and ``grounding = "datasheet"``.
Approximation: a data sheet fixes only the figures above; the carried-over
numbers are KNOWN's, so choose the shipped GPU of the same architecture and
memory kind (``warpspeed machines`` lists them).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..errors import MachineError
from ..family import code_target_matches, described_alike
from ..machine import MEMORY_TYPES, Machine, machines
from ..machine_format import flatten
from ..model import load_machine
from ..timing import parameter

#: Keys whose values scale with the DRAM peak (MODEL.md §12).
DRAM_KEYS = ("dram_bandwidth", "dram_bw_read", "dram_bw_copy", "dram_bw_write")
#: Plausible ranges of the given figures (name, unit, low, high).
RANGES = {"sms": (1, 1024), "clock_ghz": (0.1, 6.0), "dram_gbs": (1.0, 100_000.0),
          "l2_mib": (0.0625, 8192.0), "llc_mib": (0.0, 65536.0), "l1_kib": (1.0, 4096.0),
          "bus_bits": (16, 65536), "register_kib": (16.0, 4096.0),
          "memory_gib": (0.25, 65536.0)}


@dataclass(frozen=True)
class DataSheet:
    """The figures of a data sheet (MODEL.md §12); None: carried over from the
    known GPU (``llc_mib``: required when the known GPU has a last-level cache)."""

    name: str
    sms: int
    clock_ghz: float
    dram_gbs: float
    l2_mib: float
    llc_mib: float | None = None
    l1_kib: float | None = None
    bus_bits: int | None = None
    ecc: bool | None = None
    memory: str | None = None
    architecture: str | None = None
    arch: str | None = None
    register_kib: float | None = None
    memory_gib: float | None = None
    cite: str = "the data sheet"


def describe(known: Machine | str | Path, sheet: DataSheet) -> dict:
    """The machine file's data (a TOML-able dict) for ``sheet``, a GPU of
    ``known``'s architecture (module docstring). Raises :class:`MachineError`
    naming a figure that is missing, not positive or implausible, or a known
    GPU of another architecture or memory kind than the figures imply."""
    k = load_machine(known)
    _check(k, sheet)
    data = _carried(k)
    data.pop("memory_gib", None)  # another GPU's memory: given or not checked
    data.update(_identity(k, sheet))
    data.update(_given(k, sheet))
    data.update(_scaled(k, sheet, data))
    return data


def _check(k: Machine, s: DataSheet) -> None:
    """Refuse figures a data sheet cannot have, and a KNOWN that does not match."""
    if not s.name or not s.name.strip():
        raise MachineError("the new machine needs a NAME")
    for key, (low, high) in RANGES.items():
        v = getattr(s, key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise MachineError(f"--{key.replace('_', '-')} must be a number, got {v!r}")
        if key == "llc_mib" and v == 0:
            continue
        if not low <= v <= high:
            raise MachineError(f"--{key.replace('_', '-')} must lie in [{low:g}, {high:g}], "
                               f"got {v:g}")
    if k.dram_peak is None:
        raise MachineError(f"{k.name} has no [dram_peak] (its data sheet's DRAM peak), so its "
                           "stream plateaus cannot be scaled: add it, or choose a shipped GPU")
    _check_kind(k, s)


def _check_kind(k: Machine, s: DataSheet) -> None:
    """The figures must fit KNOWN's architecture and memory kind."""
    if s.architecture and not described_alike(s.architecture, k.architecture):
        raise MachineError(f"{s.name} is {s.architecture} but {k.name} is {k.architecture}: "
                           f"choose a known GPU of the same architecture ('warpspeed machines')")
    if s.arch is not None and not code_target_matches(k.family, s.arch):
        raise MachineError(f"--arch {s.arch!r} is no {k.vendor} compiler target (like "
                           f"{k.arch!r}): give the target the GPU's compiler uses")
    if s.memory is not None:
        if s.memory not in MEMORY_TYPES:
            raise MachineError(f"--memory must be one of {list(MEMORY_TYPES)}, got {s.memory!r}")
        if _family(s.memory) != _family(k.memory):
            raise MachineError(f"{s.name} has {s.memory} but {k.name} has {k.memory or 'no '
                               'stated memory kind'}: its stream plateaus do not carry over; "
                               f"choose a known GPU with {_family(s.memory)} memory")
    if s.llc_mib and not k.mall_bytes:
        raise MachineError(f"--llc-mib {s.llc_mib:g}: {k.name} has no last-level cache behind "
                           "its L2; a GPU with an Infinity Cache needs a known one that has "
                           f"it ({', '.join(with_llc())})")
    if k.mall_bytes and s.llc_mib is None:
        raise MachineError(f"{k.name} has a {k.mall_bytes / 2**20:g} MiB last-level cache "
                           f"(Infinity Cache): give {s.name}'s with --llc-mib (0 if it has none)")
    if s.l1_kib is not None and not 0.25 <= s.l1_kib * 1024 / k.l1_bytes <= 4:
        raise MachineError(f"--l1-kib {s.l1_kib:g}: {k.name}'s L1 is {k.l1_bytes / 1024:g} KiB; "
                           "an L1 more than 4x apart implies another architecture: choose a "
                           "known GPU of the same one")


def with_llc() -> list[str]:
    """The shipped machines with a last-level cache behind the L2 (an
    Infinity Cache), as ``warpspeed machines`` lists them."""
    return [n for n in machines() if load_machine(n).mall_bytes]


def _family(memory: str) -> str:
    return "HBM" if memory.startswith("HBM") else (memory[:4] or "unknown")


def _carried(k: Machine) -> dict:
    """Every table of KNOWN's file, its source saying it is carried over."""
    raw = flatten(tomllib.loads(Path(k.path).read_text()))
    out: dict = {}
    for key, entry in raw.items():
        if isinstance(entry, dict):
            entry = dict(entry)
            if "source" in entry:
                entry["source"] = f"carried over from {k.name}: {entry['source']}"
            out[key] = entry
    return out


def _identity(k: Machine, s: DataSheet) -> dict:
    return {
        "name": s.name,
        "description": (f"{s.name}, described from its data sheet like {k.name} "
                        f"({k.vendor} {k.architecture}; warpspeed machines new)"),
        "validated": False,
        "fits": k.fits,
        "arch": s.arch or k.arch,
        "vendor": k.vendor,
        "architecture": s.architecture or k.architecture,
        "grounding": "datasheet",
        "l1_model": k.l1_model,
    }


def _entry(value: object, source: str) -> dict[str, object]:
    return {"value": value, "source": source}


def _given(k: Machine, s: DataSheet) -> dict:
    """The data sheet's own figures."""
    c = s.cite
    l2 = int(round(s.l2_mib * 2**20 / k.l2_partitions))
    part = ("" if k.l2_partitions == 1 else
            f"; one of {k.l2_partitions} partitions, as {k.name}'s l2_partitions says")
    out = {
        "sms": _entry(int(s.sms), f"{c}: {s.sms} SMs / CUs"),
        "clock_ghz": _entry(float(s.clock_ghz), f"{c}: boost clock {s.clock_ghz:g} GHz"),
        "dram_peak": _entry(float(s.dram_gbs), f"{c}: DRAM peak {s.dram_gbs:g} GB/s"),
        "l2_bytes": _entry(l2, f"{c}: {s.l2_mib:g} MiB L2{part}"),
    }
    if s.l1_kib is not None:
        out["l1_bytes"] = _entry(int(round(s.l1_kib * 1024)), f"{c}: {s.l1_kib:g} KiB L1 per SM")
    if s.ecc is not None:
        out["ecc"] = _entry(bool(s.ecc), f"{c}: ECC {'on' if s.ecc else 'off'} (as given)")
    if s.bus_bits is not None:
        out["dram_bus_bits"] = _entry(int(s.bus_bits), f"{c}: {s.bus_bits}-bit DRAM bus")
    if s.memory is not None:
        out["memory"] = _entry(s.memory, f"{c}: {s.memory}")
    if s.register_kib is not None:
        out.update(_registers(k, s))
    if s.memory_gib is not None:
        out["memory_gib"] = _entry(float(s.memory_gib), f"{c}: {s.memory_gib:g} GB of memory")
    if s.llc_mib is not None:
        out["mall_bytes"] = _entry(int(round(s.llc_mib * 2**20)),
                                   f"{c}: {s.llc_mib:g} MiB last-level cache (Infinity Cache)")
    return out


def _registers(k: Machine, s: DataSheet) -> dict:
    """The register file per SM / CU and, on AMD, the allocation granule
    scaled with it (module docstring)."""
    assert s.register_kib is not None
    regs = int(round(s.register_kib * 1024 / 4))
    out = {"registers_per_sm": _entry(regs, f"{s.cite}: {s.register_kib:g} KiB register file "
                                             f"per SM / CU = {regs} 32-bit registers")}
    if k.family.alloc_unit_scales and regs != k.registers_per_sm:
        f = regs / k.registers_per_sm
        unit = max(k.warp_size, int(round(k.register_alloc_unit * f / k.warp_size)) * k.warp_size)
        out["register_alloc_unit"] = _entry(unit, (
            f"{k.name}'s {k.register_alloc_unit} x {f:.4g}, the ratio of the register files: "
            "LLVM keeps the number of VGPR allocation granules per SIMD (gfx1100: 24 VGPRs of "
            "1536, gfx1102: 16 of 1024; AMDGPU backend, getVGPRAllocGranule)"))
    return out


def _scaled(k: Machine, s: DataSheet, data: dict) -> dict:
    """The numbers derived from KNOWN's by the rules of the module docstring."""
    out: dict = {}
    assert k.dram_peak is not None  # _check refused a known GPU without it
    dram = float(s.dram_gbs) / float(k.dram_peak)
    rule = (f"{k.name}'s value x {dram:.4g}, the ratio of the DRAM peaks ({s.dram_gbs:g} / "
            f"{k.dram_peak:g} GB/s): the share of its peak {k.name}'s memory system reaches, "
            "carried over")
    for key in DRAM_KEYS:
        if key in data and parameter(k, key) is not None:
            entry = dict(data[key])  # the loaded value: an edited stream_reference applied
            entry["value"] = round(float(parameter(k, key) or 0.0) * dram, 1)
            if "stream_reference" in entry:
                entry["stream_reference"] = entry["value"]
            entry["source"] = f"{rule}; {k.name}: {_original(data[key]['source'])}"
            out[key] = entry
    out.update(_fp_rates(k, s, data))
    core = s.sms * s.clock_ghz / (k.sms * k.clock_ghz)
    out["l2_bandwidth"] = _entry(round(k.l2_bandwidth * core, 1), (
        f"{k.name}'s {k.l2_bandwidth:g} GB/s x {core:.4g}, the ratio of SMs x clock: bytes per "
        "SM and cycle carried over"))
    if s.llc_mib:
        f = s.llc_mib * 2**20 / k.mall_bytes * s.clock_ghz / k.clock_ghz
        out["mall_bandwidth"] = _entry(round(k.mall_bandwidth * f, 1), (
            f"{k.name}'s {k.mall_bandwidth:g} GB/s x {f:.4g}, the ratio of the cache sizes times "
            "the ratio of the clocks: bandwidth per MiB of cache and GHz carried over"))
    elif s.llc_mib == 0:
        out["mall_bytes"] = _entry(0, f"{s.cite}: no last-level cache")
        out["mall_bandwidth"] = _entry(0.0, f"{s.cite}: no last-level cache")
    if s.ecc is None and "ecc" in data:
        out["ecc"] = dict(data["ecc"])
    return out


def _fp_rates(k: Machine, s: DataSheet, data: dict) -> dict:
    """The FMA rates per SM / CU and cycle, carried over, with the peak they
    give this GPU: KNOWN's source derives them from KNOWN's SM count, which
    would read as this GPU's."""
    out: dict = {}
    for key, precision in (("fp64_fma_per_sm_cycle", "FP64"), ("fp32_fma_per_sm_cycle", "FP32")):
        if key not in data:
            continue
        rate = float(data[key]["value"])
        tflops = s.sms * rate * 2 * s.clock_ghz / 1000
        out[key] = _entry(data[key]["value"], (
            f"carried over from {k.name}: its {precision} FMA rate per SM / CU and cycle; "
            f"{s.sms} x {rate:g} FMA x 2 flop x {s.clock_ghz:g} GHz = {tflops:.3g} TFLOPS "
            f"{precision} peak for {s.name}"))
    return out


def _original(source: str) -> str:
    prefix = "carried over from "
    return source.split(": ", 1)[1] if source.startswith(prefix) else source


def header(words: list[str]) -> str:
    """The comment a written file starts with: the command that rebuilds it."""
    import shlex

    return ("Written by `warpspeed machines new` (MODEL.md §12); rebuild with:\n"
            + shlex.join(words))


def write(data: dict, out: Path, words: list[str], force: bool = False) -> Machine:
    """Write the file (refusing to replace one without ``force``) and load it back."""
    from .calibrate import write_machine

    out = Path(out)
    if out.exists() and not force:
        raise MachineError(f"{out} exists: give --force to replace it")
    if out.suffix != ".toml":
        raise MachineError(f"--out must name a .toml file, got {out}")
    return write_machine(data, out, header(words))


__all__ = ["DataSheet", "describe", "header", "with_llc", "write"]
