"""The index from each module of the package to its tests
(``tests/data/module_tests.toml``): the test files that import the module,
or a name it defines through the package that re-exports it (``ws.predict``
is ``warpspeed.model``'s), found by reading their imports; and, for a module
no test imports (reached through the command line, the pystencils front end
or another module), the tests named by hand in :data:`THROUGH`.

``python -m tests.module_index`` rewrites the file (after adding a module
or its tests); ``tests/test_maps.py`` checks that every module has tests
there and that they exist.
"""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / "tests" / "data" / "module_tests.toml"
#: Modules no test imports, with the tests that exercise them and how.
THROUGH: dict[str, tuple[str, ...]] = {
    "warpspeed/cli_calibrate.py": ("test_calibrate.py", "test_machines_new.py"),  # the CLI
    "warpspeed/cli_stencils.py": ("test_cli.py", "test_tune.py"),  # the CLI's rank and tune
    "warpspeed/cli_tune.py": ("test_tune.py",),  # warpspeed tune
    "warpspeed/pystencils/measured.py": ("test_tune.py",),  # create_kernel(..., measure=K)
    "warpspeed/pystencils/register_estimate.py": ("test_registers.py",),  # regs.estimate_...
    "warpspeed/closed_pipe.py": ("test_cli.py",),  # output into a closed pipe
    "warpspeed/fpclasses.py": ("test_kernel.py", "test_timing.py"),  # fp_instructions
    "warpspeed/input/bounds.py": ("test_kernel.py", "test_simulation_constructs.py"),
    "warpspeed/measure/__main__.py": ("test_measure.py",),
    "warpspeed/measure/cli.py": ("test_measure.py",),
    "warpspeed/measure/counters.py": ("test_measure.py",),
    "warpspeed/measure/program.py": ("test_measure.py",),
    "warpspeed/measure/run.py": ("test_measure.py",),
    "warpspeed/pystencils/accesses.py": ("test_frontend_pystencils.py",),
    "warpspeed/pystencils/fpcount.py": ("test_frontend_pystencils.py",),
    "warpspeed/pystencils/indices.py": ("test_frontend_pystencils.py",
                                        "test_pystencils_constructs.py"),
    "warpspeed/pystencils/launch.py": ("test_frontend_pystencils.py",),
    "warpspeed/pystencils/layouts.py": ("test_frontend_pystencils.py",),
    "warpspeed/pystencils/params.py": ("test_frontend_pystencils.py", "test_extract_options.py"),
    "warpspeed/pystencils/poly.py": ("test_pystencils_constructs.py",),
    "warpspeed/pystencils/reductions.py": ("test_pystencils_constructs.py",
                                           "test_simulation_constructs.py"),
    "warpspeed/pystencils/variants.py": ("test_folding.py",),
    "warpspeed/pystencils/walker.py": ("test_frontend_pystencils.py",),
    "warpspeed/pystencils/wraps.py": ("test_periodicity.py",),
    "warpspeed/reports/breakdown.py": ("test_plot.py",),
    "warpspeed/reports/words.py": ("test_amd.py", "test_cli.py"),  # CU and wavefront
    "warpspeed/search/evaluate.py": ("test_rank.py",),
    "warpspeed/search/merge_note.py": ("test_repeated_loads.py",),
    "warpspeed/search/variants.py": ("test_rank.py",),
    "warpspeed/timing/atomics.py": ("test_pystencils_constructs.py",
                                    "test_simulation_constructs.py"),
    "warpspeed/timing/latency_model.py": ("test_timing.py",),
    "warpspeed/tomlfile.py": ("test_format_version.py", "test_machine.py"),
    "warpspeed/validation/evidence.py": ("test_advice.py",),
}


def modules() -> dict[str, str]:
    """Dotted name -> path (relative to the repository) of every module, no
    package ``__init__``."""
    out = {}
    for p in sorted((ROOT / "warpspeed").rglob("*.py")):
        if p.name != "__init__.py":
            out[".".join(p.relative_to(ROOT).with_suffix("").parts)] = (
                p.relative_to(ROOT).as_posix())
    return out


def reached(test: Path, names: dict[str, str]) -> set[str]:
    """The modules ``test`` imports, or a name of through a package."""
    got: set[str] = set()

    def owner(package: str, attr: str) -> None:
        if f"{package}.{attr}" in names:
            got.add(f"{package}.{attr}")
            return
        try:
            module = getattr(getattr(importlib.import_module(package), attr, None),
                             "__module__", None)
        except ImportError:
            return
        if module in names:
            got.add(module)

    for node in ast.walk(ast.parse(test.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("warpspeed"):
            got.add(node.module or "")
            for alias in node.names:
                owner(node.module or "", alias.name)
        elif isinstance(node, ast.Import):
            got.update(a.name for a in node.names if a.name.startswith("warpspeed"))
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in ("ws", "wps")):
            owner("warpspeed" if node.value.id == "ws" else "warpspeed.pystencils", node.attr)
    return got & set(names)


def index() -> dict[str, list[str]]:
    names = modules()
    tests = sorted((ROOT / "tests").glob("test_*.py"))
    by_test = {t.name: reached(t, names) for t in tests}
    out = {}
    for dotted, path in names.items():
        found = sorted(t for t, got in by_test.items() if dotted in got)
        out[path] = [f"tests/{t}" for t in (found or list(THROUGH.get(path, ())))]
    return out


def text() -> str:
    lines = ["# The tests of each module (tests/module_index.py writes this file; "
             "python -m tests.module_index)."]
    lines += [f'"{path}" = {json.dumps(tests)}' for path, tests in index().items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    INDEX.write_text(text())
    sys.exit(0)
