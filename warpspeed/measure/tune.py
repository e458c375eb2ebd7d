"""Measure and tune (MODEL.md §8 ranking, §9 measured truth): the model ranks
every configuration without a GPU; the GPU times the model's best few and
decides among them.

:func:`tune` takes a ranking (predictions, best first) and a
:class:`Backend` that times configurations, and returns :class:`Tuned`: the
measured best of what was timed, with the predicted and measured GLup/s of
each configuration side by side.

**What is timed.** The model's best ``k`` configurations, in ranking order,
and the configurations the model calls equal to one of them (the same
GLup/s to six significant digits, ordered by the tie-break of
:mod:`warpspeed.search.ties`): the model cannot choose among those, so they
are timed too (at most ``k`` more; a note says when some were left out). A
configuration that cannot launch (the backend says why) does not count:
the next of the ranking is timed instead, until ``k`` have been timed or
``4 k`` tried.

**Backends.** :class:`Replay` reads a measurement CSV
(:mod:`warpspeed.measure.schema`) in place of the GPU: a configuration the
file lacks (or records as refused) is one that could not launch; a
configuration measured more than once takes the median. :class:`GpuBackend`
times :class:`~warpspeed.measure.programs.Plan` s on this machine's GPU
(:mod:`warpspeed.measure.gpu`, the harness's timing rule).
:func:`gpu_missing` says in one line why there is no GPU to time on; then
:func:`untimed` returns the model's ranking with nothing timed.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..model import Prediction
from ..search.ties import ranking_key
from .gpu import Loaded, TimingRule, cupy_module, first_line, time_block
from .programs import Plan
from .schema import (
    MeasurementError,
    Triple,
    format_triple,
    params_from_json,
    read_csv,
    read_refusals,
)

type Config = tuple[Triple, Triple]
"""A configuration: (fold, block)."""


class Backend(Protocol):
    """What times configurations: GLup/s of each, or why it could not launch."""

    @property
    def name(self) -> str: ...

    def time(self, configs: Sequence[Config]) -> list[float | str]: ...


@dataclass(frozen=True)
class Timed:
    """One configuration of the ranking: its place there (1: the model's
    first), the predicted and the measured GLup/s (``None``: not timed, or
    ``refused`` says why it could not launch)."""

    fold: Triple
    block: Triple
    rank: int
    predicted: float
    measured: float | None = None
    refused: str = ""

    @property
    def ratio(self) -> float | None:
        """Predicted over measured GLup/s."""
        return self.predicted / self.measured if self.measured else None

    def to_dict(self) -> dict[str, Any]:
        return {"fold": list(self.fold), "block": list(self.block), "rank": self.rank,
                "predicted_glups": self.predicted, "measured_glups": self.measured,
                "refused": self.refused}


@dataclass(frozen=True)
class Tuned:
    """The result of :func:`tune`: the ``chosen`` configuration (the measured
    best; the model's first when nothing was timed), every configuration
    tried in ranking order, the backend and notes."""

    chosen: Timed
    tried: tuple[Timed, ...]
    backend: str
    notes: tuple[str, ...] = ()

    @property
    def timed(self) -> tuple[Timed, ...]:
        return tuple(t for t in self.tried if t.measured is not None)

    @property
    def model_first(self) -> Timed | None:
        """The model's first choice among those timed."""
        return self.timed[0] if self.timed else None

    def to_dict(self) -> dict[str, Any]:
        return {"chosen": self.chosen.to_dict(), "backend": self.backend,
                "timed": [t.to_dict() for t in self.tried], "notes": list(self.notes)}

    def lines(self) -> list[str]:
        """The result in words (:func:`format_tuned`)."""
        return format_tuned(self)


def candidates(ranking: Sequence[Prediction], k: int) -> tuple[list[int], bool]:
    """Indices into ``ranking`` to time first: the best ``k`` and the
    configurations tied with one of them (at most ``k`` more, module
    docstring), and whether some ties were left out."""
    first = list(range(min(k, len(ranking))))
    levels = {ranking_key(ranking[i])[0] for i in first}
    ties = [i for i in range(len(first), len(ranking)) if ranking_key(ranking[i])[0] in levels]
    return first + ties[:k], len(ties) > k


def tune(ranking: Sequence[Prediction], backend: Backend, k: int = 10) -> Tuned:
    """Time the model's best ``k`` configurations of ``ranking`` (and its
    ties) with ``backend``; the measured best (module docstring)."""
    if k < 1:
        raise MeasurementError(f"measure at least one configuration, got {k}")
    if not ranking:
        raise MeasurementError("an empty ranking has nothing to time")
    order, capped = candidates(ranking, k)
    tried: dict[int, Timed] = {}
    pending = list(order)
    nxt = max(order) + 1
    while pending:
        results = backend.time([(ranking[i].fold, ranking[i].block) for i in pending])
        for i, r in zip(pending, results):
            p = ranking[i]
            tried[i] = Timed(p.fold, p.block, i + 1, p.glups,
                             measured=r if isinstance(r, float) else None,
                             refused=r if isinstance(r, str) else "")
        missing = k - sum(1 for t in tried.values() if t.measured is not None)
        top = min(len(ranking), 4 * k, nxt + max(0, missing))
        pending = list(range(nxt, top)) if missing > 0 else []
        nxt = top
    rows = tuple(tried[i] for i in sorted(tried))
    timed = [t for t in rows if t.measured is not None]
    notes = []
    if capped:
        notes.append(f"more configurations tie with the best {k} than were timed ({k} of "
                     "them were); time more with a larger K")
    if not timed:
        notes.append(f"none of the {len(rows)} configurations tried could be timed: the "
                     "model's first choice stands")
        return Tuned(rows[0], rows, backend.name, tuple(notes))
    best = max(timed, key=lambda t: (t.measured or 0.0, -t.rank))
    return Tuned(best, rows, backend.name, tuple(notes))


def untimed(ranking: Sequence[Prediction], why: str) -> Tuned:
    """The model's ranking with nothing timed, and why (no GPU)."""
    if not ranking:
        raise MeasurementError("an empty ranking has nothing to time")
    rows = tuple(Timed(p.fold, p.block, i + 1, p.glups) for i, p in enumerate(ranking))
    return Tuned(rows[0], rows, "none", (f"{why}: nothing was timed, the model's ranking "
                                         "stands",))


def _config(t: Timed) -> str:
    return f"fold {format_triple(t.fold)} block {format_triple(t.block)}"


def format_tuned(t: Tuned, shown: int = 10) -> list[str]:
    """The configurations tried as a table (predicted, measured, their ratio)
    and the outcome in words: the choice, how far the model was off."""
    head = (f"{'rank':>4}  {'fold':<7} {'block':<11} {'predicted':>9} {'measured':>9} "
            f"{'pred/meas':>9}")
    if not t.timed:
        return [*t.notes, f"the model's choice: {_config(t.chosen)}, "
                f"{t.chosen.predicted:.2f} GLup/s predicted; its ranking (GLup/s):",
                head[:head.index(" measured")],
                *(f"{r.rank:>4}  {format_triple(r.fold):<7} {format_triple(r.block):<11} "
                  f"{r.predicted:9.2f}" for r in t.tried[:shown])]
    lines = [f"timed on {t.backend} (GLup/s):", head]
    for r in t.tried[:shown] if len(t.tried) > shown + 2 else t.tried:
        meas = f"{r.measured:9.2f}" if r.measured is not None else f"{'-':>9}"
        ratio = f"{r.ratio:9.3f}" if r.ratio is not None else f"  refused: {r.refused}"
        lines.append(f"{r.rank:>4}  {format_triple(r.fold):<7} {format_triple(r.block):<11} "
                     f"{r.predicted:9.2f} {meas} {ratio}")
    if len(t.tried) > shown + 2:
        lines.append(f"  ... {len(t.tried) - shown} more (--json lists them)")
    first = t.model_first
    c = t.chosen
    assert first is not None and c.measured is not None  # timed is not empty
    lines.append(f"chosen: {_config(c)} (rank {c.rank} of the model), {c.measured:.2f} GLup/s "
                 f"measured, {c.predicted:.2f} predicted")
    if first is not c and first.measured is not None:
        lines.append(f"the model's first timed choice ({_config(first)}) measured "
                     f"{first.measured:.2f} GLup/s, {100 * first.measured / c.measured:.1f} % "
                     "of the chosen")
    ratios = [r.ratio for r in t.timed if r.ratio is not None]
    lines.append(f"the model was off by {100 * (c.predicted / c.measured - 1):+.1f} % on the "
                 f"chosen; median predicted/measured over the {len(ratios)} timed: "
                 f"{statistics.median(ratios):.3f}")
    return lines + list(t.notes)


# ---------------------------------------------------------------- backends


def _match(row: Mapping[str, Any], given: Mapping[str, Any],
           defaults: Mapping[str, Any]) -> bool:
    """Whether a row's stencil parameters are those ``given`` (the others at
    their ``defaults``): each parameter the row names has the value given or
    the default, and each one given is named by the row or is the default."""
    wanted = {**defaults, **given}
    return all(_norm(v) == _norm(wanted.get(k)) for k, v in row.items()) and all(
        k in row or _norm(v) == _norm(defaults.get(k)) for k, v in given.items())


def _norm(v: Any) -> Any:
    return tuple(v) if isinstance(v, (list, tuple)) else v


@dataclass(frozen=True)
class Replay:
    """A measurement CSV in place of the GPU (module docstring)."""

    path: str
    glups: Mapping[Config, float]
    refused: Mapping[Config, str]

    @property
    def name(self) -> str:
        return f"a replay of {Path(self.path).name}"

    @classmethod
    def from_csv(cls, path: str | Path, stencil: str | None = None,
                 params: Mapping[str, Any] | None = None,
                 defaults: Mapping[str, Any] | None = None) -> Replay:
        """The rows of ``path`` for one kernel: ``stencil`` and its ``params``
        (the others at their ``defaults``) choose it when the file holds
        several."""
        rows = read_csv(path)
        refusals = read_refusals(path)
        if stencil is not None:
            rows = [m for m in rows if m.stencil == stencil]
            refusals = [r for r in refusals if r.stencil == stencil]
        if params is not None:
            d = defaults or {}
            rows = [m for m in rows if _match(params_from_json(m.params), params, d)]
            refusals = [r for r in refusals if _match(params_from_json(r.params), params, d)]
        kinds = sorted({(m.stencil, m.params) for m in rows})
        if not kinds:
            raise MeasurementError(f"{path} holds no measurements of {stencil or 'a stencil'}"
                                   + (f" with {dict(params)}" if params else ""))
        if len(kinds) > 1:
            listed = "; ".join(f"{s} {p}" for s, p in kinds[:6])
            raise MeasurementError(f"{path} holds {len(kinds)} kernels ({listed}"
                                   f"{', ...' if len(kinds) > 6 else ''}): choose one with "
                                   "its stencil and parameters")
        times: dict[Config, list[float]] = {}
        for m in rows:
            times.setdefault((m.fold, m.block), []).append(m.glups)
        return cls(str(path), {c: statistics.median(v) for c, v in times.items()},
                   {(r.fold, r.block): r.reason for r in refusals})

    def time(self, configs: Sequence[Config]) -> list[float | str]:
        return [self.glups[c] if c in self.glups else self.refused.get(
            c, f"not in {Path(self.path).name}: could not launch") for c in configs]


class GpuBackend:
    """This machine's GPU: each fold's :class:`Plan` compiled when first
    needed, each block timed by ``rule`` (:mod:`warpspeed.measure.gpu`);
    ``missing`` says why a fold has no plan."""

    def __init__(self, plans: Mapping[Triple, Plan], rule: TimingRule | None = None,
                 cupy: Any = None, missing: Mapping[Triple, str] | None = None) -> None:
        self.plans = dict(plans)
        self.rule = rule or TimingRule()
        self.missing = dict(missing or {})
        self.cp = cupy if cupy is not None else cupy_module()

    @property
    def name(self) -> str:
        props = self.cp.cuda.runtime.getDeviceProperties(self.cp.cuda.Device().id)
        raw = props["name"]
        return f"this GPU ({raw.decode() if isinstance(raw, bytes) else raw})"

    def time(self, configs: Sequence[Config]) -> list[float | str]:
        out: dict[Config, float | str] = {}
        for fold in dict.fromkeys(f for f, _ in configs):
            plan = self.plans.get(fold)
            blocks = [b for f, b in configs if f == fold]
            if plan is None:
                why = self.missing.get(fold, "no program for this fold")
                out.update({(fold, b): why for b in blocks})
                continue
            try:
                dev = Loaded(self.cp, plan.program)
            except MeasurementError as exc:
                out.update({(fold, b): str(exc) for b in blocks})
                continue
            try:
                for b in blocks:
                    t = time_block(dev, b, self.rule)
                    out[(fold, b)] = t.skipped or plan.program.lups / t.median / 1e9
            finally:
                dev.release()
        return [out[c] for c in configs]


def gpu_missing(cupy: Any = None) -> str:
    """Why there is no GPU to time on ("" when there is one): no CuPy, or
    CuPy sees no device."""
    try:
        cp = cupy if cupy is not None else cupy_module()
    except MeasurementError:
        return "no GPU: CuPy is not installed (pip install cupy-cuda12x or cupy-cuda13x)"
    try:
        count = int(cp.cuda.runtime.getDeviceCount())
    except Exception as exc:  # noqa: BLE001 - CUDA's errors have no common base
        return f"no GPU: CUDA reports {first_line(exc)}"
    return "" if count > 0 else "no GPU: CUDA sees no device"


__all__ = [
    "Backend",
    "Config",
    "GpuBackend",
    "Replay",
    "Timed",
    "Tuned",
    "candidates",
    "format_tuned",
    "gpu_missing",
    "tune",
    "untimed",
]
