"""The web calculator's form: everything the page's inputs hold, as text
(the link's query string). :mod:`.state` turns it into a kernel, a machine
and a prediction; :mod:`.machines` reads its machine fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..timing import DEFAULT_MODEL

DEFAULT_FIELDS = "src 514,514,258 8\ndst 514,514,258 8"
DEFAULT_LOADS = "\n".join([
    "src[tidx + 1, tidy + 1, tidz + 1]",
    "src[tidx, tidy + 1, tidz + 1]",
    "src[tidx + 2, tidy + 1, tidz + 1]",
    "src[tidx + 1, tidy, tidz + 1]",
    "src[tidx + 1, tidy + 2, tidz + 1]",
    "src[tidx + 1, tidy + 1, tidz]",
    "src[tidx + 1, tidy + 1, tidz + 2]",
])
DEFAULT_STORES = "dst[threadIdx.x + blockIdx.x*blockDim.x + 1, tidy + 1, tidz + 1]"


@dataclass(frozen=True)
class Form:
    """Everything the page's inputs hold, as text (the link's query string)."""

    mode: str = "stencil"  # "stencil" or "hand"
    stencil: str = "star3d_by_hand"
    params: str = ""  # NAME=VALUE items separated by spaces
    fields: str = DEFAULT_FIELDS  # one "NAME SHAPE [ITEMSIZE]" per line
    loads: str = DEFAULT_LOADS  # one "NAME[expr, ...]" per line
    stores: str = DEFAULT_STORES
    domain: str = "512,512,256"  # valid global thread extents
    fp: str = "7"  # FP instructions per thread (empty: unknown)
    registers: str = ""  # registers per thread (empty: the kernel's)
    machine: str = "A100"  # a shipped name or UPLOADED
    machine_file: str = ""  # the uploaded TOML file, packed (pack_machine)
    block: str = "256,1,2"
    fold: str = "1,1,1"
    model: str = DEFAULT_MODEL
    threads: str = "1024"  # thread counts to rank
    folds: str = "1,1,1 1,2,1 1,1,2"  # folding variants to rank (stencils that fold)
    all_shapes: bool = False


__all__ = ["DEFAULT_FIELDS", "DEFAULT_LOADS", "DEFAULT_STORES", "Form"]
