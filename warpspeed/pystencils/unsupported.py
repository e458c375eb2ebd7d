"""Errors of the pystencils frontend (MODEL.md §1: what cannot be modelled
is rejected with a message that names the construct, where it occurs and
what the user can do).

Every class is a :class:`UnsupportedKernelError`, which is a
:class:`warpspeed.KernelError`, so ``except ws.KernelError`` catches them
all; catch a subclass to react to one construct.
"""

from __future__ import annotations

from ..errors import KernelError, NonAffineError


class UnsupportedKernelError(KernelError):
    """A pystencils kernel uses a construct the model cannot describe
    (MODEL.md §1). The subclasses name the construct."""


class CpuTargetError(UnsupportedKernelError):
    """The kernel was generated for a CPU target; warpspeed models GPU kernels."""


class GpuTargetError(UnsupportedKernelError):
    """The kernel was generated for a GPU target no GPU family runs (SYCL):
    warpspeed models the families' targets (:data:`warpspeed.family.TARGETS`)."""


class MissingShapeError(UnsupportedKernelError):
    """The fields have symbolic sizes and no ``shape`` was given to fix them."""


class IndirectAccessError(UnsupportedKernelError):
    """A field is accessed at an address that depends on data: an index
    loaded from memory (index lists of boundary kernels, indirection
    fields) or computed from floating-point values. Such gathers and
    scatters are not quasi-affine."""


class TernaryIndexError(UnsupportedKernelError, NonAffineError):
    """An index contains an integer ternary ``c ? a : b`` (e.g. a periodic
    wrap-around written as a piecewise index)."""


class NonAffineIndexError(UnsupportedKernelError, NonAffineError):
    """An index is not quasi-affine in the thread coordinates: a division
    or modulo by a non-constant, a bit operation, or a product of two
    thread coordinates."""


class ReductionError(UnsupportedKernelError):
    """The kernel reduces into a scalar (``ps.AddReductionAssignment`` and
    friends: a per-thread accumulator and an atomic update)."""


class RedBlackError(UnsupportedKernelError):
    """A parity condition ``(x + y + z) % 2 == c`` switches every second
    thread off (a red-black sweep written as a branch)."""


class BranchError(UnsupportedKernelError):
    """A conditional that is not the guard ``if (ctr < N ...)``: an else
    branch, a condition on data, or an equality on the coordinates."""


class GridStridedLoopError(UnsupportedKernelError):
    """A grid-strided loop (``gridstrided_linear3d`` / ``gridstrided_linear1d``):
    how many points a thread updates depends on the launch grid."""


class MissingParameterError(UnsupportedKernelError):
    """An index, a guard or a loop bound depends on a kernel parameter (a
    symbolic iteration-slice bound such as ``make_slice[sx:ex, ...]``) whose
    value was not given: pass ``params={"sx": 1, ...}``."""


class LoopError(UnsupportedKernelError):
    """A loop with bounds that are not constants, or too many iterations
    to unroll."""


class GuardError(UnsupportedKernelError):
    """The guard does not describe a box of valid thread coordinates."""


class UnsupportedConstructError(UnsupportedKernelError):
    """Any other IR construct outside the model (pointer arithmetic,
    atomics, unknown statements, memory through non-field pointers)."""


def struct_member(field: str, where: str) -> UnsupportedConstructError:
    """The error for a struct member of ``field`` read or written through a
    cast pointer (``where``: the kernel or the statement)."""
    return UnsupportedConstructError(
        f"{where} accesses struct members of {field} through a cast pointer (data kept per "
        "entry of an index list, such as a boundary's force or outflow history); warpspeed "
        "models index lists that are only read and fields of numbers: generate the boundary "
        "without that data (e.g. calculate_force_on_boundary=False) to predict the rest"
    )


__all__ = [
    "BranchError",
    "CpuTargetError",
    "GpuTargetError",
    "GridStridedLoopError",
    "GuardError",
    "IndirectAccessError",
    "LoopError",
    "MissingParameterError",
    "MissingShapeError",
    "NonAffineIndexError",
    "RedBlackError",
    "ReductionError",
    "TernaryIndexError",
    "UnsupportedConstructError",
    "UnsupportedKernelError",
]
