"""The stencils a command names (``warpspeed predict|rank|explain|tune
STENCIL``): the module or file, its ``--set`` parameters, its folding variants
and their registers per thread (MODEL.md §1 input, §8 ranking), shared by
:mod:`warpspeed.cli` and :mod:`warpspeed.cli_tune`."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .errors import WarpspeedError
from .input.kernel import Kernel
from .input.stencil_spec import UsageError, load_stencil, parse_params
from .input.triples import parse_triple
from .machine import Machine
from .search.design_space import DEFAULT_FOLDS
from .search.variants import thread_counts
from .timing.hierarchy import VENDOR_TARGET


def load_kernel_function(spec: str) -> Callable[..., Kernel]:
    """``kernel`` of a stencil: a module name from ``stencils/`` or a path to a .py file."""
    func = getattr(load_stencil(spec), "kernel", None)
    if not callable(func):
        raise UsageError(f"{spec} defines no function kernel(**params) returning a ws.Kernel")
    return func


def build_kernel(spec: str, items: Sequence[str]) -> Kernel:
    return kernel_factory(spec, items, None)((1, 1, 1))


def takes_fold(func: Callable[..., Kernel]) -> bool:
    params = inspect.signature(func).parameters
    return "fold" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def kernel_factory(
    spec: str, items: Sequence[str], registers: int | None, arch: str | None = None
) -> Callable[[tuple[int, int, int]], Kernel]:
    """A function ``fold -> Kernel`` for the stencil ``spec`` with the
    ``--set`` parameters and, if given, ``--registers`` applied. A fold other
    than 1,1,1 needs a stencil whose ``kernel()`` takes ``fold``.

    Without ``--registers``, a stencil that can hand out its pystencils
    kernel (a ``generate()`` function returning ``(ws.Kernel, kernel)``)
    gets the register count nvcc reports for ``arch`` when nvcc is
    installed, else the conservative estimate of
    :mod:`warpspeed.pystencils.registers`; any other stencil keeps the
    kernel's own count (32 by default). The source is named with every
    prediction (``Prediction.registers_source``)."""
    return lambda fold: build_variants(spec, items, registers, arch, [fold])[fold]


def build_variants(
    spec: str,
    items: Sequence[str],
    registers: int | None,
    arch: str | None,
    folds: Sequence[tuple[int, int, int]],
    target: str | None = None,
    declared: bool = False,
) -> dict[tuple[int, int, int], Kernel]:
    """The kernels of ``spec`` for each fold (see :func:`kernel_factory`);
    nvcc runs for all folds at once. ``target`` ("cuda" or "hip") is passed
    to a stencil whose ``kernel()`` takes one (the shipped pystencils
    stencils); a ``declared`` target (``--target``) is recorded as
    ``Kernel.target`` of a stencil that takes none, which otherwise keeps
    its own (unknown for a hand-written kernel; MODEL.md §15)."""
    from concurrent.futures import ThreadPoolExecutor

    module = load_stencil(spec)
    module_func = getattr(module, "kernel", None)
    if not callable(module_func):
        raise UsageError(f"{spec} defines no function kernel(**params) returning a ws.Kernel")
    params = parse_params(module_func, items)
    folds_ok = takes_fold(module_func)
    takes_target = "target" in inspect.signature(module_func).parameters
    if "fold" in params:
        raise UsageError("give the fold with --fold X,Y,Z, not --set fold=...")
    if "target" in params:
        raise UsageError("give the target with --target cuda|hip, not --set target=...")
    generate = getattr(module, "generate", None)
    if registers is not None or not callable(generate):
        generate = None

    kernels: dict[tuple[int, int, int], Kernel] = {}
    sources: dict[tuple[int, int, int], object] = {}
    for fold in folds:
        kwargs = dict(params)
        if takes_target and target:
            kwargs["target"] = target
        if folds_ok:
            kwargs["fold"] = fold
        elif fold != (1, 1, 1):
            raise UsageError(
                f"{spec} has no fold parameter; it cannot be folded {','.join(map(str, fold))}"
            )
        try:
            if generate is not None:
                kernel, sources[fold] = generate(**kwargs)
            else:
                kernel = module_func(**kwargs)
        except WarpspeedError:
            raise
        except Exception as exc:  # a user's stencil file may fail in any way
            raise UsageError(f"{spec}: kernel({kwargs}) failed: {type(exc).__name__}: "
                             f"{exc}") from exc
        if not isinstance(kernel, Kernel):
            raise UsageError(
                f"{spec}: kernel() returned {type(kernel).__name__}, not a ws.Kernel"
            )
        if registers is not None:
            kernel = dataclasses.replace(kernel, registers=registers, registers_source="user")
        if declared and target and not takes_target:
            kernel = dataclasses.replace(kernel, target=target.upper())
        kernels[fold] = kernel
    if sources:
        from .pystencils.registers import start_count, with_registers

        with ThreadPoolExecutor(max_workers=len(sources)) as pool:
            pending = {f: start_count(pool, kf, arch, None) for f, kf in sources.items()}
            for fold, kf in sources.items():
                kernels[fold], _ = with_registers(kernels[fold], kf, arch, None, pending[fold])
    return kernels


def registers_line(kernels: Sequence[tuple[tuple[int, int, int], Kernel]]) -> str:
    """Registers per thread of each variant and where the count comes from."""
    parts = [f"{k.registers} ({k.registers_source})" if len(kernels) == 1 else
             f"fold {','.join(map(str, f))}: {k.registers} ({k.registers_source})"
             for f, k in kernels]
    return "registers per thread: " + "; ".join(parts)


def code_target(args: Any, m: Machine) -> str:
    """``--target``, else the target of the machine's vendor: ``hip`` on AMD,
    ``cuda`` on NVIDIA (MODEL.md §15)."""
    return args.target or VENDOR_TARGET.get(m.vendor, "CUDA").lower()


def ranked_variants(args: Any, m: Machine
                    ) -> tuple[dict[tuple[int, int, int], Kernel], tuple[int, ...] | None]:
    """The folding variants and thread counts a ``rank`` or ``tune`` command
    asks for (``--fold``, else the module's ``FOLDS``, else the default
    folds when the stencil folds; ``--threads``, else every count)."""
    folds_ok = takes_fold(load_kernel_function(args.stencil))
    if args.fold:
        folds = list(dict.fromkeys(parse_triple(f, "--fold", error=UsageError) for f in args.fold))
    else:
        # a stencil module may name its own foldings (FOLDS), e.g. a 2-D kernel
        own = getattr(load_stencil(args.stencil), "FOLDS", None)
        folds = [(1, 1, 1)] if not folds_ok else list(own or DEFAULT_FOLDS)
    threads = thread_counts(args.threads, m, "--threads " + " ".join(map(str, args.threads))
                            ) if args.threads else None
    variants = build_variants(args.stencil, args.set, args.registers, m.arch, folds,
                              code_target(args, m), args.target is not None)
    return variants, threads
