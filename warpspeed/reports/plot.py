"""Figures of predictions: rankings, limits, volume breakdowns and parameter
sweeps (MODEL.md §5-§8; the figures of Ernst et al. 2023, Figs. 15, 19, 23).

matplotlib is optional (``pip install 'warpspeed[plot]'``): it is imported
inside the functions that draw, and a missing installation raises
:class:`ModuleNotFoundError` with the command that installs it. Nothing
global is touched: every function builds a :class:`matplotlib.figure.Figure`
directly (no ``pyplot`` state, no ``rcParams``) and returns it; save it with
``fig.savefig(...)`` or display it in Jupyter.

Inputs are a sequence of :class:`~warpspeed.model.Prediction`, a single
prediction, or any object with a ``predictions`` attribute holding them (a
:class:`warpspeed.search.rank.Ranking`, duck-typed). Their order is kept: pass a
ranking to get the bars best first.

**Colours.** A block shape ``(x, y, z)`` is drawn in the paper's colour
``RGB(log x / log 256, log y / log 256, log z / log 64)``, each channel
clipped to ``[0, 1]`` (:func:`block_color`): x-long blocks are red, y-long
green, z-deep blue, ``(1, 1, 1)`` black. The binding limiter (MODEL.md §8)
is shown by the hatch of a bar (:data:`LIMITER_HATCH`) or the marker of a
point (:data:`LIMITER_MARKER`).

**Volume breakdown**: :func:`volume_breakdown` of
:mod:`warpspeed.reports.breakdown` (re-exported here).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..model import LIMITERS, Prediction
from .breakdown import LEVELS, LevelBreakdown, Part, volume_breakdown

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

LEVEL_TITLES: dict[str, str] = {
    "l2_load": "L2 load (L2 → L1)",
    "l2_store": "L2 store (L1 → L2)",
    "dram_load": "DRAM load",
    "dram_store": "DRAM store",
}
#: Every binding limiter a prediction names: the four levels, the atomics
#: (MODEL.md §8) and the default model's launch and partial wave (§11).
BINDING: tuple[str, ...] = (*LIMITERS, "atomics", "launch", "partial wave")
#: Hatch of a bar by the binding limiter.
LIMITER_HATCH: dict[str, str] = {"dram": "", "l2": "//", "l1": "..", "fp": "xx",
                                 "atomics": "++", "launch": "\\\\", "partial wave": "--"}
#: Marker of a point by the binding limiter.
LIMITER_MARKER: dict[str, str] = {"dram": "o", "l2": "s", "l1": "^", "fp": "D",
                                  "atomics": "X", "launch": "v", "partial wave": "P"}
#: Line colour of each limit in :func:`limits_chart`.
LIMITER_COLOR: dict[str, str] = {
    "dram": "tab:blue", "l2": "tab:orange", "l1": "tab:green", "fp": "tab:purple",
}
LIMITER_NAME: dict[str, str] = {"dram": "DRAM", "l2": "L2", "l1": "L1", "fp": "FP",
                                "atomics": "atomics", "launch": "launch",
                                "partial wave": "partial wave"}
#: Fill colour of each breakdown part, by label.
PART_COLOR: dict[str, str] = {
    "compulsory": "#4c72b0",
    "L1 capacity misses": "#dd8452",
    "x/y reuse lost": "#dd8452",
    "z reuse lost": "#c44e52",
    "store evictions": "#8172b3",
    "L1 re-reads missing the L2": "#da8bc3",
    "L2 capacity misses": "#937860",
    "L1 hits": "#ffffff",
    "x/y reuse hits": "#ffffff",
    "z reuse hits": "#ffffff",
}
_SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">")
_HIT_HATCH = {"L1 hits": "///", "x/y reuse hits": "///", "z reuse hits": "\\\\\\"}


# --------------------------------------------------------------------------
# Data (no matplotlib needed)


def block_color(block: Sequence[int]) -> tuple[float, float, float]:
    """The paper's colour of a block shape: ``RGB(log x / log 256,
    log y / log 256, log z / log 64)``, each channel clipped to ``[0, 1]``."""
    x, y, z = (int(v) for v in block)
    if min(x, y, z) < 1:
        raise ValueError(f"block extents must be positive, got {tuple(block)}")
    channels = (math.log(x) / math.log(256), math.log(y) / math.log(256),
                math.log(z) / math.log(64))
    r, g, b = (min(1.0, max(0.0, c)) for c in channels)
    return (r, g, b)


def config_label(p: Prediction) -> str:
    """``"256x2x2"`` for a block, with ``" f121"`` appended for a fold."""
    label = "x".join(str(v) for v in p.block)
    if tuple(p.fold) != (1, 1, 1):
        label += " f" + "".join(str(v) for v in p.fold)
    return label


def predictions_of(obj: Any) -> tuple[Prediction, ...]:
    """The predictions of ``obj``: a Prediction, an iterable of them, or an
    object with a ``predictions`` attribute (a ranking), in their order."""
    if isinstance(obj, Prediction):
        return (obj,)
    items = getattr(obj, "predictions", obj)
    if not isinstance(items, Iterable):
        raise TypeError(f"expected predictions or a ranking, got {type(obj).__name__}")
    out = tuple(items)
    for p in out:
        if not all(hasattr(p, a) for a in ("block", "fold", "glups", "limiter", "volumes")):
            raise TypeError(f"expected Prediction objects, got {type(p).__name__}")
    if not out:
        raise ValueError("no predictions to plot")
    return out


QUANTITIES: dict[str, Callable[[Prediction], float]] = {
    "glups": lambda p: p.glups,
    "dram": lambda p: p.volumes.dram_load + p.volumes.dram_store,
    "dram_load": lambda p: p.volumes.dram_load,
    "dram_store": lambda p: p.volumes.dram_store,
    "l2": lambda p: p.volumes.l2_load + p.volumes.l2_store,
    "l2_load": lambda p: p.volumes.l2_load,
    "l1_cycles": lambda p: p.l1_cycles,
}
QUANTITY_LABELS: dict[str, str] = {
    "glups": "predicted GLup/s",
    "dram": "DRAM volume (load + store), B / Lup",
    "dram_load": "DRAM load volume, B / Lup",
    "dram_store": "DRAM store volume, B / Lup",
    "l2": "L2 volume (load + store), B / Lup",
    "l2_load": "L2 load volume, B / Lup",
    "l1_cycles": "L1 cycles per warp and Lup",
}


# --------------------------------------------------------------------------
# Figures


def _new_figure(figsize: tuple[float, float], nrows: int = 1) -> tuple[Figure, list[Axes]]:
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ModuleNotFoundError(
            "warpspeed.reports.plot needs matplotlib; install it with "
            "pip install 'warpspeed[plot]' (or pip install matplotlib)"
        ) from exc
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, 1, squeeze=False)
    return fig, [row[0] for row in axes]


def _width(n: int) -> float:
    """Figure width in inches for ``n`` bars (about 0.14-0.22 in per bar)."""
    if n <= 60:
        return max(5.0, 1.5 + 0.22 * n)
    return min(24.0, 1.5 + 0.14 * n)


def _config_ticks(ax: Axes, preds: Sequence[Prediction]) -> None:
    n = len(preds)
    ax.set_xticks(range(n))
    size = 8 if n <= 24 else 6 if n <= 80 else 5
    if n <= 12:
        ax.set_xticklabels([config_label(p) for p in preds], rotation=30, ha="right",
                           fontsize=size)
    else:
        ax.set_xticklabels([config_label(p) for p in preds], rotation=90, fontsize=size)
    ax.set_xlim(-0.6, n - 0.4)


def _limiter_legend(ax: Axes, limiters: Iterable[str], bars: bool) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    seen = set(limiters)
    present = [lim for lim in BINDING if lim in seen]
    if bars:
        handles: list[Any] = [
            Patch(facecolor="0.85", edgecolor="0.35", hatch=LIMITER_HATCH[lim],
                  label=f"{LIMITER_NAME[lim]} bound") for lim in present
        ]
    else:
        handles = [
            Line2D([], [], linestyle="", marker=LIMITER_MARKER[lim], color="0.35",
                   label=f"{LIMITER_NAME[lim]} bound") for lim in present
        ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
              title="limiter", title_fontsize=8)


def ranking_bars(
    predictions: Any, *, title: str | None = None, ylabel: str = "predicted GLup/s"
) -> Figure:
    """One bar per configuration, in the given order, height the predicted
    GLup/s (MODEL.md §8), colour :func:`block_color`, hatch the binding
    limiter (:data:`LIMITER_HATCH`)."""
    preds = predictions_of(predictions)
    fig, (ax,) = _new_figure((_width(len(preds)), 4.2))
    for i, p in enumerate(preds):
        ax.bar(i, p.glups, color=block_color(p.block), edgecolor="0.35", linewidth=0.5,
               hatch=LIMITER_HATCH.get(p.limiter, ""))
    _config_ticks(ax, preds)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("block (x × y × z) and fold")
    _limiter_legend(ax, (p.limiter for p in preds), bars=True)
    if title:
        ax.set_title(title)
    return fig


def scatter(
    predictions: Any,
    *,
    measured: Sequence[float] | None = None,
    title: str | None = None,
) -> Figure:
    """Predicted GLup/s per configuration (MODEL.md §8): against the
    position in the sequence, or with ``measured`` (GLup/s, same order)
    predicted against measured with the line ``y = x``. Colour
    :func:`block_color`, marker the binding limiter."""
    preds = predictions_of(predictions)
    if measured is not None and len(measured) != len(preds):
        raise ValueError(f"{len(measured)} measurements for {len(preds)} predictions")
    fig, (ax,) = _new_figure((_width(len(preds)) if measured is None else 5.5, 4.2))
    xs = list(range(len(preds))) if measured is None else [float(m) for m in measured]
    for lim in BINDING:
        idx = [i for i, p in enumerate(preds) if p.limiter == lim]
        if not idx:
            continue
        ax.scatter([xs[i] for i in idx], [preds[i].glups for i in idx],
                   c=[block_color(preds[i].block) for i in idx], marker=LIMITER_MARKER[lim],
                   edgecolors="0.3", linewidths=0.5, s=36, label=LIMITER_NAME[lim])
    if measured is None:
        _config_ticks(ax, preds)
        ax.set_xlabel("configuration (block and fold)")
    else:
        top = max(max(xs), max(p.glups for p in preds)) * 1.05
        ax.plot([0, top], [0, top], color="0.5", linewidth=0.8, linestyle="--")
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel("measured GLup/s")
    ax.set_ylabel("predicted GLup/s")
    _limiter_legend(ax, (p.limiter for p in preds), bars=False)
    if title:
        ax.set_title(title)
    return fig


def breakdown_bars(
    predictions: Any,
    *,
    levels: Sequence[str] = ("l2_load", "dram_load", "dram_store"),
    dram_load: Literal["v3", "v4"] = "v3",
    title: str | None = None,
) -> Figure:
    """Stacked bars of :func:`volume_breakdown` (the paper's Figs. 15, 19;
    MODEL.md §5-§6): one panel per level, one bar per configuration. The
    solid parts (compulsory, then the misses) stack up to the model's
    volume; the reuse hits are stacked above them, white and hatched, and
    are not part of the volume. Tick labels are coloured by
    :func:`block_color`."""
    preds = predictions_of(predictions)
    for lv in levels:
        if lv not in LEVELS:
            raise ValueError(f"unknown level {lv!r}; choose from {', '.join(LEVELS)}")
    fig, axes = _new_figure((_width(len(preds)) + 2.0, 2.6 * len(levels) + 0.6),
                            nrows=len(levels))
    bds = [volume_breakdown(p, dram_load) for p in preds]
    for ax, lv in zip(axes, levels):
        labels = list(dict.fromkeys(part.label for bd in bds for part in bd[lv].parts))
        bottoms = [0.0] * len(preds)
        # Solid parts first (they add up to the volume), hits on top.
        ordered = sorted(labels, key=lambda lab: _HIT_HATCH.get(lab) is not None)
        for lab in ordered:
            heights = []
            for bd in bds:
                vals = [part.value for part in bd[lv].parts if part.label == lab]
                heights.append(vals[0] if vals else 0.0)
            if not any(heights):
                continue
            hit = lab in _HIT_HATCH
            ax.bar(range(len(preds)), heights, bottom=bottoms, label=lab,
                   color=PART_COLOR.get(lab, "0.6"), edgecolor="0.4" if hit else "none",
                   linewidth=0.5, hatch=_HIT_HATCH.get(lab, ""))
            bottoms = [b + hgt for b, hgt in zip(bottoms, heights)]
        ax.scatter(range(len(preds)), [bd[lv].volume for bd in bds], marker="_", s=120,
                   color="black", linewidths=1.5, zorder=3, label="model volume")
        ax.set_ylabel("B / Lup")
        ax.set_title(LEVEL_TITLES[lv] + (" (memLoadV4)" if lv == "dram_load"
                                         and dram_load == "v4" else ""), fontsize=10)
        _config_ticks(ax, preds)
        for tick, p in zip(ax.get_xticklabels(), preds):
            tick.set_color(_dark(block_color(p.block)))
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        fig.suptitle(title)
    return fig


def _dark(rgb: tuple[float, float, float]) -> tuple[float, float, float]:
    """A block colour darkened enough to be readable as text on white."""
    scale = 0.75
    r, g, b = (c * scale for c in rgb)
    return (r, g, b)


def limits_chart(predictions: Any, *, title: str | None = None) -> Figure:
    """The four limits of each configuration (MODEL.md §8), log scale: a
    bar at the prediction (the lowest limit, colour :func:`block_color`) and
    one marker per finite limit; the binding limiter is named above the
    bar."""
    preds = predictions_of(predictions)
    fig, (ax,) = _new_figure((_width(len(preds)), 4.5))
    xs = range(len(preds))
    ax.bar(xs, [p.glups for p in preds], color=[block_color(p.block) for p in preds],
           edgecolor="0.35", linewidth=0.5)
    for lim in LIMITERS:
        given = [(i, p.limits.get(lim)) for i, p in enumerate(preds)]
        pts = [(i, v) for i, v in given if v is not None]
        if pts:
            ax.scatter([i for i, _ in pts], [v for _, v in pts], marker=LIMITER_MARKER[lim],
                       color=LIMITER_COLOR[lim], s=22, zorder=3,
                       label=f"{LIMITER_NAME[lim]} limit")
    size = 7 if len(preds) <= 40 else 5
    for i, p in enumerate(preds):
        ax.annotate(LIMITER_NAME.get(p.limiter, p.limiter), (i, p.glups),
                    textcoords="offset points", xytext=(0, 2), ha="center", fontsize=size)
    ax.set_yscale("log")
    ax.set_ylabel("GLup/s")
    _config_ticks(ax, preds)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if title:
        ax.set_title(title)
    return fig


def sweep(
    x: Sequence[float],
    series: Mapping[str, Sequence[Prediction]],
    *,
    quantity: str | Callable[[Prediction], float] = "dram",
    xlabel: str = "",
    ylabel: str | None = None,
    marks: Mapping[str, float] | None = None,
    colors: Mapping[str, Any] | None = None,
    title: str | None = None,
    logx: bool = False,
    xticks: Sequence[float] | None = None,
    mark_label: str = "transition",
) -> Figure:
    """A quantity of the predictions against a parameter, one line per
    series (e.g. the DRAM volume against the plane size, the paper's
    Fig. 23; MODEL.md §6). ``quantity`` is a key of :data:`QUANTITIES` or a
    function of a prediction. A series is coloured by ``colors[label]``,
    else by :func:`block_color` of its first prediction, and gets its own
    marker (block colours of similar shapes are close). ``marks`` maps a
    series label to an x position drawn as a dashed vertical line in the
    series' colour, explained once in the legend as ``mark_label``; a mark
    whose label is no series is drawn grey and named in the legend.
    ``logx`` uses a logarithmic x axis with plain numbers at ``xticks``."""
    if isinstance(quantity, str):
        if quantity not in QUANTITIES:
            raise ValueError(f"unknown quantity {quantity!r}; choose from {', '.join(QUANTITIES)}")
        fn, default_label = QUANTITIES[quantity], QUANTITY_LABELS[quantity]
    else:
        fn, default_label = quantity, ""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    fig, (ax,) = _new_figure((7.5, 4.6))
    color_of: dict[str, Any] = {}
    for i, (label, preds) in enumerate(series.items()):
        preds = list(preds)
        if len(preds) != len(x):
            raise ValueError(f"series {label!r} has {len(preds)} points for {len(x)} x values")
        color = (colors or {}).get(label) or (block_color(preds[0].block) if preds else "0.5")
        color_of[label] = color
        ax.plot(list(x), [fn(p) for p in preds], marker=_SERIES_MARKERS[i % len(_SERIES_MARKERS)],
                markersize=4, color=color, label=label)
    series_marks = False
    for label, pos in (marks or {}).items():
        in_series = label in color_of
        series_marks |= in_series
        ax.axvline(pos, color=color_of.get(label, "0.5"), linestyle="--", linewidth=0.9,
                   label=None if in_series else label)
    if logx:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    if xticks is not None:
        ax.set_xticks(list(xticks))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel if ylabel is not None else default_label)
    handles, labels = ax.get_legend_handles_labels()
    if series_marks:
        handles.append(Line2D([], [], color="black", linestyle="--", linewidth=0.9))
        labels.append(f"{mark_label} (series colour)")
    ax.legend(handles, labels, fontsize=8)
    ax.grid(alpha=0.3)
    if title:
        ax.set_title(title)
    return fig


__all__ = [
    "BINDING",
    "LEVELS",
    "LIMITER_HATCH",
    "LIMITER_MARKER",
    "QUANTITIES",
    "LevelBreakdown",
    "Part",
    "block_color",
    "breakdown_bars",
    "config_label",
    "limits_chart",
    "predictions_of",
    "ranking_bars",
    "scatter",
    "sweep",
    "volume_breakdown",
]
