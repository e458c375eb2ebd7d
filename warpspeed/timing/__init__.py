"""Stage 3 of the pipeline, how long it takes: the timing models, side by side.

Every model turns the same inputs (kernel, machine, launch, L1 cycles,
volumes per level, wave sets) into GLup/s, the binding limiter, the four
limits of the roofline, and its own terms that explain the gap to the
roofline. A model also names the sector space its DRAM sets are counted in
(:data:`warpspeed.volumes.waves.ADDRESS_MODES`).

* ``paper``: the paper's model exactly (MODEL.md §3-§8): the paper's
  multi-dimensional sector space, the minimum of four limits.
* ``latency`` (the default): the linear, alignment-aware sector space and a
  time per lattice update from bytes in flight and memory latency (Little's
  law, calibrated on micro-benchmarks), DRAM bandwidth by load/store mix,
  imperfect overlap of SM work with the memory stream, partial waves and
  the launch overhead
  (:mod:`warpspeed.timing.latency`).

Beside them: ``latency_model`` (the default model's time per lattice update)
and ``memory`` (its DRAM by load/store mix), ``memory_systems`` (what many
concurrent streams cost each memory system), ``kernel_fit`` (the constant
fitted to kernel rows), ``hierarchy`` (the last-level cache and the notes of
MODEL.md §15), ``atomics`` (the atomics limiter), ``evidence`` (the error
band a prediction quotes), ``tables`` (each model's own table of a machine
file) and ``latency_parameters`` (the default model's).

Each model is one object, :class:`~warpspeed.timing.base.Timing`
(:mod:`warpspeed.timing.base` lists what it owns: switches, time, pruning
bound, notes, advice, parameters), registered by name in :data:`MODELS`; the
rest of the package asks the object and never tests a model's name. A limit
every model shares is a :class:`~warpspeed.timing.base.Limiter`, registered in
:data:`SHARED_LIMITERS`. Each declares its own table of the machine file (MODEL.md
§12): :func:`check_tables` refuses a table none declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import LaunchError, MachineError
from ..machine import Machine
from . import tables
from .atomics import ATOMICS
from .base import Hint, Limiter, Reading, Timing, TimingResult
from .latency_model import LATENCY
from .paper import PAPER
from .tables import ParameterTable

#: Every timing model by name, the default first: the one place a model is
#: registered (a new model is a module of ``timing/`` defining its
#: :class:`~warpspeed.timing.base.Timing` and one entry here).
MODELS: dict[str, Timing] = {t.name: t for t in (LATENCY, PAPER)}
DEFAULT_MODEL = LATENCY.name
#: Every limit all models share, by name: the one place a limiter is registered
#: (:func:`~warpspeed.timing.base.with_limiters` adds them to every prediction).
SHARED_LIMITERS: dict[str, Limiter] = {lim.name: lim for lim in (ATOMICS,)}


def parameter_tables() -> tuple[ParameterTable, ...]:
    """The tables of a machine file that the registered models and limiters
    read (MODEL.md §12)."""
    found = [*(t.parameters for t in MODELS.values()),
             *(t.parameters for t in SHARED_LIMITERS.values())]
    return tuple(p for p in found if p is not None)


def check_tables(m: Machine) -> None:
    """Every timing table of ``m``'s file checked by the model that reads it
    (:func:`warpspeed.timing.tables.entries`); a table no model or limiter
    reads is refused naming those that are. A machine that passed is not
    checked again against the same tables (kept by identity, up to 256:
    machines are frozen)."""
    found = parameter_tables()
    hit = _CHECKED.get(id(m))
    if hit is not None and hit[0] is m and hit[1] == found:
        return
    specs = {t.name: t for t in found}
    for name, _ in m.tables:
        if name not in specs:
            raise MachineError(f"machine file {m.path}: unknown table [{name}]; the timing "
                               f"tables are {', '.join(f'[{t}]' for t in specs)} (MODEL.md §12)")
        tables.entries(m, specs[name])
    if len(_CHECKED) < 256:
        _CHECKED[id(m)] = (m, found)  # held: its id stays its own


_CHECKED: dict[int, tuple[Machine, tuple[ParameterTable, ...]]] = {}


def with_values(m: Machine, values: Mapping[str, float | None]) -> Machine:
    """``m`` with these parameters set, each in the table that reads it or
    the machine's own field (:func:`warpspeed.timing.tables.with_values`)."""
    return tables.with_values(m, parameter_tables(), values)


def parameter(m: Machine, key: str) -> Any | None:
    """The value the models use for ``key``: a parameter of a timing table
    as its model reads it (:func:`warpspeed.timing.tables.entries`), else the
    machine's own field; None where the file does not give it."""
    for spec in parameter_tables():
        if key in spec.keys():
            return tables.entries(m, spec).get(key)
    return getattr(m, key, None)


def parameter_range(key: str) -> tuple[float, float]:
    """The values a machine file may give parameter ``key``, in whichever
    table (:func:`warpspeed.timing.tables.value_range`)."""
    return tables.value_range(parameter_tables(), key)


def timing_model(name: str) -> Timing:
    """The model registered as ``name``; a :class:`LaunchError` naming the
    models otherwise."""
    if name not in MODELS:
        raise LaunchError(f"unknown model {name!r}; the models are {', '.join(MODELS)}")
    return MODELS[name]


def listing() -> list[dict[str, object]]:
    """One row per model, in registration order: ``name``, ``default``,
    ``address`` and ``description`` (``warpspeed models``)."""
    return [{"name": t.name, "default": t.name == DEFAULT_MODEL, "address": t.address,
             "description": t.description} for t in MODELS.values()]


__all__ = ["DEFAULT_MODEL", "MODELS", "SHARED_LIMITERS", "Hint", "Limiter", "Reading", "Timing",
           "TimingResult", "check_tables", "listing", "parameter", "parameter_range",
           "parameter_tables", "timing_model", "with_values"]
