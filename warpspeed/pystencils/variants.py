"""The folding variants of the generation hook (MODEL.md §1 work per thread,
§8 ranking): pystencils generates each fold, the frontend extracts it and
its registers are counted (nvcc or the estimate, :mod:`.registers`).

The folds are independent, so they are made in parallel: the first in the
caller's process, the others in a pool of worker processes
(:class:`warpspeed.search.workers.WorkerPool`, started by a fork server
with pystencils imported: the caller, perhaps running other threads, is
never forked), which then ranks the configurations (:func:`warpspeed.rank`
with that pool). The job travels pickled, once. While the workers are not
up, the caller makes the next fold itself. Where the job cannot be pickled
(or ``jobs`` is 1, or there is one fold, or workers cannot start safely)
every fold is made in the caller's process, one after the other; a fold a
worker fails is made there again. The variants are the same either way.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from typing import Any

from ..search.workers import (
    PRELOAD,
    WorkerPool,
    alone_note,
    failed_note,
    failure,
    start_problem,
)
from .default_block import portable
from .extract import Extraction, read
from .fold import Fold, generate
from .options import ExtractOptions
from .registers import with_registers


@dataclass(frozen=True)
class Job:
    """What every variant is made from: the assignments and pystencils
    configuration, the front end's options (the array extents of symbolic
    fields, how to read the kernel, the ``registers`` the caller gave) and
    the machine's ``arch`` for nvcc."""

    assignments: Any
    config: Any
    options: ExtractOptions
    arch: str | None


@dataclass(frozen=True)
class Variant:
    """One fold made: its extraction with the registers set and the note
    on them, or the reason it was skipped. ``kernel_function`` is the
    pystencils kernel when it was made in this process (else None),
    ``parts`` the kernel's parts pickled when it was made in a worker and
    can take another default block (:mod:`.default_block`)."""

    fold: Fold
    extraction: Extraction | None = None
    note: str | None = None
    skipped: str | None = None
    kernel_function: Any = None
    parts: bytes | None = None


def reason(what: str, exc: Exception) -> str:
    """A skipped variant's reason: what failed and the error."""
    text = str(exc).strip() or type(exc).__name__
    return f"{what}: {type(exc).__name__}: {text}"


def make_variant(job: Job, fold: Fold, keep_function: bool = True) -> Variant:
    """Generate, extract and count the registers of one fold; a fold that
    cannot be generated or predicted is returned with the reason (an
    invalid ``registers`` argument raises: it is the caller's error)."""
    try:
        kf = generate(job.assignments, job.config, fold, shape=job.options.shape)
    except Exception as exc:  # noqa: BLE001 - pystencils raises many kinds; record, skip
        return Variant(fold, skipped=reason("pystencils cannot generate it", exc))
    keep = kf if keep_function else None
    try:
        ex = read(kf, job.options, fold=fold)
    except Exception as exc:  # noqa: BLE001 - the hook must not abort (hook docstring)
        return Variant(fold, skipped=reason("it cannot be predicted", exc), kernel_function=keep)
    kernel, note = with_registers(ex.kernel, kf, job.arch, job.options.registers)
    return Variant(fold, replace(ex, kernel=kernel), note, kernel_function=keep,
                   parts=None if keep_function else portable(kf))


def _in_worker(job: bytes, fold: Fold) -> Variant:
    return make_variant(pickle.loads(job), fold, keep_function=False)


def make_variants(job: Job, folds: Sequence[Fold], jobs: int | None
                  ) -> tuple[list[Variant], Executor | None, list[str]]:
    """Every fold of ``folds`` (distinct) made, in their order; the process
    pool that made them (None when made here; the caller ranks with it and
    shuts it down); and the notes on workers that could not start safely
    or failed, whose folds this process made (:mod:`warpspeed.search.workers`)."""
    workers = jobs or os.cpu_count() or 1
    if workers < 2 or len(folds) < 2:
        return [make_variant(job, f) for f in folds], None, []
    problem = start_problem()
    if problem is not None:
        return [make_variant(job, f) for f in folds], None, [alone_note(problem)]
    try:
        payload = pickle.dumps(job)
    except Exception:  # noqa: BLE001 - objects pickle cannot carry: make them here
        return [make_variant(job, f) for f in folds], None, []
    pool = WorkerPool(workers, preload=(*PRELOAD, "warpspeed.pystencils"))  # workers generate
    try:
        made, notes = _made_on(pool, job, payload, folds)
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    return [made[f] for f in folds], pool, notes


def _made_on(pool: WorkerPool, job: Job, payload: bytes, folds: Sequence[Fold]
             ) -> tuple[dict[Fold, Variant], list[str]]:
    """The folds made here until the pool's workers are up, the rest on
    them; a fold the workers fail (or cannot take) made here, with a note."""
    made: dict[Fold, Variant] = {}
    notes: list[str] = []
    rest = list(folds)
    while rest and (not made or not pool.ready.is_set()):  # no worker up: made here
        t0 = time.perf_counter()
        fold = rest.pop(0)
        made[fold] = make_variant(job, fold)
        pool.worked_alone(time.perf_counter() - t0, len(rest))
    if rest and pool.failed is not None:
        notes.append(alone_note(f"they could not start ({pool.failed})"))
        return made | {f: make_variant(job, f) for f in rest}, notes
    futures: dict[Fold, Future[Variant]] = {}
    for f in rest:
        try:
            futures[f] = pool.submit(_in_worker, payload, f)
        except Exception as exc:  # noqa: BLE001 - a pool that takes no work: made here
            notes.append(failed_note(failure(exc)))
            break
    for f in rest:
        try:
            made[f] = futures[f].result() if f in futures else make_variant(job, f)
        except Exception as exc:  # noqa: BLE001 - the worker failed: made here
            notes.append(failed_note(failure(exc)))
            made[f] = make_variant(job, f)
    return made, list(dict.fromkeys(notes))


__all__ = ["Job", "Variant", "make_variant", "make_variants", "reason"]
