"""Measure and tune on the shipped H200 run, replayed (a script, not a test;
issue 45's figures): ``python tests/benchmarks/bench_tune.py [--model M]``.

For each design-space set of ``fits/data/h200`` (every block of 256, 512 and
1024 threads timed): the model ranks every configuration (as ``warpspeed
tune`` does), the replay times the model's best K (and their ties), and the
table gives the measured GLup/s of what tune returns over the measured best,
on the whole set and on its held-out (test) half alone (a configuration the
half lacks is one that could not launch):

* ``model``: the model's first choice alone (K = 1, no ties);
* ``K=5``, ``K=10``: what tune returns, with the configurations it timed;
* ``5 random``, ``20 random``: the expected best of that many configurations
  drawn at random without replacement (exact, from the order statistics).

Targets: K = 10 within 2 % of the measured best on every set; K = 5 above 20
random. Then the calibration: ``machines calibrate --measurements`` on the
train half, ``validate`` on the test half, each set's median predicted /
measured GLup/s before and after, and the DRAM plateau written beside the
copy measured at the largest sizes (and the default model's asymptote).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from warpspeed.cli_stencils import build_variants
from warpspeed.machine import Machine, load_machine
from warpspeed.measure import Measurement, params_from_json, read_csv, write_csv
from warpspeed.measure.tune import Replay, tune
from warpspeed.search.rank import rank
from warpspeed.timing import DEFAULT_MODEL, parameter
from warpspeed.validation.calibrate import write_machine
from warpspeed.validation.kernel_calibrate import calibrate_kernels, curves_for, select
from warpspeed.validation.median_rule import predict_rows, prepare, set_name
from warpspeed.validation.reference import dataset_dir

SETS = ("star_r1_512", "star_r4", "lbm_d3q19_f64")
THREADS = (256, 512, 1024)


def expected_best(values: Sequence[float], k: int) -> float:
    """Expected maximum of ``k`` of ``values`` drawn without replacement."""
    v = sorted(values)
    n = len(v)
    k = min(k, n)
    return sum(v[i] * math.comb(i, k - 1) for i in range(k - 1, n)) / math.comb(n, k)


def model_alone(ranking: Sequence, replay: Replay) -> float:
    """Measured GLup/s of the model's first configuration the replay has."""
    return next(replay.glups[(p.fold, p.block)] for p in ranking
                if (p.fold, p.block) in replay.glups)


def tune_rows(name: str, rows: list[Measurement], half: list[Measurement], model: str,
              machines: Sequence[tuple[str, Machine]]) -> list[str]:
    first = rows[0]
    folds = sorted({m.fold for m in rows})
    params = params_from_json(first.params)
    items = [f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
             for k, v in params.items()]
    out = []
    for label, m in machines:
        variants = build_variants(first.stencil, items, None, m.arch, folds, "cuda", False)
        t0 = time.monotonic()
        ranking = list(rank(variants, m, threads=THREADS, model=model).predictions)
        seconds = time.monotonic() - t0
        for part, chosen in (("all", rows), ("test half", half)):
            with tempfile.TemporaryDirectory() as tmp:
                replay = Replay.from_csv(write_csv(Path(tmp) / "r.csv", chosen, append=False))
            best = max(replay.glups.values())
            cells = [f"{model_alone(ranking, replay) / best:.3f}"]
            for k in (5, 10):
                t = tune(ranking, replay, k)
                cells.append(f"{(t.chosen.measured or 0.0) / best:.3f} ({len(t.timed)})")
            values = list(replay.glups.values())
            cells += [f"{expected_best(values, 5) / best:.3f}",
                      f"{expected_best(values, 20) / best:.3f}"]
            out.append(f"| {name} | {label} | {part} | {len(values)} | " + " | ".join(cells)
                       + f" | {seconds:.1f} s |")
    return out


def calibration_rows(path: Path, model: str, tmp: Path) -> tuple[list[str], Machine]:
    """The calibration on the train half judged on the test half (module
    docstring), and the calibrated machine."""
    rows = read_csv(path)
    test = select(rows, "test")
    c = calibrate_kernels(path, "H200", "train", model=model)
    fitted = write_machine(c.data, tmp / "H200-kernels.toml")
    base = load_machine("H200")
    prepared = prepare(test, base, model)
    out = ["calibrated on the train half: " + "; ".join(c.lines()), "",
           "| set | test rows | median pred/meas, H200 | calibrated | nearer 1 |",
           "|---|---|---|---|---|"]
    medians = {}
    for label, machine in (("base", base), ("fitted", fitted)):
        preds = predict_rows(prepared, machine, curves_for(machine, None), model)
        by: dict[str, list[float]] = {}
        for r, p in zip(prepared, preds):
            by.setdefault(set_name(r.measured), []).append(p.glups / r.measured.glups)
        medians[label] = {k: (statistics.median(v), len(v)) for k, v in by.items()}
    for k in sorted(medians["base"]):
        (a, n), (b, _) = medians["base"][k], medians["fitted"][k]
        out.append(f"| {k} | {n} | {a:.3f} | {b:.3f} | "
                   f"{'yes' if abs(b - 1) <= abs(a - 1) else 'NO'} |")
    copies = [m for m in rows if m.stencil == "copy3d"]
    largest = max(m.lups for m in copies)
    fastest = max(m.glups * 16 for m in copies if m.lups == largest)  # 8 B load + 8 B store
    copy = parameter(fitted, "dram_bw_copy") or 0.0
    out.append(f"\nDRAM plateau written (dram_bandwidth): {fitted.dram_bandwidth:.0f} GB/s; the "
               f"copy at the largest size ({largest / 2**20:g} Mi updates) measured "
               f"{fastest:.0f} GB/s at its fastest block "
               f"({100 * (fitted.dram_bandwidth / fastest - 1):+.1f} %); the default model's "
               f"asymptote (dram_bw_copy) {copy:.0f} GB/s "
               f"({100 * (copy / fastest - 1):+.1f} %)")
    return out, fitted


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    args = ap.parse_args(argv)
    path = dataset_dir("h200") / "measurements.csv"
    if not path.is_file():
        print(f"bench_tune: no H200 measurements at {path}", file=sys.stderr)
        return 2
    rows = read_csv(path)
    half = select(rows, "test")
    with tempfile.TemporaryDirectory() as tmp:
        text, fitted = calibration_rows(path, args.model, Path(tmp))
        print(f"tune on the shipped H200 run replayed ({args.model} model): measured GLup/s "
              "of what tune returns / measured best (configurations timed); H200: the shipped "
              "machine file, calibrated: machines calibrate --measurements on the train half\n")
        print("| set | machine | rows | configs | model | K=5 | K=10 | 5 random | 20 random "
              "| ranking |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for name in SETS:
            mine = [m for m in rows if set_name(m) == name]
            print("\n".join(tune_rows(name, mine, [m for m in half if set_name(m) == name],
                                      args.model, [("H200", load_machine("H200")),
                                                   ("calibrated", fitted)])), flush=True)
    print()
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
