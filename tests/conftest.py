"""Test configuration: keep pystencils/lbmpy disk caches in a fresh temporary
directory so that runs are reproducible and never read a stale cache.

pystencils 2.1 reads ``PYSTENCILS_CACHE_DIR`` once, when ``pystencils.cache``
is imported (lbmpy's derivation cache is that joblib cache); without it the
cache goes to ``appdirs.user_cache_dir("pystencils")``, i.e. under
``XDG_CACHE_HOME``, which the CPU JIT's object cache also uses. Both are set
here, before any test module imports pystencils, and overwrite values from
the environment (``setdefault`` would let a user's stale cache in); the
fresh directory is made once per run, by the process that starts it.
"""

import os
import resource
import tempfile
import time

import pytest

# Under pytest-xdist the workers share the controller's directory (they
# inherit its environment): a derivation one worker made is not made again by
# the other, as in a run in one process.
if os.environ.get("PYTEST_XDIST_WORKER") and os.environ.get("WARPSPEED_TEST_CACHE"):
    _CACHE = os.environ["WARPSPEED_TEST_CACHE"]
else:
    _CACHE = tempfile.mkdtemp(prefix="warpspeed-test-cache-")
    os.environ["WARPSPEED_TEST_CACHE"] = _CACHE
os.environ["PYSTENCILS_CACHE_DIR"] = _CACHE
os.environ["XDG_CACHE_HOME"] = _CACHE
os.environ.setdefault("MPLBACKEND", "Agg")

# nvcc is not run (warpspeed.input.compiler.nvcc_path): registers are the
# estimate, so that every test gives the same answer with or without a CUDA
# installation, and no test waits for a compiler. A test of the counts from
# nvcc is marked ``nvcc`` and gets the machine's nvcc back (it skips where
# there is none).
os.environ["WARPSPEED_NVCC"] = "none"


@pytest.fixture(autouse=True)
def _nvcc_for_marked_tests(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("nvcc") is not None:
        monkeypatch.delenv("WARPSPEED_NVCC")


# ---------------------------------------------------------------- the fast suite's budget
# A fast test (not marked slow, tests/slow.py) takes at most BUDGET_S seconds
# of CPU, its own and its child processes' (the CLI tests run commands), so
# other work on the machine does not move the figure. The summary names every
# fast test over it; WARPSPEED_TIME_BUDGET=strict makes that a failure. The
# figure travels in the test's report (its user_properties), so that under
# pytest-xdist (``-n 2``) the controller, which prints the summary, sees the
# tests its workers ran.

BUDGET_S = 5.0
_OVER: list[tuple[str, float]] = []
_KEY = "cpu_s_over_budget"


def _cpu_s() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    start = _cpu_s()
    try:
        return (yield)
    finally:
        used = _cpu_s() - start
        if used > BUDGET_S and item.get_closest_marker("slow") is None:
            item.user_properties.append((_KEY, used))


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _OVER.extend((report.nodeid, used) for key, used in report.user_properties
                     if key == _KEY)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    if not _OVER:
        return
    terminalreporter.section(f"fast tests over the {BUDGET_S:g} s CPU budget")
    for nodeid, used in sorted(_OVER, key=lambda x: -x[1]):
        terminalreporter.write_line(f"{used:6.1f} s  {nodeid}")
    terminalreporter.write_line("mark them slow (tests/slow.py) or make them faster")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if (_OVER and os.environ.get("WARPSPEED_TIME_BUDGET") == "strict" and exitstatus == 0
            and not _is_worker(session.config)):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
