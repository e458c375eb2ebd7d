"""Fit the memory systems' constants of the default model jointly on the
lattice Boltzmann development rows, and check each by leaving one GPU out
(``python fits/memory_systems.py``; MODEL.md §11, "Memory systems").

Each kind of memory system has at most one constant no micro-benchmark
measures: ECC on GDDR (fitted on A40, A10, L4), AMD's HBM activation gap
(MI100, Radeon VII, MI50), AMD's GDDR behind an Infinity Cache (W7800,
RX 7600). The script prints the joint values, the values the code carries
(:class:`warpspeed.timing.memory_systems.Constants`: copy the joint values
there when they change), and every GPU of ``shared/data/lbm`` predicted with
its kind's constant fitted on the other GPUs.
"""

from __future__ import annotations

import dataclasses
import sys

from warpspeed.timing.memory_systems import FITTED
from warpspeed.validation.memory_fit import fit_all, format_left_out, leave_one_gpu_out, load
from warpspeed.validation.reference import ReferenceDataError


def main() -> int:
    try:
        rows = load()
    except ReferenceDataError as exc:
        print(f"memory_systems: {exc}", file=sys.stderr)
        return 2
    joint = fit_all(rows)
    print("joint fit:  " + ", ".join(f"{k} = {v:.4g}" for k, v in joint.items()))
    print("the code:   " + ", ".join(f"{k} = {v:.4g}"
                                     for k, v in dataclasses.asdict(FITTED).items()))
    print()
    print(format_left_out(leave_one_gpu_out(rows), joint))
    return 0


if __name__ == "__main__":
    sys.exit(main())
