"""warpspeed: analytical GPU performance estimation from address expressions.

Reference: Ernst et al., JPDC 173 (2023). How the paper model and the
default model work: ``MODEL.md`` in this package.
"""

from .errors import (
    EmptyRankingError,
    FitError,
    KernelError,
    LaunchError,
    MachineError,
    NonAffineError,
    OutOfBoundsError,
    WarpspeedError,
    WorkerError,
)
from .input.atomics import Atomics
from .input.expr import blockDim, blockIdx, threadIdx, tidx, tidy, tidz
from .input.gathers import Gather
from .input.kernel import Access, Field, Kernel
from .machine import Machine, load_machine, machines
from .model import Prediction, Volumes, predict
from .reports.advice import Advice, advise
from .search.rank import Ranking, rank
from .volumes.capacity import CapacityFits, Gompertz, fit_gompertz, load_fits

__version__ = "0.1.0"

__all__ = [
    "Access",
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
