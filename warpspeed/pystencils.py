"""Generation hook for pystencils: pick the block size and the thread folding
by prediction while generating a kernel (MODEL.md §8, ranking).

* :func:`fold_assignments` / :func:`folded_config` make a *thread-folded*
  variant through pystencils itself: the iteration slice steps by ``f``
  along the folded axis and every thread executes ``f`` shifted copies of
  the assignments, so the address expressions are those of the real folded
  kernel. Loads shared by the copies are counted once per thread, as the
  CUDA compiler loads them once (the frontend deduplicates them).
* :func:`predict` predicts one configuration; :func:`create_kernel` ranks
  every block size x folding and returns the pystencils kernel of the best
  configuration with its block size set as the launch configuration's
  default block size.

The ranking is a plain loop over the paper's design space (MODEL.md §8):
powers of two with ``x * y * z == threads``, ``x, y <= 1024``, ``z <= 64``,
and no block dimension larger than the domain needs (the domain extent
rounded up to a power of two).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pystencils as ps
import sympy as sp
from pystencils.backend.kernelcreation.iteration_space import infer_ghost_layers
from pystencils.sympyextensions import TypedSymbol

from .capacity import CapacityFits
from .errors import KernelError, LaunchError
from .frontends.pystencils import Extraction, extract
from .machine import Machine
from .model import Prediction
from .model import predict as ws_predict

Fold = tuple[int, int, int]
DEFAULT_FOLDS: tuple[Fold, ...] = ((1, 1, 1), (1, 2, 1), (1, 1, 2))


def _fold3(fold: Sequence[int]) -> Fold:
    f = tuple(int(v) for v in fold) + (1,) * (3 - len(tuple(fold)))
    if len(f) != 3 or any(v < 1 for v in f):
        raise KernelError(f"fold must be up to three positive integers (x, y, z), got {fold!r}")
    return f  # type: ignore[return-value]


def _collection(assignments: Any) -> ps.AssignmentCollection:
    if isinstance(assignments, ps.AssignmentCollection):
        return assignments
    if isinstance(assignments, ps.Assignment):
        return ps.AssignmentCollection([assignments])
    return ps.AssignmentCollection(list(assignments))


def _spatial_dims(ac: ps.AssignmentCollection) -> int:
    dims = {
        a.field.spatial_dimensions
        for asm in ac.all_assignments
        for a in asm.atoms(ps.Field.Access)
    }
    if len(dims) != 1:
        raise KernelError(
            f"the assignments access fields of {sorted(dims)} spatial dimensions; folding "
            "needs one common dimensionality"
        )
    return dims.pop()


_XI = re.compile(r"xi_(\d+)")


def _renamed(sym: sp.Symbol, name: str) -> sp.Symbol:
    if isinstance(sym, TypedSymbol):
        return TypedSymbol(name, sym.dtype)
    return sp.Symbol(name, **sym.assumptions0)


def _copy_names(local: Sequence[sp.Symbol], suffix: str, copy: int) -> dict[str, str]:
    """New names of the local symbols of one folded copy.

    pystencils' AssignmentCollection numbers its subexpression symbols
    ``xi_N`` and parses every name containing ``xi_`` as such, so those get
    fresh numbers (``xi_{N + copy * span}``); other names get ``suffix``.
    """
    numbered = [int(m.group(1)) for s in local if (m := _XI.fullmatch(s.name))]
    span = max(numbered, default=-1) + 1
    out = {}
    for s in local:
        m = _XI.fullmatch(s.name)
        out[s.name] = f"xi_{int(m.group(1)) + copy * span}" if m else s.name + suffix
        if not m and "xi_" in out[s.name]:
            raise KernelError(
                f"cannot fold: the local symbol {s.name!r} contains 'xi_', which pystencils "
                "reserves for numbered subexpressions; rename it"
            )
    return out


def fold_assignments(assignments: Any, fold: Sequence[int]) -> ps.AssignmentCollection:
    """``prod(fold)`` copies of the assignments, copy ``(i, j, k)`` shifted by
    ``(i, j, k)`` lattice points; local symbols are renamed per copy.

    With :func:`folded_config` (iteration slice step ``fold``) each thread
    computes ``fold`` consecutive points along each axis (MODEL.md §1:
    lattice updates per thread = ``prod(fold)``).
    """
    f = _fold3(fold)
    ac = _collection(assignments)
    if f == (1, 1, 1):
        return ac
    dim = _spatial_dims(ac)
    if any(v != 1 for v in f[dim:]):
        raise KernelError(f"fold {f} folds an axis that {dim}-dimensional fields do not have")
    local = [a.lhs for a in ac.all_assignments if not isinstance(a.lhs, ps.Field.Access)]
    accesses = set().union(*(asm.atoms(ps.Field.Access) for asm in ac.all_assignments))
    subexpressions: list[ps.Assignment] = []
    main: list[ps.Assignment] = []
    for copy, shift in enumerate(itertools.product(*(range(v) for v in f[:dim]))):
        suffix = "_f" + "".join(str(s) for s in shift)
        names = _copy_names(local, suffix, copy)
        table: dict[sp.Basic, sp.Basic] = (
            {s: _renamed(s, names[s.name]) for s in local} if copy else {}
        )
        table.update({a: a.get_shifted(*shift) for a in accesses if not a.is_absolute_access})
        subexpressions += [
            ps.Assignment(a.lhs.xreplace(table), a.rhs.xreplace(table)) for a in ac.subexpressions
        ]
        main += [
            ps.Assignment(a.lhs.xreplace(table), a.rhs.xreplace(table))
            for a in ac.main_assignments
        ]
    return ps.AssignmentCollection(main, subexpressions)


def _interior(ac: ps.AssignmentCollection, config: ps.CreateKernelConfig) -> list[tuple[int, int]]:
    """Ghost layers (low, high) per spatial axis the kernel iterates within."""
    dim = _spatial_dims(ac)
    if config.is_option_set("iteration_slice"):
        raise KernelError(
            "folding a kernel that already has an iteration_slice is not supported; give "
            "ghost_layers instead"
        )
    gl = config.get_option("ghost_layers")
    if gl is None:
        gl = infer_ghost_layers(ac)
    if isinstance(gl, int):
        return [(gl, gl)] * dim
    return [(g, g) if isinstance(g, int) else (int(g[0]), int(g[1])) for g in gl]


def _field_shape(ac: ps.AssignmentCollection) -> tuple[int, ...]:
    shapes = {
        tuple(a.field.spatial_shape)
        for asm in ac.all_assignments
        for a in asm.atoms(ps.Field.Access)
    }
    if len(shapes) != 1 or not all(isinstance(s, (int, sp.Integer)) for s in next(iter(shapes))):
        raise KernelError(
            f"folding needs fields of one fixed spatial shape, got {sorted(map(str, shapes))}"
        )
    return tuple(int(s) for s in shapes.pop())


def folded_config(
    assignments: Any, config: ps.CreateKernelConfig | None, fold: Sequence[int]
) -> ps.CreateKernelConfig:
    """A copy of ``config`` whose iteration slice steps by ``fold`` (and that
    allows the ``prod(fold)`` writes per thread to one field)."""
    f = _fold3(fold)
    cfg = (config or ps.CreateKernelConfig(target=ps.Target.CUDA)).copy()
    if f == (1, 1, 1):
        return cfg
    ac = _collection(assignments)
    layers = _interior(ac, cfg)
    shape = _field_shape(ac)
    slices = []
    for a, ((lo, hi), n) in enumerate(zip(layers, shape)):
        extent = n - lo - hi
        if extent % f[a]:
            raise KernelError(
                f"fold {f}: the {extent} interior points along {'xyz'[a]} are not a multiple "
                f"of {f[a]}; every folded thread must update {f[a]} valid points"
            )
        slices.append(slice(lo, n - hi, f[a]))
    cfg.ghost_layers = None
    cfg.iteration_slice = tuple(slices)
    cfg.allow_double_writes = True
    return cfg


def generate(
    assignments: Any,
    config: ps.CreateKernelConfig | None = None,
    fold: Sequence[int] = (1, 1, 1),
    block: tuple[int, int, int] | None = None,
) -> Any:
    """The pystencils kernel of ``assignments`` folded by ``fold``, with
    ``block`` as its default block size when given."""
    cfg = folded_config(assignments, config, fold)
    if block is not None:
        cfg.gpu.default_block_size = tuple(int(b) for b in block)
    return ps.create_kernel(fold_assignments(assignments, fold), cfg)


def blocks(
    threads: int, domain: tuple[int, int, int] = (2**30, 2**30, 2**30)
) -> list[tuple[int, int, int]]:
    """Power-of-two block sizes of ``threads`` threads in the paper's design
    space (MODEL.md §8), without dimensions larger than the domain needs."""
    if threads < 1 or threads & (threads - 1):
        raise LaunchError(f"threads per block must be a power of two, got {threads}")
    cap = [
        min(lim, 1 << max(0, math.ceil(math.log2(d))))
        for lim, d in zip((1024, 1024, 64), domain)
    ]
    n = int(math.log2(threads))
    out = []
    for ex in range(n + 1):
        for ey in range(n + 1 - ex):
            b = (1 << ex, 1 << ey, 1 << (n - ex - ey))
            if all(v <= c for v, c in zip(b, cap)):
                out.append(b)
    if not out:
        raise LaunchError(f"no block of {threads} threads fits the domain {domain}")
    return out


def _extraction(
    kernel_function: Any, base_offsets: Mapping[str, int] | None, registers: int, fold: Fold
) -> Extraction:
    return extract(kernel_function, base_offsets=base_offsets, registers=registers, fold=fold)


def predict(
    kernel_or_assignments: Any,
    machine: str | Path | Machine = "A100",
    block: tuple[int, int, int] = (256, 1, 1),
    fold: Sequence[int] | None = None,
    *,
    config: ps.CreateKernelConfig | None = None,
    base_offsets: Mapping[str, int] | None = None,
    registers: int = 32,
    fits: str | Path | CapacityFits | None = None,
) -> Prediction:
    """Predict a pystencils kernel, or assignments generated with ``config``
    and folded by ``fold`` (MODEL.md §8). For a generated kernel, ``fold``
    defaults to its counter steps."""
    if hasattr(kernel_or_assignments, "body") and hasattr(kernel_or_assignments, "target"):
        ex = extract(
            kernel_or_assignments,
            base_offsets=base_offsets,
            registers=registers,
            fold=None if fold is None else _fold3(fold),
        )
    else:
        f = _fold3(fold or (1, 1, 1))
        ex = _extraction(generate(kernel_or_assignments, config, f), base_offsets, registers, f)
    b = tuple(int(v) for v in block)
    if ex.block is not None and b != ex.block:
        raise LaunchError(
            f"this kernel's indexing scheme fixes the block to {ex.block}; got {b}"
        )
    return ws_predict(ex.kernel, machine, b, fits=fits)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Ranked:
    """The kernel of the best configuration and every prediction, best first."""

    kernel: Any
    ranking: tuple[Prediction, ...]

    def __iter__(self):  # allows ``kernel, ranking = create_kernel(...)``
        return iter((self.kernel, list(self.ranking)))


def rank(
    extractions: Iterable[tuple[Fold, Extraction]],
    machine: str | Path | Machine,
    threads: int,
    fits: str | Path | CapacityFits | None = None,
) -> list[Prediction]:
    """Predict every block size for every folded variant; best first
    (highest GLup/s; ties keep the design-space order)."""
    out: list[Prediction] = []
    for _, ex in extractions:
        candidates = [ex.block] if ex.block is not None else blocks(threads, ex.kernel.domain)
        for b in candidates:
            try:
                out.append(ws_predict(ex.kernel, machine, b, fits=fits))
            except LaunchError:
                continue
    if not out:
        raise LaunchError(f"no configuration of {threads} threads per block can run")
    return sorted(out, key=lambda p: -p.glups)


def create_kernel(
    assignments: Any,
    config: ps.CreateKernelConfig | None = None,
    *,
    machine: str | Path | Machine = "A100",
    threads: int = 1024,
    folds: Sequence[Sequence[int]] = DEFAULT_FOLDS,
    base_offsets: Mapping[str, int] | None = None,
    registers: int = 32,
    fits: str | Path | CapacityFits | None = None,
) -> Ranked:
    """Generate ``assignments`` with the best block size and folding.

    Every folding in ``folds`` is generated through pystencils and every
    block size of ``threads`` threads is predicted on ``machine``; the
    result unpacks as ``kernel, ranking``: the pystencils kernel of the best
    folding whose launch configuration defaults to the best block size,
    and all predictions sorted best first (MODEL.md §8).
    """
    variants = []
    for fold in folds:
        f = _fold3(fold)
        kernel_function = generate(assignments, config, f)
        variants.append((f, _extraction(kernel_function, base_offsets, registers, f)))
    ranking = rank(variants, machine, threads, fits)
    best = ranking[0]
    return Ranked(generate(assignments, config, best.fold, best.block), tuple(ranking))


__all__ = [
    "DEFAULT_FOLDS",
    "Ranked",
    "blocks",
    "create_kernel",
    "extract",
    "fold_assignments",
    "folded_config",
    "generate",
    "predict",
    "rank",
]
