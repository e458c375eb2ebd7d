"""Built-in regression kernels: both models on the paper's stencils, a
D3Q19 lattice Boltzmann kernel, 2D boxes, a 7-point star and tiny domains,
side by side (MODEL.md §11).

The default model may depart from the paper's roofline only by what its
terms explain. For grids of many waves the ratio default / paper lies in
:data:`BAND`:

* at most 1.2: the calibrated DRAM bandwidth of the load/store mix is up to
  13 % above the paper's constant (V100 read 895 against 790 GB/s) and the
  linear sector count saves a few per cent of the paper's sector space;
* at least 0.5: overlap of SM work and memory costs at most ``2^(1/p)``
  (1.81 for two sides of equal time at the fitted p = 1.17), the calibrated
  bandwidth is at most 13 % below the paper's constant, the rest is left
  for Little's law at full occupancy.

Tiny grids are bounded by the launch instead: no kernel runs faster than
one launch overhead, and the default model charges one launch plus at most
a block's latency chain, so it comes within 1.5x of that bound.
``tests/validation/test_regression_kernels.py`` holds both bounds;
``warpspeed validate --v100`` prints the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..input.kernel import Kernel

#: The band of default / paper GLup/s for grids of ten waves or more.
BAND = (0.5, 1.2)


@dataclass(frozen=True)
class Case:
    """A regression kernel: how to build it, where and how it is launched."""

    name: str
    make: Callable[[], Kernel]
    machine: str
    block: tuple[int, int, int]


def _star_r4(fold: tuple[int, int, int] = (1, 1, 1)) -> Kernel:
    from stencils import star3d_by_hand

    return star3d_by_hand.kernel(radius=4, shape=(640, 512, 512), fold=fold)


def _star(shape: tuple[int, int, int]) -> Kernel:
    from stencils import star3d

    return star3d.kernel(radius=1, shape=shape)


def _lbm(precision: int) -> Kernel:
    from stencils import lbm_d3q19

    return lbm_d3q19.kernel(precision=precision)


def _box(radius: int, n: int) -> Kernel:
    from .reference import box2d

    return box2d(radius, n)


#: Kernels whose grids run many waves: the band applies.
CASES: tuple[Case, ...] = (
    Case("paper star r4, A100", _star_r4, "A100", (256, 1, 2)),
    Case("paper star r4 2z, A100", lambda: _star_r4((1, 1, 2)), "A100", (256, 1, 2)),
    Case("paper star r4, V100", _star_r4, "V100", (32, 1, 32)),
    Case("7-point star, A100", lambda: _star((512, 512, 512)), "A100", (256, 2, 1)),
    Case("box2d r7, V100", lambda: _box(7, 4000), "V100", (32, 8, 1)),
    Case("box2d r1, V100", lambda: _box(1, 8000), "V100", (128, 4, 1)),
    Case("D3Q19 double, A100", lambda: _lbm(64), "A100", (64, 1, 1)),
    Case("D3Q19 float, V100", lambda: _lbm(32), "V100", (128, 1, 1)),
    Case("D3Q19 float, H100", lambda: _lbm(32), "H100", (64, 1, 1)),
)

#: Tiny grids: bounded by one launch.
TINY: tuple[Case, ...] = (
    Case("4^3 7-point star, A100", lambda: _star((4, 4, 4)), "A100", (64, 1, 1)),
    Case("8^3 7-point star, A100", lambda: _star((8, 8, 8)), "A100", (128, 2, 1)),
    Case("32^3 7-point star, A100", lambda: _star((32, 32, 32)), "A100", (128, 2, 1)),
)


@dataclass(frozen=True)
class Outcome:
    """Both models on one case."""

    name: str
    machine: str
    block: tuple[int, int, int]
    default_glups: float
    paper_glups: float
    waves: float
    launch_bound_glups: float

    @property
    def ratio(self) -> float:
        return self.default_glups / self.paper_glups


def run(case: Case) -> Outcome:
    """Predict one case with both models."""
    from ..model import load_machine, predict
    from ..timing.latency import require

    k = case.make()
    m = load_machine(case.machine)
    d = predict(k, m, case.block)
    p = predict(k, m, case.block, model="paper")
    bound = d.terms["updates"] / (1000.0 * float(require(m).launch_overhead_us))
    return Outcome(case.name, m.name, case.block, d.glups, p.glups, d.terms["waves"], bound)


def format_outcomes(outcomes: list[Outcome]) -> str:
    """The regression table as plain text (Markdown-compatible)."""
    head = ("kernel", "block", "default GLup/s", "paper GLup/s", "default/paper", "waves",
            "launch bound GLup/s")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for o in outcomes:
        lines.append(" | ".join((o.name, ",".join(map(str, o.block)), f"{o.default_glups:.3g}",
                                 f"{o.paper_glups:.3g}", f"{o.ratio:.2f}", f"{o.waves:.3g}",
                                 f"{o.launch_bound_glups:.3g}")))
    return "\n".join(lines)


__all__ = ["BAND", "CASES", "TINY", "Case", "Outcome", "format_outcomes", "run"]
