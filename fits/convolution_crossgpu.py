"""The 15x15 convolution scan on three GPUs against the default model
(``python fits/convolution_crossgpu.py [GPU ...]``): per GPU, Spearman,
top-1 (the measured GLup/s of the predicted best over the measured best),
median predicted/measured and MAPE over all rows, the unguarded rows and the
guarded rows (MODEL.md §1 ``output_guards``: the scan's family guards every
output separately unless the block times the tile divides 4096), and on the
A4000 and W7800 the same over the 30 block shapes the A100 scan does not
hold (the A100's held-out shapes, measured on those GPUs).

Data: the development sets ``convolution_15x15`` (A100, 30 shapes) and
``convolution_15x15_RTXA4000`` / ``_W7800`` (60 shapes each;
:func:`warpspeed.validation.reference.convolution_rows`), predicted on the
shipped machine files (the A4000 and W7800 ones written from their data
sheets by ``warpspeed machines new``). Nothing is fitted here.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import warpspeed as ws
from stencils import convolution2d
from warpspeed.validation.reference import CROSSGPU, ReferenceDataError, Row, convolution_rows

N = 4096  # the scan's output extent


def unguarded(r: Row) -> bool:
    """The scan family's switch (``shared/data/a100`` README, "Guards")."""
    return all(N % (b * t) == 0 for b, t in zip(r.block[:2], r.fold[:2]))


def predict(gpu: str, data: list[Row]) -> list[float]:
    """Default-model GLup/s of every row (nan where it cannot launch)."""
    m = ws.load_machine(gpu)
    kernels = {r.fold: convolution2d.kernel(tile_x=r.fold[0], tile_y=r.fold[1]) for r in data}
    out = []
    for r in data:
        try:
            out.append(ws.predict(kernels[r.fold], m, block=r.block).glups)
        except ws.WarpspeedError:
            out.append(float("nan"))
    return out


def scores(pred: list[float], meas: list[float]) -> dict[str, float]:
    """Spearman, top-1, median predicted/measured and MAPE."""
    from scipy.stats import spearmanr

    p, m = np.array(pred), np.array(meas)
    ok = np.isfinite(p)
    p, m = p[ok], m[ok]
    ratio = p / m
    return {"rows": float(len(p)), "spearman": float(spearmanr(p, m)[0]),
            "top1": float(m[int(np.argmax(p))] / m.max()),
            "median": float(np.median(ratio)), "mape": float(np.mean(np.abs(ratio - 1.0)))}


def table(gpu: str) -> list[tuple[str, dict[str, float]]]:
    """The scores of ``gpu`` over all, unguarded and guarded rows, and on the
    A4000 and W7800 over the A100's held-out shapes."""
    data = [r for r in convolution_rows(gpu) if r.glups]
    pred = predict(gpu, data)
    dev = {r.block for r in convolution_rows("A100")} if gpu != "A100" else None
    groups = [("all", lambda r: True), ("unguarded", unguarded),
              ("guarded", lambda r: not unguarded(r))]
    if dev is not None:
        groups += [("A100-held-out shapes, all", lambda r: r.block not in dev),
                   ("A100-held-out shapes, unguarded", lambda r: r.block not in dev
                    and unguarded(r))]
    out = []
    for label, keep in groups:
        sel = [i for i, r in enumerate(data) if keep(r)]
        out.append((label, scores([pred[i] for i in sel], [float(data[i].glups)  # type: ignore[arg-type]
                                                           for i in sel])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gpus", nargs="*", help=f"of {list(CROSSGPU)} (default: all)")
    args = ap.parse_args(argv)
    gpus = args.gpus or list(CROSSGPU)
    unknown = [g for g in gpus if g not in CROSSGPU]
    if unknown:
        ap.error(f"unknown GPU {unknown}: choose from {list(CROSSGPU)}")
    try:
        tables = [(g, table(g)) for g in gpus]
    except ReferenceDataError as exc:
        print(f"convolution_crossgpu: {exc}", file=sys.stderr)
        return 2
    print("| GPU | rows | n | Spearman | top-1 | median pred/meas | MAPE |")
    print("|---|---|---|---|---|---|---|")
    for gpu, t in tables:
        for label, s in t:
            print(f"| {gpu} | {label} | {s['rows']:.0f} | {s['spearman']:.2f} | {s['top1']:.2f} "
                  f"| {s['median']:.2f} | {100 * s['mape']:.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
