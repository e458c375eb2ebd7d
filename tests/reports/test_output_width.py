"""The command line's tables fit the terminal and name their units (issue
"no silent wrong answer": readable output), and the one DRAM figure a user
edits moves both models."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import warpspeed as ws
from stencils import copy3d
from tests.slow import fast_first, slow
from warpspeed.cli import main
from warpspeed.reports.tables import MACHINE_COLUMNS, PREDICTION_COLUMNS, Column, fitted_table
from warpspeed.timing import parameter

COMMANDS = {
    "predict": ["predict", "star3d", "--set", "radius=1", "--set", "shape=64,64,64",
                "--machine", "A100", "--block", "256,2,1"],
    "rank": ["rank", "star3d", "--set", "radius=1", "--set", "shape=64,64,64",
             "--machine", "A100", "--top", "3", "--jobs", "1", "--registers", "32"],
    "explain": ["explain", "star3d", "--set", "radius=1", "--set", "shape=64,64,64",
                "--machine", "A100", "--block", "256,2,1"],
    "machines": ["machines"],
}


@pytest.fixture
def cli(monkeypatch, capsys):
    """A command run in this process (``warpspeed.cli.main``) in a terminal
    of ``columns`` (``COLUMNS``, as a shell sets it): its standard output.
    tests/cli runs the commands in processes of their own."""
    def run(args: list[str], columns: int) -> str:
        monkeypatch.setenv("COLUMNS", str(columns))
        capsys.readouterr()
        code = main(args)
        out, err = capsys.readouterr()
        assert code == 0, err
        return out
    return run


@pytest.mark.parametrize("name, columns", fast_first(
    [(name, columns) for columns in (80, 60) for name in sorted(COMMANDS)], unpack=True))
def test_no_line_is_wider_than_the_terminal(cli, name: str, columns: int) -> None:
    out = cli(COMMANDS[name], columns)
    widest = max(out.splitlines(), key=len)
    assert len(widest) <= columns, widest


@pytest.mark.parametrize("name, columns", fast_first([("predict", PREDICTION_COLUMNS),
                                                      ("machines", MACHINE_COLUMNS)], unpack=True))
def test_a_wide_terminal_shows_every_column_with_its_unit(cli, name, columns) -> None:
    out = cli(COMMANDS[name], 400)
    assert "left out" not in out
    for c in columns:
        assert c.name in out and c.unit in out, c
    narrow = cli(COMMANDS[name], 80)
    assert "left out for the terminal width (80 columns)" in narrow


def test_fitted_table_leaves_out_the_least_important_columns_first() -> None:
    from rich.console import Console

    cols = (Column("keep"), Column("late", "u", 1), Column("early", "v", 9))
    rows = [["1", "2" * 20, "3" * 20]]

    def text(width: int) -> str:
        c = Console(width=200, record=True)
        c.print(fitted_table(cols, rows, width))
        return c.export_text()

    assert "early" in text(100) and "late" in text(100)
    assert "early" not in text(40).split("left out")[0] and "late" in text(40)
    assert "late" not in text(20).split("left out")[0] and "keep" in text(20)


def _with_dram(tmp_path: Path, value: float) -> ws.Machine:
    src = ws.load_machine("A100").path
    text = Path(src).read_text()
    old = "[dram_bandwidth]\nvalue = 1400\n"
    assert old in text
    out = tmp_path / "A100-slower.toml"
    out.write_text(text.replace(old, f"[dram_bandwidth]\nvalue = {value}\n"))
    return ws.load_machine(out)


@slow
def test_the_dram_figure_a_user_edits_moves_both_models(cli, tmp_path: Path) -> None:
    k = copy3d.kernel(shape=(512, 512, 256))
    base, slow = ws.load_machine("A100"), _with_dram(tmp_path, 1120)
    for model in ("paper", "latency"):
        p = ws.predict(k, base, (256, 2, 1), model=model)
        q = ws.predict(k, slow, (256, 2, 1), model=model)
        assert p.limiter == q.limiter == "dram"
        # a DRAM-bound copy: the GLup/s fall with the figure (the launch
        # overhead of the default model keeps them a little above 0.8)
        assert 0.79 < q.glups / p.glups < 0.82, (model, q.glups / p.glups)
    for key in ("dram_bw_read", "dram_bw_copy", "dram_bw_write"):
        assert math.isclose(parameter(slow, key), 0.8 * parameter(base, key))
    # the figure the default model uses is what `machines` shows
    rows = {r["name"]: r for r in json.loads(cli(["machines", "--json"], 200))}
    assert rows["A100"]["dram_bw_copy"] == parameter(base, "dram_bw_copy")
    copy, read = parameter(base, "dram_bw_copy"), parameter(base, "dram_bw_read")
    assert rows["A100"]["dram_default"] == f"{copy:.0f} / {read:.0f}"


def test_a_bad_stream_reference_is_refused_by_name(tmp_path: Path) -> None:
    text = Path(ws.load_machine("A100").path).read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("stream_reference = 1400", "stream_reference = -1"))
    with pytest.raises(ws.MachineError, match="stream_reference must be a positive"):
        ws.load_machine(bad)


def test_rankings_and_predictions_have_a_compact_repr() -> None:
    from stencils import star3d

    k = star3d.kernel(radius=1, shape=(64, 64, 64))
    r = ws.rank(k, "A100", threads=[256], jobs=1)
    text = repr(r)
    best = r.predictions[0]
    assert text.startswith(f"Ranking({k.name} on A100, latency model: ")
    assert f"1. block {best.block} fold {best.fold}: {best.glups:.2f} GLup/s" in text
    assert f"... {len(r.predictions) - 3} more" in text and len(text.splitlines()) == 5
    assert repr(best) == (f"Prediction({k.name} on A100, latency model: block {best.block}, "
                          f"fold {best.fold}, {best.glups:.2f} GLup/s, bound by {best.limiter})")
    assert max(len(line) for line in text.splitlines()) < 100


def test_the_hooks_result_has_a_compact_repr() -> None:
    import pystencils as ps

    import warpspeed.pystencils as wps

    src, dst = ps.fields("src, dst: double[2D]", layout="fzyx")
    ranked = wps.create_kernel([ps.Assignment(dst.center, src[1, 0] + src[-1, 0])],
                               ps.CreateKernelConfig(target=ps.Target.CUDA), machine="A100",
                               threads=[256], jobs=1,
                               options=wps.ExtractOptions(shape=(512, 512), registers="estimate"))
    text = repr(ranked)
    assert text.startswith("Ranked(") and "on A100" in text and "1. block" in text
    assert len(text.splitlines()) <= 5
