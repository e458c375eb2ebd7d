"""Concurrent DRAM streams of a kernel (MODEL.md §11, "Many concurrent
streams").

A *stream* is a run of addresses that the threads of a wave walk through
together: the accesses of one field whose addresses lie within
:data:`STREAM_GAP` of each other (neighbouring rows of a plane, the
components of an array of structures) form one; accesses further apart (the
planes of a 3D stencil, the arrays of a structure of arrays) form separate
ones, each keeping its own DRAM rows open. Loads and stores count apart:
reads and write-backs reach the DRAM at different times.

Approximations: a field's accesses are placed by the address of one
working thread of one sampled block (the offsets between accesses are what
matters); a run the L2 serves again (the neighbouring planes of a stencil
whose layer condition holds) is not a DRAM stream, which the counts bound
by the DRAM volume: a kernel cannot keep more read streams busy than the
times each element is read from DRAM, ``dram_load / itemsize`` per update
(rounded; the smallest itemsize of the loaded fields), likewise for stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .distinct import sector_runs
from .sampling import Sample

#: Accesses of one field closer than this (bytes) share a stream: about one DRAM
#: row in every channel (1-2 KiB rows, 16-64 channels or pseudo channels).
STREAM_GAP = 64 * 1024


@dataclass(frozen=True)
class Streams:
    """Address runs of a thread's loads and stores (module docstring) and the
    smallest itemsize of each kind, which bounds the runs by the DRAM volume."""

    load_runs: int = 0
    store_runs: int = 0
    load_itemsize: int = 8
    store_itemsize: int = 8
    #: Bytes one thread moves per access, averaged over the accesses weighted by the
    #: bytes they move (sum of itemsize**2 over sum of itemsize): a wavefront access
    #: moves ``warp_size`` times this much of one stream (MODEL.md §11, "Memory systems").
    access_bytes: float = 0.0
    #: Bytes of one DRAM row visit: the mean run of contiguous 32 B sectors that one
    #: block's working threads read or write of one field (all its accesses together),
    #: the unit in which the memory controller can gather a block's requests to one
    #: DRAM row (MODEL.md §11, "Memory systems"). 0: not counted.
    run_bytes: float = 0.0

    def dram_streams(self, dram_load: float, dram_store: float) -> float:
        """Concurrent DRAM streams of a kernel moving ``dram_load`` and
        ``dram_store`` bytes per lattice update (module docstring)."""
        return float(min(self.load_runs, _times(dram_load, self.load_itemsize))
                     + min(self.store_runs, _times(dram_store, self.store_itemsize)))


def address_streams(s: Sample, n_loads: int, block_runs: float | None = None) -> Streams:
    """The :class:`Streams` of the sampled accesses; the first ``n_loads`` are
    loads, the rest stores (as :func:`warpspeed.volumes.footprint.block_footprint`).
    ``block_runs``: the :attr:`Streams.run_bytes` of the first block with an
    active thread when known (the block footprints count it), else counted
    here (:func:`block_run_bytes`)."""
    flat = s.active.ravel()
    first = int(np.argmax(flat)) if flat.size else 0  # the first active thread, block-major
    if not len(s.accesses) or not flat.size or not flat[first]:
        return Streams()
    b, t = divmod(first, s.active.shape[1])
    where = (s.class_addresses[s.access_class, b, t] + s.access_shift).tolist()
    kinds: list[dict[str, list[int]]] = [{}, {}]
    for k, acc in enumerate(s.accesses):
        kinds[int(k >= n_loads)].setdefault(acc.field.name, []).append(where[k])
    runs = [sum(_runs(v) for v in per_field.values()) for per_field in kinds]
    small = [min((a.field.itemsize for a in s.accesses[:n_loads]), default=8),
             min((a.field.itemsize for a in s.accesses[n_loads:]), default=8)]
    items = [a.field.itemsize for a in s.accesses]
    return Streams(runs[0], runs[1], small[0], small[1],
                   sum(i * i for i in items) / sum(items),
                   block_run_bytes(s, b) if block_runs is None else block_runs)


#: Bytes of a DRAM sector, the smallest unit a row visit moves.
SECTOR = 32


def block_run_bytes(s: Sample, b: int) -> float:
    """The mean run of contiguous sectors (bytes) that block ``b``'s working
    threads touch of one field, over the fields and runs of the block
    (:attr:`Streams.run_bytes`): the sectors of every access of a field
    together, split where a sector is skipped. A thread folded along x, or
    the neighbours of a stencil, lengthen the run; a block one thread wide
    moves one sector per row. Approximation: loads and stores of a field are
    pooled, and a run is counted whole even where a DRAM row boundary
    splits it. The runs are the block's of
    :func:`warpspeed.volumes.distinct.sector_runs` (each class's addresses
    sorted once, each remainder of a shift divided once)."""
    active = s.active[b]
    if not active.any():
        return 0.0
    fields: dict[str, list[int]] = {}
    for k, acc in enumerate(s.accesses):
        fields.setdefault(acc.field.name, []).append(k)
    rows: dict[int, np.ndarray] = {}  # each class's addresses in the block, sorted

    def row(c: int) -> np.ndarray:
        if c not in rows:
            rows[c] = np.sort(s.class_addresses[c, b, active])[None, :]
        return rows[c]

    found = []
    for ks in fields.values():
        cls, sh = s.access_class[ks], s.access_shift[ks]
        _, first, end = sector_runs([(row(c), sh[cls == c]) for c in dict.fromkeys(cls.tolist())],
                                    np.ones(1, dtype=bool), SECTOR)
        found.append((first, end))
    return run_bytes(found)


def run_bytes(fields: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """:attr:`Streams.run_bytes` of a block from each field's maximal runs of
    consecutive sectors, as their first sectors and ends
    (:func:`block_run_bytes`, MODEL.md §11): the bytes of every field's
    sectors over the runs they form."""
    sectors = sum(int((end - first).sum()) for first, end in fields)
    return float(SECTOR * sectors / sum(first.size for first, _ in fields))


def _times(volume: float, itemsize: int) -> int:
    """The times an element is moved per update, rounded (at least 1 when any
    byte moves: a few partial sectors do not make another stream)."""
    return max(1, round(volume / itemsize)) if volume > 0 else 0


def _runs(addresses: list[int]) -> int:
    """Runs of sorted addresses separated by more than :data:`STREAM_GAP`."""
    a = sorted(addresses)
    return 1 + sum(1 for lo, hi in zip(a, a[1:]) if hi - lo > STREAM_GAP)


__all__ = ["SECTOR", "STREAM_GAP", "Streams", "address_streams", "block_run_bytes", "run_bytes"]
