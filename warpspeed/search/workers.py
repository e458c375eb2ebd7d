"""Worker processes of the ranking and of the pystencils hook (MODEL.md §8,
ranking), safe to start from a process with other threads.

Forking a process that runs other threads (Jupyter's, Panel's, dask's) may
deadlock the child on a lock one of them held, and Python warns about it.
The workers come instead from a fork server (:func:`mp_context`): a process
started once per caller, with one thread and nothing but warpspeed imported
(:data:`PRELOAD`; the hook adds its pystencils front end), that forks each
worker ready to run. Tasks and results travel pickled, as they always did
through a pool. Where there is no fork server (Windows), workers are
spawned.

Starting the server costs one import of warpspeed in it, once per process:
a :class:`WorkerPool` starts it only when the work pays for it, and its
workers only when they can start at once; the caller works meanwhile
(:class:`warpspeed.search.executor.Runner`), so that nothing waits for the
server and a short ranking does not start it.

Like any pool that does not fork, the workers import the caller's main
script: a script that ranks with ``jobs > 1`` must do so under ``if
__name__ == "__main__":``. Otherwise every worker ranks again and dies;
:func:`worker_errors` says so in one line.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..errors import WorkerError

#: The contexts :func:`mp_context` gives.
MpContext = multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext

#: The modules the ranking's workers need: the fork server imports them
#: once (its preload), so that workers start with them.
PRELOAD = ("warpspeed",)


def mp_context(preload: Sequence[str] = PRELOAD) -> MpContext:
    """The fork server's context (module docstring), which imports
    ``preload`` when it starts (the first pool of the process decides);
    spawn where there is none."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    return context


#: When starting the fork server pays, in seconds of work done alone: its
#: imports take a second of CPU or more (two with pystencils), and workers
#: help only after that. It is started once the work a process did alone
#: and the work a pool has left exceed this.
SERVER_START = 2.0
#: Set once a process started by the fork server got through: it is up.
_server_up = threading.Event()
#: Seconds of work this process did alone while a pool's workers were not
#: started (:meth:`WorkerPool.worked_alone`).
_alone = [0.0]


class WorkerPool(ProcessPoolExecutor):
    """A pool of worker processes warpspeed makes for itself, not a
    caller's executor. Its workers start only when they can start at once
    (``ready``), the fork server being up: until then the caller does the
    work itself (:class:`warpspeed.search.executor.Runner`), and says so
    (:meth:`worked_alone`), which starts the server when that pays
    (:data:`SERVER_START`). The workers run without cyclic garbage
    collection, as the caller does while it ranks
    (:func:`warpspeed.search.executor.no_collection`)."""

    def __init__(self, workers: int, preload: Sequence[str] = PRELOAD) -> None:
        self._context = mp_context(preload)
        super().__init__(max_workers=workers, mp_context=self._context, initializer=gc.disable)
        self.ready = threading.Event()
        self._started = False
        self._solo = (0.0, 0)
        if _server_up.is_set():
            self.start()

    def start(self) -> None:
        """Make the pool ``ready`` in the background: start a process that
        does nothing (not a worker: it would hold the pool's lock while the
        server imports)."""
        if not self._started:
            self._started = True
            threading.Thread(target=self._probe, name="warpspeed-workers", daemon=True).start()

    def _probe(self) -> None:
        try:
            probe = self._context.Process(target=int, daemon=True)
            probe.start()
            probe.join()
            _server_up.set()
        except (OSError, RuntimeError):  # the pool's tasks will say what is wrong
            pass
        finally:
            self.ready.set()

    def worked_alone(self, seconds: float, left: int) -> None:
        """The caller did one piece of the pool's work itself in
        ``seconds``, and ``left`` pieces remain: start the workers once the
        work done alone in this process and the estimate of what is left
        exceed :data:`SERVER_START`."""
        total, pieces = self._solo[0] + seconds, self._solo[1] + 1
        self._solo = (total, pieces)
        _alone[0] += seconds
        if _alone[0] + total / pieces * left > SERVER_START:
            self.start()


@contextlib.contextmanager
def worker_errors(workers: int) -> Iterator[None]:
    """A dead worker of a :class:`WorkerPool` raises :class:`WorkerError`
    saying why that happens (module docstring)."""
    try:
        yield
    except BrokenProcessPool as exc:
        raise WorkerError(
            f"a worker process ({workers} jobs) ended before its work was done: out of "
            "memory, or a script that ranks outside 'if __name__ == \"__main__\":' (workers "
            "import the main script); guard it, or pass jobs=1 to work in this process"
        ) from exc


__all__ = ["PRELOAD", "SERVER_START", "WorkerPool", "mp_context", "worker_errors"]
