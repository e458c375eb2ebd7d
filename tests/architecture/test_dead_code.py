"""No dead code in the package (vulture): nothing at 80 % confidence, and at
60 % (unused functions, classes, properties, attributes and variables) only
the kinds named below, each with why vulture cannot see its use. Uses count
wherever the project makes them: the package, the shipped stencils, the
fits/ scripts and the tests."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: (kind, module): why its names are used although no code reads them.
NAMED = {
    ("variable", "warpspeed/timing/latency_parameters.py"): "fields of the [latency] table, "
                                                            "read from a machine file by name",
    ("attribute", "warpspeed/web/app.py"): "properties of Panel widgets, which Panel reads",
    ("attribute", "warpspeed/pystencils/fold.py"): "options of a pystencils config, which "
                                                   "pystencils reads",
    ("attribute", "warpspeed/volumes/sampling.py"): "numpy's flags.writeable, set to freeze "
                                                    "a shared array",
    ("variable", "warpspeed/measure/schema.py"): "fields of the CSV record, written and read "
                                                 "by column name",
    ("variable", "warpspeed/measure/counters.py"): "fields of the counters record, written to "
                                                   "the CSV by column name",
    ("attribute", "warpspeed/search/workers.py"): "the Popen's finalizer, which "
                                                  "multiprocessing reads when the process ends",
    ("method", "warpspeed/search/workers.py"): "the Process's _Popen hook, which "
                                               "multiprocessing calls to start it",
    ("function", "warpspeed/__init__.py"): "the module's __getattr__ and __dir__ (PEP 562), "
                                           "which Python calls to import a name on first use",
    ("function", "warpspeed/measure/__init__.py"): "the module's __getattr__ and __dir__ (PEP "
                                                   "562), which Python calls on first use",
}


def unused(paths: list[Path]) -> list[tuple[str, Path, str, int, int]]:
    """Vulture's findings over ``paths`` at 60 % confidence or more: (kind,
    file, name, line, confidence)."""
    vulture = pytest.importorskip("vulture", reason="pip install -e '.[dev]' installs vulture")
    v = vulture.Vulture()
    v.scavenge([str(p) for p in paths])
    return [(item.typ, Path(item.filename).resolve(), item.name, item.first_lineno,
             item.confidence) for item in v.get_unused_code(min_confidence=60)]


def test_the_scan_finds_a_function_nobody_calls(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("import os\n\n\ndef used():\n    return 1\n\n\n"
                                   "def never_called():\n    return used()\n")
    assert [(f[0], f[2], f[4]) for f in unused([tmp_path])] == [
        ("import", "os", 90), ("function", "never_called", 60)]


def test_no_dead_code_in_the_package() -> None:
    package = [ROOT / "warpspeed", ROOT / "stencils"]
    found = [(typ, path.relative_to(ROOT).as_posix(), name, line, confidence)
             for typ, path, name, line, confidence in unused([*package, ROOT / "fits",
                                                              ROOT / "tests"])
             if any(path.is_relative_to(p) for p in package)]
    assert not [f for f in found if f[4] >= 80], "vulture at 80 % confidence"
    dead = [f"{path}:{line} unused {typ} {name}" for typ, path, name, line, _ in found
            if (typ, path) not in NAMED]
    assert not dead, f"dead code (delete it, or name the kind in NAMED with why): {dead}"
