"""The D3Q19 lattice-Boltzmann step of FluidX3D's single-GPU benchmark,
written by hand as a :class:`warpspeed.Kernel` (MODEL.md §1): the kernel of
the development set ``fluidx3d_d3q19`` (``shared/data/lbm``, see its README).

FluidX3D (M. Lehmann, https://github.com/ProjectPhysX/FluidX3D) stores the 19
populations as a structure of arrays: population ``i`` of cell ``n`` at
``f[i * N + n]``, ``n = x + (y + z * Ny) * Nx``. One thread per cell, 1D
work-groups of 64 threads over ``n`` (here a block ``(64, 1, 1)`` over x, the
same cells since 64 divides the 256 cells of a row). Per cell and step it reads
the cell's flag byte and pulls population ``i`` from the neighbour against its
direction (``x - c_i``), and writes the cell's 19 populations to the second
buffer: 19 x 4 x 2 + 1 = 153 B with FP32 storage, 19 x 2 x 2 + 1 = 77 B with
FP16 storage ("FP16S": FP16 in memory, FP32 arithmetic).

Approximations: the periodic wrap of FluidX3D at the domain faces reads a
ghost layer here (the input buffer is allocated one cell wider on every side,
so a face cell's neighbour is the plane beside the domain instead of the
opposite face: the same number of bytes, a different place for 1/256 of the
cells per face, and rows 2 cells longer than FluidX3D's); the FP
work is the FP32 count of lbmpy's SRT D3Q19 update (158 FMA-class
instructions, :mod:`stencils.lbm_d3q19`, the same collision operator), plus
for FP16S one conversion per population loaded and stored (38), counted as
FMA slots.
"""

from __future__ import annotations

import itertools

import warpspeed as ws

from ._checks import check_shape

#: The D3Q19 velocities: rest, 6 faces, 12 edges.
D3Q19 = tuple((x, y, z) for x, y, z in itertools.product((0, 1, -1), repeat=3)
              if abs(x) + abs(y) + abs(z) <= 2)
#: FMA-class FP32 instructions of the SRT D3Q19 update per cell (lbmpy's count).
COLLIDE_FMA = 158
#: Bytes of one population in memory per storage mode.
STORAGE = {"fp32": 4, "fp16s": 2}


def bytes_per_cell(storage: str = "fp32") -> int:
    """DRAM bytes per cell and step the benchmark counts: 19 loads and 19
    stores of a population, one flag byte."""
    return 19 * 2 * STORAGE[storage] + 1


def kernel(shape: tuple[int, int, int] = (256, 256, 256), storage: str = "fp32") -> ws.Kernel:
    """The FluidX3D D3Q19 SRT step on ``shape`` cells (module docstring);
    ``storage`` is ``"fp32"`` or ``"fp16s"``."""
    nx, ny, nz = check_shape(shape, 3)
    if storage not in STORAGE:
        raise ws.KernelError(f"storage must be one of {sorted(STORAGE)}, got {storage!r}")
    item = STORAGE[storage]
    fi = ws.Field("fi", shape=(nx + 2, ny + 2, nz + 2, 19), itemsize=item)
    fo = ws.Field("fo", shape=(nx, ny, nz, 19), itemsize=item)
    flags = ws.Field("flags", shape=(nx, ny, nz), itemsize=1)
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    loads = [flags[x, y, z]] + [fi[x + 1 - cx, y + 1 - cy, z + 1 - cz, i]
                                for i, (cx, cy, cz) in enumerate(D3Q19)]
    stores = [fo[x, y, z, i] for i in range(19)]
    fma = COLLIDE_FMA + (38 if storage == "fp16s" else 0)
    return ws.Kernel(loads=loads, stores=stores, domain=(nx, ny, nz), fp_ops={"fma": fma},
                     precision=32, name=f"fluidx3d_d3q19_{storage}")
