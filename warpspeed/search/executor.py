"""Running the ranking's chunks of work: on a caller's executor, a local
process pool, or inline, with progress reports (MODEL.md §8, ranking).
Nothing is printed; ``progress(done, total)`` is called as work completes."""

from __future__ import annotations

import contextlib
import gc
import math
import multiprocessing
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, as_completed

#: A chunk of work: the function, its arguments and how many items it covers.
Work = tuple[Callable[..., list[object]], tuple[object, ...], int]
#: Work submitted to an executor (its future), or waiting to run inline (None).
Started = tuple["Future[list[object]] | None", Work]


class Runner:
    """Runs chunks of work on an executor or inline, reporting progress."""

    def __init__(
        self,
        executor: Executor | None,
        workers: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.executor = executor
        self.workers = workers
        self.progress = progress
        self.done = 0
        self.total = 0

    def add_total(self, n: int) -> None:
        self.total += n
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total)

    def map(self, fn: Callable[..., list[object]], tasks: list[tuple[object, ...]],
            sizes: list[int]) -> list[list[object]]:
        """``fn(*args)`` of every task, in the order of ``tasks``."""
        results: list[list[object]] = [[] for _ in tasks]
        for i, result in self.gather(self.start([(fn, args, n) for args, n in zip(tasks, sizes)])):
            results[i] = result
        return results

    def start(self, work: list[Work]) -> list[Started]:
        """Submit every ``(fn, args, size)`` of ``work`` now, in order (run
        later by :meth:`gather` when there is no executor)."""
        if self.executor is None:
            return [(None, w) for w in work]
        return [(self.executor.submit(w[0], *w[1]), w) for w in work]

    def gather(self, started: list[Started]) -> Iterator[tuple[int, list[object]]]:
        """``(index, result)`` of everything :meth:`start`-ed (indices into
        the concatenation of the lists given), each as it completes: the
        caller uses early results while the pool works on the rest."""
        if self.executor is None:
            for i, (_, (fn, args, size)) in enumerate(started):
                result = fn(*args)
                self.done += size
                self._report()
                yield i, result
            return
        index = {fut: i for i, (fut, _) in enumerate(started)}
        for fut in as_completed(index):  # type: ignore[arg-type]
            i = index[fut]
            result = fut.result()
            self.done += started[i][1][2]
            self._report()
            yield i, result


def chunks(items: list[object], parts: int) -> list[list[object]]:
    size = max(1, math.ceil(len(items) / max(1, parts)))
    return [items[i:i + size] for i in range(0, len(items), size)]


def mp_context() -> multiprocessing.context.BaseContext | None:
    """Fork where it is safe (no other thread yet): workers then start
    without importing warpspeed again. Else the platform's default."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return None


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """No cyclic garbage collection until the block ends (``gc.disable``,
    then enabled again if it was). A full collection walks every object of
    a heap holding pystencils, sympy and lbmpy (about 0.03-0.1 s), and the
    forked workers each walked their copy again, touching every page they
    share; a ranking triggered two or three. Reference counting still frees
    what the block drops; its cyclic garbage waits for the next collection
    after the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


__all__ = ["Runner", "chunks", "mp_context", "no_collection"]
