"""Exception classes. Every message says what is wrong and how to fix it."""


class WarpspeedError(Exception):
    """Base class of all errors raised by warpspeed for bad input."""


class KernelError(WarpspeedError, ValueError):
    """A kernel description is invalid: bad field, index expression or domain."""


class NonAffineError(KernelError):
    """An index expression is not quasi-affine in the thread coordinates (MODEL.md §1)."""


class LaunchError(WarpspeedError, ValueError):
    """A launch configuration (block size, fold) is invalid or cannot run on the machine."""


class MachineError(WarpspeedError, ValueError):
    """A machine name is unknown or a machine file is malformed."""


class FitError(WarpspeedError, ValueError):
    """A capacity-curve file is unknown or malformed, or a fit failed."""


class MissingAxisError(KernelError):
    """A fold along an axis the kernel's fields do not have (a 2-D kernel
    folded in z); a ranking's default folds leave such a fold out."""


class OutOfBoundsError(KernelError):
    """An access reaches outside its field's extent (ghost layers included)
    for some thread of the kernel's domain."""


class EmptyRankingError(LaunchError):
    """Nothing could be ranked; ``reasons`` holds why, one line per skipped
    variant or excluded configuration (they are also in the message)."""

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)


class WorkerError(WarpspeedError, RuntimeError):
    """A worker process of a ranking ended before its work was done. Since
    issue 46 warpspeed's own rankings no longer raise it: the caller's
    process does the work of a worker that fails and a note says so
    (:mod:`warpspeed.search.workers`); the class stays for code that
    catches it."""
