"""Running the ranking's chunks of work: on a caller's executor, a local
process pool, or inline, with progress reports (MODEL.md §8, ranking).
Nothing is printed; ``progress(done, total)`` is called as work completes."""

from __future__ import annotations

import math
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, as_completed


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
        results: list[list[object]] = [[] for _ in tasks]
        if self.executor is None:
            for i, args in enumerate(tasks):
                results[i] = fn(*args)
                self.done += sizes[i]
                self._report()
            return results
        futures: dict[Future[list[object]], int] = {
            self.executor.submit(fn, *args): i for i, args in enumerate(tasks)
        }
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            self.done += sizes[i]
            self._report()
        return results


def chunks(items: list[object], parts: int) -> list[list[object]]:
    size = max(1, math.ceil(len(items) / max(1, parts)))
    return [items[i:i + size] for i in range(0, len(items), size)]


def mp_context() -> multiprocessing.context.BaseContext | None:
    """Fork where it is safe (no other thread yet): workers then start
    without importing warpspeed again. Else the platform's default."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return None


__all__ = ["Runner", "chunks", "mp_context"]
