"""The measurement CSV (MODEL.md §9): its columns (:data:`SCHEMA`, each
documented in the docstring of :mod:`warpspeed.measure`), one
:class:`Measurement` per row, and the round trip through :func:`write_csv`
and :func:`read_csv`. Pure: needs no GPU."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ..errors import WarpspeedError
from ..input import triples

Triple = triples.Triple


class MeasurementError(WarpspeedError, ValueError):
    """A measurement cannot be made or read: a bad CSV, a stencil that
    cannot be generated, no GPU or no CuPy on the GPU path."""


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Column:
    """One CSV column: its name, unit and meaning."""

    name: str
    unit: str
    meaning: str


SCHEMA: tuple[Column, ...] = (
    Column("machine", "--", "GPU name as the driver reports it (nvidia-smi)"),
    Column("stencil", "--", "stencil module in stencils/ (or .py path)"),
    Column("params", "JSON", "stencil parameters given to generate(), sorted"),
    Column("kernel", "--", "warpspeed kernel name (Kernel.name)"),
    Column("domain", "points", "interior points per axis, X,Y,Z"),
    Column("block", "threads", "thread-block size, X,Y,Z"),
    Column("fold", "Lup/thread", "lattice updates per thread per axis, X,Y,Z"),
    Column("lups", "Lup", "lattice updates per launch (interior points)"),
    Column("registers", "1/thread", "registers per thread of the compiled kernel"),
    Column("time_s", "s", "median kernel time of the timed launches"),
    Column("time_min_s", "s", "minimum kernel time of the timed launches"),
    Column("repetitions", "--", "number of timed launches"),
    Column("glups", "GLup/s", "lups / time_s / 1e9"),
    Column("dram_load", "B/Lup", "dram__bytes_read.sum / lups"),
    Column("dram_store", "B/Lup", "dram__bytes_write.sum / lups"),
    Column("l2_load", "B/Lup", "lts__t_sectors_srcunit_tex_op_read.sum * 32 / lups"),
    Column("l2_store", "B/Lup", "lts__t_sectors_srcunit_tex_op_write.sum * 32 / lups"),
    Column("l1_load", "B/Lup", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum * 32 / lups"),
    Column("l1_wavefronts", "1/Lup", "l1tex__data_pipe_lsu_wavefronts.sum / lups"),
    Column("ncu_time_s", "s", "gpu__time_duration.sum of the profiled launch"),
    Column("ncu_sm_clock_mhz", "MHz", "sm__cycles_elapsed.avg.per_second under ncu"),
    Column("achieved_occupancy", "%", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    Column("sm_clock_mhz", "MHz", "median SM clock while timing (nvidia-smi)"),
    Column("mem_clock_mhz", "MHz", "median memory clock while timing (nvidia-smi)"),
    Column("driver", "--", "NVIDIA driver version"),
    Column("cuda", "--", "CUDA runtime version used by CuPy"),
    Column("ncu", "--", "Nsight Compute version"),
    Column("cupy", "--", "CuPy version"),
    Column("pystencils", "--", "pystencils version"),
    Column("warpspeed", "--", "warpspeed version"),
    Column("date", "ISO 8601", "UTC time the row was measured"),
    Column("note", "--", "free text (skipped counters, warnings)"),
)

COLUMNS: tuple[str, ...] = tuple(c.name for c in SCHEMA)

#: Measured volumes (B/Lup) and what the model predicts for them (MODEL.md §9).
VOLUME_COLUMNS = ("dram_load", "dram_store", "l2_load", "l2_store", "l1_load")


def format_triple(t: Sequence[int]) -> str:
    return ",".join(str(int(v)) for v in t)


def parse_triple(text: str, what: str = "value") -> Triple:
    """``"32,8,4"`` or ``"32x8x4"`` -> ``(32, 8, 4)``; fewer than three
    numbers are padded with 1 (:mod:`warpspeed.input.triples`)."""
    return triples.parse_triple(text, what, pad=True, error=MeasurementError)


def params_json(params: Mapping[str, Any]) -> str:
    """Canonical JSON of stencil parameters (sorted keys, tuples as lists)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=list)


def config_key(stencil: str, params: str, fold: Triple, block: Triple
               ) -> tuple[str, str, Triple, Triple]:
    """What identifies a configuration: the stencil, its parameters in
    canonical JSON (files that space their JSON differently name the same
    configuration), the fold and the block."""
    return (stencil, params_json(params_from_json(params)), fold, block)


def params_from_json(text: str) -> dict[str, Any]:
    """Inverse of :func:`params_json`; lists become tuples again."""
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise MeasurementError(f"params is not valid JSON: {text!r}") from exc
    if not isinstance(data, dict):
        raise MeasurementError(f"params must be a JSON object, got {text!r}")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}


@dataclass(frozen=True)
class Measurement:
    """One configuration measured on a GPU: one row of the CSV (:data:`SCHEMA`).

    ``None`` marks a quantity that was not measured (ncu unavailable, a
    counter the GPU lacks); it is written as an empty cell."""

    machine: str
    stencil: str
    params: str
    kernel: str
    domain: Triple
    block: Triple
    fold: Triple
    lups: int
    time_s: float
    glups: float
    registers: int | None = None
    time_min_s: float | None = None
    repetitions: int | None = None
    dram_load: float | None = None
    dram_store: float | None = None
    l2_load: float | None = None
    l2_store: float | None = None
    l1_load: float | None = None
    l1_wavefronts: float | None = None
    ncu_time_s: float | None = None
    ncu_sm_clock_mhz: float | None = None
    achieved_occupancy: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    driver: str = ""
    cuda: str = ""
    ncu: str = ""
    cupy: str = ""
    pystencils: str = ""
    warpspeed: str = ""
    date: str = ""
    note: str = ""

    @property
    def parameters(self) -> dict[str, Any]:
        """The stencil parameters as keyword arguments."""
        return params_from_json(self.params)

    @property
    def config(self) -> tuple[str, str, Triple, Triple]:
        """What identifies the configuration: (stencil, params, fold, block),
        the parameters in canonical JSON (files written with other spacing
        name the same configuration)."""
        return config_key(self.stencil, self.params, self.fold, self.block)

    def to_row(self) -> dict[str, str]:
        """The CSV row: every column of :data:`SCHEMA`, as text."""
        out = {}
        for name in COLUMNS:
            v = getattr(self, name)
            if v is None:
                out[name] = ""
            elif isinstance(v, tuple):
                out[name] = format_triple(v)
            elif isinstance(v, float):
                out[name] = repr(v)
            else:
                out[name] = str(v)
        return out

    @classmethod
    def from_row(cls, row: Mapping[str, str]) -> Measurement:
        """Parse a CSV row (as :func:`csv.DictReader` gives it)."""
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise MeasurementError(f"measurement row lacks the columns {missing}")
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            text = (row[f.name] or "").strip()
            typ = str(f.type)
            try:
                if typ == "Triple":
                    kwargs[f.name] = parse_triple(text, f.name)
                elif typ.startswith("int"):
                    kwargs[f.name] = int(text) if text else None
                elif typ.startswith("float"):
                    kwargs[f.name] = float(text) if text else None
                else:
                    kwargs[f.name] = text
            except ValueError as exc:
                raise MeasurementError(f"column {f.name}: not a valid value: {text!r}") from exc
        for need in ("lups", "time_s", "glups"):
            if kwargs[need] is None:
                raise MeasurementError(f"measurement row has no {need}")
        return cls(**kwargs)


#: How a refusal's note says why (``note`` column): "refused: " and the reason.
REFUSED = "refused: "


@dataclass(frozen=True)
class Refusal:
    """A configuration that could not be timed (a block the compiled kernel
    cannot launch, a program that does not compile): a row of the CSV whose
    time and GLup/s are empty and whose ``note`` says why, after
    :data:`REFUSED`. :func:`read_csv` leaves these rows out (a configuration
    without a time is one that could not launch); :func:`read_refusals`
    reads them."""

    machine: str
    stencil: str
    params: str
    kernel: str
    domain: Triple
    block: Triple
    fold: Triple
    lups: int
    reason: str
    registers: int | None = None
    set_note: str = ""
    versions: tuple[tuple[str, str], ...] = ()
    date: str = ""

    @property
    def config(self) -> tuple[str, str, Triple, Triple]:
        """What identifies the configuration: (stencil, params, fold, block),
        the parameters in canonical JSON (files written with other spacing
        name the same configuration)."""
        return config_key(self.stencil, self.params, self.fold, self.block)

    def to_row(self) -> dict[str, str]:
        """The CSV row: identity columns filled, numbers empty, the reason in ``note``."""
        out = dict.fromkeys(COLUMNS, "")
        out.update(machine=self.machine, stencil=self.stencil, params=self.params,
                   kernel=self.kernel, domain=format_triple(self.domain),
                   block=format_triple(self.block), fold=format_triple(self.fold),
                   lups=str(self.lups), date=self.date,
                   registers="" if self.registers is None else str(self.registers),
                   note="; ".join(x for x in (self.set_note, REFUSED + self.reason) if x))
        out.update({k: v for k, v in self.versions if k in out})
        return out

    @classmethod
    def from_row(cls, row: Mapping[str, str]) -> Refusal:
        """Parse a refusal row (:func:`is_refusal`)."""
        note = row.get("note", "")
        set_note, _, reason = note.rpartition(REFUSED)
        regs = (row.get("registers") or "").strip()
        return cls(
            machine=row["machine"], stencil=row["stencil"], params=row["params"],
            kernel=row["kernel"], domain=parse_triple(row["domain"], "domain"),
            block=parse_triple(row["block"], "block"), fold=parse_triple(row["fold"], "fold"),
            lups=int(row["lups"]), reason=reason.strip(),
            registers=int(regs) if regs else None, set_note=set_note.rstrip("; "),
            versions=tuple((k, row[k]) for k in ("driver", "cuda", "ncu", "cupy", "pystencils",
                                                 "warpspeed") if row.get(k)),
            date=row.get("date", ""),
        )


def is_refusal(row: Mapping[str, str]) -> bool:
    """Whether a CSV row records a refusal: no time, no GLup/s, and a note
    saying why (:class:`Refusal`)."""
    return (not (row.get("time_s") or "").strip() and not (row.get("glups") or "").strip()
            and REFUSED in (row.get("note") or ""))


def write_csv(path: str | Path, rows: Iterable[Measurement | Refusal],
              append: bool = True) -> Path:
    """Write ``rows`` (measurements and refusals) to ``path`` (header first if
    the file is new or ``append`` is false); an existing file must have the
    same header."""
    p = Path(path)
    new = not (append and p.is_file() and p.stat().st_size > 0)
    if not new:
        with p.open(newline="") as fh:
            header = next(csv.reader(fh), [])
        if tuple(header) != COLUMNS:
            raise MeasurementError(
                f"{p} has other columns than warpspeed.measure.SCHEMA; write to a new file"
            )
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w" if new else "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        if new:
            writer.writeheader()
        for m in rows:
            writer.writerow(m.to_row())
    return p


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """The rows of a measurement CSV as text (header checked)."""
    p = Path(path)
    if not p.is_file():
        raise MeasurementError(f"measurement file {p} does not exist")
    with p.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = tuple(reader.fieldnames or ())
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise MeasurementError(f"{p} is not a warpspeed measurement CSV: no columns {missing}")
        return list(reader)


def read_csv(path: str | Path) -> list[Measurement]:
    """All measurements of a CSV written by :func:`write_csv` (refusals left out)."""
    return [Measurement.from_row(r) for r in read_rows(path) if not is_refusal(r)]


def read_refusals(path: str | Path) -> list[Refusal]:
    """The refusals of a CSV written by :func:`write_csv`."""
    return [Refusal.from_row(r) for r in read_rows(path) if is_refusal(r)]
