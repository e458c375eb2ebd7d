"""The maps of the package are checked like its physics (MODEL.md,
Conventions): every module is named in its folder's ``__init__`` list and
in MODEL.md's code map, and the code map, the folders' docstrings and
``tests/architecture/test_layering.py`` give each folder one stage number."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.architecture.test_layering import RANK

PACKAGE = Path(__file__).resolve().parents[2] / "warpspeed"
MODEL = PACKAGE / "MODEL.md"
FOLDERS = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))


def modules(folder: str) -> list[str]:
    return sorted(p.stem for p in (PACKAGE / folder).glob("*.py") if p.stem != "__init__")


def named(name: str, text: str) -> bool:
    """Whether ``text`` names module ``name`` as code: ````name````,
    ``:mod:`.name``` or ``:mod:`~warpspeed.folder.name```."""
    return re.search(rf"(``|[`.]){re.escape(name)}(``|`)", text) is not None


def code_map() -> dict[str, tuple[int, str]]:
    """MODEL.md's code map: each entry's stage and text, by folder (``input/``)
    or top-level module (``machine.py``), an entry naming several modules
    once per module. Entries are lines ``N name[, name...]  text``, continued
    by lines without a stage number."""
    text = MODEL.read_text()
    block = text[text.index("Code, one folder of the package per stage"):]
    block = block[block.index("```") + 3:]
    block = block[:block.index("```")]
    entries: dict[str, tuple[int, str]] = {}
    current: list[str] = []
    for line in block.splitlines():
        m = re.match(r"\s*(\d+)\s+((?:[\w./]+(?:, )?)+)\s(.*)", line)
        if m:
            current = [n.strip() for n in m.group(2).split(",") if n.strip()]
            for n in current:
                entries[n] = (int(m.group(1)), m.group(3))
        elif line.strip():
            for n in current:
                entries[n] = (entries[n][0], entries[n][1] + " " + line.strip())
    return entries


def test_the_code_map_parser_reads_entries_and_continuations() -> None:
    """Independent truth: two entries of the map, as written in MODEL.md."""
    entries = code_map()
    assert entries["input/"][0] == RANK["input"] and "kernel" in entries["input/"][1]
    assert entries["machine.py"][0] == RANK["machine"]
    assert named("expr", "``expr``: index") and named("app", ":mod:`~warpspeed.web.app`")
    assert not named("expr", "an expression") and not named("app", "the ``apps``")


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_module_is_in_its_folders_list(folder: str) -> None:
    doc = (PACKAGE / folder / "__init__.py").read_text().split('"""')[1]
    missing = [m for m in modules(folder) if not named(m, doc)]
    assert not missing, f"warpspeed/{folder}/__init__.py's list misses {missing}"


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_module_is_in_the_code_map_with_its_stage(folder: str) -> None:
    entries = code_map()
    assert f"{folder}/" in entries, f"MODEL.md's code map has no entry for {folder}/"
    stage, text = entries[f"{folder}/"]
    assert stage == RANK[folder], (folder, stage, RANK[folder])
    missing = [m for m in modules(folder) if not re.search(rf"\b{re.escape(m)}\b", text)]
    assert not missing, f"MODEL.md's code map entry {folder}/ misses {missing}"


def test_every_top_level_module_is_in_the_code_map_with_its_stage() -> None:
    entries = code_map()
    for p in sorted(PACKAGE.glob("*.py")):
        if p.stem == "__init__":
            continue
        assert p.name in entries, f"MODEL.md's code map has no entry for {p.name}"
        assert entries[p.name][0] == RANK[p.stem], (p.name, entries[p.name][0])
    assert set(entries) <= {f"{f}/" for f in FOLDERS} | {p.name for p in PACKAGE.glob("*.py")}


@pytest.mark.parametrize("folder", FOLDERS)
def test_a_folders_docstring_states_its_stage_as_the_layering_test(folder: str) -> None:
    doc = (PACKAGE / folder / "__init__.py").read_text().split('"""')[1]
    m = re.match(r"Stage (\d+)\b", doc)
    assert m, f"warpspeed/{folder}/__init__.py: begin with 'Stage {RANK[folder]}'"
    assert int(m.group(1)) == RANK[folder], (folder, m.group(1), RANK[folder])


def test_every_module_has_tests_in_the_index() -> None:
    """tests/data/module_tests.toml (written by ``python -m tests.module_index``)."""
    root = PACKAGE.parent
    listed = tomllib.loads((root / "tests" / "data" / "module_tests.toml").read_text())
    for p in sorted(PACKAGE.rglob("*.py")):
        if p.name == "__init__.py":
            continue
        key = p.relative_to(root).as_posix()
        assert listed.get(key), f"{key} has no tests in tests/data/module_tests.toml: add them " \
                                "and run python -m tests.module_index"
        assert all((root / t).is_file() for t in listed[key]), (key, listed[key])
    assert all((root / k).is_file() for k in listed), "the index names a module that is gone"
