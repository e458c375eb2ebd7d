"""The D3Q19 lattice-Boltzmann step of FluidX3D's single-GPU benchmark,
written by hand as a :class:`warpspeed.Kernel` (MODEL.md §1): the kernel of
the development set ``fluidx3d_d3q19`` (``shared/data/lbm``, see its README).

What the source does (FluidX3D, M. Lehmann, https://github.com/ProjectPhysX/FluidX3D,
``src/kernel.cpp``, ``stream_collide``, read at commit f9aba8b; described in our
own words): one thread per cell, ``n = x + (y + z * Ny) * Nx`` from the global
id, work-groups of 64; the 19 populations in one buffer as a structure of
arrays, population ``i`` of cell ``n`` at ``fi[i * N + n]``; one flag byte
per cell read first. Streaming is **Esoteric-Pull**, in place: on an even
step a thread loads slot 0 and, for each odd direction ``i`` (1, 3, ..., 17),
slot ``i + 1`` of its own cell and slot ``i`` of the neighbour ``j[i]`` in
direction ``i`` (``+x``, ``+y``, ``+z``, ``+x+y``, ``+x+z``, ``+y+z``,
``+x-y``, ``+x-z``, ``+y-z``, with periodic wrap by modulo), collides, and
stores the results to exactly the addresses it loaded (odd steps swap the
slots, the same pattern). Per cell and step: 19 x 2 populations and the flag,
153 B with FP32 storage, 77 B with FP16 storage ("FP16S": FP16 in memory,
FP32 arithmetic), the figure the benchmark counts.

Modelled: the even step with exactly these accesses; the wrap as ``Mod``
(MODEL.md §1). The FP work is an estimate from the source: about 155 FP32
FMA-class instructions (density and velocity sums, the equilibrium, the
relaxation) and 3 divisions per cell; FP16S adds a conversion and a scaling
multiply per population loaded and stored (76). The integer work of the
neighbour indices and the 64-bit population addresses is not counted (the
model counts FP work only, MODEL.md §11).
"""

from __future__ import annotations

import itertools

import sympy as sp

import warpspeed as ws

from ._checks import check_shape

#: The D3Q19 velocities: rest, 6 faces, 12 edges.
D3Q19 = tuple((x, y, z) for x, y, z in itertools.product((0, 1, -1), repeat=3)
              if abs(x) + abs(y) + abs(z) <= 2)
#: The neighbour of each odd direction 1, 3, ..., 17 in FluidX3D's ordering: the
#: nine directions whose populations an Esoteric-Pull step moves (the other nine are
#: their opposites).
NEIGHBOURS = ((1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, 0, 1), (0, 1, 1),
              (1, -1, 0), (1, 0, -1), (0, 1, -1))
#: FP32 FMA-class instructions of the D3Q19 SRT update per cell (estimate from the source).
COLLIDE_FMA = 155
#: FP32 divisions per cell (the velocity from the momentum and the density).
COLLIDE_DIV = 3
#: Bytes of one population in memory per storage mode.
STORAGE = {"fp32": 4, "fp16s": 2}


def bytes_per_cell(storage: str = "fp32") -> int:
    """DRAM bytes per cell and step the benchmark counts: 19 loads and 19
    stores of a population, one flag byte."""
    return 19 * 2 * STORAGE[storage] + 1


def kernel(shape: tuple[int, int, int] = (256, 256, 256), storage: str = "fp32") -> ws.Kernel:
    """The FluidX3D D3Q19 SRT step (even time step) on ``shape`` cells with
    periodic wrap (module docstring); ``storage`` is ``"fp32"`` or ``"fp16s"``."""
    nx, ny, nz = check_shape(shape, 3)
    if storage not in STORAGE:
        raise ws.KernelError(f"storage must be one of {sorted(STORAGE)}, got {storage!r}")
    item = STORAGE[storage]
    fi = ws.Field("fi", shape=(nx, ny, nz, 19), itemsize=item)
    flags = ws.Field("flags", shape=(nx, ny, nz), itemsize=1)
    x, y, z = ws.tidx, ws.tidy, ws.tidz

    def wrap(c: sp.Expr, d: int, n: int) -> sp.Expr:
        return sp.Mod(c + d + n, n) if d else c

    populations = [fi[x, y, z, 0]]
    for k, (dx, dy, dz) in enumerate(NEIGHBOURS):
        i = 2 * k + 1
        populations.append(fi[x, y, z, i + 1])
        populations.append(fi[wrap(x, dx, nx), wrap(y, dy, ny), wrap(z, dz, nz), i])
    fma = COLLIDE_FMA + (76 if storage == "fp16s" else 0)
    return ws.Kernel(loads=[flags[x, y, z], *populations], stores=populations,
                     domain=(nx, ny, nz), fp_ops={"fma": fma, "div": COLLIDE_DIV},
                     precision=32, name=f"fluidx3d_d3q19_{storage}")
