"""The package's layering, read from the source with ``ast``: a lower stage
never imports a higher one, the machine files' loader and the kernel input
import no model code, and no module-level import cycle exists."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "warpspeed"

#: Stage of each ranked top-level module or package: lower never imports higher.
RANK = {"errors": 0, "fpclasses": 0, "machine": 0, "input": 1, "volumes": 2, "timing": 3,
        "model": 4, "search": 5, "reports": 5, "validation": 6}
#: Outer layers (front ends) no ranked module may import, not even lazily.
FRONT_ENDS = {"cli", "cli_calibrate", "web", "pystencils"}


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


def imports(module: str) -> tuple[set[str], set[str], set[str]]:
    """(run-time module-level, TYPE_CHECKING, all including lazy) imports."""
    path = MODULES[module]
    tree = ast.parse(path.read_text())
    pkg = path.name == "__init__.py"
    runtime, typing, every = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            every.update(_targets(module, pkg, node))
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            runtime.update(_targets(module, pkg, stmt))
        elif _is_type_checking(stmt):
            for inner in stmt.body:
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    typing.update(_targets(module, pkg, inner))
    return runtime, typing, every


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_the_scanner_sees_known_imports() -> None:
    """Independent truth: model.py imports the machine loader and the volume
    stage at module level (visible in its source), cli.py imports the calibrate
    front end lazily."""
    runtime, _, _ = imports("warpspeed.model")
    assert {"warpspeed.machine", "warpspeed.volumes.levels"} <= runtime
    runtime, _, every = imports("warpspeed.cli")
    assert "warpspeed.cli_calibrate" in every - runtime


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _stage(m) in RANK))
def test_a_lower_stage_never_imports_a_higher_one(module: str) -> None:
    _, typing, every = imports(module)
    own = RANK[_stage(module)]
    higher = sorted(t for t in every | typing
                    if _stage(t) in RANK and RANK[_stage(t)] > own)
    assert not higher, f"{module} (stage {own}) imports {higher}"
    front = sorted(t for t in every if _stage(t) in FRONT_ENDS)
    assert not front, f"{module} imports the front ends {front}"


@pytest.mark.parametrize("module", sorted(
    m for m in MODULES if m == "warpspeed.machine" or _stage(m) == "input"))
def test_machine_files_and_kernel_input_import_no_model_code(module: str) -> None:
    runtime, typing, every = imports(module)
    allowed = {"errors", "fpclasses", "machine", "input"}
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


def test_no_module_level_import_cycle() -> None:
    graph = {m: {t for t in imports(m)[0] if t in MODULES and t != m} for m in MODULES}
    assert not find_cycles(graph), f"import cycles: {find_cycles(graph)}"


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
