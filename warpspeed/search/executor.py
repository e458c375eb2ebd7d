"""Running the ranking's chunks of work: on a caller's executor, a pool of
worker processes of our own (:mod:`.workers`), or inline, with progress
reports (MODEL.md §8, ranking). Nothing is printed; ``progress(done,
total)`` is called as work completes."""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait

from .workers import WorkerPool

#: A chunk of work: the function, its arguments and how many items it covers.
Work = tuple[Callable[..., Sequence[object]], tuple[object, ...], int]
#: Work submitted to an executor (its future), or held back to run inline or
#: later (None).
Started = tuple["Future[Sequence[object]] | None", Work]


class Runner:
    """Runs chunks of work on an executor or inline, reporting progress.

    On a :class:`WorkerPool` this process works too, whenever it would
    otherwise wait: until the pool's workers are up, it runs the chunks
    held back for them, last first (and the pool starts them when that
    pays); later, a chunk no worker has taken yet."""

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

    def map(self, fn: Callable[..., Sequence[object]], tasks: list[tuple[object, ...]],
            sizes: list[int]) -> list[Sequence[object]]:
        """``fn(*args)`` of every task, in the order of ``tasks``."""
        results: list[Sequence[object]] = [[] for _ in tasks]
        for i, result in self.gather(self.start([(fn, args, n) for args, n in zip(tasks, sizes)])):
            results[i] = result
        return results

    def _ours(self) -> bool:
        return isinstance(self.executor, WorkerPool)

    def _ready(self) -> bool:
        """Whether submitting now would not wait for workers to start."""
        return not isinstance(self.executor, WorkerPool) or self.executor.ready.is_set()

    def _submit(self, work: Work) -> Future[Sequence[object]]:
        assert self.executor is not None
        return self.executor.submit(work[0], *work[1])

    def start(self, work: list[Work]) -> list[Started]:
        """Submit every ``(fn, args, size)`` of ``work`` now, in order; held
        back for :meth:`gather` when there is no executor or its workers
        are still starting."""
        if self.executor is None or not self._ready():
            return [(None, w) for w in work]
        return [(self._submit(w), w) for w in work]

    def _run(self, work: Work, left: int = 0) -> Sequence[object]:
        """``work`` run here; on our pool whose workers are not up, with
        ``left`` pieces waiting for them (:meth:`WorkerPool.worked_alone`)."""
        t0 = time.perf_counter()
        result = work[0](*work[1])
        if isinstance(self.executor, WorkerPool) and not self._ready():
            self.executor.worked_alone(time.perf_counter() - t0, left)
        self.done += work[2]
        self._report()
        return result

    def gather(self, started: list[Started]) -> Iterator[tuple[int, Sequence[object]]]:
        """``(index, result)`` of everything :meth:`start`-ed (indices into
        the concatenation of the lists given), each as it completes: the
        caller uses early results while the pool works on the rest."""
        if self.executor is None:
            for i, (_, w) in enumerate(started):
                yield i, self._run(w)
            return
        futures = {i: fut for i, (fut, _) in enumerate(started) if fut is not None}
        held = [i for i, (fut, _) in enumerate(started) if fut is None]
        while futures or held:
            if held and self._ready():
                futures.update((i, self._submit(started[i][1])) for i in held)
                held = []
            done = sorted(i for i, fut in futures.items() if fut.done())
            if not done:
                nxt = held.pop() if held else self._taken_back(futures)
                if nxt is not None:
                    yield nxt, self._run(started[nxt][1], len(held))
                    continue
                wait(futures.values(), return_when=FIRST_COMPLETED)
                continue
            for i in done:
                result = futures.pop(i).result()
                self.done += started[i][1][2]
                self._report()
                yield i, result

    def _taken_back(self, futures: dict[int, Future[Sequence[object]]]) -> int | None:
        """The last chunk on our pool that no worker has taken, cancelled
        there for this process to run, or None."""
        if not self._ours():
            return None
        for i in sorted(futures, reverse=True):
            if futures[i].cancel():
                del futures[i]
                return i
        return None


def chunks(items: list[object], parts: int) -> list[list[object]]:
    size = max(1, math.ceil(len(items) / max(1, parts)))
    return [items[i:i + size] for i in range(0, len(items), size)]


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """No cyclic garbage collection until the block ends (``gc.disable``,
    then enabled again if it was). A full collection walks every object of
    a heap holding pystencils, sympy and lbmpy (about 0.03-0.1 s); a
    ranking triggered two or three (the workers of a
    :class:`~warpspeed.search.workers.WorkerPool` run without it too).
    Reference counting still frees what the block drops; its cyclic
    garbage waits for the next collection after the block."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


__all__ = ["Runner", "chunks", "no_collection"]
