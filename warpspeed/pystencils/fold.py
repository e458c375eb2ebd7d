"""Thread folding through pystencils itself (MODEL.md §1 work per thread,
§8 ranking).

:func:`fold_assignments` / :func:`folded_config` make a *thread-folded*
variant: the iteration slice steps by ``f`` along the folded axis and every
thread executes ``f`` shifted copies of the assignments, so the address
expressions are those of the real folded kernel. Loads shared by the copies
are counted once per thread, as the CUDA compiler loads them once (the
frontend deduplicates them).

pystencils' own checks (loop independence, one write per field and
position) run on the *unfolded* assignments; the folded kernel skips them,
since its copies write several positions per thread by design. A variant
that cannot be made raises :class:`FoldError`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

import pystencils as ps
import sympy as sp
from pystencils.backend.exceptions import KernelConstraintsError
from pystencils.backend.kernelcreation.analysis import KernelAnalysis
from pystencils.backend.kernelcreation.context import KernelCreationContext
from pystencils.backend.kernelcreation.iteration_space import infer_ghost_layers
from pystencils.flow import Flowgraph, FlowgraphNode
from pystencils.grids.staggered_field import StaggeredFieldAccess
from pystencils.grids.tensor_field import TensorFieldAccess
from pystencils.sympyextensions import TypedSymbol

from ..errors import KernelError, MissingAxisError
from ..input.triples import as_triple, triple_of
from .layouts import ShapeSpec, field_shape

Fold = tuple[int, int, int]


class FoldError(KernelError):
    """A thread-folding variant cannot be generated: the fold does not
    divide the interior, the kernel already has an iteration slice, the
    fields differ in shape or have unknown sizes (MODEL.md §1, work per
    thread)."""


class FoldAxisError(FoldError, MissingAxisError):
    """The fold folds an axis the fields do not have (a 2-D kernel folded
    in z)."""


def _fold3(fold: Sequence[int]) -> Fold:
    """One to three lattice updates per thread along x, y, z, padded with 1s."""
    return triple_of(fold, "fold", error=KernelError)


def _collection(assignments: Any) -> ps.AssignmentCollection:
    if isinstance(assignments, ps.AssignmentCollection):
        return assignments
    if isinstance(assignments, ps.Assignment):
        return ps.AssignmentCollection([assignments])
    if isinstance(assignments, (FlowgraphNode, Flowgraph)):
        raise FoldError(
            f"a ps.flow {type(assignments).__name__} cannot be folded; fold the assignment "
            "list it is made of"
        )
    return ps.AssignmentCollection(list(assignments))


def _spatial_dims(ac: ps.AssignmentCollection) -> int:
    dims = {
        a.field.spatial_dimensions
        for asm in ac.all_assignments
        for a in asm.atoms(ps.Field.Access)
    }
    if len(dims) != 1:
        raise FoldError(
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
            raise FoldError(
                f"cannot fold: the local symbol {s.name!r} contains 'xi_', which pystencils "
                "reserves for numbered subexpressions; rename it"
            )
    return out


def fold_assignments(assignments: Any, fold: Sequence[int]) -> Any:
    """``prod(fold)`` copies of the assignments, copy ``(i, j, k)`` shifted by
    ``(i, j, k)`` lattice points; local symbols are renamed per copy.

    With :func:`folded_config` (iteration slice step ``fold``) each thread
    computes ``fold`` consecutive points along each axis (MODEL.md §1:
    lattice updates per thread = ``prod(fold)``).
    """
    f = _fold3(fold)
    if f == (1, 1, 1):
        return assignments if isinstance(assignments, (FlowgraphNode, Flowgraph)) else (
            _collection(assignments))
    ac = _collection(assignments)
    dim = _spatial_dims(ac)
    if any(v != 1 for v in f[dim:]):
        raise FoldAxisError(f"fold {f} folds an axis that {dim}-dimensional fields do not have; "
                            f"fold only the first {dim} (1 elsewhere)")
    new_style = set().union(*(a.atoms(StaggeredFieldAccess, TensorFieldAccess)
                              for a in ac.all_assignments))
    if new_style:
        raise FoldError(
            f"fold {f}: the assignments access the new-style field "
            f"{next(iter(new_style)).field.name} (StaggeredField / TensorField), whose accesses "
            "cannot be shifted per folded point yet"
        )
    special = next((a for a in ac.all_assignments if type(a) is not ps.Assignment), None)
    if special is not None:
        raise FoldError(
            f"fold {f}: the {type(special).__name__} `{special}` cannot be copied per folded "
            "point (a reduction or augmented assignment accumulates across copies)"
        )
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
        raise FoldError(
            "folding a kernel that already has an iteration_slice is not supported; give "
            "ghost_layers instead"
        )
    gl = config.get_option("ghost_layers")
    if gl is None:
        gl = infer_ghost_layers(ac)
    if isinstance(gl, int):
        return [(gl, gl)] * dim
    return [(g, g) if isinstance(g, int) else (int(g[0]), int(g[1])) for g in gl]


def _field_shape(ac: ps.AssignmentCollection, shape: ShapeSpec) -> tuple[int, ...]:
    """The common spatial shape of the fields (symbolic sizes from ``shape``)."""
    fields = {a.field for asm in ac.all_assignments for a in asm.atoms(ps.Field.Access)}
    shapes = set()
    for f in fields:
        full = field_shape(f, shape)
        if full is None:
            raise FoldError(
                f"folding needs the size of field {f.name}, which is symbolic: give shape="
                "(nx, ny, nz), the spatial extents including ghost layers"
            )
        shapes.add(full[: f.spatial_dimensions])
    if len(shapes) != 1:
        raise FoldError(f"folding needs fields of one spatial shape, got {sorted(shapes)}")
    return shapes.pop()


def _check_unfolded(ac: ps.AssignmentCollection, cfg: ps.CreateKernelConfig) -> None:
    """pystencils' own checks of the unfolded assignments (loop independence,
    one write per field and position). The folded copies then never read
    what another copy wrote (a written field is read only where it is
    written), so the folded kernel skips the check, which would otherwise
    fail on the copies' writes (or trip pystencils' internal assertion)."""
    analysis = KernelAnalysis(
        KernelCreationContext(),
        not cfg.get_option("skip_independence_check"),
        not cfg.get_option("allow_double_writes"),
    )
    try:
        analysis(ac)
    except KernelConstraintsError as exc:
        raise FoldError(f"the unfolded kernel is invalid for pystencils: {exc}") from None


def _local_gpu_runtime() -> bool:
    """Whether pystencils can resolve ``Target.GPU`` here (cupy installed)."""
    try:
        ps.Target.auto_gpu()
    except RuntimeError:
        return False
    return True


def check_config(config: object, usage: str = "") -> None:
    """A TypeError unless ``config`` is None or a pystencils
    ``CreateKernelConfig`` (a machine name given in its place is the usual
    slip); ``usage``: how the caller is called, for the message."""
    if config is not None and not isinstance(config, ps.CreateKernelConfig):
        raise TypeError(f"config must be a pystencils CreateKernelConfig, got "
                        f"{type(config).__name__} {config!r:.60}{usage}")


def for_target(config: ps.CreateKernelConfig | None, family_target: str
               ) -> ps.CreateKernelConfig | None:
    """``config`` with pystencils' automatic GPU target (``Target.GPU``,
    which asks the installed cupy whether the local GPU runs CUDA or HIP)
    replaced by ``family_target`` ("CUDA" or "HIP"): the target of the
    machine the kernel is predicted for, whatever GPU this computer has."""
    if config is None or not automatic_gpu(config):
        return config
    out = config.copy()
    out.target = getattr(ps.Target, family_target)
    return out


def automatic_gpu(config: object) -> bool:
    """Whether ``config`` asks for pystencils' automatic GPU target."""
    return (isinstance(config, ps.CreateKernelConfig)
            and config.get_option("target") == ps.Target.CurrentGPU)


def target_note(config: object, family_target: str, machine: str) -> tuple[str, ...]:
    """The note of a prediction whose ``config`` asked for ``Target.GPU``
    (:func:`for_target`), or none."""
    if not automatic_gpu(config):
        return ()
    return (f"target=Target.GPU: generated for {family_target}, the target of {machine} "
            "(pystencils would ask the local cupy)",)


def folded_config(
    assignments: Any,
    config: ps.CreateKernelConfig | None,
    fold: Sequence[int],
    shape: ShapeSpec = None,
) -> ps.CreateKernelConfig:
    """A copy of ``config`` whose iteration slice steps by ``fold`` within
    the ghost layers, that allows the ``prod(fold)`` writes per thread to
    one field. ``shape``: spatial extents of symbolic-size fields (ghost
    layers included, x first), needed to check that ``fold`` divides the
    interior (MODEL.md §1, work per thread). Raises :class:`FoldError` when
    the variant cannot be made."""
    f = _fold3(fold)
    check_config(config)
    cfg = (config or ps.CreateKernelConfig(target=ps.Target.CUDA)).copy()
    if automatic_gpu(cfg) and not _local_gpu_runtime():
        raise KernelError("target=Target.GPU picks CUDA or HIP from the installed cupy, and "
                          "cupy is not installed: give target=ps.Target.CUDA or ps.Target.HIP "
                          "(warpspeed.pystencils.predict and create_kernel take the machine's)")
    if f == (1, 1, 1):
        return cfg
    ac = _collection(assignments)
    layers = _interior(ac, cfg)
    spatial = _field_shape(ac, shape)
    slices = []
    for a, ((lo, hi), n) in enumerate(zip(layers, spatial)):
        extent = n - lo - hi
        if extent % f[a]:
            raise FoldError(
                f"fold {f}: the {extent} interior points along {'xyz'[a]} are not a multiple "
                f"of {f[a]}; every folded thread must update {f[a]} valid points"
            )
        slices.append(slice(lo, -hi if hi else None, f[a]))
    _check_unfolded(ac, cfg)
    cfg.ghost_layers = None
    cfg.iteration_slice = tuple(slices)
    cfg.allow_double_writes = True
    cfg.skip_independence_check = True
    return cfg


def generate(
    assignments: Any,
    config: ps.CreateKernelConfig | None = None,
    fold: Sequence[int] = (1, 1, 1),
    block: tuple[int, int, int] | None = None,
    shape: ShapeSpec = None,
) -> Any:
    """The pystencils kernel of ``assignments`` folded by ``fold`` (MODEL.md §1), with
    ``block`` as its default block size when given (``shape`` as in
    :func:`folded_config`). Extract it with the same ``fold``:
    ``extract(generate(a, cfg, f), fold=f)``."""
    cfg = folded_config(assignments, config, fold, shape)
    if block is not None:
        cfg.gpu.default_block_size = as_triple(int(b) for b in block)
    return ps.create_kernel(fold_assignments(assignments, fold), cfg)


__all__ = ["Fold", "FoldAxisError", "FoldError", "check_config", "fold_assignments",
           "folded_config", "for_target", "generate", "target_note"]
