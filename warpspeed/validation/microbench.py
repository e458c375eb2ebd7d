"""The public GPU micro-benchmark tables (MODEL.md §11, §12): readers and the
machine parameters each table determines.

The tables are the CSV conversions of te42kyfo/gpu-benches described in
``shared/data/microbench/README.md``; a user who runs those benchmarks on a new
GPU writes the same columns. Every function here is pure: a table in, numbers
out, plus the words that say how they were derived (the machine file's
``source`` strings). ``fits/calibrate_memory.py``, ``fits/calibrate_overlap.py``
and ``warpspeed machines calibrate`` (:mod:`warpspeed.validation.calibrate`) all
use them.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..errors import MachineError
from ..timing.latency import overlap
from ..timing.memory import MemoryParams, achieved_bandwidth


class TableError(MachineError):
    """A micro-benchmark table is missing, lacks a column or is inconsistent."""


#: Blocks per SM of the stream benchmark (gpu-stream: measureKernels(k, bs, 2)).
BLOCKS_PER_SM = 2
#: Bytes of one array element of the stream benchmark (double).
ELEMENT = 8
#: Stream columns: DRAM elements loaded and stored per thread.
KERNELS = {"init": (0, 1), "read": (1, 0), "scale": (1, 1), "triad": (2, 1),
           "3pt": (1, 1), "5pt": (1, 1)}
#: The same in the newer benchmark's tables (those with a ``blocks_per_SM``
#: column; shared/data/microbench/README.md): its triad is ``A = B * D + C``.
KERNELS_2025 = {**KERNELS, "triad": (3, 1)}
#: Stream columns ``memory_shape`` is fitted on.
FITTED = ("read", "scale", "triad")
#: Plateau: the median of the values within this fraction of a column's maximum.
PLATEAU_BAND = 0.02
#: Largest element count whose launches count as "empty" (the overhead floor).
SMALL = 16384


def read_table(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of a CSV table; :class:`TableError` naming the file if it is
    missing, empty or lacks one of ``columns``."""
    path = Path(path)
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except OSError as exc:
        raise TableError(f"cannot read micro-benchmark table {path}: {exc.strerror}") from exc
    if not rows:
        raise TableError(f"micro-benchmark table {path} has no rows")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise TableError(f"micro-benchmark table {path} lacks the columns {missing} "
                         "(see shared/data/microbench/README.md for the format)")
    return rows


def _floats(rows: list[dict[str, str]], column: str, path: Path) -> np.ndarray:
    try:
        return np.array([float(r[column]) for r in rows])
    except (TypeError, ValueError) as exc:
        raise TableError(f"micro-benchmark table {path}: column {column} is not numeric") from exc


@dataclass(frozen=True)
class Stream:
    """One stream table (MODEL.md §11): block sizes, threads in flight on the
    whole GPU (both resident blocks), SMs, GB/s per kernel column."""

    block: np.ndarray
    threads: np.ndarray
    sms: int
    gbs: dict[str, np.ndarray]
    #: DRAM elements loaded and stored per thread by each column's kernel.
    kernels: dict[str, tuple[int, int]] = field(default_factory=lambda: dict(KERNELS))

    def bytes_in_flight(self, kernel: str) -> np.ndarray:
        loads, stores = self.kernels[kernel]
        return self.threads * ELEMENT * (loads + stores)

    def load_fraction(self, kernel: str) -> float:
        loads, stores = self.kernels[kernel]
        return loads / (loads + stores)


def load_stream(path: Path) -> Stream:
    """A ``stream/<gpu>.csv`` table. Its ``threads_in_flight`` column is SMs x
    block size (one block); the benchmark keeps two blocks per SM resident, which
    the occupancy column shows (``2 x block / threads per SM``, one constant).
    A table of the newer benchmark (a ``blocks_per_SM`` column, 1 or 2) counts
    every resident block in ``threads_in_flight`` and has its own triad
    (:data:`KERNELS_2025`)."""
    cols = ("block_size", "threads_in_flight", "occupancy_percent",
            *(f"{k}_GBs" for k in KERNELS))
    rows = read_table(path, cols)
    block = _floats(rows, "block_size", path).astype(int)
    column = _floats(rows, "threads_in_flight", path).astype(int)
    newer = "blocks_per_SM" in rows[0]
    per_block = (_floats(rows, "blocks_per_SM", path).astype(int) if newer
                 else np.full(len(rows), BLOCKS_PER_SM))
    resident = column if newer else BLOCKS_PER_SM * column
    sms = {int(c) // int(b * n) for c, b, n in zip(resident, block, per_block)}
    if len(sms) != 1 or any(c % (b * n) for c, b, n in zip(resident, block, per_block)):
        raise TableError(f"{path}: threads_in_flight is not SMs x block size"
                         + (" x blocks_per_SM" if newer else ""))
    occupancy = _floats(rows, "occupancy_percent", path)
    per_sm = block[-1] * per_block[-1] / (occupancy[-1] / 100)
    implied = block * per_block / per_sm * 100
    if np.max(np.abs(occupancy - implied)) > 0.2 + 0.02 * np.max(occupancy):
        raise TableError(f"{path}: the occupancy column does not show "
                         + ("the blocks_per_SM column's" if newer else f"{BLOCKS_PER_SM}")
                         + " blocks per SM")
    gbs = {k: _floats(rows, f"{k}_GBs", path) for k in KERNELS}
    return Stream(block, resident.astype(float), sms.pop(), gbs,
                  dict(KERNELS_2025 if newer else KERNELS))


@dataclass(frozen=True)
class Latency:
    """Plateaus of a pointer-chasing table (ns, from cycles and clock)."""

    clock_mhz: float
    dram_ns: float
    dram_rows: int
    l2_ns: float
    l2_far_ns: float


def load_latency(path: Path, l2_mib: float, llc_mib: float | None = None) -> Latency:
    """The DRAM plateau (footprints >= 1.5 x the last-level cache: the full L2,
    or ``llc_mib``, an Infinity Cache behind it), the near L2 plateau
    (1 MB .. L2 / 4, or L2 / 8 .. L2 / 4 when that holds fewer than 3 rows)
    and the far one (0.75 .. 0.95 x L2) of a ``latency/<gpu>.csv`` table.
    Latencies are ``latency_cycles / clock_MHz`` (the table's ns column is
    wrong beyond 68883 kB)."""
    rows = read_table(path, ("clock_MHz", "chain_footprint_kB", "latency_cycles"))
    clock = float(rows[0]["clock_MHz"])
    kb = _floats(rows, "chain_footprint_kB", path)
    ns = _floats(rows, "latency_cycles", path) / clock * 1e3
    l2_kb = l2_mib * 1024
    dram = kb >= 1.5 * max(l2_kb, (llc_mib or 0) * 1024)
    near = (kb >= 1024) & (kb <= 0.25 * l2_kb)
    if near.sum() < 3:  # a small L2 (4 MiB): widen the window down to L2 / 8
        near = (kb >= l2_kb / 8) & (kb <= 0.25 * l2_kb)
    far = (kb >= 0.75 * l2_kb) & (kb <= 0.95 * l2_kb)
    if not dram.any() or not near.any():
        raise TableError(f"{path}: no footprints beyond 1.5 x the last-level cache or none "
                         f"in the L2 window (L2 {l2_mib:g} MiB): are the cache sizes right?")
    far_ns = float(np.median(ns[far])) if far.any() else float("nan")
    return Latency(clock, float(np.median(ns[dram])), int(dram.sum()),
                   float(np.median(ns[near])), far_ns)


def plateau(values: np.ndarray) -> tuple[float, bool]:
    """Median of the values within PLATEAU_BAND of the maximum, and whether
    the column reached it: its last quarter lies inside the band."""
    top = values.max()
    band = values >= (1 - PLATEAU_BAND) * top
    reached = bool(np.all(band[-len(values) // 4:]))
    return float(np.median(values[band])), reached


def predict(p: MemoryParams, s: Stream, kernel: str) -> np.ndarray:
    """The memory model's bandwidth for one stream column (MODEL.md §11)."""
    f = s.load_fraction(kernel)
    return np.array([achieved_bandwidth(p, float(c), f) for c in s.bytes_in_flight(kernel)])


def relative_errors(p: MemoryParams, s: Stream, kernel: str) -> np.ndarray:
    return predict(p, s, kernel) / s.gbs[kernel] - 1.0


def fit_shape(p: MemoryParams, s: Stream) -> float:
    """The shape minimising the largest |log(model / measured)| over the
    fitted curves: a coarse scan, then bounded Brent around the best."""
    from scipy.optimize import minimize_scalar

    def worst(shape: float) -> float:
        q = replace(p, shape=float(shape))
        return max(float(np.max(np.abs(np.log1p(relative_errors(q, s, k))))) for k in FITTED)

    grid = np.linspace(0.0, 3.0, 61)
    best = grid[int(np.argmin([worst(x) for x in grid]))]
    lo, hi = max(0.0, best - 0.05), best + 0.05
    res = minimize_scalar(worst, bounds=(lo, hi), method="bounded", options={"xatol": 1e-5})
    return float(res.x)


@dataclass(frozen=True)
class MemoryFit:
    """The memory-model parameters of one GPU from its stream and latency
    plateaus (MODEL.md §11): derived, not fitted, but ``shape``."""

    params: MemoryParams
    plateaus: dict[str, tuple[float, bool]]
    t0_block: int


def memory_fit(s: Stream, dram_latency_ns: float, l2_latency_ns: float,
               copy_from_triad: bool = False) -> MemoryFit:
    """Turnover (shortest init residence), saturated bandwidths (plateaus of
    the read, scale and init columns; read is the larger of its plateau and
    init's) and the fitted shape of one stream table. ``copy_from_triad``:
    when the scale column does not saturate, the copy plateau is the larger of
    its plateau and the triad's (both lower bounds; a triad thread keeps 1.5x
    the bytes in flight, 2x in the newer tables, so where neither saturates it
    comes closer)."""
    residence = s.bytes_in_flight("init") / s.gbs["init"]
    i0 = int(np.argmin(residence))
    plateaus = {k: plateau(s.gbs[k]) for k in ("init", "read", "scale", "triad")}
    read_bw = max(plateaus["read"][0], plateaus["init"][0])
    copy_bw = plateaus["scale"][0]
    if copy_from_triad and not plateaus["scale"][1]:
        copy_bw = max(copy_bw, plateaus["triad"][0])
    p = MemoryParams(
        dram_latency_ns=dram_latency_ns, l2_latency_ns=l2_latency_ns,
        dram_bw_read=read_bw, dram_bw_copy=copy_bw,
        dram_bw_write=plateaus["init"][0], shape=0.0, turnover_ns=float(residence[i0]),
    )
    return MemoryFit(replace(p, shape=fit_shape(p, s)), plateaus, int(s.block[i0]))


@dataclass(frozen=True)
class Overlap:
    """The fitted FP/memory overlap exponent of one roofline table and its error."""

    exponent: float
    rows: int
    mape: float


def fp_overlap(path: Path) -> Overlap:
    """The exponent ``p`` of ``t = (t_fp^p + t_mem^p)^(1/p)`` on the transition
    rows of a ``roofline/<gpu>.csv`` table (MODEL.md §11): memory time per byte
    from the first row, FP time per byte from the table's largest GFlop/s; the
    rows where neither side is below a quarter of the other; minimum mean
    absolute relative error."""
    from scipy.optimize import minimize_scalar

    rows = read_table(path, ("flop_per_byte", "bandwidth_GBs", "gflops"))
    fpb = _floats(rows, "flop_per_byte", path)
    bw = _floats(rows, "bandwidth_GBs", path)
    gf = _floats(rows, "gflops", path)
    t_mem = np.full_like(bw, 1.0 / bw[np.argmin(fpb)])
    t_fp = fpb / gf.max()
    meas = 1.0 / bw
    keep = (t_fp > 0.25 * t_mem) & (t_mem > 0.25 * t_fp)
    if keep.sum() < 2:
        raise TableError(f"{path}: fewer than two rows in the FP/memory transition")

    def err(p: float) -> float:
        model = np.array([overlap(f, t, p) for f, t in zip(t_fp[keep], t_mem[keep])])
        return float(np.mean(np.abs(model / meas[keep] - 1)))

    res = minimize_scalar(err, bounds=(1.0, 16.0), method="bounded")
    return Overlap(float(res.x), int(keep.sum()), float(res.fun))


def launch_overhead_us(path: Path) -> float:
    """The median wall time per launch of the smallest kernels (at most
    :data:`SMALL` elements, every block size) of a ``small_kernels`` table, µs."""
    rows = read_table(path, ("elements", "time_per_launch_us"))
    small = [float(r["time_per_launch_us"]) for r in rows if float(r["elements"]) <= SMALL]
    if not small:
        raise TableError(f"{path}: no rows with at most {SMALL} elements")
    return float(np.median(small))


#: A block size whose bandwidth stays below this share of the best block size
#: at the same size is taken as bound by the launch of its blocks.
BLOCK_BOUND = 0.9


def block_launch_ns(path: Path, sms: int) -> tuple[float, int] | None:
    """Time per block launch on one SM (ns) of a ``small_kernels`` table
    (MODEL.md §11, "Block launch"), and how many rows give it; None where
    no block size is held back. Over the launches of at least half the
    largest size, a block size moving under :data:`BLOCK_BOUND` of that
    size's best bandwidth moves one block's bytes per launch:
    ``sms * block * bytes per element / bandwidth``; the median of those."""
    rows = read_table(path, ("elements", "bytes_moved", "block", "bandwidth_GBs"))
    n = _floats(rows, "elements", path)
    moved = _floats(rows, "bytes_moved", path)
    block = _floats(rows, "block", path)
    bw = _floats(rows, "bandwidth_GBs", path)
    times = []
    for size in np.unique(n[n >= 0.5 * n.max()]):
        at = n == size
        bound = at & (bw < BLOCK_BOUND * bw[at].max()) & (bw > 0)
        times += list(sms * block[bound] * (moved[bound] / n[bound]) / bw[bound])
    if not times:
        return None
    return float(np.median(times)), len(times)


def l2_bandwidth(path: Path, l2_bytes: int) -> tuple[float, int]:
    """The L2 plateau of an ``l2_cache/<gpu>.csv`` table: the median bandwidth
    over the data sets of at most half the L2 (all blocks read one shared set,
    too spread out for the L1), and how many rows it takes."""
    rows = read_table(path, ("data_set_kB", "bandwidth_GBs"))
    kb = _floats(rows, "data_set_kB", path)
    bw = _floats(rows, "bandwidth_GBs", path)
    inside = kb * 1024 <= 0.5 * l2_bytes
    if not inside.any():
        raise TableError(f"{path}: no data set of at most half the L2 ({l2_bytes} B)")
    return float(np.median(bw[inside])), int(inside.sum())


def _l2_stream_full(path: Path, kernel: str) -> tuple[np.ndarray, np.ndarray]:
    """The footprints (bytes) and ``GBs_from_min_time`` of ``kernel``'s rows
    at the largest occupancy of an ``l2_stream/<gpu>.csv`` table."""
    rows = [r for r in read_table(path, ("kernel", "threads_in_flight", "footprint_kB",
                                         "GBs_from_min_time")) if r["kernel"] == kernel]
    if not rows:
        raise TableError(f"{path}: no rows of kernel {kernel!r}")
    threads = _floats(rows, "threads_in_flight", path)
    full = threads == threads.max()
    return (_floats(rows, "footprint_kB", path)[full] * 1024,
            _floats(rows, "GBs_from_min_time", path)[full])


def l2_stream_plateau(path: Path, l2_bytes: int, kernel: str = "triad") -> tuple[float, int]:
    """The plateau of one kernel of an ``l2_stream/<gpu>.csv`` table (the
    newer benchmark: arrays streamed over and over, their footprint in
    ``footprint_kB``; ``shared/data/microbench/README.md``): the median of
    ``GBs_from_min_time`` over the rows at the table's largest occupancy whose
    footprint is at most half the L2, and how many rows it takes. Not the
    ``l2_cache`` plateau: the triad (three loads and a store per thread and
    pass) runs 1.04-1.19x above it on the NVIDIA GPUs with both tables
    (``fits/l2_stream.py``; MODEL.md §12)."""
    size, bw = _l2_stream_full(path, kernel)
    keep = size <= 0.5 * l2_bytes
    if not keep.any():
        raise TableError(f"{path}: no {kernel} row of at most half the L2 ({l2_bytes} B) at "
                         "full occupancy")
    return float(np.median(bw[keep])), int(keep.sum())


def llc_stream_plateau(path: Path, l2_total_bytes: int, llc_bytes: int,
                       kernel: str = "read") -> tuple[float, int]:
    """The last-level cache's (Infinity Cache's) plateau in an
    ``l2_stream/<gpu>.csv`` table: the median of ``GBs_from_min_time`` of
    ``kernel`` at the largest occupancy over the footprints beyond 1.5 times
    the whole L2 (every partition) and within 0.75 of the cache, and how many
    rows it takes (MODEL.md §15)."""
    size, bw = _l2_stream_full(path, kernel)
    keep = (size > 1.5 * l2_total_bytes) & (size <= 0.75 * llc_bytes)
    if not keep.any():
        raise TableError(f"{path}: no {kernel} row between 1.5 x the L2 and 0.75 x the "
                         "last-level cache at full occupancy")
    return float(np.median(bw[keep])), int(keep.sum())


def l1_cliff_kb(path: Path) -> tuple[float, float]:
    """The L1 capacity an ``l1_cache/<gpu>.csv`` table shows: the first data set
    (kB) whose bandwidth falls below 70 % of the best before it, and the last
    one before it within 10 % of that best."""
    rows = read_table(path, ("data_set_kB", "bandwidth_GBs"))
    kb = _floats(rows, "data_set_kB", path)
    bw = _floats(rows, "bandwidth_GBs", path)
    best = np.maximum.accumulate(bw)
    drop = np.nonzero(bw[1:] < 0.7 * best[:-1])[0]
    if not len(drop):
        raise TableError(f"{path}: no L1 cliff (bandwidth never drops below 70 % of its best)")
    i = int(drop[0]) + 1
    before = np.nonzero(bw[:i] >= 0.9 * best[i - 1])[0]
    return float(kb[before[-1]]), float(kb[i])


#: Data sets of the ``l2_cache`` table that count as "beyond every cache" for the
#: scattered DRAM bandwidth: at least 1 GiB (the largest caches hold 256 MiB), where
#: the tables' curves have flattened.
SCATTERED_KB = 1024 * 1024


@dataclass(frozen=True)
class Scattered:
    """The scattered DRAM bandwidth of an ``l2_cache`` table (MODEL.md §11, many
    streams): its median beyond every cache, the read plateau of the same GPU's
    stream table, their ratio capped at 1, and how many rows it takes."""

    bandwidth: float
    read: float
    fraction: float
    rows: int


def reaches_dram(l2_path: Path) -> bool:
    """Whether an ``l2_cache`` table has data sets of at least :data:`SCATTERED_KB`."""
    rows = read_table(l2_path, ("data_set_kB", "bandwidth_GBs"))
    return bool((_floats(rows, "data_set_kB", l2_path) >= SCATTERED_KB).any())


def scattered(l2_path: Path, stream_path: Path) -> Scattered:
    """Many concurrent DRAM streams against few: in the ``l2_cache`` benchmark
    every resident block streams its own run of the data set, so beyond every
    cache (data sets of at least :data:`SCATTERED_KB`) the DRAM serves thousands
    of concurrent streams; the stream table's read kernel, loads only like it, has
    one. The fraction, scattered over read plateau, is capped at 1 (a stream
    table whose read column did not saturate, e.g. H200's, gives no loss)."""
    rows = read_table(l2_path, ("data_set_kB", "bandwidth_GBs"))
    kb = _floats(rows, "data_set_kB", l2_path)
    bw = _floats(rows, "bandwidth_GBs", l2_path)
    beyond = kb >= SCATTERED_KB
    if not beyond.any():
        raise TableError(f"{l2_path}: no data set of at least {SCATTERED_KB / 2**20:g} GiB: the "
                         "scattered DRAM bandwidth needs the table's DRAM-bound end")
    s = load_stream(stream_path)
    read = plateau(s.gbs["read"])[0]
    band = float(np.median(bw[beyond]))
    return Scattered(band, read, min(1.0, band / read), int(beyond.sum()))

