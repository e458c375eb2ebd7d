"""A corpus of real pystencils / lbmpy CUDA kernels with independent hand
counts of their compulsory DRAM traffic per lattice update (issue 11).

Each :class:`Case` builds its kernel with pystencils and lbmpy only (CUDA
target, ``jit=ps.no_jit``, no GPU) and states what a correct frontend makes
of it: a DRAM volume within the band around the hand count, or a named
refusal. ``tests/pystencils/test_corpus.py`` checks warpspeed against them;
``tests/benchmarks/bench_corpus.py`` times them.
"""

from __future__ import annotations

from ._base import LOWER, UPPER, Built, Case, HandCount, strided
from .fd import CASES as _FD
from .fvm import CASES as _FVM
from .lbm import CASES as _LBM
from .sim import CASES as _SIM

#: Every corpus case, in a stable order.
CASES: tuple[Case, ...] = (*_FD, *_FVM, *_LBM, *_SIM)

#: Cases by name.
BY_NAME: dict[str, Case] = {c.name: c for c in CASES}

assert len(BY_NAME) == len(CASES), "corpus case names must be unique"

__all__ = ["BY_NAME", "CASES", "LOWER", "UPPER", "Built", "Case", "HandCount", "strided"]
