"""The order of a ranking and what it can and cannot separate (MODEL.md §8,
"Ties").

* **Order**: GLup/s, best first. Predictions equal to six significant digits
  are a tie, broken towards what is robust to the model's errors: the larger
  occupancy (resident threads per SM: more latency hidden if the memory
  latency or the register count is off), then the smaller fold (fewer
  registers and a smaller partial wave), then the fold in order, then the
  block with fewer threads (the H200's 1024-thread blocks run 10-25 % below
  their prediction where 256-thread blocks of the same kernel do not),
  shallower in z, with fewer rows, wider (blocks deep in z run slower than
  their bytes say: the V100 star, the H200 copy; MODEL.md §10), so that the
  choice is reproducible and leans away from the model's known errors.
* **Leaders within a hundredth**: predictions within :data:`LEAD_SHARE` of
  the best are not told apart by the model either (its measured error is
  ten times that): among them the one that leaves the L2 the most headroom
  (the largest L2 limit) comes first, the rest keep their order. At equal
  DRAM volume, blocks that move more through the L2 run slower than the
  model says (the 7-point star on the H200, MODEL.md §10: flat blocks at
  0.92 of the z-blocked ones' measured best); the rule changes no predicted
  number, only which leader is named first (:func:`leaders_first`).
* **Leaders within the error**: the configurations whose predicted GLup/s lies
  within the model's measured error of the best (the MAPE of the best
  prediction's evidence band, :mod:`warpspeed.timing.evidence`) cannot be told
  apart by the model; :func:`leaders_note` says how many there are, which,
  and by which rule the first was chosen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ..model import Prediction
from ..timing.base import LEAD_SHARE, TIE_DIGITS, first_named, lead_order, tie_rounded

#: The tie-break rule as the notes state it.
RULE = ("equal predictions are ordered by larger occupancy (resident threads per SM), then "
        "smaller fold, then fold order, then fewer threads per block, shallower in z, fewer "
        "rows, wider; of those within 1 % of the best, the one with the most L2 headroom "
        "comes first")


def tie_order(p: Prediction) -> tuple[int, ...]:
    """The order of equal predictions (module docstring): larger occupancy,
    smaller fold, fold order, then small, flat, wide blocks first."""
    resident = p.blocks_per_sm * math.prod(p.block)
    x, y, z = p.block
    return (-resident, math.prod(p.fold), *p.fold, x * y * z, z, y, -x)


def ranking_key(p: Prediction) -> tuple[float, ...]:
    """Sort key of a ranking, best first (module docstring)."""
    return (-tie_rounded(p.glups), *tie_order(p))


def l2_headroom(p: Prediction) -> float:
    """The L2 limit of ``p`` in GLup/s (infinite without L2 traffic)."""
    limit = p.limits.get("l2")
    return math.inf if limit is None else float(limit)


def leaders_first[T](items: Sequence[T], prediction: Callable[[T], Prediction]) -> list[T]:
    """``items`` (ordered by :func:`ranking_key`) with the leaders within
    :data:`LEAD_SHARE` of the best reordered: the largest L2 headroom first,
    the rest in their order (module docstring)."""
    preds = [prediction(it) for it in items]
    order = lead_order([p.glups for p in preds], [l2_headroom(p) for p in preds])
    return [items[i] for i in order]


def first_choice(predictions: Sequence[Prediction]) -> int:
    """The index of the prediction a ranking of ``predictions`` names first
    (:func:`ranking_key`, then :func:`leaders_first`)."""
    return first_named([p.glups for p in predictions], [tie_order(p) for p in predictions],
                       [l2_headroom(p) for p in predictions])


def leaders_note(predictions: Sequence[Prediction], shown: int = 5,
                 complete: bool = True) -> str | None:
    """A note when more than one configuration lies within the model's
    measured error of the best (module docstring); None when the best stands
    alone or the error is unmeasured (the evidence phrase says so).
    ``complete``: False for the best ``top`` of a ranking, whose leaders may
    go on beyond the ones evaluated ("at least")."""
    if len(predictions) < 2:
        return None
    best = predictions[0]
    tied = [p for p in predictions if tie_rounded(p.glups) == tie_rounded(best.glups)]
    ev = best.evidence
    error = ev.mape
    lead = ([p for p in predictions if p.glups >= best.glups * (1.0 - error)]
            if error else tied)
    if len(lead) < 2:
        return None
    names = ", ".join(f"block {','.join(map(str, p.block))} fold {','.join(map(str, p.fold))}"
                      for p in lead[:shown]) + (f", ... ({len(lead) - shown} more)"
                                                if len(lead) > shown else "")
    exact = (f"{len(tied)} tie exactly at {best.glups:.4g} GLup/s; " if len(tied) > 1 else "")
    count = (f"at least {len(lead)}" if not complete and len(lead) == len(predictions)
             else str(len(lead)))
    within = (f"{count} configurations lie within {100 * error:.0f} % of the best, the "
              f"model's measured error for {ev.kernel_class} predictions on {ev.grounding} "
              f"machines (MAPE): the ranking does not separate them ({names}); "
              if error else "")
    return f"{exact}{within}{RULE}; measure the leaders if the choice matters"


__all__ = ["LEAD_SHARE", "RULE", "TIE_DIGITS", "first_choice", "l2_headroom", "leaders_first",
           "leaders_note", "ranking_key", "tie_order"]
