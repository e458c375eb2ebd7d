"""The range-``radius`` 3-D star of :mod:`stencils.star3d` written by hand as
a :class:`warpspeed.Kernel` (MODEL.md §1): the independent reference for
the pystencils frontend.

Fields ``src`` and ``dst`` have ``radius`` ghost layers on each side, x
contiguous; with ``alignment="interior"`` the first interior point is on a
128 B boundary, otherwise ``alignment`` is the base pointer's byte offset.
A thread folded ``(fx, fy, fz)`` updates the points
``(fx*x + i, fy*y + j, fz*z + k)`` for ``i < fx, j < fy, k < fz``.
FP work: per lattice update ``6 * radius`` adds and one multiplication,
written as ``c*a + c*b + ...`` by pystencils and contracted to
``6 * radius`` FMAs plus one multiplication.
"""

from __future__ import annotations

import itertools

import warpspeed as ws

from ._checks import check_shape


def kernel(
    radius: int = 4,
    shape: tuple[int, int, int] = (640, 512, 512),
    fold: tuple[int, int, int] = (1, 1, 1),
    alignment: int | str = "interior",
) -> ws.Kernel:
    """The hand-written star (module docstring)."""
    r = int(radius)
    if r < 1:
        raise ws.KernelError(f"radius must be at least 1, got {radius!r}")
    nx, ny, nz = check_shape(shape, 3)
    fx, fy, fz = (int(v) for v in fold)
    if any(n % f for n, f in zip((nx, ny, nz), (fx, fy, fz))):
        raise ws.KernelError(f"fold {fold} must divide the interior {shape}")
    full = (nx + 2 * r, ny + 2 * r, nz + 2 * r)
    if alignment == "interior":
        first = 8 * r * (1 + full[0] + full[0] * full[1])
        base = -first % 128
    else:
        try:
            base = int(alignment) % 128
        except ValueError:
            raise ws.KernelError(
                f"alignment must be 'interior' or a byte offset, got {alignment!r}") from None
    src = ws.Field("src", shape=full, itemsize=8, base_offset=base)
    dst = ws.Field("dst", shape=full, itemsize=8, base_offset=base)
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    loads, stores = [], []
    for i, j, k in itertools.product(range(fx), range(fy), range(fz)):
        cx, cy, cz = fx * x + i + r, fy * y + j + r, fz * z + k + r
        stores.append(dst[cx, cy, cz])
        loads.append(src[cx, cy, cz])
        for d in range(1, r + 1):
            for s in (-d, d):
                loads += [src[cx + s, cy, cz], src[cx, cy + s, cz], src[cx, cy, cz + s]]
    lups = fx * fy * fz
    return ws.Kernel(
        loads=loads,
        stores=stores,
        domain=(nx // fx, ny // fy, nz // fz),
        fold=(fx, fy, fz),
        fp_instructions=lups * (6 * r + 1),
        name=f"star3d_r{r}_by_hand",
    )
