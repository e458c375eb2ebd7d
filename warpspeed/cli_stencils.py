"""The stencils a command names (``warpspeed predict|rank|explain|tune
STENCIL``): the module or file, its ``--set`` parameters, its folding variants
and their registers per thread (MODEL.md §1 input, §8 ranking), shared by
:mod:`warpspeed.cli` and :mod:`warpspeed.cli_tune`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from .errors import MissingAxisError, WarpspeedError
from .input.kernel import Kernel
from .input.stencil_spec import Stencil, UsageError, parse_params, stencil
from .input.triples import parse_triple
from .machine import Machine
from .search.design_space import DEFAULT_FOLDS
from .search.variants import thread_counts


def build_kernel(spec: str, items: Sequence[str]) -> Kernel:
    """The kernel of ``spec`` with the ``--set`` parameters, unfolded."""
    return build_variants(stencil(spec), items, None, None, [(1, 1, 1)])[(1, 1, 1)]


def build_variants(
    st: Stencil | str,
    items: Sequence[str],
    registers: int | None,
    arch: str | None,
    folds: Sequence[tuple[int, int, int]],
    target: str | None = None,
    declared: bool = False,
    left_out: list[str] | None = None,
) -> dict[tuple[int, int, int], Kernel]:
    """The kernels of the stencil ``st`` (read once by
    :func:`~warpspeed.input.stencil_spec.stencil`, or its name) for each fold,
    with the ``--set`` parameters and, if given, ``--registers`` applied; a
    fold other than 1,1,1 needs a stencil whose ``kernel()`` takes ``fold``.

    Without ``--registers``, a stencil that can hand out its pystencils
    kernel (a ``generate()`` function returning ``(ws.Kernel, kernel)``)
    gets the register count nvcc reports for ``arch`` when nvcc is
    installed (for all folds at once), else the estimate read from the code
    (:mod:`warpspeed.pystencils.registers`); any other stencil keeps the
    kernel's own count (32 by default). The source is named with every
    prediction (``Prediction.registers_source``). ``target`` ("cuda" or
    "hip") is passed to a stencil whose ``kernel()`` takes one (the shipped
    pystencils stencils); a ``declared`` target (``--target``) is recorded as
    ``Kernel.target`` of a stencil that takes none, which otherwise keeps
    its own (unknown for a hand-written kernel; MODEL.md §15). With
    ``left_out`` (the default folds of a ranking), a fold along an axis the
    kernel does not have (a 2-D stencil folded in z) is left out, and why is
    appended to the list, instead of ending the command."""
    st = stencil(st) if isinstance(st, str) else st
    params = parse_params(st.kernel, items)
    if "fold" in params:
        raise UsageError("give the fold with --fold X,Y,Z, not --set fold=...")
    if "target" in params:
        raise UsageError("give the target with --target cuda|hip, not --set target=...")
    generate = st.generate if registers is None else None
    kernels: dict[tuple[int, int, int], Kernel] = {}
    sources: dict[tuple[int, int, int], object] = {}
    for fold in folds:
        try:
            kernel, source = _one_variant(st, params, fold, target, generate)
        except MissingAxisError as exc:
            if left_out is None or fold == (1, 1, 1):
                raise
            left_out.append(f"fold {','.join(map(str, fold))} left out: {exc}")
            continue
        if source is not None:
            sources[fold] = source
        if registers is not None:
            kernel = dataclasses.replace(kernel, registers=registers, registers_source="user")
        if declared and target and not st.takes_target:
            kernel = dataclasses.replace(kernel, target=target.upper())
        kernels[fold] = kernel
    return _counted(kernels, sources, arch)


def _one_variant(st: Stencil, params: dict[str, Any], fold: tuple[int, int, int],
                 target: str | None, generate: Callable[..., tuple[Kernel, Any]] | None
                 ) -> tuple[Kernel, object]:
    """One fold's kernel (and its pystencils kernel, when ``generate`` makes it)."""
    kwargs = dict(params)
    if st.takes_target and target:
        kwargs["target"] = target
    if st.takes_fold:
        kwargs["fold"] = fold
    elif fold != (1, 1, 1):
        raise UsageError(
            f"{st.spec} has no fold parameter; it cannot be folded {','.join(map(str, fold))}"
        )
    source: object = None
    try:
        if generate is not None:
            kernel, source = generate(**kwargs)
        else:
            kernel = st.kernel(**kwargs)
    except WarpspeedError:
        raise
    except SystemExit as exc:  # would end warpspeed, with the stencil's status
        raise UsageError(f"{st.spec}: kernel({kwargs}) called sys.exit({exc.code!r}): a "
                         "stencil's kernel() must return a ws.Kernel") from None
    except Exception as exc:  # a user's stencil file may fail in any way
        raise UsageError(f"{st.spec}: kernel({kwargs}) failed: {type(exc).__name__}: "
                         f"{exc}") from exc
    if not isinstance(kernel, Kernel):
        raise UsageError(f"{st.spec}: kernel() returned {type(kernel).__name__}, not a ws.Kernel")
    return kernel, source


def _counted(kernels: dict[tuple[int, int, int], Kernel], sources: dict[tuple[int, int, int],
             object], arch: str | None) -> dict[tuple[int, int, int], Kernel]:
    """The kernels with the register counts of their pystencils sources (nvcc
    for all folds at once, else the estimate)."""
    if not sources:
        return kernels
    from concurrent.futures import ThreadPoolExecutor

    from .pystencils.registers import start_count, with_registers

    out = dict(kernels)
    with ThreadPoolExecutor(max_workers=len(sources)) as pool:
        pending = {f: start_count(pool, kf, arch, None) for f, kf in sources.items()}
        for fold, kf in sources.items():
            out[fold], _ = with_registers(out[fold], kf, arch, None, pending[fold])
    return out


def registers_line(kernels: Sequence[tuple[tuple[int, int, int], Kernel]]) -> str:
    """Registers per thread of each variant and where the count comes from."""
    parts = [f"{k.registers} ({k.registers_source})" if len(kernels) == 1 else
             f"fold {','.join(map(str, f))}: {k.registers} ({k.registers_source})"
             for f, k in kernels]
    return "registers per thread: " + "; ".join(parts)


def code_target(args: Any, m: Machine) -> str:
    """``--target``, else the target of the machine's GPU family: ``hip`` on
    AMD, ``cuda`` on NVIDIA (MODEL.md §15)."""
    return args.target or m.family.target.lower()


@dataclasses.dataclass(frozen=True)
class RankedVariants:
    """What a ``rank`` or ``tune`` command ranks: the kernel of each fold,
    the thread counts (None: every count) and the default folds left out
    (one line each, why)."""

    kernels: dict[tuple[int, int, int], Kernel]
    threads: tuple[int, ...] | None
    left_out: tuple[str, ...] = ()


def ranked_variants(args: Any, m: Machine) -> RankedVariants:
    """The folding variants and thread counts a ``rank`` or ``tune`` command
    asks for (``--fold``, else the module's ``FOLDS``, else the default
    folds when the stencil folds, less those along an axis the kernel does
    not have; ``--threads``, else every count)."""
    st = stencil(args.stencil)  # read once for the whole command
    left_out: list[str] | None = None
    if args.fold:
        folds = list(dict.fromkeys(parse_triple(f, "--fold", error=UsageError) for f in args.fold))
    elif not st.takes_fold:
        folds = [(1, 1, 1)]
    else:
        # a stencil module may name its own foldings (FOLDS), e.g. a 2-D kernel
        folds = list(st.folds or DEFAULT_FOLDS)
        left_out = [] if st.folds is None else None
    threads = thread_counts(args.threads, m, "--threads " + " ".join(map(str, args.threads))
                            ) if args.threads else None
    variants = build_variants(st, args.set, args.registers, m.arch, folds,
                              code_target(args, m), args.target is not None, left_out)
    return RankedVariants(variants, threads, tuple(left_out or ()))
