"""The documentation inside the project: section references resolve, every
machine-file key is documented, the public API's examples run, and the
accuracy figures are the ones the validation computes."""

import ast
import dataclasses
import doctest
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from tests.slow import slow
from warpspeed.machine import PLAIN_KEYS, Machine
from warpspeed.timing import parameter_tables

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "warpspeed" / "MODEL.md"
ACCURACY = ROOT / "warpspeed" / "ACCURACY.md"
SUFFIXES = {".py", ".md", ".toml", ".ipynb"}
SKIP_DIRS = {"__pycache__", "build", "dist", "node_modules"}

#: A section number, ``§6`` or ``§ 6``, with an optional subsection ``.N``.
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)?)")
#: ``MODEL.md`` (or ```MODEL.md```) followed by one or more section numbers,
#: ``§4-§8 and §10`` included, or by ``section N``.
CITATION = re.compile(
    r"MODEL\.md`{0,2}\s*(?:section\s+(\d+(?:\.\d+)?)"
    r"|((?:§\s?\d+(?:\.\d+)?(?:\s*(?:,|and|or|to|-|–)\s*)?)+))"
)
#: A bare ``§N`` preceded by one of these cites another document (the
#: paper, an arXiv preprint), not MODEL.md.
OTHER_DOCUMENT = re.compile(r"(paper's|paper,|arXiv|Table \d|Fig\. \d)[^§]{0,40}$")


def project_files() -> list[Path]:
    out = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT).parts
        if any(p.startswith(".") or p in SKIP_DIRS for p in rel[:-1]):
            continue
        if path.suffix in SUFFIXES and path.is_file():
            out.append(path)
    return out


def model_sections() -> set[str]:
    heads = re.findall(r"^#{2,4} §(\d+(?:\.\d+)?)\b", MODEL.read_text(), re.M)
    return set(heads)


def references() -> list[tuple[str, str]]:
    """Every MODEL.md section a file of the project cites, as (where, number):
    explicit ``MODEL.md §N`` citations, and bare ``§N`` that do not name
    another document."""
    out = []
    for path in project_files():
        text = path.read_text(errors="replace")
        where = str(path.relative_to(ROOT))
        cited_spans = []
        for m in CITATION.finditer(text):
            cited_spans.append(m.span())
            if m.group(1):
                out.append((where, m.group(1)))
            else:
                out += [(where, n) for n in SECTION.findall(m.group(2))]
        if "MODEL.md" not in text and path != MODEL:
            continue  # a bare § in a file that never names MODEL.md cites something else
        for m in SECTION.finditer(text):
            if any(lo <= m.start() < hi for lo, hi in cited_spans):
                continue
            if OTHER_DOCUMENT.search(text[max(0, m.start() - 60):m.start()]):
                continue
            out.append((where, m.group(1)))
    return out


@slow
def test_model_md_has_the_sections_the_code_cites():
    sections = model_sections()
    assert {str(n) for n in range(1, 11)} <= sections
    refs = references()
    assert len(refs) > 150  # the code cites the model throughout
    missing = sorted({f"{where}: §{n}" for where, n in refs if n not in sections})
    assert not missing, "references to sections MODEL.md lacks:\n" + "\n".join(missing)


def test_reference_scanner_sees_every_citation_form(tmp_path):
    text = ("see MODEL.md §3 and §6, `MODEL.md` §7, §9; MODEL.md §4-§8\n    and §12;"
            " MODEL.md section 2; the paper's rule, §4.2")
    found = []
    for m in CITATION.finditer(text):
        found += [m.group(1)] if m.group(1) else SECTION.findall(m.group(2))
    assert found == ["3", "6", "7", "9", "4", "8", "12", "2"]
    assert OTHER_DOCUMENT.search("the paper's \"1024 B rule\", ")


def test_links_of_the_model_description_resolve():
    for doc in (MODEL, ROOT / "README.md"):
        for target in re.findall(r"\]\(([^)#:]+)\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
    head = "\n".join((ROOT / "README.md").read_text().splitlines()[:30])
    assert "(warpspeed/MODEL.md)" in head  # reachable from the README's first screen
    assert "design documents" not in (ROOT / "README.md").read_text()


def test_every_machine_file_key_is_documented():
    text = MODEL.read_text()
    section = text[text.index("## §12"):]
    section = section[:section.index("\n## §", 1)]
    keys = [f.name for f in dataclasses.fields(Machine)  # family: a record, its key is plain
            if f.name not in ("sources", "path", "family", "tables", "stream_scale", "dram_scale")]
    timing = [f"{t.name}.{k}" for t in parameter_tables() for k in t.keys()]
    undocumented = [k for k in [*PLAIN_KEYS, *keys, *timing]
                    if not re.search(rf"^\| `{k}` \|", section, re.M)]
    assert not undocumented, f"machine-file keys missing from MODEL.md §12: {undocumented}"
    # and they are keys the loader really accepts: the V100 file uses them all but
    # the launch latency, which only kernel measurements give, and the block launch,
    # which only a small-kernels table of the GPU's own gives (the H200 file has both)
    v100 = (ROOT / "warpspeed" / "machines" / "V100.toml").read_text()
    optional = ("latency.launch_latency_us", "latency.block_launch_ns")
    assert all(re.search(rf"^(\[{k}\]|{k} =)", v100, re.M) for k in [*keys, *timing]
               if k not in optional)
    h200 = (ROOT / "warpspeed" / "machines" / "H200.toml").read_text()
    assert all(re.search(rf"^\[{k}\]", h200, re.M) for k in optional)


# ---------------------------------------------------------------- the API at the prompt

API = {
    "ws.predict": ws.predict,
    "ws.rank": ws.rank,
    "ws.advise": ws.advise,
    "ws.Kernel": ws.Kernel,
    "ws.Field": ws.Field,
    "wps.extract": wps.extract,
    "wps.ExtractOptions": wps.ExtractOptions,
    "wps.create_kernel": wps.create_kernel,
}


@pytest.mark.parametrize("name", sorted(API))
def test_public_api_docstring_example_runs(name):
    obj = API[name]
    doc = obj.__doc__ or ""
    assert ">>>" in doc, f"help({name}) shows no example"
    test = doctest.DocTestParser().get_doctest(doc, {}, name, None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 3 and result.failed == 0


# ---------------------------------------------------------------- generated accuracy figures


def accuracy_script():
    spec = importlib.util.spec_from_file_location(
        "fits_accuracy_report", ROOT / "fits" / "accuracy_report.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_accuracy_report_renders_every_table_the_validation_holds():
    script = accuracy_script()
    data = {
        "scores": [{"dataset": "a", "model": "paper", "rows": 3, "glups_mape": 0.123,
                    "spearman": 0.5, "best_fraction": None}],
        "leave_one_set_out": {"a": {"glups_mape": 0.2, "rows": 3}},
    }
    text = script.render(data)
    assert "### scores" in text and "### Leave one set out" in text
    assert "| a | paper | 3 | 12.3 % | 0.50 |  |" in text
    assert "| a | 20.0 % | 3 |" in text
    assert script.render([{"dataset": "a", "rows": 1}]).count("| a | 1 |") == 1


def test_accuracy_report_without_data_says_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WARPSPEED_SHARED", str(tmp_path / "nowhere"))
    out = tmp_path / "ACCURACY.md"
    assert accuracy_script().main(["--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "not found" in err and "WARPSPEED_SHARED" in err


def test_accuracy_fingerprint_follows_code_not_docstrings(tmp_path):
    script = accuracy_script()
    for d in ("warpspeed/machines", "warpspeed/volumes", "stencils", "fits"):
        (tmp_path / d).mkdir(parents=True)
    mod = tmp_path / "warpspeed" / "volumes" / "levels.py"
    mod.write_text('"""Volumes."""\n\ndef f():\n    """Twice."""\n    return 2  # two\n')
    (tmp_path / "warpspeed" / "machines" / "X.toml").write_text("sms = 1\n")
    before = script.fingerprint(tmp_path)
    mod.write_text('"""Volumes, reworded."""\n\ndef f():\n    """Two."""\n    return 2\n')
    assert script.fingerprint(tmp_path) == before
    mod.write_text('"""Volumes."""\n\ndef f():\n    return 3\n')
    assert script.fingerprint(tmp_path) != before
    mod.write_text('"""Volumes."""\n\ndef f():\n    return 2\n')
    (tmp_path / "warpspeed" / "machines" / "X.toml").write_text("sms = 2\n")
    assert script.fingerprint(tmp_path) != before


def test_accuracy_fingerprint_text_is_the_tree_without_positions_or_empty_fields():
    script = accuracy_script()
    tree = ast.parse("def f[T](x: T, *, y=None):\n    return x[1:]\n")
    assert script.canonical(tree) == (
        "Module(body=[FunctionDef(name='f', args=arguments(args=[arg(arg='x', "
        "annotation=Name(id='T', ctx=Load()))], kwonlyargs=[arg(arg='y')], "
        "kw_defaults=[Constant(value=None)]), body=[Return(value=Subscript("
        "value=Name(id='x', ctx=Load()), slice=Slice(lower=Constant(value=1)), "
        "ctx=Load()))], type_params=[TypeVar(name='T')])])"
    )


@slow
def test_accuracy_fingerprint_is_the_same_under_every_python():
    """ast.dump writes a tree differently under 3.12 and 3.13: the
    fingerprint must not follow it (every Python >= 3.12 of .ci/pythons)."""
    listed = subprocess.run(["bash", str(ROOT / ".ci" / "pythons")], capture_output=True,
                            text=True, timeout=300).stdout.split()
    versions = {}
    for python in [sys.executable, *listed]:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
        versions.setdefault(out, python)
    if len(versions) < 2:
        pytest.skip(f"only one Python >= 3.12 on this machine ({', '.join(versions)}): "
                    "install another (.ci/pythons lists them) to compare")
    prints = {}
    for v, python in versions.items():
        res = subprocess.run([python, str(ROOT / "fits" / "accuracy_report.py"), "--fingerprint"],
                             capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, f"Python {v}: {res.stderr.strip()}"
        prints[v] = res.stdout.strip()
    assert set(prints.values()) == {accuracy_script().fingerprint()}, prints


def test_accuracy_figures_are_generated_for_the_current_model():
    """ACCURACY.md is the rendering of the recorded validation, and the
    recorded fingerprint is the current one; a model change makes this fail
    until ``python fits/accuracy_report.py`` runs again."""
    assert "(ACCURACY.md)" in MODEL.read_text()
    if not ACCURACY.with_suffix(".json").is_file():
        pytest.skip("ACCURACY.md was generated before its validation JSON was recorded: "
                    "run python fits/accuracy_report.py (it reruns the whole validation)")
    code, message = accuracy_script().check(ACCURACY, rerun=False)
    assert code == 0, message


@pytest.mark.skipif(not os.environ.get("WARPSPEED_FULL_VALIDATION"),
                    reason="reruns the whole validation (many minutes): set "
                           "WARPSPEED_FULL_VALIDATION=1")
def test_accuracy_figures_match_a_fresh_validation():
    from warpspeed.validation.reference import data_dir

    if not data_dir().is_dir():
        pytest.skip(f"no reference data at {data_dir()} (the shared/ folder beside the repository)")
    code, message = accuracy_script().check(ACCURACY, rerun=True)
    assert code == 0, message


def copy_kernel_prediction(model: str = ws.model.DEFAULT_MODEL) -> ws.Prediction:
    x = ws.tidx
    a, b = ws.Field("a", shape=(256,)), ws.Field("b", shape=(256,))
    k = ws.Kernel(loads=[a[x]], stores=[b[x]], domain=(256,))
    return ws.predict(k, "V100", block=(64, 1, 1), model=model)


def test_every_prediction_output_is_explained():
    d = copy_kernel_prediction().to_dict()
    text = MODEL.read_text()
    section = text[text.index("## §14"):]
    keys = [k for k in d if k not in ("machine", "kernel", "details", "volumes")]
    keys += [f"details.{k}" for k in d["details"]]
    keys += [f"volumes.{k}" for k in d["volumes"]]
    missing = [k for k in keys if not {f"`{k}`", f"`{k.split('.')[-1]}`"} & set(
        re.findall(r"`[^`]+`", section))]
    assert not missing, f"outputs not explained in MODEL.md §14: {missing}"


def test_every_term_of_the_default_model_is_explained():
    p = copy_kernel_prediction("latency")
    text = MODEL.read_text()
    section = text[text.index("## §11"):]
    section = section[:section.index("\n## §", 1)]
    missing = [k for k in p.terms if f"`{k}`" not in section]
    assert not missing, f"terms of the default model not explained in MODEL.md §11: {missing}"


def test_every_refusal_is_listed_in_the_limits_section():
    import warpspeed.errors
    import warpspeed.pystencils.unsupported as unsupported

    text = MODEL.read_text()
    section = text[text.index("## §13"):]
    section = section[:section.index("\n## §", 1)]
    classes = [getattr(unsupported, n) for n in unsupported.__all__]
    classes += [c for c in vars(warpspeed.errors).values()
                if isinstance(c, type) and issubclass(c, Exception)]
    missing = sorted({c.__name__ for c in classes} - set(re.findall(r"`(?:\w+\.)*(\w+)`", section)))
    assert not missing, f"error classes not listed in MODEL.md §13: {missing}"


def test_the_readme_names_every_shipped_machine():
    readme = (ROOT / "README.md").read_text()
    shipped = sorted(p.stem for p in (ROOT / "warpspeed" / "machines").glob("*.toml"))
    assert shipped and [n for n in shipped if not re.search(rf"\b{re.escape(n)}\b", readme)] == []


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(f"## {title}"):]
    return section[:section.index("\n## ", 1)]


@slow
def test_the_measure_and_tune_section_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's "Measure and tune on your GPU" commands, run as written
    (the replayed H200 run at its place in the clone), and its Python example."""
    import shlex

    from warpspeed.cli import main
    from warpspeed.validation.reference import dataset_dir

    csv = dataset_dir("h200") / "measurements.csv"
    if not csv.is_file():
        pytest.skip(f"no H200 measurements at {csv}")
    section = _section("Measure and tune on your GPU")
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1).replace("\\\n", " ")
    monkeypatch.chdir(tmp_path)
    outputs = []
    for line in block.strip().splitlines():
        words = [str(csv) if w == "fits/data/h200/measurements.csv" else w
                 for w in shlex.split(line)]
        assert words[0].endswith("warpspeed")
        assert main(words[1:]) == 0, line
        outputs.append(capsys.readouterr().out)
    tune, calibrate, validate = outputs
    assert "timed on a replay of measurements.csv" in tune and "chosen: fold" in tune
    assert "grounding kernels" in calibrate and (tmp_path / "h200-kernels.toml").is_file()
    assert "validation on H200" in validate and "top-1" in validate
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    tuned = namespace["tuned"].tuned
    assert tuned.chosen.measured == max(t.measured for t in tuned.timed)
    assert "chosen: fold 1,1,1" in capsys.readouterr().out
