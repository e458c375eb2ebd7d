"""The one interface of a timing model (MODEL.md §8, §11, §14): what the rest
of the package may ask a model, so that nothing outside ``timing/`` tests a
model's name.

A model is one frozen :class:`Timing` object, registered by name in
:data:`warpspeed.timing.MODELS`. It owns

* its **switches** of the shared stages: the sector space its DRAM sets are
  counted in (``address``, §6), whether partial stores merge before eviction
  (``merged_stores``), whether L1 re-reads miss the L2 (``reread_evicts``) and
  whether the L1 count charges whole warps (``whole_warps``, §4);
* its **time** (:meth:`Timing.time`): GLup/s, the binding limiter, the four
  limits and its own terms from the shared inputs;
* its **pruning bound** (:meth:`Timing.peak_dram_bandwidth`): the largest DRAM
  bandwidth it can assign on a machine. With the promise that it never
  predicts more than its smallest limit, the ranking's top-k pruning (§8)
  holds for it;
* its **notes** (:meth:`Timing.notes`): what it assumes on a machine (§15);
* its **advice** (§8): limits beside the four levels' (:meth:`Timing.limits_beyond_levels`),
  its hints (:meth:`Timing.hints`), its sentence on an occupancy-limited
  configuration (:meth:`Timing.occupancy_note`) and its lines of ``warpspeed
  explain`` (:meth:`Timing.explanation`);
* the table of ``ACCURACY.json`` that holds its validation scores
  (``accuracy_table``, §9; None: not validated);
* its **parameters** (``parameters``, §12): its own table of the machine file
  and the frozen dataclass that reads it (:mod:`warpspeed.timing.tables`).

A limit that every model shares (the atomics of a reduction, §8) is a
:class:`Limiter`, with its own table like a model's; :func:`with_limiters`
adds the registered ones to any model's result by one rule.

The advice reads a prediction through a :class:`Reading`, because a
:class:`~warpspeed.model.Prediction` belongs to a later stage.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from ..volumes.levels import AccessTraits, Volumes
from ..volumes.waves import WaveVolumes
from .tables import ParameterTable


@dataclass(frozen=True)
class TimingResult:
    """GLup/s, the binding limiter, the four roofline limits (GLup/s, None
    where a level carries no work) and the model's own terms."""

    glups: float
    limiter: str
    limits: dict[str, float | None]
    terms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Hint:
    """One finding of the advice (MODEL.md §8): a tag, the limiter it
    concerns, and a sentence with numbers."""

    kind: str
    limiter: str
    message: str


@dataclass(frozen=True)
class Reading:
    """What a model's advice reads of one prediction (MODEL.md §8): its
    binding limiter, terms and L1 cycles per warp and update, the vendor's
    words for the multiprocessor and the warp (§15), and, when the kernel is
    known, the L1 cycles of conflict-free unit-stride accesses
    (``ideal_l1``) and the block width in x from which a block's rows stop
    splitting the L1's units (``row_width``)."""

    limiter: str
    terms: Mapping[str, float]
    l1_cycles: float
    sm: str = "SM"
    warp: str = "warp"
    ideal_l1: float | None = None
    row_width: int | None = None
    #: The machine's data-sheet DRAM peak (GB/s), when known.
    dram_peak: float | None = None


@dataclass(frozen=True)
class Timing(ABC):
    """A timing model (module docstring): its name, sector space, what it
    adds (``description``, ``warpspeed models``) and its switches; a model
    implements :meth:`time` and :meth:`peak_dram_bandwidth` and may add
    notes and advice."""

    name: str
    address: str
    description: str
    merged_stores: bool = False
    reread_evicts: bool = False
    #: The L1 count charges whole warps (idle lanes of a partly active warp
    #: included, MODEL.md §4); False: the paper's mean of the active half warps.
    whole_warps: bool = False
    #: The table of ``ACCURACY.json``'s ``leave_one_set_out`` with this
    #: model's scores (MODEL.md §9); None: the model was not validated.
    accuracy_table: str | None = None
    #: The model's own table of a machine file (MODEL.md §12); None: it reads none.
    parameters: ParameterTable | None = None

    @abstractmethod
    def time(self, kernel: Kernel, machine: Machine, launch: Launch, l1_cycles: float,
             volumes: Volumes, traits: AccessTraits, wave: WaveVolumes) -> TimingResult:
        """GLup/s, limiter, the four limits and the terms of one configuration."""

    @abstractmethod
    def peak_dram_bandwidth(self, machine: Machine) -> float:
        """The largest DRAM bandwidth (GB/s) this model assigns to any kernel
        on ``machine`` (MODEL.md §8, top-k pruning)."""

    def notes(self, kernel: Kernel, machine: Machine) -> tuple[str, ...]:
        """What the prediction assumes on ``machine`` (MODEL.md §15)."""
        return ()

    def limits_beyond_levels(self, terms: Mapping[str, float]) -> dict[str, float]:
        """Limits in GLup/s beside the four levels' that the advice weighs
        (MODEL.md §8, headroom)."""
        return {}

    def hints(self, r: Reading) -> tuple[Hint, ...]:
        """This model's own hints (MODEL.md §8, advice)."""
        return ()

    def occupancy_note(self, terms: Mapping[str, float]) -> str:
        """What this model adds to the occupancy hint (a sentence starting
        with ``. ``, or nothing)."""
        return ""

    def explanation(self, r: Reading) -> tuple[str, ...]:
        """This model's lines of ``warpspeed explain`` from its terms (MODEL.md §14)."""
        return ()


@dataclass(frozen=True)
class Limiter(ABC):
    """A limit of the whole kernel that every model shares (module docstring,
    MODEL.md §8): its name (the limiter a prediction names when it binds) and
    its own table of the machine file (None: it reads none)."""

    name: str
    parameters: ParameterTable | None = None

    @abstractmethod
    def limit(self, kernel: Kernel, machine: Machine,
              launch: Launch) -> tuple[float, dict[str, float]] | None:
        """The GLup/s this limit allows and its terms; None where it does not apply."""


def with_limiters(t: TimingResult, limiters: Sequence[Limiter], kernel: Kernel,
                  machine: Machine, launch: Launch) -> TimingResult:
    """``t`` with every limit of ``limiters`` that applies: each joins the
    limits and adds its terms, and the prediction is the lowest of the
    model's GLup/s and these limits, named by the limit that binds (the one
    rule for limits every model shares; MODEL.md §8)."""
    for lim in limiters:
        got = lim.limit(kernel, machine, launch)
        if got is None:
            continue
        glups, terms = got
        limits, joined = {**t.limits, lim.name: glups}, {**t.terms, **terms}
        if glups < t.glups:
            t = replace(t, glups=glups, limiter=lim.name, limits=limits, terms=joined)
        else:
            t = replace(t, limits=limits, terms=joined)
    return t


#: Predictions within this share of the best are leaders the model cannot
#: tell apart (MODEL.md §8, "Ties"): a ranking names the one with the most L2
#: headroom first (:func:`warpspeed.search.ties.leaders_first`).
LEAD_SHARE = 0.01


#: Significant digits below which two predictions tie (MODEL.md §8, "Ties").
TIE_DIGITS = 6


def tie_rounded(glups: float) -> float:
    """``glups`` to :data:`TIE_DIGITS` significant digits: predictions equal
    after it tie (MODEL.md §8, "Ties")."""
    if glups <= 0 or not math.isfinite(glups):
        return glups
    return round(glups, TIE_DIGITS - 1 - int(math.floor(math.log10(glups))))


def lead_order(glups: Sequence[float], l2_limits: Sequence[float]) -> list[int]:
    """The order a ranking names configurations in (MODEL.md §8, "Ties"):
    ``glups`` and ``l2_limits`` (the L2's limit in GLup/s, infinite without
    L2 traffic) are in ranking order, best first; the leaders within
    :data:`LEAD_SHARE` of the best come first by the largest L2 limit (the
    most headroom), ties in ranking order, then the rest in ranking order.
    The one rule :func:`warpspeed.search.ties.leaders_first` and the fits'
    scores read."""
    if not glups:
        return []
    n = sum(1 for g in glups if g >= glups[0] * (1.0 - LEAD_SHARE))
    return sorted(range(n), key=lambda i: (-l2_limits[i], i)) + list(range(n, len(glups)))


def first_named(glups: Sequence[float], ties: Sequence[tuple[int, ...]],
                l2_limits: Sequence[float]) -> int:
    """The index a ranking names first (MODEL.md §8, "Ties"): by GLup/s to
    :data:`TIE_DIGITS` digits, equal ones in the order of ``ties``
    (:func:`warpspeed.search.ties.tie_order`), then :func:`lead_order` with
    ``l2_limits``. The one rule the ranking and the fits' scores read."""
    ranked = sorted(range(len(glups)), key=lambda i: (-tie_rounded(glups[i]), ties[i], i))
    order = lead_order([glups[i] for i in ranked], [l2_limits[i] for i in ranked])
    return ranked[order[0]]


__all__ = ["LEAD_SHARE", "TIE_DIGITS", "Hint", "Limiter", "Reading", "Timing", "TimingResult",
           "first_named", "lead_order", "tie_rounded", "with_limiters"]
