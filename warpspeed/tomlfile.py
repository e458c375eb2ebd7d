"""Reading the project's versioned TOML data files (machine files, GPU
families, capacity fits; MODEL.md §7, §12)."""

from __future__ import annotations

import functools
import tomllib
from pathlib import Path
from typing import Any


def read_versioned_toml(path: Path, what: str, versions: tuple[int, ...],
                        error: type[Exception]) -> dict[str, Any]:
    """The data of the TOML file ``path``, a ``what`` (``"machine file"``, ...)
    of a format this warpspeed reads: ``format_version`` among ``versions``, a
    file without it being version 1 (MODEL.md §7, §12). An unreadable file,
    invalid TOML or another version raises ``error`` in one line naming the
    file. The file is read each time; the parse of a text already read is
    reused (a copy the caller may change)."""
    try:
        data = _copy(_parsed(path.read_text()))
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{what} {path} is not valid TOML: {exc}") from exc
    version = data.get("format_version", 1)
    if type(version) is not int or version not in versions:
        raise error(f"{what} {path}: format_version {version!r} is not one this "
                    f"warpspeed reads (it reads {', '.join(map(str, versions))})")
    return data


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> dict[str, Any]:
    """The TOML ``text`` parsed, kept by its text: a machine file is read by
    most predictions and commands, and parsing it costs 1-2 ms (keyed by the
    text, not the file's time stamp, so an edit is never missed)."""
    return tomllib.loads(text)


def _copy(value: Any) -> Any:
    """A copy of parsed TOML whose tables and arrays are new (the values are
    immutable)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
