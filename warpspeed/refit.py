"""Per-machine capacity curves refitted from measurements (MODEL.md §7, §9).

Input: measured configurations (:class:`warpspeed.measure.Measurement`)
paired with the model's predictions of the same configurations
(:class:`warpspeed.Prediction`, any fits: only the fit-independent parts
are used). Each curve gets *measured hit fractions* (one per configuration
that carries information about it), and :func:`warpspeed.fit_gompertz`
fits the curve to them. All volumes are per lattice update.

``m1`` (MODEL.md §9), x = ``O1``::

    m1 = (measured L2 load - L2LoadV1) / (L1Load - L2LoadV1)

``s`` (analogue), x = ``O2``: the model's store balance is
``memStoreV2 = memStoreV1 + max(0, L2Store - memStoreV1) * s(O2)``, so::

    s = (measured DRAM store - memStoreV1) / (L2Store - memStoreV1)

``h_xy``, ``h_z`` (MODEL.md §9, ``(V1 - measured) / overlap``), with x =
``O_xy``, ``O_z``. Two refinements of that formula, both exact inversions
of the model's balance (MODEL.md §6):

* the store evictions that the model adds to the loads (``memLoadV3 =
  memLoadV2 + storeEvicts``) are added back first, with the refitted ``s``:
  the reuse is ``H = V1 + storeEvicts - measured DRAM load``;
* a configuration has two overlaps, x/y and z, and one measurement. ``H``
  is split by backfitting: the x/y hit fraction of a point is
  ``(H - Ovl_z * h_z(O_z)) / Ovl_xy`` with the current ``h_z``, and
  vice versa; the two curves are refitted in turn (``inner`` rounds,
  starting from the prior curves). Where one overlap is zero the other
  curve's hit fraction is exact.

``m2`` (analogue), x = ``O2``: the model's headline DRAM load is
``memLoadV3`` (MODEL.md §6), which does not use ``m2``. With
``dram_model="v3"`` (default) the measured load is read as V3 and ``m2`` is
kept from the prior: one measured load cannot tell reuse from capacity
misses. With ``dram_model="v4"`` the measured load is read as
``memLoadV4 = memLoadV3 + (L2LoadV2 - memLoadV2) * m2(O2)`` and the two are
separated by regime: the h curves are fitted (as above) only on the
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
positions test: deterministic and balanced over the sorted design space.
Curves are fitted on the training half; RMS errors are reported on both.
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

from .capacity import CURVES, CapacityFits, Gompertz, fit_gompertz, load_fits
from .errors import FitError, WarpspeedError
from .measure import Measurement, format_triple
from .model import Prediction

MEANINGS = {
    "m1": "L1 capacity-miss fraction of redundant loads vs L1 coverage O1",
    "h_xy": "hit fraction of the x/y layer overlap vs L2 oversubscription O",
    "h_z": "hit fraction of the z layer overlap vs L2 oversubscription O",
    "s": "evicted fraction of partially written store lines vs O2",
    "m2": "L2 capacity-miss fraction vs O2",
}

SPLIT_METHOD = (
    "configurations sorted by (stencil, params, fold, block); even positions train, "
    "odd positions test"
)


@dataclass(frozen=True)
class Point:
    """What one measured configuration says about the curves: model
    quantities per lattice update (fit-independent) and the measurement."""

    key: str
    o1: float
    o_xy: float
    o_z: float
    o2: float
    l1_load: float
    l2_load_v1: float
    l2_store: float
    dram_load_v1: float
    dram_store_v1: float
    overlap_xy: float
    overlap_z: float
    measured_l2_load: float | None
    measured_dram_load: float | None
    measured_dram_store: float | None


def config_key(m: Measurement) -> str:
    """A readable, sortable name of a configuration."""
    return (
        f"{m.stencil} {m.params} fold {format_triple(m.fold)} block {format_triple(m.block)}"
    )


def point(m: Measurement, p: Prediction) -> Point:
    """The :class:`Point` of a measurement and its prediction."""
    if tuple(p.block) != tuple(m.block) or tuple(p.fold) != tuple(m.fold):
        raise FitError(
            f"prediction {p.block}/{p.fold} does not belong to measurement {config_key(m)}"
        )
    lups = p.wave.threads * math.prod(p.fold)
    v = p.volumes
    o = p.oversubscription
    return Point(
        key=config_key(m),
        o1=o["o1"],
        o_xy=o["o_xy"],
        o_z=o["o_z"],
        o2=o["o2"],
        l1_load=v.l1_load,
        l2_load_v1=v.l2_load_v1,
        l2_store=v.l2_store,
        dram_load_v1=v.dram_load_v1,
        dram_store_v1=v.dram_store_v1,
        overlap_xy=p.wave.overlap[0] / lups,
        overlap_z=p.wave.overlap[1] / lups,
        measured_l2_load=m.l2_load,
        measured_dram_load=m.dram_load,
        measured_dram_store=m.dram_store,
    )


def split_points(points: Sequence[Point], split: bool) -> tuple[list[Point], list[Point]]:
    """(train, test): alternate over the points sorted by key (module doc)."""
    ordered = sorted(points, key=lambda q: q.key)
    if not split:
        return ordered, []
    return ordered[0::2], ordered[1::2]


# ---------------------------------------------------------------- hit fractions per curve

Samples = tuple[np.ndarray, np.ndarray]


def _samples(pairs: list[tuple[float, float]]) -> Samples:
    if not pairs:
        return np.zeros(0), np.zeros(0)
    xs, ys = zip(*pairs)
    return np.array(xs, dtype=float), np.array(ys, dtype=float)


def m1_fractions(points: Sequence[Point], min_denominator: float = 1e-3) -> Samples:
    """(O1, m1) per point: ``(measured L2 load - L2LoadV1) / (L1Load - L2LoadV1)``."""
    out = []
    for q in points:
        den = q.l1_load - q.l2_load_v1
        if q.measured_l2_load is not None and den > min_denominator:
            out.append((q.o1, (q.measured_l2_load - q.l2_load_v1) / den))
    return _samples(out)


def s_fractions(points: Sequence[Point], min_denominator: float = 1e-3) -> Samples:
    """(O2, s) per point: ``(measured store - memStoreV1) / (L2Store - memStoreV1)``."""
    out = []
    for q in points:
        den = q.l2_store - q.dram_store_v1
        if q.measured_dram_store is not None and den > min_denominator:
            out.append((q.o2, (q.measured_dram_store - q.dram_store_v1) / den))
    return _samples(out)


def _l2_load(q: Point, m1: Gompertz) -> float:
    return q.l2_load_v1 + (q.l1_load - q.l2_load_v1) * m1(q.o1)


def _store_evicts(q: Point, s: Gompertz) -> float:
    return max(0.0, q.l2_store - q.dram_store_v1) * s(q.o2)


def reuse(q: Point, m1: Gompertz, s: Gompertz, m2: Gompertz | None) -> float | None:
    """Bytes per lattice update that the measured DRAM load shows were
    reused from earlier waves (``H`` of the module doc); ``m2=None`` reads
    the measurement as memLoadV3."""
    if q.measured_dram_load is None:
        return None
    se = _store_evicts(q, s)
    if m2 is None:
        return q.dram_load_v1 + se - q.measured_dram_load
    f = m2(q.o2)
    if f >= 1.0:
        return None
    l2 = _l2_load(q, m1)
    return (q.dram_load_v1 + se + (l2 - q.dram_load_v1) * f - q.measured_dram_load) / (1.0 - f)


def overlap_fractions(
    points: Sequence[Point], reuses: Sequence[float | None], other: Gompertz, which: str,
    min_denominator: float = 1e-3,
) -> Samples:
    """(O, h) for ``which`` in ("xy", "z"), the other overlap's share taken
    with the curve ``other``: ``(H - Ovl_other * other(O_other)) / Ovl``."""
    out = []
    for q, h in zip(points, reuses):
        if h is None:
            continue
        if which == "xy":
            ovl, x, rest = q.overlap_xy, q.o_xy, q.overlap_z * other(q.o_z)
        else:
            ovl, x, rest = q.overlap_z, q.o_z, q.overlap_xy * other(q.o_xy)
        if ovl > min_denominator:
            out.append((x, (h - rest) / ovl))
    return _samples(out)


def m2_fractions(
    points: Sequence[Point], m1: Gompertz, s: Gompertz, h_xy: Gompertz, h_z: Gompertz,
    min_denominator: float = 1e-3,
) -> Samples:
    """(O2, m2) per point: ``(measured - memLoadV3) / (L2LoadV2 - memLoadV2)``."""
    out = []
    for q in points:
        if q.measured_dram_load is None:
            continue
        v2 = q.dram_load_v1 - q.overlap_xy * h_xy(q.o_xy) - q.overlap_z * h_z(q.o_z)
        v3 = v2 + _store_evicts(q, s)
        den = _l2_load(q, m1) - v2
        if den > min_denominator:
            out.append((q.o2, (q.measured_dram_load - v3) / den))
    return _samples(out)


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
    doc for the hit fractions, the order and the split)."""
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
    from . import __version__

    lines = [
        "# Capacity curves refitted from measurements (MODEL.md sections 7 and 9) by",
        f"# warpspeed.refit {__version__}. Form of every curve: g(x) = a * exp(-b * exp(-c *",
        "# (x - x0))); with complement = true the curve is 1 - g(x). rms / test_rms: root-mean-",
        "# square error of the curve against the measured hit fractions of the train / test",
        "# configurations; fitted = false: the prior curve was kept (note says why).",
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
    (:func:`warpspeed.validate.pair_predictions`); returns the result and
    its fits TOML."""
    from .machine import load_machine
    from .measure import read_csv
    from .validate import infer_machine, pair_predictions

    rows = read_csv(csv_path)
    if not rows:
        raise FitError(f"{csv_path} holds no measurements")
    m = load_machine(machine or infer_machine(rows))
    prior_fits = prior if isinstance(prior, CapacityFits) else load_fits(prior or m.fits)
    pairs = (predictor or pair_predictions)(rows, m, prior_fits)
    source = f"refitted from measurements on {rows[0].machine} ({Path(csv_path).name})"
    result = refit(pairs, prior_fits, split=split, dram_model=dram_model, source=source)
    text = fits_toml(result, machines=[m.name], data_file=str(csv_path), source=source)
    return replace(result, fits=replace(result.fits, source=source)), text


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m warpspeed.refit CSV --out fits/NAME.toml``."""
    ap = argparse.ArgumentParser(prog="python -m warpspeed.refit",
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
