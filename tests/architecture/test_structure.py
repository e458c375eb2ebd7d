"""The package's shape, read from the source with ``ast``: no function is
over 100 lines (a longer one is a pipeline whose phases want names), and the
pystencils front end's public functions take at most 8 parameters (the
options travel in one :class:`warpspeed.pystencils.ExtractOptions`)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import warpspeed.pystencils as wps

PACKAGE = Path(__file__).resolve().parents[2] / "warpspeed"
MAX_LINES = 100
MAX_PARAMETERS = 8

#: Folders split in issue 36's front-end part; the rest of the package follows
#: with the timing-model part (search/rank.py's rank, validation/calibrate.py's
#: calibrate, split on the branch issue36-models).
SPLIT = ("pystencils", "input", "web", "measure", "cli.py", "cli_calibrate.py")


def long_functions(source: str, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """``(qualified name, lines)`` of every function or method of ``source``
    longer than ``limit`` lines, decorators included, nested ones too."""
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    lines = child.end_lineno - first + 1  # type: ignore[operator]
                    if lines > limit:
                        out.append((name, lines))
                name += "."
            visit(child, name)

    visit(ast.parse(source), "")
    return out


def offenders(paths: list[Path]) -> list[str]:
    return [f"{p.relative_to(PACKAGE.parent)}::{name} ({n} lines)"
            for p in paths for name, n in long_functions(p.read_text())]


def _in_split_folders(path: Path) -> bool:
    return path.relative_to(PACKAGE).parts[0] in SPLIT


def test_the_checker_measures_functions_as_written():
    source = "\n".join([
        "def short():",
        "    return 1",
        "",
        "@decorator",
        "def long():",
        *["    x = 1"] * 4,
        "    def inner():",
        *["        y = 2"] * 6,
        "class C:",
        "    def method(self):",
        *["        z = 3"] * 5,
    ])
    # long: decorator to last line 1 + 1 + 4 + 1 + 6 = 13; inner: 7; C.method: 6
    assert long_functions(source, limit=5) == [("long", 13), ("long.inner", 7),
                                               ("C.method", 6)]
    assert long_functions(source, limit=13) == []


def test_no_function_in_the_split_folders_is_over_100_lines():
    paths = [p for p in sorted(PACKAGE.rglob("*.py")) if _in_split_folders(p)]
    assert len(paths) > 40  # the folders are there
    assert not offenders(paths)


def test_no_function_in_the_package_is_over_100_lines():
    assert not offenders(sorted(PACKAGE.rglob("*.py")))


FRONT_END = {
    "extract": wps.extract,
    "kernel_from_pystencils": wps.kernel_from_pystencils,
    "predict": wps.predict,
    "rank": wps.rank,
    "create_kernel": wps.create_kernel,
    "generate": wps.generate,
    "blocks": wps.blocks,
}


@pytest.mark.parametrize("name", sorted(FRONT_END))
def test_front_end_functions_take_at_most_8_parameters(name):
    params = inspect.signature(FRONT_END[name]).parameters
    assert len(params) <= MAX_PARAMETERS, f"{name} takes {list(params)}"


def test_front_end_functions_share_one_options_object():
    for name in ("extract", "kernel_from_pystencils", "predict", "rank", "create_kernel"):
        option = inspect.signature(FRONT_END[name]).parameters["options"]
        assert option.default is None and "ExtractOptions" in str(option.annotation)
