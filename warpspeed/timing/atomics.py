"""The atomics limiter on top of a timing model (MODEL.md §8; the model of
:mod:`warpspeed.input.atomics`).

Atomics to one address serialise in the L2 slice that owns it, in parallel
with everything else the kernel does: the atomics limit joins the model's
limits, and the prediction is the lower of the model's GLup/s and that
limit. The terms add ``atomics_per_lup`` (atomics to one address per
lattice update), ``atomics_per_clock`` (the machine's rate) and
``t_atomics_ns`` (their time per lattice update).

A warp reduction counts the warp its code was generated for
(:attr:`warpspeed.input.atomics.Atomics.warp`): narrower than the machine's
wavefront (code for 32 lanes on wave64), each 32 lanes issue their own
atomic, noted (:func:`warp_note`); wider, its shuffle steps assume lanes
the machine's warp does not have, and it is refused."""

from __future__ import annotations

from dataclasses import replace

from ..errors import KernelError, MachineError
from ..input.atomics import Atomics, limit
from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from .base import TimingResult


def with_atomics(t: TimingResult, kernel: Kernel, machine: Machine, launch: Launch) -> TimingResult:
    """``t`` with the atomics limiter of ``kernel`` (unchanged without
    atomics; MODEL.md §8)."""
    if kernel.atomics is None:
        return t
    _check_warp(kernel.atomics, machine)
    rate = machine.atomics_per_clock
    if rate is None:
        raise MachineError(
            f"machine {machine.name} has no [atomics_per_clock] (same-address atomics per "
            "clock), which a kernel with a reduction needs; add it to its machine file"
        )
    glups, per_lup = limit(kernel.atomics, launch.block, kernel.lups_per_thread,
                           machine.clock_ghz, rate, machine.warp_size)
    limits = {**t.limits, "atomics": glups}
    terms = {**t.terms, "atomics_per_lup": per_lup, "atomics_per_clock": rate,
             "t_atomics_ns": 1.0 / glups}
    if glups < t.glups:
        return replace(t, glups=glups, limiter="atomics", limits=limits, terms=terms)
    return replace(t, limits=limits, terms=terms)


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


__all__ = ["warp_note", "with_atomics"]
