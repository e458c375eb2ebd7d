"""The volume breakdown: each volume of :class:`~warpspeed.volumes.levels.Volumes`
split into the parts that make it (MODEL.md §5-§6), for the figures of
:mod:`warpspeed.reports.plot` and for anyone who asks why a volume is what it is.

Each volume is split into parts of three
kinds, per lattice update; the ``compulsory`` and ``miss`` parts add up to the
model's volume exactly (up to rounding), the ``hit`` parts are traffic the
model saves by reuse and are *not* part of the volume (drawn hatched, above
it):

* **L2 load** (``Volumes.l2_load``, L2LoadV2 of §5):
  ``compulsory`` = ``l2_load_v1``, the unique sectors of the whole block;
  ``miss`` = ``l2_load - l2_load_v1`` = ``(l1_load - l2_load_v1) * m1(O1)``,
  redundant loads the L1 lost to capacity misses;
  ``hit`` = ``l1_load - l2_load``, redundant loads served by the L1.
* **L2 store** (``Volumes.l2_store``): all ``compulsory`` (write-through).
* **DRAM load** (``Volumes.dram_load``, memLoadV3 of §6). With ``lups`` the
  lattice updates of the representative wave (valid threads times the fold
  product) and the wave's byte counts of :class:`~warpspeed.volumes.waves.WaveVolumes`:
  ``compulsory`` = ``(New_load - Overlap_xy - Overlap_z) / lups``, the part
  of memLoadV1 not covered by the images of the earlier x/y and z sets (the
  overlaps are disjoint parts of the current image by construction of §6);
  ``miss`` (x/y) = ``Overlap_xy * (1 - h_xy(O_xy)) / lups`` and
  ``miss`` (z) = ``Overlap_z * (1 - h_z(O_z)) / lups``: reuse from earlier
  waves lost to L2 capacity (the layer conditions);
  ``miss`` (store evictions) = ``storeEvicts``, evicted partial store lines
  read again; ``miss`` (L1 re-reads, default model only) =
  ``dram_load_rereads``; the two make ``memLoadV3 - memLoadV2``;
  ``hit`` (x/y, z) = ``Overlap_i * h_i(O_i) / lups``, the reuse that the
  L2 delivers. compulsory + the two overlap misses = memLoadV2.
  With ``dram_load="v4"`` the volume is memLoadV4 and one more ``miss``
  part ``memLoadV4 - memLoadV3`` = ``loadEvicts`` (capacity misses of the
  wave's own L2 reuse, ``m2(O2)``) is added.
* **DRAM store** (``Volumes.dram_store``, memStoreV2):
  ``compulsory`` = memStoreV1 (the wave's store sectors), ``miss`` =
  ``memStoreV2 - memStoreV1`` = ``storeEvicts``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..model import Prediction

Kind = Literal["compulsory", "miss", "hit"]
LEVELS: tuple[str, ...] = ("l2_load", "l2_store", "dram_load", "dram_store")


@dataclass(frozen=True)
class Part:
    """One part of a volume, in B per lattice update (module docstring)."""

    label: str
    kind: Kind
    value: float


@dataclass(frozen=True)
class LevelBreakdown:
    """The parts of one volume. ``volume`` is the model's number; the
    ``compulsory`` and ``miss`` parts sum to it, ``hit`` parts are saved
    traffic outside it."""

    level: str
    volume: float
    parts: tuple[Part, ...]

    @property
    def transferred(self) -> float:
        """Sum of the compulsory and miss parts (equals ``volume``)."""
        return sum(p.value for p in self.parts if p.kind != "hit")

    @property
    def saved(self) -> float:
        """Sum of the hit parts: traffic avoided by reuse."""
        return sum(p.value for p in self.parts if p.kind == "hit")


def volume_breakdown(
    prediction: Prediction, dram_load: Literal["v3", "v4"] = "v3"
) -> dict[str, LevelBreakdown]:
    """Split the L2 and DRAM volumes of ``prediction`` into compulsory,
    capacity-miss and hit parts (MODEL.md §5-§6; the decomposition is
    defined in the module docstring). Keys are :data:`LEVELS`."""
    if dram_load not in ("v3", "v4"):
        raise ValueError(f"dram_load must be 'v3' or 'v4', got {dram_load!r}")
    v, w, h = prediction.volumes, prediction.wave, prediction.hit_fractions
    lups = w.threads * math.prod(prediction.fold)
    per = 1.0 / lups if lups > 0 else 0.0
    ovl_xy, ovl_z = w.overlap

    l2_load = LevelBreakdown("l2_load", v.l2_load, (
        Part("compulsory", "compulsory", v.l2_load_v1),
        Part("L1 capacity misses", "miss", v.l2_load - v.l2_load_v1),
        Part("L1 hits", "hit", v.l1_load - v.l2_load),
    ))
    l2_store = LevelBreakdown("l2_store", v.l2_store, (
        Part("compulsory", "compulsory", v.l2_store),
    ))
    load_parts = [
        Part("compulsory", "compulsory", (w.new_load - ovl_xy - ovl_z) * per),
        Part("x/y reuse lost", "miss", ovl_xy * (1.0 - h["h_xy"]) * per),
        Part("z reuse lost", "miss", ovl_z * (1.0 - h["h_z"]) * per),
        Part("store evictions", "miss", v.dram_load - v.dram_load_v2 - v.dram_load_rereads),
        Part("L1 re-reads missing the L2", "miss", v.dram_load_rereads),
    ]
    total = v.dram_load
    if dram_load == "v4":
        load_parts.append(Part("L2 capacity misses", "miss", v.dram_load_v4 - v.dram_load))
        total = v.dram_load_v4
    load_parts += [
        Part("x/y reuse hits", "hit", ovl_xy * h["h_xy"] * per),
        Part("z reuse hits", "hit", ovl_z * h["h_z"] * per),
    ]
    dram_load_bd = LevelBreakdown("dram_load", total, tuple(load_parts))
    dram_store = LevelBreakdown("dram_store", v.dram_store, (
        Part("compulsory", "compulsory", v.dram_store_v1),
        Part("store evictions", "miss", v.dram_store - v.dram_store_v1),
    ))
    return {
        "l2_load": l2_load, "l2_store": l2_store,
        "dram_load": dram_load_bd, "dram_store": dram_store,
    }


__all__ = ["LEVELS", "Kind", "LevelBreakdown", "Part", "volume_breakdown"]
