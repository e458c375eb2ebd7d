"""warpspeed: analytical GPU performance estimation from address expressions.

Reference: Ernst et al., JPDC 173 (2023). How the paper model and the
default model work: ``MODEL.md`` in this package.

The public names below are imported on first use (PEP 562), so that a part
of the package that needs none of the model (the measurement harness timing
programs on a GPU machine without islpy or pystencils,
``python -m warpspeed.measure run --programs DIR``) imports none of it.
``import warpspeed as ws; ws.predict`` and ``from warpspeed import predict``
work as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Where each public name lives (module relative to this package).
_PUBLIC = {
    ".errors": ("EmptyRankingError", "FitError", "KernelError", "LaunchError", "MachineError",
                "MissingAxisError", "NonAffineError", "OutOfBoundsError", "WarpspeedError",
                "WorkerError"),
    ".input.atomics": ("Atomics",),
    ".input.expr": ("blockDim", "blockIdx", "threadIdx", "tidx", "tidy", "tidz"),
    ".input.gathers": ("Gather",),
    ".input.kernel": ("Access", "Field", "Kernel"),
    ".machine": ("Machine", "machines"),
    ".model": ("AccessTraits", "Prediction", "Volumes", "load_machine", "predict"),
    ".reports.advice": ("Advice", "advise"),
    ".search.rank": ("Ranking", "rank"),
    ".volumes.capacity": ("CapacityFits", "Gompertz", "fit_gompertz", "load_fits"),
}
_HOME = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:
    from .errors import (
        EmptyRankingError,
        FitError,
        KernelError,
        LaunchError,
        MachineError,
        MissingAxisError,
        NonAffineError,
        OutOfBoundsError,
        WarpspeedError,
        WorkerError,
    )
    from .input.atomics import Atomics
    from .input.expr import blockDim, blockIdx, threadIdx, tidx, tidy, tidz
    from .input.gathers import Gather
    from .input.kernel import Access, Field, Kernel
    from .machine import Machine, machines
    from .model import AccessTraits, Prediction, Volumes, load_machine, predict
    from .reports.advice import Advice, advise
    from .search.rank import Ranking, rank
    from .volumes.capacity import CapacityFits, Gompertz, fit_gompertz, load_fits


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use; else a
    submodule (``ws.model``), as an eager package would have it."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name], __name__), name)
        globals()[name] = value
        return value
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "Access",
    "AccessTraits",
    "Atomics",
    "Gather",
    "Advice",
    "Ranking",
    "advise",
    "rank",
    "CapacityFits",
    "EmptyRankingError",
    "Field",
    "FitError",
    "Gompertz",
    "Kernel",
    "KernelError",
    "LaunchError",
    "Machine",
    "MachineError",
    "MissingAxisError",
    "NonAffineError",
    "OutOfBoundsError",
    "Prediction",
    "Volumes",
    "WarpspeedError",
    "WorkerError",
    "blockDim",
    "blockIdx",
    "fit_gompertz",
    "load_fits",
    "load_machine",
    "machines",
    "predict",
    "threadIdx",
    "tidx",
    "tidy",
    "tidz",
]
