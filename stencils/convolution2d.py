"""2-D convolution with a square filter, written by hand as a
:class:`warpspeed.Kernel` (MODEL.md §1): the kernel of the A100 auto-tuning
scan in ``../shared/data/a100`` (its README describes it in words).

* Output ``shape = (nx, ny)`` (x contiguous, row pitch ``nx``); input
  ``(nx + filter_size - 1, ny + filter_size - 1)``, i.e. the output plus a
  border of ``filter_size - 1`` (row pitch ``nx + filter_size - 1``). Both
  arrays start on a 128 B boundary (``cudaMalloc``).
* The filter lives in ``__constant__`` memory: every lane of a warp reads
  the same coefficient, so it costs no global traffic and is not an access.
* Folding ``(tile_x, tile_y, 1)`` is **strided by the block size**: a thread
  of block ``(bx, by)`` computes the outputs
  ``x = blockIdx.x * bx * tile_x + threadIdx.x + xi * bx`` and
  ``y = blockIdx.y * by * tile_y + threadIdx.y + yi * by`` for
  ``xi < tile_x``, ``yi < tile_y``. The block size enters the index
  expressions through ``ws.blockDim``, so one kernel describes every launch.
* Per output: ``filter_size**2`` loads ``input[x + j, y + i]`` and as many
  FMAs, one store ``output[x, y]``. Loads a thread repeats (folded outputs
  whose rows overlap, ``yi * by < filter_size``) are loaded once unless
  ``reload_repeated`` (the loops are unrolled over read-only data).
* Guards (the scan family's compile-time switch, ``shared/data/a100``
  README, "Guards"): ``guards="auto"`` (default) takes the unguarded body
  when ``nx`` is a multiple of ``bx * tile_x`` and ``ny`` of
  ``by * tile_y``, and otherwise checks every output's bounds separately,
  so that loads repeated between a thread's outputs are not merged
  (``Kernel.output_guards = (nx, ny)``); ``"each"`` guards every output
  separately at every block, ``"none"`` never.
* The domain is ``ceil(n / tile)`` threads per dimension, so the
  grid is ``ceil(n / (block * tile))`` as in the scan. A thread's outputs
  beyond ``n`` (a tile that does not divide ``n``) count as updates: at most
  ``tile - 1`` of ``n`` per row.
"""

from __future__ import annotations

import itertools

import warpspeed as ws

from ._checks import check_shape

#: The 16 foldings of the A100 scan, ``(tile_x, tile_y, 1)`` with tiles 1..4;
#: ``warpspeed rank convolution2d`` ranks them unless ``--fold`` is given.
FOLDS: tuple[tuple[int, int, int], ...] = tuple(
    (tx, ty, 1) for tx in range(1, 5) for ty in range(1, 5)
)

#: ``guards`` -> ``Kernel.output_guards`` (None: the extents, the switch).
_GUARDS: dict[str, bool | None] = {"auto": None, "each": True, "none": False}

_PRECISIONS = {"float": 32, "32": 32, "double": 64, "64": 64}


def _precision(value: int | str) -> int:
    bits = _PRECISIONS.get(str(value).strip().lower())
    if bits is None:
        raise ws.KernelError(
            f"precision must be 'float' (32) or 'double' (64), got {value!r}"
        )
    return bits


def _tiles(tile_x: int, tile_y: int, fold: tuple[int, ...] | None) -> tuple[int, int]:
    """The folding from ``fold`` (the command line's ``--fold``) or the tiles."""
    tiles = (int(tile_x), int(tile_y))
    if any(t < 1 for t in tiles):
        raise ws.KernelError(f"tile_x and tile_y must be positive, got {tiles}")
    if fold is None:
        return tiles
    f = tuple(int(v) for v in fold)
    if len(f) not in (2, 3) or any(v < 1 for v in f) or (len(f) == 3 and f[2] != 1):
        raise ws.KernelError(
            f"the convolution is 2-D: fold must be (tile_x, tile_y, 1), got {fold!r}"
        )
    if f[:2] == (1, 1):
        return tiles
    if tiles != (1, 1) and tiles != f[:2]:
        raise ws.KernelError(
            f"fold {fold!r} and tile_x, tile_y = {tiles} disagree; give one of them"
        )
    return f[0], f[1]


def kernel(
    filter_size: int = 15,
    tile_x: int = 1,
    tile_y: int = 1,
    precision: int | str = "float",
    shape: tuple[int, int] = (4096, 4096),
    fold: tuple[int, int, int] | None = None,
    registers: int = 32,
    reload_repeated: bool = False,
    guards: str = "auto",
) -> ws.Kernel:
    """The convolution (module docstring): ``filter_size`` squared taps,
    ``tile_x * tile_y`` outputs per thread strided by the block size (or
    ``fold = (tile_x, tile_y, 1)``), ``precision`` ``"float"``/32 or
    ``"double"``/64, ``shape`` the output extents (x, y), ``guards``
    ``"auto"``, ``"each"`` or ``"none"`` (module docstring)."""
    fs = int(filter_size)
    if fs < 1:
        raise ws.KernelError(f"filter_size must be positive, got {filter_size!r}")
    tx, ty = _tiles(tile_x, tile_y, fold)
    bits = _precision(precision)
    nx, ny = check_shape(shape, 2)
    key = str(guards).strip().lower()
    if key not in _GUARDS:
        raise ws.KernelError(f"guards must be 'auto', 'each' or 'none', got {guards!r}")
    given = _GUARDS[key]
    output_guards: bool | tuple[int, int] = (nx, ny) if given is None else given
    item = bits // 8
    inp = ws.Field("input", shape=(nx + fs - 1, ny + fs - 1), itemsize=item)
    out = ws.Field("output", shape=(nx, ny), itemsize=item)
    bdx, bdy = ws.blockDim.x, ws.blockDim.y
    x0 = ws.blockIdx.x * bdx * tx + ws.threadIdx.x
    y0 = ws.blockIdx.y * bdy * ty + ws.threadIdx.y
    # one expression per distinct index (thousands of accesses share them)
    xs = [[x0 + xi * bdx + j for j in range(fs)] for xi in range(tx)]
    ys = [[y0 + yi * bdy + i for i in range(fs)] for yi in range(ty)]
    loads, stores = [], []
    for yi, xi in itertools.product(range(ty), range(tx)):
        stores.append(out[xs[xi][0], ys[yi][0]])
        loads += [inp[x, y] for y in ys[yi] for x in xs[xi]]
    outputs = tx * ty
    return ws.Kernel(
        loads=loads,
        stores=stores,
        domain=(-(-nx // tx), -(-ny // ty)),
        fold=(tx, ty, 1),
        fp_ops={"fma": fs * fs * outputs},
        precision=bits,
        registers=registers,
        reload_repeated=reload_repeated,
        output_guards=output_guards,
        name=f"convolution2d_{fs}x{fs}",
    )
