"""GPU families: what every GPU of an architecture family can do, declared
in data files with a source for each capability (MODEL.md §12, "GPU
families").

A family file (``warpspeed/machines/families/*.toml``, or a user's own file
that a machine file names with ``family = "PATH.toml"``) holds its vendor,
the architectures it covers and one table per capability with its ``value``
and ``source``: the code target, the block and grid limits, the warp sizes
its L1 count can use and that count, how the compiler caps registers, the
work-group-processor mode, which notes its predictions carry, whether
guarded loads serialise, its memory-system kind and the words a report
uses. Behaviour reads these records (``Machine.family``); this module is
the only place that compares vendor or architecture names (a test checks
every other module).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import MachineError
from .tomlfile import read_versioned_toml

FAMILY_DIR = Path(__file__).parent / "machines" / "families"
#: The versions of the family-file format this loader reads.
FORMAT_VERSIONS = (1,)
#: The L1 counts a family may name (MODEL.md §4: NVIDIA's half warps and
#: banks, or what each warp issues; §15: one cache line per clock).
L1_MODELS = ("halfwarp", "warppipe", "lines")
#: The code targets a family may name (pystencils ``Target`` names the front
#: ends generate for).
TARGETS = ("CUDA", "HIP")
#: The compilers whose register count warpspeed reads ("none": an estimate).
REGISTER_COUNTERS = ("nvcc", "none")
#: The memory-system kinds of MODEL.md §11 ("Memory systems").
MEMORY_SYSTEMS = ("nvidia", "amd")
#: Architectures a known GPU of the other one describes (``warpspeed machines
#: new``): CDNA's compute units are GCN5's (wave64, a 16 KiB vL1D of 64 B
#: lines, 64 KiB LDS, 256 KiB of VGPRs per CU; AMD CDNA whitepaper).
ALIKE = {"gcn5": "cdna"}


@dataclass(frozen=True)
class Words:
    """What the family calls an SM, a warp and a wave of blocks (MODEL.md §15)."""

    sm: str
    warp: str
    wave: str


@dataclass(frozen=True)
class Family:
    """One GPU family's capabilities (module docstring; MODEL.md §12)."""

    name: str
    vendor: str
    description: str
    architectures: tuple[str, ...]
    #: The code generator's target (pystencils ``Target`` name).
    target: str
    #: What a compiler target (``Machine.arch``) of the family looks like.
    compiler_target_pattern: str
    #: The architecture of each compiler target, for files without ``architecture``.
    compiler_targets: tuple[tuple[str, str], ...]
    #: The compiler that counts a kernel's registers for these targets.
    register_counter: str
    #: The largest block extent along x, y, z (MODEL.md §3).
    block_extents: tuple[int, int, int]
    #: The largest grid in blocks along x, y, z; None: limited in threads.
    grid_blocks: tuple[int, int, int] | None
    #: The largest grid in threads along one axis; None: limited in blocks.
    grid_threads: int | None
    #: The warp (wavefront) sizes the family's L1 count can use.
    warp_sizes: tuple[int, ...]
    #: The L1 count (MODEL.md §4 "halfwarp" or "warppipe", §15 "lines").
    l1_model: str
    #: Tag cycles per further 128 B line of a warp instruction ("warppipe", MODEL.md §4).
    l1_tag_cycles_per_line: float
    #: Whether the L2 serves an L1 miss as a request of a whole line (MODEL.md §11).
    l2_line_requests: bool
    #: An l2_stream table's triad plateau over the l2_cache plateau on the
    #: family's GPUs (MODEL.md §12); None: not known, no conversion.
    l2_stream_ratio: float | None
    #: Register files a compiler may fill for a kernel of ``max_threads_per_block``
    #: threads (MODEL.md §15); 0: the compiler's count is taken as is.
    register_budget_files: int
    #: Whether a block may spread over the two CUs of a work-group processor.
    wgp_mode: bool
    #: Whether a block of a fraction of a wavefront says so in its notes.
    whole_wavefront_note: bool
    #: Whether guarded loads form a latency chain of their own (MODEL.md §11).
    guarded_loads_serialise: bool
    #: Whether a thread's loads go out in rounds of what its registers hold,
    #: each further round an L2 latency (MODEL.md §11, "Load rounds").
    load_rounds: bool
    #: Whether the paper's capacity curves (MODEL.md §7) were fitted on it.
    paper_curves_fitted: bool
    #: The memory-system kind (MODEL.md §11, "Memory systems").
    memory_system: str
    #: Whether the register allocation granule grows with the register file.
    alloc_unit_scales: bool
    words: Words
    sources: tuple[tuple[str, str], ...]
    path: str

    def source(self, capability: str) -> str:
        """Where the value of ``capability`` comes from."""
        return dict(self.sources)[capability]


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _ints(n: int | None) -> Any:
    def check(v: object) -> bool:
        return (isinstance(v, list) and (n is None or len(v) == n) and bool(v)
                and all(_is_int(x) and x > 0 for x in v))
    return check


def _text_table(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(x, str) for x in v.values())


#: Every capability: how its value is checked and what the error asks for.
_CAPABILITIES: dict[str, tuple[Any, str]] = {
    "target": (lambda v: v in TARGETS, f"one of {list(TARGETS)}"),
    "compiler_target_pattern": (lambda v: isinstance(v, str), "a regular expression"),
    "compiler_targets": (_text_table, "a table of compiler target = architecture"),
    "register_counter": (lambda v: v in REGISTER_COUNTERS, f"one of {list(REGISTER_COUNTERS)}"),
    "block_extents": (_ints(3), "three positive integers"),
    "grid_blocks": (_ints(3), "three positive integers"),
    "grid_threads": (lambda v: _is_int(v) and v > 0, "a positive integer"),
    "warp_sizes": (_ints(None), "a list of positive integers"),
    "l1_model": (lambda v: v in L1_MODELS, f"one of {list(L1_MODELS)}"),
    "l1_tag_cycles_per_line": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                               and v > 0, "a number > 0"),
    "l2_line_requests": (lambda v: isinstance(v, bool), "true or false"),
    "l2_stream_ratio": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                        and 0 < v < 10, "a number between 0 and 10"),
    "register_budget_files": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "wgp_mode": (lambda v: isinstance(v, bool), "true or false"),
    "whole_wavefront_note": (lambda v: isinstance(v, bool), "true or false"),
    "guarded_loads_serialise": (lambda v: isinstance(v, bool), "true or false"),
    "load_rounds": (lambda v: isinstance(v, bool), "true or false"),
    "paper_curves_fitted": (lambda v: isinstance(v, bool), "true or false"),
    "memory_system": (lambda v: v in MEMORY_SYSTEMS, f"one of {list(MEMORY_SYSTEMS)}"),
    "alloc_unit_scales": (lambda v: isinstance(v, bool), "true or false"),
    "words": (lambda v: _text_table(v) and set(v) == {"sm", "warp", "wave"},
              "a table of sm, warp and wave"),
}
#: Capabilities a family may leave out: a table of compiler targets, one of
#: the two grid limits, the tag cost of an L1 count that has none, the L2's
#: requests (false: the L2 serves sectors) and the load rounds (false: none).
_OPTIONAL = ("compiler_targets", "grid_blocks", "grid_threads", "l1_tag_cycles_per_line",
             "l2_line_requests", "l2_stream_ratio", "load_rounds")
_PLAIN = ("format_version", "name", "vendor", "description", "architectures")


@functools.cache
def load_family(path: Path) -> Family:
    """The family file ``path``, every capability checked; a bad one raises
    :class:`MachineError` in one line naming the file and the key."""
    data = read_versioned_toml(path, "GPU family file", FORMAT_VERSIONS, MachineError)
    where = f"GPU family file {path}"
    for key in ("name", "vendor", "description"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise MachineError(f"{where}: '{key}' must be a non-empty string")
    archs = data.get("architectures")
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise MachineError(f"{where}: 'architectures' must be a list of names")
    unknown = sorted(set(data) - set(_CAPABILITIES) - set(_PLAIN))
    if unknown:
        raise MachineError(f"{where}: unknown keys {unknown}")
    values, sources = _capabilities(where, data)
    if ("grid_blocks" in values) == ("grid_threads" in values):
        raise MachineError(f"{where}: give one of [grid_blocks] and [grid_threads]")
    if (values["l1_model"] == "warppipe") != ("l1_tag_cycles_per_line" in values):
        raise MachineError(f"{where}: [l1_tag_cycles_per_line] goes with l1_model "
                           "\"warppipe\" and only with it (MODEL.md §4)")
    return Family(
        name=data["name"], vendor=data["vendor"], description=data["description"],
        architectures=tuple(archs), target=values["target"],
        compiler_target_pattern=values["compiler_target_pattern"],
        compiler_targets=tuple(sorted(values.get("compiler_targets", {}).items())),
        register_counter=values["register_counter"],
        block_extents=tuple(values["block_extents"]),
        grid_blocks=(tuple(values["grid_blocks"])
                     if "grid_blocks" in values else None),
        grid_threads=values.get("grid_threads"), warp_sizes=tuple(values["warp_sizes"]),
        l1_model=values["l1_model"],
        l1_tag_cycles_per_line=float(values.get("l1_tag_cycles_per_line", 0.0)),
        l2_line_requests=bool(values.get("l2_line_requests", False)),
        l2_stream_ratio=(float(values["l2_stream_ratio"])
                         if "l2_stream_ratio" in values else None),
        register_budget_files=values["register_budget_files"],
        wgp_mode=values["wgp_mode"], whole_wavefront_note=values["whole_wavefront_note"],
        guarded_loads_serialise=values["guarded_loads_serialise"],
        load_rounds=bool(values.get("load_rounds", False)),
        paper_curves_fitted=values["paper_curves_fitted"],
        memory_system=values["memory_system"], alloc_unit_scales=values["alloc_unit_scales"],
        words=Words(**values["words"]), sources=tuple(sources), path=str(path))


def _capabilities(where: str, data: dict[str, Any]
                  ) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Each capability's value, checked, and its source (MODEL.md §12)."""
    values: dict[str, Any] = {}
    sources = []
    for key, (ok, what) in _CAPABILITIES.items():
        entry = data.get(key)
        if entry is None and key in _OPTIONAL:
            continue
        if not isinstance(entry, dict) or "value" not in entry or "source" not in entry:
            raise MachineError(f"{where}: missing table [{key}] with 'value' and 'source'")
        if not ok(entry["value"]):
            raise MachineError(f"{where}: [{key}] value must be {what}, got {entry['value']!r}")
        values[key] = entry["value"]
        sources.append((key, str(entry["source"])))
    try:
        re.compile(values["compiler_target_pattern"])
    except re.error as exc:
        raise MachineError(f"{where}: [compiler_target_pattern] is no regular expression: "
                           f"{exc}") from exc
    return values, sources


@functools.cache
def families() -> dict[str, Family]:
    """The shipped families by name."""
    return {f.name: f for f in map(load_family, sorted(FAMILY_DIR.glob("*.toml")))}


def vendors() -> tuple[str, ...]:
    """The vendors of the shipped families."""
    return tuple(sorted({f.vendor for f in families().values()}))


def check_vendor(where: str, vendor: str) -> None:
    """Refuse a vendor of no GPU family (``where`` names the file)."""
    if vendor not in vendors():
        raise MachineError(f"{where}: vendor must be one of {list(vendors())}, got {vendor!r}")


def architecture_of(vendor: str, arch: str) -> str:
    """The architecture of compiler target ``arch`` on ``vendor``'s families
    (their ``compiler_targets``), "" if none names it."""
    for f in families().values():
        if f.vendor == vendor and arch in dict(f.compiler_targets):
            return dict(f.compiler_targets)[arch]
    return ""


def family_for(where: str, vendor: str, architecture: str, key: str | None,
               folder: Path) -> Family:
    """The family of a machine file (``where`` names it in errors): the one
    its ``family`` key names (a shipped family, or a file, relative to
    ``folder``), else the shipped family that lists ``architecture``; its
    vendor must be the file's."""
    if key is not None:
        path = folder / key if key.endswith(".toml") else None
        if path is None and key not in families():
            raise MachineError(f"{where}: family {key!r} is no shipped GPU family "
                               f"({', '.join(families())}) nor a .toml file describing one")
        fam = load_family(path.resolve()) if path is not None else families()[key]
    else:
        found = [f for f in families().values() if architecture in f.architectures]
        if not found:
            raise MachineError(
                f"{where}: architecture {architecture!r} is in no GPU family "
                f"({', '.join(a for f in families().values() for a in f.architectures)}): "
                "add family = \"FILE.toml\" describing its capabilities "
                f"(like {FAMILY_DIR / 'nvidia.toml'})")
        fam = found[0]
    if fam.vendor != vendor:
        raise MachineError(f"{where}: vendor {vendor!r}, but its family {fam.name!r} is "
                           f"{fam.vendor}'s: set vendor = \"{fam.vendor}\" or another family")
    return fam


def check_warp_size(where: str, fam: Family, warp_size: int) -> None:
    """Refuse a warp size the family's L1 count cannot use (a 16-lane warp on
    the half-warp count made for 32), naming the key."""
    if warp_size not in fam.warp_sizes:
        raise MachineError(
            f"{where}: [warp_size] {warp_size} is not a warp the {fam.name} family's "
            f"{fam.l1_model!r} L1 count can use (it takes {list(fam.warp_sizes)}; "
            f"{fam.source('warp_sizes')})")


def words_of(vendor: str) -> Words:
    """The words of ``vendor``'s families (for a prediction read without its
    machine); an unknown vendor is refused."""
    found = {f.words for f in families().values() if f.vendor == vendor}
    if len(found) != 1:
        raise MachineError(f"vendor {vendor!r} has no one set of words among the GPU "
                           f"families (vendors: {', '.join(vendors())})")
    return found.pop()


def described_alike(architecture: str, other: str) -> bool:
    """Whether a known GPU of ``other`` describes one of ``architecture``
    (the same architecture, or :data:`ALIKE`)."""
    a, b = architecture.lower(), other.lower()
    return ALIKE.get(a, a) == ALIKE.get(b, b)


def family_of_target(arch: str) -> Family | None:
    """The shipped family whose compiler targets look like ``arch``, if any."""
    return next((f for f in families().values() if code_target_matches(f, arch)), None)


def code_target_matches(pattern_family: Family, arch: str) -> bool:
    """Whether ``arch`` looks like a compiler target of ``pattern_family``."""
    return re.fullmatch(pattern_family.compiler_target_pattern, arch) is not None


__all__ = ["ALIKE", "FAMILY_DIR", "L1_MODELS", "MEMORY_SYSTEMS", "TARGETS", "Family", "Words",
           "architecture_of", "check_vendor", "check_warp_size", "code_target_matches",
           "described_alike", "families", "family_for", "family_of_target", "load_family",
           "vendors", "words_of"]
