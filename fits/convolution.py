"""The A100 15x15 convolution scan against both timing models
(``python fits/convolution.py [--jobs J]``): Spearman, median
predicted/measured, MAPE and the measured speed of the predicted best over
the measured best (``warpspeed.validation.reference.score``), over all rows and per
folding; the data are ``shared/data/a100/convolution_15x15.csv``
(``warpspeed.validation.reference.convolution_rows``, MODEL.md §9). Nothing is
fitted here: the issue forbids fitting constants to kernel rows alone.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

import warpspeed as ws
from stencils import convolution2d
from warpspeed.validation.reference import (
    CONVOLUTION,
    ReferenceDataError,
    Row,
    convolution_rows,
    format_report,
    score,
)


def predict_rows(rows: Sequence[Row], model: str, jobs: int = 1) -> list[object]:
    """Predictions of every row on A100, through :func:`warpspeed.rank` with
    the rows' kernel parameters, blocks and foldings (one ranking per set of
    parameters, then looked up per row)."""
    by_config = {}
    for params in {r.params for r in rows}:
        mine = [r for r in rows if r.params == params]
        ranking = ws.rank(
            lambda f, kw=dict(params): convolution2d.kernel(fold=f, **kw),  # type: ignore[misc]
            "A100", folds=sorted({r.fold for r in mine}),
            blocks=sorted({r.block for r in mine}), jobs=jobs, model=model)
        by_config.update({(params, p.fold, p.block): p for p in ranking.predictions})
    return [by_config[(r.params, r.fold, r.block)] for r in rows]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--models", nargs="+", default=["latency", "paper"])
    args = ap.parse_args(argv)
    try:
        rows = convolution_rows()
    except ReferenceDataError as exc:
        print(exc, file=sys.stderr)
        return 2
    scores = []
    for model in args.models:
        preds = predict_rows(rows, model, args.jobs)
        scores.append(score(model, CONVOLUTION, preds, rows))
        per_fold: dict[tuple[int, int, int], list[tuple[float, float]]] = defaultdict(list)
        for p, r in zip(preds, rows):
            per_fold[r.fold].append((p.glups, r.glups))  # type: ignore[attr-defined]
        print(f"{model}: per folding (tile_x, tile_y): median predicted, median measured GLup/s")
        for fold, pairs in sorted(per_fold.items()):
            pm = np.median([a for a, _ in pairs])
            mm = np.median([b for _, b in pairs])
            print(f"  {fold[0]}x{fold[1]}: {pm:6.2f} {mm:6.2f}")
        best = int(np.argmax([p.glups for p in preds]))  # type: ignore[attr-defined]
        print(f"  predicted best: block {rows[best].block} fold {rows[best].fold}, "
              f"measured {rows[best].glups:.2f} of {max(r.glups for r in rows):.2f} GLup/s")
    print(format_report(scores))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
