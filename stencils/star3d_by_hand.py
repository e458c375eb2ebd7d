"""The 3D range-``radius`` star stencil written by hand as a ``ws.Kernel``.

``dst[x, y, z] = c * sum(src over the centre and ±1..radius along each axis)``
on doubles, ``radius`` ghost layers on every side, dimension 0 contiguous.
With the defaults this is the paper's 25-point stencil on 640x512x512.
Per lattice update: ``6 * radius + 1`` loads of ``src``, one store to ``dst``.
It is the independent reference for the pystencils-generated ``star3d``.
"""

from __future__ import annotations

import warpspeed as ws


def aligned_offset(ghost: tuple[int, ...], padded: tuple[int, ...], itemsize: int) -> int:
    """Byte offset of element 0 from a 128 B boundary that puts the first
    interior point (index ``ghost``) on a 128 B boundary."""
    stride, lin = 1, 0
    for g, n in zip(ghost, padded):
        lin += g * stride
        stride *= n
    return (-lin * itemsize) % 128


def kernel(
    radius: int = 4,
    shape: tuple[int, ...] = (640, 512, 512),
    alignment: int | None = None,
) -> ws.Kernel:
    """The star stencil.

    ``shape``: interior points (X, Y, Z), X contiguous. ``alignment``: byte
    offset of the base pointer (element 0, a ghost corner) from a 128 B
    boundary; by default the first interior point is 128 B aligned.
    """
    if radius < 1:
        raise ws.KernelError(f"radius must be at least 1, got {radius}")
    if len(shape) != 3:
        raise ws.KernelError(f"shape must be three extents X,Y,Z, got {shape}")
    r = radius
    padded = tuple(n + 2 * r for n in shape)
    off = aligned_offset((r, r, r), padded, 8) if alignment is None else alignment
    src = ws.Field("src", shape=padded, itemsize=8, base_offset=off)
    dst = ws.Field("dst", shape=padded, itemsize=8, base_offset=off)
    x, y, z = ws.tidx + r, ws.tidy + r, ws.tidz + r
    loads = [src[x, y, z]]
    for d in range(1, r + 1):
        for s in (-d, d):
            loads += [src[x + s, y, z], src[x, y + s, z], src[x, y, z + s]]
    return ws.Kernel(
        loads=loads,
        stores=[dst[x, y, z]],
        domain=shape,
        fp_instructions=6 * r + 1,
        name=f"star3d_by_hand_r{r}",
    )
