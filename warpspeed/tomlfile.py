"""Reading the project's versioned TOML data files (machine files, GPU
families, capacity fits; MODEL.md §7, §12)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def read_versioned_toml(path: Path, what: str, versions: tuple[int, ...],
                        error: type[Exception]) -> dict[str, Any]:
    """The data of the TOML file ``path``, a ``what`` (``"machine file"``, ...)
    of a format this warpspeed reads: ``format_version`` among ``versions``, a
    file without it being version 1 (MODEL.md §7, §12). An unreadable file,
    invalid TOML or another version raises ``error`` in one line naming the
    file."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{what} {path} is not valid TOML: {exc}") from exc
    version = data.get("format_version", 1)
    if type(version) is not int or version not in versions:
        raise error(f"{what} {path}: format_version {version!r} is not one this "
                    f"warpspeed reads (it reads {', '.join(map(str, versions))})")
    return data
