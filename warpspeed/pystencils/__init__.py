"""Stage 7, the front end: pystencils and lbmpy → warpspeed (MODEL.md §1
input, §8 ranking).

* :func:`extract` / :func:`kernel_from_pystencils` read a CUDA-target
  pystencils 2.x kernel (``jit=ps.no_jit``, no GPU needed) into a
  :class:`warpspeed.Kernel`: :mod:`.extract` (the API), :mod:`.frame` (the
  kernel's parameters and memory accesses), :mod:`.walker` (the IR walk),
  :mod:`.field_memory` (its loads and stores of field memory),
  :mod:`.fpcount` (FP work by class), :mod:`.layouts`
  (fields, symbolic sizes, offsets → per-dimension indices),
  :mod:`.launch` (guard → domain, fixed blocks), :mod:`.poly` (integer
  index arithmetic), :mod:`.accesses` (offsets → accesses), :mod:`.indices`
  (index expressions of the IR), :mod:`.params` (the kernel's parameters),
  :mod:`.wraps` (periodic wraps made quasi-affine), :mod:`.reductions`
  (reductions and their atomics), :mod:`.indexlists` (index-list gathers).
  Constructs outside the model raise a subclass of
  :class:`UnsupportedKernelError` that names them (:mod:`.unsupported`).
* :func:`fold_assignments` / :func:`folded_config` / :func:`generate` make
  thread-folded variants through pystencils itself (:mod:`.fold`); the
  variants a ranking compares and their register counts (:mod:`.variants`).
* :func:`predict`, :func:`rank` and :func:`create_kernel` pick the block
  size and folding by prediction while generating (:mod:`.hook`; the
  measured best of its best few with ``measure=``, :mod:`.measured`), the
  best kernel given its best block without generating it again
  (:mod:`.default_block`).
* :class:`ExtractOptions`: the options all of them share, in one frozen,
  checked object (:mod:`.options`): how to read a kernel, count its
  registers and predict it.
* :mod:`.nvcc`: registers per thread from ``nvcc`` when it is installed;
  :mod:`.registers`: the count the hook and the CLI use (nvcc, cached, else
  an estimate read from the code, :mod:`.register_estimate`), with its source.
"""

from .extract import MAX_GRID_POINTS, Extraction, extract, kernel_from_pystencils
from .fold import FoldAxisError, FoldError, fold_assignments, folded_config, generate
from .hook import DEFAULT_FOLDS, Ranked, blocks, create_kernel, predict, rank
from .indexlists import IndexListLengthError
from .layouts import split_offset
from .options import ExtractOptions
from .unsupported import (
    BranchError,
    CpuTargetError,
    GpuTargetError,
    GridStridedLoopError,
    GuardError,
    IndirectAccessError,
    LoopError,
    MissingParameterError,
    MissingShapeError,
    NonAffineIndexError,
    RedBlackError,
    ReductionError,
    TernaryIndexError,
    UnsupportedConstructError,
    UnsupportedKernelError,
)

__all__ = [
    "DEFAULT_FOLDS",
    "BranchError",
    "CpuTargetError",
    "GpuTargetError",
    "ExtractOptions",
    "Extraction",
    "FoldAxisError",
    "FoldError",
    "GridStridedLoopError",
    "MAX_GRID_POINTS",
    "GuardError",
    "IndexListLengthError",
    "IndirectAccessError",
    "LoopError",
    "MissingParameterError",
    "MissingShapeError",
    "NonAffineIndexError",
    "Ranked",
    "RedBlackError",
    "ReductionError",
    "TernaryIndexError",
    "UnsupportedConstructError",
    "UnsupportedKernelError",
    "blocks",
    "create_kernel",
    "extract",
    "fold_assignments",
    "folded_config",
    "generate",
    "kernel_from_pystencils",
    "predict",
    "rank",
    "split_offset",
]
