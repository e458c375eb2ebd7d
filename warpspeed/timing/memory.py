"""DRAM bandwidth from the bytes in flight: Little's law with latency under
load, calibrated on public micro-benchmarks (``fits/calibrate_memory.py``
writes ``fits/memory.toml``; data: te42kyfo/gpu-benches, commit 1c36d50, in
``shared/data/microbench``).

The physics, from the thread's point of view
============================================

A resident thread slot cycles: a thread is launched, computes its index,
issues its accesses, waits for its loads, stores, retires, and the slot
takes the next thread. Little's law for the whole GPU: with ``C`` bytes in
flight (resident threads times the DRAM bytes each moves per residence,
loads and stores) and a residence time ``T`` per thread,

    bandwidth = C / T            (bytes per ns = GB/s).

* **Turnover** ``t0`` (``turnover_ns``): the residence of a thread that waits
  for nothing: launch, index arithmetic, issue, retire. A store-only thread
  (the ``init`` stream) resides exactly this long, because a store is
  posted: it leaves the SM and the thread retires without waiting for DRAM.
  Measured as the shortest ``init`` residence, not fitted.
* **Latency** ``L0`` (``dram_latency_ns``): a thread with any load waits for
  its loads (the loads of one thread are independent and issued together,
  so it waits one latency, not one per load). ``L0`` is the unloaded DRAM
  latency of pointer chasing, not fitted. The residence of a loading thread
  at low concurrency is ``t0 + L0``: its stores ride along.
* **Latency under load**: the DRAM latency grows with the utilisation
  ``u = bandwidth / saturated_bandwidth(mix)``, linearly,

      L(u) = L0 * (1 + shape * (f + STORE_WEIGHT * (1 - f)) * u),

  with ``f`` the load fraction of the bytes: a stored byte raises the
  latency of the loads ``STORE_WEIGHT`` times as much as a loaded byte (read
  / write interference: write drains and bus turnarounds in the DRAM
  controller; the copy and triad curves show their latency rising several
  times faster than the pure read at equal utilisation). ``shape`` is the
  one constant fitted per machine.
* **Saturation**: at the saturated bandwidth ``S(f)`` of the mix the queue in
  front of DRAM takes up every further byte in flight. The residence is
  stretched by ``(1 - u^n)^(-1/n)`` with ``n = WALL_EXPONENT``, so that

      T(u) = (t0 + [f > 0] L(u)) / (1 - u^n)^(1/n),   bandwidth = u S = C / T(u),

  which for a constant ``L`` is exactly the ``n``-norm smooth minimum of the
  latency-bound line ``C / (t0 + L)`` and ``S``. The achieved bandwidth is
  the unique root ``u`` of ``u S T(u) = C``: it is ``C / (t0 + L0)`` for few
  bytes in flight (``C / t0`` for stores only), grows monotonically with
  ``C`` and tends to ``S(f)``.

``WALL_EXPONENT`` and ``STORE_WEIGHT`` are global constants, the same for
every machine, chosen once on the stream tables of all five calibrated GPUs;
only ``shape`` is fitted per machine.

Assumptions: the stream kernels' pattern (one element per thread, the grid
many waves deep, so slots turn over), DRAM traffic in whole sectors (no
write-allocate reads for full-sector stores), and a whole-GPU view (all SMs
equally loaded). A mix with no load at all (``f = 0``) is never latency
bound, any load makes the thread wait ``L``: the residence jumps at
``f = 0``, as it does for a real thread.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields

#: Exponent ``n`` of the saturation wall ``(1 - u^n)^(-1/n)`` (sharpness of
#: the smooth minimum between the latency-bound line and the plateau).
WALL_EXPONENT: float = 5.0
#: How much more a stored byte raises the loaded latency than a loaded byte.
STORE_WEIGHT: float = 4.0
#: Relative tolerance of the root (four machine epsilons).
_RTOL = 4 * sys.float_info.epsilon


@dataclass(frozen=True)
class MemoryParams:
    """Memory-concurrency parameters of one machine (ns, GB/s).

    * ``dram_latency_ns``: unloaded DRAM latency, the DRAM plateau of pointer
      chasing (physics, not fitted).
    * ``l2_latency_ns``: unloaded L2 latency, the (near) L2 plateau of pointer
      chasing; for Little's law on L2 traffic.
    * ``dram_bw_read``, ``dram_bw_copy``, ``dram_bw_write``: saturated DRAM
      bandwidth of loads only, of one load per store (copy) and of stores
      only: the plateaus of the stream tables' read, scale and init columns.
    * ``shape``: the one fitted constant, the latency-under-load coefficient
      (module docstring); 0 keeps the latency at ``dram_latency_ns`` until
      the saturation wall.
    * ``turnover_ns``: residence of a thread slot that waits for no load
      (launch, issue, retire), the shortest residence of the stream tables'
      init column. Defaults to 0 only for callers that predate it: with 0,
      low-concurrency bandwidth is overestimated by ``(t0 + L0) / L0``.
    """

    dram_latency_ns: float
    l2_latency_ns: float
    dram_bw_read: float
    dram_bw_copy: float
    dram_bw_write: float
    shape: float
    turnover_ns: float = 0.0

    def __post_init__(self) -> None:
        positive = ("dram_latency_ns", "l2_latency_ns", "dram_bw_read", "dram_bw_copy",
                    "dram_bw_write")
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"MemoryParams.{f.name} must be a finite number, got {value!r}")
            if f.name in positive and value <= 0:
                raise ValueError(f"MemoryParams.{f.name} must be positive, got {value}")
            if value < 0:
                raise ValueError(f"MemoryParams.{f.name} must be non-negative, got {value}")


def saturated_bandwidth(params: MemoryParams, load_fraction: float) -> float:
    """Saturated DRAM bandwidth (GB/s) of a mix whose bytes are a fraction
    ``load_fraction`` loads and the rest stores.

    Interpolation: the DRAM busy time per byte, ``1 / S``, is linear in the
    load fraction between the measured mixes, stores only (``f = 0``), copy
    (``f = 1/2``) and loads only (``f = 1``):

        1/S(f) = (1 - 2f) / S_write + 2f / S_copy           for f <= 1/2,
        1/S(f) = (2 - 2f) / S_copy + (2f - 1) / S_read      for f >= 1/2.

    Physically: every byte costs its own transfer time, and mixing costs bus
    turnarounds whose number per byte grows with the share of the minority
    direction, ``2 min(f, 1 - f)``; the copy plateau measures them. At the
    three end points the interpolation returns the measured plateaus.
    """
    f = _fraction(load_fraction)
    if f <= 0.5:
        per_byte = (1.0 - 2.0 * f) / params.dram_bw_write + 2.0 * f / params.dram_bw_copy
    else:
        per_byte = (2.0 - 2.0 * f) / params.dram_bw_copy + (2.0 * f - 1.0) / params.dram_bw_read
    return 1.0 / per_byte


def loaded_latency_ns(params: MemoryParams, utilisation: float, load_fraction: float) -> float:
    """DRAM latency (ns) of a load at DRAM utilisation ``utilisation`` (achieved
    over saturated bandwidth of the mix, in [0, 1]): ``L0`` unloaded, rising
    linearly, stores weighing ``STORE_WEIGHT`` times a load (module
    docstring). The queue of the saturation wall is not included."""
    f = _fraction(load_fraction)
    u = _fraction(utilisation, "utilisation")
    weight = f + STORE_WEIGHT * (1.0 - f)
    return params.dram_latency_ns * (1.0 + params.shape * weight * u)


def residence_time_ns(params: MemoryParams, utilisation: float, load_fraction: float) -> float:
    """Time (ns) a thread slot stays occupied at DRAM utilisation
    ``utilisation``: turnover, plus the loaded latency if the mix has loads,
    stretched by the saturation wall ``(1 - u^n)^(-1/n)`` (infinite at
    ``u = 1``). Little's law: bandwidth = bytes in flight / this time."""
    f = _fraction(load_fraction)
    u = _fraction(utilisation, "utilisation")
    if u >= 1.0:
        return math.inf
    return _unwalled(params, u, f) / (1.0 - u**WALL_EXPONENT) ** (1.0 / WALL_EXPONENT)


def achieved_bandwidth(params: MemoryParams, bytes_in_flight: float, load_fraction: float
                       ) -> float:
    """DRAM bandwidth (GB/s, loads and stores together) achieved with
    ``bytes_in_flight`` bytes in flight on the whole GPU, a fraction
    ``load_fraction`` of them loads.

    ``bytes_in_flight``: resident threads times the DRAM bytes (loads and
    stores) each moves in one residence. Solves Little's law with latency
    under load, ``bandwidth = bytes_in_flight / T(u)``, ``u = bandwidth /
    saturated_bandwidth`` (module docstring): ``bytes / (t0 + L0)`` at low
    concurrency (``bytes / t0`` for stores only), monotonically rising,
    approaching :func:`saturated_bandwidth` at high concurrency.
    """
    f = _fraction(load_fraction)
    c = float(bytes_in_flight)
    if not math.isfinite(c) or c < 0:
        raise ValueError(f"bytes_in_flight must be a finite number >= 0, got {bytes_in_flight!r}")
    sat = saturated_bandwidth(params, f)
    if c == 0.0:
        return 0.0
    base0 = _unwalled(params, 0.0, f)
    if base0 == 0.0:  # stores only with zero turnover: never latency bound
        return sat
    n = WALL_EXPONENT
    hi = min(1.0, c / (sat * base0))  # the unloaded Little's-law line bounds the root

    def excess(u: float) -> float:
        # u S T(u) - C, multiplied through by the wall factor (finite at u = 1)
        return u * sat * _unwalled(params, u, f) - c * (1.0 - u**n) ** (1.0 / n)

    if excess(hi) <= 0.0:
        return hi * sat
    return bisect(excess, 0.0, hi, xtol=1e-15 * hi) * sat


def bisect(f: Callable[[float], float], lo: float, hi: float, xtol: float) -> float:
    """The root of ``f``, rising through zero once between ``lo`` (``f <=
    0``) and ``hi`` (``f > 0``), within ``xtol + _RTOL * |root|``: interval
    halving, about 50 steps for this module's tolerances. Plain Python so that
    a first prediction does not import scipy.optimize (half a second)."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if hi - lo <= xtol + _RTOL * abs(mid) or mid in (lo, hi):
            return mid
        if f(mid) <= 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _unwalled(params: MemoryParams, u: float, f: float) -> float:
    """Residence before the saturation wall: turnover plus, with loads, the
    loaded latency."""
    if f == 0.0:
        return params.turnover_ns
    weight = f + STORE_WEIGHT * (1.0 - f)
    return params.turnover_ns + params.dram_latency_ns * (1.0 + params.shape * weight * u)


def _fraction(value: float, name: str = "load_fraction") -> float:
    x = float(value)
    if not 0.0 <= x <= 1.0:  # also rejects NaN
        raise ValueError(f"{name} must lie in [0, 1], got {value!r}")
    return x


__all__ = [
    "STORE_WEIGHT",
    "WALL_EXPONENT",
    "MemoryParams",
    "achieved_bandwidth",
    "loaded_latency_ns",
    "residence_time_ns",
    "saturated_bandwidth",
]
