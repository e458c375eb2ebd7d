"""Every prediction of a fixed sample, as stable JSON: the check that a change
meant to leave the numbers alone (a refactoring) does.

Run: .venv/bin/python tests/benchmarks/dump_predictions.py OUT.json [--quick]

The sample: every corpus kernel (``tests/corpus``, pystencils and lbmpy)
that extracts, ranked on A100 and MI210 with both models over the default
design space (thread counts 64-1024, folds of the hook), plus the shipped
hand-written stencils ranked on every shipped machine, and the development
rows of ``warpspeed validate --v100`` (the V100 and A100 sets, the cross-GPU
convolutions, the lattice Boltzmann rows) predicted one by one. Each
prediction is written with its configuration, GLup/s, limiter, limits,
volumes, terms and notes; floats keep their full precision, so ``cmp`` (or
``diff``) of two dumps shows any change. ``--quick`` keeps a tenth of the
corpus and of the development rows. Not a test: it takes minutes. It runs
with ``PYTHONHASHSEED=0`` (it restarts itself so), since nvcc's register
count of some lbmpy kernels follows the hash seed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("PYSTENCILS_CACHE_DIR", tempfile.mkdtemp(prefix="ws-dump-"))
if os.environ.get("PYTHONHASHSEED") != "0":
    # lbmpy's generated code follows set order, so nvcc's register count of some
    # kernels (the esotwist lattice Boltzmann ones: 124 or 126) varies with the
    # hash seed; a fixed seed makes two dumps comparable
    os.execve(sys.executable, [sys.executable, *sys.argv],
              {**os.environ, "PYTHONHASHSEED": "0"})

import warpspeed as ws  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MACHINES = ("A100", "MI210")
MODELS = ("latency", "paper")


def record(p: ws.Prediction) -> dict[str, object]:
    d = p.to_dict()
    d.pop("evidence", None)  # read from ACCURACY.json, not computed
    return d


def corpus(quick: bool) -> dict[str, object]:
    sys.path.insert(0, str(ROOT / "tests"))
    from corpus import CASES
    from corpus.evaluate import options

    import warpspeed.pystencils as wps

    out: dict[str, object] = {}
    for i, case in enumerate(CASES):
        if quick and i % 10:
            continue
        try:
            built = case.build()
            ex = wps.extract(built.kernel, options(case))
        except Exception as exc:  # noqa: BLE001 - a refusal is recorded, not fatal
            out[case.name] = f"refused: {type(exc).__name__}"
            continue
        for m in MACHINES:
            for model in MODELS:
                try:
                    r = ws.rank(ex.kernel, m, jobs=1, model=model)
                    out[f"{case.name}|{m}|{model}"] = [record(p) for p in r.predictions]
                except ws.WarpspeedError as exc:
                    out[f"{case.name}|{m}|{model}"] = f"{type(exc).__name__}: {exc}"
    return out


def stencils() -> dict[str, object]:
    from stencils import lbm_fluidx3d, star3d_by_hand

    out: dict[str, object] = {}
    kernels = {"star3d_r4": star3d_by_hand.kernel(), "fluidx3d_fp16s": lbm_fluidx3d.kernel(
        storage="fp16s")}
    for m in ws.machines():
        for name, k in kernels.items():
            for model in MODELS:
                r = ws.rank(k, m, threads=[128, 256], folds=[(1, 1, 1)], jobs=1, model=model)
                out[f"{name}|{m}|{model}"] = [record(p) for p in r.predictions]
    return out


def development(quick: bool) -> dict[str, object]:
    from warpspeed.validation.reference import predictions
    from warpspeed.validation.transfer import DEV_SETS

    out: dict[str, object] = {}
    for dev in DEV_SETS:
        rows = dev.load()
        rows = rows[::10] if quick else rows
        for model in MODELS:
            out[f"{dev.name}|{model}"] = [record(p) for p in predictions(model, rows,
                                                                         dev.machine)]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    data = {"stencils": stencils(), "development": development(args.quick),
            "corpus": corpus(args.quick)}
    args.out.write_text(json.dumps(data, indent=0, sort_keys=True, default=str))
    print(f"wrote {args.out}: {sum(len(v) for v in data.values())} entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
