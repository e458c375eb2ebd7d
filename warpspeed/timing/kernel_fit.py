"""The constants of the default timing model that are fitted to kernel
measurements, their bounds, and the fit itself
(:mod:`warpspeed.timing.latency`).

At most three constants per machine may be fitted to kernel rows; they are
named and bounded here, once, for ``fits/latency_model.py`` (which fits and
reports them) and ``fits/overlap_forms.py`` (which fits them again for
every overlap form it compares).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: Name and bounds of each fitted constant, in the order of the vector the
#: fit works on: the p-norm exponent of the core and memory times, the 2 MiB
#: pages one SM reaches without TLB misses, and the relative DRAM time added
#: per unit of missing fraction.
KERNEL_CONSTANTS: dict[str, tuple[float, float]] = {
    "overlap_exponent": (1.0, 4.0),
    "tlb_reach_pages": (16.0, 512.0),
    "tlb_penalty": (0.01, 4.0),
}

#: Starting points of the fit: the objective is not smooth in the TLB reach
#: (a reach between two rows' page counts changes nothing), so one start
#: can stall on a plateau.
STARTS: tuple[tuple[float, float, float], ...] = (
    (1.5, 128.0, 1.0), (2.0, 200.0, 2.0), (1.3, 64.0, 0.5),
)


def fit_constants(objective: Callable[[np.ndarray], float]) -> np.ndarray:
    """The constants (in the order of :data:`KERNEL_CONSTANTS`) minimising
    ``objective`` within the bounds: bounded Powell from every start, the
    best result kept."""
    from scipy.optimize import minimize

    bounds = tuple(KERNEL_CONSTANTS.values())
    best = None
    for start in STARTS:
        res = minimize(objective, np.array(start), bounds=bounds, method="Powell")
        if best is None or res.fun < best.fun:
            best = res
    return np.asarray(best.x)  # type: ignore[union-attr]


__all__ = ["KERNEL_CONSTANTS", "STARTS", "fit_constants"]
