"""The package as pip sees it: declared dependencies, optional extras, the
version written once, and a wheel that holds what the package reads at run
time and nothing of the repository's calibration scripts."""

import ast
import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import warpspeed as ws
from tests.slow import slow

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirements(names: list[str]) -> dict[str, Requirement]:
    reqs = [Requirement(r) for r in names]
    return {r.name: r for r in reqs}


def test_the_version_is_written_once():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "warpspeed/__init__.py"
    assert Version(ws.__version__)


def test_pystencils_is_a_range_holding_the_tested_release():
    pystencils = importlib.import_module("pystencils")
    declared = requirements(PYPROJECT["project"]["dependencies"])["pystencils"]
    assert not any(s.operator == "==" for s in declared.specifier)
    assert Version(pystencils.__version__) in declared.specifier
    assert Version("3") not in declared.specifier  # a new major version is not promised


def imported_modules(folder: Path) -> set[str]:
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def test_lbmpy_is_an_extra_because_the_package_never_imports_it():
    assert "lbmpy" not in imported_modules(ROOT / "warpspeed")
    assert "lbmpy" in imported_modules(ROOT / "stencils")
    assert "lbmpy" not in requirements(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert "lbmpy" in requirements(extras["lbm"])
    assert "warpspeed[lbm]" in extras["dev"]


@slow
def test_an_lbmpy_stencil_without_lbmpy_names_the_extra_in_one_line():
    code = ("import sys; sys.modules['lbmpy'] = None; from warpspeed.cli import main; "
            "sys.exit(main(['predict', 'lbm_d3q19', '--machine', 'A100', '--block', '64,2,1']))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "warpspeed[lbm]" in lines[0] and "lbm_d3q19" in lines[0]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    if importlib.util.find_spec("hatchling") is None:
        pytest.skip("hatchling (the build backend, in the dev extra) is not installed")
    out = tmp_path_factory.mktemp("wheel")
    res = subprocess.run([sys.executable, "-c", "import hatchling.build, sys; "
                          "print(hatchling.build.build_wheel(sys.argv[1]))", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return zipfile.ZipFile(out / res.stdout.strip().splitlines()[-1])


def test_the_wheel_ships_the_capacity_curves_the_machines_name_and_no_scripts(wheel):
    names = set(wheel.namelist())
    fits = {n for n in names if n.startswith("warpspeed/fits/")}
    named = {tomllib.loads(p.read_text())["fits"]
             for p in (ROOT / "warpspeed" / "machines").glob("*.toml")}
    assert {f"warpspeed/fits/{n}.toml" for n in named} == fits
    assert not any(n.startswith("fits/") for n in names)
    machines = {p.name for p in (ROOT / "warpspeed" / "machines").glob("*.toml")}
    assert machines <= {Path(n).name for n in names if n.startswith("warpspeed/machines/")}


def test_the_wheel_carries_the_version_and_the_dependencies(wheel):
    meta_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = wheel.read(meta_name).decode()
    assert f"\nVersion: {ws.__version__}\n" in meta
    requires = [Requirement(line.split(":", 1)[1].strip())
                for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    lbmpy = [r for r in requires if r.name == "lbmpy"]  # in extras only, lbm among them
    assert all(r.marker is not None and "extra" in str(r.marker) for r in lbmpy)
    assert any(r.marker.evaluate({"extra": "lbm"}) for r in lbmpy)
    assert any(r.name == "pystencils" and r.marker is None for r in requires)
