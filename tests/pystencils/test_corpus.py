"""The corpus of real pystencils / lbmpy CUDA kernels (``tests/corpus``)
against warpspeed's pystencils frontend (issue 11).

For every case: extraction either predicts, on A100 with the default model,
a DRAM volume (load + store per lattice update) within
``[LOWER, case.upper]`` times the case's independent hand count, or raises
the ``warpspeed.KernelError`` subclass the case names. And every kernel made
from assignments passes through the generation hook
``warpspeed.pystencils.create_kernel`` without an exception: it ranks at
least one configuration, or, for a refused case, lists the variant as
skipped with the refusal's class.

Each kernel is generated once per session (lbmpy's derivations dominate the
run time). Refusal classes are matched by name, so that this module imports
while the frontend's error hierarchy moves.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import warpspeed as ws
import warpspeed.pystencils as wps
from tests.corpus import CASES, LOWER, UPPER, Built, Case
from tests.corpus.evaluate import MACHINE, evaluate, options

#: Minutes for the whole corpus: .ci/run runs it under its main Python only.
pytestmark = pytest.mark.slow

#: The hook's design space in this test: every default folding, and a small
#: thread count to keep the run short (the benchmark ranks the full space).
HOOK_THREADS = 64
HOOK_FOLDS = ((1, 1, 1), (1, 2, 1), (1, 1, 2))

#: The classes the corpus must cover (issue 11).
CLASSES = {
    "finite differences",
    "staggered fluxes",
    "phase-field / Cahn-Hilliard",
    "advection-diffusion",
    "LBM stream-collide",
    "LBM in-place streaming",
    "LBM collide/stream only",
    "LBM macroscopic values",
    "LBM forcing",
    "Shan-Chen multiphase",
    "fluctuating LBM",
    "LBM boundaries",
    "periodicity copy",
    "strided / red-black",
    "reduction",
    "symbolic parameters",
    "grid-stride loops",
    "built-in periodicity",
}


def _ids(cases: tuple[Case, ...] | list[Case]) -> list[str]:
    return [c.name for c in cases]


@pytest.fixture(scope="session")
def corpus() -> Callable[[Case], Built]:
    """Build a case's kernel, once per session."""
    cache: dict[str, Built] = {}

    def build(case: Case) -> Built:
        if case.name not in cache:
            cache[case.name] = case.build()
        return cache[case.name]

    return build


def test_corpus_has_30_kernels_of_every_class_with_sound_metadata() -> None:
    assert len(CASES) >= 30
    assert {c.klass for c in CASES} == CLASSES
    for c in CASES:
        assert c.hand.total > 0, c.name
        assert c.upper >= UPPER, c.name
        if c.upper > UPPER or c.refusal is not None:
            assert c.reason, f"{c.name}: a wider band or a refusal needs its reason"


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_dram_volume_matches_the_hand_count_or_the_case_is_refused_by_name(
    case: Case, corpus: Callable[[Case], Built]
) -> None:
    outcome = evaluate(case, corpus(case))
    if not outcome.ok:
        pytest.fail(outcome.explain(), pytrace=False)
    if outcome.ratio is not None:
        assert LOWER <= outcome.ratio <= case.upper


HOOK_CASES = [c for c in CASES if c.hook]


@pytest.mark.parametrize("case", HOOK_CASES, ids=_ids(HOOK_CASES))
def test_generation_hook_accepts_the_case(case: Case, corpus: Callable[[Case], Built]) -> None:
    built = corpus(case)
    try:
        ranked = wps.create_kernel(
            built.assignments,
            built.config,
            machine=MACHINE,
            threads=HOOK_THREADS,
            folds=HOOK_FOLDS,
            options=options(case),
        )
    except ws.EmptyRankingError as exc:  # nothing ranked: every variant's reason
        kernel, ranking, skipped = None, [], exc.reasons
    else:
        kernel, ranking = ranked
        assert kernel.target.is_gpu() and ranking
        skipped = ranked.skipped
        _is_the_best_configuration(kernel, ranking[0], case)
    if case.refusal is None:
        if not ranking:
            pytest.fail(f"{case.name}: nothing ranked; skipped: {skipped}", pytrace=False)
    elif not any(case.refusal in str(entry) for entry in skipped):
        pytest.fail(
            f"{case.name}: the refused kernel must be skipped naming {case.refusal}; "
            f"ranked {len(ranking)}, skipped: {skipped}",
            pytrace=False,
        )


def _is_the_best_configuration(kernel, best: ws.Prediction, case: Case) -> None:
    """The hook's kernel is the best prediction's: read back with one of the
    variants' folds it has the best fold (points per thread), and a dynamic
    or manual launch configuration defaults to the best block."""
    opts = options(case)
    folds = []
    for fold in HOOK_FOLDS:
        try:
            folds.append(wps.extract(kernel, opts, fold=fold).kernel.fold)
        except ws.KernelError:
            continue
    assert best.fold in folds, (case.name, best.fold, folds)
    launch = kernel.get_launch_configuration()
    kind = type(launch).__name__
    if kind == "DynamicBlockSizeLaunchConfiguration":
        assert tuple(launch.default_block_size) == best.block
    elif kind == "ManualLaunchConfiguration":
        assert tuple(launch.block_size) == best.block
