"""What many concurrent DRAM streams cost each kind of memory system
(MODEL.md §11, "Memory systems").

The stream plateaus of a machine file come from kernels of one to three
streams. A kernel that keeps dozens of address runs open at once (the 19 + 19
arrays of a structure-of-arrays D3Q19 step) makes the DRAM open rows for
streams that share a bank; what that costs depends on the memory system, which
the machine file describes by its vendor, ``memory`` (GDDR or HBM) and ``ecc``:

* **NVIDIA, GDDR without ECC**: the loss the ``l2_cache`` micro-benchmark
  measures beyond every cache, where every block streams its own run
  (``dram_scattered_fraction`` ``F``), between one stream and many by the bank
  law of :func:`scattered_efficiency`. No constant is fitted; these GPUs reach
  94-98 % of their stream plateaus with the D3Q19 kernel.
* **NVIDIA, HBM**: ``F`` as above, and the activation gap of AMD's HBM (next
  item) per row visit, where a visit is one *block's* run of contiguous
  sectors of a field (``run_bytes``, :func:`warpspeed.volumes.streams.block_run_bytes`):
  the memory controller gathers the requests of a block's warps to one row, so
  a block 256 doubles wide visits a row once for 2 KiB, one 4 wide for 48 B.
  The H200's lattice Boltzmann kernel shows it (``fits/data/h200``, ``python
  fits/h200_timing.py --fit``): 11.6 GLup/s with blocks 256 wide, 7.1 with 8
  wide, 5.6 with 4 wide, at the same DRAM volume. The gap is HBM's, one
  constant for both vendors: fitted on the AMD rows of FluidX3D alone
  (3.81 ns), it predicts the H200 rows left out (their own fit: 4.2 ns; blocks
  1 and 2 wide run slower still, MODEL.md §10). A store sector that a warp
  instruction writes in part (rows of 258 elements: a float warp's 128 B
  straddle two lines) is a visit of its own, unless it is the sector the
  block's run begins with (:func:`visits_per_byte`; no constant fitted): the
  H200's D3Q19 and copies of 19 arrays ran 1.2-1.6x slower with such rows
  (``fits/measurements/H200-pitch.csv``). Phenomenological in part: a copy
  of 19 arrays in rows of whole lines (``stencils/streams3d.py``) runs at the
  copy plateau in blocks 16 to 256 wide on the H200
  (``fits/measurements/H200-streams.csv``), which the term calls 0.60-0.89
  of it (MODEL.md §10).
* **ECC on GDDR** (NVIDIA data-centre boards run with it on): GDDR has no
  spare bits, so the check bits live in the DRAM itself (1/16 of it on NVIDIA's
  GDDR6 boards: a 16 GB T4 offers 15 GB with ECC on) and take reads and
  read-modify-writes of their own. A single stream's check bits are fetched
  with its data; many streams each need theirs. Modelled as ``per_byte``
  extra busy time per byte when the streams conflict; documented size: about
  15 % lost with ECC on A40 and RTX 4090 in a rendering workload
  (support.chaos.com, "ECC State for Nvidia GPUs").
* **AMD, HBM** (GCN5, CDNA): a wavefront access of ``b`` bytes of one stream
  (64 lanes times the element) is one request; when the streams conflict,
  every request opens its row, and the pseudo-channel cannot transfer for the
  gap between two activations, ``activate_ns``: ``c`` bytes of bus time,
  ``c = activate_ns * pin rate * pseudo-channel width`` (HBM2/HBM2e: 64-bit
  pseudo-channels, JESD235; HBM3/HBM3e: 32-bit, JESD238; the pin rate is the
  data sheet's peak over its bus width, ``dram_peak * 8 / dram_bus_bits``
  Gbit/s), so that ``b`` bytes take ``1 + c / b`` times their transfer time.
  That is why 16-bit storage (FP16S) loses on these GPUs what 32-bit storage
  does not (MI100: 0.60 against 0.75 of the copy plateau), while NVIDIA's
  memory controllers, which gather requests to one row, lose alike at both
  widths. ``activate_ns`` is fitted (about 4 ns, the order of HBM's
  activate-to-activate windows); the ``l2_cache`` table's read-only fraction
  is not used here: it does not see this cost (it reads 8-byte elements in
  long runs). A file without ``dram_bus_bits`` takes the MI100's pin rate
  (2.4 Gbit/s), an approximation its source should avoid.
* **AMD, GDDR behind an Infinity Cache** (RDNA2, RDNA3): ``per_byte``.

With ``s`` streams the share of conflicting accesses is ``1 - q^(s - 2)``,
``q = 1 - 1/DRAM_BANKS`` (the bank law of :func:`scattered_efficiency`; a
copy, two streams, runs at its plateau), and the plateaus are scaled by

    e = e_F(s) / (1 + (1 - q^(s - 2)) * (per_byte + c / b)).

``per_byte`` and ``activate_ns`` are the memory systems' fitted constants
(:class:`Constants`): fitted jointly on the lattice Boltzmann development rows of
all GPUs of that kind, kept only when they hold with one GPU left out
(``python fits/memory_systems.py`` prints the fit and its leave-one-GPU-out
table). Approximations: the bank count and the random mapping (the address
hashing is not public); one constant per kind of memory system, not per GPU;
a kernel's bytes per access is the byte-weighted mean element size.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..machine import Machine
from .latency_parameters import given

#: Banks of one DRAM channel that concurrent streams share (JEDEC GDDR6: 16 banks in
#: four bank groups per channel; HBM2 channels have 8 to 48 banks by die density and
#: stack height, 16 on the common 8 Gb dies).
DRAM_BANKS = 16
#: Bytes of one L2 sector, the DRAM's unit of transfer on NVIDIA GPUs.
SECTOR_BYTES = 32.0


@dataclass(frozen=True)
class MemorySystem:
    """One kind of memory system and what concurrent streams cost it (module
    docstring): whether the machine's ``dram_scattered_fraction`` applies, the
    fitted extra busy time per byte, and the gap between two row activations
    that every wavefront access pays (ns; 0: none)."""

    name: str
    scattered: bool = True
    per_byte: float = 0.0
    activate_ns: float = 0.0
    #: Whether a row visit is one block's run of sectors (NVIDIA: the controller
    #: gathers the warps of a block to a row) rather than one wavefront access (AMD).
    block_runs: bool = False


@dataclass(frozen=True)
class Constants:
    """The memory systems' fitted constants (module docstring): extra busy
    time per byte of conflicting streams with ECC on GDDR and on AMD's GDDR
    behind an Infinity Cache, and the activation gap of HBM (ns). Fitted
    by ``fits/memory_systems.py`` (:mod:`warpspeed.validation.memory_fit`)."""

    ecc_per_byte: float = 0.217
    hbm_activate_ns: float = 3.81
    amd_gddr_per_byte: float = 0.506


#: The constants the model uses (MODEL.md §11, "Memory systems").
FITTED = Constants()


def kinds(c: Constants = FITTED) -> dict[str, MemorySystem]:
    """The kinds of memory system with constants ``c`` (module docstring)."""
    return {
        "nvidia-hbm": MemorySystem("HBM (NVIDIA)", activate_ns=c.hbm_activate_ns,
                                   block_runs=True),
        "nvidia-gddr": MemorySystem("GDDR (NVIDIA)"),
        "amd-hbm": MemorySystem("HBM (AMD)", scattered=False, activate_ns=c.hbm_activate_ns),
        "amd-gddr": MemorySystem("GDDR behind an Infinity Cache (AMD)", scattered=False,
                                 per_byte=c.amd_gddr_per_byte),
    }


def memory_system(m: Machine, c: Constants = FITTED) -> MemorySystem | None:
    """The kind of ``m``'s memory system (module docstring), ECC on GDDR
    included; None for a file that does not state its ``memory``."""
    if not m.memory:
        return None
    hbm = m.memory.startswith("HBM")
    kind = kinds(c)[f"{m.family.memory_system}-{'hbm' if hbm else 'gddr'}"]
    if m.ecc and not hbm:
        return MemorySystem(f"{kind.name}, ECC on", kind.scattered,
                            kind.per_byte + c.ecc_per_byte, kind.activate_ns)
    return kind


#: Pin rate (Gbit/s) of a file without ``dram_bus_bits``: the MI100's HBM2 (1228.8 GB/s
#: over 4096 bits), the GPU ``activate_ns`` was first seen on (module docstring).
DEFAULT_PIN_GBPS = 2.4


def access_gap_bytes(m: Machine, kind: MemorySystem) -> float:
    """``c``: the bytes a pseudo-channel could have moved in one activation
    gap, ``activate_ns * pin rate * width`` (module docstring)."""
    if not kind.activate_ns:
        return 0.0
    rate = (float(m.dram_peak) * 8.0 / m.dram_bus_bits
            if m.dram_peak and m.dram_bus_bits else DEFAULT_PIN_GBPS)
    width = 4.0 if m.memory.startswith("HBM3") else 8.0  # bytes per pseudo-channel beat
    return kind.activate_ns * rate * width


def conflicts(streams: float) -> float:
    """The share of a kernel's stream accesses whose bank another stream uses:
    ``1 - q^(s - 2)`` (0 for a copy's two streams; module docstring)."""
    if streams <= 2:
        return 0.0
    return 1.0 - (1.0 - 1.0 / DRAM_BANKS) ** (streams - 2.0)


def scattered_efficiency(streams: float, scattered_fraction: float | None) -> float:
    """The share of the stream plateaus that ``streams`` concurrent streams
    reach by the ``l2_cache`` micro-benchmark's measure alone, ``F + (1 - F)
    q^(s - 2)``: a stream keeps its row unless another maps to its bank; ``F``
    (``dram_scattered_fraction``) is reached with many (MODEL.md §11). 1 when
    ``F`` is not measured."""
    if scattered_fraction is None or streams <= 2:
        return 1.0
    f = float(scattered_fraction)
    return f + (1.0 - f) * (1.0 - conflicts(streams))


def visit_bytes(kind: MemorySystem, warp_size: int, access_bytes: float,
                run_bytes: float) -> float:
    """``b``: the bytes of one row visit (module docstring): one wavefront
    access (``warp_size`` times ``access_bytes``) on AMD; on NVIDIA's HBM one
    block's run of sectors (``run_bytes``; a wavefront access where the run
    was not counted)."""
    wave = warp_size * access_bytes
    return run_bytes if kind.block_runs and run_bytes > 0 else wave


def charges_split_stores(m: Machine) -> bool:
    """Whether ``m``'s memory system charges the store sectors that warps
    write in part as row visits of their own (NVIDIA's HBM, whose row visits
    are block runs; :func:`visits_per_byte`, MODEL.md §11)."""
    kind = memory_system(m)
    return kind is not None and kind.block_runs


def visits_per_byte(kind: MemorySystem, visit: float, split_share: float = 0.0) -> float:
    """Row visits per DRAM byte (MODEL.md §11, "Memory systems"): one per ``visit`` bytes
    (:func:`visit_bytes`); on NVIDIA's HBM a store sector that a warp
    instruction writes in part (``split_share``: such sectors' bytes over the
    DRAM bytes, :attr:`warpspeed.volumes.levels.AccessTraits.dram_split_share`)
    is a visit of its own unless it is the sector its block's run begins with,
    which the run's own visit writes (share ``SECTOR / visit`` of a run's
    sectors: split sectors taken as spread evenly over the run); and a run
    makes at most one visit per sector (:data:`SECTOR_BYTES`). No constant is
    fitted. 0 without a visit size."""
    if visit <= 0:
        return 0.0
    runs = 1.0 / visit
    if not kind.block_runs or split_share <= 0:
        return runs
    split = split_share / SECTOR_BYTES * max(0.0, 1.0 - SECTOR_BYTES / visit)
    return min(runs + split, max(runs, 1.0 / SECTOR_BYTES))


def stream_efficiency(streams: float, m: Machine, access_bytes: float,
                      c: Constants = FITTED, run_bytes: float = 0.0,
                      split_share: float = 0.0) -> float:
    """The share of ``m``'s stream plateaus a kernel of ``streams`` concurrent
    streams, moving ``access_bytes`` per thread and access and ``run_bytes``
    per block's row visit, with ``split_share`` of its DRAM bytes in store
    sectors that warps write in part (:func:`visits_per_byte`), reaches
    (module docstring), with the memory systems' constants ``c``."""
    kind = memory_system(m, c)
    fraction = given(m).get("dram_scattered_fraction")
    if kind is None:
        return scattered_efficiency(streams, fraction)
    e = scattered_efficiency(streams, fraction) if kind.scattered else 1.0
    b = visit_bytes(kind, m.warp_size, access_bytes, run_bytes)
    gap = access_gap_bytes(m, kind)
    extra = kind.per_byte + gap * visits_per_byte(kind, b, split_share)
    return e / (1.0 + conflicts(streams) * extra)


__all__ = ["DEFAULT_PIN_GBPS", "DRAM_BANKS", "FITTED", "Constants", "MemorySystem",
           "SECTOR_BYTES", "access_gap_bytes", "charges_split_stores", "conflicts", "kinds",
           "memory_system", "scattered_efficiency", "stream_efficiency", "visit_bytes",
           "visits_per_byte"]
