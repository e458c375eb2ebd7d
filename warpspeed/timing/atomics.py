"""The atomics limiter on top of a timing model (MODEL.md §8; the model of
:mod:`warpspeed.input.atomics`).

Atomics to one address serialise in the L2 slice that owns it, in parallel
with everything else the kernel does: the atomics limit joins the model's
limits, and the prediction is the lower of the model's GLup/s and that
limit. The terms add ``atomics_per_lup`` (atomics to one address per
lattice update), ``atomics_per_clock`` (the machine's rate) and
``t_atomics_ns`` (their time per lattice update)."""

from __future__ import annotations

from dataclasses import replace

from ..errors import MachineError
from ..input.atomics import limit
from ..input.kernel import Kernel
from ..machine import Machine
from ..volumes.launch import Launch
from .base import TimingResult


def with_atomics(t: TimingResult, kernel: Kernel, machine: Machine, launch: Launch) -> TimingResult:
    """``t`` with the atomics limiter of ``kernel`` (unchanged without atomics)."""
    if kernel.atomics is None:
        return t
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


__all__ = ["with_atomics"]
