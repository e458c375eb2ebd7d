"""The Panel page of the web calculator: widgets wired to the functions of
:mod:`warpspeed.web.state` and :mod:`warpspeed.web.views`, nothing else.

One :class:`Page` per browser session. Every computation runs on a single
worker thread shared by all sessions (islpy's context is not thread-safe),
so the server's event loop keeps serving while a prediction or a ranking
runs; a newer request supersedes an older one's display. The widgets'
values are synced to the query string (``pn.state.location.sync``), so the
address bar always holds a link that restores the page.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
import traceback
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import fields
from typing import Any

import panel as pn

from ..timing import MODELS
from . import explore, state, views
from .state import FieldError, Form

LOG = logging.getLogger("warpspeed.web")
_worker: ThreadPoolExecutor | None = None


def worker() -> ThreadPoolExecutor:
    """The one worker thread that runs all model computations (started on
    first use)."""
    global _worker
    if _worker is None:
        _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warpspeed-web")
    return _worker


def stop_worker() -> None:
    """Wait for the worker thread to finish and end it (a later
    computation starts a new one)."""
    global _worker
    if _worker is not None:
        _worker.shutdown(wait=True)
        _worker = None


async def run[T](fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` on the worker thread."""
    return await asyncio.get_running_loop().run_in_executor(worker(), fn, *args)


def _evaluate(form: Form) -> state.Outcome:
    try:
        return state.evaluate(form)
    except FieldError as exc:
        return state.Outcome(errors={exc.field: str(exc)})


class Page:
    """The widgets of one session and their callbacks."""

    def __init__(self) -> None:
        d = Form()
        w = pn.widgets
        self.w: dict[str, Any] = {
            "mode": w.RadioButtonGroup(options={"shipped stencil": "stencil",
                                       "by hand": "hand"}, value=d.mode),
            "stencil": w.Select(label="stencil", options=list(state.stencil_names()),
                                value=d.stencil),
            "params": w.TextInput(label="parameters (NAME=VALUE, space-separated)",
                                  value=d.params, placeholder="defaults"),
            "fields": w.TextAreaInput(label="fields: NAME SHAPE [ITEMSIZE], x contiguous",
                                      value=d.fields, height=70),
            "loads": w.TextAreaInput(label="loads: NAME[index, ...] per line", value=d.loads,
                                     height=170),
            "stores": w.TextAreaInput(label="stores", value=d.stores, height=75),
            "domain": w.TextInput(label="domain (valid global thread extents x,y,z)",
                                  value=d.domain),
            "fp": w.TextInput(label="FP instructions per thread (optional)", value=d.fp),
            "registers": w.TextInput(label="registers per thread (optional)", value=d.registers),
            "machine": w.Select(label="machine", value=d.machine, options={
                **{n: n for n in state.machine_names()}, "uploaded file": state.UPLOADED}),
            "machine_file": w.TextInput(value="", visible=False),
            "block": w.TextInput(label="block size x,y,z", value=d.block),
            "fold": w.TextInput(label="thread folding x,y,z", value=d.fold),
            "model": w.Select(label="model", options=list(MODELS), value=d.model),
            "threads": w.TextInput(label="threads per block (comma-separated)", value=d.threads),
            "folds": w.TextInput(label="folds to rank (stencils that fold)", value=d.folds),
            "all_shapes": w.Checkbox(label="every block shape, not only powers of two",
                                     value=d.all_shapes),
        }
        for key, widget in self.w.items():
            widget.css_classes = [f"ws-in-{key}"]
            widget.sizing_mode = "stretch_width"
            if isinstance(widget, w.TextAreaInput):
                widget.max_length = state.MAX_TEXT
        self.err = {k: pn.pane.HTML("", visible=False, css_classes=[f"ws-err-{k}"],
                                    sizing_mode="stretch_width") for k in [*self.w, ""]}
        self.upload = w.FileInput(accept=".toml", multiple=False)
        self.stencil_help = pn.pane.HTML("", sizing_mode="stretch_width")
        self.summary = pn.pane.HTML("", css_classes=["ws-summary"], sizing_mode="stretch_width")
        self.volumes = pn.pane.HTML("", css_classes=["ws-volumes-pane"])
        self.charts = pn.Row()
        self.explain = pn.pane.HTML("", sizing_mode="stretch_width")
        self.status = pn.pane.HTML("", css_classes=["ws-status"])
        self.lc_button = w.Button(label="Draw the layer conditions", color="primary")
        self.lc_plot = pn.pane.Matplotlib(None, dpi=110, tight=True, visible=False,
                                          format="svg", sizing_mode="stretch_width")
        self.lc_status = pn.pane.HTML("")
        self.rank_button = w.Button(label="Rank the design space", color="primary",
                                    css_classes=["ws-rank"])
        self.progress = pn.indicators.Progress(value=0, max=1, width=300, visible=False)
        self.rank_status = pn.pane.HTML("", css_classes=["ws-rank-status"])
        self.table = w.Tabulator(None, disabled=True, pagination=None, height=420,
                                 sizing_mode="stretch_width", show_index=False,
                                 selectable=1, visible=False, css_classes=["ws-ranking"])
        self.link = pn.pane.HTML("")
        self.copy = w.Button(label="Copy link", width=110)
        self.copy.js_on_click(code="navigator.clipboard.writeText(window.location.href)")
        self.generation = 0
        self.ranking_generation = 0
        #: Choices of the opening link that name no option (state.link_errors);
        #: each is cleared when the user picks that input again.
        self.link_errors: dict[str, str] = {}
        self.bad_link: dict[str, str] = {}
        self._wire()

    # -- layout ------------------------------------------------------------

    def _field(self, key: str) -> pn.Column:
        return pn.Column(self.w[key], self.err[key], sizing_mode="stretch_width")

    def layout(self) -> pn.viewable.Viewable:
        """The whole page."""
        stencil = pn.Column(self._field("stencil"), self._field("params"), self.stencil_help,
                            sizing_mode="stretch_width")
        hand = pn.Column(*(self._field(k) for k in ("fields", "loads", "stores", "domain",
                                                      "fp")), sizing_mode="stretch_width")
        self.sections = {"stencil": stencil, "hand": hand}
        self._show_mode()
        side = pn.Column(
            "### Kernel", self._field("mode"), stencil, hand, self._field("registers"),
            "### Machine and launch", self._field("machine"), self.upload,
            self.err["machine_file"], self.w["machine_file"], self._field("block"),
            self._field("fold"), self._field("model"),
            "### Link", pn.Row(self.copy, self.link), width=400,
        )
        prediction = pn.Column(self.err[""], self.status, self.summary, self.volumes,
                               self.charts, self.explain, sizing_mode="stretch_width")
        lc = pn.Column(
            pn.pane.Markdown(
                "DRAM volume per lattice update against the xy extent N of the domain "
                "(N x N x Z at the current total size), for blocks of the current thread "
                "count and y extent with z extents 1, 2, 4, 8 and the current one: where "
                "a curve rises, the layer condition breaks (Ernst et al. 2023, Fig. 23)."),
            self.lc_button, self.lc_status, self.lc_plot, sizing_mode="stretch_width")
        ranking = pn.Column(
            pn.Row(self._field("threads"), self._field("folds")), self.w["all_shapes"],
            pn.Row(self.rank_button, self.progress), self.rank_status, self.table,
            sizing_mode="stretch_width")
        self.tabs = pn.Tabs(("Prediction", prediction), ("Layer conditions", lc),
                            ("Ranking", ranking), dynamic=False, sizing_mode="stretch_width")
        header = pn.pane.HTML(
            "<h2 style='margin:0'>warpspeed web calculator</h2><div>GPU stencil performance "
            "from memory address expressions, before anything is compiled.</div>",
            sizing_mode="stretch_width")
        return pn.Column(header, pn.Row(side, self.tabs, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    # -- wiring ------------------------------------------------------------

    def _wire(self) -> None:
        for key, widget in self.w.items():
            if key not in ("threads", "folds", "all_shapes"):
                widget.param.watch(self.refresh, "value")
        self.w["mode"].param.watch(lambda _: self._show_mode(), "value")
        self.w["stencil"].param.watch(self._stencil_changed, "value")
        self.upload.param.watch(self._uploaded, "value")
        self.lc_button.on_click(self.draw_layer_conditions)
        self.rank_button.on_click(self.rank)
        self.table.on_click(self._row_clicked)
        self._stencil_help()

    def sync_location(self) -> None:
        """Keep every input in the query string (and read it on load)."""
        loc = pn.state.location
        if loc is None:
            return
        query = loc.search or _request_query()
        self.link_errors = state.link_errors(query)
        values = urllib.parse.parse_qs(query.lstrip("?"))
        for key in list(self.link_errors):
            widget = self.w[key]
            if not isinstance(widget, pn.widgets.Select):
                continue
            # keep the link's value selectable: a browser select would
            # otherwise fall back to its first option (another GPU)
            bad = values[key][-1]
            opts = widget.options
            widget.options = ({**opts, f"{bad} (unknown)": bad} if isinstance(opts, dict)
                              else [*opts, bad])
            self.bad_link[key] = bad
        for key, widget in self.w.items():
            loc.sync(widget, {"value": key})
        loc.param.watch(lambda _: self._show_link(), ["search", "href"])
        self._show_link()

    def _show_link(self) -> None:
        loc = pn.state.location
        href = (loc.href if loc is not None else "") or ""
        self.link.object = (f"<a class='ws-link' href='{html.escape(href, quote=True)}'>"
                            "link to this page</a>" if href else "")

    def form(self) -> Form:
        """The current inputs."""
        return Form(**{f.name: self.w[f.name].value for f in fields(Form)})

    def _show_mode(self) -> None:
        if hasattr(self, "sections"):
            for mode, section in self.sections.items():
                section.visible = self.w["mode"].value == mode

    def _stencil_help(self) -> None:
        try:
            defaults = state.stencil_defaults(self.w["stencil"].value)
        except FieldError as exc:
            self.stencil_help.object = views.error_html(str(exc))
            return
        items = " ".join(f"<code>{html.escape(k)}={html.escape(v)}</code>"
                         for k, v in defaults.items())
        self.stencil_help.object = f"<small>parameters and defaults: {items}</small>"

    def _stencil_changed(self, _: object) -> None:
        """Keep only the parameters the newly chosen stencil takes."""
        self._stencil_help()
        try:
            known = set(state.stencil_defaults(self.w["stencil"].value))
        except FieldError:
            return
        items = self.w["params"].value.split()
        kept = [i for i in items if i.split("=", 1)[0] in known]
        if kept != items:
            self.w["params"].value = " ".join(kept)

    def _uploaded(self, _: object) -> None:
        data, name = self.upload.value, self.upload.filename or "uploaded.toml"
        if not data:
            return
        if len(data) > state.MAX_MACHINE_FILE:
            self._errors({"machine_file": f"{name}: larger than "
                                          f"{state.MAX_MACHINE_FILE} bytes"}, ())
            return
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            self._errors({"machine_file": f"{name}: not a UTF-8 text file"}, ())
            return
        self.w["machine_file"].value = state.pack_machine(name, text)
        self.w["machine"].value = state.UPLOADED

    def _errors(self, errors: dict[str, str], keys: tuple[str, ...] | None = None) -> None:
        """Show each error next to its field; clear the other fields' errors
        (of ``keys``, default all)."""
        known = {k: v for k, v in errors.items() if k in self.err}
        other = [v for k, v in errors.items() if k not in self.err]
        if other:
            known[""] = "\n".join(filter(None, [known.get(""), *other]))
        for key, pane in self.err.items():
            if keys is not None and key not in keys and key not in known:
                continue
            pane.object = views.error_html(known[key]) if key in known else ""
            pane.visible = key in known

    # -- computations ------------------------------------------------------

    async def refresh(self, *_: object) -> None:
        """Predict the current form and show it (the latest request wins)."""
        self.generation += 1
        gen = self.generation
        await asyncio.sleep(0.05)  # a burst of changes (a restored link) predicts once
        if gen != self.generation:
            return
        active = {k: m for k, m in self.link_errors.items()
                  if self.w[k].value == self.bad_link.get(k, self.w[k].value)}
        if active:  # a link naming an unknown machine: no other GPU's answer
            self._errors(active)
            self.summary.object = "<i>no prediction: the link names a choice that does " \
                "not exist (marked in red)</i>"
            self.volumes.object, self.explain.object = "", ""
            self.charts.objects = []
            return
        self.status.object = "<i>computing…</i>"
        form = self.form()

        def job() -> state.Outcome | None:  # skipped when a newer request is waiting
            return _evaluate(form) if gen == self.generation else None

        try:
            out = await run(job)
        except Exception as exc:  # never let a bug take the page down
            LOG.error("prediction failed: %s", traceback.format_exc())
            out = state.Outcome(errors={"": f"internal error: {type(exc).__name__}: {exc}"})
        if gen != self.generation or out is None:
            return
        self.status.object = ""
        self._errors(out.errors)
        p, a = out.prediction, out.advice
        if p is None or a is None:
            self.summary.object = "<i>no prediction: fix the input marked in red</i>"
            self.volumes.object, self.explain.object = "", ""
            self.charts.objects = []
            return
        self.summary.object = views.summary_html(p, a.vendor)
        self.volumes.object = views.volumes_html(p)
        self.explain.object = views.explanation_html(p, a)
        terms = views.terms_figure(p)
        charts: list[pn.pane.Bokeh | pn.pane.HTML] = [pn.pane.Bokeh(views.limits_figure(p))]
        if terms is not None:
            charts.append(pn.pane.Bokeh(terms))
        else:
            charts.append(pn.pane.HTML(f"<i>the {html.escape(p.model)} model has no terms; "
                                       "the default model adds times per limiter</i>"))
        self.charts.objects = charts

    async def draw_layer_conditions(self, *_: object) -> None:
        """The layer-condition sweep of the current form."""
        self.lc_button.disabled = True
        self.lc_status.object = "<i>computing the sweep…</i>"
        t0 = time.monotonic()
        try:
            lc = await run(explore.layer_conditions, self.form())
            fig = await run(views.layer_conditions_figure, lc)
        except FieldError as exc:
            self.lc_status.object = views.error_html(f"{exc.field}: {exc}")
            return
        except Exception as exc:
            LOG.error("layer conditions failed: %s", traceback.format_exc())
            self.lc_status.object = views.error_html(f"{type(exc).__name__}: {exc}")
            return
        finally:
            self.lc_button.disabled = False
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in lc.notes)
        self.lc_status.object = (f"<small>{sum(len(s) for s in lc.series.values())} "
                                 f"predictions in {time.monotonic() - t0:.1f} s</small>"
                                 + (f"<ul>{notes}</ul>" if notes else ""))
        self.lc_plot.object = fig
        self.lc_plot.visible = True

    async def rank(self, *_: object) -> None:
        """Rank the design space with a progress bar, then fill the table."""
        self.ranking_generation += 1
        gen = self.ranking_generation
        self.rank_button.disabled = True
        progress = [0, 1]

        def report(done: int, total: int) -> None:
            progress[:] = [done, max(total, 1)]

        self.progress.visible, self.progress.value = True, 0
        self._errors({}, ("threads", "folds"))
        t0 = time.monotonic()
        try:
            fut = asyncio.ensure_future(run(explore.rank_form, self.form(), report))
            while not fut.done():
                self.progress.max, self.progress.value = progress[1], min(*progress)
                self.rank_status.object = f"<i>ranking: {progress[0]} of {progress[1]} steps</i>"
                await asyncio.wait([fut], timeout=0.25)
            r = fut.result()
        except FieldError as exc:
            self._errors({exc.field: str(exc)}, ("threads", "folds"))
            self.rank_status.object = views.error_html(str(exc))
            return
        except Exception as exc:
            if not isinstance(exc, explore.RankingTimeout):
                LOG.error("ranking failed: %s", traceback.format_exc())
            self.rank_status.object = views.error_html(str(exc) or type(exc).__name__)
            return
        finally:
            self.rank_button.disabled = False
            self.progress.visible = False
        if gen != self.ranking_generation:
            return
        self.table.value = views.ranking_frame(r)
        self.table.visible = True
        self.rank_status.object = views.ranking_summary(r, time.monotonic() - t0)

    def _row_clicked(self, event: Any) -> None:
        """Show the clicked configuration in the prediction tab."""
        df = self.table.value
        if df is None or event.row is None or not 0 <= event.row < len(df):
            return
        row = df.iloc[event.row]
        if self.w["mode"].value == "stencil":
            self.w["fold"].value = row["fold"]
        self.w["block"].value = row["block"]
        self.tabs.active = 0


def _request_query() -> str:
    """The query string of the request that opened the session (the
    browser's location reaches the server only after the page loaded)."""
    args = getattr(pn.state, "session_args", None) or {}
    return urllib.parse.urlencode(
        [(k, v.decode(errors="replace") if isinstance(v, bytes) else str(v))
         for k, vals in args.items() for v in vals])


def create_app() -> pn.viewable.Viewable:
    """A new page for one browser session."""
    pn.extension("tabulator", notifications=False)
    page = Page()
    view = page.layout()
    page.sync_location()
    pn.state.onload(page.refresh)
    return view


__all__ = ["Page", "create_app", "stop_worker", "worker"]
