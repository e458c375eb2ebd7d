"""The 15x15 convolution scan on three GPUs against the default model
(``python fits/convolution_crossgpu.py [GPU ...]``): per GPU, Spearman,
top-1 (the measured GLup/s of the predicted best over the measured best),
median predicted/measured and MAPE over all rows, the unguarded rows and the
guarded rows (MODEL.md §1 ``output_guards``: the scan's family guards every
output separately unless the block times the tile divides 4096), the
unguarded rows of one-row and of taller blocks apart, and on the
A4000 and W7800 the same over the 30 block shapes the A100 scan does not
hold (the A100's held-out shapes, measured on those GPUs).

Data: the development sets ``convolution_15x15`` (A100, 30 shapes) and
``convolution_15x15_RTXA4000`` / ``_W7800`` (60 shapes each;
:func:`warpspeed.validation.reference.convolution_rows`), predicted on the
shipped machine files (the A4000 and W7800 ones written from their data
sheets by ``warpspeed machines new``). Nothing is fitted here.

``--fp-l1 P`` shows what a term the model does not have would do (MODEL.md
§10, "FP and L1 on RDNA"): the FP and L1 times per update combined as
``(t_fp^P + t_l1^P)^(1/P)`` (P = 1: they add) instead of the longer of the
two, then overlapped with the memory stream and timed as the model does,
from each prediction's own terms.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import warpspeed as ws
from stencils import convolution2d
from warpspeed.timing.latency import kernel_time_ns, overlap
from warpspeed.validation.reference import CROSSGPU, ReferenceDataError, Row, convolution_rows

N = 4096  # the scan's output extent


def unguarded(r: Row) -> bool:
    """The scan family's switch (``shared/data/a100`` README, "Guards")."""
    return all(N % (b * t) == 0 for b, t in zip(r.block[:2], r.fold[:2]))


def predict(gpu: str, data: list[Row], fp_l1: float | None = None) -> list[float]:
    """Default-model GLup/s of every row (nan where it cannot launch); with
    ``fp_l1``, FP and L1 combined at that exponent (module docstring)."""
    m = ws.load_machine(gpu)
    kernels = {r.fold: convolution2d.kernel(tile_x=r.fold[0], tile_y=r.fold[1]) for r in data}
    out = []
    for r in data:
        try:
            p = ws.predict(kernels[r.fold], m, block=r.block)
        except ws.WarpspeedError:
            out.append(float("nan"))
            continue
        out.append(p.glups if fp_l1 is None else recombined(p.terms, fp_l1))
    return out


def recombined(terms: dict[str, float], fp_l1: float) -> float:
    """GLup/s from a prediction's terms with FP and L1 overlapping at ``fp_l1``."""
    core = overlap(terms["t_fp_ns"], terms["t_l1_ns"], fp_l1)
    t_update = overlap(core, terms["t_memory_ns"], terms["l1_overlap_exponent"])
    total = kernel_time_ns(t_update, terms["updates"], terms["waves"],
                           1000.0 * terms["block_chain_us"], 1000.0 * terms["launch_us"])
    return terms["updates"] / total


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


def table(gpu: str, fp_l1: float | None = None) -> list[tuple[str, dict[str, float]]]:
    """The scores of ``gpu`` over all, unguarded and guarded rows, and on the
    A4000 and W7800 over the A100's held-out shapes."""
    data = [r for r in convolution_rows(gpu) if r.glups]
    pred = predict(gpu, data, fp_l1)
    dev = {r.block for r in convolution_rows("A100")} if gpu != "A100" else None
    groups = [("all", lambda r: True), ("unguarded", unguarded),
              ("guarded", lambda r: not unguarded(r)),
              ("unguarded, one-row blocks", lambda r: unguarded(r) and r.block[1] == 1),
              ("unguarded, taller blocks", lambda r: unguarded(r) and r.block[1] > 1)]
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
    ap.add_argument("--fp-l1", type=float, help="combine FP and L1 at this exponent (not the "
                    "model: module docstring)")
    args = ap.parse_args(argv)
    if args.fp_l1 is not None and not args.fp_l1 >= 1:
        ap.error(f"--fp-l1 must be at least 1, got {args.fp_l1:g}")
    gpus = args.gpus or list(CROSSGPU)
    unknown = [g for g in gpus if g not in CROSSGPU]
    if unknown:
        ap.error(f"unknown GPU {unknown}: choose from {list(CROSSGPU)}")
    try:
        tables = [(g, table(g, args.fp_l1)) for g in gpus]
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
