"""A new GPU in minutes (MODEL.md §12): a machine file from the public
micro-benchmark tables and a small data-sheet base file
(``warpspeed machines calibrate``).

The base file is a machine file without the numbers the tables determine: the
data-sheet facts (SMs, clock, cache sizes, FP rates, occupancy limits, FP costs)
with their sources, and any number a table the user does not have must supply
(e.g. a latency carried over from a related GPU, with that said in its source).
:func:`calibrate` adds what each given table determines, with a source naming the
table and how the number was derived:

* ``stream``: ``dram_bandwidth`` (scale plateau), ``dram_bw_read``,
  ``dram_bw_copy``, ``dram_bw_write``, ``turnover_ns`` and the fitted
  ``memory_shape`` (needs the two latencies, from ``latency`` or the base);
* ``latency``: ``dram_latency_ns`` and ``l2_latency_ns`` (plateaus);
* ``l2``: ``l2_bandwidth`` (plateau below half the L2) and
  ``dram_scattered_fraction`` (its DRAM-bound end over the stream table's read
  plateau, MODEL.md §11: many concurrent streams); ``scattered`` (with the
  stream table of the same GPU, ``scattered_stream``) takes the fraction from a
  related GPU's ``l2_cache`` table when this GPU has none;
* ``l2_stream`` (NVIDIA, without an ``l2`` table): ``l2_bandwidth`` from the
  newer benchmark's table, its triad plateau over the ratio the NVIDIA GPUs
  with both tables show (the family's ``l2_stream_ratio``);
* ``roofline``: ``fp_overlap_exponent`` (and ``overlap_exponent`` when the base
  has no kernel-fitted one);
* ``small_kernels``: ``launch_overhead_us``, and ``block_launch_ns`` where
  small blocks hold the large launches back (only from this GPU's own table:
  the time per block and SM is read with this GPU's SM count);
* ``l1``: confirms ``l1_bytes`` (the cliff must lie within a factor 2), noted in
  its source.

``grounding`` becomes ``"micro-benchmarks"`` unless the base says ``"kernels"``.
Approximation: the derivations are the plateau and fit rules of MODEL.md §11 /
§12; they assume the tables follow the benchmark's conventions
(``shared/data/microbench/README.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from ..errors import MachineError
from ..family import Family, architecture_of, family_for
from ..machine import (
    FORMAT_VERSION,
    FORMAT_VERSIONS,
    PLAIN_KEYS,
    REQUIRED_PARAMETERS,
    Machine,
    read_versioned_toml,
)
from ..machine_format import flatten, nest
from ..model import load_machine
from ..timing import parameter_tables
from ..timing.latency_parameters import LATENCY_TABLE
from ..timing.memory import MemoryParams
from . import microbench as mb

#: Words of every source written from a table when the caller gives none.
DEFAULT_CITE = "the user's micro-benchmark tables"


class CalibrationError(mb.TableError):
    """The base file or the tables do not give every number a machine file needs."""


@dataclass(frozen=True)
class Tables:
    """Paths of the micro-benchmark tables of one GPU (any may be None but stream)."""

    stream: Path
    latency: Path | None = None
    l1: Path | None = None
    l2: Path | None = None
    small_kernels: Path | None = None
    roofline: Path | None = None
    scattered: Path | None = None
    scattered_stream: Path | None = None
    l2_stream: Path | None = None


def _name(path: Path) -> str:
    """A table as sources name it: ``stream/mi210.csv``."""
    p = Path(path)
    return f"{p.parent.name}/{p.name}" if p.parent.name else p.name


def _entry(value: float, source: str) -> dict[str, object]:
    return {"value": value, "source": source}


def _base_value(base: dict, key: str, path: Path, why: str) -> float:
    entry = base.get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("value"), (int, float)):
        raise CalibrationError(f"base file {path} needs a table [{key}] with 'value' and "
                               f"'source' ({why})")
    return float(entry["value"])


def calibrate(base_path: Path, tables: Tables, *, cite: str = DEFAULT_CITE,
              latency_l2_mib: float | None = None, latency_llc_mib: float | None = None,
              dram_scale: float = 1.0, grounding: str = "micro-benchmarks",
              name: str | None = None, copy_from_triad: bool = False) -> dict:
    """The machine file's data (a TOML-able dict) from ``base_path`` and
    ``tables`` (module docstring).

    * ``latency_l2_mib`` / ``latency_llc_mib``: the whole L2 and a last-level
      cache behind it (Infinity Cache) of the GPU the latency table was measured
      on, for its plateau windows (default: ``l2_bytes`` of the base, no LLC).
    * ``dram_scale``: multiplies every DRAM bandwidth taken from the stream
      table, for a related GPU's table standing in (the ratio of the two data-sheet
      peaks; ``cite`` should say so). An approximation: the latencies and the
      fitted shape are carried over unchanged.
    * ``grounding``: what the file's ``grounding`` becomes ("datasheet" when the
      tables are a related GPU's), unless the base says "kernels".
    * ``copy_from_triad``: a scale column that does not saturate gives way to
      the triad's plateau when that is larger (:func:`microbench.memory_fit`).
    """
    if not (isinstance(dram_scale, (int, float)) and 0 < dram_scale < 100):
        raise CalibrationError(f"the DRAM scale must be a positive factor, got {dram_scale!r}")
    if tables.l2 is not None and tables.l2_stream is not None:
        raise CalibrationError("give --l2 or --l2-stream, not both: the l2_cache table is "
                               "the L2 plateau itself")
    base_path = Path(base_path)
    base = _read_base(base_path)
    out = dict(base)
    if name:
        out["name"] = name
    l2_bytes = _base_value(base, "l2_bytes", base_path, "the L2 size, from the data sheet")
    tag = f"({cite})"
    if tables.latency is not None:
        out.update(_latencies(tables.latency, latency_l2_mib or l2_bytes / 2**20,
                              latency_llc_mib, tag))
    out.update(_stream(out, base, base_path, tables.stream, tag, float(dram_scale),
                       copy_from_triad))
    out.update(_l2_bandwidth(tables.l2, l2_bytes, tag))
    out.update(_l2_from_stream(tables, out, base_path, l2_bytes, tag))
    out.update(_scattered(tables, tag))
    out.update(_fp_overlap(tables.roofline, tag))
    out.update(_l1_overlap(out, base))
    out.update(_launch_overhead(tables.small_kernels, tag))
    if grounding != "datasheet":
        out.update(_block_launch(tables.small_kernels, base, base_path, tag))
    out.update(_l1_size(out, base, base_path, tables.l1, tag))
    out.update(_grounding(out, grounding))
    _check_complete(out, base_path)
    return out


# --------------------------------------------------------------------------
# The phases of a calibration, in order: each returns the entries it adds


def _read_base(base_path: Path) -> dict:
    """The base file's data (module docstring), of a format the loader reads,
    with the timing tables' entries at the top level (:func:`~warpspeed.machine_format.flatten`)."""
    return flatten(read_versioned_toml(base_path, "base file", FORMAT_VERSIONS, CalibrationError))


def _latencies(table: Path, l2_mib: float, llc_mib: float | None, tag: str) -> dict:
    """``dram_latency_ns`` and ``l2_latency_ns``: plateaus of the latency
    table (MODEL.md §11)."""
    lat = mb.load_latency(table, l2_mib, llc_mib)
    t = _name(table)
    llc = f"{llc_mib:g} MiB last-level cache" if llc_mib else f"{l2_mib:g} MiB L2"
    return {
        "dram_latency_ns": _entry(round(lat.dram_ns, 1), (
            f"{t} {tag}: median of latency_cycles / clock_MHz ({lat.clock_mhz:.0f} MHz) over "
            f"the {lat.dram_rows} rows with footprint >= 1.5 x the {llc}: the DRAM plateau; "
            "not fitted")),
        "l2_latency_ns": _entry(round(lat.l2_ns, 1), (
            f"{t} {tag}: median latency over footprints 1 MB .. L2 / 4: the (near) L2 plateau")),
    }


def _stream(out: dict, base: dict, base_path: Path, table: Path, tag: str, k: float,
            copy_from_triad: bool) -> dict:
    """The DRAM bandwidths, ``turnover_ns`` and the fitted ``memory_shape``
    from the stream table and the latencies (MODEL.md §11), every bandwidth
    times the DRAM scale ``k``."""
    dram_ns = _base_value(out, "dram_latency_ns", base_path,
                          "no --latency table: give the DRAM latency in the base")
    l2_ns = _base_value(out, "l2_latency_ns", base_path,
                        "no --latency table: give the L2 latency in the base")
    s = mb.load_stream(table)
    fit = mb.memory_fit(s, dram_ns, l2_ns, copy_from_triad)
    p: MemoryParams = fit.params
    t = _name(table)
    sms = _base_value(base, "sms", base_path, "the SM / CU count, from the data sheet")
    sm_note = ("" if s.sms == sms else f"; the table's {s.sms} SMs (as the runtime reported "
               f"them) hold the same threads as this file's {sms:g}")
    pl = fit.plateaus
    scaled = "" if k == 1 else f"; x {k:g}, the ratio of the data-sheet DRAM peaks"

    def reached(col: str) -> str:
        note = "" if pl[col][1] else "; NOT REACHED: still rising at full occupancy, a lower bound"
        return note + scaled

    triad = p.dram_bw_copy != pl["scale"][0]
    via = (f"; the scale column still rises at full occupancy, so the larger triad_GBs "
           f"plateau ({pl['triad'][0]:.0f}) is taken: both are lower bounds, a triad thread "
           f"keeps {sum(s.kernels['triad']) / 2:g}x the bytes in flight" if triad else "")
    bandwidth = _entry(round(k * p.dram_bw_copy, 1), (
        f"{t} {tag}: scale_GBs plateau (one load per store, median of the values within 2 % "
        f"of the maximum): the attainable copy bandwidth{reached('scale')}{via}"))
    # the plateaus below were measured with this figure (machine.py: an edited
    # dram_bandwidth scales them)
    bandwidth["stream_reference"] = bandwidth["value"]
    worst = max(float(np.max(np.abs(mb.relative_errors(p, s, c)))) for c in mb.FITTED)
    return {
        "dram_bandwidth": bandwidth,
        "dram_bw_read": _entry(round(k * p.dram_bw_read, 1), (
            f"{t} {tag}: the larger of the read_GBs plateau ({pl['read'][0]:.0f}) and the init "
            f"plateau: a pure load stream has no bus turnarounds, like a pure store stream"
            f"{scaled}")),
        "dram_bw_copy": _entry(round(k * p.dram_bw_copy, 1), (
            f"{t} {tag}: scale_GBs plateau (one load per store){reached('scale')}{via}")),
        "dram_bw_write": _entry(round(k * p.dram_bw_write, 1), (
            f"{t} {tag}: init_GBs plateau (stores only){reached('init')}")),
        "turnover_ns": _entry(round(p.turnover_ns, 1), (
            f"{t} {tag}: shortest init residence, threads in flight x 8 B / init_GBs, at block "
            f"size {fit.t0_block}: a store-only thread slot's launch-issue-retire time"
            f"{sm_note}")),
        "memory_shape": _entry(round(p.shape, 4), (
            f"{t} {tag}: fitted (scipy, minimax over the read, scale and triad columns, with "
            f"the latencies above): the latency-under-load coefficient; largest error on those "
            f"columns {100 * worst:.0f} %")),
    }


def _l2_bandwidth(table: Path | None, l2_bytes: float, tag: str) -> dict:
    """``l2_bandwidth``: the plateau of the ``l2_cache`` table below half the L2."""
    if table is None:
        return {}
    bw, n = mb.l2_bandwidth(table, int(l2_bytes))
    return {"l2_bandwidth": _entry(round(bw, 1), (
        f"{_name(table)} {tag}: median bandwidth of the {n} data sets of at most half "
        "the L2: the L2 plateau"))}


def _family(out: dict, base_path: Path) -> Family:
    """The GPU family of the machine being written (MODEL.md §12): its
    ``architecture``, or the one its compiler target ``arch`` names."""
    vendor = str(out.get("vendor", "NVIDIA"))
    arch = out.get("architecture") or architecture_of(vendor, str(out.get("arch", "sm_80")))
    return family_for(f"base file {base_path}", vendor, str(arch), out.get("family"),
                      base_path.parent)


def _l2_from_stream(tables: Tables, out: dict, base_path: Path, l2_bytes: float,
                    tag: str) -> dict:
    """``l2_bandwidth`` of a GPU without an ``l2_cache`` table from its
    ``l2_stream`` table: the triad plateau over the family's
    ``l2_stream_ratio`` (MODEL.md §12; the AMD families have none: their
    GPUs' ratios spread too far)."""
    if tables.l2_stream is None:
        return {}
    family = _family(out, base_path)
    k = family.l2_stream_ratio
    if k is None:
        raise CalibrationError(
            "--l2-stream converts an l2_stream table to the L2 plateau by the ratio of the two "
            "benchmarks its GPU family records; this family has none (on AMD GPUs it spreads "
            "from 0.61 to 0.92, fits/l2_stream.py), so give an l2_cache table (--l2) or keep "
            "the base file's l2_bandwidth")
    triad, n = mb.l2_stream_plateau(tables.l2_stream, int(l2_bytes))
    return {"l2_bandwidth": _entry(round(triad / k, 1), (
        f"{_name(tables.l2_stream)} {tag}: the triad kernel's plateau ({triad:.0f} GB/s, "
        f"median of the {n} rows at full occupancy with footprints of at most half the L2) "
        f"over {k}, the {family.name} family's l2_stream_ratio ("
        f"{family.source('l2_stream_ratio')}): an estimate of the L2 plateau"))}


def _scattered(tables: Tables, tag: str) -> dict:
    """``dram_scattered_fraction`` from an ``l2_cache`` table and the stream table
    of the same GPU (module docstring): ``tables.scattered`` with
    ``tables.scattered_stream``, else ``tables.l2`` with ``tables.stream``."""
    if tables.scattered is not None:
        l2, stream = tables.scattered, tables.scattered_stream
        if stream is None:
            raise CalibrationError("--scattered needs --scattered-stream: the stream table of "
                                   "the GPU whose l2_cache table it is")
    elif tables.l2 is not None and mb.reaches_dram(tables.l2):
        l2, stream = tables.l2, tables.stream
    else:  # no such measurement: the file gets no many-stream term (the CLI says so)
        return {}
    sc = mb.scattered(l2, stream)
    return {"dram_scattered_fraction": _entry(round(sc.fraction, 3), (
        f"{_name(l2)} {tag}: median bandwidth of the {sc.rows} data sets of at least "
        f"{mb.SCATTERED_KB / 2**20:g} GiB ({sc.bandwidth:.0f} GB/s: every block streams its "
        f"own run, beyond every cache) over the read_GBs plateau of {_name(stream)} "
        f"({sc.read:.0f} GB/s), capped at 1: DRAM with many concurrent streams against one"))}


def _fp_overlap(table: Path | None, tag: str) -> dict:
    """``fp_overlap_exponent``: fitted on the roofline table's transition (MODEL.md §11)."""
    if table is None:
        return {}
    o = mb.fp_overlap(table)
    return {"fp_overlap_exponent": _entry(round(o.exponent, 2), (
        f"{_name(table)} {tag}: p-norm exponent of FP and memory time fitted on "
        f"the {o.rows} transition rows (mean error {100 * o.mape:.1f} %)"))}


def _l1_overlap(out: dict, base: dict) -> dict:
    """``overlap_exponent`` from ``fp_overlap_exponent`` when the base has no
    kernel-fitted one (MODEL.md §11)."""
    if "overlap_exponent" in base or "fp_overlap_exponent" not in out:
        return {}
    return {"overlap_exponent": _entry(out["fp_overlap_exponent"]["value"], (
        "no kernel measurements on this GPU, so no kernel-fitted value: the FP/memory "
        "exponent (fp_overlap_exponent) stands in for L1 work too"))}


def _launch_overhead(table: Path | None, tag: str) -> dict:
    """``launch_overhead_us``: back-to-back launches of the small-kernels table."""
    if table is None:
        return {}
    us = mb.launch_overhead_us(table)
    return {"launch_overhead_us": _entry(round(us, 2), (
        f"{_name(table)} {tag}: median wall time per launch of back-to-back "
        f"kernels of at most {mb.SMALL} elements"))}


def _block_launch(table: Path | None, base: dict, base_path: Path, tag: str) -> dict:
    """``block_launch_ns``: the launches of small blocks in the small-kernels
    table (:func:`microbench.block_launch_ns`); nothing where none is held back."""
    if table is None:
        return {}
    sms = _base_value(base, "sms", base_path, "the SM / CU count, from the data sheet")
    found = mb.block_launch_ns(table, int(sms))
    if found is None:
        return {}
    ns, rows = found
    return {"block_launch_ns": _entry(round(ns, 1), (
        f"{_name(table)} {tag}: the {rows} launches of at least half the largest size "
        f"whose blocks move under {mb.BLOCK_BOUND:g} of the best block's bandwidth, "
        f"{int(sms)} SMs times a block's bytes over the bandwidth, median"))}


def _l1_size(out: dict, base: dict, base_path: Path, table: Path | None, tag: str) -> dict:
    """``l1_bytes`` confirmed by the L1 table's cliff (within a factor 2),
    noted in its source."""
    if table is None:
        return {}
    l1 = _base_value(base, "l1_bytes", base_path, "the L1 size, from the data sheet")
    lo, hi = mb.l1_cliff_kb(table)
    if not lo * 1024 / 2 <= l1 <= hi * 1024 * 2:
        raise CalibrationError(
            f"{table}: the L1 cliff lies between {lo:g} and {hi:g} kB, but the base "
            f"says l1_bytes = {l1:g}: check the data sheet figure")
    entry = dict(out["l1_bytes"])
    entry["source"] = (f"{entry['source']}; {_name(table)} {tag} shows the cliff "
                       f"between {lo:g} and {hi:g} kB")
    return {"l1_bytes": entry}


def _grounding(out: dict, grounding: str) -> dict:
    """``grounding``: as asked, unless the base says "kernels" (module docstring)."""
    if grounding not in ("micro-benchmarks", "datasheet"):
        raise CalibrationError(f"grounding must be 'micro-benchmarks' or 'datasheet', got "
                               f"{grounding!r}")
    return {} if out.get("grounding") == "kernels" else {"grounding": grounding}


def _check_complete(out: dict, base_path: Path) -> None:
    """Every parameter a machine file and the default model need is there."""
    missing = [k for k in REQUIRED_PARAMETERS if k not in out]
    if missing:
        raise CalibrationError(
            f"the machine file needs {missing}: give the tables that determine them (--l2: "
            f"l2_bandwidth) or put them in the base file {base_path} with their sources")
    missing = [k for k in LATENCY_TABLE.required() if k not in out]
    if missing:
        raise CalibrationError(
            f"the default model needs {missing}: give the tables that determine them "
            "(--roofline: fp_overlap_exponent, --small-kernels: launch_overhead_us) or put "
            f"them in the base file {base_path} with their sources")


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    raise CalibrationError(f"cannot write {v!r} to a machine file")


def toml_text(data: dict, header: str = "") -> str:
    """A machine file's text in the format this warpspeed writes: the format
    version and the other plain keys, then the tables in the order of
    :class:`~warpspeed.machine.Machine`, then each timing table's entries
    (``[latency.KEY]``, in the order of its parameters; the entries of
    ``data``'s top level that format 2 keeps there moved in:
    :func:`~warpspeed.machine_format.nest`)."""
    data = {**nest(data), "format_version": FORMAT_VERSION}
    lines = [f"# {x}" for x in header.splitlines()] + ([""] if header else [])
    plain = [k for k in data if not isinstance(data[k], dict)]
    for k in sorted(plain, key=lambda k: (PLAIN_KEYS.index(k) if k in PLAIN_KEYS else 99, k)):
        lines.append(f"{k} = {_value(data[k])}")
    order = [f.name for f in fields(Machine)]
    tables = [k for k in data if isinstance(data[k], dict)]
    timing = [k for k in tables if k not in order and "value" not in data[k]]
    for k in sorted(set(tables) - set(timing), key=lambda k: (
            order.index(k) if k in order else len(order), tables.index(k))):
        lines += ["", *_table(k, data[k])]
    keys = {t.name: t.keys() for t in parameter_tables()}
    for t in timing:
        known = keys.get(t, ())
        for k in sorted(data[t], key=lambda k: known.index(k) if k in known else len(known)):
            lines += ["", *_table(f"{t}.{k}", data[t][k])]
    return "\n".join(lines) + "\n"


def _table(name: str, entry: dict) -> list[str]:
    """One table of a machine file: its header, ``value`` and ``source`` first."""
    keys = [x for x in ("value", "source") if x in entry] + [
        x for x in entry if x not in ("value", "source")]
    return [f"[{name}]", *(f"{x} = {_value(entry[x])}" for x in keys)]


def write_machine(data: dict, out: Path, header: str = "") -> Machine:
    """Write the machine file and load it back (the loader and the timing
    models check every key and range; a failure names the key)."""
    out = Path(out)
    try:
        out.write_text(toml_text(data, header))
    except OSError as exc:
        raise MachineError(f"cannot write {out}: {exc.strerror or exc}; give --out a file in "
                           "an existing, writable folder") from exc
    return load_machine(out)
