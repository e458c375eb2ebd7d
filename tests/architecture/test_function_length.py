"""No function of the model's pipeline is longer than 100 lines (MODEL.md,
Conventions: short functions; a long orchestration is split into named
phases that read as its table of contents). Checked with ``ast`` on the
folders and modules of the pipeline: volumes, timing, search, reports,
validation, model.py and machine.py. Lines count from ``def`` to the end of
the body, docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "warpspeed"
CHECKED = ("volumes", "timing", "search", "reports", "validation", "model.py", "machine.py")
LIMIT = 100


def long_functions(source: str, limit: int = LIMIT) -> list[tuple[str, int]]:
    """(name, lines) of every function or method of ``source`` longer than ``limit``."""
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno is not None and n.end_lineno - n.lineno + 1 > limit]


def _files() -> list[str]:
    out = []
    for name in CHECKED:
        path = PACKAGE / name
        out += [str(p.relative_to(PACKAGE)) for p in ([path] if path.is_file()
                                                      else sorted(path.rglob("*.py")))]
    return out


def test_the_count_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    assert long_functions(f"def f():\n{body}\n") == [("f", LIMIT + 1)]
    method = body.replace("    x", "        x")
    assert long_functions(f"class C:\n    def g(self):\n{method}\n") == [("g", LIMIT + 1)]
    assert long_functions("def f():\n    return 1\n") == []


@pytest.mark.parametrize("path", _files())
def test_no_function_is_longer_than_100_lines(path: str) -> None:
    found = long_functions((PACKAGE / path).read_text())
    assert not found, f"{path}: {found} (split into named phases)"
