"""The command line's tables (MODEL.md §14: what the outputs mean): every
column header carries its unit, and no printed line is wider than the
terminal (``COLUMNS`` or the terminal's size; 120 when the output is not a
terminal). When the columns do not fit, the least important ones are left
out and a caption names them; the rest is wrapped by ``rich``.

Nothing here computes a number: the tables show :class:`warpspeed.Prediction`
fields and machine-file values as they are.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..machine import Machine
from ..model import Prediction
from ..timing.latency_parameters import given
from .words import NVIDIA, Words, words

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod
    from rich.table import Table

#: Width when the output is not a terminal and ``COLUMNS`` is unset.
DEFAULT_WIDTH = 120
#: The narrowest width a table is laid out for.
MIN_WIDTH = 40


@dataclass(frozen=True)
class Column:
    """A table column: its name, the unit shown under it, and how early it
    is left out when the terminal is narrow (0: never; higher: earlier)."""

    name: str
    unit: str = ""
    drop: int = 0
    justify: JustifyMethod = "right"

    @property
    def header(self) -> str:
        return f"{self.name}\n{self.unit}" if self.unit else self.name


def terminal_width() -> int:
    """``COLUMNS``, else the terminal's width, else :data:`DEFAULT_WIDTH`."""
    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)


def console(width: int | None = None) -> Console:
    """A ``rich`` console that wraps at ``width`` (default: the terminal's)."""
    from rich.console import Console

    return Console(width=width or terminal_width(), highlight=False, markup=False)


def _cell_width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _needed(columns: Sequence[Column], rows: Sequence[Sequence[str]], keep: list[int]) -> int:
    """Characters of a ``rich`` table with the columns ``keep``: each column
    its widest cell plus one space either side, one border between columns
    and at both edges."""
    widths = [max([_cell_width(columns[i].header)] + [_cell_width(r[i]) for r in rows])
              for i in keep]
    return sum(w + 3 for w in widths) + 1


def fitted_table(columns: Sequence[Column], rows: Sequence[Sequence[str]],
                 width: int | None = None) -> Table:
    """A ``rich`` table of ``rows`` that fits ``width`` characters: columns
    are left out, highest ``drop`` first, until the rest fits; a caption
    names them. Columns with ``drop`` 0 always stay (``rich`` wraps their
    cells if they still do not fit)."""
    from rich.table import Table

    width = width or terminal_width()
    keep = list(range(len(columns)))
    dropped: list[str] = []
    order = sorted((i for i, c in enumerate(columns) if c.drop),
                   key=lambda i: (-columns[i].drop, -i))
    for i in order:
        if _needed(columns, rows, keep) <= width:
            break
        keep.remove(i)
        dropped.append(columns[i].name)
    caption = (f"left out for the terminal width ({width} columns): {', '.join(dropped)}; "
               "--json shows everything") if dropped else None
    table = Table(caption=caption, caption_justify="left")
    for i in keep:
        table.add_column(columns[i].header, justify=columns[i].justify)
    for r in rows:
        table.add_row(*(r[i] for i in keep))
    return table


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v)


def prediction_columns(w: Words = NVIDIA) -> tuple[Column, ...]:
    """The prediction table's columns (MODEL.md §14): volumes in bytes per
    lattice update, limits and results in GLup/s; blocks per SM (CU) and L1
    cycles per warp (wavefront) in the vendor's words (:mod:`.words`)."""
    return (
        Column("block", justify="left"), Column("fold", justify="left"),
        Column(f"blk/{w.sm}", "blocks", 3), Column("L1", f"cyc/{w.wave}-Lup", 4),
        Column("L1 ld", "B/Lup", 6), Column("L2 ld", "B/Lup", 5), Column("L2 st", "B/Lup", 6),
        Column("DRAM ld", "B/Lup", 2), Column("DRAM st", "B/Lup", 3),
        Column("FP lim", "GLup/s", 7), Column("L1 lim", "GLup/s", 7),
        Column("L2 lim", "GLup/s", 7), Column("DRAM lim", "GLup/s", 7),
        Column("roofline", "GLup/s", 1), Column("GLup/s", "predicted"),
        Column("limiter", justify="left"),
    )


#: The prediction table's columns on an NVIDIA machine.
PREDICTION_COLUMNS = prediction_columns()


def prediction_table(preds: Sequence[Prediction], width: int | None = None,
                     vendor: str = "NVIDIA") -> Table:
    """Predictions, one row each (:func:`prediction_columns` in ``vendor``'s
    words)."""
    rows = []
    for p in preds:
        v, lim = p.volumes, p.limits
        rows.append([
            ",".join(map(str, p.block)), ",".join(map(str, p.fold)), str(p.blocks_per_sm),
            _fmt(p.l1_cycles), _fmt(v.l1_load), _fmt(v.l2_load), _fmt(v.l2_store),
            _fmt(v.dram_load), _fmt(v.dram_store), _fmt(lim["fp"]), _fmt(lim["l1"]),
            _fmt(lim["l2"]), _fmt(lim["dram"]),
            _fmt(p.terms.get("roofline_glups", p.glups)), _fmt(p.glups), p.limiter,
        ])
    return fitted_table(prediction_columns(words(vendor)), rows, width)


def default_dram(m: Machine) -> str:
    """The DRAM bandwidths the default model reads: the copy (one load per
    store) and the loads-only plateau, GB/s; "-" without them (MODEL.md §11)."""
    p = given(m)
    if p.get("dram_bw_copy") is None or p.get("dram_bw_read") is None:
        return "-"
    return f"{p['dram_bw_copy']:.0f} / {p['dram_bw_read']:.0f}"


MACHINE_COLUMNS = (
    Column("name", justify="left"), Column("vendor", justify="left", drop=5),
    Column("architecture", justify="left", drop=4), Column("SMs / CUs", "count", 6),
    Column("GHz", "clock", 6), Column("L2 size", "MiB", 5),
    Column("memory", "type, ECC", 4, justify="left"), Column("DRAM paper", "GB/s", 3),
    Column("DRAM default", "GB/s copy / read", 2),
    Column("L2 bw", "GB/s", 5), Column("grounding", justify="left", drop=1),
    Column("validated on", "kernel sets", 2, justify="left"),
    Column("description", justify="left", drop=8),
)


def machine_table(rows: Sequence[dict[str, Any]], width: int | None = None) -> Table:
    """The built-in machines (``warpspeed machines``): one row per
    :func:`machine_row`."""
    cells = [[r["name"], r["vendor"], r["architecture"],
              f"{r['sms']} {words(r['vendor']).sm}s", f"{r['clock_ghz']:g}",
              f"{r['l2_bytes'] / 2**20:g}", memory_cell(r), f"{r['dram_bandwidth']:g}",
              r["dram_default"],
              f"{r['l2_bandwidth']:g}", r["grounding"],
              ", ".join(r["validated_on"]) or "none", r["description"]] for r in rows]
    return fitted_table(MACHINE_COLUMNS, cells, width)


def memory_cell(row: dict[str, Any]) -> str:
    """The memory system as the machine file describes it (MODEL.md §11,
    "Memory systems"): its type with " ECC" when error correction is on,
    "-" for a file without the description."""
    if not row["memory"]:
        return "-"
    return f"{row['memory']} ECC" if row["ecc"] else row["memory"]


def machine_row(m: Machine, validated_on: Sequence[str] = ()) -> dict[str, Any]:
    """What ``warpspeed machines`` shows of ``m`` (and prints with
    ``--json``): ``dram_bandwidth`` is the paper model's figure,
    ``dram_default`` the default model's plateaus; ``validated_on`` the
    kernel measurement sets run on it."""
    p = given(m)
    return {
        "name": m.name, "description": m.description, "validated": m.validated,
        "vendor": m.vendor, "architecture": m.architecture, "grounding": m.grounding,
        "validated_on": list(validated_on),
        "sms": m.sms, "clock_ghz": m.clock_ghz, "l2_bytes": m.l2_bytes,
        "memory": m.memory, "ecc": m.ecc,
        "dram_bandwidth": m.dram_bandwidth, "dram_default": default_dram(m),
        "dram_bw_read": p.get("dram_bw_read"), "dram_bw_copy": p.get("dram_bw_copy"),
        "dram_bw_write": p.get("dram_bw_write"), "l2_bandwidth": m.l2_bandwidth, "fits": m.fits,
    }


__all__ = ["DEFAULT_WIDTH", "MACHINE_COLUMNS", "PREDICTION_COLUMNS", "Column", "console",
           "default_dram", "fitted_table", "machine_row", "machine_table", "memory_cell",
           "prediction_columns", "prediction_table", "terminal_width"]
