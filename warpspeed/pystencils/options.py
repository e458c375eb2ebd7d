"""The options of the pystencils front end, in one typed object (MODEL.md §1
input, §8 ranking), as pystencils keeps its own in ``CreateKernelConfig``.

:class:`ExtractOptions` says how a pystencils kernel becomes warpspeed's
input and prediction: how to read it (array shapes and layouts of
symbolic-size fields, base pointer offsets, parameter values, grid points,
index list), how to count its registers, and which timing model and
capacity curves predict it. :func:`~.extract.extract`,
:func:`~.hook.predict`, :func:`~.hook.rank` and
:func:`~.hook.create_kernel` take it as ``options=``; each uses the fields
that concern it (``extract`` makes no prediction, so ``model`` and ``fits``
do not concern it). The object is frozen and checked when it is made:
a value no kernel can take (a wrong type, more grid points than the model
holds, an unknown model) fails there, with a one-line error naming the
field. What depends on the kernel (a shape for its symbolic fields, the
names of its fields and parameters) is checked by ``extract``.

**The keywords it replaces.** The front end's functions took these options
as keywords (``extract(kernel, shape=...)``); for a deprecation period they
still do, with the same behaviour and a :class:`DeprecationWarning` naming
the replacement (:func:`with_keywords`). Keywords given with ``options``
override its fields, as pystencils' ``create_kernel(assignments, config,
**kwargs)`` overrides its config.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FitError, KernelError, LaunchError
from ..input.gathers import ORDERS
from ..input.triples import Triple, ints_of, triple_of
from ..measure.tune import Replay
from ..timing import DEFAULT_MODEL, MODELS
from ..volumes.capacity import CapacityFits
from .indexlists import ListSpec, list_length
from .layouts import LayoutSpec, ShapeSpec
from .registers import MAX_REGISTERS
from .unsupported import GridStridedLoopError

#: Most points per thread of a grid-stride loop (``grid_points``) predicted:
#: a 7-point Jacobi stays within about 1.27x of its compulsory DRAM traffic up to
#: 16 points a grid apart, and reaches 1.5x at 64.
MAX_GRID_POINTS = 16

#: Where the registers per thread come from without a count.
REGISTER_SOURCES = ("nvcc", "estimate")


@dataclass(frozen=True)
class ExtractOptions:
    """How the pystencils front end reads, counts and predicts a kernel
    (module docstring). Every field is optional.

    Example: a kernel over fields of symbolic size, read with their extents
    and predicted by the paper model::

        >>> import warpspeed.pystencils as wps
        >>> opts = wps.ExtractOptions(shape=(66, 34, 34), model="paper")
        >>> opts.shape, opts.model, opts.registers
        ((66, 34, 34), 'paper', None)
        >>> wps.ExtractOptions(grid_points=(2, 0))
        Traceback (most recent call last):
        ...
        warpspeed.errors.KernelError: grid_points must be positive integers, got (2, 0)
    """

    shape: ShapeSpec = None
    """For fields of symbolic size, the array shape to predict with: the
    spatial extents *including ghost layers*, x first (the order of
    ``f[x, y, z]``), or a mapping field name -> shape; for
    ``StaggeredField`` / ``TensorField`` the inner extents (the values of
    their size parameters). Fields of fixed size keep their own."""

    layout: LayoutSpec = None
    """Memory layout of symbolic-size fields with index dimensions
    (``"fzyx"``, ``"zyxf"``, ``"c"``, ``"f"``, or pystencils' layout tuple:
    the dimensions slowest first, spatial ones then index ones, e.g.
    ``(2, 1, 0, 3, 4)`` for an array of 3x3 tensors with x fastest, which no
    name describes), one for all or a mapping field name -> layout; the
    default is described in :mod:`.layouts`, and a prediction that assumed
    it says so in a note."""

    base_offsets: Mapping[str, int] | None = None
    """Field name -> byte offset of the field's base pointer (element 0)
    from a 128 B boundary; 0 for fields not named."""

    params: Mapping[str, int] | None = None
    """Values of the kernel's integer parameters that indices, guards or
    loop bounds depend on (symbolic iteration-slice bounds,
    ``make_slice[sx:ex, ...]``), e.g. ``{"sx": 1, "ex": 255}``; one needed
    but not given raises :class:`MissingParameterError` naming it."""

    grid_points: Triple | None = None
    """For a grid-strided kernel (``gridstrided_linear3d`` /
    ``gridstrided_linear1d``), the points each thread updates along x, y, z
    (one to three values, padded with 1s): the grid is ``ceil(extent /
    points)`` threads along each axis. ``None``: pystencils' automatic grid,
    one point per thread. At most :data:`MAX_GRID_POINTS` points per
    thread (:func:`~.extract.extract` says why)."""

    index_list: ListSpec = None
    """For an index-list (boundary) kernel, the list itself (the structured
    NumPy array of the boundary handling: exact sector counts) or its
    number of entries (:mod:`warpspeed.input.gathers`)."""

    list_order: str = "sorted"
    """The order of an index list given by its length: ``"sorted"`` (by
    cell) or ``"random"``. ``"sorted"`` is refused for a gathered field that
    keeps a cell's values adjacent (an array of structures, ``zyxf``): which
    sectors its entries share depends on the list itself
    (:mod:`warpspeed.input.gathers`)."""

    registers: int | str | None = None
    """Registers per thread: a count (1-255), ``"estimate"`` (the
    estimate of :mod:`.registers`, read from the code) or ``"nvcc"``.
    ``predict`` and ``create_kernel`` count them for the machine: ``None``
    (or ``"nvcc"``) is nvcc's count for its ``arch`` when nvcc is installed,
    else the estimate. ``extract`` knows no machine to run nvcc for: a
    count or the estimate is the kernel's, else it keeps the default of 32
    (MODEL.md §1)."""

    model: str = DEFAULT_MODEL
    """The timing model (:data:`warpspeed.timing.MODELS`): ``"latency"``,
    the default, or ``"paper"``."""

    fits: str | Path | CapacityFits | None = None
    """Capacity curves instead of the machine's own: a name in ``fits/``, a
    path to such a TOML file, or loaded curves (MODEL.md §7)."""

    measure: int | None = None
    """``create_kernel`` only: time the ranking's best ``measure``
    configurations on this machine's GPU (or replay them, ``replay``) and
    return the measured best (MODEL.md §9); ``None``: the model chooses
    alone."""

    replay: str | Path | Replay | None = None
    """With ``measure``: a measurement CSV in place of the GPU (its path, or
    a :class:`warpspeed.measure.tune.Replay` of one kernel's rows); a
    configuration it lacks could not launch."""

    def __post_init__(self) -> None:
        _check_shape(self.shape)
        _check_layout(self.layout)
        if self.base_offsets is not None:
            object.__setattr__(self, "base_offsets", _base_offsets(self.base_offsets))
        _check_params(self.params)
        if self.grid_points is not None:
            object.__setattr__(self, "grid_points", _grid_points(self.grid_points))
        list_length(self.index_list)  # raises KernelError naming what is wrong
        if self.list_order not in ORDERS:
            raise KernelError(f"list_order must be one of {ORDERS}, got {self.list_order!r}")
        _check_registers(self.registers)
        if self.model not in MODELS:
            raise LaunchError(f"unknown model {self.model!r}; the models are {', '.join(MODELS)}")
        if self.fits is not None and not isinstance(self.fits, (str, os.PathLike, CapacityFits)):
            raise FitError(f"fits must be a name in fits/, a path to a TOML file or loaded "
                           f"CapacityFits, got {type(self.fits).__name__}")
        _check_measure(self.measure, self.replay)


def _check_measure(measure: Any, replay: Any) -> None:
    if measure is not None and (isinstance(measure, bool) or not isinstance(measure, int)
                                or measure < 1):
        raise LaunchError(f"measure must be a positive number of configurations to time, "
                          f"got {measure!r}")
    if replay is not None and not isinstance(replay, (str, os.PathLike, Replay)):
        raise LaunchError(f"replay must be the path of a measurement CSV or a Replay, got "
                          f"{type(replay).__name__}")
    if replay is not None and measure is None:
        raise LaunchError("replay= needs measure=K: the number of configurations to time")


def _check_shape(shape: Any) -> None:
    if shape is None:
        return
    if isinstance(shape, Mapping):
        for name, value in shape.items():
            ints_of(value, f"shape of field {name}", error=KernelError)
        return
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise KernelError(f"shape must be the array extents (nx, ny, nz) or a mapping field "
                          f"name -> extents, got {shape!r}")
    ints_of(shape, "shape", error=KernelError)


def _is_layout(value: Any) -> bool:
    """A layout name or a tuple of dimensions (ints), slowest first."""
    if isinstance(value, str):
        return True
    return isinstance(value, (tuple, list)) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value)


def _check_layout(layout: Any) -> None:
    names = layout.values() if isinstance(layout, Mapping) else [layout]
    if layout is not None and not all(_is_layout(n) for n in names):
        raise KernelError(f"layout must be a layout name ('fzyx', 'zyxf', 'c', 'f'), a tuple "
                          f"of dimensions slowest first (pystencils' layout tuples, e.g. "
                          f"(2, 1, 0, 3, 4)) or a mapping field name -> either, got {layout!r}")


def _base_offsets(value: Any) -> dict[str, int]:
    try:
        offsets = dict(value)
    except (TypeError, ValueError):
        raise KernelError(f"base_offsets must map field names to byte offsets, got "
                          f"{value!r}") from None
    for name, offset in offsets.items():
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise KernelError(f"base_offsets[{name!r}] must be an integer byte offset, "
                              f"got {offset!r}")
    return offsets


def check_base_offsets(offsets: Mapping[str, int], items: Mapping[str, int]) -> None:
    """The base offsets of ``offsets`` name fields the kernel accesses
    (``items``: field name -> item size in bytes) and never split an item
    (MODEL.md §1, the fields' ``base_offset``)."""
    unknown = set(offsets) - set(items)
    if unknown:
        raise KernelError(f"base_offsets names fields {sorted(unknown)} that the kernel does not "
                          f"access; its fields are {sorted(items)}")
    for name, offset in offsets.items():
        item = items[name]
        if offset % item:
            raise KernelError(
                f"base_offsets[{name!r}] = {offset} is not a multiple of the field's {item}-byte "
                f"items: a GPU reads them at addresses aligned to {item} B; give the byte offset "
                f"of the field's first element from a 128 B boundary (a multiple of {item})")


def _check_params(params: Any) -> None:
    if not params:
        return
    if not isinstance(params, Mapping):
        raise KernelError(f"params must be a mapping of parameter name to integer, got {params!r}")
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int) and not hasattr(
            value, "__index__"
        ):
            raise KernelError(f"params[{name!r}] must be an integer, got {value!r}")


def _grid_points(value: Any) -> Triple:
    points = triple_of(value, "grid_points", error=KernelError)
    n = points[0] * points[1] * points[2]
    if n > MAX_GRID_POINTS:
        raise GridStridedLoopError(
            f"grid_points={points} gives {n} points per thread of a grid-stride "
            f"loop; warpspeed models at most {MAX_GRID_POINTS}: it counts a thread's points "
            "as one folded update in the same wave, which over-estimates the DRAM traffic "
            "when the points lie a whole grid apart (and it repeats the loop body per point). "
            "Predict a grid with at most that many points per thread, or the default "
            "grid_points=None (pystencils' grid, one point per thread)"
        )
    return points


def _check_registers(given: Any) -> None:
    if isinstance(given, int) and not isinstance(given, bool):
        if not 1 <= given <= MAX_REGISTERS:
            raise KernelError(f"registers per thread must be 1..{MAX_REGISTERS}, got {given}")
    elif given is not None and given not in REGISTER_SOURCES:
        raise KernelError(
            f"registers must be a count (1..{MAX_REGISTERS}), 'nvcc' or 'estimate', got {given!r}"
        )


#: The option keywords each function took before :class:`ExtractOptions`.
READ_KEYWORDS = frozenset({"base_offsets", "shape", "layout", "params", "grid_points"})
EXTRACT_KEYWORDS = READ_KEYWORDS | {"registers", "index_list", "list_order"}
PREDICT_KEYWORDS = EXTRACT_KEYWORDS | {"fits", "model"}
RANK_KEYWORDS = frozenset({"fits", "model"})
#: Keywords ``create_kernel`` takes as well as the options' fields (not deprecated).
TUNE_KEYWORDS = frozenset({"measure", "replay"})


def with_keywords(options: ExtractOptions | None, keywords: Mapping[str, Any], function: str,
                  accepted: frozenset[str], current: frozenset[str] = frozenset()
                  ) -> ExtractOptions:
    """``options`` (default: all defaults) with the option ``keywords`` of
    ``function`` applied over its fields, and a :class:`DeprecationWarning`
    naming the replacement for those not in ``current``; a keyword
    ``function`` never took raises :class:`TypeError` as Python does."""
    unknown = sorted(set(keywords) - accepted)
    if unknown:
        raise TypeError(f"{function}() got an unexpected keyword argument {unknown[0]!r}")
    if options is None:
        options = ExtractOptions()
    elif not isinstance(options, ExtractOptions):
        raise TypeError(f"{function}(): options must be a warpspeed.pystencils.ExtractOptions, "
                        f"got {type(options).__name__}")
    if not keywords:
        return options
    names = [f.name for f in fields(ExtractOptions) if f.name in keywords and f.name not in current]
    if not names:
        return replace(options, **keywords)
    warnings.warn(
        f"{function}({', '.join(n + '=' for n in names)}) is deprecated: pass "
        f"options=warpspeed.pystencils.ExtractOptions({', '.join(n + '=...' for n in names)})",
        DeprecationWarning, stacklevel=3,
    )
    return replace(options, **keywords)


__all__ = ["MAX_GRID_POINTS", "TUNE_KEYWORDS", "ExtractOptions", "with_keywords"]
