"""The CI scripts: ``.ci/pythons`` lists every Python >= 3.12 of the machine
once per version, in the order ``.ci/bootstrap`` prefers them (it takes the
first, ``.ci/run`` runs the fast tests under the others)."""

import glob
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHONS = ROOT / ".ci" / "pythons"
#: Where the script also looks, whatever the PATH: absolute folders.
FOLDERS = ("/usr/local/bin/python3.1[2-9]", "/usr/bin/python3.1[2-9]", "/opt/python*/bin/python3")


def fake_bin(tmp_path: Path) -> Path:
    """A PATH folder with a pyenv shim that refuses to run (exit 127), an
    old interpreter (its version check fails: exit 1) and two names for
    this interpreter (one version twice)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python3.14"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.14: command not found' >&2\nexit 127\n")
    old = bin_dir / "python3"
    old.write_text("#!/bin/sh\nexit 1\n")
    for f in (shim, old):
        f.chmod(0o755)
    for name in ("python3.13", "python3.12"):
        (bin_dir / name).symlink_to(sys.executable)
    return bin_dir


def pythons(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    return subprocess.run([shutil.which("bash") or "/bin/bash", str(PYTHONS)],
                          env={"PATH": str(bin_dir), "HOME": str(tmp_path), **env},
                          capture_output=True, text=True, timeout=120)


def version(python: str) -> tuple[int, ...]:
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, timeout=60)
    return tuple(int(v) for v in out.stdout.split())


def test_pythons_lists_each_working_version_once_in_the_preferred_order(tmp_path):
    bin_dir = fake_bin(tmp_path)
    res = pythons(tmp_path)
    assert res.returncode == 0, res.stderr
    found = res.stdout.splitlines()
    assert found[0] == str(bin_dir / "python3.13")  # the first that runs, in bootstrap's order
    assert not {str(bin_dir / n) for n in ("python3.14", "python3.12", "python3")} & set(found)
    versions = [version(p) for p in found]
    assert len(set(versions)) == len(versions)
    assert all(v >= (3, 12) for v in versions)


def test_pythons_puts_the_interpreter_the_user_names_first(tmp_path):
    bin_dir = fake_bin(tmp_path)
    res = pythons(tmp_path, WARPSPEED_PYTHON=str(bin_dir / "python3.12"))
    assert res.stdout.splitlines()[0] == str(bin_dir / "python3.12")
    assert str(bin_dir / "python3.13") not in res.stdout.splitlines()
    res = pythons(tmp_path, WARPSPEED_PYTHON=str(bin_dir / "python3.14"))  # the broken shim
    assert res.stdout.splitlines()[0] == str(bin_dir / "python3.13")


def test_pythons_fails_when_there_is_none(tmp_path):
    if any(glob.glob(pattern) for pattern in FOLDERS):
        pytest.skip(f"this machine has an interpreter in {', '.join(FOLDERS)}")
    fake_bin(tmp_path)
    for name in ("python3.13", "python3.12"):
        (tmp_path / "bin" / name).unlink()
    res = pythons(tmp_path)
    assert res.returncode == 1 and res.stdout == ""
