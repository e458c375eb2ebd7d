"""Atomic updates of one address: the reduction limiter (MODEL.md §8,
a limiter beside FP, L1, L2 and DRAM).

A reduction (pystencils' ``reduction_assignment``: a sum, product, min or
max into one scalar) accumulates per thread and then updates the scalar
with a global atomic. Atomics to *one* address cannot proceed in parallel:
the L2 slice that owns the address performs them one after the other, so
their rate is that slice's, whatever the number of SMs. The machine gives
it as ``atomics_per_clock`` (same-address atomics per core clock; NVIDIA's
Kepler GK110 whitepaper documents one per clock; no public figure exists
for later GPUs, whose machine files mark the value an estimate).

How many atomics a thread issues depends on the pre-reduction the code
generator emits (``scope``):

* ``"thread"``: every thread issues its own atomic (pystencils' default);
* ``"warp"``: a shuffle reduction first, then one atomic per warp
  (pystencils with ``assume_warp_aligned_block_size`` and a warp size).
  The warp is the one the code was generated for (``warp``, pystencils'
  ``gpu.warp_size``), else the machine's: code for 32 lanes on a 64-wide
  wavefront issues one atomic per 32 threads; code for more lanes than
  the machine's warp is wrong there and refused
  (:mod:`warpspeed.timing.atomics`);
* ``"block"``: a block reduction (CUB), then one atomic per block.

Threads whose partial value equals the neutral element skip the atomic in
pystencils' code; that depends on the data, and every thread is assumed to
issue it (an upper bound on the atomics, a lower bound on the speed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import KernelError

SCOPES = ("thread", "warp", "block")


@dataclass(frozen=True)
class Atomics:
    """Atomic updates of single addresses (module docstring): ``count``
    atomics per issuing unit to each of ``addresses`` distinct addresses
    (one per reduced scalar; distinct addresses proceed in parallel), the
    issuing unit being a thread, a warp or a block (``scope``). ``warp``:
    the lanes of a warp-scope pre-reduction as generated (None: the
    machine's warp)."""

    count: int = 1
    scope: str = "thread"
    addresses: int = 1
    warp: int | None = None

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise KernelError(f"atomics scope must be one of {SCOPES}, got {self.scope!r}")
        for name in ("count", "addresses"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise KernelError(f"atomics {name} must be a positive integer, got {v!r}")
        w = self.warp
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1
                              or self.scope != "warp"):
            raise KernelError(f"atomics warp must be a positive integer of a scope='warp' "
                              f"pre-reduction (or None), got {w!r} with scope {self.scope!r}")

    def per_thread(self, block: tuple[int, int, int], warp_size: int = 32) -> float:
        """Atomics one thread issues to one address, on average (MODEL.md
        §8); a warp is ``warp`` lanes, else the machine's ``warp_size``."""
        threads = math.prod(block)
        lanes = self.warp or warp_size
        per = {"thread": 1, "warp": min(lanes, threads), "block": threads}[self.scope]
        return self.count / per


def limit(
    atomics: Atomics, block: tuple[int, int, int], lups_per_thread: int,
    clock_ghz: float, per_clock: float, warp_size: int = 32,
) -> tuple[float, float]:
    """The atomics limit in GLup/s and the atomics per lattice update to
    one address (module docstring): ``per_clock * clock`` atomics per ns to
    each address."""
    per_lup = atomics.per_thread(block, warp_size) / lups_per_thread
    return per_clock * clock_ghz / per_lup, per_lup


__all__ = ["SCOPES", "Atomics", "limit"]
