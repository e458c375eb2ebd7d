"""The layouts of a machine file (MODEL.md §12): the timing tables of format
version 2, the top-level keys of version 1 they came from, and the frozen
form in which a :class:`~warpspeed.machine.Machine` keeps them.

Since version 2 a machine file keeps the GPU's facts at the top level and
gives every timing model (and every limiter the models share) its own table,
one entry per parameter with its ``value`` and ``source``::

    [latency.dram_latency_ns]
    value = 372.6
    source = "latency/h100_pcie.csv: the DRAM plateau"

Which tables exist and what they hold is the timing models' business
(:mod:`warpspeed.timing.tables`): the loader stores them as written. A
version 1 file had these entries at the top level; :func:`nest` moves them
into their tables (:data:`V1_TABLES`), so such files still load, and the
writers, which build a file as one flat mapping, write version 2 with it.
"""

from __future__ import annotations

from typing import Any

from .errors import MachineError

#: The table and key that each version 1 top-level key has in version 2: the
#: parameters of the default model (with its removed TLB keys, which its table
#: refuses with the reason) and the atomics limiter's rate. A list of history:
#: a new timing table needs no entry here.
V1_TABLES: dict[str, tuple[str, str]] = {
    **{key: ("latency", key) for key in (
        "fp32_fma_per_sm_cycle", "dram_latency_ns", "l2_latency_ns", "dram_bw_read",
        "dram_bw_copy", "dram_bw_write", "memory_shape", "turnover_ns", "overlap_exponent",
        "fp_overlap_exponent", "launch_overhead_us", "fp64_cost", "fp32_cost",
        "dram_scattered_fraction", "launch_latency_us", "block_launch_ns", "tlb_page_bytes",
        "tlb_reach_pages",
        "tlb_penalty")},
    "atomics_per_clock": ("atomics", "per_clock"),
}
#: The frozen form of one timing table: (key, entry) pairs, each entry its
#: (field, value) pairs, in the file's order (hashable, like every field of a machine).
FrozenTable = tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]


def nest(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every version 1 key of :data:`V1_TABLES` moved into its
    timing table (module docstring); other keys as they are."""
    out: dict[str, Any] = {}
    for key, entry in data.items():
        if key in V1_TABLES:
            table, name = V1_TABLES[key]
            out.setdefault(table, {})[name] = entry
        elif isinstance(out.get(key), dict) and isinstance(entry, dict):
            out[key] = {**out[key], **entry}
        else:
            out[key] = entry
    return out


def flatten(data: dict[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`nest`: the entries of version 1's keys back at
    the top level (what the writers compute with); other tables as they are."""
    back = {where: key for key, where in V1_TABLES.items()}
    out: dict[str, Any] = {}
    for key, entry in data.items():
        if isinstance(entry, dict) and any((key, k) in back for k in entry):
            rest = {k: v for k, v in entry.items() if (key, k) not in back}
            out.update({back[key, k]: v for k, v in entry.items() if (key, k) in back})
            if rest:
                out[key] = rest
        else:
            out[key] = entry
    return out


def refuse_v1_keys(path: object, data: dict[str, Any]) -> None:
    """A version 2 file with a version 1 key at the top level: say where it went."""
    old = [k for k in data if k in V1_TABLES]
    if old:
        table, name = V1_TABLES[old[0]]
        raise MachineError(
            f"machine file {path}: [{old[0]}] belongs to the [{table}] table since "
            f"format_version 2: write it as [{table}.{name}] (MODEL.md §12)")


def freeze(path: object, name: str, table: object) -> FrozenTable:
    """A timing table as a :class:`~warpspeed.machine.Machine` keeps it: every
    entry a table with a ``source`` (its values are the model's to check)."""
    if not isinstance(table, dict):
        raise MachineError(f"machine file {path}: [{name}] must be a table of parameters, "
                           f"each [{name}.KEY] with 'value' and 'source'")
    out = []
    for key, entry in table.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("source"), str):
            raise MachineError(f"machine file {path}: [{name}.{key}] must be a table with "
                               "'value' and 'source'")
        out.append((key, tuple((k, tuple(v) if isinstance(v, list) else v)
                               for k, v in entry.items())))
    return tuple(out)


def thaw(table: FrozenTable) -> dict[str, dict[str, Any]]:
    """A frozen timing table as the file wrote it (:func:`freeze`)."""
    return {key: dict(entry) for key, entry in table}


__all__ = ["V1_TABLES", "FrozenTable", "flatten", "freeze", "nest", "refuse_v1_keys", "thaw"]
