"""Write ``warpspeed/ACCURACY.md``, the accuracy figures of the models, from
the validation itself (``python fits/accuracy_report.py`` from the
repository root; the validation takes a while: every data set is predicted).

The figures are never typed by hand: the script runs ``warpspeed validate
--v100 --json`` (:data:`COMMAND`, in process), keeps its JSON in
``warpspeed/ACCURACY.json`` and renders every table that JSON holds,
whatever their number and shape: a list of records is one table, a mapping
of records is one table with a row per key, other mappings are walked key
by key (so the leave-one-set-out table and further data sets appear as the
validation adds them). MAPE columns (``*_mape``) and ``best_fraction`` are
fractions and are shown in percent. MODEL.md §9 says what the columns mean.

Both files record a fingerprint of what the figures depend on: the code of
the package and of ``stencils/`` (docstrings and comments left out), the
machine files and ``fits/*.toml``. ``--check`` verifies, without running
the validation, that the markdown is the rendering of the recorded JSON and
that the fingerprint is the current one (``tests/project/test_docs.py`` runs it);
after a change to the model it fails until the script is run again.

* ``--from-json FILE`` renders the output of ``warpspeed validate --v100
  --json`` saved in FILE instead of running the validation again (it must
  come from the current tree: the fingerprint is taken now);
* ``--rerun`` with ``--check`` also runs the validation and compares its
  numbers with the recorded ones;
* ``--fingerprint`` prints the current fingerprint. It is the same under
  every Python >= 3.12 (:func:`canonical`), and needs only the standard
  library: warpspeed is imported when the validation runs.

Without the reference data (``shared/`` beside the repository, or
``WARPSPEED_SHARED``) the validation says what is missing; the script
prints that, leaves the files as they are and exits with code 2.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import io
import json
import math
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "warpspeed" / "ACCURACY.md"
#: The validation whose JSON is rendered.
COMMAND = ("validate", "--v100", "--json")
#: Parts of the package that cannot change a predicted number.
NOT_MODEL = ("web", "plot.py", "__pycache__")
#: Column titles for the keys of the validation's records; other keys are
#: shown with ``_`` as spaces.
TITLES = {
    "dataset": "data set",
    "dram_load_mape": "DRAM load MAPE",
    "dram_store_mape": "DRAM store MAPE",
    "l2_load_mape": "L2 load MAPE",
    "l2_store_mape": "L2 store MAPE",
    "glups_mape": "GLup/s MAPE",
    "glups_median_ratio": "median pred/meas",
    "mape": "GLup/s MAPE",
    "median_ratio": "median pred/meas",
    "spearman": "Spearman",
    "best_fraction": "best/best",
    "worst_domain_best": "best/best, worst domain",
}
#: Headings for the tables of known keys of the validation's JSON.
HEADINGS = {
    "datasets": "Scores per data set and model",
    "leave_one_set_out": "Leave one set out: the joint fit of the default model's "
                         "kernel-fitted constant",
    "shipped": "With the exponent each machine file carries (what predictions use; "
               "MODEL.md §11 says why it is not the joint fit's)",
    "joint": "Fitted on all development sets (in sample)",
    "left_out": "Each set predicted with the constant fitted on the other sets",
    "paper": "The paper model on the same sets (nothing fitted)",
    "memory_systems": "Memory systems: each GPU with its kind's constant fitted on the other "
                      "GPUs (MODEL.md §11)",
    "evidence": "Error bands a prediction quotes, per grounding and kernel class (MODEL.md §14)",
}


# ---------------------------------------------------------------- what the figures depend on


def _code(path: Path) -> str:
    """A module's syntax tree without docstrings, as :func:`canonical` text:
    a change to a comment or a docstring does not change a number."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return canonical(tree)


def canonical(node: object) -> str:
    """A syntax tree as text that every Python >= 3.12 writes alike: node
    names and their fields in order, positions left out, and fields that
    are None or empty lists omitted (``ast.dump`` shows them up to 3.12 and
    hides them from 3.13 on, and newer versions add such fields, e.g.
    ``type_params``), but for the value of a constant."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={canonical(value)}" for name, value in ast.iter_fields(node)
                  if isinstance(node, ast.Constant) and name == "value"
                  or value is not None and not (isinstance(value, list) and not value)]
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical(v) for v in node) + "]"
    return repr(node)


def inputs(root: Path = ROOT) -> list[Path]:
    """The files the validation's numbers depend on."""
    package = [p for p in (root / "warpspeed").rglob("*.py")
               if not set(p.relative_to(root / "warpspeed").parts) & set(NOT_MODEL)]
    return sorted(package + list((root / "stencils").rglob("*.py"))
                  + list((root / "warpspeed" / "machines").glob("*.toml"))
                  + list((root / "warpspeed" / "machines" / "families").glob("*.toml"))
                  + list((root / "fits").glob("*.toml")))


def fingerprint(root: Path = ROOT) -> str:
    """A hash of :func:`inputs`, Python files by their code only."""
    h = hashlib.sha256()
    for p in inputs(root):
        h.update(str(p.relative_to(root)).encode())
        h.update((_code(p) if p.suffix == ".py" else p.read_text()).encode())
    return h.hexdigest()[:16]


# ---------------------------------------------------------------- rendering


def percent(key: str) -> bool:
    """Whether a column holds fractions shown in percent."""
    return key.endswith("_mape") or key in ("mape", "best_fraction", "worst_domain_best")


def cell(key: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return f"{100 * value:.1f} %" if percent(key) else f"{value:.2f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(key, v) for v in value)
    return str(value).replace("|", "\\|").replace("\n", " ")


def flat(record: dict[str, object], prefix: str = "") -> dict[str, object]:
    """A record with nested mappings flattened to ``outer.inner`` keys."""
    out: dict[str, object] = {}
    for k, v in record.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def table(records: list[dict[str, object]]) -> list[str]:
    """A markdown table of records; columns in order of first appearance."""
    rows = [flat(r) for r in records]
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    head = [TITLES.get(k.rsplit(".", 1)[-1], k.replace("_", " ")) for k in keys]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(cell(k.rsplit(".", 1)[-1], r.get(k)) for k in keys) + " |")
    return lines


def records_of(value: object) -> list[dict[str, object]] | None:
    """``value`` as a list of records: a list of mappings, or a mapping of
    flat mappings (the key becomes the first column); None otherwise."""
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return value
    if isinstance(value, dict) and value and all(isinstance(v, dict) for v in value.values()):
        if all(not isinstance(x, (dict, list)) for v in value.values() for x in v.values()):
            return [{"": k, **v} for k, v in value.items()]
    return None


def sections(value: object, title: str, depth: int = 3) -> list[str]:
    """Every table in ``value``, headed by the key that leads to it."""
    recs = records_of(value)
    head = [f"{'#' * min(depth, 6)} {title}", ""] if title else []
    if recs is not None:
        return head + table(recs) + [""]
    if isinstance(value, dict):
        scalars = {k: v for k, v in value.items() if not isinstance(v, (dict, list))}
        out = head + (table([scalars]) + [""] if scalars else [])
        for k, v in value.items():
            if isinstance(v, (dict, list)):
                out += sections(v, HEADINGS.get(k, k.replace("_", " ")),
                                depth + 1 if title else depth)
        return out
    if isinstance(value, list):
        return head + [cell(title, value), ""] if value else []
    return head + [cell(title, value), ""]


#: What each data set measures, for the plain summary: kernel class, the
#: regime its rows are in, and what was measured (MODEL.md §9). Labels only:
#: every number of the summary comes from the validation's JSON.
SET_CLASSES = {
    "star3d_r4": ("3D star stencil, radius 4, doubles", "DRAM-bound (2 rows L2)",
                  "GLup/s, DRAM and L2 volumes"),
    "star3d_r2": ("3D star stencil, radius 2, doubles", "-", "DRAM and L2 volumes only"),
    "box2d_r7": ("2D box stencil, range 7 (225 points), doubles", "L1-bound", "GLup/s"),
    "convolution_15x15": ("2D 15x15 convolution, floats, folded", "L1-bound", "GLup/s"),
    "convolution_15x15_RTXA4000": ("2D 15x15 convolution, floats, folded", "L1-bound", "GLup/s"),
    "convolution_15x15_W7800": ("2D 15x15 convolution, floats, folded (HIP)", "L1-bound",
                                "GLup/s"),
    **{f"fluidx3d_d3q19_{gpu}": ("D3Q19 lattice Boltzmann (FluidX3D), FP32/FP16S", "DRAM-bound",
                                 "GLup/s")
       for gpu in ("A40", "MI100", "A10", "L4", "RTX4090", "RTX3090", "RTXA4000", "RadeonVII",
                   "MI50", "W7800", "RX7600")},
}


def _pct_or_dash(v: object) -> str:
    return f"{100 * v:.0f} %" if isinstance(v, (int, float)) and math.isfinite(v) else "-"


def summary(data: object) -> list[str]:
    """The plain summary that opens ACCURACY.md: per kernel class and GPU
    what was measured and the typical error of both models, then the GPUs
    and regimes without kernel evidence; from the validation's JSON."""
    if not isinstance(data, dict):
        return []
    loo = data.get("leave_one_set_out", {})
    shipped = {e["dataset"]: e for e in loo.get("shipped", [])}
    paper = {e["dataset"]: e for e in loo.get("paper", [])}
    volumes = {(e.get("model"), e.get("dataset")): e for e in data.get("datasets", [])}
    gpu = {s: m["machine"] for m in data.get("machines", []) for s in m.get("kernel_sets", [])}
    gpu.setdefault("star3d_r2", "V100")
    lines = ["### In short", "",
             "| kernel class | GPU | regime | measured | rows | default model: median "
             "pred/meas, MAPE | paper model: median pred/meas, MAPE |",
             "|---|---|---|---|---|---|---|"]
    for name, (kind, regime, what) in SET_CLASSES.items():
        d, p = shipped.get(name), paper.get(name)
        if d is not None and p is not None:
            cells = (str(d["rows"]), f"{d['median_ratio']:.2f}, {_pct_or_dash(d['mape'])}",
                     f"{p['median_ratio']:.2f}, {_pct_or_dash(p['mape'])}")
        elif ("latency", name) in volumes:
            v, pv = volumes[("latency", name)], volumes.get(("paper", name), {})
            cells = (str(v["rows"]), f"DRAM volume MAPE {_pct_or_dash(v.get('dram_load_mape'))}",
                     f"DRAM volume MAPE {_pct_or_dash(pv.get('dram_load_mape'))}")
        else:
            continue
        lines.append(f"| {kind} | {gpu.get(name, '?')} | {regime} | {what} | "
                     + " | ".join(cells) + " |")
    bare = [f"{m['machine']} ({m['grounding']})" for m in data.get("machines", [])
            if not m.get("kernel_sets")]
    lines += ["", "No kernel was measured on: " + ", ".join(bare) + ". Their predictions rest "
              "on the micro-benchmarks or data sheets their machine files cite; the lattice "
              "Boltzmann and convolution rows above are the evidence on GPUs outside the "
              "paper's two.",
              "", _regime_line(data, "L2"), "", _regime_line(data, "FP"), ""]
    return lines


def _regime_line(data: dict, regime: str) -> str:
    """What evidence a regime that no development set is in as a whole has:
    the rows of other sets predicted in it (the default model's evidence
    bands), as ``warpspeed explain`` says (warpspeed/reports/expected.py)."""
    bands = [b for b in data.get("evidence", [])
             if b.get("kernel_class") == f"{regime}-bound" and b.get("model") == "latency"]
    rows = sum(int(b.get("rows", 0)) for b in bands)
    sets = list(dict.fromkeys(d for b in bands for d in b.get("datasets", [])))
    if not rows:
        return (f"No development set is {regime}-bound: predictions in that regime have no "
                "measured evidence (`warpspeed explain` says so).")
    return (f"No development set is {regime}-bound as a whole, but {rows} of their rows are "
            f"predicted {regime}-bound by the default model ({', '.join(sets)}): the error "
            "bands below are theirs (`warpspeed explain` quotes them).")


def render(data: object, stamp: str = "") -> str:
    """The whole of ACCURACY.md for the validation's JSON ``data``;
    ``stamp``: the fingerprint the figures were computed for."""
    lines = [
        "# Accuracy of the models against measurements",
        "",
        "<!-- generated by fits/accuracy_report.py from `warpspeed "
        + " ".join(COMMAND) + "`; do not edit: run `python fits/accuracy_report.py` -->",
        "",
        "Generated from the validation, never typed by hand. What the data sets are",
        "and what the columns mean: [MODEL.md §9](MODEL.md); where the models are known",
        "to be wrong: MODEL.md §10. MAPE: mean absolute percentage error over the rows",
        "where the quantity was measured (an empty cell: not measured); median pred/meas:",
        "median of predicted over measured GLup/s; Spearman: rank correlation of predicted",
        "and measured GLup/s; best/best: measured GLup/s of the configuration the model",
        "ranks first over the measured best; best/best, worst domain: the same within",
        "each domain of a set that spans several (plane sizes, copies of other fields,",
        "occupancy pads), the lowest of them (empty: one domain).",
        "",
    ]
    lines += summary(data)
    lines += sections(data, "scores" if records_of(data) is not None else "")
    if stamp:
        lines += [f"Model inputs fingerprint: `{stamp}` (the raw numbers: "
                  "[ACCURACY.json](ACCURACY.json)).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# ---------------------------------------------------------------- running and checking


def collect() -> tuple[object | None, str]:
    """The validation's JSON, or None and the error it printed."""
    from warpspeed.cli import main as warpspeed_main  # the fingerprint alone needs no warpspeed

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = warpspeed_main(list(COMMAND))
    if code != 0:
        return None, err.getvalue().strip() or f"warpspeed {' '.join(COMMAND)} exited {code}"
    try:
        return json.loads(out.getvalue()), ""
    except json.JSONDecodeError as exc:
        return None, f"warpspeed {' '.join(COMMAND)} printed no JSON: {exc}"


def _canonical(data: object) -> str:
    """``data`` as comparable text (NaN equals NaN)."""
    return json.dumps(data, sort_keys=True)


def check(md: Path, rerun: bool) -> tuple[int, str]:
    """Exit code and message of ``--check`` (module docstring)."""
    raw = md.with_suffix(".json")
    if not (md.is_file() and raw.is_file()):
        return 1, f"{md} or {raw} is missing: run python fits/accuracy_report.py"
    record = json.loads(raw.read_text())
    if md.read_text() != render(record["validation"], record["inputs"]):
        return 1, f"{md} is not the rendering of {raw}: run python fits/accuracy_report.py"
    if record["inputs"] != fingerprint():
        return 1, (f"the model changed since {md.name} was generated (fingerprint "
                   f"{record['inputs']}, now {fingerprint()}): run python fits/accuracy_report.py")
    if rerun:
        data, error = collect()
        if data is None:
            return 2, error
        if _canonical(data) != _canonical(record["validation"]):
            return 1, f"a fresh validation differs from {raw}: run python fits/accuracy_report.py"
    return 0, f"{md} is up to date"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="the markdown file to write")
    ap.add_argument("--from-json", type=Path,
                    help="render this saved output of 'warpspeed validate --v100 --json' "
                         "(or a saved ACCURACY.json)")
    ap.add_argument("--check", action="store_true",
                    help="check the files instead of writing them (exit 1 if stale)")
    ap.add_argument("--rerun", action="store_true", help="with --check: rerun the validation")
    ap.add_argument("--fingerprint", action="store_true",
                    help="print the fingerprint of the current tree and exit")
    args = ap.parse_args(argv)
    if args.fingerprint:
        print(fingerprint())
        return 0
    if args.check:
        code, message = check(args.out, args.rerun)
        print(message, file=sys.stderr if code else sys.stdout)
        return code
    if args.from_json:
        data, error = json.loads(args.from_json.read_text()), ""
        if isinstance(data, dict) and set(data) == {"command", "inputs", "validation"}:
            data = data["validation"]  # a saved ACCURACY.json: its validation alone
    else:
        data, error = collect()
    if data is None:
        print(f"{error}\n{args.out} left unchanged: the validation needs the reference data",
              file=sys.stderr)
        return 2
    stamp = fingerprint()
    record = {"command": list(COMMAND), "inputs": stamp, "validation": data}
    args.out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    args.out.write_text(render(data, stamp))
    print(f"wrote {args.out} and {args.out.with_suffix('.json').name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
