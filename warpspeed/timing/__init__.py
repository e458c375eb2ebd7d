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
MODEL.md §15), ``atomics`` (the atomics limiter) and ``evidence`` (the error
band a prediction quotes).

Each model is one object, :class:`~warpspeed.timing.base.Timing`
(:mod:`warpspeed.timing.base` lists what it owns: switches, time, pruning
bound, notes, advice), registered by name in :data:`MODELS`; the rest of the
package asks the object and never tests a model's name.
"""

from __future__ import annotations

from ..errors import LaunchError
from .base import Hint, Reading, Timing, TimingResult
from .latency_model import LATENCY
from .paper import PAPER

#: Every timing model by name, the default first: the one place a model is
#: registered (a new model is a module of ``timing/`` defining its
#: :class:`~warpspeed.timing.base.Timing` and one entry here).
MODELS: dict[str, Timing] = {t.name: t for t in (LATENCY, PAPER)}
DEFAULT_MODEL = LATENCY.name


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


__all__ = ["DEFAULT_MODEL", "MODELS", "Hint", "Reading", "Timing", "TimingResult", "listing",
           "timing_model"]
