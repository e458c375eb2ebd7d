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
pool of ``jobs`` worker processes (:mod:`warpspeed.search.workers`: never
a fork of the caller, which may run other threads, and never importing the
caller's main script; the caller works too, and does the work of workers
that fail or cannot start, with a note), else inline for ``jobs=1``.
Nothing is printed; ``progress(done, total)`` is called as work completes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import overload

from ..errors import LaunchError
from ..input.expr import bind_all
from ..input.kernel import Kernel, counted_for
from ..machine import Machine
from ..model import Prediction, load_machine
from ..timing import DEFAULT_MODEL, timing_model
from ..volumes.capacity import CapacityFits, curves_for
from ..volumes.launch import Launch, make_launch
from .design_space import (
    DEFAULT_FOLDS,
    DEFAULT_THREADS,
    MAX_BLOCK_DIMS,
    Block,
    Fold,
    block_shapes,
    canonical_block,
    trim_reason,
)
from .evaluate import Config, Evaluation, Excluded, evaluate
from .executor import Runner, no_collection
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
from .ties import leaders_note
from .variants import KernelSource, checked_blocks, empty_ranking, fold_variants, thread_counts
from .workers import WorkerPool, alone_note, start_problem


def summary(head: str, predictions: Sequence[Prediction], shown: int = 3) -> str:
    """``head`` and the best ``shown`` predictions, one per line, closed by
    ``)``: the compact ``repr`` of rankings (MODEL.md §14)."""
    lines = [f"{head};" + (" best:" if predictions else " nothing ranked")]
    lines += [f"  {i + 1}. block {p.block} fold {p.fold}: {p.glups:.2f} GLup/s ({p.limiter}"
              + (f"; {p.evidence.short})" if i == 0 else ")")  # how grounded: MODEL.md §14
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
      the user should know (e.g. a kernel whose block size is fixed) and
      about how it was run: ``worker_notes``, the worker processes that
      failed or could not start safely, whose work this process did
      (:mod:`warpspeed.search.workers`; the predictions are the same).

    A ranking is also the sequence of its predictions: ``ranking[0]`` is
    the best, ``len(ranking)`` and ``for p in ranking`` go over
    ``predictions``.
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
    worker_notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.predictions)

    def __iter__(self) -> Iterator[Prediction]:
        return iter(self.predictions)

    @overload
    def __getitem__(self, index: int) -> Prediction: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Prediction, ...]: ...
    def __getitem__(self, index: int | slice) -> Prediction | tuple[Prediction, ...]:
        return self.predictions[index]

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
# The ranking


def rank(
    kernels: KernelSource,
    machine: str | Path | Machine,
    *,
    threads: int | Iterable[int] | None = None,
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
    ``threads``: threads per block, one count or several (default every
    power of two from 64 to the machine's limit); a count that is not a
    positive integer within that limit raises :class:`LaunchError`.
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
    timing_model(model)
    m = load_machine(machine)
    curves = curves_for(m, fits)
    _check_top(top)
    # a pystencils kernel's registers counted for this GPU (Kernel.register_counter)
    made, left_out = fold_variants(kernels, folds)
    kernel_variants = [(f, counted_for(k, m.arch)) for f, k in made]
    shapes = _asked_shapes(threads, blocks, all_shapes, m)
    candidates, excluded, notes = _launchable(kernel_variants, shapes, m, trim=blocks is None)
    classes, rep_variant = _equivalence_classes(candidates, kernel_variants)
    if not classes:
        raise empty_ranking(_reasons(excluded), m, kernel_variants)
    ev, worker_notes = _evaluate_on_workers(kernel_variants, m, curves, classes, rep_variant,
                                            excluded, top, model, jobs, executor, progress)
    if not ev.predictions:  # every class failed its block stage
        raise empty_ranking(_reasons(excluded), m, kernel_variants)
    return _ranking(m, kernel_variants, classes, excluded, ev, top, model,
                    [*left_out, *notes, *worker_notes], tuple(worker_notes))


# --------------------------------------------------------------------------
# The phases of a ranking, in order

Variants = list[tuple[Fold, Kernel]]
#: Launches of one group (kernel variant, clipped block, blocks per SM): the
#: candidates for one equivalence class (module docstring).
Candidates = dict[object, list[tuple[int, Config, Launch]]]
Classes = dict[object, list[tuple[Config, Launch]]]


def _check_top(top: int | None) -> None:
    """``top`` is None or a positive integer (bool is no count)."""
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise LaunchError(f"top must be a positive integer, got {top!r}")


def _asked_shapes(threads: int | Iterable[int] | None, blocks: Iterable[Block] | None,
                  all_shapes: bool, m: Machine) -> list[Block]:
    """The block shapes of the design space (MODEL.md §8): every shape of each
    thread count, or the explicit ``blocks``; each once, in order."""
    if blocks is None:
        shapes: list[Block] = []
        for t in thread_counts(threads, m):
            shapes += block_shapes(t, all_shapes)
    else:
        shapes = checked_blocks(blocks)
    return list(dict.fromkeys(shapes))


def _launchable(kernel_variants: Variants, shapes: list[Block], m: Machine, trim: bool
                ) -> tuple[Candidates, list[Excluded], list[str]]:
    """The launches of every variant, trimmed (module docstring; ``trim``:
    the shapes were generated, not given), grouped by variant, clipped block
    and blocks per SM; the configurations left out with the reason; and the
    notes on variants whose block is fixed. Variants equal but for their
    name share one kernel id."""
    candidates: Candidates = {}
    excluded: list[Excluded] = []
    notes: list[str] = []
    kernel_ids: dict[Kernel, int] = {}
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
            launch, reason = _launch(k, m, b, trim and k.fixed_block is None)
            if launch is None:
                excluded.append(Excluded(fold, b, reason))
                continue
            canon = canonical_block(launch.block, k.domain)
            group = (kid, canon, launch.occupancy.blocks_per_sm)
            candidates.setdefault(group, []).append((kid, Config(fold, launch.block), launch))
    return candidates, excluded, notes


def _launch(k: Kernel, m: Machine, b: Block, trim: bool) -> tuple[Launch | None, str]:
    """The launch of block ``b``, or None and why it is left out (trimmed,
    or it cannot launch)."""
    reason = trim_reason(b, k.domain) if trim else None
    if reason is not None:
        return None, reason
    try:
        return make_launch(k, m, b), ""
    except LaunchError as exc:
        return None, str(exc)


def _equivalence_classes(candidates: Candidates, kernel_variants: Variants
                         ) -> tuple[Classes, dict[object, tuple[int, Block]]]:
    """The classes of provably identical predictions (module docstring):
    launches of one group whose forms are functions of the global thread
    coordinates; and each class's representative (kernel id, block)."""
    classes: Classes = {}
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
    return classes, rep_variant


def _evaluate_on_workers(
    kernel_variants: Variants, m: Machine, curves: CapacityFits, classes: Classes,
    rep_variant: dict[object, tuple[int, Block]], excluded: list[Excluded], top: int | None,
    model: str, jobs: int | None, executor: Executor | None,
    progress: Callable[[int, int], None] | None,
) -> tuple[Evaluation, list[str]]:
    """:func:`warpspeed.search.evaluate.evaluate` on the caller's executor, or
    on a pool of ``jobs`` workers of our own (shut down after), or inline
    (module docstring); and the notes on worker processes that failed or
    could not start safely (:mod:`.workers`), whose work this process did."""
    with no_collection():  # no walk of the caller's heap here or in the workers
        workers = jobs or os.cpu_count() or 1
        own_pool = executor is None and workers > 1
        problem = start_problem() if own_pool else None
        notes = [alone_note(problem)] if problem else []
        pool: Executor | None = executor
        if own_pool and not problem:
            pool = WorkerPool(workers)
        try:
            runner = Runner(pool, workers, progress)
            ev = evaluate(kernel_variants, m, curves, classes, rep_variant, excluded, runner,
                          top, model)
            return ev, notes + runner.notes
        finally:
            if own_pool and pool is not None:
                pool.shutdown(cancel_futures=True)


def _ranking(m: Machine, kernel_variants: Variants, classes: Classes,
             excluded: list[Excluded], ev: Evaluation, top: int | None, model: str,
             notes: list[str], worker_notes: tuple[str, ...]) -> Ranking:
    """The :class:`Ranking` of what was evaluated, with the notes on fixed
    blocks, worker processes, merged folds and leaders within the model's
    error."""
    predictions = tuple(p for p, _ in ev.predictions)
    return Ranking(
        machine=m.name,
        kernel=kernel_variants[0][1].name,
        predictions=predictions,
        configurations=sum(len(v) for v in classes.values()),
        excluded=tuple(excluded),
        classes=tuple(tuple(c for c, _ in v) for v in classes.values() if len(v) > 1),
        stages=ev.stages,
        waves=ev.waves,
        evaluated=ev.evaluated,
        skipped=ev.skipped,
        top=top,
        model=model,
        notes=tuple(notes + merge_note(predictions, kernel_variants)
                    + [n for n in (leaders_note(predictions, complete=top is None),) if n]),
        worker_notes=worker_notes,
    )


def _reasons(excluded: list[Excluded]) -> list[tuple[Fold, Block, str]]:
    """Why each configuration was left out, for :func:`empty_ranking`."""
    return [(e.fold, e.block, e.reason) for e in excluded]


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
