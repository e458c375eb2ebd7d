"""The order a ranking lists its predictions in (MODEL.md §8, "Ties"): the
leaders within :data:`~warpspeed.timing.base.LEAD_SHARE` of the best first
(in the order of their L2 headroom), then best first, equal to six digits in
the robust tie order."""

from collections.abc import Sequence

from warpspeed.timing.base import LEAD_SHARE


def is_best_first(glups: Sequence[float]) -> bool:
    """Whether ``glups`` is in a ranking's order (module docstring)."""
    if not glups:
        return True
    best = max(glups)
    lead = [g >= best * (1 - LEAD_SHARE) for g in glups]
    n = lead.index(False) if False in lead else len(lead)
    rest = list(glups[n:])
    return (not any(lead[n:]) and glups[0] >= best * (1 - LEAD_SHARE)
            and all(a >= b * (1 - 1e-5) for a, b in zip(rest, rest[1:])))
