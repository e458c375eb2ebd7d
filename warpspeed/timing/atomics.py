"""The atomics limiter on top of every timing model (MODEL.md §8; the model of
:mod:`warpspeed.input.atomics`), a :class:`~warpspeed.timing.base.Limiter`.

Atomics to one address serialise in the L2 slice that owns it, in parallel
with everything else the kernel does: the atomics limit joins the model's
limits, and the prediction is the lower of the model's GLup/s and that
limit (:func:`~warpspeed.timing.base.with_limiters`). The rate is the
machine file's ``[atomics.per_clock]`` (:class:`AtomicsParameters`). The
terms add ``atomics_per_lup`` (atomics to one address per lattice update),
``atomics_per_clock`` (the machine's rate) and ``t_atomics_ns`` (their time
per lattice update).

A warp reduction counts the warp its code was generated for
(:attr:`warpspeed.input.atomics.Atomics.warp`): narrower than the machine's
wavefront (code for 32 lanes on wave64), each 32 lanes issue their own
atomic, noted (:func:`warp_note`); wider, its shuffle steps assume lanes
the machine's warp does not have, and it is refused."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import KernelError
from ..input.atomics import Atomics, limit
from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from . import tables
from .base import Limiter
from .tables import ParameterTable


@dataclass(frozen=True)
class AtomicsParameters:
    """The atomics limiter's table of a machine file, ``[atomics]`` (MODEL.md §12)."""

    #: Atomic updates of one global address per core clock.
    per_clock: float


#: The limiter's table (:mod:`warpspeed.timing.tables`).
ATOMICS_TABLE = ParameterTable(
    "atomics", AtomicsParameters,
    "a kernel with a reduction (same-address atomics per core clock); add it to its machine "
    "file with its value and source")


@dataclass(frozen=True)
class AtomicsLimiter(Limiter):
    """The atomics limit (module docstring)."""

    def limit(self, kernel: Kernel, machine: Machine,
              launch: Launch) -> tuple[float, dict[str, float]] | None:
        """The atomics' GLup/s and terms; None without atomics (MODEL.md §8)."""
        if kernel.atomics is None:
            return None
        _check_warp(kernel.atomics, machine)
        rate = tables.require(machine, ATOMICS_TABLE).per_clock
        glups, per_lup = limit(kernel.atomics, launch.block, kernel.lups_per_thread,
                               machine.clock_ghz, rate, machine.warp_size)
        return glups, {"atomics_per_lup": per_lup, "atomics_per_clock": rate,
                       "t_atomics_ns": 1.0 / glups}


#: The atomics limiter, registered in :data:`warpspeed.timing.SHARED_LIMITERS`.
ATOMICS = AtomicsLimiter("atomics", ATOMICS_TABLE)


def _check_warp(atomics: Atomics, machine: Machine) -> None:
    """Refuse a warp reduction generated for wider warps than the machine's
    (module docstring; MODEL.md §8)."""
    if atomics.warp is not None and atomics.warp > machine.warp_size:
        raise KernelError(
            f"the kernel's warp reduction was generated with gpu.warp_size = {atomics.warp}, "
            f"but {machine.name} runs warps of {machine.warp_size} lanes: its shuffle steps assume "
            f"lanes that do not exist there; generate it with "
            f"cfg.gpu.warp_size = {machine.warp_size}"
        )


def warp_note(kernel: Kernel, machine: Machine) -> str | None:
    """A note on a warp reduction generated for narrower warps than the
    machine's, as counted (module docstring; MODEL.md §8), else None."""
    a = kernel.atomics
    if a is None or a.warp is None or a.warp >= machine.warp_size:
        return None
    return (f"the kernel's warp reduction was generated with gpu.warp_size = {a.warp}, "
            f"{machine.name} runs warps of {machine.warp_size} lanes: counted as the code runs, "
            f"one atomic per {a.warp} threads (gpu.warp_size = {machine.warp_size} would issue "
            f"{machine.warp_size / a.warp:g}x fewer)")


__all__ = ["ATOMICS", "ATOMICS_TABLE", "AtomicsLimiter", "AtomicsParameters", "warp_note"]
