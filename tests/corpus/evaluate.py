"""Run one corpus case through warpspeed's pystencils frontend and classify
the outcome (shared by ``tests/pystencils/test_corpus.py`` and
``tests/benchmarks/bench_corpus.py``).

Refusal classes are matched by name along the exception's MRO, and must be
``warpspeed.KernelError`` subclasses, so that this module does not import
them while the frontend's error hierarchy is being settled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import warpspeed as ws
import warpspeed.pystencils as wps

from ._base import LOWER, Built, Case

MACHINE = "A100"

#: Verdicts. ``believable``: predicted within the band; ``refused``: the
#: expected refusal; ``silent-implausible``: predicted outside the band
#: (or predicted where a refusal was expected); ``wrong-refusal``: refused
#: with another error class or where a prediction was expected; ``crash``:
#: an exception that is not a ``warpspeed.KernelError``.
BELIEVABLE = "believable"
REFUSED = "refused"
SILENT = "silent-implausible"
WRONG_REFUSAL = "wrong-refusal"
CRASH = "crash"


def refused_as(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is a ``warpspeed.KernelError`` of the class ``name``
    (or of a subclass of it)."""
    return isinstance(exc, ws.KernelError) and any(
        cls.__name__ == name for cls in type(exc).__mro__
    )


def describe(exc: BaseException) -> str:
    """``Type: message`` on one line."""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def options(case: Case) -> wps.ExtractOptions:
    """The front end's options of the case: the ``shape`` of symbolic-size
    cases and the case's further options (``params``, ``grid_points``,
    ``index_list``)."""
    given: dict[str, Any] = {k: (v() if callable(v) else v) for k, v in case.options}
    if case.shape is not None:
        given["shape"] = case.shape
    return wps.ExtractOptions(**given)


def extract(case: Case, built: Built) -> Any:
    """``warpspeed.pystencils.extract`` of the case's kernel."""
    return wps.extract(built.kernel, options(case))


def block_for(case: Case, extraction: Any) -> tuple[int, int, int]:
    """The block to predict with: the one the kernel's indexing scheme fixes
    (``blockwise4d``), else the case's."""
    kernel = extraction.kernel
    for fixed in (getattr(extraction, "block", None), getattr(kernel, "fixed_block", None)):
        if fixed is not None:
            return tuple(int(b) for b in fixed)  # type: ignore[return-value]
    return case.block


@dataclass(frozen=True)
class Outcome:
    """What warpspeed made of one case."""

    case: Case
    verdict: str
    dram_load: float | None = None
    dram_store: float | None = None
    error: str | None = None
    block: tuple[int, int, int] | None = None

    @property
    def dram(self) -> float | None:
        if self.dram_load is None or self.dram_store is None:
            return None
        return self.dram_load + self.dram_store

    @property
    def ratio(self) -> float | None:
        return None if self.dram is None else self.dram / self.case.hand.total

    @property
    def ok(self) -> bool:
        """The case passes: a prediction in the band, or the named refusal."""
        return self.verdict in (BELIEVABLE, REFUSED)

    def explain(self) -> str:
        c = self.case
        if self.dram is not None:
            band = f"[{LOWER}, {c.upper}]"
            return (
                f"{c.name}: DRAM {self.dram_load:.2f} + {self.dram_store:.2f} = "
                f"{self.dram:.2f} B/Lup at block {self.block}, hand count "
                f"{c.hand.total:g} B/Lup ({c.hand.how}): ratio {self.ratio:.3f}, band {band}"
                + (f"; expected the refusal {c.refusal} ({c.reason})" if c.refusal else "")
            )
        expected = f"expected {c.refusal}" if c.refusal else "expected a prediction"
        return f"{c.name}: {self.verdict}: {self.error} ({expected})"


def evaluate(case: Case, built: Built) -> Outcome:
    """Extract, predict on A100 with the default model, classify."""
    try:
        extraction = extract(case, built)
        block = block_for(case, extraction)
        p = ws.predict(extraction.kernel, MACHINE, block)
    except ws.KernelError as exc:
        if case.refusal is not None and refused_as(exc, case.refusal):
            return Outcome(case, REFUSED, error=describe(exc))
        return Outcome(case, WRONG_REFUSAL, error=describe(exc))
    except Exception as exc:  # every other exception is a crash of the frontend or model
        return Outcome(case, CRASH, error=describe(exc))
    load, store = float(p.volumes.dram_load), float(p.volumes.dram_store)
    ratio = (load + store) / case.hand.total
    good = case.refusal is None and LOWER <= ratio <= case.upper
    return Outcome(case, BELIEVABLE if good else SILENT, load, store, block=block)
