"""Bytes in flight and achieved DRAM bandwidth (Little's law), calibrated on
public stream micro-benchmarks (te42kyfo/gpu-benches, commit 1c36d50, in
``shared/data/microbench``; see ``fits/calibrate_flight.py``).

Physics: a load waits a memory latency ``L`` before its bytes arrive, so
``C`` bytes of loads in flight on the whole GPU move at most ``C / L`` bytes
per ns (GB/s). Stores do not wait for DRAM: they leave the SM at once, and
they move with the loads in the kernel's proportion, so a mix whose load
fraction (by bytes) is ``f`` moves ``C / (L f)`` in total. The DRAM itself
saturates at the bandwidth of the mix, interpolated linearly in ``f``
between the measured plateaus of stores only (``init``, ``f = 0``), copy
(``scale``, ``f = 1/2``) and loads only (``read``, ``f = 1``). Between the
two regimes the transition is a smooth minimum of sharpness ``n``:
``BW = x / (1 + (x / B_sat)^n)^(1/n)`` with ``x = C / (L f)``.

Per machine, ``L`` (the latency under streaming load; the pointer-chasing
DRAM plateau is its unloaded value and starting point) and ``n`` are fitted
to the read, scale and triad curves of the stream table, where every thread
keeps one 8 B load per input array in flight.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MemoryParams:
    """DRAM latency (ns) and the saturated bandwidths (GB/s) of the three
    measured mixes, with the sharpness of the transition."""

    dram_latency_ns: float
    dram_bw_read: float
    dram_bw_copy: float
    dram_bw_write: float
    shape: float


def saturated_bandwidth(p: MemoryParams, load_fraction: float) -> float:
    """The plateau bandwidth of a mix with ``load_fraction`` of its bytes
    loaded: linear between the stores-only, copy and loads-only plateaus."""
    _check_fraction(load_fraction)
    if load_fraction <= 0.5:
        return p.dram_bw_write + (p.dram_bw_copy - p.dram_bw_write) * 2.0 * load_fraction
    return p.dram_bw_copy + (p.dram_bw_read - p.dram_bw_copy) * (2.0 * load_fraction - 1.0)


def achieved_bandwidth(p: MemoryParams, load_bytes_in_flight: float, load_fraction: float
                       ) -> float:
    """GB/s moved (loads and stores) with ``load_bytes_in_flight`` bytes of
    loads outstanding on the whole GPU (module docstring). A mix without
    loads is never latency bound."""
    _check_fraction(load_fraction)
    if load_bytes_in_flight < 0:
        raise ValueError(f"bytes in flight must be non-negative, got {load_bytes_in_flight}")
    sat = saturated_bandwidth(p, load_fraction)
    if load_fraction == 0.0:
        return sat
    x = load_bytes_in_flight / (p.dram_latency_ns * load_fraction)
    if x == 0.0:
        return 0.0
    return x / (1.0 + (x / sat) ** p.shape) ** (1.0 / p.shape)


def _check_fraction(f: float) -> None:
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"load_fraction must lie in [0, 1], got {f}")


__all__ = ["MemoryParams", "achieved_bandwidth", "saturated_bandwidth"]
