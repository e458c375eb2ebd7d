"""Command-line entry points that stop quietly when the reader of their
output goes away (``warpspeed rank ... --csv | head -3``), as Unix tools
do: no traceback, exit code 1 (Python's own on a broken pipe).

Python ignores SIGPIPE, so a write into a closed pipe raises
``BrokenPipeError``. The Python documentation's recipe (``signal`` module,
"Note on SIGPIPE") is followed: standard output is pointed at ``/dev/null``,
so that the interpreter's final flush of what is still buffered cannot
fail again, and the command exits.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

#: The exit code after the output pipe closed.
CLOSED_PIPE_EXIT = 1


def _silence_stdout() -> None:
    """Point standard output's file descriptor at ``/dev/null`` (not when
    it has none, e.g. a ``StringIO`` put there by a caller)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def quiet_on_closed_pipe[**P](main: Callable[P, int]) -> Callable[P, int]:
    """``main``, whose output is flushed before it returns, and that
    returns :data:`CLOSED_PIPE_EXIT` without a traceback when its output
    pipe is closed (module docstring)."""

    @functools.wraps(main)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            code = main(*args, **kwargs)
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
            return CLOSED_PIPE_EXIT
        return code

    return wrapper


__all__ = ["CLOSED_PIPE_EXIT", "quiet_on_closed_pipe"]
