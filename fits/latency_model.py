"""Fit the one kernel-fitted constant of the default timing model jointly on
every development data set, and check it by leaving one set out
(``python fits/latency_model.py [SET ...]``; MODEL.md §11).

The constant is ``overlap_exponent``: the p-norm exponent of L1 time
against memory time, bounded to [1, 4]. Everything else of the model comes
from data sheets and micro-benchmarks (``fits/calibrate_memory.py``,
``fits/calibrate_overlap.py``). The sets are those of
:data:`warpspeed.validation.transfer.DEV_SETS` (V100 star and box stencils, the A100
convolution scan); each counts with the same weight. The script prints the
joint value, the in-sample scores, the leave-one-set-out table and the
paper model's scores on the same rows; copy the joint value into the
machine files that have kernel data (V100, A100) when it changes.
"""

from __future__ import annotations

import sys

from warpspeed.validation.reference import ReferenceDataError
from warpspeed.validation.transfer import DEV_SETS, format_transfer, transfer_report


def main(argv: list[str] | None = None) -> int:
    names = list(sys.argv[1:] if argv is None else argv)
    sets = [d for d in DEV_SETS if not names or d.name in names]
    if len(sets) < 2:
        print(f"latency_model: name two or more of {[d.name for d in DEV_SETS]}", file=sys.stderr)
        return 2
    try:
        rep = transfer_report(sets)
    except ReferenceDataError as exc:
        print(f"latency_model: {exc}", file=sys.stderr)
        return 2
    used = ", ".join(d.name for d in sets)
    print(f"joint L1 overlap exponent: {rep.exponent:.3f} (sets: {used})")
    print(format_transfer(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
