"""Parameter checks shared by every ready-made stencil, the hand-written
ones included (no pystencils import)."""

from __future__ import annotations

from collections.abc import Sequence

import warpspeed as ws


def check_shape(shape: Sequence[int] | int, dims: int) -> tuple[int, ...]:
    """The interior extents as a tuple of ``dims`` positive integers; a
    single number counts as one extent."""
    extents = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    s = tuple(int(v) for v in extents)
    if len(s) != dims or any(v < 1 for v in s):
        raise ws.KernelError(f"shape must be {dims} positive integers, got {shape!r}")
    return s


def check_precision(precision: int) -> str:
    """The NumPy dtype of ``precision`` bits (32: float, 64: double)."""
    if precision not in (32, 64):
        raise ws.KernelError(f"precision must be 32 or 64 (bits), got {precision!r}")
    return f"float{precision}"
