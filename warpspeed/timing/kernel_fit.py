"""The constant of the default timing model that is fitted to kernel
measurements, its bounds, the joint fit over data sets and the
leave-one-set-out check (MODEL.md §11).

One constant is fitted to kernel rows: ``overlap_exponent``, the p-norm
exponent of L1 work against the memory stream. Everything else comes from
data sheets and micro-benchmarks. The fit is joint: every development data
set (a list of rows with a measured GLup/s) counts with the same weight,
its mean absolute relative error, so that a set with many rows does not
decide alone. A constant is kept only if it holds with one set left out:
:func:`leave_one_set_out` fits on the other sets and scores the one left
out.

The fit works on the model's own terms (:func:`warpspeed.timing.latency.
glups_from_terms`), which recombine into the model's GLup/s exactly, so a
row costs one prediction however many constants are tried.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .base import first_named

#: Name and bounds of each fitted constant: the p-norm exponent of L1 time
#: and memory time (1 adds them; 4 is nearly the roofline).
KERNEL_CONSTANTS: dict[str, tuple[float, float]] = {
    "overlap_exponent": (1.0, 4.0),
}


@dataclass(frozen=True)
class FitRow:
    """One measured row: the model's terms for it and the measured GLup/s."""

    terms: Mapping[str, float]
    measured: float
    #: The ranking's order among equal predictions (occupancy, fold, block
    #: shape: :func:`warpspeed.search.ties.ranking_key` after the GLup/s).
    tie: tuple[int, ...] = ()
    #: The domain the row solves: the kernel with its parameters (the domain's
    #: shape among them); only rows of one domain are alternatives a ranking
    #: chooses among (:attr:`SetScore.worst_domain_best`, MODEL.md §9).
    domain: str = ""


def row_glups(rows: Sequence[FitRow], p: float) -> np.ndarray:
    """The model's GLup/s of every row with L1 overlap exponent ``p``."""
    from .latency import glups_from_terms

    return np.array([glups_from_terms(r.terms, l1_exponent=p) for r in rows])


def set_error(rows: Sequence[FitRow], p: float) -> float:
    """Mean absolute relative error of the GLup/s of one data set."""
    meas = np.array([r.measured for r in rows])
    return float(np.mean(np.abs(row_glups(rows, p) / meas - 1.0)))


def fit_joint(sets: Mapping[str, Sequence[FitRow]]) -> float:
    """The exponent minimising the mean over the data sets of each set's
    GLup/s MAPE, within :data:`KERNEL_CONSTANTS`' bounds."""
    from scipy.optimize import minimize_scalar

    if not sets:
        raise ValueError("fit_joint needs at least one data set")
    low, high = KERNEL_CONSTANTS["overlap_exponent"]
    res = minimize_scalar(lambda p: float(np.mean([set_error(r, p) for r in sets.values()])),
                          bounds=(low, high), method="bounded", options={"xatol": 1e-3})
    return float(res.x)


@dataclass(frozen=True)
class SetScore:
    """How one data set is predicted with a given exponent (None: a model
    that fits nothing)."""

    dataset: str
    exponent: float | None
    rows: int
    mape: float
    median_ratio: float
    spearman: float | None
    best_fraction: float
    #: The lowest best/best within one domain of the set, over its domains of
    #: two rows or more: what a user who ranks the blocks of one problem size
    #: gets at worst (MODEL.md §9). None where the set holds one such domain.
    worst_domain_best: float | None = None


def rank_correlation(predicted: Sequence[float] | np.ndarray,
                     measured: Sequence[float] | np.ndarray) -> float | None:
    """Spearman's rank correlation of three or more pairs; ``None`` where it
    is undefined (fewer pairs, or one side constant, as a model that
    predicts one figure for every row), never NaN."""
    from scipy.stats import spearmanr

    if len(measured) < 3 or len(set(predicted)) < 2 or len(set(measured)) < 2:
        return None
    return float(spearmanr(predicted, measured)[0])


def scores(name: str, exponent: float | None, predicted: np.ndarray, measured: np.ndarray,
           l2_times: Sequence[float] | None = None,
           ties: Sequence[tuple[int, ...]] | None = None,
           domains: Sequence[str] | None = None) -> SetScore:
    """MAPE, median predicted/measured, Spearman and the measured GLup/s of
    the predicted best over the measured best of one set's GLup/s: the
    best a ranking names first (:func:`warpspeed.timing.base.first_named`,
    MODEL.md §8 "Ties"), equal predictions in the order ``ties`` gives and
    the leaders by ``l2_times`` (the L2 limit the inverse of its time);
    with ``domains`` (one per row), also the worst of the same within each
    domain (:attr:`SetScore.worst_domain_best`)."""
    ratio = predicted / measured
    n = len(predicted)
    limits = ([1.0 / t if t > 0 else math.inf for t in l2_times] if l2_times is not None
              else [math.inf] * n)  # without L2 times no leader moves
    order = list(ties) if ties is not None else [()] * n
    return SetScore(name, exponent, len(measured), float(np.mean(np.abs(ratio - 1))),
                    float(np.median(ratio)), rank_correlation(predicted, measured),
                    _best_of(range(n), predicted, measured, order, limits),
                    _worst_domain_best(domains, predicted, measured, order, limits))


def _best_of(idx: Sequence[int] | range, predicted: np.ndarray, measured: np.ndarray,
             ties: Sequence[tuple[int, ...]], limits: Sequence[float]) -> float:
    """Measured GLup/s of the row a ranking of rows ``idx`` names first over
    their measured best."""
    rows = list(idx)
    first = first_named([float(predicted[i]) for i in rows], [ties[i] for i in rows],
                        [limits[i] for i in rows])
    return float(measured[rows[first]] / max(measured[i] for i in rows))


def _worst_domain_best(domains: Sequence[str] | None, predicted: np.ndarray,
                       measured: np.ndarray, ties: Sequence[tuple[int, ...]],
                       limits: Sequence[float]) -> float | None:
    """The lowest :func:`_best_of` over the domains of two rows or more;
    None with fewer than two such domains (the set's own best/best says it)."""
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(domains or ()):
        groups.setdefault(d, []).append(i)
    ranked = [g for g in groups.values() if len(g) >= 2]
    if len(ranked) < 2:
        return None
    return min(_best_of(g, predicted, measured, ties, limits) for g in ranked)


def score_set(name: str, rows: Sequence[FitRow], p: float) -> SetScore:
    """:func:`scores` of the default model's GLup/s with exponent ``p``."""
    l2 = ([r.terms["t_l2_ns"] for r in rows] if all("t_l2_ns" in r.terms for r in rows)
          else None)
    return scores(name, p, row_glups(rows, p), np.array([r.measured for r in rows]), l2,
                  [r.tie for r in rows], [r.domain for r in rows])


def leave_one_set_out(sets: Mapping[str, Sequence[FitRow]],
                      fitted: Sequence[str] | None = None) -> list[SetScore]:
    """For every data set: the exponent fitted on the others, and the scores
    of the set left out with it. ``fitted`` names the sets that may inform
    a fit (default: all); a set with no other such set is scored with the
    exponent fitted on all of them. Needs two sets or more."""
    if len(sets) < 2:
        raise ValueError("leave one set out needs at least two data sets")
    usable = {k: v for k, v in sets.items() if fitted is None or k in fitted}
    out = []
    for name, rows in sets.items():
        others = {k: v for k, v in usable.items() if k != name}
        out.append(score_set(name, rows, fit_joint(others or usable)))
    return out


__all__ = ["KERNEL_CONSTANTS", "FitRow", "SetScore", "fit_joint", "leave_one_set_out",
           "row_glups", "score_set", "scores", "set_error"]
