"""The Panel page's callbacks without a browser (warpspeed.web.app.Page) and
the ``warpspeed serve`` command without Panel."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

import warpspeed as ws
from tests.ranking_order import is_best_first
from tests.slow import slow
from warpspeed import cli
from warpspeed.web import state


def test_serve_without_panel_exits_2(monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "panel", None)  # import panel fails
    assert cli.main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "pip install 'warpspeed[web]'" in err


def test_serve_rejects_bad_ports(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--port", "70000"]) == 2
    assert "--port must be 0..65535" in capsys.readouterr().err
    assert cli.main(["serve", "--port", "http"]) == 2


@pytest.fixture
def page() -> Iterator[object]:
    # imported here, not at collection: Panel takes a second to import
    pytest.importorskip("panel", reason="the web extra is not installed")
    from warpspeed.web.app import Page, stop_worker

    before = set(threading.enumerate())
    p = Page()
    p.layout()
    yield p
    stop_worker()  # no thread of the page outlives the test
    left = set(threading.enumerate()) - before
    assert not left, left


def run(coro: object) -> None:
    asyncio.run(coro)  # type: ignore[arg-type]


def star7() -> ws.Kernel:
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    src = ws.Field("src", shape=(514, 514, 258))
    dst = ws.Field("dst", shape=(514, 514, 258))
    c = (x + 1, y + 1, z + 1)
    loads = [src[c]] + [src[tuple(c[a] + s if a == d else c[a] for a in range(3))]
                        for d in range(3) for s in (-1, 1)]
    return ws.Kernel(loads=loads, stores=[dst[c]], domain=(512, 512, 256), fp_instructions=7)


def test_page_predicts_the_form(page: object) -> None:
    p = page  # type: ignore[assignment]
    assert p.form() == state.Form()
    p.w["mode"].value = "hand"
    p.w["block"].value = "128,2,2"
    run(p.refresh())
    expected = ws.predict(star7(), "A100", (128, 2, 2))
    assert f'data-value="{expected.glups!r}"' in p.summary.object
    assert f'data-value="{expected.volumes.dram_load!r}"' in p.volumes.object
    assert "binding limiter: dram" in p.explain.object
    assert len(p.charts.objects) == 2
    assert not any(e.visible for e in p.err.values())
    assert p.sections["hand"].visible and not p.sections["stencil"].visible


@slow
def test_page_shows_errors_next_to_fields(page: object) -> None:
    p = page  # type: ignore[assignment]
    p.w["mode"].value = "hand"
    p.w["loads"].value = "__import__('os').system('id')"
    p.w["block"].value = "2048,1,1"
    run(p.refresh())
    assert p.err["loads"].visible and "unexpected character" in p.err["loads"].object
    assert "no prediction" in p.summary.object and p.volumes.object == ""
    p.w["loads"].value = "src[tidx, tidy, tidz]"
    run(p.refresh())
    assert not p.err["loads"].visible
    assert p.err["block"].visible and "at most 1024" in p.err["block"].object


@slow
def test_page_ranks_and_a_click_shows_the_row(page: object) -> None:
    p = page  # type: ignore[assignment]
    p.w["params"].value = "radius=1 shape=128,128,128"
    p.w["threads"].value = "256"
    run(p.rank())
    df = p.table.value
    assert p.table.visible and len(df) > 10 and "configurations ranked" in p.rank_status.object
    assert is_best_first(list(df["GLup/s"]))  # the leaders within 1 % first (MODEL.md §8)
    p.tabs.active = 2
    p._row_clicked(SimpleNamespace(row=3))
    assert p.w["block"].value == df.iloc[3]["block"] and p.w["fold"].value == df.iloc[3]["fold"]
    assert p.tabs.active == 0
    p.w["threads"].value = "512,1024"
    p.w["all_shapes"].value = True
    run(p.rank())
    assert p.err["threads"].visible and "at most 200" in p.err["threads"].object


def test_page_draws_the_layer_conditions(page: object) -> None:
    p = page  # type: ignore[assignment]
    p.w["params"].value = "radius=1 shape=256,256,128"
    run(p.draw_layer_conditions())
    assert p.lc_plot.visible and p.lc_plot.object is not None
    assert "predictions in" in p.lc_status.object


@slow
def test_page_upload_and_stencil_switch(page: object) -> None:
    from warpspeed.machine import machine_files

    p = page  # type: ignore[assignment]
    p.upload.filename = "mine.toml"
    p.upload.value = machine_files()["v100"].read_bytes()
    assert p.w["machine"].value == state.UPLOADED
    run(p.refresh())
    assert "on V100" in p.summary.object
    p.upload.filename = "bad.toml"
    p.upload.value = b"name = [oops"
    run(p.refresh())
    assert "bad.toml is not valid TOML" in p.err["machine_file"].object
    p.w["params"].value = "radius=2 shape=64,64,64"
    p.w["stencil"].value = "copy3d"  # takes no radius: only shape is kept
    assert p.w["params"].value == "shape=64,64,64"
