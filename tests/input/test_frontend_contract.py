"""The front-end contract (warpspeed.input.stencil_spec.StencilModule): a
throwaway front end that turns a dict of accesses into kernels, touching no
code of the package, is read once per command and ranked alike through the
command line and through the pystencils hook's ranking
(warpspeed.pystencils.rank, which takes kernels by fold)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from warpspeed.cli import main
from warpspeed.input.stencil_spec import StencilModule, UsageError, load_stencil, stencil

#: A minimal front end: offsets (dx, dy, dz) of each field, turned into one
#: ws.Kernel per fold. Each time the file is executed it appends to the file
#: that FRONT_END_LOG names, so the test counts how often a command reads it.
FRONT_END = '''
import itertools
import os

import warpspeed as ws

ACCESSES = {"loads": {"u": [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0),
                            (0, 0, 1), (0, 0, -1)]},
            "stores": {"v": [(0, 0, 0)]}}
FOLDS = ((1, 1, 1), (1, 2, 1))

with open(os.environ["FRONT_END_LOG"], "a") as log:
    log.write("read\\n")


def kernel(n: int = 64, fold: tuple[int, int, int] = (1, 1, 1)) -> ws.Kernel:
    fields = {name: ws.Field(name, shape=(n + 2, n + 2, n + 2))
              for side in ACCESSES.values() for name in side}
    per_thread = {"loads": [], "stores": []}
    for i, j, k in itertools.product(*(range(f) for f in fold)):
        at = (fold[0] * ws.tidx + i + 1, fold[1] * ws.tidy + j + 1, fold[2] * ws.tidz + k + 1)
        for side, by_field in ACCESSES.items():
            for name, offsets in by_field.items():
                per_thread[side] += [fields[name][tuple(c + d for c, d in zip(at, o))]
                                     for o in offsets]
    return ws.Kernel(loads=per_thread["loads"], stores=per_thread["stores"],
                     domain=tuple(n // f for f in fold), fold=fold, name="dict_front_end")
'''


@pytest.fixture
def front_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    path, log = tmp_path / "dict_front_end.py", tmp_path / "reads.log"
    path.write_text(FRONT_END)
    log.write_text("")
    monkeypatch.setenv("FRONT_END_LOG", str(log))
    return path, log


def test_a_front_end_file_meets_the_contract(front_end: tuple[Path, Path]) -> None:
    path, _ = front_end
    assert isinstance(load_stencil(str(path)), StencilModule)
    st = stencil(str(path))
    assert (st.folds, st.takes_fold, st.takes_target, st.generate) == (
        ((1, 1, 1), (1, 2, 1)), True, False, None)
    # two 7-point stars one row apart: each one's centre is the other's y-neighbour
    assert len(st.kernel(n=32, fold=(1, 2, 1)).loads) == 2 * 7 - 2


def test_a_file_without_kernel_breaks_the_contract_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nothing.py"
    path.write_text("X = 1\n")
    with pytest.raises(UsageError, match="defines no function kernel"):
        stencil(str(path))


def test_the_cli_and_the_hooks_ranking_agree_and_the_file_is_read_once(
        front_end: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    import warpspeed.pystencils as wps

    path, log = front_end
    assert main(["rank", str(path), "--machine", "A100", "--threads", "256", "--json",
                 "--jobs", "1"]) == 0
    by_cli = json.loads(capsys.readouterr().out)
    assert log.read_text().splitlines() == ["read"]  # one command, one read
    st = stencil(str(path))
    by_hook = wps.rank({f: st.kernel(fold=f) for f in st.folds}, "A100", threads=256, jobs=1)
    assert len(by_cli) == len(by_hook) > 2
    assert [(tuple(d["block"]), tuple(d["fold"]), d["glups"]) for d in by_cli] == [
        (p.block, p.fold, p.glups) for p in by_hook]
    assert {tuple(d["fold"]) for d in by_cli} == {(1, 1, 1), (1, 2, 1)}
