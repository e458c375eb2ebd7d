"""What the web calculator shows, as data and figures: HTML snippets for
the prediction, the explanation and the errors, Bokeh bar charts of the
limits and of the default model's terms, the ranking as a table and the
layer-condition figure (drawn by :func:`warpspeed.reports.plot.sweep`).

Pure functions of library objects; no Panel. Every text that may hold
user input is HTML-escaped. Numbers carry their full value in a
``data-value`` attribute beside the rounded text, so that a test can read
them back exactly.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..model import Prediction
from ..reports.advice import Advice, explanation_lines
from ..reports.plot import LIMITER_NAME, sweep
from ..reports.words import words
from ..search.rank import Ranking
from ..timing import DEFAULT_MODEL
from .explore import LayerConditions

if TYPE_CHECKING:
    import pandas as pd
    from bokeh.plotting import figure as BokehFigure
    from matplotlib.figure import Figure

#: The volumes shown, in this order, with their labels.
VOLUMES = (
    ("l1_load", "L1 load (register side)"),
    ("l2_load", "L2 load (L2 → L1)"),
    ("l2_store", "L2 store (L1 → L2)"),
    ("dram_load", "DRAM load"),
    ("dram_store", "DRAM store"),
)
LIMITS = ("fp", "l1", "l2", "dram")
#: Colours of the limiters (the palette of :mod:`warpspeed.reports.plot`).
COLORS = {"dram": "#1f77b4", "l2": "#ff7f0e", "l1": "#2ca02c", "fp": "#9467bd"}


def number(value: float | None, key: str, digits: int = 2) -> str:
    """A ``<span>`` with the rounded value and the exact one in ``data-value``."""
    if value is None:
        return f'<span class="ws-{key}" data-value="">-</span>'
    return f'<span class="ws-{key}" data-value="{float(value)!r}">{value:.{digits}f}</span>'


def error_html(message: str) -> str:
    """A message of the library, escaped, styled as an error."""
    return (f'<div class="ws-error" style="color:#b00020;font-size:0.9em;white-space:pre-wrap">'
            f"{html.escape(message)}</div>")


def summary_html(p: Prediction, vendor: str = "NVIDIA") -> str:
    """Headline of a prediction: GLup/s, binding limiter, launch (in
    ``vendor``'s words: blocks per SM or CU, cycles per warp or wavefront)."""
    name, w = LIMITER_NAME.get(p.limiter, p.limiter), words(vendor)
    return (
        f'<div style="font-size:1.3em"><b>{number(p.glups, "glups")} GLup/s</b>, '
        f'bound by <b class="ws-limiter">{html.escape(name)}</b></div>'
        f"<div>{html.escape(p.kernel)} on {html.escape(p.machine)} ({html.escape(p.model)} "
        f"model), block {','.join(map(str, p.block))}, fold {','.join(map(str, p.fold))}: "
        f"{p.blocks_per_sm} blocks per {w.sm} (limited by "
        f"{html.escape(p.occupancy_limited_by)}), waves of {p.wave_blocks} blocks, L1 "
        f"{number(p.l1_cycles, 'l1_cycles')} cycles per {w.warp} and lattice update; "
        f"<span class='ws-registers'>"
        f"{p.registers} registers per thread ({html.escape(p.registers_source)})</span></div>"
        f"<div class='ws-evidence'>{html.escape(p.evidence.phrase)}</div>"
    )


def volumes_html(p: Prediction) -> str:
    """The volumes per level (B per lattice update) and the limits (GLup/s)."""
    v = p.volumes
    rows = "".join(
        f"<tr><td>{label}</td><td style='text-align:right'>{number(getattr(v, key), key)}"
        "</td></tr>"
        for key, label in VOLUMES
    )
    lims = "".join(
        f"<tr><td>{LIMITER_NAME[k]}{' (binding)' if k == p.limiter else ''}</td>"
        f"<td style='text-align:right'>{number(p.limits.get(k), 'limit-' + k)}</td></tr>"
        for k in LIMITS
    )
    style = "border-collapse:collapse;margin-right:2em"
    return (
        f"<div style='display:flex'><table class='ws-volumes' style='{style}'>"
        f"<tr><th>volume</th><th>B/Lup</th></tr>{rows}</table>"
        f"<table class='ws-limits' style='{style}'><tr><th>limit</th><th>GLup/s</th></tr>"
        f"{lims}</table></div>"
    )


def explanation_html(p: Prediction, a: Advice) -> str:
    """:func:`explanation_lines` as an escaped HTML list."""
    items = "".join(f"<li>{html.escape(line.removeprefix('- '))}</li>"
                    for line in explanation_lines(p, a))
    return f"<div class='ws-explain'><b>Why</b><ul>{items}</ul></div>"


def limits_figure(p: Prediction) -> BokehFigure:
    """Horizontal bars of the four limits (GLup/s), the binding one named,
    the prediction as a vertical line."""
    from bokeh.models import ColumnDataSource, DataRange1d, FactorRange
    from bokeh.models.annotations import Span
    from bokeh.plotting import figure

    keys = [k for k in LIMITS if p.limits.get(k) is not None]
    names = [LIMITER_NAME[k] + (" (binding)" if k == p.limiter else "") for k in keys]
    src = ColumnDataSource({"name": names, "value": [p.limits[k] for k in keys],
                            "color": [COLORS[k] for k in keys]})
    fig = figure(y_range=FactorRange(factors=names), x_range=DataRange1d(start=0), height=220,
                 width=420, title="limits (GLup/s)", toolbar_location=None,
                 x_axis_label="GLup/s")
    fig.hbar(y="name", right="value", height=0.7, color="color", source=src)
    fig.add_layout(Span(location=p.glups, dimension="height", line_color="black",
                        line_dash="dashed", line_width=2))
    return fig


def terms_figure(p: Prediction) -> BokehFigure | None:
    """Bars of the default model's times per limiter (ns per lattice
    update), a dashed line at the predicted time (core and memory sides
    overlapped, last partial wave); None when the prediction has no terms
    (the paper model)."""
    keys = [k for k in LIMITS if f"t_{k}_ns" in p.terms]
    if not keys:
        return None
    from bokeh.models import ColumnDataSource, DataRange1d, FactorRange
    from bokeh.models.annotations import Span
    from bokeh.plotting import figure

    names = [LIMITER_NAME[k] for k in keys]
    src = ColumnDataSource({"name": names, "value": [p.terms[f"t_{k}_ns"] for k in keys],
                            "color": [COLORS[k] for k in keys]})
    fig = figure(y_range=FactorRange(factors=names), x_range=DataRange1d(start=0), height=220,
                 width=420, toolbar_location=None,
                 title=f"{DEFAULT_MODEL} model: time per limiter (ns per lattice update)",
                 x_axis_label="ns / Lup (dashed: predicted time)")
    fig.hbar(y="name", right="value", height=0.7, color="color", source=src)
    fig.add_layout(Span(location=1.0 / p.glups, dimension="height", line_color="black",
                        line_dash="dashed", line_width=2))
    return fig


def ranking_frame(r: Ranking) -> pd.DataFrame:
    """One row per configuration, best first: block, fold, GLup/s, limiter,
    occupancy, volumes and limits."""
    import pandas as pd

    rows = []
    for i, p in enumerate(r.predictions, 1):
        v = p.volumes
        rows.append({
            "rank": i, "block": ",".join(map(str, p.block)), "fold": ",".join(map(str, p.fold)),
            "GLup/s": round(p.glups, 3), "limiter": LIMITER_NAME.get(p.limiter, p.limiter),
            "blocks/SM": p.blocks_per_sm, "L1 cyc": round(p.l1_cycles, 2),
            "L2 load": round(v.l2_load, 2), "DRAM load": round(v.dram_load, 2),
            "DRAM store": round(v.dram_store, 2),
            **{f"{LIMITER_NAME[k]} limit": None if (x := p.limits.get(k)) is None
               else round(float(x), 2) for k in LIMITS},
        })
    return pd.DataFrame(rows)


def ranking_summary(r: Ranking, seconds: float) -> str:
    """One line about a ranking: how many configurations, classes and waves."""
    return (f"{r.kernel} on {r.machine} ({r.model} model): {len(r.predictions)} "
            f"configurations ranked, {len(r.excluded)} excluded, {r.waves} wave sets, "
            f"{seconds:.1f} s. Click a row to see that configuration.")


def layer_conditions_figure(lc: LayerConditions) -> Figure:
    """The paper's Fig. 23 for the kernel: DRAM volume (load + store) per
    lattice update against the plane size N at constant total size."""
    ticks = [n for n in (64, 128, 256, 512, 1024, 2048, 4096, 8192)
             if lc.planes[0] <= n <= lc.planes[-1]]
    fig = sweep(
        list(lc.planes), {k: list(v) for k, v in lc.series.items()}, quantity="dram",
        logx=True, xticks=ticks or None,
        xlabel=f"plane size N (domain N x N x {lc.total:.3g}/N², lattice points)",
        title=f"DRAM volume vs plane size on {lc.machine}, by block",
    )
    fig.axes[0].set_ylim(bottom=0)
    fig.set_size_inches(7.5, 4.2)
    return fig


__all__ = [
    "error_html",
    "explanation_html",
    "explanation_lines",
    "layer_conditions_figure",
    "limits_figure",
    "ranking_frame",
    "ranking_summary",
    "summary_html",
    "terms_figure",
    "volumes_html",
]
