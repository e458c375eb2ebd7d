"""Registers per thread from the vendor's compiler, fed with source text
(MODEL.md §3: the register limit of the occupancy): the neutral part of
every front end's register count. A front end hands over the kernel's
source and include folders (the pystencils front end:
:func:`warpspeed.pystencils.nvcc.pystencils_source`); this module runs the
compiler its GPU family names (``register_counter``, warpspeed.family:
``nvcc``, whose ``ptxas`` reports the count for the machine's ``arch``) and
caches the answers in memory and on disk (:func:`cache_dir`:
``$WARPSPEED_CACHE_DIR``, else ``$XDG_CACHE_HOME/warpspeed``, else
``~/.cache/warpspeed``; one small JSON file per count, safe to delete).

The compiler is optional: without it, or when the compilation fails, the
answer says why and callers fall back to their estimate. ``$WARPSPEED_NVCC``
chooses it (:func:`nvcc_path`): a path or a command name runs that nvcc
(another CUDA installation than the one on the ``PATH``), ``none`` runs none,
so that every count is the estimate (reproducible whatever is installed, and
no compilation time: the test suite's default).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass

from ..family import family_of_target

DEFAULT_REGISTERS = 32
_USED = re.compile(r"Used (\d+) registers")


@dataclass(frozen=True)
class RegisterCount:
    """Registers per thread, or ``None`` with the reason it is unknown."""

    registers: int | None
    reason: str

    def or_default(self) -> int:
        return self.registers if self.registers is not None else DEFAULT_REGISTERS


def parse_ptxas(output: str) -> int | None:
    """The largest register count ``ptxas -v`` reports (one line per kernel)."""
    counts = [int(m) for m in _USED.findall(output)]
    return max(counts) if counts else None


def register_count(
    source: str, arch: str, include_dirs: tuple[str, ...] = (), timeout: float = 120.0
) -> RegisterCount:
    """Compile CUDA ``source`` for ``arch`` (e.g. ``"sm_80"``) and read the
    register count. Never raises for a missing or failing ``nvcc``."""
    nvcc = nvcc_path()
    if nvcc is None:
        return RegisterCount(None, nvcc_missing_reason())
    with tempfile.TemporaryDirectory(prefix="warpspeed-nvcc-") as tmp:
        path = os.path.join(tmp, "kernel.cu")
        with open(path, "w") as fh:
            fh.write(source)
        cmd = [nvcc, f"-arch={arch}", "-cubin", "--resource-usage", "-o",
               os.path.join(tmp, "kernel.cubin"), path]
        for inc in include_dirs:
            cmd[1:1] = ["-I", inc]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return RegisterCount(None, f"nvcc failed to run: {exc}")
    if res.returncode != 0:
        first = (res.stderr.strip().splitlines() or ["no message"])[0]
        return RegisterCount(None, f"nvcc failed: {first}")
    regs = parse_ptxas(res.stdout + res.stderr)
    if regs is None:
        return RegisterCount(None, "nvcc reported no register count")
    return RegisterCount(regs, f"nvcc -arch={arch}")


_CACHE: dict[tuple[str, str, str | None], RegisterCount] = {}
_LOCK = threading.Lock()


def cache_dir() -> str:
    """The folder of the on-disk register counts (module docstring)."""
    if os.environ.get("WARPSPEED_CACHE_DIR"):
        return os.path.join(os.environ["WARPSPEED_CACHE_DIR"], "registers")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "warpspeed", "registers")


def _disk_key(source: str, arch: str, nvcc: str | None) -> str | None:
    """A file name for ``source`` and ``arch`` that changes with the nvcc
    installation (its path and modification time); None without nvcc."""
    if nvcc is None:
        return None
    try:
        stamp = f"{os.path.realpath(nvcc)}:{os.stat(nvcc).st_mtime_ns}"
    except OSError:
        return None
    digest = hashlib.sha256(f"{stamp}\0{arch}\0{source}".encode()).hexdigest()
    return os.path.join(cache_dir(), f"{digest[:40]}.json")


def _read_disk(path: str) -> RegisterCount | None:
    try:
        with open(path) as fh:
            data = json.load(fh)
        return RegisterCount(int(data["registers"]), str(data["reason"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_disk(path: str, count: RegisterCount) -> None:
    """Store a successful count; a folder that cannot be written only costs
    the next process another nvcc run."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as fh:
            json.dump({"registers": count.registers, "reason": count.reason}, fh)
        os.replace(tmp, path)
    except OSError:
        pass


def cached_count(source: str, includes: tuple[str, ...], arch: str) -> RegisterCount:
    """nvcc's count of CUDA ``source`` for ``arch``, cached in memory per
    source, architecture and nvcc (:func:`nvcc_path`: a count made without
    one is not reused once there is one; thread-safe: the hook compiles its
    folds in threads while it extracts them) and on disk (module
    docstring). Failed compilations are cached in memory only."""
    nvcc = nvcc_path()
    key = (source, arch, nvcc)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    path = _disk_key(source, arch, nvcc)
    count = _read_disk(path) if path is not None else None
    if count is None:
        count = register_count(source, arch, includes)
        if path is not None and count.registers is not None:
            _write_disk(path, count)
    with _LOCK:
        _CACHE[key] = count
    return count


def nvcc_arch(arch: str) -> bool:
    """Whether ``arch`` is a compiler target of a GPU family whose registers
    nvcc counts (``sm_80``, warpspeed.family); an AMD one (``gfx90a``) gets
    the estimate."""
    family = family_of_target(arch)
    return family is not None and family.register_counter == "nvcc"


#: The environment variable that chooses the nvcc (module docstring).
NVCC_VARIABLE = "WARPSPEED_NVCC"
_NO_NVCC = ("none", "off", "no", "0")


def _chosen() -> tuple[str, bool]:
    """``$WARPSPEED_NVCC`` as given ("" when unset) and whether it says none."""
    given = os.environ.get(NVCC_VARIABLE, "").strip()
    return given, given.lower() in _NO_NVCC


def nvcc_path() -> str | None:
    """The nvcc that counts registers: ``$WARPSPEED_NVCC`` when it is set (a
    path or a command on the ``PATH``; ``none`` for none), else ``nvcc`` on
    the ``PATH``; None when there is none to run."""
    given, none = _chosen()
    if none:
        return None
    return shutil.which(given or "nvcc")


def nvcc_missing_reason() -> str:
    """Why :func:`nvcc_path` found no nvcc, in the words of a count's source."""
    given, none = _chosen()
    if not given:
        return "nvcc is not installed"
    if none:
        return f"{NVCC_VARIABLE}={given}: nvcc not used"
    return f"{NVCC_VARIABLE}={given} is not an executable nvcc"


def nvcc_available() -> bool:
    """Whether there is an nvcc to run (:func:`nvcc_path`)."""
    return nvcc_path() is not None


__all__ = ["DEFAULT_REGISTERS", "NVCC_VARIABLE", "RegisterCount", "cache_dir", "cached_count",
           "nvcc_arch", "nvcc_available", "nvcc_missing_reason", "nvcc_path", "parse_ptxas",
           "register_count"]
