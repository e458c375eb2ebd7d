"""Pruning the ranking: which launches provably share a prediction or a wave
computation, and bounds of a prediction from the block stage alone
(MODEL.md §6, §8), used by :func:`warpspeed.search.rank.rank`.

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
the ranking calls these functions.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from ..input.addresses import kernel_forms, per_tuple
from ..input.expr import LinForm, SymForm, bind_all, global_terms
from ..input.kernel import Access, Field, Kernel
from ..machine import Machine
from ..model import BlockStage, finish
from ..timing import DEFAULT_MODEL, MODELS
from ..volumes.capacity import CapacityFits, Gompertz
from ..volumes.direct_images import global_box
from ..volumes.launch import Launch, wave_sets
from ..volumes.levels import OVERSUBSCRIPTION_RANGE
from ..volumes.waves import WaveVolumes

Block = tuple[int, int, int]
#: A bound form as a function of the global thread coordinates
#: (:func:`global_function`): constant, coefficients, floors ``(c, inner, div)``, divisor.
type GlobalFunction = tuple[int, tuple[int, ...], tuple[tuple[int, GlobalFunction, int], ...],
                            int]
#: Every access's field and the global functions of its index forms (None where a
#: form is no such function).
type AccessFunctions = tuple[tuple[Field, tuple[GlobalFunction | None, ...]], ...]


# --------------------------------------------------------------------------
# Forms as functions of the global thread coordinates


def global_function(form: LinForm, block: Block) -> GlobalFunction | None:
    """``form`` as a function of the global coordinates ``b * B + t``, or
    None when it depends on the block and thread indices separately.

    A bound form ``const + sum_d (c_b[d] * b_d + c_t[d] * t_d)`` is such a
    function iff ``c_b[d] == B_d * c_t[d]`` for every d, and likewise for
    the inner forms of its floors. Two blocks whose forms give the same
    tuple address memory identically at every global thread coordinate.
    """
    if any(form.coef[d] != block[d] * form.coef[3 + d] for d in range(3)):
        return None
    floors: list[tuple[int, GlobalFunction, int]] = []
    for c, inner, d in form.floors:
        g = global_function(inner, block)
        if g is None:
            return None
        floors.append((c, g, d))
    return (form.const, tuple(form.coef[3:]), tuple(floors), form.div)


def static_global(form: SymForm) -> GlobalFunction | None:
    """:func:`global_function` of ``form`` bound to any block, when the form
    shows it is the same for every block (:func:`warpspeed.input.expr.global_terms`:
    ``const + sum_d c_d * (b_d * B_d + t_d)``); None otherwise (then it is
    computed per block)."""
    g = global_terms(form)
    return None if g is None else (g[0], g[1], (), 1)


#: :func:`static_global` of every access of an access tuple, or None (kept
#: per tuple).
_STATIC: dict[int, tuple[object, AccessFunctions | None]] = {}


def _static_accesses(accesses: tuple[Access, ...]) -> AccessFunctions | None:
    def compute() -> AccessFunctions | None:
        out = tuple((acc.field, tuple(static_global(f) for f in acc.forms))
                    for acc in accesses)
        return None if any(g is None for _, forms in out for g in forms) else out

    return per_tuple(_STATIC, accesses, compute)


def global_accesses(
    accesses: tuple[Access, ...], bound: dict[SymForm, LinForm], block: Block
) -> tuple[object, ...] | None:
    """Every access's forms as :func:`global_function` tuples (with its
    field), or None when one is not a function of the global coordinates
    at ``block``; the same tuple for every block when the forms show it
    (:func:`static_global`)."""
    static = _static_accesses(accesses)
    if static is not None:
        return static
    out = _at_block(accesses, bound, block)
    return None if any(g is None for _, forms in out for g in forms) else out


def _at_block(accesses: tuple[Access, ...], bound: dict[SymForm, LinForm], block: Block
              ) -> AccessFunctions:
    """Every access's field and :func:`global_function` of each bound form
    (None where a form is no such function)."""
    return tuple((acc.field, tuple(global_function(bound[f], block) for f in acc.forms))
                 for acc in accesses)


def wave_key(kernel: Kernel, launch: Launch, bound: dict[SymForm, LinForm] | None = None
             ) -> object:
    """A key equal for two launches exactly when their wave volumes provably
    agree (module docstring), or unique to the launch otherwise. ``bound``:
    the kernel's forms bound to the launch's block, bound here when needed
    and not given (accesses whose forms are the same at every block need
    none)."""
    if bound is None and (_static_accesses(kernel.loads) is None
                          or _static_accesses(kernel.stores) is None):
        bound = bind_all([kernel_forms(kernel)], launch.block)
    loads = global_accesses(kernel.loads, bound or {}, launch.block)
    stores = global_accesses(kernel.stores, bound or {}, launch.block)
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
    forms: tuple[GlobalFunction | None, ...], active: tuple[int, ...]
) -> tuple[tuple[tuple[int, ...], ...], tuple[int, ...]] | None:
    """(matrix on the active global coordinates, constants) of an access
    whose index forms (as :func:`global_function` tuples) are affine in the
    global coordinates and injective on them."""
    rows, consts = [], []
    for g in forms:
        if g is None or g[2] or g[3] != 1:
            return None
        rows.append(tuple(g[1][d] for d in active))
        consts.append(g[0])
    matrix = tuple(rows)
    if active and not _injective(matrix):
        return None
    return matrix, tuple(consts)


@functools.lru_cache(maxsize=4096)
def _injective(rows: tuple[tuple[int, ...], ...]) -> bool:
    """Whether the columns of ``rows`` are independent (cached: every block
    of a ranking asks about the same few matrices)."""
    return _solve([[Fraction(v) for v in r] for r in rows], [Fraction(0)] * len(rows)) != "rank"


@functools.lru_cache(maxsize=1 << 16)
def _disjoint(
    rows: tuple[tuple[int, ...], ...], delta: tuple[int, ...], extents: tuple[int, ...]
) -> bool:
    """Whether ``A g + c1`` and ``A g' + c2`` never meet for g, g' in the
    domain box, with ``A`` injective and ``delta = c2 - c1``: a meeting needs
    ``A u = -delta`` with an integer ``u`` shorter than the box (cached: the
    accesses' global forms are the same at every block of a ranking)."""
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
    active = tuple(d for d in range(3) if domain[d] > 1)
    extents = tuple(domain[d] for d in active)
    static = _static_accesses(accesses)
    if static is None:
        return _bytes_of(_at_block(accesses, bound, block), active, extents)
    found = per_tuple(_BYTES, accesses, dict)
    key = (active, extents)
    if key not in found:
        found[key] = _bytes_of(static, active, extents)
    return found[key]


#: :func:`compulsory_bytes` of access tuples whose forms are the same at
#: every block (:func:`static_global`), per active axes and extents.
_BYTES: dict[int, tuple[object, dict[tuple[tuple[int, ...], tuple[int, ...]], float]]] = {}


def _bytes_of(per_access: AccessFunctions, active: tuple[int, ...],
              extents: tuple[int, ...]) -> float:
    """:func:`compulsory_bytes` of accesses given as (field, global
    functions of the index forms)."""
    total = 0.0
    by_field: dict[str, list[tuple[Field, tuple[GlobalFunction | None, ...]]]] = {}
    for field, forms in per_access:
        by_field.setdefault(field.name, []).append((field, forms))
    for accs in by_field.values():
        groups: dict[tuple[tuple[int, ...], ...], list[tuple[int, ...]]] = {}
        for _, forms in accs:
            aff = _injective_affine(forms, active)
            if aff is None:
                continue
            rows, c = aff
            chosen = groups.setdefault(rows, [])
            if all(_disjoint(rows, tuple(a - b for a, b in zip(c, o)), extents)
                   for o in chosen):
                chosen.append(c)
        best = max((len(g) for g in groups.values()), default=0)
        total += best * accs[0][0].itemsize
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
    """The largest DRAM bandwidth ``model`` can assign to any kernel (the
    model's own bound, :meth:`warpspeed.timing.base.Timing.peak_dram_bandwidth`);
    a kernel whose data fits in a last-level cache has every DRAM bandwidth
    scaled by ``mall_bandwidth / dram_bandwidth`` (MODEL.md §15)."""
    scale = max(1.0, m.mall_bandwidth / m.dram_bandwidth) if m.mall_bytes else 1.0
    return scale * MODELS[model].peak_dram_bandwidth(m)


def upper_bound(
    stage: BlockStage, dram_lb: float, curves: CapacityFits, model: str = DEFAULT_MODEL
) -> float:
    """An upper bound of the predicted GLup/s (see the module docstring).
    Every model predicts at most the smallest of its limits (the promise of
    :class:`warpspeed.timing.base.Timing`: the default model's overlap and
    partial waves only add time), and no DRAM limit exceeds the model's peak
    bandwidth over the lower bound of the volume."""
    limits = [v for v in stage_limits(stage, curves, model).values() if v is not None]
    if dram_lb > 0:
        limits.append(peak_dram_bandwidth(stage.machine, model) / dram_lb)
    return min(limits, default=math.inf)


__all__ = [
    "compulsory_bytes",
    "dram_lower_bound",
    "global_accesses",
    "global_function",
    "peak_dram_bandwidth",
    "stage_limits",
    "upper_bound",
    "wave_key",
]
