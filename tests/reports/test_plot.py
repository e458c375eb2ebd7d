"""Figures of warpspeed.reports.plot: colours, bar counts, the volume breakdown."""

from __future__ import annotations

import math
import subprocess
import sys
from types import SimpleNamespace

import pytest

pytest.importorskip("matplotlib")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from matplotlib.colors import to_rgb  # noqa: E402

import warpspeed as ws  # noqa: E402
from stencils import star3d_by_hand  # noqa: E402
from tests.slow import slow  # noqa: E402
from warpspeed.reports import plot  # noqa: E402

BLOCKS = [(256, 2, 2), (32, 2, 16), (1, 1024, 1), (1024, 1, 1), (8, 8, 16)]


@pytest.fixture(scope="module")
def preds() -> list[ws.Prediction]:
    k = star3d_by_hand.kernel(shape=(256, 128, 128))
    out = [ws.predict(k, "A100", b) for b in BLOCKS]
    kf = star3d_by_hand.kernel(shape=(256, 128, 128), fold=(1, 2, 1))
    out.append(ws.predict(kf, "V100", (64, 2, 8)))
    return out


def close(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(math.isclose(x, y, abs_tol=1e-9) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize(
    ("block", "rgb"),
    [
        ((256, 1, 1), (1.0, 0.0, 0.0)),
        ((1, 256, 1), (0.0, 1.0, 0.0)),
        ((1, 1, 64), (0.0, 0.0, 1.0)),
        ((1, 1, 1), (0.0, 0.0, 0.0)),
        ((16, 16, 8), (0.5, 0.5, 0.5)),
        ((1024, 1, 1), (1.0, 0.0, 0.0)),  # clipped
        ((32, 2, 16), (5 / 8, 1 / 8, 4 / 6)),
    ],
)
def test_block_color(block: tuple[int, int, int], rgb: tuple[float, float, float]) -> None:
    assert close(plot.block_color(block), rgb)


def test_block_color_rejects_zero() -> None:
    with pytest.raises(ValueError):
        plot.block_color((0, 1, 1))


def test_config_label(preds: list[ws.Prediction]) -> None:
    assert plot.config_label(preds[0]) == "256x2x2"
    assert plot.config_label(preds[-1]) == "64x2x8 f121"


def test_ranking_bars(preds: list[ws.Prediction]) -> None:
    fig = plot.ranking_bars(preds, title="t")
    (ax,) = fig.axes
    bars = ax.patches
    assert len(bars) == len(preds)
    for bar, p in zip(bars, preds):
        assert close(to_rgb(bar.get_facecolor()), plot.block_color(p.block))
        assert bar.get_hatch() in (plot.LIMITER_HATCH[p.limiter], None)
        assert math.isclose(bar.get_height(), p.glups)
    assert [t.get_text() for t in ax.get_xticklabels()] == [plot.config_label(p) for p in preds]
    legend = ax.get_legend()
    names = {t.get_text() for t in legend.get_texts()}
    assert names == {f"{plot.LIMITER_NAME[p.limiter]} bound" for p in preds}


def test_ranking_object_is_duck_typed(preds: list[ws.Prediction]) -> None:
    ranking = SimpleNamespace(predictions=tuple(preds[:3]))
    assert len(plot.ranking_bars(ranking).axes[0].patches) == 3
    assert plot.predictions_of(preds[0]) == (preds[0],)
    with pytest.raises(TypeError):
        plot.predictions_of([1, 2])
    with pytest.raises(ValueError):
        plot.predictions_of([])


@pytest.mark.parametrize("mode", ["v3", "v4"])
def test_breakdown_parts_sum_to_volume(preds: list[ws.Prediction], mode: str) -> None:
    for p in preds:
        bd = plot.volume_breakdown(p, mode)  # type: ignore[arg-type]
        v = p.volumes
        assert set(bd) == set(plot.LEVELS)
        for level in bd.values():
            assert math.isclose(level.transferred, level.volume, rel_tol=1e-9, abs_tol=1e-9)
        assert math.isclose(bd["l2_load"].volume, v.l2_load)
        assert math.isclose(bd["l2_load"].transferred + bd["l2_load"].saved, v.l1_load)
        assert math.isclose(bd["dram_store"].volume, v.dram_store)
        want = v.dram_load if mode == "v3" else v.dram_load_v4
        assert math.isclose(bd["dram_load"].volume, want)
        parts = {q.label: q.value for q in bd["dram_load"].parts}
        # compulsory + lost overlaps = memLoadV2; + hits = memLoadV1.
        v2 = parts["compulsory"] + parts["x/y reuse lost"] + parts["z reuse lost"]
        assert math.isclose(v2, v.dram_load_v2, rel_tol=1e-9, abs_tol=1e-9)
        v1 = v2 + parts["x/y reuse hits"] + parts["z reuse hits"]
        assert math.isclose(v1, v.dram_load_v1, rel_tol=1e-9)
        assert all(q.value >= -1e-12 for q in bd["dram_load"].parts)
        # the default model's L1 re-reads are their own part; the paper has none
        assert parts["L1 re-reads missing the L2"] == v.dram_load_rereads
        assert p.model == "latency" or v.dram_load_rereads == 0.0


def test_breakdown_rejects_unknown_mode(preds: list[ws.Prediction]) -> None:
    with pytest.raises(ValueError):
        plot.volume_breakdown(preds[0], "v5")  # type: ignore[arg-type]


def test_breakdown_bars_stack_to_volume(preds: list[ws.Prediction]) -> None:
    levels = ("l2_load", "dram_load", "dram_store")
    fig = plot.breakdown_bars(preds, levels=levels)
    assert len(fig.axes) == len(levels)
    for ax, lv in zip(fig.axes, levels):
        solid: dict[int, float] = {}
        for cont in ax.containers:
            hit = cont.get_label() in ("L1 hits", "x/y reuse hits", "z reuse hits")
            assert len(cont.patches) == len(preds)
            for i, bar in enumerate(cont.patches):
                if not hit:
                    solid[i] = solid.get(i, 0.0) + bar.get_height()
        for i, p in enumerate(preds):
            want = plot.volume_breakdown(p)[lv].volume
            assert math.isclose(solid[i], want, rel_tol=1e-9, abs_tol=1e-9)
    with pytest.raises(ValueError):
        plot.breakdown_bars(preds, levels=("l3",))


def test_scatter(preds: list[ws.Prediction]) -> None:
    fig = plot.scatter(preds)
    (ax,) = fig.axes
    points = sum(len(c.get_offsets()) for c in ax.collections)
    assert points == len(preds)
    for c in ax.collections:
        for (x, y), fc in zip(c.get_offsets(), c.get_facecolors()):
            p = preds[int(round(x))]
            assert math.isclose(y, p.glups)
            assert close(tuple(fc[:3]), plot.block_color(p.block))
    fig = plot.scatter(preds, measured=[p.glups / 2 for p in preds])
    assert len(fig.axes[0].lines) == 1  # the diagonal
    with pytest.raises(ValueError):
        plot.scatter(preds, measured=[1.0])


def test_scatter_draws_a_launch_bound_prediction_with_its_own_marker() -> None:
    from stencils.star3d import kernel as star_ps

    tiny = ws.predict(star_ps(radius=1, shape=(4, 4, 4)), "A100", (64, 4, 1))
    assert tiny.limiter == "launch"
    (ax,) = plot.scatter([tiny]).axes
    assert sum(len(c.get_offsets()) for c in ax.collections) == 1
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["launch bound"]
    (ax,) = plot.limits_chart([tiny]).axes
    assert [t.get_text() for t in ax.texts] == ["launch"]


def test_limits_chart(preds: list[ws.Prediction]) -> None:
    fig = plot.limits_chart(preds)
    (ax,) = fig.axes
    assert len(ax.patches) == len(preds)
    assert [t.get_text() for t in ax.texts] == [plot.LIMITER_NAME[p.limiter] for p in preds]
    finite = sum(v is not None for p in preds for v in p.limits.values())
    assert sum(len(c.get_offsets()) for c in ax.collections) == finite


def test_sweep(preds: list[ws.Prediction]) -> None:
    series = {"a": preds[:2], "b": preds[2:4]}
    fig = plot.sweep([1, 2], series, xlabel="x", marks={"a": 1.5, "limit": 1.2})
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert len(lines) == 4  # two series, two marks
    y = lines[0].get_ydata()
    assert math.isclose(y[1], preds[1].volumes.dram_load + preds[1].volumes.dram_store)
    assert close(to_rgb(lines[0].get_color()), plot.block_color(preds[0].block))
    assert close(to_rgb(lines[2].get_color()), to_rgb(lines[0].get_color()))
    fig = plot.sweep([1, 2], series, quantity=lambda p: p.glups)
    assert math.isclose(fig.axes[0].get_lines()[1].get_ydata()[0], preds[2].glups)
    with pytest.raises(ValueError):
        plot.sweep([1], series)
    with pytest.raises(ValueError):
        plot.sweep([1, 2], series, quantity="nope")


def test_missing_matplotlib(monkeypatch: pytest.MonkeyPatch, preds: list[ws.Prediction]) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ModuleNotFoundError, match="warpspeed\\[plot\\]"):
        plot.ranking_bars(preds)


@slow
def test_no_pyplot_state() -> None:
    code = (
        "import sys, warpspeed as ws; from warpspeed.reports import plot\n"
        "from stencils import star3d_by_hand as s\n"
        "p = ws.predict(s.kernel(shape=(64, 64, 64)), 'A100', (64, 2, 2))\n"
        "for f in (plot.ranking_bars, plot.breakdown_bars, plot.limits_chart, plot.scatter):\n"
        "    f([p]).savefig(__import__('io').BytesIO(), format='png')\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
