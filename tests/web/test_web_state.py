"""The web calculator's page logic without a browser (warpspeed.web.state,
.explore, .views): a kernel entered by hand gives exactly ws.predict's
numbers, bad input gives the library's message on the field at fault,
uploaded machines, the layer-condition sweep and the bounded ranking."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path

import pytest

import warpspeed as ws
from stencils import star3d_by_hand
from warpspeed.input.stencil_spec import parse_params
from warpspeed.machine import machine_files
from warpspeed.timing import MODELS
from warpspeed.web import explore, state, views
from warpspeed.web.state import FieldError, Form

x, y, z = ws.tidx, ws.tidy, ws.tidz
HAND = Form(mode="hand")


def star7(domain: tuple[int, int, int] = (512, 512, 256)) -> ws.Kernel:
    """The default hand form's 7-point star, built with the Python API."""
    shape = tuple(d + 2 for d in domain)
    src = ws.Field("src", shape=shape, itemsize=8)
    dst = ws.Field("dst", shape=shape, itemsize=8)
    c = (x + 1, y + 1, z + 1)
    loads = [src[c]] + [src[tuple(c[a] + s if a == d else c[a] for a in range(3))]
                        for d in range(3) for s in (-1, 1)]
    return ws.Kernel(loads=loads, stores=[dst[c]], domain=domain, fp_instructions=7)


def same(p: ws.Prediction, q: ws.Prediction) -> None:
    a, b = p.to_dict(), q.to_dict()
    a.pop("kernel"), b.pop("kernel")
    assert a == b


@pytest.mark.parametrize("model", sorted(MODELS))
def test_star_by_hand_gives_predicts_numbers(model: str) -> None:
    out = state.evaluate(dataclasses.replace(HAND, model=model))
    assert out.errors == {}
    expected = ws.predict(star7(), "A100", (256, 1, 2), model=model)
    same(out.prediction, expected)
    advice = ws.advise(expected, ws.load_machine("A100"), star7())
    assert dataclasses.replace(out.advice, kernel="kernel") == advice


def test_shipped_stencil_gives_predicts_numbers() -> None:
    out = state.evaluate(Form(params="radius=2 shape=256,128,64", block="64,2,4", fold="1,1,2"))
    assert out.errors == {}
    k = star3d_by_hand.kernel(radius=2, shape=(256, 128, 64), fold=(1, 1, 2))
    same(out.prediction, ws.predict(k, "A100", (64, 2, 4)))


def test_every_shipped_stencil_is_offered() -> None:
    names = state.stencil_names()
    assert {"star3d", "star3d_by_hand", "lbm_d3q19"} <= set(names)
    assert not any(n.startswith("_") for n in names)
    assert state.stencil_defaults("star3d_by_hand") == {
        "radius": "4", "shape": "640,512,512", "alignment": "interior"}


def test_shipped_pystencils_stencils_follow_the_machines_vendor() -> None:
    form = Form(stencil="star3d", params="radius=1 shape=64,64,32", block="64,2,1")
    for machine, target in (("MI210", "HIP"), ("A100", "CUDA")):
        out = state.evaluate(dataclasses.replace(form, machine=machine))
        assert out.errors == {} and out.kernel.target == target
        assert not any("generated for" in n for n in out.prediction.notes)
    ranked = explore.rank_form(dataclasses.replace(form, machine="MI210", threads="256",
                                                   folds="1,1,1 1,1,2"))
    assert not any("generated for" in n for p in ranked.predictions for n in p.notes)
    assert "target" not in state.stencil_defaults("star3d")


def test_the_explanation_carries_the_predictions_notes() -> None:
    out = state.evaluate(Form(params="radius=1 shape=64,64,32", block="64,2,1",
                              machine="MI210"))
    assert out.errors == {} and out.prediction.notes
    text = views.explanation_html(out.prediction, out.advice)
    assert all(html.escape(f"note: {n}") in text for n in out.prediction.notes)
    summary = views.summary_html(out.prediction, out.advice.vendor)
    assert "blocks per CU" in summary and "cycles per wavefront" in summary


def library_error(fn: object) -> str:
    with pytest.raises(ws.WarpspeedError) as info:
        fn()  # type: ignore[operator]
    return str(info.value)


def test_bad_input_shows_the_librarys_message_on_its_field() -> None:
    src = ws.Field("src", shape=(514, 514, 258))
    out = state.evaluate(dataclasses.replace(HAND, loads="src[tidx, tidy, tidz]\n"
                                                        "src[tidx*tidy, tidy, tidz]"))
    assert out.prediction is None
    assert out.errors == {"loads": "line 2: " + library_error(lambda: src[x * y, y, z])}
    assert "multiplies thread-dependent values" in out.errors["loads"]

    out = state.evaluate(dataclasses.replace(HAND, block="1024,2,1"))
    assert out.errors == {"block": library_error(
        lambda: ws.predict(star7(), "A100", (1024, 2, 1)))}
    assert "at most 1024" in out.errors["block"]

    out = state.evaluate(dataclasses.replace(HAND, stores="dst[tidx + n, tidy, tidz]"))
    assert set(out.errors) == {"stores"}
    assert "line 1: column 12: unknown name 'n'" in out.errors["stores"]

    out = state.evaluate(Form(params="radius=2 colour=red"))
    assert out.errors == {"params": library_error(
        lambda: parse_params(star3d_by_hand.kernel, ["colour=red"]))}
    assert "unknown parameter 'colour'" in out.errors["params"]


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"fields": "src 10,10,10 3\ndst 9,9,9"}, "fields", "itemsize of field src must be one of"),
    ({"fields": "src 10,10\ndst 9,9,9"}, "loads", "has 2 dimensions but is indexed with 3"),
    ({"fields": "1src 10,10,10"}, "fields", "must be an identifier"),
    ({"fields": "src 10,10,10\nsrc 10,10,10"}, "fields", "defined twice"),
    ({"fields": "\n".join(f"f{i} 8,8,8" for i in range(17))}, "fields", "at most 16"),
    ({"fields": "src 2000000000,1,1"}, "fields", "between 1 and"),
    ({"loads": "nope[tidx, tidy, tidz]"}, "loads", "unknown field 'nope'"),
    ({"loads": "src[tidx, tidy, tidz]\n" * 300}, "loads", "at most 200"),
    ({"loads": "src[tidx,tidy,tidz]\n" * 190, "stores": "dst[tidx,tidy,tidz]\n" * 100},
     "loads", "at most 256"),
    ({"loads": "x" * 2**20}, "loads", "at most 20000"),
    ({"loads": "", "stores": ""}, "loads", "at least one load or store"),
    ({"domain": "0,1,1"}, "domain", "between 1 and"),
    ({"domain": "1,2,3,4"}, "domain", "1 to 3 extents"),
    ({"domain": "1073741824,1073741824,8"}, "domain", "more than 2**33"),
    ({"domain": "-5"}, "domain", "the domain must lie between 1 and"),
    ({"domain": "5;5"}, "domain", "the domain must be integers like 256,1,2, got '5;5'"),
    ({"fold": "1,1"}, "fold", "the fold must be three integers X,Y,Z like 256,1,2, got '1,1'"),
    ({"fold": "1,1,17"}, "fold", "between 1 and 16"),
    ({"fp": "lots"}, "fp", "FP instructions per thread must be an integer, got 'lots'"),
    ({"registers": "300"}, "registers", "between 1 and 255"),
    ({"machine": "B300"}, "machine", "unknown machine 'B300'"),
    ({"machine": state.UPLOADED}, "machine_file", "upload a machine file"),
    ({"machine": state.UPLOADED, "machine_file": "z1garbage"}, "machine_file", "damaged"),
    ({"model": "magic"}, "model", "unknown model 'magic'"),
    ({"block": "256;1;2"}, "block", "must be three integers X,Y,Z"),
    ({"block": "0,1,1"}, "block", "between 1 and"),
    ({"mode": "python"}, "mode", "unknown mode"),
])
def test_errors_name_the_field(changes: dict[str, str], field: str, message: str) -> None:
    out = state.evaluate(dataclasses.replace(HAND, **changes))
    assert out.prediction is None
    assert field in out.errors, out.errors
    assert message in out.errors[field]
    assert len(out.errors[field]) < 600


@pytest.mark.parametrize(("params", "message"), [
    ("radius=100", "radius=100 is outside the accepted range"),
    ("radius=two", "not a valid int"),
    ("shape=100000,100000,100000", "more than 2**33"),
    ("fold=1,1,2", "fold box"),
    ("alignment=__import__('os')", "alignment must be 'interior' or a byte offset"),
])
def test_stencil_parameters_are_bounded(params: str, message: str) -> None:
    out = state.evaluate(Form(params=params))
    assert message in out.errors.get("params", ""), out.errors


def test_unknown_stencils_are_never_imported() -> None:
    for name in ("../../etc/passwd", "os", "/tmp/x.py", "_common"):
        out = state.evaluate(Form(stencil=name))
        assert "unknown stencil" in out.errors["stencil"]


def a100_toml() -> str:
    return machine_files()["a100"].read_text()


def test_uploaded_machine_file() -> None:
    text = a100_toml().replace('name = "A100"', 'name = "MyGPU"')
    blob = state.pack_machine("my_gpu.toml", text)
    assert state.unpack_machine(blob) == ("my_gpu.toml", text)
    out = state.evaluate(dataclasses.replace(HAND, machine=state.UPLOADED, machine_file=blob))
    assert out.errors == {}
    assert out.prediction.machine == "MyGPU"
    p = ws.predict(star7(), "A100", (256, 1, 2))
    assert out.prediction.glups == p.glups and out.prediction.volumes == p.volumes


@pytest.mark.parametrize(("text", "message"), [
    ("name = [broken", "my.toml is not valid TOML"),
    ("", "'name' must be a string"),
    ('name = "X"\nfits = "paper"\n', "missing table"),
])
def test_malformed_machine_files(text: str, message: str) -> None:
    with pytest.raises(FieldError) as info:
        state.machine_from_toml(text, "my.toml")
    assert info.value.field == "machine_file"
    assert message in str(info.value)
    assert "warpspeed-web-" not in str(info.value)  # the temporary path is not shown


def test_machine_files_cannot_name_files_on_the_server() -> None:
    for fits in ("/etc/passwd", "../../fits/paper.toml", "x.toml"):
        text = a100_toml().replace('fits = "paper"', f'fits = "{fits}"')
        with pytest.raises(FieldError, match="not a path"):
            state.machine_from_toml(text, "evil.toml")
    text = a100_toml().replace("[max_threads_per_block]\nvalue = 1024",
                               "[max_threads_per_block]\nvalue = 1048576")
    with pytest.raises(FieldError, match="at most 1024"):
        state.machine_from_toml(text, "big.toml")
    with pytest.raises(FieldError, match="larger than"):
        state.machine_from_toml(a100_toml() + "#" * 70_000, "huge.toml")


def test_packed_machine_files_are_bounded() -> None:
    bomb = state.pack_machine("bomb.toml", "#" * 10_000_000)
    assert len(bomb) < 40_000  # compresses well...
    with pytest.raises(FieldError, match="damaged"):
        state.unpack_machine(bomb)  # ...but is not inflated past the limit


def test_layer_conditions_by_hand() -> None:
    lc = explore.layer_conditions(HAND)
    assert list(lc.series) == ["512x1x1", "256x1x2", "128x1x4", "64x1x8"]
    assert lc.total == 512 * 512 * 256
    assert len(lc.planes) >= 8 and lc.planes[0] == 64
    n, zs = lc.planes[3], round(lc.total / lc.planes[3] ** 2)
    same(lc.series["256x1x2"][3], ws.predict(star7((n, n, zs)), "A100", (256, 1, 2)))
    dram = [p.volumes.dram_load + p.volumes.dram_store for p in lc.series["512x1x1"]]
    assert dram[0] < 20 < dram[-1]  # the layer condition breaks for large planes
    fig = views.layer_conditions_figure(lc)
    assert len(fig.axes[0].get_lines()) == 4


def test_layer_conditions_of_a_stencil_and_their_limits() -> None:
    lc = explore.layer_conditions(Form(params="radius=1 shape=256,256,256"))
    p = lc.series["256x1x2"][0]
    n = lc.planes[0]
    k = star3d_by_hand.kernel(radius=1, shape=(n, n, round(256**3 / n**2)))
    same(p, ws.predict(k, "A100", (256, 1, 2)))
    with pytest.raises(FieldError, match="3-D domain"):
        explore.layer_conditions(dataclasses.replace(
            HAND, fields="a 100,100 8", loads="a[tidx, tidy]", stores="", domain="100,100"))


def test_ranking_equals_ws_rank() -> None:
    calls: list[tuple[int, int]] = []
    r = explore.rank_form(HAND, lambda d, t: calls.append((d, t)))
    expected = ws.rank(star7(), "A100", threads=[1024], jobs=1)  # the form's thread count
    assert [(p.block, p.glups) for p in r.predictions] == [
        (p.block, p.glups) for p in expected.predictions]
    assert calls and calls[-1][0] == calls[-1][1]
    df = views.ranking_frame(r)
    assert list(df["block"])[:3] == [",".join(map(str, p.block)) for p in r.predictions[:3]]
    assert "configurations ranked" in views.ranking_summary(r, 1.0)


def test_ranking_folds_a_stencil() -> None:
    form = Form(params="radius=1 shape=128,128,128", folds="1,1,1 1,1,2", threads="256")
    r = explore.rank_form(form)
    assert {p.fold for p in r.predictions} == {(1, 1, 1), (1, 1, 2)}


def test_ranking_is_bounded() -> None:
    with pytest.raises(FieldError, match="at most 200 are ranked") as info:
        explore.rank_form(Form(threads="512,1024"))  # 3 folds x (45 + 56) shapes
    assert info.value.field == "threads"
    with pytest.raises(FieldError, match="at most 4 thread counts"):
        explore.rank_form(Form(threads="32,64,128,256,512"))
    with pytest.raises(FieldError, match="between 1 and 1024"):
        explore.rank_form(Form(threads="2048"))
    with pytest.raises(explore.RankingTimeout, match="budget of 0 s"):
        explore.rank_form(HAND, budget=0.0)


def test_views_escape_user_text() -> None:
    html = views.error_html("<script>alert(1)</script>")
    assert "<script>" not in html and "&lt;script&gt;" in html
    p = ws.predict(dataclasses.replace(star7(), name="<b>x</b>"), "A100", (256, 1, 2))
    assert "<b>x</b>" not in views.summary_html(p)
    assert f'data-value="{p.glups!r}"' in views.summary_html(p)
    for key in ("dram_load", "l2_store"):
        assert f'class="ws-{key}" data-value="{getattr(p.volumes, key)!r}"' in views.volumes_html(p)


def test_explanation_is_the_explain_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from warpspeed import cli

    assert cli.main(["explain", "star3d_by_hand", "--machine", "A100", "--block",
                     "256,1,2"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    k = star3d_by_hand.kernel()
    m = ws.load_machine("A100")
    p = ws.predict(k, m, (256, 1, 2))
    for line in views.explanation_lines(p, ws.advise(p, m, k)):
        assert " ".join(line.split()) in printed
    assert views.terms_figure(p) is not None and views.limits_figure(p) is not None
    spans = [r for r in views.terms_figure(p).center if type(r).__name__ == "Span"]
    assert [s.location for s in spans] == [pytest.approx(1.0 / p.glups)]  # predicted ns/Lup
    assert views.terms_figure(ws.predict(k, m, (256, 1, 2), model="paper")) is None


def test_modules_stay_small() -> None:
    for path in Path(state.__file__).parent.glob("*.py"):
        assert len(path.read_text().splitlines()) <= 510, path.name
    assert re.search(r"^import panel", Path(state.__file__).read_text(), re.M) is None


def test_a_link_naming_an_unknown_machine_is_refused_by_name() -> None:
    errors = state.link_errors("?machine=A1000&block=256,1,2&model=latency")
    assert set(errors) == {"machine"}
    assert "'A1000'" in errors["machine"] and "A100" in errors["machine"]
    assert "MI250X-GCD" in errors["machine"]  # every shipped machine is listed
    assert state.link_errors("machine=H100&stencil=star3d&mode=hand") == {}
    assert set(state.link_errors("stencil=nope&model=roofline&mode=x")) == {
        "stencil", "model", "mode"}
    assert state.link_errors(f"machine={state.UPLOADED}") == {}


def test_the_summary_shows_the_registers_and_their_source() -> None:
    out = state.evaluate(Form())
    assert out.prediction is not None
    text = views.summary_html(out.prediction)
    assert f"{out.prediction.registers} registers per thread" in text
    assert f"({out.prediction.registers_source})" in text


def test_an_amd_machine_file_with_wavefronts_of_64_can_be_uploaded():
    """A file `warpspeed machines new --like MI100` writes (wave64) uploads."""
    from pathlib import Path

    import warpspeed as ws
    from warpspeed.web.machines import machine_from_toml

    text = (Path(ws.__file__).parent / "machines" / "MI50.toml").read_text()
    m = machine_from_toml(text, "MI50.toml")
    assert m.warp_size == 64 and m.vendor == "AMD" and m.grounding == "datasheet"
