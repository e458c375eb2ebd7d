"""Ranking launch configurations: design space, pruning and parallel
evaluation (MODEL.md §8; pruning after Wang et al., TPDS 2020, adapted).

**Design space** (MODEL.md §8). For each requested thread count ``T``
(default: every power of two from 64 to the machine's threads per block,
:func:`warpspeed.search.variants.default_threads`), the
block shapes ``(X, Y, Z)`` with ``X * Y * Z = T``: powers of two by default
(the paper's space), every integer factorisation with ``all_shapes=True``.
The CUDA limits ``X, Y <= 1024``, ``Z <= 64`` and the machine's threads per
block always apply. Each shape is combined with each folding variant (by
default none, 2y and 2z: ``(1,1,1), (1,2,1), (1,1,2)``); a fold is a
separate kernel obtained from a factory ``fold -> Kernel``. The shapes, the
trimming rule below and the canonical blocks are in
:mod:`warpspeed.search.design_space`.

**Trimming**. A configuration is left out, with the reason recorded in
:attr:`Ranking.excluded`, when it cannot launch (occupancy 0: too many
registers or too much shared memory) or when a block extent is absurd for
the domain: ``b_d >= 2 * D_d`` (``D`` the domain in threads), which leaves at
least half of the threads of *every* block idle. The smallest extent that
covers a short dimension (``D_d <= b_d < 2 D_d``) is kept. Explicit
``blocks`` are only checked against the machine, never trimmed.

**Provably identical predictions** are evaluated once, and a top-k ranking
skips configurations whose upper bound is below the k-th best found:
:mod:`warpspeed.search.pruning` states and proves both.

Evaluation runs on a ``concurrent.futures.Executor`` given by the caller
(a ``dask.distributed`` ``Client.get_executor()`` works), else on a local
process pool of ``jobs`` workers, else inline for ``jobs=1``. Nothing is
printed; ``progress(done, total)`` is called as work completes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import LaunchError
from ..input.addresses import kernel_forms
from ..input.expr import bind_all
from ..input.kernel import Kernel
from ..machine import Machine, load_machine
from ..model import BlockStage, Prediction, block_stage, finish
from ..timing import DEFAULT_MODEL, MODELS
from ..volumes.capacity import CapacityFits, load_fits
from ..volumes.footprint import Footprint
from ..volumes.launch import Launch, make_launch
from ..volumes.waves import WaveVolumes, wave_volumes
from .design_space import (
    DEFAULT_FOLDS,
    DEFAULT_THREADS,
    MAX_BLOCK_DIMS,
    Block,
    Fold,
    block_shapes,
    canonical_block,
    partial_wave,
    trim_reason,
)
from .executor import Runner, chunks, mp_context
from .merge_note import merge_note
from .pruning import (
    compulsory_bytes,
    dram_lower_bound,
    global_accesses,
    global_function,
    peak_dram_bandwidth,
    stage_limits,
    upper_bound,
    wave_key,
)
from .variants import KernelSource, empty_ranking, thread_counts, variants


@dataclass(frozen=True)
class Config:
    """One point of the design space: a folding variant and a block size."""

    fold: Fold
    block: Block


@dataclass(frozen=True)
class Excluded:
    """A configuration left out of the ranking, and why."""

    fold: Fold
    block: Block
    reason: str


def summary(head: str, predictions: Sequence[Prediction], shown: int = 3) -> str:
    """``head`` and the best ``shown`` predictions, one per line, closed by
    ``)``: the compact ``repr`` of rankings (MODEL.md §14)."""
    lines = [f"{head};" + (" best:" if predictions else " nothing ranked")]
    lines += [f"  {i + 1}. block {p.block} fold {p.fold}: {p.glups:.2f} GLup/s ({p.limiter})"
              for i, p in enumerate(predictions[:shown])]
    if len(predictions) > shown:
        lines.append(f"  ... {len(predictions) - shown} more")
    return "\n".join(lines) + ")"


@dataclass(frozen=True)
class Ranking:
    """Predictions best first (GLup/s, then fold, then block), and how they
    were obtained.

    * ``predictions``: all configurations, or the best ``top`` of them;
    * ``configurations``: configurations considered after trimming;
    * ``excluded``: trimmed or unlaunchable configurations with the reason;
    * ``classes``: the equivalence classes with more than one member
      (provably identical predictions, evaluated once);
    * ``stages``: block stages computed (one per class);
    * ``waves``: wave-set computations performed (the islpy part);
    * ``evaluated``: classes fully evaluated (wave volumes and roofline);
    * ``skipped``: classes whose full evaluation the top-k bound skipped;
    * ``model``: the timing model; ``notes``: facts about the design space
      the user should know (e.g. a kernel whose block size is fixed).
    """

    machine: str
    kernel: str
    predictions: tuple[Prediction, ...]
    configurations: int
    excluded: tuple[Excluded, ...]
    classes: tuple[tuple[Config, ...], ...]
    stages: int
    waves: int
    evaluated: int
    skipped: int
    top: int | None
    model: str = DEFAULT_MODEL
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """A short summary (what Jupyter shows): the best three and the
        counts; the fields hold the rest."""
        return summary(f"Ranking({self.kernel} on {self.machine}, {self.model} model: "
                       f"{self.configurations} configurations, {len(self.excluded)} excluded",
                       self.predictions)

    def to_dicts(self) -> list[dict[str, object]]:
        """The predictions as JSON-serialisable dicts, best first."""
        return [p.to_dict() for p in self.predictions]


# --------------------------------------------------------------------------
# Work items run in worker processes (module level: they must pickle)


@dataclass(frozen=True)
class _StageResult:
    launch: Launch
    l1_cycles: float
    footprint: Footprint
    wave_key: object
    load_bytes: float
    store_bytes: float


def _stage_chunk(
    kernel: Kernel, machine: Machine, blocks: list[Block], bounds: bool = True
) -> list[_StageResult | str]:
    """Block stages of ``blocks``; the DRAM lower bounds only when pruning
    (``bounds``) needs them."""
    out: list[_StageResult | str] = []
    for b in blocks:
        try:
            st = block_stage(kernel, machine, b)
        except LaunchError as exc:
            out.append(str(exc))
            continue
        out.append(_StageResult(
            launch=st.launch,
            l1_cycles=st.l1_cycles,
            footprint=st.footprint,
            wave_key=wave_key(kernel, st.launch, st.bound),
            load_bytes=compulsory_bytes(kernel.loads, st.bound, st.launch.block, kernel.domain)
            if bounds else 0.0,
            store_bytes=compulsory_bytes(kernel.stores, st.bound, st.launch.block, kernel.domain)
            if bounds else 0.0,
        ))
    return out


def _wave_chunk(kernel: Kernel, launches: list[Launch], address: str) -> list[WaveVolumes]:
    return [
        wave_volumes(kernel, la, bind_all([kernel_forms(kernel)], la.block),
                     address=address)
        for la in launches
    ]


# --------------------------------------------------------------------------
# The ranking


def _sort_key(p: Prediction, cfg: Config) -> tuple[float, Fold, Block]:
    return (-p.glups, cfg.fold, cfg.block)


def rank(
    kernels: KernelSource,
    machine: str | Path | Machine,
    *,
    threads: Iterable[int] | None = None,
    folds: Sequence[Fold] | None = None,
    blocks: Iterable[Block] | None = None,
    all_shapes: bool = False,
    top: int | None = None,
    jobs: int | None = None,
    executor: Executor | None = None,
    fits: str | Path | CapacityFits | None = None,
    progress: Callable[[int, int], None] | None = None,
    model: str = DEFAULT_MODEL,
) -> Ranking:
    """Rank the launch configurations of a kernel on ``machine`` by predicted
    GLup/s (MODEL.md §8; see the module docstring for space, trimming,
    equivalence and pruning).

    ``kernels``: one Kernel, a mapping ``fold -> Kernel``, or a factory
    called once per fold of ``folds`` (default :data:`DEFAULT_FOLDS`).
    ``blocks`` replaces the generated shapes by an explicit list.
    ``top``: keep the best ``top`` configurations and prune the rest.
    ``executor``: any ``concurrent.futures.Executor``; else a local process
    pool of ``jobs`` workers (default: all CPUs; 1 runs inline).
    ``model``: the timing model (:data:`warpspeed.timing.MODELS`).
    A kernel whose block size is fixed (``Kernel.fixed_block``) is ranked
    with that block only, and :attr:`Ranking.notes` says so.

    Example: the three best blocks of 128 threads for a 3-point stencil::

        >>> import warpspeed as ws
        >>> x, y, z = ws.tidx, ws.tidy, ws.tidz
        >>> A = ws.Field("A", shape=(66, 66, 66))
        >>> B = ws.Field("B", shape=(66, 66, 66))
        >>> k = ws.Kernel(loads=[A[x + 1 + d, y + 1, z + 1] for d in (-1, 0, 1)],
        ...               stores=[B[x + 1, y + 1, z + 1]], domain=(64, 64, 64))
        >>> r = ws.rank(k, "V100", threads=[128], folds=[(1, 1, 1)], top=3, jobs=1)
        >>> [p.block[0] * p.block[1] * p.block[2] for p in r.predictions]
        [128, 128, 128]
        >>> r.predictions[0].glups >= r.predictions[-1].glups
        True
        >>> print(r.excluded[0].reason)
        block y extent 128 is at least twice the domain's 64 threads: half of every block would idle
    """
    if model not in MODELS:
        raise LaunchError(f"unknown model {model!r}; the models are {', '.join(MODELS)}")
    m = load_machine(machine)
    curves = fits if isinstance(fits, CapacityFits) else load_fits(fits or m.fits)
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise LaunchError(f"top must be a positive integer, got {top!r}")
    kernel_variants = variants(kernels, folds)

    # The design space per variant, trimmed.
    excluded: list[Excluded] = []
    if blocks is None:
        shapes: list[Block] = []
        for t in thread_counts(threads, m):
            shapes += block_shapes(t, all_shapes)
    else:
        shapes = [tuple(int(v) for v in b) for b in blocks]  # type: ignore[misc]
    shapes = list(dict.fromkeys(shapes))

    # Equivalence classes of whole predictions (module docstring).
    candidates: dict[object, list[tuple[int, Config, Launch]]] = {}
    kernel_ids: dict[Kernel, int] = {}
    notes: list[str] = []
    for vi, (fold, k) in enumerate(kernel_variants):
        kid = kernel_ids.setdefault(replace(k, name=""), vi)
        own = shapes
        if k.fixed_block is not None:
            own = [k.fixed_block]
            notes.append(
                f"fold {fold}: the kernel's indexing scheme fixes the block to "
                f"{k.fixed_block}; it is the only configuration ranked"
            )
        for b in own:
            trim = blocks is None and k.fixed_block is None
            reason = (trim_reason(b, k.domain) if trim else None) or partial_wave(b, m)
            if reason is None:
                try:
                    launch = make_launch(k, m, b)
                except LaunchError as exc:
                    reason = str(exc)
            if reason is not None:
                excluded.append(Excluded(fold, b, reason))
                continue
            canon = canonical_block(launch.block, k.domain)
            group = (kid, canon, launch.occupancy.blocks_per_sm)
            candidates.setdefault(group, []).append((kid, Config(fold, launch.block), launch))
    classes: dict[object, list[tuple[Config, Launch]]] = {}
    rep_variant: dict[object, tuple[int, Block]] = {}
    for group, members in candidates.items():
        for kid, cfg, launch in members:
            key: object = (kid, cfg.block)
            if len(members) > 1:  # the same clipped block: identical if the forms are global
                k = kernel_variants[kid][1]
                accesses = k.loads + k.stores
                bound = bind_all((a.forms for a in accesses), launch.block)
                forms = global_accesses(accesses, bound, launch.block)
                if forms is not None:
                    key = (group, forms)
            classes.setdefault(key, []).append((cfg, launch))
            rep_variant.setdefault(key, (kid, cfg.block))
    if not classes:
        raise empty_ranking([(e.fold, e.block, e.reason) for e in excluded], m, kernel_variants)

    own_pool = executor is None and (jobs or os.cpu_count() or 1) > 1
    workers = jobs or os.cpu_count() or 1
    pool: Executor | None = executor
    if own_pool:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp_context())
    try:
        runner = Runner(pool, workers, progress)
        r = _evaluate(kernel_variants, m, curves, classes, rep_variant, excluded, runner, top,
                      model)
        if not r.predictions:  # every class failed its block stage
            raise empty_ranking([(e.fold, e.block, e.reason) for e in r.excluded], m,
                                kernel_variants)
        return replace(r, notes=tuple(notes + merge_note(r.predictions, kernel_variants)))
    finally:
        if own_pool and pool is not None:
            pool.shutdown(cancel_futures=True)


def _evaluate(
    variants: list[tuple[Fold, Kernel]],
    m: Machine,
    curves: CapacityFits,
    classes: dict[object, list[tuple[Config, Launch]]],
    rep_variant: dict[object, tuple[int, Block]],
    excluded: list[Excluded],
    runner: Runner,
    top: int | None,
    model: str,
) -> Ranking:
    keys = list(classes)
    runner.add_total(len(keys))

    # Phase 1: block stages of one representative per class, in parallel.
    by_variant: dict[int, list[object]] = {}
    for key in keys:
        by_variant.setdefault(rep_variant[key][0], []).append(key)
    tasks, sizes, owners = [], [], []
    for vi, ks in by_variant.items():
        # about three chunks per worker over all variants: every chunk ships
        # its kernel to a worker, which costs more than a small chunk's work
        parts = max(1, round(runner.workers * 3 * len(ks) / len(keys)))
        for chunk in chunks(ks, parts):
            tasks.append((variants[vi][1], m, [rep_variant[k][1] for k in chunk],
                          top is not None))
            sizes.append(len(chunk))
            owners.append(chunk)
    stage_of: dict[object, tuple[BlockStage, _StageResult]] = {}
    for chunk, results in zip(owners, runner.map(_stage_chunk, tasks, sizes)):
        for key, res in zip(chunk, results):
            if isinstance(res, str):
                for cfg, _ in classes[key]:
                    excluded.append(Excluded(cfg.fold, cfg.block, res))
                continue
            k = variants[rep_variant[key][0]][1]
            # Workers send back the numbers only; finish() needs no bound forms.
            stage = BlockStage(k, m, res.launch, {}, res.l1_cycles, res.footprint)
            stage_of[key] = (stage, res)
    live = [k for k in keys if k in stage_of]

    # Order by the upper bound when pruning; every class otherwise.
    if top is not None:
        def bound_of(key: object) -> float:
            stage, res = stage_of[key]
            lups = stage.kernel.lups_per_thread
            lb = dram_lower_bound(res.load_bytes, res.store_bytes, stage.footprint.l2_store,
                                  curves, lups)
            return upper_bound(stage, lb, curves, model)

        bounds = {k: bound_of(k) for k in live}
        live.sort(key=lambda k: -bounds[k])
    waves: dict[object, WaveVolumes] = {}
    pending = {stage_of[k][1].wave_key for k in live}
    runner.add_total(len(pending))

    predictions: list[tuple[Prediction, Config]] = []
    evaluated = skipped = 0
    batch = len(live) if top is None else max(top, 4 * runner.workers)
    pos = 0
    while pos < len(live):
        round_keys = live[pos:pos + batch]
        if top is not None and len(predictions) >= top:
            kth = sorted((p.glups for p, _ in predictions), reverse=True)[top - 1]
            round_keys = [k for k in round_keys if bounds[k] >= kth]  # sorted: a prefix
            if not round_keys:
                skipped = len(live) - pos
                break
        pos += len(round_keys)
        todo: dict[object, tuple[Kernel, Launch]] = {}
        for key in round_keys:
            stage, res = stage_of[key]
            if res.wave_key not in waves:
                todo.setdefault(res.wave_key, (stage.kernel, stage.launch))
        _compute_waves(todo, waves, runner, MODELS[model].address)
        for key in round_keys:
            stage, res = stage_of[key]
            p = finish(stage, waves[res.wave_key], curves, model)
            evaluated += 1
            for cfg, launch in classes[key]:
                q = p if cfg.block == p.block else replace(
                    p, block=cfg.block, occupancy_limited_by=launch.occupancy.limited_by
                )
                predictions.append((q, cfg))
    runner.total = runner.done  # pruned waves will not run
    runner.add_total(0)

    predictions.sort(key=lambda pc: _sort_key(*pc))
    kept = predictions if top is None else predictions[:top]
    return Ranking(
        machine=m.name,
        kernel=variants[0][1].name,
        predictions=tuple(p for p, _ in kept),
        configurations=sum(len(v) for v in classes.values()),
        excluded=tuple(excluded),
        classes=tuple(tuple(c for c, _ in v) for v in classes.values() if len(v) > 1),
        stages=len(stage_of),
        waves=len(waves),
        evaluated=evaluated,
        skipped=skipped,
        top=top,
        model=model,
    )


def _compute_waves(
    todo: dict[object, tuple[Kernel, Launch]], waves: dict[object, WaveVolumes], runner: Runner,
    address: str,
) -> None:
    """Wave volumes of the distinct wave keys in ``todo``, in parallel."""
    by_kernel: dict[int, list[object]] = {}
    kernels: dict[int, Kernel] = {}
    for wk, (k, _) in todo.items():
        by_kernel.setdefault(id(k), []).append(wk)
        kernels[id(k)] = k
    tasks, sizes, owners = [], [], []
    for kid, wks in by_kernel.items():
        parts = max(1, round(runner.workers * 2 * len(wks) / len(todo)))
        for chunk in chunks(wks, parts):
            tasks.append((kernels[kid], [todo[w][1] for w in chunk], address))
            sizes.append(len(chunk))
            owners.append(chunk)
    for chunk, results in zip(owners, runner.map(_wave_chunk, tasks, sizes)):
        for wk, wv in zip(chunk, results):
            waves[wk] = wv  # type: ignore[assignment]


__all__ = [
    "DEFAULT_FOLDS",
    "DEFAULT_THREADS",
    "MAX_BLOCK_DIMS",
    "Config",
    "Excluded",
    "Ranking",
    "block_shapes",
    "canonical_block",
    "compulsory_bytes",
    "dram_lower_bound",
    "global_function",
    "peak_dram_bandwidth",
    "rank",
    "stage_limits",
    "trim_reason",
    "upper_bound",
    "wave_key",
]
