"""Generation hook for pystencils: pick the block size and the thread folding
by prediction while generating a kernel (MODEL.md §8, ranking).

:func:`predict` predicts one configuration; :func:`create_kernel` ranks
every block size x folding and returns the pystencils kernel of the best
configuration with its block size set as the launch configuration's
default block size.

The ranking is :func:`warpspeed.rank` over the paper's design space
(MODEL.md §8): powers of two with ``x * y * z == threads``,
``x, y <= 1024``, ``z <= 64``, no block extent at least twice the domain
(the same blocks as :func:`blocks`), equivalent configurations evaluated
once; by default every thread count from 64 to the machine's limit that the
kernel can launch. A kernel whose indexing scheme fixes the block
(``blockwise4d``) is ranked with that block only.

**Registers.** Each variant's registers per thread come from nvcc for the
machine's ``arch`` when it is installed (run where each variant is made,
cached per source and architecture), else from an
estimate read from the code (:mod:`.registers`); the options'
``registers`` (:class:`.options.ExtractOptions`) give a count or
``"estimate"``. A block that cannot launch with them (registers or shared
memory per SM or block, threads per block) is never ranked. Every
prediction carries the count and its source (``Prediction.registers``,
``registers_source``).

**Parallel.** The folds are generated, extracted and counted in parallel
(the first in this process, the others in a pool of worker processes that
then ranks, never a fork of this process and never importing the caller's
main script: :mod:`.variants`, :mod:`warpspeed.search.workers`), with
``jobs`` workers (default one per CPU). Where workers cannot start safely,
or fail, this process does their work and :attr:`Ranked.notes` says so.

**The result.** The best fold's kernel, generated while ranking (in this
process or a worker), gets the best block as its default without being
generated again where the block changes no line of the code
(:mod:`.default_block`); otherwise it is generated again with the block.

**Skipped variants.** A folding variant that cannot be made or predicted
(the fold does not divide the interior, pystencils rejects the folded
assignments, a construct outside the model, no launchable block) is skipped
and its reason recorded in :attr:`Ranked.skipped`; the best valid
configuration wins. When no variant can be ranked at all,
:func:`create_kernel` raises :class:`warpspeed.EmptyRankingError` listing
every variant's reason (``.reasons``): a ranking is never empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

import pystencils as ps

from ..errors import EmptyRankingError, FitError, LaunchError, MachineError
from ..input.kernel import Kernel
from ..input.triples import as_triple, ints_of
from ..machine import Machine
from ..measure.tune import Tuned
from ..model import Prediction, load_machine
from ..model import predict as ws_predict
from ..search.design_space import DEFAULT_FOLDS, design_blocks
from ..search.executor import no_collection
from ..search.rank import Ranking, summary
from ..search.rank import rank as ws_rank
from ..search.ties import leaders_first, ranking_key
from ..search.variants import checked_folds, thread_counts
from .default_block import with_default_block
from .extract import Extraction, read
from .fold import Fold, _fold3, check_config, for_target, generate, target_note
from .layouts import ShapeSpec
from .measured import measured_choice
from .options import (
    PREDICT_KEYWORDS,
    RANK_KEYWORDS,
    TUNE_KEYWORDS,
    ExtractOptions,
    with_keywords,
)
from .registers import with_registers
from .variants import Job, Variant, make_variants, reason


def blocks(
    threads: int, domain: tuple[int, int, int] = (2**30, 2**30, 2**30)
) -> list[tuple[int, int, int]]:
    """Power-of-two block sizes of ``threads`` threads in the paper's design
    space (MODEL.md §8: :func:`warpspeed.search.design_space.design_blocks`),
    without dimensions larger than the domain needs."""
    return design_blocks(threads, domain)


def _is_kernel_function(obj: Any) -> bool:
    return hasattr(obj, "body") and hasattr(obj, "target")


def predict(
    kernel_or_assignments: Any,
    machine: str | Path | Machine = "A100",
    block: tuple[int, int, int] = (256, 1, 1),
    fold: Sequence[int] | None = None,
    *,
    config: ps.CreateKernelConfig | None = None,
    options: ExtractOptions | None = None,
    **keywords: Any,
) -> Prediction:
    """Predict a pystencils kernel, or assignments generated with ``config``
    and folded by ``fold`` (MODEL.md §8).

    ``fold`` defaults to ``(1, 1, 1)``; for a kernel made by
    :func:`warpspeed.pystencils.generate` pass the fold it was made with (a
    strided iteration slice is not a fold: one update per thread).
    ``options`` (:class:`ExtractOptions`): how to read the kernel (the
    shape of fields of symbolic size, ``params``, ``grid_points``, the
    list of an index-list kernel, ...; :func:`extract`), its registers per
    thread (nvcc's count or the estimate by default, module docstring), the
    timing model and capacity curves. The same options as keywords
    (``predict(..., shape=...)``) still work and are deprecated. A kernel
    whose indexing scheme fixes the block raises
    :class:`warpspeed.LaunchError` for any other block. The prediction's
    notes begin with the extraction's (:attr:`Extraction.notes`: what was
    assumed or approximated in reading the kernel) and, when the estimate
    stands in for nvcc, the register count's.
    """
    if isinstance(machine, ps.CreateKernelConfig):
        raise MachineError(
            "predict takes the machine second and the pystencils configuration as config=: "
            "predict(assignments, 'H200', (256, 1, 1), config=config)"
        )
    opts = with_keywords(options, keywords, "predict", PREDICT_KEYWORDS)
    f = _fold3(fold or (1, 1, 1))
    m = load_machine(machine)
    b = as_triple(ints_of(block, "block", count=3, error=LaunchError))
    asked = target_note(config, m.family.target, m.name)
    config = for_target(config, m.family.target)
    if _is_kernel_function(kernel_or_assignments):
        kernel_function = kernel_or_assignments
    else:
        kernel_function = generate(kernel_or_assignments, config, f, shape=opts.shape)
    ex = read(kernel_function, opts, fold=f)
    kernel, reg_note = with_registers(ex.kernel, kernel_function, m.arch, opts.registers)
    fixed = kernel.fixed_block
    if fixed is not None and b != fixed:
        raise LaunchError(
            f"this kernel's indexing scheme fixes the block to {fixed}; got {b}: predict "
            f"with block={fixed}"
        )
    p = ws_predict(kernel, m, b, fits=opts.fits, model=opts.model)
    own = asked + ex.notes + ((reg_note,) if reg_note else ())
    return replace(p, notes=tuple(dict.fromkeys(own + p.notes)))


def _power_of_two_counts(counts: tuple[int, ...]) -> tuple[int, ...]:
    """``counts``, each a power of two: the blocks :func:`create_kernel`
    ranks (MODEL.md §8); a :class:`LaunchError` naming any other."""
    odd = [n for n in counts if n & (n - 1)]
    if odd:
        raise LaunchError(
            f"threads: {odd[0]} is not a power of two, and create_kernel ranks the power-of-two "
            "blocks; give powers of two, or rank every factorisation with "
            "warpspeed.rank(..., all_shapes=True) on the extracted kernels"
        )
    return counts


@dataclass(frozen=True)
class Ranked:
    """The kernel of the best configuration (the measured best with
    ``measure=K``), every prediction best first, the folding variants skipped
    with the reason (module docstring), and what was timed."""

    kernel: Any
    ranking: tuple[Prediction, ...]
    skipped: tuple[tuple[Fold, str], ...] = ()
    notes: tuple[str, ...] = ()
    #: The configurations timed with ``measure=K`` (None without it).
    tuned: Tuned | None = None

    def __iter__(self):  # allows ``kernel, ranking = create_kernel(...)``
        return iter((self.kernel, list(self.ranking)))

    def __repr__(self) -> str:
        """A short summary: the best three, the skipped variants and notes
        counted (the fields hold them)."""
        name = getattr(self.kernel, "name", type(self.kernel).__name__)
        machine = self.ranking[0].machine if self.ranking else "?"
        head = (f"Ranked({name} on {machine}: {len(self.ranking)} configurations, "
                f"{len(self.skipped)} variants skipped, {len(self.notes)} notes")
        return summary(head, self.ranking)


def rank(
    extractions: (Iterable[tuple[Fold, Extraction | Kernel]]
                  | Mapping[Fold, Extraction | Kernel]),
    machine: str | Path | Machine,
    threads: int | Sequence[int] | None = None,
    *,
    options: ExtractOptions | None = None,
    jobs: int | None = None,
    executor: Executor | None = None,
    **keywords: Any,
) -> list[Prediction]:
    """Predict every block size of ``threads`` threads (a count, counts, or
    ``None``: every count that can launch, :func:`warpspeed.rank`) for every
    folded variant (only the fixed block of a kernel that has one); best
    first (highest GLup/s, then fold, then block; MODEL.md §8), with the
    timing model and capacity curves of ``options``. ``jobs`` worker
    processes (``None``: one per CPU), or ``executor``'s. Raises
    :class:`warpspeed.EmptyRankingError` when nothing can launch. The
    keywords ``fits`` and ``model`` still work and are deprecated."""
    opts = with_keywords(options, keywords, "rank", RANK_KEYWORDS)
    items = extractions.items() if isinstance(extractions, Mapping) else extractions
    return list(_ranking(items, machine, threads, opts, jobs, executor).predictions)


def _pairs(items: Iterable[object]) -> list[tuple[Fold, Extraction | Kernel]]:
    """``items`` as ``(fold, extraction or kernel)`` pairs, or a TypeError
    saying what :func:`rank` ranks (assignments go to :func:`create_kernel`)."""
    out = list(items) if isinstance(items, Iterable) else [items]
    for item in out:
        if not (isinstance(item, tuple) and len(item) == 2
                and isinstance(item[1], (Extraction, Kernel))):
            raise TypeError(
                "rank() ranks extracted variants: a mapping fold -> extraction (or kernel), or "
                f"(fold, extraction) pairs, got {type(item).__name__} {item!r:.60}; "
                "create_kernel(assignments, config, machine=...) ranks assignments")
    return cast(list[tuple[Fold, Extraction | Kernel]], out)


def _ranking(
    items: Iterable[tuple[Fold, Extraction | Kernel]],
    machine: str | Path | Machine,
    threads: int | Sequence[int] | None,
    options: ExtractOptions,
    jobs: int | None,
    executor: Executor | None,
) -> Ranking:
    """The :func:`warpspeed.rank` of the variants (:func:`rank`)."""
    kernels = {f: (ex.kernel if isinstance(ex, Extraction) else ex) for f, ex in _pairs(items)}
    if not kernels:
        raise LaunchError("no folding variant to rank")
    return ws_rank(kernels, machine, threads=threads, fits=options.fits, jobs=jobs,
                   model=options.model, executor=executor)


def create_kernel(
    assignments: Any,
    config: ps.CreateKernelConfig | None = None,
    *,
    machine: str | Path | Machine = "A100",
    threads: int | Sequence[int] | None = None,
    folds: Sequence[Sequence[int]] = DEFAULT_FOLDS,
    jobs: int | None = None,
    options: ExtractOptions | None = None,
    **keywords: Any,
) -> Ranked:
    """Generate ``assignments`` with the best block size and folding.

    Every folding in ``folds`` is generated through pystencils and every
    block size of ``threads`` threads is predicted on ``machine``; the
    result unpacks as ``kernel, ranking``: the pystencils kernel of the best
    folding whose launch configuration defaults to the best block size,
    and all predictions sorted best first (MODEL.md §8). ``threads``: a
    count or counts per block (default every power of two from 64 that can
    launch; a count that is not a power of two within the machine's limit,
    and ``folds`` that are not a list of folds raise
    :class:`warpspeed.LaunchError`, a ``config`` that is not a pystencils
    configuration a TypeError, before anything is generated). ``jobs``:
    worker processes of the ranking (default one per CPU, as
    :func:`warpspeed.rank`). ``options`` (:class:`ExtractOptions`):
    how to read the variants (the shape of fields of symbolic size, the
    values of integer parameters, ``grid_points``, the list of an
    index-list kernel; :func:`extract`), their registers per thread (a
    count, ``"estimate"``, or nvcc's count when installed, module
    docstring), the timing model and capacity curves; the same options as
    keywords (``create_kernel(..., shape=...)``) still work and are
    deprecated. Variants that cannot be made or predicted are skipped
    (:attr:`Ranked.skipped`); if none can be ranked,
    :class:`warpspeed.EmptyRankingError` lists why (module docstring).

    ``measure=K`` (a keyword, or the options' field): time the ranking's best
    ``K`` configurations (and their ties) on this machine's GPU, or replay
    them from a measurement CSV (``replay=``: its path, or a
    :class:`warpspeed.measure.tune.Replay` of one kernel's rows), and return
    the kernel of the measured best; :attr:`Ranked.tuned` holds the
    predicted and measured GLup/s of each configuration timed
    (:mod:`.measured`). Without a GPU the ranking stands and ``tuned`` says
    why.

    Example: the best block of 256 threads, unfolded or folded twice along
    z, for a 7-point Jacobi sweep (no GPU needed)::

        >>> import pystencils as ps
        >>> import warpspeed.pystencils as wps
        >>> src, dst = ps.fields("src, dst: double[34, 34, 34]")
        >>> update = ps.Assignment(dst[0, 0, 0], (src[1, 0, 0] + src[-1, 0, 0] + src[0, 1, 0]
        ...     + src[0, -1, 0] + src[0, 0, 1] + src[0, 0, -1]) / 6)
        >>> cfg = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
        >>> kernel, ranking = wps.create_kernel([update], cfg, machine="V100", threads=256,
        ...                                     folds=[(1, 1, 1), (1, 1, 2)], jobs=1)
        >>> best = ranking[0]
        >>> best.block[0] * best.block[1] * best.block[2], best.fold in {(1, 1, 1), (1, 1, 2)}
        (256, True)
        >>> best.glups >= max(p.glups for p in ranking) * 0.99  # a leader within 1 %: §8
        True
        >>> type(kernel).__name__  # the pystencils kernel of the best fold
        'GpuKernel'
    """
    opts = with_keywords(options, keywords, "create_kernel", PREDICT_KEYWORDS | TUNE_KEYWORDS,
                         current=TUNE_KEYWORDS)
    with no_collection():  # no walk of pystencils' heap here or in the workers
        m = load_machine(machine)
        check_config(config, "; create_kernel takes the machine as machine=, e.g. "
                     "create_kernel(assignments, config, machine='H200')")
        if threads is not None:  # refused before any variant is generated
            threads = _power_of_two_counts(thread_counts(threads, m))
        asked = target_note(config, m.family.target, m.name)
        config = for_target(config, m.family.target)
        job = Job(assignments, config, opts, m.arch)
        made, pool, worker_notes = make_variants(
            job, list(dict.fromkeys(checked_folds(folds, pad=True))), jobs)
        try:
            variants = {v.fold: v.extraction for v in made if v.extraction is not None}
            skipped = [(v.fold, v.skipped) for v in made if v.skipped is not None]
            ranking = _rank_each(variants, skipped, machine, threads, opts, jobs, pool,
                                 worker_notes)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        if not ranking:
            raise _nothing_ranked(skipped)
        # a prediction's fold is its kernel's (a grid-strided kernel's counts the
        # points of each thread); the variant it came from is generated
        variant_of = {ex.kernel.fold: f for f, ex in variants.items()}
        tuned = None if opts.measure is None else measured_choice(
            ranking, opts.measure, opts.replay, made, variant_of, assignments, config,
            opts.shape)
        fold, block = ((ranking[0].fold, ranking[0].block) if tuned is None
                       else (tuned.chosen.fold, tuned.chosen.block))
        kernel, why = _best_kernel(made, variant_of[fold], block, assignments, config,
                                   opts.shape)
        return Ranked(kernel, tuple(ranking), tuple(skipped),
                      asked + _notes(made, variants, worker_notes) + why, tuned)


def _notes(made: Sequence[Variant], variants: Mapping[Fold, Extraction],
           worker_notes: Sequence[str]) -> tuple[str, ...]:
    """The variants' notes, then those on their registers, then those on
    worker processes (:mod:`warpspeed.search.workers`), each once."""
    registers = [f"fold {v.fold}: {v.note}" for v in made if v.extraction and v.note]
    return tuple(dict.fromkeys([n for ex in variants.values() for n in ex.notes] + registers
                               + list(worker_notes)))


def _nothing_ranked(skipped: Sequence[tuple[Fold, str]]) -> EmptyRankingError:
    """The error when no variant can be ranked, with every variant's reason."""
    reasons = tuple(f"fold {f}: {why}" for f, why in skipped)
    return EmptyRankingError(
        "no configuration of the kernel can be ranked, so no block size is chosen:\n  "
        + "\n  ".join(reasons or ("no folding variant was given",)), reasons,
    )


def _best_kernel(made: Sequence[Variant], fold: Fold, block: tuple[int, int, int],
                 assignments: Any, config: ps.CreateKernelConfig | None, shape: ShapeSpec
                 ) -> tuple[Any, tuple[str, ...]]:
    """The kernel of the variant ``fold`` with ``block`` as its default: the
    one generated while ranking where that changes no code (module
    docstring), else generated again; if pystencils refuses the block, the
    kernel without it and a note why."""
    made_best = next(v for v in made if v.fold == fold)
    kernel = with_default_block(made_best.kernel_function or made_best.parts, config, block)
    if kernel is not None:
        return kernel, ()
    try:
        return generate(assignments, config, fold, block, shape=shape), ()
    except Exception as exc:  # noqa: BLE001 - keep the variant generated without the block
        kernel = made_best.kernel_function or generate(assignments, config, fold, shape=shape)
        return kernel, (reason(f"the best block {block} could not be set as default", exc),)


def _rank_each(
    variants: dict[Fold, Extraction],
    skipped: list[tuple[Fold, str]],
    machine: str | Path | Machine,
    threads: int | Sequence[int] | None,
    options: ExtractOptions,
    jobs: int | None,
    executor: Executor | None,
    worker_notes: list[str],
) -> list[Prediction]:
    """All variants ranked together; if that fails, each on its own, the
    failing ones appended to ``skipped``; the notes on worker processes
    appended to ``worker_notes``. A bad machine or fits file is the
    caller's error and raises; so does a failure of the machinery rather
    than of a variant (out of memory, no process, no file: never a variant
    whose blocks "cannot be predicted"). Workers that fail cost time, not
    results (:class:`warpspeed.search.executor.Runner`)."""
    if not variants:
        return []
    try:
        ranking = _ranking(variants.items(), machine, threads, options, jobs, executor)
        worker_notes += ranking.worker_notes
        return list(ranking.predictions)
    except _CALLERS:
        raise
    except Exception:  # noqa: BLE001 - find the variant that fails, below
        pass
    out: list[Prediction] = []
    for f, ex in variants.items():
        try:
            ranking = _ranking([(f, ex)], machine, threads, options, jobs, executor)
        except _CALLERS:
            raise
        except Exception as exc:  # noqa: BLE001 - the hook must not abort (module docstring)
            skipped.append((f, reason("no block can be predicted", exc)))
            continue
        worker_notes += ranking.worker_notes
        out += ranking.predictions
    return leaders_first(sorted(out, key=ranking_key), lambda p: p)


#: Errors of the caller's input or of the machinery, not of one variant:
#: raised by the hook, never recorded as a skipped variant.
_CALLERS = (MachineError, FitError, MemoryError, OSError)


__all__ = ["DEFAULT_FOLDS", "Ranked", "blocks", "create_kernel", "predict", "rank"]
