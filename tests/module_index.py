"""The index from each module of the package to its tests
(``tests/data/module_tests.toml``): the test files (``tests/<folder>/test_*.py``,
one folder per stage of the package and per part around it) that import the module,
or a name it defines through the package that re-exports it (``ws.predict``
is ``warpspeed.model``'s), found by reading their imports; and, for a module
no test imports (reached through the command line, the pystencils front end
or another module), the tests named by hand in :data:`THROUGH`.

``python -m tests.module_index`` rewrites the file (after adding a module
or its tests); ``tests/architecture/test_maps.py`` checks that every module has tests
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
    # the CLI
    "warpspeed/cli_calibrate.py": ("validation/test_calibrate.py",
                                   "machines/test_machines_new.py"),
    # the CLI's rank and tune
    "warpspeed/cli_stencils.py": ("cli/test_cli.py",
                                  "measure/test_tune.py"),
    "warpspeed/cli_tune.py": ("measure/test_tune.py",),  # warpspeed tune
    "warpspeed/pystencils/measured.py": ("measure/test_tune.py",),  # create_kernel(..., measure=K)
    # regs.estimate_...
    "warpspeed/pystencils/register_estimate.py": ("pystencils/test_registers.py",),
    "warpspeed/closed_pipe.py": ("cli/test_cli.py",),  # output into a closed pipe
    "warpspeed/fpclasses.py": ("input/test_kernel.py", "timing/test_timing.py"),  # fp_instructions
    "warpspeed/input/bounds.py": ("input/test_kernel.py",
                                  "pystencils/test_simulation_constructs.py"),
    "warpspeed/measure/__main__.py": ("measure/test_measure.py",),
    "warpspeed/measure/cli.py": ("measure/test_measure.py",),
    "warpspeed/measure/counters.py": ("measure/test_measure.py",),
    "warpspeed/measure/program.py": ("measure/test_measure.py",),
    "warpspeed/measure/run.py": ("measure/test_measure.py",),
    "warpspeed/pystencils/accesses.py": ("pystencils/test_frontend_pystencils.py",),
    # Walker's loads and stores: forwarded loads, struct members, refused indices
    "warpspeed/pystencils/field_memory.py": ("pystencils/test_frontend_pystencils.py",
                                             "pystencils/test_pystencils_constructs.py"),
    "warpspeed/pystencils/fpcount.py": ("pystencils/test_frontend_pystencils.py",),
    # extract's phases 2-6: shapes, base offsets, index lists
    "warpspeed/pystencils/frame.py": ("pystencils/test_frontend_pystencils.py",
                                      "pystencils/test_extract_options.py",
                                      "pystencils/test_gathers.py"),
    "warpspeed/pystencils/indices.py": ("pystencils/test_frontend_pystencils.py",
                                        "pystencils/test_pystencils_constructs.py"),
    "warpspeed/pystencils/launch.py": ("pystencils/test_frontend_pystencils.py",),
    "warpspeed/pystencils/layouts.py": ("pystencils/test_frontend_pystencils.py",),
    "warpspeed/pystencils/params.py": ("pystencils/test_frontend_pystencils.py",
                                       "pystencils/test_extract_options.py"),
    "warpspeed/pystencils/poly.py": ("pystencils/test_pystencils_constructs.py",),
    "warpspeed/pystencils/reductions.py": ("pystencils/test_pystencils_constructs.py",
                                           "pystencils/test_simulation_constructs.py"),
    "warpspeed/pystencils/variants.py": ("pystencils/test_folding.py",),
    "warpspeed/pystencils/walker.py": ("pystencils/test_frontend_pystencils.py",),
    "warpspeed/pystencils/wraps.py": ("pystencils/test_periodicity.py",),
    "warpspeed/reports/breakdown.py": ("reports/test_plot.py",),
    "warpspeed/reports/words.py": ("machines/test_amd.py", "cli/test_cli.py"),  # CU and wavefront
    "warpspeed/search/evaluate.py": ("search/test_rank.py",),
    "warpspeed/search/merge_note.py": ("volumes/test_repeated_loads.py",),
    "warpspeed/search/variants.py": ("search/test_rank.py",),
    "warpspeed/timing/atomics.py": ("pystencils/test_pystencils_constructs.py",
                                    "pystencils/test_simulation_constructs.py"),
    "warpspeed/timing/latency_model.py": ("timing/test_timing.py",),
    "warpspeed/tomlfile.py": ("machines/test_format_version.py", "machines/test_machine.py"),
    "warpspeed/validation/evidence.py": ("reports/test_advice.py",),
    # kc.prepare, kc.median_ratio, ... (re-exported by kernel_calibrate)
    "warpspeed/validation/median_rule.py": ("validation/test_kernel_calibrate.py",),
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
    tests = sorted((ROOT / "tests").glob("*/test_*.py"))
    by_test = {t.relative_to(ROOT / "tests").as_posix(): reached(t, names) for t in tests}
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
