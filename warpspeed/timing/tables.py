"""Each timing model's own table of a machine file (MODEL.md §12).

A model (or a limiter the models share, :class:`~warpspeed.timing.base.Limiter`)
declares its parameters as a frozen dataclass and names its table in a
:class:`ParameterTable`; the loader keeps the table as the file wrote it
(:attr:`warpspeed.machine.Machine.tables`) and :func:`read` checks it here:
every entry a ``value`` of its field's type (the loader's rule for numbers,
:func:`warpspeed.machine.number`, within the field's ``bounds``), or a field's
own reader (``read`` in its metadata: the FP cost tables); an unknown key, a
key the model no longer reads or a missing one is a ``MachineError`` in one
line naming the file, the table and the key. A dataclass field with a default
is optional. The model's ``finish`` may then derive values from the machine's
facts (the default model scales its DRAM plateaus with ``[dram_bandwidth]``).

Checked values are kept per machine (:func:`functools.lru_cache`) and per
machine object (:func:`_kept`): a prediction reads its model's table several
times.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, fields, replace
from typing import Any

from ..errors import MachineError
from ..machine import Machine, number, parameter_range
from ..machine_format import freeze, thaw

#: One field's reader of its own: (file, ``table.key``, the entry) to its value.
FieldReader = Callable[[object, str, Mapping[str, Any]], Any]


def bounds(low: float, high: float, why: str) -> dict[str, Any]:
    """A field's metadata: its value lies in ``[low, high]`` (``why`` says so in
    the error; low 0: zero allowed)."""
    return {"bounds": (low, high, why)}


@dataclass(frozen=True)
class ParameterTable:
    """A model's table (module docstring): its name in the machine file, the
    frozen dataclass of its parameters, who needs them (for the error on a
    missing one, with the fix), the keys of older files refused with why, and
    what the model derives from the values read and the machine."""

    name: str
    kind: type
    needed_by: str
    removed: tuple[tuple[str, str], ...] = ()
    finish: Callable[[dict[str, Any], Machine], dict[str, Any]] | None = None

    def keys(self) -> tuple[str, ...]:
        """The table's keys, in the order of its dataclass."""
        return tuple(f.name for f in fields(self.kind))

    def required(self) -> tuple[str, ...]:
        """The keys a file must give (the dataclass's fields without a default)."""
        return tuple(f.name for f in fields(self.kind)
                     if f.default is MISSING and f.default_factory is MISSING)


def read(m: Machine, spec: ParameterTable) -> Any | None:
    """``m``'s parameters of ``spec`` (module docstring); None when the file
    has no such table."""
    if not _has(m, spec.name):
        return None
    return _read(m, spec)


def require(m: Machine, spec: ParameterTable) -> Any:
    """:func:`read`, the file without the table refused like one missing keys."""
    if not _has(m, spec.name):
        _missing(m, spec, list(spec.required()))
    return _read(m, spec)


def _has(m: Machine, name: str) -> bool:
    """Whether ``m``'s file has the table ``[name]`` (without copying it out
    as :meth:`warpspeed.machine.Machine.table` does)."""
    return any(n == name for n, _ in m.tables)


def _read(m: Machine, spec: ParameterTable) -> Any:
    """:func:`_read_table`, kept (:func:`_kept`)."""
    return _kept(_READ, _read_table, m, spec)


#: A machine's tables already read, and their entries (:func:`entries`).
_READ: dict[tuple[int, int], tuple[Machine, ParameterTable, Any]] = {}
_ENTRIES: dict[tuple[int, int], tuple[Machine, ParameterTable, Any]] = {}


def _kept(cache: dict[tuple[int, int], tuple[Machine, ParameterTable, Any]],
          compute: Callable[[Machine, ParameterTable], Any], m: Machine,
          spec: ParameterTable) -> Any:
    """``compute(m, spec)`` of a machine's table (MODEL.md §12; kept per
    equal machine by its own cache) kept in
    ``cache`` per machine and table object too, looked up by identity:
    hashing every field of a machine cost more than the lookup, and a
    prediction reads its tables several times; up to 256 pairs."""
    hit = cache.get((id(m), id(spec)))
    if hit is not None and hit[0] is m and hit[1] is spec:
        return hit[2]
    value = compute(m, spec)
    if len(cache) < 256:
        cache[(id(m), id(spec))] = (m, spec, value)  # held: their ids stay theirs
    return value


@functools.lru_cache(maxsize=256)
def _read_table(m: Machine, spec: ParameterTable) -> Any:
    values = entries(m, spec)
    missing = [k for k in spec.required() if k not in values]
    if missing:
        _missing(m, spec, missing)
    return spec.kind(**values)


def _missing(m: Machine, spec: ParameterTable, missing: list[str]) -> None:
    raise MachineError(
        f"machine {m.name} ({m.path}) lacks {', '.join(f'[{spec.name}.{k}]' for k in missing)}, "
        f"needed by {spec.needed_by}")


def entries(m: Machine, spec: ParameterTable) -> dict[str, Any]:
    """The values of ``[spec.name]`` that ``m``'s file gives, checked and
    finished (module docstring), missing ones left out; kept (:func:`_kept`)."""
    out: dict[str, Any] = _kept(_ENTRIES, _entries, m, spec)
    return out


@functools.lru_cache(maxsize=256)
def _entries(m: Machine, spec: ParameterTable) -> dict[str, Any]:
    table = m.table(spec.name) or {}
    removed = dict(spec.removed)
    gone = sorted(k for k in table if k in removed)
    if gone:
        raise MachineError(f"machine file {m.path}: [{spec.name}] {gone} are no longer used: "
                           f"{removed[gone[0]]}; delete them")
    unknown = sorted(set(table) - set(spec.keys()))
    if unknown:
        raise MachineError(f"machine file {m.path}: [{spec.name}] has unknown keys {unknown}; "
                           f"its keys are {list(spec.keys())}")
    hints = typing.get_type_hints(spec.kind)
    out = {}
    for f in fields(spec.kind):
        if f.name in table:
            out[f.name] = _value(m.path, f"{spec.name}.{f.name}", table[f.name],
                                 hints[f.name], f.metadata)
    return spec.finish(out, m) if spec.finish else out


def _value(path: str, key: str, entry: Mapping[str, Any], hint: object,
           meta: Mapping[str, Any]) -> Any:
    """One entry's value: the field's own reader, else a number of its type."""
    if "read" in meta:
        return meta["read"](path, key, entry)
    if "value" not in entry:
        raise MachineError(f"machine file {path}: [{key}] needs a 'value' (and its 'source')")
    typ = "int" if int in _types(hint) else "float"
    return number(path, key, entry["value"], typ, meta.get("bounds"))


def _types(hint: object) -> tuple[object, ...]:
    """The types of an annotation (``float | None`` gives float and None)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return typing.get_args(hint)
    return (hint,)


def value_range(specs: tuple[ParameterTable, ...], key: str) -> tuple[float, float]:
    """The values a machine file may give ``key``: a field of one of
    ``specs`` within its bounds, else the loader's range of a top-level key."""
    for spec in specs:
        for f in fields(spec.kind):
            if f.name == key:
                low, high, _ = f.metadata.get("bounds", (0.0, math.inf, ""))
                return low, high
    return parameter_range(key)


def with_values(m: Machine, specs: tuple[ParameterTable, ...],
                values: Mapping[str, float | None]) -> Machine:
    """``m`` with these parameters set: a field of a table of ``specs`` in
    that table (None removes it), else the machine's own field."""
    own: dict[str, Any] = {}
    tables = {name: thaw(t) for name, t in m.tables}
    for key, v in values.items():
        spec = next((s for s in specs if key in s.keys()), None)
        if spec is None:
            own[key] = v
            continue
        table = tables.setdefault(spec.name, {})
        if v is None:
            table.pop(key, None)
        else:
            table[key] = {**table.get(key, {"source": "set by warpspeed"}), "value": v}
    frozen = tuple((name, freeze(m.path, name, t)) for name, t in tables.items())
    return replace(m, tables=frozen, **own)


__all__ = ["FieldReader", "ParameterTable", "bounds", "entries", "read", "require",
           "value_range", "with_values"]
