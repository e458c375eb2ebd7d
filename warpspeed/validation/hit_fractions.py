"""Measured hit fractions of the capacity curves (MODEL.md §7, §9): what one
measured configuration says about each curve, by inverting the model's
balance (MODEL.md §6). A :class:`Point` holds the model's fit-independent
quantities of a configuration (from its :class:`warpspeed.Prediction`, any
fits) and the measured volumes; :mod:`warpspeed.validation.refit` fits the curves to
the hit fractions computed here. All volumes are per lattice update.

``m1`` (MODEL.md §9), x = ``O1``::

    m1 = (measured L2 load - L2LoadV1) / (L1Load - L2LoadV1)

``s`` (analogue), x = ``O2``: the model's store balance is
``memStoreV2 = memStoreV1 + max(0, L2Store - memStoreV1) * s(O2)``, so::

    s = (measured DRAM store - memStoreV1) / (L2Store - memStoreV1)

``h_xy``, ``h_z`` (MODEL.md §9, ``(V1 - measured) / overlap``), with x =
``O_xy``, ``O_z``. Two refinements of that formula, both exact inversions
of the model's balance (MODEL.md §6):

* the store evictions that the model adds to the loads (``memLoadV3 =
  memLoadV2 + storeEvicts``) are added back first, with the refitted ``s``:
  the reuse is ``H = V1 + storeEvicts - measured DRAM load``;
* a configuration has two overlaps, x/y and z, and one measurement. ``H``
  is split by backfitting: the x/y hit fraction of a point is
  ``(H - Ovl_z * h_z(O_z)) / Ovl_xy`` with the current ``h_z``, and
  vice versa; the two curves are refitted in turn (``inner`` rounds of
  :func:`warpspeed.validation.refit.refit`, starting from the prior curves). Where one
  overlap is zero the other curve's hit fraction is exact.

``m2`` (analogue), x = ``O2``, with the measured load read as
``memLoadV4 = memLoadV3 + (L2LoadV2 - memLoadV2) * m2(O2)`` (only with
``dram_model="v4"``; :mod:`warpspeed.validation.refit` says on which configurations)::

    m2 = (measured DRAM load - memLoadV3) / (L2LoadV2 - memLoadV2)

Points whose denominator is below ``min_denominator`` bytes per lattice
update carry no information and are left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import FitError
from ..measure import Measurement
from ..model import Prediction
from ..volumes.capacity import Gompertz
from .pairing import config_key


@dataclass(frozen=True)
class Point:
    """What one measured configuration says about the curves: model
    quantities per lattice update (fit-independent) and the measurement."""

    key: str
    o1: float
    o_xy: float
    o_z: float
    o2: float
    l1_load: float
    l2_load_v1: float
    l2_store: float
    dram_load_v1: float
    dram_store_v1: float
    overlap_xy: float
    overlap_z: float
    measured_l2_load: float | None
    measured_dram_load: float | None
    measured_dram_store: float | None


def point(m: Measurement, p: Prediction) -> Point:
    """The :class:`Point` of a measurement and its prediction."""
    if tuple(p.block) != tuple(m.block) or tuple(p.fold) != tuple(m.fold):
        raise FitError(
            f"prediction {p.block}/{p.fold} does not belong to measurement {config_key(m)}"
        )
    lups = p.wave.threads * math.prod(p.fold)
    v = p.volumes
    o = p.oversubscription
    return Point(
        key=config_key(m),
        o1=o["o1"],
        o_xy=o["o_xy"],
        o_z=o["o_z"],
        o2=o["o2"],
        l1_load=v.l1_load,
        l2_load_v1=v.l2_load_v1,
        l2_store=v.l2_store,
        dram_load_v1=v.dram_load_v1,
        dram_store_v1=v.dram_store_v1,
        overlap_xy=p.wave.overlap[0] / lups,
        overlap_z=p.wave.overlap[1] / lups,
        measured_l2_load=m.l2_load,
        measured_dram_load=m.dram_load,
        measured_dram_store=m.dram_store,
    )


# ---------------------------------------------------------------- hit fractions per curve

Samples = tuple[np.ndarray, np.ndarray]


def _samples(pairs: list[tuple[float, float]]) -> Samples:
    if not pairs:
        return np.zeros(0), np.zeros(0)
    xs, ys = zip(*pairs)
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def m1_fractions(points: Sequence[Point], min_denominator: float = 1e-3) -> Samples:
    """(O1, m1) per point: ``(measured L2 load - L2LoadV1) / (L1Load - L2LoadV1)``."""
    out = []
    for q in points:
        den = q.l1_load - q.l2_load_v1
        if q.measured_l2_load is not None and den > min_denominator:
            out.append((q.o1, (q.measured_l2_load - q.l2_load_v1) / den))
    return _samples(out)


def s_fractions(points: Sequence[Point], min_denominator: float = 1e-3) -> Samples:
    """(O2, s) per point: ``(measured store - memStoreV1) / (L2Store - memStoreV1)``."""
    out = []
    for q in points:
        den = q.l2_store - q.dram_store_v1
        if q.measured_dram_store is not None and den > min_denominator:
            out.append((q.o2, (q.measured_dram_store - q.dram_store_v1) / den))
    return _samples(out)


def _l2_load(q: Point, m1: Gompertz) -> float:
    return q.l2_load_v1 + (q.l1_load - q.l2_load_v1) * m1(q.o1)


def _store_evicts(q: Point, s: Gompertz) -> float:
    return max(0.0, q.l2_store - q.dram_store_v1) * s(q.o2)


def reuse(q: Point, m1: Gompertz, s: Gompertz, m2: Gompertz | None) -> float | None:
    """Bytes per lattice update that the measured DRAM load shows were
    reused from earlier waves (``H`` of the module doc); ``m2=None`` reads
    the measurement as memLoadV3."""
    if q.measured_dram_load is None:
        return None
    se = _store_evicts(q, s)
    if m2 is None:
        return q.dram_load_v1 + se - q.measured_dram_load
    f = m2(q.o2)
    if f >= 1.0:
        return None
    l2 = _l2_load(q, m1)
    return (q.dram_load_v1 + se + (l2 - q.dram_load_v1) * f - q.measured_dram_load) / (1.0 - f)


def overlap_fractions(
    points: Sequence[Point], reuses: Sequence[float | None], other: Gompertz, which: str,
    min_denominator: float = 1e-3,
) -> Samples:
    """(O, h) for ``which`` in ("xy", "z"), the other overlap's share taken
    with the curve ``other``: ``(H - Ovl_other * other(O_other)) / Ovl``."""
    out = []
    for q, h in zip(points, reuses):
        if h is None:
            continue
        if which == "xy":
            ovl, x, rest = q.overlap_xy, q.o_xy, q.overlap_z * other(q.o_z)
        else:
            ovl, x, rest = q.overlap_z, q.o_z, q.overlap_xy * other(q.o_xy)
        if ovl > min_denominator:
            out.append((x, (h - rest) / ovl))
    return _samples(out)


def m2_fractions(
    points: Sequence[Point], m1: Gompertz, s: Gompertz, h_xy: Gompertz, h_z: Gompertz,
    min_denominator: float = 1e-3,
) -> Samples:
    """(O2, m2) per point: ``(measured - memLoadV3) / (L2LoadV2 - memLoadV2)``."""
    out = []
    for q in points:
        if q.measured_dram_load is None:
            continue
        v2 = q.dram_load_v1 - q.overlap_xy * h_xy(q.o_xy) - q.overlap_z * h_z(q.o_z)
        v3 = v2 + _store_evicts(q, s)
        den = _l2_load(q, m1) - v2
        if den > min_denominator:
            out.append((q.o2, (q.measured_dram_load - v3) / den))
    return _samples(out)


__all__ = [
    "Point",
    "Samples",
    "m1_fractions",
    "m2_fractions",
    "overlap_fractions",
    "point",
    "reuse",
    "s_fractions",
]
