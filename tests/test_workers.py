"""Worker processes of the ranking and of the pystencils hook (MODEL.md §8,
ranking): started safely from a process with other threads (Jupyter,
Panel, dask run the caller beside their own threads), where forking the
caller may deadlock its children; the ranking is the one made inline."""

import contextlib
import os
import threading
import warnings
from collections.abc import Iterator

import pystencils as ps
import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from stencils import star3d_by_hand
from warpspeed.search import workers
from warpspeed.search.workers import WorkerPool, mp_context, worker_errors


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


def test_a_dead_worker_is_one_line_that_names_the_main_guard():
    """Workers import the main script (as with any pool that does not
    fork): a script that ranks at its top level, unguarded, kills them."""
    with WorkerPool(2) as pool, pytest.raises(ws.WorkerError) as raised, worker_errors(2):
        pool.submit(os._exit, 1).result()
    message = str(raised.value)
    assert "\n" not in message and "if __name__ == \"__main__\":" in message


def test_a_pool_starts_its_workers_only_when_the_work_pays(monkeypatch):
    """The fork server's start costs about a second: a pool whose caller did
    little work alone, with little left, starts nothing."""
    monkeypatch.setattr(workers, "_alone", [0.0])
    monkeypatch.setattr(workers, "_server_up", threading.Event())
    with WorkerPool(2) as pool:
        pool.worked_alone(0.1, left=3)  # 0.4 s in all
        assert not pool._started
        pool.worked_alone(0.1, left=30)  # 0.2 s done, 3 s left
        assert pool._started
        assert pool.ready.wait(timeout=120)
