"""The generation hook's measured choice (MODEL.md §8, §9):
``create_kernel(..., measure=K)`` times the ranking's best ``K``
configurations on this machine's GPU, or replays them from a measurement CSV
(``replay=``), with :func:`warpspeed.measure.tune.tune`; the kernel returned
is then the measured best's.

On the GPU each fold's kernel is the one generated while ranking (generated
again where a worker made it), compiled with NVRTC through CuPy
(:func:`warpspeed.measure.program.program_for`: fields of fixed size only; a
fold whose kernel has symbolic sizes is refused with the reason). Without a
GPU the ranking stands and the result says why
(:func:`warpspeed.measure.tune.untimed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..measure.program import program_for
from ..measure.programs import Plan, plan_name
from ..measure.schema import MeasurementError, Triple
from ..measure.tune import GpuBackend, Replay, Tuned, gpu_missing, tune, untimed
from ..model import Prediction
from .fold import generate
from .layouts import ShapeSpec
from .variants import Variant


def _plans(ranking: Sequence[Prediction], k: int, made: Sequence[Variant],
           variant_of: Mapping[Triple, Triple], assignments: Any, config: Any,
           shape: ShapeSpec) -> tuple[dict[Triple, Plan], dict[Triple, str]]:
    """The plan of each fold among the best ``4 k`` configurations, and why
    a fold has none."""
    plans: dict[Triple, Plan] = {}
    missing: dict[Triple, str] = {}
    by_fold = {v.fold: v for v in made}
    for fold in dict.fromkeys(p.fold for p in ranking[: 4 * k]):
        v = by_fold[variant_of[fold]]
        if v.extraction is None:
            continue
        try:
            kf = v.kernel_function or generate(assignments, config, v.fold, shape=shape)
            program = program_for(kf, v.extraction.kernel)
        except MeasurementError as exc:
            missing[fold] = str(exc)
            continue
        blocks = tuple(p.block for p in ranking if p.fold == fold)
        name = plan_name(program.function, "create_kernel", "{}")
        plans[fold] = Plan(name, "create_kernel", "{}", v.extraction.kernel.name, fold,
                           v.extraction.kernel.domain, blocks, program)
    return plans, missing


def measured_choice(ranking: Sequence[Prediction], k: int, replay: str | Path | Replay | None,
                    made: Sequence[Variant], variant_of: Mapping[Triple, Triple],
                    assignments: Any, config: Any, shape: ShapeSpec) -> Tuned:
    """The ranking's best ``k`` timed (module docstring)."""
    if replay is not None:
        backend = replay if isinstance(replay, Replay) else Replay.from_csv(replay)
        return tune(ranking, backend, k)
    why = gpu_missing()
    if why:
        return untimed(ranking, why)
    plans, missing = _plans(ranking, k, made, variant_of, assignments, config, shape)
    return tune(ranking, GpuBackend(plans, missing=missing), k)


__all__ = ["measured_choice"]
