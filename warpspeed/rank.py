"""Ranking launch configurations: design space, pruning and parallel
evaluation (MODEL.md §8; pruning after Wang et al., TPDS 2020, adapted).

**Design space** (MODEL.md §8). For each requested thread count ``T``, the
block shapes ``(X, Y, Z)`` with ``X * Y * Z = T``: powers of two by default
(the paper's space), every integer factorisation with ``all_shapes=True``.
The CUDA limits ``X, Y <= 1024``, ``Z <= 64`` and the machine's threads per
block always apply. Each shape is combined with each folding variant (by
default none, 2y and 2z: ``(1,1,1), (1,2,1), (1,1,2)``); a fold is a
separate kernel obtained from a factory ``fold -> Kernel``.

**Trimming**. A configuration is left out, with the reason recorded in
:attr:`Ranking.excluded`, when it cannot launch (occupancy 0: too many
registers or too much shared memory) or when a block extent is absurd for
the domain: ``b_d >= 2 * D_d`` (``D`` the domain in threads), which leaves at
least half of the threads of *every* block idle. The smallest extent that
covers a short dimension (``D_d <= b_d < 2 D_d``) is kept. Explicit
``blocks`` are only checked against the machine, never trimmed.

**Provably identical predictions** are evaluated once and reported as
equivalence classes. Two levels, both exact under the model:

* *Whole predictions.* When every index form is a function of the global
  thread coordinates ``blockIdx * blockDim + threadIdx`` only, a block whose
  outermost extents exceed the domain has idle threads only at the end of
  its x-fastest linear order: ``Z >= D_z`` behaves as ``Z = D_z``; when
  then ``Z`` is 1, ``Y >= D_y`` behaves as ``Y = D_y``; and so on for x. Warps,
  half warps, the sampled blocks (MODEL.md §4-§5) and the grid, wave shape
  and wave sets (§3, §6) are then those of the clipped block. With equal
  blocks per SM (which sets the wave and the L1 coverage), the predictions
  agree in every number; only the block label and the name of the
  occupancy limit differ. Kernels from two folds that are equal count once.
* *Wave volumes* (the expensive islpy part, §6). They depend on the launch
  only through the sets of *global* thread coordinates of the current wave
  and of the x, y and z sets, clipped to the domain. Configurations whose
  four sets coincide share one wave computation (for instance ``(64,4,4)``
  and ``(32,8,4)`` on a 640-wide domain: both waves are the same full-width
  slab). Counted in :attr:`Ranking.waves`.

**Bound-based pruning for top-k.** The block stage (occupancy, L1 cycles,
block footprints, §3-§5) is computed for every configuration; it gives the
FP, L1 and L2 limits exactly. The DRAM volume ``memLoadV3 + memStoreV2`` of
``model.finish`` is bounded from below without the wave sets, see
:func:`dram_lower_bound`. Configurations are then evaluated in decreasing
order of ``min(FP, L1, L2, DRAM at the lower bound)``; once that bound is
below the k-th best prediction found so far, the remaining wave sets are
skipped. The top k equal the exhaustive ranking's (ties are kept: a
configuration is skipped only when its bound is strictly lower), ordered by
GLup/s, then fold, then block.

Evaluation runs on a ``concurrent.futures.Executor`` given by the caller
(a ``dask.distributed`` ``Client.get_executor()`` works), else on a local
process pool of ``jobs`` workers, else inline for ``jobs=1``. Nothing is
printed; ``progress(done, total)`` is called as work completes.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from .capacity import CapacityFits, Gompertz, load_fits
from .errors import LaunchError
from .expr import LinForm, SymForm, bind_all
from .footprint import Footprint
from .kernel import Access, Kernel
from .launch import Launch, make_launch, wave_sets
from .machine import Machine, load_machine
from .model import BlockStage, Prediction, block_stage, finish
from .timing import DEFAULT_MODEL, MODELS
from .volumes import OVERSUBSCRIPTION_RANGE
from .waves import WaveVolumes, global_box, wave_volumes

Block = tuple[int, int, int]
Fold = tuple[int, int, int]
KernelSource = Kernel | Mapping[Fold, Kernel] | Callable[[Fold], Kernel]

DEFAULT_THREADS: tuple[int, ...] = (1024,)
DEFAULT_FOLDS: tuple[Fold, ...] = ((1, 1, 1), (1, 2, 1), (1, 1, 2))
#: CUDA's block extent limits (x, y, z), the same on every compute capability.
MAX_BLOCK_DIMS: Block = (1024, 1024, 64)


@dataclass(frozen=True)
class Config:
    """One point of the design space: a folding variant and a block size."""

    fold: Fold
    block: Block


@dataclass(frozen=True)
class Excluded:
    """A configuration left out of the ranking, and why."""

    fold: Fold
    block: Block
    reason: str


@dataclass(frozen=True)
class Ranking:
    """Predictions best first (GLup/s, then fold, then block), and how they
    were obtained.

    * ``predictions``: all configurations, or the best ``top`` of them;
    * ``configurations``: configurations considered after trimming;
    * ``excluded``: trimmed or unlaunchable configurations with the reason;
    * ``classes``: the equivalence classes with more than one member
      (provably identical predictions, evaluated once);
    * ``stages``: block stages computed (one per class);
    * ``waves``: wave-set computations performed (the islpy part);
    * ``evaluated``: classes fully evaluated (wave volumes and roofline);
    * ``skipped``: classes whose full evaluation the top-k bound skipped;
    * ``model``: the timing model; ``notes``: facts about the design space
      the user should know (e.g. a kernel whose block size is fixed).
    """

    machine: str
    kernel: str
    predictions: tuple[Prediction, ...]
    configurations: int
    excluded: tuple[Excluded, ...]
    classes: tuple[tuple[Config, ...], ...]
    stages: int
    waves: int
    evaluated: int
    skipped: int
    top: int | None
    model: str = DEFAULT_MODEL
    notes: tuple[str, ...] = ()

    def to_dicts(self) -> list[dict[str, object]]:
        """The predictions as JSON-serialisable dicts, best first."""
        return [p.to_dict() for p in self.predictions]


# --------------------------------------------------------------------------
# Design space


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def block_shapes(
    threads: int, all_shapes: bool = False, max_dims: Block = MAX_BLOCK_DIMS
) -> tuple[Block, ...]:
    """Block shapes with ``threads`` threads within ``max_dims`` (MODEL.md §8):
    powers of two, or every factorisation with ``all_shapes``."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads <= 0:
        raise LaunchError(f"thread counts must be positive integers, got {threads!r}")
    if not all_shapes and threads & (threads - 1):
        raise LaunchError(
            f"{threads} threads is not a power of two; the power-of-two design space is "
            "empty (ask for all shapes to try every factorisation)"
        )
    out = []
    for x in _divisors(threads):
        for y in _divisors(threads // x):
            z = threads // (x * y)
            if x <= max_dims[0] and y <= max_dims[1] and z <= max_dims[2]:
                out.append((x, y, z))
    return tuple(out)


def trim_reason(block: Block, domain: tuple[int, int, int]) -> str | None:
    """Why ``block`` is absurd for ``domain`` (in threads), or None: an extent
    of at least twice the domain's leaves half of every block idle."""
    for d, axis in enumerate("xyz"):
        if block[d] >= 2 * domain[d]:
            return (
                f"block {axis} extent {block[d]} is at least twice the domain's "
                f"{domain[d]} threads: half of every block would idle"
            )
    return None


def canonical_block(block: Block, domain: tuple[int, int, int]) -> Block:
    """The block that behaves identically under the model when the index
    forms depend on global thread coordinates only (see the module
    docstring): outermost extents beyond the domain are clipped, z first,
    then y if z is 1, then x if y and z are 1."""
    c = list(block)
    for d in (2, 1, 0):
        if all(c[e] == 1 for e in range(d + 1, 3)) and c[d] >= domain[d]:
            c[d] = domain[d]
        else:
            break
    return (c[0], c[1], c[2])


# --------------------------------------------------------------------------
# Forms as functions of the global thread coordinates


def global_function(form: LinForm, block: Block) -> tuple[object, ...] | None:
    """``form`` as a function of the global coordinates ``b * B + t``, or
    None when it depends on the block and thread indices separately.

    A bound form ``const + sum_d (c_b[d] * b_d + c_t[d] * t_d)`` is such a
    function iff ``c_b[d] == B_d * c_t[d]`` for every d, and likewise for
    the inner forms of its floors. Two blocks whose forms give the same
    tuple address memory identically at every global thread coordinate.
    """
    if any(form.coef[d] != block[d] * form.coef[3 + d] for d in range(3)):
        return None
    floors = []
    for c, inner, d in form.floors:
        g = global_function(inner, block)
        if g is None:
            return None
        floors.append((c, g, d))
    return (form.const, tuple(form.coef[3:]), tuple(floors), form.div)


def _global_accesses(
    accesses: tuple[Access, ...], bound: dict[SymForm, LinForm], block: Block
) -> tuple[object, ...] | None:
    out = []
    for acc in accesses:
        forms = tuple(global_function(bound[f], block) for f in acc.forms)
        if any(f is None for f in forms):
            return None
        out.append((acc.field, forms))
    return tuple(out)


def wave_key(kernel: Kernel, launch: Launch, bound: dict[SymForm, LinForm]) -> object:
    """A key equal for two launches exactly when their wave volumes provably
    agree (module docstring), or unique to the launch otherwise."""
    loads = _global_accesses(kernel.loads, bound, launch.block)
    stores = _global_accesses(kernel.stores, bound, launch.block)
    if loads is None or stores is None:
        return ("block", kernel, launch)
    sets = wave_sets(launch)
    boxes = tuple(
        global_box(b, launch.block, kernel.domain) for b in (sets.current, sets.x, sets.y, sets.z)
    )
    return ("global", loads, stores, kernel.domain, boxes)


# --------------------------------------------------------------------------
# A lower bound of the DRAM volume without the wave sets


def _solve(rows: list[list[Fraction]], rhs: list[Fraction]) -> list[Fraction] | None | str:
    """Solve ``rows @ u = rhs`` exactly. Returns the unique solution, None
    if inconsistent, or "rank" when the columns are dependent."""
    m = [r[:] + [b] for r, b in zip(rows, rhs)]
    n = len(rows[0]) if rows else 0
    piv_row = 0
    pivots = []
    for col in range(n):
        p = next((i for i in range(piv_row, len(m)) if m[i][col] != 0), None)
        if p is None:
            return "rank"
        m[piv_row], m[p] = m[p], m[piv_row]
        for i in range(len(m)):
            if i != piv_row and m[i][col] != 0:
                f = m[i][col] / m[piv_row][col]
                m[i] = [a - f * b for a, b in zip(m[i], m[piv_row])]
        pivots.append(piv_row)
        piv_row += 1
    if any(r[-1] != 0 for r in m[piv_row:]):
        return None
    return [m[pivots[c]][-1] / m[pivots[c]][c] for c in range(n)]


def _injective_affine(
    acc: Access, bound: dict[SymForm, LinForm], block: Block, active: list[int]
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]] | None:
    """(matrix on the active global coordinates, constants) of an access
    whose index is affine in the global coordinates and injective on them."""
    rows, consts = [], []
    for f in acc.forms:
        g = global_function(bound[f], block)
        if g is None or g[2] or g[3] != 1:
            return None
        rows.append(tuple(g[1][d] for d in active))  # type: ignore[index]
        consts.append(g[0])
    if active and _solve([[Fraction(v) for v in r] for r in rows],
                         [Fraction(0)] * len(rows)) == "rank":
        return None
    return tuple(rows), tuple(consts)  # type: ignore[return-value]


def _disjoint(
    rows: tuple[tuple[int, ...], ...], delta: Sequence[int], extents: list[int]
) -> bool:
    """Whether ``A g + c1`` and ``A g' + c2`` never meet for g, g' in the
    domain box, with ``A`` injective and ``delta = c2 - c1``: a meeting needs
    ``A u = -delta`` with an integer ``u`` shorter than the box."""
    if not extents:
        return any(delta)
    u = _solve([[Fraction(v) for v in r] for r in rows], [Fraction(-v) for v in delta])
    if u is None:
        return True
    assert not isinstance(u, str)
    return any(x.denominator != 1 or abs(x) >= n for x, n in zip(u, extents))


def compulsory_bytes(
    accesses: tuple[Access, ...],
    bound: dict[SymForm, LinForm],
    block: Block,
    domain: tuple[int, int, int],
) -> float:
    """A lower bound of the bytes per thread that the wave's image of
    ``accesses`` holds in the paper's sector space (MODEL.md §6).

    An access whose index is affine and injective in the global thread
    coordinates maps the wave's threads to as many distinct elements.
    Accesses of one field with the same index matrix and pairwise disjoint
    images (their offset is not a difference of two domain points, e.g.
    ``2y`` and ``2y+1``) add up. A 32 B sector holds at most
    ``32 / itemsize`` elements of a field, so the image covers at least
    ``elements * itemsize`` bytes. Summed over fields, taking per field the
    largest pairwise-disjoint group found greedily.
    """
    active = [d for d in range(3) if domain[d] > 1]
    extents = [domain[d] for d in active]
    total = 0.0
    by_field: dict[str, list[Access]] = {}
    for acc in accesses:
        by_field.setdefault(acc.field.name, []).append(acc)
    for accs in by_field.values():
        groups: dict[tuple[tuple[int, ...], ...], list[tuple[int, ...]]] = {}
        for acc in accs:
            aff = _injective_affine(acc, bound, block, active)
            if aff is None:
                continue
            rows, c = aff
            chosen = groups.setdefault(rows, [])
            if all(_disjoint(rows, [a - b for a, b in zip(c, o)], extents) for o in chosen):
                chosen.append(c)
        best = max((len(g) for g in groups.values()), default=0)
        total += best * accs[0].field.itemsize
    return total


def _curve_range(curve: Gompertz, lo: float, hi: float) -> tuple[float, float]:
    """Min and max of a capacity curve on ``[lo, hi]`` (``hi`` may be inf).
    A Gompertz curve is monotone (its derivative has the sign of a*b*c), so
    the extremes are at the ends."""

    def at(x: float) -> float:
        if math.isinf(x):
            if curve.c == 0 or curve.b == 0:
                g = curve.a * math.exp(-curve.b)
            elif curve.c > 0:
                g = curve.a
            else:
                g = 0.0 if curve.b > 0 else math.copysign(math.inf, curve.a)
            return 1.0 - g if curve.complement else g
        return curve(x)

    ends = (at(lo), at(hi))
    return min(ends), max(ends)


def dram_lower_bound(
    load_bytes: float, store_bytes: float, l2_store: float, curves: CapacityFits, lups: int
) -> float:
    """A lower bound of ``memLoadV3 + memStoreV2`` (B/lup) of ``model.finish``
    (MODEL.md §6) from per-thread lower bounds of the wave's new load and
    store bytes (:func:`compulsory_bytes`), without the wave sets.

    * The overlaps are disjoint parts of the current image, so
      ``sum Overlap_i <= New_load``; with ``h+`` the largest value of
      ``h_xy`` and ``h_z`` on the clamp range of ``O`` (and at least 0),
      ``memLoadV2 >= (1 - h+) * memLoadV1`` when ``h+ <= 1``; else no bound.
    * ``memStoreV1 = New_store`` per lattice update.
    * ``storeEvicts = max(0, L2Store - memStoreV1) * s(O2)`` with ``O2 >= 0``
      is at least 0 when ``s >= 0`` there, else at least ``min s * L2Store``;
      it enters twice (``memStoreV2`` and ``memLoadV3``).
    """
    lo, hi = OVERSUBSCRIPTION_RANGE
    h_plus = max(0.0, _curve_range(curves.h_xy, lo, hi)[1], _curve_range(curves.h_z, lo, hi)[1])
    if h_plus > 1.0:
        return -math.inf
    s_min = _curve_range(curves.s, 0.0, math.inf)[0]
    evicts = 0.0 if s_min >= 0 else s_min * l2_store
    return ((1.0 - h_plus) * load_bytes + store_bytes) / lups + 2.0 * evicts


_EMPTY_WAVE = WaveVolumes(0.0, 0.0, (0.0, 0.0), (0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0), 1, 0)


def stage_limits(
    stage: BlockStage, curves: CapacityFits, model: str = DEFAULT_MODEL
) -> dict[str, float | None]:
    """The FP, L1 and L2 limits of a configuration from its block stage
    alone: ``model.finish`` computes them without looking at the wave, so
    they are taken from it on an empty wave (the DRAM limit is dropped)."""
    limits = finish(stage, _EMPTY_WAVE, curves, model).limits
    return {k: v for k, v in limits.items() if k != "dram"}


def peak_dram_bandwidth(m: Machine, model: str = DEFAULT_MODEL) -> float:
    """The largest DRAM bandwidth ``model`` can assign to any kernel."""
    if model == "paper":
        return m.dram_bandwidth
    return max(v for v in (m.dram_bandwidth, m.dram_bw_read, m.dram_bw_copy, m.dram_bw_write)
               if v is not None)


def upper_bound(
    stage: BlockStage, dram_lb: float, curves: CapacityFits, model: str = DEFAULT_MODEL
) -> float:
    """An upper bound of the predicted GLup/s (see the module docstring).
    Both models predict at most the smallest of their limits (the default
    model's overlap and partial waves only add time), and no DRAM limit
    exceeds the peak bandwidth over the lower bound of the volume."""
    limits = [v for v in stage_limits(stage, curves, model).values() if v is not None]
    if dram_lb > 0:
        limits.append(peak_dram_bandwidth(stage.machine, model) / dram_lb)
    return min(limits, default=math.inf)


# --------------------------------------------------------------------------
# Work items run in worker processes (module level: they must pickle)


@dataclass(frozen=True)
class _StageResult:
    launch: Launch
    l1_cycles: float
    footprint: Footprint
    wave_key: object
    load_bytes: float
    store_bytes: float


def _stage_chunk(
    kernel: Kernel, machine: Machine, blocks: list[Block]
) -> list[_StageResult | str]:
    out: list[_StageResult | str] = []
    for b in blocks:
        try:
            st = block_stage(kernel, machine, b)
        except LaunchError as exc:
            out.append(str(exc))
            continue
        out.append(_StageResult(
            launch=st.launch,
            l1_cycles=st.l1_cycles,
            footprint=st.footprint,
            wave_key=wave_key(kernel, st.launch, st.bound),
            load_bytes=compulsory_bytes(kernel.loads, st.bound, st.launch.block, kernel.domain),
            store_bytes=compulsory_bytes(kernel.stores, st.bound, st.launch.block, kernel.domain),
        ))
    return out


def _wave_chunk(kernel: Kernel, launches: list[Launch], address: str) -> list[WaveVolumes]:
    accesses = kernel.loads + kernel.stores
    return [
        wave_volumes(kernel, la, bind_all((a.forms for a in accesses), la.block),
                     address=address)
        for la in launches
    ]


class _Runner:
    """Runs chunks of work on an executor or inline, reporting progress."""

    def __init__(
        self,
        executor: Executor | None,
        workers: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.executor = executor
        self.workers = workers
        self.progress = progress
        self.done = 0
        self.total = 0

    def add_total(self, n: int) -> None:
        self.total += n
        self._report()

    def _report(self) -> None:
        if self.progress is not None:
            self.progress(self.done, self.total)

    def map(self, fn: Callable[..., list[object]], tasks: list[tuple[object, ...]],
            sizes: list[int]) -> list[list[object]]:
        results: list[list[object]] = [[] for _ in tasks]
        if self.executor is None:
            for i, args in enumerate(tasks):
                results[i] = fn(*args)
                self.done += sizes[i]
                self._report()
            return results
        futures: dict[Future[list[object]], int] = {
            self.executor.submit(fn, *args): i for i, args in enumerate(tasks)
        }
        for fut in as_completed(futures):
            i = futures[fut]
            results[i] = fut.result()
            self.done += sizes[i]
            self._report()
        return results


def _chunks(items: list[object], parts: int) -> list[list[object]]:
    size = max(1, math.ceil(len(items) / max(1, parts)))
    return [items[i:i + size] for i in range(0, len(items), size)]


# --------------------------------------------------------------------------
# The ranking


def _mp_context() -> multiprocessing.context.BaseContext | None:
    """Fork where it is safe (no other thread yet): workers then start
    without importing warpspeed again. Else the platform's default."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return None


def _variants(kernels: KernelSource, folds: Sequence[Fold] | None) -> list[tuple[Fold, Kernel]]:
    if isinstance(kernels, Kernel):
        if folds is not None and any(tuple(f) != kernels.fold for f in folds):
            raise LaunchError(
                "folding variants need a kernel factory fold -> Kernel or a mapping "
                "fold -> Kernel, not a single kernel"
            )
        return [(kernels.fold, kernels)]
    if isinstance(kernels, Mapping):
        if folds is not None:
            raise LaunchError("give folds either as the mapping's keys or as folds=, not both")
        out = [(tuple(f), k) for f, k in kernels.items()]
    elif callable(kernels):
        out = [(tuple(f), kernels(tuple(f))) for f in (folds or DEFAULT_FOLDS)]
    else:
        raise TypeError(
            f"rank() needs a Kernel, a mapping fold -> Kernel or a factory, got "
            f"{type(kernels).__name__}"
        )
    for f, k in out:
        if not isinstance(k, Kernel):
            raise TypeError(f"the kernel for fold {f} is a {type(k).__name__}, not a ws.Kernel")
        if len(f) != 3:
            raise LaunchError(f"folds are three factors (x, y, z), got {f}")
    return out  # type: ignore[return-value]


def _sort_key(p: Prediction, cfg: Config) -> tuple[float, Fold, Block]:
    return (-p.glups, cfg.fold, cfg.block)


def rank(
    kernels: KernelSource,
    machine: str | Path | Machine,
    *,
    threads: Iterable[int] = DEFAULT_THREADS,
    folds: Sequence[Fold] | None = None,
    blocks: Iterable[Block] | None = None,
    all_shapes: bool = False,
    top: int | None = None,
    jobs: int | None = None,
    executor: Executor | None = None,
    fits: str | Path | CapacityFits | None = None,
    progress: Callable[[int, int], None] | None = None,
    model: str = DEFAULT_MODEL,
) -> Ranking:
    """Rank the launch configurations of a kernel on ``machine`` by predicted
    GLup/s (MODEL.md §8; see the module docstring for space, trimming,
    equivalence and pruning).

    ``kernels``: one Kernel, a mapping ``fold -> Kernel``, or a factory
    called once per fold of ``folds`` (default :data:`DEFAULT_FOLDS`).
    ``blocks`` replaces the generated shapes by an explicit list.
    ``top``: keep the best ``top`` configurations and prune the rest.
    ``executor``: any ``concurrent.futures.Executor``; else a local process
    pool of ``jobs`` workers (default: all CPUs; 1 runs inline).
    ``model``: the timing model (:data:`warpspeed.timing.MODELS`).
    A kernel whose block size is fixed (``Kernel.fixed_block``) is ranked
    with that block only, and :attr:`Ranking.notes` says so.
    """
    if model not in MODELS:
        raise LaunchError(f"unknown model {model!r}; the models are {', '.join(MODELS)}")
    m = load_machine(machine)
    curves = fits if isinstance(fits, CapacityFits) else load_fits(fits or m.fits)
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise LaunchError(f"top must be a positive integer, got {top!r}")
    variants = _variants(kernels, folds)

    # The design space per variant, trimmed.
    excluded: list[Excluded] = []
    if blocks is None:
        shapes: list[Block] = []
        for t in dict.fromkeys(threads):
            if t > m.max_threads_per_block:
                raise LaunchError(
                    f"{t} threads per block: {m.name} allows at most {m.max_threads_per_block}"
                )
            shapes += block_shapes(t, all_shapes)
    else:
        shapes = [tuple(int(v) for v in b) for b in blocks]  # type: ignore[misc]
    shapes = list(dict.fromkeys(shapes))

    # Equivalence classes of whole predictions (module docstring).
    candidates: dict[object, list[tuple[int, Config, Launch]]] = {}
    kernel_ids: dict[Kernel, int] = {}
    notes: list[str] = []
    for vi, (fold, k) in enumerate(variants):
        kid = kernel_ids.setdefault(replace(k, name=""), vi)
        own = shapes
        if k.fixed_block is not None:
            own = [k.fixed_block]
            notes.append(
                f"fold {fold}: the kernel's indexing scheme fixes the block to "
                f"{k.fixed_block}; it is the only configuration ranked"
            )
        for b in own:
            trim = blocks is None and k.fixed_block is None
            reason = trim_reason(b, k.domain) if trim else None
            if reason is None:
                try:
                    launch = make_launch(k, m, b)
                except LaunchError as exc:
                    reason = str(exc)
            if reason is not None:
                excluded.append(Excluded(fold, b, reason))
                continue
            canon = canonical_block(launch.block, k.domain)
            group = (kid, canon, launch.occupancy.blocks_per_sm)
            candidates.setdefault(group, []).append((kid, Config(fold, launch.block), launch))
    classes: dict[object, list[tuple[Config, Launch]]] = {}
    rep_variant: dict[object, tuple[int, Block]] = {}
    for group, members in candidates.items():
        for kid, cfg, launch in members:
            key: object = (kid, cfg.block)
            if len(members) > 1:  # the same clipped block: identical if the forms are global
                k = variants[kid][1]
                accesses = k.loads + k.stores
                bound = bind_all((a.forms for a in accesses), launch.block)
                forms = _global_accesses(accesses, bound, launch.block)
                if forms is not None:
                    key = (group, forms)
            classes.setdefault(key, []).append((cfg, launch))
            rep_variant.setdefault(key, (kid, cfg.block))
    if not classes:
        raise LaunchError(
            "no configuration is left to rank: every block is too large for the domain or "
            "cannot launch on " + m.name + "; try fewer threads or explicit blocks"
        )

    own_pool = executor is None and (jobs or os.cpu_count() or 1) > 1
    workers = jobs or os.cpu_count() or 1
    pool: Executor | None = executor
    if own_pool:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=_mp_context())
    try:
        runner = _Runner(pool, workers, progress)
        r = _evaluate(variants, m, curves, classes, rep_variant, excluded, runner, top, model)
        return replace(r, notes=tuple(notes))
    finally:
        if own_pool and pool is not None:
            pool.shutdown(cancel_futures=True)


def _evaluate(
    variants: list[tuple[Fold, Kernel]],
    m: Machine,
    curves: CapacityFits,
    classes: dict[object, list[tuple[Config, Launch]]],
    rep_variant: dict[object, tuple[int, Block]],
    excluded: list[Excluded],
    runner: _Runner,
    top: int | None,
    model: str,
) -> Ranking:
    keys = list(classes)
    runner.add_total(len(keys))

    # Phase 1: block stages of one representative per class, in parallel.
    by_variant: dict[int, list[object]] = {}
    for key in keys:
        by_variant.setdefault(rep_variant[key][0], []).append(key)
    tasks, sizes, owners = [], [], []
    for vi, ks in by_variant.items():
        for chunk in _chunks(ks, runner.workers * 3):
            tasks.append((variants[vi][1], m, [rep_variant[k][1] for k in chunk]))
            sizes.append(len(chunk))
            owners.append(chunk)
    stage_of: dict[object, tuple[BlockStage, _StageResult]] = {}
    for chunk, results in zip(owners, runner.map(_stage_chunk, tasks, sizes)):
        for key, res in zip(chunk, results):
            if isinstance(res, str):
                for cfg, _ in classes[key]:
                    excluded.append(Excluded(cfg.fold, cfg.block, res))
                continue
            k = variants[rep_variant[key][0]][1]
            # Workers send back the numbers only; finish() needs no bound forms.
            stage = BlockStage(k, m, res.launch, {}, res.l1_cycles, res.footprint)
            stage_of[key] = (stage, res)
    live = [k for k in keys if k in stage_of]

    # Order by the upper bound when pruning; every class otherwise.
    if top is not None:
        def bound_of(key: object) -> float:
            stage, res = stage_of[key]
            lups = stage.kernel.lups_per_thread
            lb = dram_lower_bound(res.load_bytes, res.store_bytes, stage.footprint.l2_store,
                                  curves, lups)
            return upper_bound(stage, lb, curves, model)

        bounds = {k: bound_of(k) for k in live}
        live.sort(key=lambda k: -bounds[k])
    waves: dict[object, WaveVolumes] = {}
    pending = {stage_of[k][1].wave_key for k in live}
    runner.add_total(len(pending))

    predictions: list[tuple[Prediction, Config]] = []
    evaluated = skipped = 0
    batch = len(live) if top is None else max(top, 4 * runner.workers)
    pos = 0
    while pos < len(live):
        round_keys = live[pos:pos + batch]
        if top is not None and len(predictions) >= top:
            kth = sorted((p.glups for p, _ in predictions), reverse=True)[top - 1]
            round_keys = [k for k in round_keys if bounds[k] >= kth]  # sorted: a prefix
            if not round_keys:
                skipped = len(live) - pos
                break
        pos += len(round_keys)
        todo: dict[object, tuple[Kernel, Launch]] = {}
        for key in round_keys:
            stage, res = stage_of[key]
            if res.wave_key not in waves:
                todo.setdefault(res.wave_key, (stage.kernel, stage.launch))
        _compute_waves(todo, waves, runner, MODELS[model].address)
        for key in round_keys:
            stage, res = stage_of[key]
            p = finish(stage, waves[res.wave_key], curves, model)
            evaluated += 1
            for cfg, launch in classes[key]:
                q = p if cfg.block == p.block else replace(
                    p, block=cfg.block, occupancy_limited_by=launch.occupancy.limited_by
                )
                predictions.append((q, cfg))
    runner.total = runner.done  # pruned waves will not run
    runner.add_total(0)

    predictions.sort(key=lambda pc: _sort_key(*pc))
    kept = predictions if top is None else predictions[:top]
    return Ranking(
        machine=m.name,
        kernel=variants[0][1].name,
        predictions=tuple(p for p, _ in kept),
        configurations=sum(len(v) for v in classes.values()),
        excluded=tuple(excluded),
        classes=tuple(tuple(c for c, _ in v) for v in classes.values() if len(v) > 1),
        stages=len(stage_of),
        waves=len(waves),
        evaluated=evaluated,
        skipped=skipped,
        top=top,
        model=model,
    )


def _compute_waves(
    todo: dict[object, tuple[Kernel, Launch]], waves: dict[object, WaveVolumes], runner: _Runner,
    address: str,
) -> None:
    """Wave volumes of the distinct wave keys in ``todo``, in parallel."""
    by_kernel: dict[int, list[object]] = {}
    kernels: dict[int, Kernel] = {}
    for wk, (k, _) in todo.items():
        by_kernel.setdefault(id(k), []).append(wk)
        kernels[id(k)] = k
    tasks, sizes, owners = [], [], []
    for kid, wks in by_kernel.items():
        for chunk in _chunks(wks, runner.workers * 2):
            tasks.append((kernels[kid], [todo[w][1] for w in chunk], address))
            sizes.append(len(chunk))
            owners.append(chunk)
    for chunk, results in zip(owners, runner.map(_wave_chunk, tasks, sizes)):
        for wk, wv in zip(chunk, results):
            waves[wk] = wv  # type: ignore[assignment]


__all__ = [
    "DEFAULT_FOLDS",
    "DEFAULT_THREADS",
    "MAX_BLOCK_DIMS",
    "Config",
    "Excluded",
    "Ranking",
    "block_shapes",
    "canonical_block",
    "compulsory_bytes",
    "dram_lower_bound",
    "global_function",
    "peak_dram_bandwidth",
    "rank",
    "stage_limits",
    "trim_reason",
    "upper_bound",
    "wave_key",
]
