"""Per-machine capacity curves refitted from measurements (MODEL.md §7, §9).

Input: measured configurations (:class:`warpspeed.measure.Measurement`)
paired with the model's predictions of the same configurations
(:class:`warpspeed.Prediction`, any fits: only the fit-independent parts
are used; :func:`warpspeed.validation.pairing.pair_predictions` makes them). Each curve
gets *measured hit fractions* (one per configuration that carries
information about it; :mod:`warpspeed.validation.hit_fractions` inverts the model's
balance for ``m1``, ``s``, ``h_xy``, ``h_z`` and ``m2``), and
:func:`warpspeed.fit_gompertz` fits the curve to them. All volumes are per
lattice update. ``h_xy`` and ``h_z`` share one measurement per
configuration and are refitted in turn (backfitting, ``inner`` rounds,
starting from the prior curves).

``m2``: the model's headline DRAM load is ``memLoadV3`` (MODEL.md §6), which
does not use ``m2``. With ``dram_model="v3"`` (default) the measured load is
read as V3 and ``m2`` is kept from the prior: one measured load cannot tell
reuse from capacity misses. With ``dram_model="v4"`` the measured load is
read as ``memLoadV4 = memLoadV3 + (L2LoadV2 - memLoadV2) * m2(O2)`` and the
two are separated by regime: the h curves are fitted only on the
configurations where the *prior* ``m2(O2)`` is at most ``m2_negligible``
(small waves, little capacity pressure), then every configuration gives::

    m2 = (measured DRAM load - memLoadV3) / (L2LoadV2 - memLoadV2)

with the refitted h curves. This needs data whose low-``O2`` part spans the
``O`` range of the h curves (the layer-condition series of
``fits/measurements/README.md``). A joint fit of h and m2 on the same points
is not identifiable from one load per configuration and is not attempted.

Points whose denominator is below ``min_denominator`` bytes per lattice
update carry no information and are left out. A curve with fewer than three
points, or fewer than three distinct x values, keeps the prior curve (and
says so). The fitting order is ``m1``, ``s``, then the DRAM-load curves
(which use the refitted ``m1`` and ``s``).

Train/test split (``split=True``): the configurations are sorted by
(stencil, params, fold, block) and alternate, even positions train, odd
positions test (:func:`warpspeed.validation.pairing.train_test_split`, the rule that
``warpspeed validate --subset`` uses): deterministic and balanced over the
sorted design space. Curves are fitted on the training half; RMS errors are
reported on both.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..closed_pipe import quiet_on_closed_pipe
from ..errors import FitError, WarpspeedError
from ..measure import Measurement, read_csv
from ..model import Prediction, load_machine
from ..volumes.capacity import (
    CURVES,
    FORMAT_VERSION,
    CapacityFits,
    Gompertz,
    curves_for,
    fit_gompertz,
)
from .hit_fractions import (
    Point,
    Samples,
    m1_fractions,
    m2_fractions,
    overlap_fractions,
    point,
    reuse,
    s_fractions,
)
from .pairing import SPLIT_METHOD, config_key, infer_machine, pair_predictions, train_test_split

MEANINGS = {
    "m1": "L1 capacity-miss fraction of redundant loads vs L1 coverage O1",
    "h_xy": "hit fraction of the x/y layer overlap vs L2 oversubscription O",
    "h_z": "hit fraction of the z layer overlap vs L2 oversubscription O",
    "s": "evicted fraction of partially written store lines vs O2",
    "m2": "L2 capacity-miss fraction vs O2",
}


def split_points(points: Sequence[Point], split: bool) -> tuple[list[Point], list[Point]]:
    """(train, test): alternate over the points sorted by key (module doc)."""
    if not split:
        return sorted(points, key=lambda q: q.key), []
    return train_test_split(points, key=lambda q: q.key)


# ---------------------------------------------------------------- fitting


@dataclass(frozen=True)
class CurveFit:
    """One refitted curve: the curve, its RMS error on the training and
    test hit fractions, their counts, and whether it was refitted at all
    (``reason`` says why not)."""

    curve: Gompertz
    fitted: bool
    points: int
    rms: float | None
    test_points: int
    test_rms: float | None
    reason: str = ""


@dataclass(frozen=True)
class Refit:
    """The result of :func:`refit`: the new curves as :class:`CapacityFits`
    and how each was obtained."""

    fits: CapacityFits
    curves: Mapping[str, CurveFit]
    train: tuple[str, ...]
    test: tuple[str, ...]
    dram_model: str


def _rms(curve: Gompertz, samples: Samples) -> float | None:
    xs, ys = samples
    if xs.size == 0:
        return None
    return float(np.sqrt(np.mean((np.array([curve(x) for x in xs]) - ys) ** 2)))


def _fit(prior: Gompertz, samples: Samples) -> tuple[Gompertz, str]:
    xs, ys = samples
    if xs.size < 3 or np.unique(np.round(xs, 12)).size < 3:
        return prior, f"kept the prior: {xs.size} points, {np.unique(xs).size} distinct x"
    try:
        curve, _ = fit_gompertz(
            xs, ys, x0=prior.x0, complement=prior.complement, guess=(prior.a, prior.b, prior.c)
        )
    except FitError as exc:
        return prior, f"kept the prior: {exc}"
    if not all(math.isfinite(v) for v in (curve.a, curve.b, curve.c)):
        return prior, "kept the prior: the fit gave non-finite constants"
    return curve, ""


def refit(
    pairs: Sequence[tuple[Measurement, Prediction]],
    prior: CapacityFits,
    *,
    split: bool = True,
    dram_model: str = "v3",
    inner: int = 12,
    m2_negligible: float = 0.01,
    min_denominator: float = 1e-3,
    source: str = "",
) -> Refit:
    """Refit the five capacity curves from measured configurations (module
    doc for the order, the regimes and the split; :mod:`warpspeed.validation.hit_fractions`
    for the hit fractions)."""
    if dram_model not in ("v3", "v4"):
        raise FitError(f"dram_model must be 'v3' or 'v4', got {dram_model!r}")
    points = [point(m, p) for m, p in pairs]
    train, test = split_points(points, split)
    if not train:
        raise FitError("no measured configurations to fit")
    eps = min_denominator

    curves: dict[str, Gompertz] = {n: getattr(prior, n) for n in CURVES}
    reasons: dict[str, str] = {n: "" for n in CURVES}
    curves["m1"], reasons["m1"] = _fit(prior.m1, m1_fractions(train, eps))
    curves["s"], reasons["s"] = _fit(prior.s, s_fractions(train, eps))

    def fit_overlaps(m2: Gompertz | None, pts: Sequence[Point]) -> None:
        hs = [reuse(q, curves["m1"], curves["s"], m2) for q in pts]
        for _ in range(inner):
            curves["h_xy"], reasons["h_xy"] = _fit(
                prior.h_xy, overlap_fractions(pts, hs, curves["h_z"], "xy", eps))
            curves["h_z"], reasons["h_z"] = _fit(
                prior.h_z, overlap_fractions(pts, hs, curves["h_xy"], "z", eps))

    if dram_model == "v3":
        fit_overlaps(None, train)
        reasons["m2"] = "kept the prior: dram_model v3 does not use m2"
    else:
        quiet = [q for q in train if prior.m2(q.o2) <= m2_negligible]
        fit_overlaps(None, quiet)
        curves["m2"], reasons["m2"] = _fit(
            prior.m2,
            m2_fractions(train, curves["m1"], curves["s"], curves["h_xy"], curves["h_z"], eps),
        )

    m2_final = curves["m2"] if dram_model == "v4" else None

    def samples(name: str, pts: Sequence[Point]) -> Samples:
        if name == "m1":
            return m1_fractions(pts, eps)
        if name == "s":
            return s_fractions(pts, eps)
        if name == "m2":
            return m2_fractions(pts, curves["m1"], curves["s"], curves["h_xy"], curves["h_z"], eps)
        hs = [reuse(q, curves["m1"], curves["s"], m2_final) for q in pts]
        if name == "h_xy":
            return overlap_fractions(pts, hs, curves["h_z"], "xy", eps)
        return overlap_fractions(pts, hs, curves["h_xy"], "z", eps)

    report = {}
    for name in CURVES:
        tr, te = samples(name, train), samples(name, test)
        report[name] = CurveFit(
            curve=curves[name],
            fitted=not reasons[name],
            points=int(tr[0].size),
            rms=_rms(curves[name], tr),
            test_points=int(te[0].size),
            test_rms=_rms(curves[name], te),
            reason=reasons[name],
        )
    fits = CapacityFits(source=source, path="", **curves)
    return Refit(
        fits=fits,
        curves=report,
        train=tuple(q.key for q in train),
        test=tuple(q.key for q in test),
        dram_model=dram_model,
    )


# ---------------------------------------------------------------- output


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _toml_num(v: float) -> str:
    return repr(float(v)) if math.isfinite(v) else "nan"


def fits_toml(
    result: Refit, *, machines: Sequence[str], data_file: str, source: str
) -> str:
    """The refitted curves as a fits file (the format of ``fits/paper.toml``
    that :func:`warpspeed.load_fits` reads), with the data file, the split
    and the RMS error of every curve."""
    from .. import __version__

    lines = [
        "# Capacity curves refitted from measurements (MODEL.md sections 7 and 9) by",
        f"# warpspeed.validation.refit {__version__}. Form of every curve: g(x) = a *",
        "# exp(-b * exp(-c * (x - x0))); with complement = true the curve is 1 - g(x). rms /",
        "# test_rms: root-mean-square error of the curve against the measured hit fractions",
        "# of the train / test configurations; fitted = false: the prior curve was kept (note",
        "# says why).",
        f"format_version = {FORMAT_VERSION}",
        f"source = {_toml_str(source)}",
        f"machines = [{', '.join(_toml_str(m) for m in machines)}]",
        f"data = {_toml_str(data_file)}",
        f"dram_model = {_toml_str(result.dram_model)}",
        "",
        "[split]",
        f"method = {_toml_str(SPLIT_METHOD if result.test else 'none: all configurations train')}",
        "train = [",
        *(f"    {_toml_str(k)}," for k in result.train),
        "]",
        "test = [",
        *(f"    {_toml_str(k)}," for k in result.test),
        "]",
    ]
    for name in CURVES:
        cf = result.curves[name]
        g = cf.curve
        lines += [
            "",
            f"[{name}]",
            f"meaning = {_toml_str(MEANINGS[name])}",
            f"a = {_toml_num(g.a)}",
            f"b = {_toml_num(g.b)}",
            f"c = {_toml_num(g.c)}",
            f"x0 = {_toml_num(g.x0)}",
            f"complement = {'true' if g.complement else 'false'}",
            f"fitted = {'true' if cf.fitted else 'false'}",
            f"points = {cf.points}",
            f"test_points = {cf.test_points}",
        ]
        if cf.rms is not None:
            lines.append(f"rms = {_toml_num(cf.rms)}")
        if cf.test_rms is not None:
            lines.append(f"test_rms = {_toml_num(cf.test_rms)}")
        if cf.reason:
            lines.append(f"note = {_toml_str(cf.reason)}")
    return "\n".join(lines) + "\n"


def refit_csv(
    csv_path: str | Path,
    machine: str | None = None,
    prior: str | Path | CapacityFits | None = None,
    *,
    split: bool = True,
    dram_model: str = "v3",
    predictor: Callable[..., list[tuple[Measurement, Prediction]]] | None = None,
) -> tuple[Refit, str]:
    """Refit from a measurements CSV: predictions are made for every row
    (:func:`warpspeed.validation.pairing.pair_predictions`); returns the result and
    its fits TOML."""
    rows = read_csv(csv_path)
    if not rows:
        raise FitError(f"{csv_path} holds no measurements")
    m = load_machine(machine or infer_machine(rows))
    prior_fits = curves_for(m, prior)
    pairs = (predictor or pair_predictions)(rows, m, prior_fits)
    source = f"refitted from measurements on {rows[0].machine} ({Path(csv_path).name})"
    result = refit(pairs, prior_fits, split=split, dram_model=dram_model, source=source)
    text = fits_toml(result, machines=[m.name], data_file=str(csv_path), source=source)
    return replace(result, fits=replace(result.fits, source=source)), text


@quiet_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """``python -m warpspeed.validation.refit CSV --out fits/NAME.toml``."""
    ap = argparse.ArgumentParser(prog="python -m warpspeed.validation.refit",
                                 description="Refit capacity curves from measurements.")
    ap.add_argument("csv")
    ap.add_argument("--machine", help="warpspeed machine (default: from the CSV's GPU name)")
    ap.add_argument("--prior", help="fits to start from (default: the machine's)")
    ap.add_argument("--no-split", action="store_true", help="fit on all configurations")
    ap.add_argument("--dram-model", choices=("v3", "v4"), default="v3")
    ap.add_argument("--out", help="write the fits TOML here (default: print it)")
    args = ap.parse_args(argv)
    try:
        _, text = refit_csv(args.csv, args.machine, args.prior, split=not args.no_split,
                            dram_model=args.dram_model)
    except WarpspeedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text, end="")
    return 0


__all__ = [
    "CurveFit",
    "Point",
    "Refit",
    "config_key",
    "fits_toml",
    "m1_fractions",
    "m2_fractions",
    "overlap_fractions",
    "point",
    "refit",
    "refit_csv",
    "reuse",
    "s_fractions",
    "split_points",
]

if __name__ == "__main__":
    raise SystemExit(main())
