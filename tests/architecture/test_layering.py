"""The package's layering, read from the source with ``ast``: every
top-level module and folder of the package has a stage, a lower stage never
imports a higher one (not even lazily, inside a function), the machine
files' loader and the kernel input import no model code, and no import
cycle exists, between modules or between folders, lazy imports included
(MODEL.md, Conventions)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "warpspeed"

#: Stage of every top-level module and folder of the package (``__init__``:
#: the package's own ``__init__.py``, the public API): lower never imports
#: higher. The model's stages come first; the front ends (pystencils, the
#: measurement harness, the validation, the web page, the command line) sit
#: above them, so no stage of the model imports a front end. The harness sits
#: below the pystencils hook, which times its best configurations with it
#: (``wps.create_kernel(..., measure=K)``).
RANK = {"errors": 0, "fpclasses": 0, "closed_pipe": 0, "tomlfile": 0, "family": 0, "machine": 0,
        "machine_format": 0,
        "input": 1, "volumes": 2, "timing": 3, "model": 4, "search": 5, "reports": 5,
        "__init__": 6, "measure": 6, "pystencils": 7, "validation": 8, "cli_calibrate": 9,
        "cli_stencils": 9, "cli_tune": 9, "web": 9, "cli": 10}
#: Lazy imports known to close a cycle, each with its reason; the test fails
#: once an entry is no longer there, so the list only shrinks.

def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The warpspeed modules an import statement names."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("warpspeed")]
    if node.level:
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base) + (f".{node.module}" if node.module else "")
    else:
        target = node.module or ""
    if not target.startswith("warpspeed"):
        return []
    return [f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target
            for a in node.names]


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@functools.cache
def imports(module: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(run-time module-level, TYPE_CHECKING, every run-time import: module
    level and lazy, inside functions, but not under TYPE_CHECKING)."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    pkg = path.name == "__init__.py"
    runtime, typing, every = set(), set(), set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                every.update(_targets(module, pkg, child))
            elif not _is_type_checking(child):  # type: ignore[arg-type]
                walk(child)

    walk(tree)
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            runtime.update(_targets(module, pkg, stmt))
        elif _is_type_checking(stmt):
            for inner in stmt.body:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    typing.update(_targets(module, pkg, inner))
    return frozenset(runtime), frozenset(typing), frozenset(every)


def _stage(module: str) -> str:
    """The top-level module or folder of ``module`` (``__init__`` for the package)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_the_scanner_sees_known_imports() -> None:
    """Independent truth: model.py imports the machine loader and the volume
    stage at module level (visible in its source), cli.py imports the calibrate
    front end lazily."""
    runtime, _, _ = imports("warpspeed.model")
    assert {"warpspeed.machine", "warpspeed.volumes.levels"} <= runtime
    runtime, _, every = imports("warpspeed.cli")
    assert "warpspeed.cli_calibrate" in every - runtime


def test_every_module_and_folder_of_the_package_has_a_stage() -> None:
    unranked = sorted({_stage(m) for m in MODULES} - set(RANK))
    assert not unranked, f"give {unranked} a stage in RANK (MODEL.md, Conventions)"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_lower_stage_never_imports_a_higher_one(module: str) -> None:
    _, typing, every = imports(module)
    own = RANK[_stage(module)]
    higher = sorted(t for t in every | typing if RANK[_stage(t)] > own)
    assert not higher, f"{module} (stage {own}) imports {higher}"


@pytest.mark.parametrize("module", sorted(
    m for m in MODULES
    if m in ("warpspeed.machine", "warpspeed.machine_format") or _stage(m) == "input"))
def test_machine_files_and_kernel_input_import_no_model_code(module: str) -> None:
    runtime, typing, every = imports(module)
    allowed = {"errors", "fpclasses", "tomlfile", "family", "machine", "machine_format",
               "input"}
    bad = sorted(t for t in runtime | typing | every if _stage(t) not in allowed)
    assert not bad, f"{module} imports {bad}: machine.py and input/ stay free of model code"


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle a depth-first walk meets (a back edge closes one)."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    return cycles


def _import_graph() -> dict[str, set[str]]:
    """Every module's run-time imports of other modules, lazy ones included."""
    return {m: {t for t in imports(m)[2] if t in MODULES and t != m} for m in MODULES}


def test_no_import_cycle_between_modules_lazy_imports_included() -> None:
    cycles = find_cycles(_import_graph())
    assert not cycles, f"import cycles: {cycles}"


def test_no_import_cycle_between_folders() -> None:
    """Folders (and top-level modules) as nodes: a cycle between folders of
    one stage (say search and reports) is one too."""
    graph: dict[str, set[str]] = {s: set() for s in RANK}
    for m, targets in _import_graph().items():
        graph[_stage(m)] |= {_stage(t) for t in targets} - {_stage(m)}
    cycles = find_cycles(graph)
    assert not cycles, f"import cycles between folders: {cycles}"


#: Folders (and top-level modules) whose imports form no cycle at all, counting
#: the lazy imports inside functions and those under TYPE_CHECKING too: a module
#: there can be read, and moved, from the bottom up.
ACYCLIC = {"input", "pystencils", "web", "measure", "cli", "cli_calibrate"}


def every_import_graph(areas: set[str]) -> dict[str, set[str]]:
    """Every import (module-level, TYPE_CHECKING, lazy) between the modules of ``areas``."""
    inside = {m for m in MODULES if _stage(m) in areas}
    return {m: {t for t in set().union(*imports(m)) if t in inside and t != m} for m in inside}


def test_no_import_cycle_at_all_in_the_input_and_the_front_ends() -> None:
    graph = every_import_graph(ACYCLIC)
    assert {"warpspeed.input.kernel", "warpspeed.web.state", "warpspeed.cli"} <= graph.keys()
    assert not find_cycles(graph), f"import cycles: {find_cycles(graph)}"


def test_the_every_import_graph_holds_lazy_and_type_checking_imports() -> None:
    """Independent truth, read in the sources: web/__init__.py imports the
    app inside serve(), and the input stage's kernel imports bounds at the top."""
    graph = every_import_graph(ACYCLIC)
    assert "warpspeed.web.app" in graph["warpspeed.web"]
    assert "warpspeed.input.bounds" in graph["warpspeed.input.kernel"]
    assert "warpspeed.cli_calibrate" in graph["warpspeed.cli"]


def test_a_cycle_is_detected_when_present() -> None:
    """The cycle search on hand-made graphs with a known answer."""
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert find_cycles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []
