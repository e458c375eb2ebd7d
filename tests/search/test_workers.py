"""Worker processes of the ranking and of the pystencils hook (MODEL.md §8,
ranking): started safely from a process with other threads (Jupyter,
Panel, dask run the caller beside their own threads), where forking the
caller may deadlock its children; the ranking is the one made inline."""

import contextlib
import multiprocessing
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Iterator

import pystencils as ps
import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from stencils import star3d_by_hand
from tests.slow import fast_first
from warpspeed.search import workers
from warpspeed.search.executor import Runner
from warpspeed.search.workers import WorkerPool, alone_note, failed_note, mp_context


@contextlib.contextmanager
def another_thread() -> Iterator[None]:
    """A second thread runs in this process until the block ends."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="another", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def forks(caught: list[warnings.WarningMessage]) -> list[str]:
    """Python's warnings that a process with threads forked. They are
    recorded, not raised: os.fork clears the error a filter makes of them."""
    return [str(w.message) for w in caught
            if issubclass(w.category, DeprecationWarning) and "fork()" in str(w.message)]


@pytest.fixture
def workers_at_once(monkeypatch):
    """Pools whose workers are up before any work: a pool starts them only
    when the work pays, and here the work must go to them."""
    made = WorkerPool.__init__

    def ready(self, *args, **kwargs):
        made(self, *args, **kwargs)
        self.start()
        self.ready.wait()

    monkeypatch.setattr(WorkerPool, "__init__", ready)


def jacobi() -> tuple[list[ps.Assignment], ps.CreateKernelConfig]:
    src, dst = ps.fields("src, dst: double[34, 34, 34]")
    update = ps.Assignment(dst[0, 0, 0], (src[1, 0, 0] + src[-1, 0, 0] + src[0, 1, 0]
                                          + src[0, -1, 0] + src[0, 0, 1] + src[0, 0, -1]) / 6)
    return [update], ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)


def test_rank_beside_another_thread_forks_nothing_and_ranks_as_inline(workers_at_once):
    def kernel(fold):
        return star3d_by_hand.kernel(radius=1, shape=(128, 64, 64), fold=fold)

    with another_thread(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parallel = ws.rank(kernel, "A100", jobs=2)
    assert not forks(caught)
    inline = ws.rank(kernel, "A100", jobs=1)
    assert parallel.predictions == inline.predictions and len(inline.predictions) > 100


def test_hook_beside_another_thread_forks_nothing_and_ranks_as_inline(workers_at_once):
    assignments, config = jacobi()
    folds = [(1, 1, 1), (1, 2, 1), (1, 1, 2)]
    with another_thread(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel, parallel = wps.create_kernel(assignments, config, machine="V100", threads=256,
                                             folds=folds, jobs=2)
    assert not forks(caught)
    inline_kernel, inline = wps.create_kernel(assignments, config, machine="V100",
                                              threads=256, folds=folds, jobs=1)
    assert parallel == inline and {p.fold for p in inline} == set(folds)
    assert kernel.get_c_code() == inline_kernel.get_c_code()


class Unpicklable(list):
    """Assignments that pickle cannot carry to a worker."""

    def __reduce__(self):
        raise TypeError("not picklable")


def test_hook_makes_variants_it_cannot_send_to_a_worker_itself(workers_at_once):
    assignments, config = jacobi()
    folds = [(1, 1, 1), (1, 1, 2)]
    _, here = wps.create_kernel(Unpicklable(assignments), config, machine="V100", threads=256,
                                folds=folds, jobs=2)
    _, inline = wps.create_kernel(assignments, config, machine="V100", threads=256,
                                  folds=folds, jobs=1)
    assert here == inline


def test_workers_are_not_children_of_the_caller():
    """Forked by the fork server, not by this (perhaps threaded) process."""
    if mp_context().get_start_method() != "forkserver":
        pytest.skip("no fork server on this platform: workers are spawned")
    with WorkerPool(2) as pool:
        parent = pool.submit(os.getppid).result()
    assert parent != os.getpid()


def _dies_in_a_worker(value: int) -> list[int]:
    """``[value]``, in the caller; a worker process that runs it dies."""
    if multiprocessing.parent_process() is not None:
        os._exit(1)
    return [value]


def test_a_dead_worker_costs_time_not_results():
    """A worker that dies (killed, out of memory): its work is done in the
    caller's process, the results are complete, and a note says why."""
    with WorkerPool(2) as pool:
        pool.start()
        assert pool.ready.wait(timeout=120) and pool.failed is None
        runner = Runner(pool, 2, None)
        results = runner.map(_dies_in_a_worker, [(i,) for i in range(6)], [1] * 6)
    assert results == [[i] for i in range(6)] and runner.done == 6
    assert len(runner.notes) == 1 and "BrokenProcessPool" in runner.notes[0]
    assert "\n" not in runner.notes[0] and "done again in this process" in runner.notes[0]


def test_workers_that_cannot_start_leave_the_work_to_the_caller(monkeypatch):
    """A pool whose workers fail to start (here: no process can be made)
    gives no work to them; the caller does it all and says why."""
    def refuse(self):
        raise OSError("no more processes")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    with WorkerPool(2) as pool:
        pool.start()
        assert pool.ready.wait(timeout=60)
        runner = Runner(pool, 2, None)
        results = runner.map(_dies_in_a_worker, [(i,) for i in range(4)], [1] * 4)
    assert results == [[i] for i in range(4)]
    assert pool.failed == "OSError: no more processes"
    assert runner.notes == [alone_note("they could not start (OSError: no more processes)")]


def test_a_daemonic_process_ranks_alone_with_a_note(monkeypatch):
    """A daemonic process (a worker of the caller's own multiprocessing
    pool) may not start processes: the ranking is the inline one, and its
    notes say it ran alone and why."""
    def kernel(fold):
        return star3d_by_hand.kernel(radius=1, shape=(64, 64, 64), fold=fold)

    inline = ws.rank(kernel, "A100", threads=[256], jobs=1)
    monkeypatch.setattr(multiprocessing.current_process(), "daemon", True)
    assert workers.start_problem() is not None
    alone = ws.rank(kernel, "A100", threads=[256], jobs=2)
    assert alone.predictions == inline.predictions
    assert alone.worker_notes == (alone_note(workers.start_problem()),)
    assert alone.worker_notes[0] in alone.notes


class OnlyHere(list):
    """Assignments that pickle, but do not unpickle in a worker process (as
    an object of a class defined in the caller's ``__main__``)."""

    def __reduce__(self):
        return (_only_here, (list(self),))


def _only_here(items):
    if multiprocessing.parent_process() is not None:
        raise AttributeError("Can't get attribute 'OnlyHere' on <module '__main__'>")
    return OnlyHere(items)


def test_a_fold_a_worker_cannot_receive_is_made_by_the_caller(workers_at_once):
    assignments, config = jacobi()
    folds = [(1, 1, 1), (1, 1, 2), (1, 2, 1)]
    ranked = wps.create_kernel(OnlyHere(assignments), config, machine="V100", threads=256,
                               folds=folds, jobs=2)
    _, inline = wps.create_kernel(assignments, config, machine="V100", threads=256,
                                  folds=folds, jobs=1)
    assert list(ranked.ranking) == inline and not ranked.skipped
    assert [n for n in ranked.notes if "worker" in n] == [
        failed_note("AttributeError: Can't get attribute 'OnlyHere' on <module '__main__'>")]


#: A user's script as most are written: no ``if __name__ == "__main__":``
#: guard, output at module level, the hook called at the top level. Its
#: pools wait for their workers before any work (as ``workers_at_once``),
#: so that workers make and rank.
PLAIN_SCRIPT = """
import pystencils as ps
import warpspeed.pystencils as wps
from warpspeed.search import workers
made = workers.WorkerPool.__init__
def ready(self, *args, **kwargs):
    made(self, *args, **kwargs)
    self.start()
    self.ready.wait()
workers.WorkerPool.__init__ = ready
print("module level", flush=True)
src, dst = ps.fields("src, dst: double[66, 66, 66]")
update = ps.Assignment(dst[0, 0, 0], (src[1, 0, 0] + src[-1, 0, 0] + src[0, 1, 0]
                                      + src[0, -1, 0] + src[0, 0, 1] + src[0, 0, -1]) / 6)
config = ps.CreateKernelConfig(target=ps.Target.CUDA, jit=ps.no_jit)
folds = [(1, 1, 1), (1, 2, 1)]
ranked = wps.create_kernel([update], config, machine="A100", threads=256, folds=folds, jobs=2)
inline = wps.create_kernel([update], config, machine="A100", threads=256, folds=folds, jobs=1)
print("workers up", workers._server_up.is_set(), flush=True)
print("same as inline", list(ranked.ranking) == list(inline.ranking), flush=True)
print("worker notes", [n for n in ranked.notes if "worker" in n], flush=True)
"""


def _run_as(how: str, tmp_path) -> str:
    """:data:`PLAIN_SCRIPT` run as a script, with ``python -c``, by IPython
    or as a notebook's cell: its standard output."""
    script = tmp_path / "plain.py"
    script.write_text(PLAIN_SCRIPT)
    if how == "notebook":
        import nbclient
        import nbformat

        book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLAIN_SCRIPT)])
        nbclient.NotebookClient(book, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
        return "".join(o.get("text", "") for o in book.cells[0].outputs)
    args = {"script": [sys.executable, str(script)], "-c": [sys.executable, "-c", PLAIN_SCRIPT],
            "ipython": [sys.executable, "-m", "IPython", "--no-banner", str(script)]}[how]
    res = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    return res.stdout


@pytest.mark.parametrize("how", fast_first(["script", "-c", "ipython", "notebook"]))
def test_a_plain_script_runs_once_with_workers(tmp_path, how):
    """Workers never import the caller's main script: an unguarded script
    (or ``python -c``, IPython, a notebook) prints its module-level output
    once, its workers start and rank, and the ranking is the inline one."""
    lines = _run_as(how, tmp_path).splitlines()
    assert lines.count("module level") == 1, lines
    assert lines[-3:] == ["workers up True", "same as inline True", "worker notes []"], lines
