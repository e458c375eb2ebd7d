"""A timing model is one object in ``timing/`` plus its registration
(``warpspeed/timing/base.py``, MODEL.md Conventions, §8, §11): a throwaway
model, defined here and registered for one test, is predicted, ranked with
top-k pruning, advised and explained, from the library and the command line,
with no change outside ``timing/``. And no module outside ``timing/`` tests
a model's name."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import warpspeed as ws
from warpspeed import cli
from warpspeed.input.kernel import Kernel
from warpspeed.machine import Machine
from warpspeed.reports.advice import advise, explanation_lines
from warpspeed.timing import DEFAULT_MODEL, MODELS, Hint, Reading, Timing, TimingResult
from warpspeed.timing.paper import limits, roofline
from warpspeed.volumes.launch import Launch
from warpspeed.volumes.levels import AccessTraits, Volumes
from warpspeed.volumes.waves import WaveVolumes

PACKAGE = Path(ws.__file__).resolve().parent
A100 = ws.load_machine("A100")


@dataclass(frozen=True)
class Damped(Timing):
    """The paper's roofline at a fixed share of its smallest limit: below
    every limit, as the top-k pruning requires of a model."""

    share: float = 0.8

    def time(self, kernel: Kernel, machine: Machine, launch: Launch, l1_cycles: float,
             volumes: Volumes, traits: AccessTraits, wave: WaveVolumes) -> TimingResult:
        lim = limits(kernel, machine, l1_cycles, volumes)
        glups, limiter = roofline(lim)
        return TimingResult(self.share * glups, limiter, lim, {"share": self.share})

    def peak_dram_bandwidth(self, machine: Machine) -> float:
        return machine.dram_bandwidth

    def notes(self, kernel: Kernel, machine: Machine) -> tuple[str, ...]:
        share = f"{100 * self.share:.0f} %"
        return (f"the damped model assumes {share} of the roofline on {machine.name}",)

    def hints(self, r: Reading) -> tuple[Hint, ...]:
        share = f"{100 * r.terms['share']:.0f} %"
        return (Hint("damped", r.limiter, f"{r.sm} work runs at {share} of the {r.limiter} limit"),)

    def occupancy_note(self, terms: Mapping[str, float]) -> str:
        return ". The damped model ignores occupancy"

    def explanation(self, r: Reading) -> tuple[str, ...]:
        return (f"damped: x{r.terms['share']:.2f} of the roofline",)


DAMPED = Damped("damped", "paper", "a throwaway model: the roofline at 80 %")


@pytest.fixture
def damped(monkeypatch: pytest.MonkeyPatch) -> Damped:
    """The throwaway model, registered for one test."""
    monkeypatch.setitem(MODELS, DAMPED.name, DAMPED)
    return DAMPED


def star(radius: int = 4, shape: tuple[int, int, int] = (640, 512, 512)) -> Kernel:
    from stencils import star3d_by_hand

    return star3d_by_hand.kernel(radius=radius, shape=shape)


def test_a_registered_model_is_predicted_with_its_time_and_notes(damped: Damped) -> None:
    k = star()
    p = ws.predict(k, A100, (256, 1, 2), model="damped")
    paper = ws.predict(k, A100, (256, 1, 2), model="paper")  # the same switches and space
    assert p.model == "damped" and p.terms == {"share": 0.8}
    assert p.glups == 0.8 * paper.glups and p.limits == paper.limits
    assert p.volumes == paper.volumes and p.limiter == paper.limiter
    assert p.notes == ("the damped model assumes 80 % of the roofline on A100",)
    assert p.evidence.rows == 0  # no recorded error band for a model never validated


def test_a_registered_model_is_ranked_and_its_bound_prunes_the_top_k(damped: Damped) -> None:
    k = star()
    full = ws.rank(k, A100, jobs=1, model="damped")
    top = ws.rank(k, A100, top=3, jobs=1, model="damped")
    assert top.model == "damped" and top.skipped > 0  # the model's bound pruned
    assert [(p.block, p.fold, p.glups) for p in top.predictions] == [
        (p.block, p.fold, p.glups) for p in full.predictions[:3]]


def test_a_registered_model_is_advised_and_explained(damped: Damped) -> None:
    k = star(radius=1, shape=(256, 256, 256))
    k = Kernel(loads=k.loads, stores=k.stores, domain=k.domain, registers=128,
               name=k.name)  # occupancy limited by registers
    p = ws.predict(k, A100, (128, 1, 1), model="damped")
    a = advise(p, A100, k)
    kinds = {h.kind: h.message for h in a.hints}
    assert kinds["damped"] == f"SM work runs at 80 % of the {p.limiter} limit"
    assert kinds["occupancy"].endswith(". The damped model ignores occupancy")
    assert "was not validated" in kinds["expected_accuracy"]
    lines = explanation_lines(p, a)
    assert lines[:2] == ["binding limiter: dram (damped model)",
                         "damped: x0.80 of the roofline"]
    assert lines[-1] == "note: the damped model assumes 80 % of the roofline on A100"


def test_the_command_line_offers_a_registered_model(damped: Damped,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["models"]) == 0
    assert "damped: a throwaway model: the roofline at 80 %" in capsys.readouterr().out
    assert cli.main(["explain", "star3d_by_hand", "--machine", "A100", "--block", "256,1,2",
                     "--model", "damped"]) == 0
    out = capsys.readouterr().out
    assert "(damped model)" in out and "damped: x0.80 of the roofline" in out


def test_the_throwaway_model_is_gone_after_its_test() -> None:
    assert "damped" not in MODELS and DEFAULT_MODEL in MODELS


# ---------------------------------------------------------------------------
# No model-name test outside timing/


def model_name_tests(source: str) -> list[str]:
    """Comparisons in ``source`` that test a timing model's name: against a
    registered name or ``DEFAULT_MODEL`` (a look-up in ``MODELS`` is none)."""
    names = set(MODELS)

    def names_a_model(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(names_a_model(e) for e in node.elts)
        if isinstance(node, ast.Name):
            return node.id == "DEFAULT_MODEL"
        return isinstance(node, ast.Attribute) and node.attr == "DEFAULT_MODEL"

    return [ast.unparse(n) for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Compare) and any(map(names_a_model, [n.left, *n.comparators]))]


def test_the_scan_finds_a_model_name_test() -> None:
    assert model_name_tests('if p.model == "paper":\n    pass') == ["p.model == 'paper'"]
    assert model_name_tests("x = name in ('latency', 'paper')") == [
        "name in ('latency', 'paper')"]
    assert model_name_tests("ok = t.name == DEFAULT_MODEL") == ["t.name == DEFAULT_MODEL"]
    assert model_name_tests('if address == "linear":\n    pass') == []  # a sector space
    assert model_name_tests("if form.model not in MODELS:\n    pass") == []  # the registry


@pytest.mark.parametrize("path", sorted(
    str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if p.parts[-2] != "timing"))
def test_no_model_name_test_outside_timing(path: str) -> None:
    found = model_name_tests((PACKAGE / path).read_text())
    assert not found, (f"{path} tests a timing model's name: {found}; ask the model object "
                       "(warpspeed/timing/base.py) instead")
