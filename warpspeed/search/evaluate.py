"""Evaluating the ranking's equivalence classes (MODEL.md §8): block stages
and wave volumes in parallel, then the roofline of each class.

Without ``top`` every class is evaluated and the work is *pipelined*: the
block stages and the wave computations (which need the launch only, not
the block stage) are submitted together, and each class is finished as
soon as its stage and its wave are back, while the pool works on the rest.
With ``top`` the classes are evaluated in decreasing order of their upper
bound and the remaining waves are skipped once the bound falls below the
k-th best (:mod:`warpspeed.search.pruning`). Both give the same predictions
for the classes they evaluate; rankings are sorted by GLup/s (ties by the
robust rule of :mod:`warpspeed.search.ties`), then fold,
then block, so the order in which results arrive does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import cast

from ..errors import LaunchError
from ..input.addresses import kernel_forms
from ..input.expr import bind_all
from ..input.kernel import Kernel
from ..machine import Machine
from ..model import BlockStage, Prediction, block_stages, finish
from ..timing import MODELS
from ..volumes.capacity import CapacityFits
from ..volumes.footprint import Footprint
from ..volumes.launch import Launch
from ..volumes.waves import WaveVolumes, wave_volumes
from .design_space import Block, Fold
from .executor import Runner, Work, chunks
from .pruning import compulsory_bytes, dram_lower_bound, upper_bound, wave_key
from .ties import leaders_first, ranking_key


@dataclass(frozen=True)
class Config:
    """One point of the design space: a folding variant and a block size."""

    fold: Fold
    block: Block


@dataclass(frozen=True)
class Excluded:
    """A configuration left out of the ranking, and why."""

    fold: Fold
    block: Block
    reason: str


# Work items run in worker processes (module level: they must pickle)


@dataclass(frozen=True)
class _StageResult:
    launch: Launch
    l1_cycles: float
    footprint: Footprint
    l1_cycles_paper: float | None
    wave_key: object
    load_bytes: float
    store_bytes: float
    notes: tuple[str, ...] = ()


def _stage_chunk(
    kernel: Kernel, machine: Machine, blocks: list[Block], bounds: bool = True
) -> list[_StageResult | str]:
    """Block stages of ``blocks``; the wave keys and DRAM lower bounds only
    when pruning (``bounds``) needs them (else the caller keys the waves)."""
    out: list[_StageResult | str] = []
    for st in block_stages(kernel, machine, blocks):  # counted together (MODEL.md §4)
        if isinstance(st, LaunchError):
            out.append(str(st))
            continue
        out.append(_StageResult(
            launch=st.launch,
            l1_cycles=st.l1_cycles,
            footprint=st.footprint,
            l1_cycles_paper=st.l1_cycles_paper,
            wave_key=wave_key(kernel, st.launch, st.bound) if bounds else None,
            load_bytes=compulsory_bytes(kernel.loads, st.bound, st.launch.block, kernel.domain)
            if bounds else 0.0,
            store_bytes=compulsory_bytes(kernel.stores, st.bound, st.launch.block, kernel.domain)
            if bounds else 0.0,
            notes=st.notes,
        ))
    return out


def _wave_chunk(kernel: Kernel, launches: list[Launch], address: str
                ) -> list[WaveVolumes | Exception]:
    """Wave volumes of ``launches``; an error is returned in its place (the
    pipelined ranking computes waves of launches whose block stage may yet
    fail, and raises it only for a launch that is ranked)."""
    out: list[WaveVolumes | Exception] = []
    for la in launches:
        try:
            out.append(wave_volumes(kernel, la, bind_all([kernel_forms(kernel)], la.block),
                                    address=address))
        except Exception as exc:  # noqa: BLE001 - re-raised where the launch is ranked
            out.append(exc)
    return out


def _stage_results(results: Sequence[object]) -> Sequence[_StageResult | str]:
    """The results of a chunk of :func:`_stage_chunk` as the runner returns them
    (it runs chunks of both kinds, so it types them ``object``)."""
    return cast(Sequence[_StageResult | str], results)


def _wave_results(results: Sequence[object]) -> Sequence[WaveVolumes | Exception]:
    """The results of a chunk of :func:`_wave_chunk` (as :func:`_stage_results`)."""
    return cast(Sequence[WaveVolumes | Exception], results)


def _wave_work(todo: dict[object, tuple[Kernel, Launch]], workers: int, address: str
               ) -> tuple[list[Work], list[list[object]]]:
    """Chunks of wave computations for the distinct wave keys of ``todo``
    (about two per worker), and the keys of each chunk."""
    by_kernel: dict[int, list[object]] = {}
    kernels: dict[int, Kernel] = {}
    for wk, (k, _) in todo.items():
        by_kernel.setdefault(id(k), []).append(wk)
        kernels[id(k)] = k
    work: list[Work] = []
    owners: list[list[object]] = []
    for kid, wks in by_kernel.items():
        parts = max(1, round(workers * 2 * len(wks) / len(todo)))
        for chunk in chunks(wks, parts):
            work.append((_wave_chunk, (kernels[kid], [todo[w][1] for w in chunk], address),
                         len(chunk)))
            owners.append(chunk)
    return work, owners


def _wave_result(wv: WaveVolumes | Exception) -> WaveVolumes:
    if isinstance(wv, Exception):
        raise wv
    return wv


def _sort_key(p: Prediction, cfg: Config) -> tuple[object, ...]:
    return (*ranking_key(p), cfg.fold, cfg.block)


@dataclass(frozen=True)
class Evaluation:
    """What :func:`evaluate` found: the predictions with their
    configuration, best first (all, or the best ``top``), and its counts
    (:class:`warpspeed.search.rank.Ranking` documents them)."""

    predictions: tuple[tuple[Prediction, Config], ...]
    stages: int
    waves: int
    evaluated: int
    skipped: int


def evaluate(
    variants: list[tuple[Fold, Kernel]],
    m: Machine,
    curves: CapacityFits,
    classes: dict[object, list[tuple[Config, Launch]]],
    rep_variant: dict[object, tuple[int, Block]],
    excluded: list[Excluded],
    runner: Runner,
    top: int | None,
    model: str,
) -> Evaluation:
    """Predictions of one representative per class, copied to every member
    (module docstring); classes whose block stage fails are added to
    ``excluded`` with the reason, in the order of ``classes``."""
    keys = list(classes)
    runner.add_total(len(keys))
    by_variant: dict[int, list[object]] = {}
    for key in keys:
        by_variant.setdefault(rep_variant[key][0], []).append(key)
    work: list[Work] = []
    owners: list[list[object]] = []
    for vi, ks in by_variant.items():
        # about three chunks per worker over all variants: every chunk ships
        # its kernel to a worker, which costs more than a small chunk's work
        parts = max(1, round(runner.workers * 3 * len(ks) / len(keys)))
        for chunk in chunks(ks, parts):
            work.append((_stage_chunk, (variants[vi][1], m, [rep_variant[k][1] for k in chunk],
                                        top is not None), len(chunk)))
            owners.append(chunk)

    def copies(key: object, p: Prediction) -> list[tuple[Prediction, Config]]:
        return [(p if cfg.block == p.block else replace(
            p, block=cfg.block, occupancy_limited_by=launch.occupancy.limited_by), cfg)
            for cfg, launch in classes[key]]

    failed: dict[object, str] = {}
    if top is None:
        found, stages, waves = _pipelined(variants, m, curves, classes, rep_variant, runner,
                                          model, work, owners, failed, copies)
        evaluated, skipped = stages, 0
    else:
        stage_of: dict[object, tuple[BlockStage, _StageResult]] = {}
        for i, results in runner.gather(runner.start(work)):
            for key, res in zip(owners[i], _stage_results(results)):
                if isinstance(res, str):
                    failed[key] = res
                else:
                    stage_of[key] = (_stage(variants, m, rep_variant, key, res), res)
        found, waves, evaluated, skipped = _pruned(keys, stage_of, curves, runner, top, model,
                                                   copies)
        stages = len(stage_of)
    for key in keys:
        if key in failed:
            excluded.extend(Excluded(cfg.fold, cfg.block, failed[key]) for cfg, _ in classes[key])
    found.sort(key=lambda pc: _sort_key(*pc))
    found = leaders_first(found, lambda pc: pc[0])
    return Evaluation(tuple(found if top is None else found[:top]), stages, waves, evaluated,
                      skipped)


def _stage(variants: list[tuple[Fold, Kernel]], m: Machine,
           rep_variant: dict[object, tuple[int, Block]], key: object,
           res: _StageResult) -> BlockStage:
    # Workers send back the numbers only; finish() needs no bound forms.
    return BlockStage(variants[rep_variant[key][0]][1], m, res.launch, {}, res.l1_cycles,
                      res.footprint, res.l1_cycles_paper, res.notes)


Copies = Callable[[object, Prediction], list[tuple[Prediction, "Config"]]]


def _pipelined(
    variants: list[tuple[Fold, Kernel]], m: Machine, curves: CapacityFits,
    classes: dict[object, list[tuple[Config, Launch]]],
    rep_variant: dict[object, tuple[int, Block]], runner: Runner, model: str,
    work: list[Work], owners: list[list[object]], failed: dict[object, str], copies: Copies,
) -> tuple[list[tuple[Prediction, Config]], int, int]:
    """Every class: stages and waves submitted together, each class finished
    as soon as both are back (module docstring). Returns the predictions,
    the stages computed and the waves the ranked classes used."""
    started = runner.start(work)
    # The wave keys need the launch only: computed here while the pool runs
    # the block stages.
    wave_of: dict[object, object] = {}
    todo: dict[object, tuple[Kernel, Launch]] = {}
    for key in classes:
        kernel = variants[rep_variant[key][0]][1]
        launch = classes[key][0][1]
        wk = wave_key(kernel, launch)
        wave_of[key] = wk
        todo.setdefault(wk, (kernel, launch))
    runner.add_total(len(todo))
    wave_work, wave_owners = _wave_work(todo, runner.workers, MODELS[model].address)
    started += runner.start(wave_work)
    stages: dict[object, BlockStage] = {}
    waves: dict[object, WaveVolumes | Exception] = {}
    waiting: dict[object, list[object]] = {}
    found: list[tuple[Prediction, Config]] = []
    for i, results in runner.gather(started):
        if i < len(work):
            for key, res in zip(owners[i], _stage_results(results)):
                if isinstance(res, str):
                    failed[key] = res
                    continue
                stages[key] = _stage(variants, m, rep_variant, key, res)
                wk = wave_of[key]
                if wk in waves:
                    found += copies(key, finish(stages[key], _wave_result(waves[wk]), curves,
                                                model))
                else:
                    waiting.setdefault(wk, []).append(key)
        else:
            for wk, wv in zip(wave_owners[i - len(work)], _wave_results(results)):
                waves[wk] = wv
                for key in waiting.pop(wk, []):
                    found += copies(key, finish(stages[key], _wave_result(wv), curves, model))
    return found, len(stages), len({wave_of[k] for k in stages})


def _pruned(
    keys: list[object], stage_of: dict[object, tuple[BlockStage, _StageResult]],
    curves: CapacityFits, runner: Runner, top: int, model: str, copies: Copies,
) -> tuple[list[tuple[Prediction, Config]], int, int, int]:
    """The classes in decreasing order of their upper bound, in rounds,
    until the bound falls below the k-th best (module docstring). Returns
    the predictions, the waves computed, the classes evaluated and those
    skipped."""
    live = [k for k in keys if k in stage_of]

    def bound_of(key: object) -> float:
        stage, res = stage_of[key]
        lups = stage.kernel.lups_per_thread
        lb = dram_lower_bound(res.load_bytes, res.store_bytes, stage.footprint.l2_store,
                              curves, lups)
        return upper_bound(stage, lb, curves, model)

    bounds = {k: bound_of(k) for k in live}
    live.sort(key=lambda k: -bounds[k])
    waves: dict[object, WaveVolumes] = {}
    runner.add_total(len({stage_of[k][1].wave_key for k in live}))
    found: list[tuple[Prediction, Config]] = []
    evaluated = skipped = 0
    batch = max(top, 16 * runner.workers)
    pos = 0
    while pos < len(live):
        round_keys = live[pos:pos + batch]
        if len(found) >= top:
            kth = sorted((p.glups for p, _ in found), reverse=True)[top - 1]
            round_keys = [k for k in round_keys if bounds[k] >= kth]  # sorted: a prefix
            if not round_keys:
                skipped = len(live) - pos
                break
        pos += len(round_keys)
        todo: dict[object, tuple[Kernel, Launch]] = {}
        for key in round_keys:
            stage, res = stage_of[key]
            if res.wave_key not in waves:
                todo.setdefault(res.wave_key, (stage.kernel, stage.launch))
        _compute_waves(todo, waves, runner, MODELS[model].address)
        for key in round_keys:
            stage, res = stage_of[key]
            found += copies(key, finish(stage, waves[res.wave_key], curves, model))
            evaluated += 1
    runner.total = runner.done  # pruned waves will not run
    runner.add_total(0)
    return found, len(waves), evaluated, skipped


def _compute_waves(
    todo: dict[object, tuple[Kernel, Launch]], waves: dict[object, WaveVolumes], runner: Runner,
    address: str,
) -> None:
    """Wave volumes of the distinct wave keys in ``todo``, in parallel."""
    if not todo:
        return
    work, owners = _wave_work(todo, runner.workers, address)
    for i, results in runner.gather(runner.start(work)):
        for wk, wv in zip(owners[i], _wave_results(results)):
            waves[wk] = _wave_result(wv)
