"""The hook's result without generating it again (MODEL.md §8, ranking): the
kernel of the best fold, already generated while ranking, given the best
block as its launch configuration's default block size.

pystencils fixes a kernel's default block when it generates it
(``gpu.default_block_size``), and the hook knows the best block only after
the ranking, when the folds are generated already (some in worker
processes). For the linear indexing schemes the default block changes no
line of the code: it only seeds the launch configuration
(``DynamicBlockSizeLaunchConfiguration``). Such a kernel is rebuilt from
its parts (``GpuKernel``: body, parameters, headers, prefix, metadata) with
a launch configuration made from the same work items, hardware properties
and warp-alignment assumption and the new default block. The parts of a
kernel generated in a worker travel pickled (:func:`portable`).

Where the block is written into the code (``generate_launch_bounds``, CUB
reductions) or the launch is not dynamic (``blockwise4d``, a manual launch
grid), :func:`with_default_block` returns None and the caller generates
the kernel again with the block; likewise when this version of pystencils
does not offer the parts. Tests compare the rebuilt kernels with generated
ones (code, parameters, launch configuration) on the corpus.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import pystencils as ps

from ..input.triples import as_triple

try:  # the launch configuration of the linear indexing schemes (pystencils 2.x)
    from pystencils.codegen.gpu_indexing import DynamicBlockSizeLaunchConfiguration
    from pystencils.codegen.kernel import GpuKernel
except ImportError:  # pragma: no cover - another pystencils: generate again
    DynamicBlockSizeLaunchConfiguration = GpuKernel = None  # type: ignore[assignment, misc]


@dataclass(frozen=True)
class Parts:
    """What a GPU kernel is made of, besides its launch configuration's
    factory (a closure, which cannot be pickled), and that configuration
    as generated (its work items and hardware properties)."""

    body: Any
    target: Any
    name: str
    parameters: tuple[Any, ...]
    required_headers: frozenset[str]
    func_prefix: str | None
    metadata: dict[str, Any]
    launch: Any


def _parts(kernel: Any) -> Parts | None:
    """The parts of ``kernel``, or None when a new default block would need
    a new generation (module docstring)."""
    if GpuKernel is None or type(kernel) is not GpuKernel:
        return None
    launch = kernel.get_launch_configuration()
    if type(launch) is not DynamicBlockSizeLaunchConfiguration:
        return None
    try:
        launch.hardware_properties  # noqa: B018 - unset: pystencils' own default applies
    except AttributeError:
        return None
    return Parts(kernel.body, kernel.target, kernel.name, tuple(kernel.parameters),
                 frozenset(kernel.required_headers), kernel.func_prefix,
                 dict(kernel.metadata), launch)


def portable(kernel: Any) -> bytes | None:
    """The parts of ``kernel`` pickled, to send from a worker process, or
    None when it cannot be rebuilt with another default block."""
    parts = _parts(kernel)
    if parts is None:
        return None
    try:
        return pickle.dumps(parts)
    except Exception:  # noqa: BLE001 - an unpicklable kernel is generated again
        return None


def with_default_block(
    kernel: Any, config: ps.CreateKernelConfig | None, block: tuple[int, int, int]
) -> Any | None:
    """``kernel`` (a pystencils kernel, or its parts from :func:`portable`)
    with ``block`` as its launch configuration's default block size; None
    when that needs a new generation (module docstring)."""
    cfg = config if config is not None else ps.CreateKernelConfig()
    if cfg.gpu.get_option("generate_launch_bounds"):
        return None  # __launch_bounds__ of the default block is in the code
    parts = pickle.loads(kernel) if isinstance(kernel, bytes) else _parts(kernel)
    if parts is None:
        return None
    work_items, hardware = parts.launch.num_work_items, parts.launch.hardware_properties
    aligned = bool(cfg.gpu.get_option("assume_warp_aligned_block_size"))
    default = as_triple(int(b) for b in block)

    def factory() -> Any:
        return DynamicBlockSizeLaunchConfiguration(work_items, hardware, aligned, default)

    try:
        out = GpuKernel(parts.body, parts.target, parts.name, parts.parameters,
                        set(parts.required_headers), cfg.get_jit(), parts.func_prefix, factory)
    except TypeError:  # pragma: no cover - another pystencils' constructor: generate again
        return None
    out.metadata.update(parts.metadata)
    return out


__all__ = ["portable", "with_default_block"]
