"""The ranking's design space (MODEL.md §8): block shapes, folds, trimming.

For each requested thread count ``T``, the block shapes ``(X, Y, Z)`` with
``X * Y * Z = T``: powers of two by default (the paper's space), every
integer factorisation with ``all_shapes=True``, within CUDA's block extent
limits :data:`MAX_BLOCK_DIMS`. :data:`DEFAULT_FOLDS` are the folding
variants combined with each shape (none, 2y and 2z).

:func:`trim_reason` says why a block is absurd for a domain (an extent of at
least twice the domain's, which leaves half of every block idle), and
:func:`canonical_block` clips a block to the one that behaves identically
when the index forms depend on global thread coordinates only
(:mod:`warpspeed.search.pruning` states and proves it). :func:`warpspeed.search.rank.rank`
uses all of them.
"""

from __future__ import annotations

import math
import numbers

from ..errors import LaunchError

Block = tuple[int, int, int]
Fold = tuple[int, int, int]

#: The thread counts ranked by default on a GPU of 1024 threads per block
#: (:func:`warpspeed.search.variants.default_threads` follows the machine).
DEFAULT_THREADS: tuple[int, ...] = (64, 128, 256, 512, 1024)
DEFAULT_FOLDS: tuple[Fold, ...] = ((1, 1, 1), (1, 2, 1), (1, 1, 2))
#: CUDA's block extent limits (x, y, z), the same on every compute capability.
MAX_BLOCK_DIMS: Block = (1024, 1024, 64)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def block_shapes(
    threads: int, all_shapes: bool = False, max_dims: Block = MAX_BLOCK_DIMS
) -> tuple[Block, ...]:
    """Block shapes with ``threads`` threads within ``max_dims`` (MODEL.md §8):
    powers of two, or every factorisation with ``all_shapes``."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads <= 0:
        raise LaunchError(f"thread counts must be positive integers, got {threads!r}")
    if not all_shapes and threads & (threads - 1):
        raise LaunchError(
            f"{threads} threads is not a power of two; the power-of-two design space is "
            "empty (ask for all shapes to try every factorisation)"
        )
    out = []
    for x in _divisors(threads):
        for y in _divisors(threads // x):
            z = threads // (x * y)
            if x <= max_dims[0] and y <= max_dims[1] and z <= max_dims[2]:
                out.append((x, y, z))
    return tuple(out)


def design_blocks(threads: int, domain: tuple[int, int, int] = (2**30, 2**30, 2**30)
                  ) -> list[Block]:
    """Power-of-two blocks of ``threads`` threads in the paper's design space
    (:func:`block_shapes` within :data:`MAX_BLOCK_DIMS`), without an extent
    larger than the power of two that covers the domain's (MODEL.md §8)."""
    if (isinstance(threads, bool) or not isinstance(threads, numbers.Integral) or threads < 1
            or threads & (threads - 1)):
        raise LaunchError(f"threads={threads!r}: threads per block must be a positive power of "
                          "two, e.g. 256")
    cap = tuple(min(lim, 1 << max(0, math.ceil(math.log2(d))))
                for lim, d in zip(MAX_BLOCK_DIMS, domain))
    out = list(block_shapes(int(threads), max_dims=(cap[0], cap[1], cap[2])))
    if not out:
        raise LaunchError(f"no block of {threads} threads fits the domain {domain}")
    return out


def trim_reason(block: Block, domain: tuple[int, int, int]) -> str | None:
    """Why ``block`` is absurd for ``domain`` (in threads), or None: an extent
    of at least twice the domain's leaves half of every block idle."""
    for d, axis in enumerate("xyz"):
        if block[d] >= 2 * domain[d]:
            return (
                f"block {axis} extent {block[d]} is at least twice the domain's "
                f"{domain[d]} threads: half of every block would idle"
            )
    return None


def canonical_block(block: Block, domain: tuple[int, int, int]) -> Block:
    """The block that behaves identically under the model when the index
    forms depend on global thread coordinates only (see
    :mod:`warpspeed.search.pruning`): outermost extents beyond the domain are
    clipped, z first, then y if z is 1, then x if y and z are 1."""
    c = list(block)
    for d in (2, 1, 0):
        if all(c[e] == 1 for e in range(d + 1, 3)) and c[d] >= domain[d]:
            c[d] = domain[d]
        else:
            break
    return (c[0], c[1], c[2])


__all__ = [
    "DEFAULT_FOLDS",
    "DEFAULT_THREADS",
    "MAX_BLOCK_DIMS",
    "Block",
    "Fold",
    "block_shapes",
    "canonical_block",
    "design_blocks",
    "trim_reason",
]
