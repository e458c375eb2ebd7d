"""Indexed accesses (gathers and scatters): a field accessed at positions
read from an index list (MODEL.md §1 "Accesses", here data-dependent;
§4-§6 their L1 cycles and volumes).

Index-list kernels (lbmpy's boundary kernels, pystencils'
``create_boundary_kernel``) run one thread per list entry: the list is read
contiguously (a regular access of the kernel) and a field is accessed at the
cell the entry names. What the model cannot know is given by the user: the
number of entries and either the positions themselves (from the list,
e.g. lbmpy's boundary handling) or the order of the list:

* with positions, the counts are exact at sector granularity: the L1 load
  and L2 volumes are the unique 32 B sectors per warp (32 consecutive
  entries) and access, the DRAM volume the unique sectors over the whole
  list (compulsory: the list's working set is assumed to stay in the L2,
  true for boundary lists, whose sectors are a small part of the L2), and
  the L1 cycles those of the half warps (the bank conflicts and the 1 KiB
  rule of MODEL.md §4), or of the warp pipe or the served lines where the
  machine's L1 model is one of those (:mod:`warpspeed.volumes.gathers`);
* ``order="random"``: the entries scattered over the domain, every
  position a sector of its own (32 B at every level; a half warp's 16
  positions lie in 16 1 KiB regions: 16 cycles). An upper bound when the
  list holds neighbouring cells in random order: their sectors then merge
  in the L2 before DRAM, which only the list itself shows;
* ``order="sorted"``: consecutive entries are neighbouring cells of the
  contiguous dimension, merged into whole sectors (``itemsize`` bytes per
  entry, the limit of long rows of wall cells). This holds when each value
  of a cell is contiguous over the cells (structures of arrays, lbmpy's
  ``fzyx``), so that the entries naming one value of a row of cells cover
  a contiguous row. In an array of structures (``zyxf``: a cell's values
  adjacent) the entries name different values of nearby cells, and the
  sectors they share depend on which values of each cell the list holds:
  from ``itemsize`` B per entry (every value of every cell) to a 32 B
  sector (one value per cell; lbmpy's D3Q19 channel list on a 130^3
  ``zyxf`` array: 24.8 B read, 24.9 B written). The length cannot tell, so
  the pystencils front end refuses ``"sorted"`` for such a field
  (:func:`warpspeed.pystencils.indexlists.check_sorted`): give the list.

Volumes are per lattice update, here per list entry. This module describes
the access; its volumes and L1 cycles are counted in
:mod:`warpspeed.volumes.gathers` (the input stage imports no later stage).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import KernelError
from .fields import Field

ORDERS = ("sorted", "random")
SECTOR = 32
HALF_WARP = 16


@dataclass(frozen=True, eq=False)
class Gather:
    """One indexed access per list entry: ``field`` at the linear element
    offsets ``positions`` (one per entry, relative to element 0), or, without
    positions, ``length`` entries in ``order`` (module docstring)."""

    field: Field
    store: bool = False
    length: int = 0
    positions: np.ndarray | None = dataclasses.field(default=None, repr=False)
    order: str = "sorted"

    def __post_init__(self) -> None:
        if not all(hasattr(self.field, a) for a in ("name", "itemsize", "base_offset")):
            raise KernelError(f"a gather needs a ws.Field, got {self.field!r}")
        if self.positions is not None:
            pos = np.asarray(self.positions, dtype=np.int64).ravel()
            object.__setattr__(self, "positions", pos)
            object.__setattr__(self, "length", int(pos.size))
        elif self.order not in ORDERS:
            raise KernelError(
                f"a gather without positions needs order in {ORDERS}, got {self.order!r}"
            )
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 1:
            raise KernelError(
                f"a gather needs a positive number of list entries, got {self.length!r}"
            )


__all__ = ["ORDERS", "SECTOR", "HALF_WARP", "Gather"]
