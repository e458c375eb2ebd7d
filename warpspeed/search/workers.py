"""Worker processes of the ranking and of the pystencils hook (MODEL.md §8,
ranking), safe to start from any caller: a plain script, ``python -c``, a
notebook, IPython, a program with other threads.

**Never a fork of the caller.** Forking a process that runs other threads
(Jupyter's, Panel's, dask's) may deadlock the child on a lock one of them
held, and Python warns about it. The workers come instead from a fork
server (:func:`mp_context`): a process started once per caller, with one
thread and nothing but warpspeed imported (:data:`PRELOAD`; the hook adds
its pystencils front end), that forks each worker ready to run. Tasks and
results travel pickled, as they always did through a pool.

**Never the caller's script again.** A pool that does not fork normally
makes each worker import the caller's main script (``__main__``) before
its first task, so that functions defined there can be sent to it; a
script without an ``if __name__ == "__main__":`` guard then runs again in
every worker (its prints, its files, its own ranking). Nothing warpspeed
sends to its workers lives in the caller's ``__main__``, so its workers
are started without that step (:class:`_NoMainPopen`): the script runs
once, guarded or not. Something that does refer to ``__main__`` (an
assignment built from a class the script defines) fails to arrive in the
worker, and the caller does that piece of work itself
(:class:`warpspeed.search.executor.Runner`).

**Where workers cannot start safely**, :func:`start_problem` says why (a
daemonic process, which may not have children; a process still being
started by multiprocessing; a platform without a fork server, whose
spawned workers would run the main script): the caller then works alone
and the ranking's notes say so. A worker that dies, cannot start or is
killed costs time, not results: its work is done in the caller's process
and a note says what failed.

Starting the server costs one import of warpspeed in it, once per process:
a :class:`WorkerPool` starts it only when the work pays for it, and its
workers only when they can start at once; the caller works meanwhile
(:class:`warpspeed.search.executor.Runner`), so that nothing waits for the
server and a short ranking does not start it.
"""

from __future__ import annotations

import gc
import io
import multiprocessing
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import context as mp_contexts
from multiprocessing import reduction, spawn, util
from multiprocessing.process import BaseProcess

#: The keys of the preparation data (``multiprocessing.spawn``) that make a
#: new process import the caller's main script or module.
MAIN_KEYS = ("init_main_from_path", "init_main_from_name")

if sys.platform != "win32":  # the fork server exists on POSIX only
    from multiprocessing import forkserver, popen_forkserver

    class _NoMainPopen(popen_forkserver.Popen):
        """The fork server's start of a process (``multiprocessing``'s
        ``popen_forkserver``, the same steps) without :data:`MAIN_KEYS` in
        what the child is prepared with: it never imports the caller's
        ``__main__`` (module docstring)."""

        _fds: list[int]  # set by the stdlib's __init__: the fds the child inherits

        def _launch(self, process_obj: BaseProcess) -> None:
            prep = spawn.get_preparation_data(process_obj.name)
            prep = {k: v for k, v in prep.items() if k not in MAIN_KEYS}
            buf = io.BytesIO()
            mp_contexts.set_spawning_popen(self)
            try:
                reduction.dump(prep, buf)
                reduction.dump(process_obj, buf)
            finally:
                mp_contexts.set_spawning_popen(None)
            self.sentinel, w = forkserver.connect_to_new_process(self._fds)
            parent_w = os.dup(w)  # the child's sentinel of this process, as the stdlib keeps
            self.finalizer = util.Finalize(self, _close, (parent_w, self.sentinel))
            with open(w, "wb", closefd=True) as f:
                f.write(buf.getbuffer())
            self.pid = forkserver.read_signed(self.sentinel)

    def _close(*fds: int) -> None:
        for fd in fds:
            os.close(fd)

    class _NoMainProcess(mp_contexts.ForkServerProcess):
        @staticmethod
        def _Popen(process_obj: BaseProcess) -> _NoMainPopen:
            return _NoMainPopen(process_obj)

    class NoMainContext(mp_contexts.ForkServerContext):
        """The fork server's context whose processes never import the
        caller's ``__main__``."""

        Process = _NoMainProcess

#: The contexts :func:`mp_context` gives.
MpContext = multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext

#: The modules the ranking's workers need: the fork server imports them
#: once (its preload), so that workers start with them.
PRELOAD = ("warpspeed",)


def _main_would_run() -> bool:
    """Whether a spawned process would import the caller's main script or
    module (``multiprocessing.spawn``'s rule): not for ``python -c`` or an
    interactive interpreter, whose ``__main__`` has neither."""
    main = sys.modules.get("__main__")
    return (getattr(getattr(main, "__spec__", None), "name", None) is not None
            or getattr(main, "__file__", None) is not None)


def start_problem() -> str | None:
    """Why worker processes cannot start safely from this process, or None
    (module docstring)."""
    me = multiprocessing.current_process()
    if me.daemon:
        return ("this process is a daemonic worker of a process pool, which may not start "
                "processes of its own")
    if getattr(me, "_inheriting", False):
        return "this process is still being started by multiprocessing (importing its main script)"
    if "forkserver" not in multiprocessing.get_all_start_methods() and _main_would_run():
        return ("this platform has no fork server, and spawned workers would run the main "
                "script again")
    return None


def mp_context(preload: Sequence[str] = PRELOAD) -> MpContext:
    """The fork server's context whose workers never import the caller's
    ``__main__`` (module docstring), with ``preload`` imported when the
    server starts (the first pool of the process decides); spawn where
    there is none (only used when :func:`start_problem` finds nothing,
    that is, when spawning imports no main script)."""
    if sys.platform == "win32" or "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = NoMainContext()
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


def failure(exc: BaseException) -> str:
    """What failed in starting or running a worker, in one line."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"


class WorkerPool(ProcessPoolExecutor):
    """A pool of worker processes warpspeed makes for itself, not a
    caller's executor. Its workers start only when they can start at once
    (``ready``), the fork server being up: until then the caller does the
    work itself (:class:`warpspeed.search.executor.Runner`), and says so
    (:meth:`worked_alone`), which starts the server when that pays
    (:data:`SERVER_START`). If they cannot start, ``failed`` says why and
    the caller does all the work. The workers run without cyclic garbage
    collection, as the caller does while it ranks
    (:func:`warpspeed.search.executor.no_collection`)."""

    def __init__(self, workers: int, preload: Sequence[str] = PRELOAD) -> None:
        self._context = mp_context(preload)
        super().__init__(max_workers=workers, mp_context=self._context, initializer=gc.disable)
        self.ready = threading.Event()
        self.failed: str | None = None
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
            if probe.exitcode != 0:
                raise OSError(f"a test process of the fork server ended with code {probe.exitcode}")
            _server_up.set()
        except Exception as exc:  # noqa: BLE001 - any failure to start: the caller works alone
            self.failed = failure(exc)
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


def alone_note(why: str) -> str:
    """The note of a ranking whose caller did all the work: why workers
    could not start."""
    return f"the ranking ran in this process alone: no worker processes, since {why}"


def failed_note(why: str) -> str:
    """The note of a ranking part of whose work was done in the caller's
    process after a worker failed."""
    return (f"a worker process failed ({why}); its work was done again in this process, "
            "so the ranking is complete")


__all__ = ["MAIN_KEYS", "PRELOAD", "SERVER_START", "WorkerPool", "alone_note", "failed_note",
           "failure", "mp_context", "start_problem"]
