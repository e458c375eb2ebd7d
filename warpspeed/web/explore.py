"""The web calculator's explorations of the design space, without Panel:
the layer-condition sweep (the paper's Fig. 23 for the page's kernel) and
the bounded ranking. Form values are read by :mod:`warpspeed.web.state`.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import WarpspeedError
from ..input.kernel import Kernel
from ..model import Prediction, predict
from ..search.rank import Ranking, block_shapes, rank
from .state import (
    MAX_FOLD,
    FieldError,
    Form,
    build_kernel,
    build_machine,
    checked_text,
    hand_kernel,
    model_of,
    parse_hand,
    parse_ints,
    stencil_function,
    stencil_kernel,
    stencil_params,
    takes_fold,
    triple,
    vendor_target,
)

#: A ranking: most configurations, most thread counts, wall-time budget (s).
MAX_RANK_CONFIGS = 200
MAX_THREAD_COUNTS = 4
RANK_BUDGET_S = 60.0


class RankingTimeout(WarpspeedError):
    """A ranking ran over its time budget."""


# --------------------------------------------------------------------------
# Layer conditions


@dataclass(frozen=True)
class LayerConditions:
    """Predictions of the kernel at constant total size with ``N x N`` planes
    (``planes``), one series per block (label to predictions)."""

    planes: tuple[int, ...]
    series: dict[str, tuple[Prediction, ...]]
    total: int
    machine: str
    notes: tuple[str, ...] = ()


def plane_sizes(total: int, step: int, count: int = 10) -> list[tuple[int, int]]:
    """``(N, Z)`` pairs: N on a geometric grid from 64 to the plane with
    Z >= 8, multiples of ``step``, ``N * N * Z`` close to ``total``."""
    hi = math.sqrt(total / 8)
    lo = min(64.0, hi)
    out: dict[int, int] = {}
    for i in range(count):
        n = max(step, step * round(lo * (hi / lo) ** (i / max(1, count - 1)) / step))
        out.setdefault(n, 0)
    return [(n, max(1, round(total / (n * n)))) for n in sorted(out)]


def layer_conditions(form: Form, depths: Sequence[int] = (1, 2, 4, 8)) -> LayerConditions:
    """DRAM volume per lattice update against the xy extent at the current
    total size, for blocks of the current thread count and y extent with the
    z extents ``depths`` and the current one (the paper's Fig. 23; drawn by
    :func:`warpspeed.reports.plot.sweep`)."""
    machine = build_machine(form)
    kernel = build_kernel(form, machine=machine)
    model = model_of(form)
    bx, by, bz = triple(form.block, "block", "the block size")
    fx, fy, fz = kernel.fold
    if kernel.domain[2] == 1:
        raise FieldError("domain", "the layer-condition sweep needs a 3-D domain")
    total = math.prod(kernel.domain) * math.prod(kernel.fold)
    step = math.lcm(32, fx, fy)
    threads = bx * by * bz
    blocks = []
    for d in sorted({*depths, bz}):
        if threads % (by * d) == 0 and d <= 64:
            blocks.append((threads // (by * d), by, d))
    if form.mode == "hand":
        spec = parse_hand(form)

        def at(n: int, z: int) -> Kernel:
            return hand_kernel(spec, (n // fx, n // fy, z // fz))
    else:
        params = stencil_params(form)
        if "shape" not in inspect.signature(stencil_function(form.stencil)).parameters:
            raise FieldError("params", f"{form.stencil} has no shape parameter to vary")

        def at(n: int, z: int) -> Kernel:
            p = {**params, "shape": (n, n, z)}
            return stencil_kernel(form.stencil, tuple(sorted(p.items())), kernel.fold,
                                  vendor_target(machine))
    planes = [(n, max(fz, fz * round(z / fz))) for n, z in plane_sizes(total, step)]
    kernels = [at(n, z) for n, z in planes]
    series: dict[str, tuple[Prediction, ...]] = {}
    notes = []
    for b in blocks:
        label = "x".join(map(str, b))
        try:
            series[label] = tuple(predict(k, machine, b, model=model) for k in kernels)
        except WarpspeedError as exc:
            notes.append(f"block {label}: {exc}")
    if not series:
        raise FieldError("block", "; ".join(notes) or "no block of this size fits")
    return LayerConditions(tuple(n for n, _ in planes), series, total, machine.name,
                           tuple(notes))


# --------------------------------------------------------------------------
# Ranking


def rank_form(form: Form, progress: Callable[[int, int], None] | None = None,
              budget: float = RANK_BUDGET_S) -> Ranking:
    """Rank the design space of ``form`` (:func:`warpspeed.rank`, inline,
    at most :data:`MAX_RANK_CONFIGS` configurations and ``budget`` seconds:
    the budget is checked whenever the ranking reports progress)."""
    machine = build_machine(form)
    model = model_of(form)
    threads = parse_ints(form.threads, "threads", "thread counts", None, 1, 1024)
    if len(set(threads)) > MAX_THREAD_COUNTS:
        raise FieldError("threads", f"rank at most {MAX_THREAD_COUNTS} thread counts at once")
    source: object
    if form.mode == "stencil" and takes_fold(form.stencil):
        items = checked_text(form.folds, "folds", 400).split() or ["1,1,1"]
        folds = list(dict.fromkeys(triple(f, "folds", "a fold", MAX_FOLD) for f in items))
        kernels = {f: build_kernel(form, f, machine) for f in folds}
        source = kernels
    else:
        kernel = build_kernel(form, machine=machine)
        folds, source = [kernel.fold], kernel
    shapes = sum(len(block_shapes(t, form.all_shapes)) for t in set(threads))
    configs = shapes * len(folds)
    if configs > MAX_RANK_CONFIGS:
        raise FieldError("threads", f"{configs} configurations; at most {MAX_RANK_CONFIGS} are "
                         "ranked at once: fewer thread counts or folds, or powers of two only")
    start = time.monotonic()

    def report(done: int, total: int) -> None:
        if time.monotonic() - start > budget:
            raise RankingTimeout(f"the ranking ran over its budget of {budget:.0f} s after "
                                 f"{done} of {total} steps; rank fewer configurations")
        if progress is not None:
            progress(done, total)

    try:
        return rank(source, machine, threads=tuple(dict.fromkeys(threads)),
                    all_shapes=form.all_shapes, jobs=1, progress=report, model=model)
    except RankingTimeout:
        raise
    except WarpspeedError as exc:
        raise FieldError("threads", str(exc)) from None


__all__ = [
    "MAX_RANK_CONFIGS",
    "RANK_BUDGET_S",
    "LayerConditions",
    "RankingTimeout",
    "layer_conditions",
    "plane_sizes",
    "rank_form",
]
