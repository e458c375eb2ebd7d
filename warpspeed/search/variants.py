"""The kernels a ranking compares and what it says about them (MODEL.md §8):
folding variants from a kernel, a mapping or a factory; the thread counts
of the default design space; the error when nothing is left to rank; the
note on merged repeated loads (MODEL.md §1, §10)."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..errors import EmptyRankingError, LaunchError, MissingAxisError
from ..input.kernel import Kernel
from ..input.triples import as_triple, ints_of
from ..machine import Machine
from .design_space import DEFAULT_FOLDS, Block, Fold

KernelSource = Kernel | Mapping[Fold, Kernel] | Callable[[Fold], Kernel]

#: The smallest thread count of the default design space: two warps.
MIN_DEFAULT_THREADS = 64


def default_threads(machine: Machine) -> tuple[int, ...]:
    """Every power of two from 64 to the machine's threads per block: the
    thread counts ranked by default. Counts a kernel cannot launch (too
    many registers) are excluded with the reason, the others ranked."""
    out, t = [], MIN_DEFAULT_THREADS
    while t <= machine.max_threads_per_block:
        out.append(t)
        t *= 2
    return tuple(out) or (machine.max_threads_per_block,)


#: What a ``threads`` argument may be, said by every refusal of one.
THREADS_FORMS = ("give a positive count of threads per block (threads=256), several "
                 "(threads=[128, 256]), or None for every power of two from 64 to the "
                 "machine's limit")


def thread_count(t: object, label: str, machine: Machine | None = None) -> int:
    """One thread count of a ``threads`` argument (named ``label`` in the
    error) as an int: a positive whole number within the machine's threads
    per block, else a :class:`LaunchError` saying what to give (MODEL.md §8)."""
    if isinstance(t, bool) or not isinstance(t, numbers.Integral):
        raise LaunchError(f"{label}: {t!r} is not a whole number of threads; " + THREADS_FORMS)
    n = int(t)
    if n < 1:
        raise LaunchError(f"{label}: a block needs at least one thread, got {n}; "
                          + THREADS_FORMS)
    if machine is not None and n > machine.max_threads_per_block:
        raise LaunchError(
            f"{label}: {n} threads per block, but {machine.name} allows at most "
            f"{machine.max_threads_per_block}; give counts up to {machine.max_threads_per_block}"
        )
    return n


def thread_counts(threads: int | Iterable[int] | None, machine: Machine | None,
                  label: str | None = None) -> tuple[int, ...]:
    """The requested thread counts, distinct, in order: ``threads`` is one
    count, an iterable of counts, or None (:func:`default_threads`; needs
    ``machine``). Each is checked by :func:`thread_count`; ``label`` names
    the argument in errors (default ``threads=<value>``)."""
    label = label or f"threads={threads!r}"
    if threads is None:
        if machine is None:
            raise LaunchError(f"{label} needs a machine to take its limit from; "
                              + THREADS_FORMS)
        return default_threads(machine)
    items: tuple[object, ...]  # each checked by thread_count
    if isinstance(threads, Iterable) and not isinstance(threads, (str, bytes)):
        items = tuple(threads)
    else:
        items = (threads,)
    if not items:
        raise LaunchError(f"{label} names no thread count; " + THREADS_FORMS)
    return tuple(dict.fromkeys(thread_count(t, label, machine) for t in items))


def _default_folds(factory: Callable[[Fold], Kernel]
                   ) -> tuple[list[tuple[tuple[int, ...], Kernel]], tuple[str, ...]]:
    """The factory's kernels of :data:`DEFAULT_FOLDS`, less the folds along an
    axis the kernel does not have (a 2-D kernel folded in z), and a line on
    each fold left out."""
    given: list[tuple[tuple[int, ...], Kernel]] = []
    left_out: list[str] = []
    for f in DEFAULT_FOLDS:
        try:
            given.append((f, factory(f)))
        except MissingAxisError as exc:
            if f == (1, 1, 1):
                raise
            left_out.append(f"fold {f} left out of the default folds: {exc}")
    return given, tuple(left_out)


def checked_blocks(blocks: object) -> list[Block]:
    """``blocks`` as a list of three positive integers each (MODEL.md §8);
    a :class:`LaunchError` naming the block that is not, or saying that one
    block was given where a list of them is asked for. Whether a block
    launches is the ranking's to say (an exclusion with its reason)."""
    items = _items(blocks)
    if items is None or not items:
        raise LaunchError(f"blocks is a list of blocks (x, y, z) like [(256, 1, 1)], "
                          f"got {blocks!r}")
    return [as_triple(ints_of(b, "each block", count=3, error=LaunchError)) for b in items]


def _items(values: object) -> list[object] | None:
    """The elements of a list of triples, None unless ``values`` is one (a
    string, a number or a sequence of numbers: one triple, or none)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return None
    items = list(values)
    return None if any(isinstance(v, (numbers.Number, str, bytes)) for v in items) else items


def checked_folds(folds: object, pad: bool = False) -> list[Fold]:
    """``folds`` as a list of three positive factors each (MODEL.md §8; an
    empty list is the default folds, as None; ``pad``: one or two factors
    stand for x or x, y, the rest 1); a
    :class:`LaunchError` naming the fold that is not, or saying that one
    fold was given where a list of them is asked for."""
    items = _items(folds)
    if items is None:
        raise LaunchError(f"folds is a list of folds (x, y, z) like [(1, 2, 1)], got {folds!r}")
    return [as_triple(ints_of(f, "each fold", count=3, pad=pad, error=LaunchError))
            for f in items]


def fold_variants(kernels: KernelSource, folds: Sequence[Fold] | None
                  ) -> tuple[list[tuple[Fold, Kernel]], tuple[str, ...]]:
    """``(fold, kernel)`` pairs of a kernel, a mapping or a factory, and a
    line on each default fold left out (MODEL.md §8: a factory ranked
    without ``folds`` gets the default folds its kernel has axes for)."""
    left_out: tuple[str, ...] = ()
    folds = None if folds is None else checked_folds(folds)
    if isinstance(kernels, Kernel):
        if folds is not None and any(tuple(f) != kernels.fold for f in folds):
            raise LaunchError(
                "folding variants need a kernel factory fold -> Kernel or a mapping "
                "fold -> Kernel, not a single kernel"
            )
        return [(kernels.fold, kernels)], ()
    if isinstance(kernels, Mapping):
        if folds is not None:
            raise LaunchError("give folds either as the mapping's keys or as folds=, not both")
        given = [(tuple(f), k) for f, k in kernels.items()]
    elif callable(kernels):
        # the folds reach the factory as triples (checked_folds)
        if folds:
            given = [(f, kernels(f)) for f in folds]
        else:
            given, left_out = _default_folds(kernels)
    else:
        raise TypeError(
            f"rank() needs a Kernel, a mapping fold -> Kernel or a factory, got "
            f"{type(kernels).__name__}"
        )
    out: list[tuple[Fold, Kernel]] = []
    for f, k in given:
        if not isinstance(k, Kernel):
            raise TypeError(f"the kernel for fold {f} is a {type(k).__name__}, not a ws.Kernel")
        if len(f) != 3:  # a mapping's key (folds= are checked above)
            raise LaunchError(f"folds are three factors (x, y, z), got {f}")
        out.append((as_triple(f), k))
    return out, left_out


def empty_ranking(
    excluded: Sequence[tuple[Fold, Block, str]], machine: Machine,
    kernels: Sequence[tuple[Fold, Kernel]],
) -> EmptyRankingError:
    """The error when every configuration was excluded: the distinct
    reasons, each with how many configurations it excluded, and the
    registers per thread of each variant (the usual cause)."""
    counts: dict[str, int] = {}
    for _, _, reason in excluded:
        counts[reason] = counts.get(reason, 0) + 1
    reasons = tuple(f"{n} x {r}" for r, n in counts.items())
    regs = "; ".join(
        f"fold {f}: {k.registers} registers per thread ({k.registers_source})"
        for f, k in kernels
    )
    shown = "; ".join(reasons[:4]) + (f"; and {len(reasons) - 4} more" if len(reasons) > 4 else "")
    return EmptyRankingError(
        f"no configuration is left to rank on {machine.name} ({regs}): {shown}. Try other "
        "thread counts, explicit blocks or fewer registers", reasons,
    )


__all__ = [
    "MIN_DEFAULT_THREADS",
    "THREADS_FORMS",
    "KernelSource",
    "checked_blocks",
    "checked_folds",
    "default_threads",
    "empty_ranking",
    "fold_variants",
    "thread_count",
    "thread_counts",
]
