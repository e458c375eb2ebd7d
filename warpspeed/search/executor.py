"""Running the ranking's chunks of work: on a caller's executor, a pool of
worker processes of our own (:mod:`.workers`), or inline, with progress
reports (MODEL.md §8, ranking); work the executor fails is done inline.
Nothing is printed; ``progress(done, total)`` is called as work
completes."""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, BrokenExecutor, Executor, Future, wait

from .workers import WorkerPool, alone_note, failed_note, failure

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
    pays); later, a chunk no worker has taken yet.

    A chunk that fails on the executor (a worker that died, was killed or
    could not start, a task that could not reach it) is run again here;
    an executor that cannot take work any more (a broken pool, workers
    that could not start) is given none, and this process does the rest.
    ``notes`` says what failed (:mod:`.workers`): a failure of the
    workers costs time, never results. A chunk that fails here too
    raises its error."""

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
        self.notes: list[str] = []
        self._usable = executor is not None

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
        """Whether submitting now would not wait for workers to start; an
        executor that can take no work is ready (it gets none)."""
        pool = self.executor
        if not isinstance(pool, WorkerPool) or not pool.ready.is_set():
            return not isinstance(pool, WorkerPool)
        if pool.failed is not None and self._usable:
            self._usable = False
            self.notes.append(alone_note(f"they could not start ({pool.failed})"))
        return True

    def _failed(self, exc: BaseException) -> None:
        """The executor failed a chunk: noted once per kind of failure; a
        broken executor gets no more work."""
        note = failed_note(failure(exc))
        if note not in self.notes:
            self.notes.append(note)
        if isinstance(exc, BrokenExecutor):
            self._usable = False

    def _submit(self, work: Work) -> Future[Sequence[object]] | None:
        """``work`` submitted, or None where the executor refused it."""
        assert self.executor is not None
        if not self._usable:
            return None
        try:
            return self.executor.submit(work[0], *work[1])
        except Exception as exc:  # noqa: BLE001 - any refusal: this process does the work
            self._failed(exc)
            self._usable = False
            return None

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

    def _result(self, future: Future[Sequence[object]], work: Work) -> Sequence[object]:
        """The result of ``work`` done on the executor, or done here again
        when the executor failed it (class docstring)."""
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001 - run here: a real error raises again
            self._failed(exc)
            return self._run(work)
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
            if held and self._usable and self._ready():
                held = self._submit_held(futures, held, started)
            done = sorted(i for i, fut in futures.items() if fut.done())
            if not done:
                nxt = held.pop() if held else self._taken_back(futures)
                if nxt is not None:
                    yield nxt, self._run(started[nxt][1], len(held))
                    continue
                wait(futures.values(), return_when=FIRST_COMPLETED)
                continue
            for i in done:
                yield i, self._result(futures.pop(i), started[i][1])

    def _submit_held(self, futures: dict[int, Future[Sequence[object]]], held: list[int],
                     started: list[Started]) -> list[int]:
        """Submit the ``held`` chunks into ``futures``; those the executor
        refused, still held."""
        still = []
        for i in held:
            fut = self._submit(started[i][1])
            if fut is None:
                still.append(i)
            else:
                futures[i] = fut
        return still

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
