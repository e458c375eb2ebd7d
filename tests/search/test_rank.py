"""Ranking, pruning and parallel evaluation (MODEL.md §8) against exhaustive
evaluation with ``ws.predict`` as the independent truth."""

import dataclasses
import itertools
import math
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

import warpspeed as ws
from stencils import star3d_by_hand
from warpspeed.input.expr import bind_all
from warpspeed.model import block_stage
from warpspeed.search import pruning
from warpspeed.search.rank import (
    DEFAULT_FOLDS,
    block_shapes,
    canonical_block,
    compulsory_bytes,
    dram_lower_bound,
    rank,
    upper_bound,
    wave_key,
)
from warpspeed.search.ties import LEAD_SHARE, leaders_first, ranking_key
from warpspeed.volumes.waves import wave_volumes

SHAPE = (128, 64, 64)


def star(fold=(1, 1, 1), radius=1, shape=SHAPE, registers=None):
    k = star3d_by_hand.kernel(radius=radius, shape=shape, fold=fold)
    return k if registers is None else dataclasses.replace(k, registers=registers)


def same_numbers(p: ws.Prediction, q: ws.Prediction) -> bool:
    """Equal in every model quantity (``wave.enumerated`` is a diagnostic of
    how isl counted, not a model number)."""
    return dataclasses.replace(p, wave=dataclasses.replace(p.wave, enumerated=0)) == (
        dataclasses.replace(q, wave=dataclasses.replace(q.wave, enumerated=0))
    )


@pytest.fixture(scope="module", params=["A100", "V100"])
def exhaustive(request):
    return request.param, rank(lambda f: star(f), request.param, threads=[1024], jobs=2)


def test_power_of_two_space_is_every_1024_thread_shape_within_the_cuda_limits():
    truth = {
        (2**a, 2**b, 2**c)
        for a, b, c in itertools.product(range(11), repeat=3)
        if a + b + c == 10 and c <= 6
    }
    shapes = block_shapes(1024)
    assert set(shapes) == truth and len(shapes) == len(truth) == 56


def test_all_shapes_gives_every_factorisation():
    truth = {(x, y, 60 // (x * y)) for x in range(1, 61) for y in range(1, 61)
             if 60 % (x * y) == 0}
    assert set(block_shapes(60, all_shapes=True)) == truth


def test_a_thread_count_that_is_no_power_of_two_needs_all_shapes():
    with pytest.raises(ws.LaunchError, match="power of two"):
        block_shapes(96)


def test_blocks_at_least_twice_the_domain_are_trimmed_with_the_reason():
    r = rank(star(shape=(64, 64, 3)), "A100", threads=(1024,), jobs=1)
    blocks = {p.block for p in r.predictions}
    assert all(b[2] < 6 and b[0] < 128 and b[1] < 128 for b in blocks)
    trimmed = {e.block for e in r.excluded}
    assert (1024, 1, 1) in trimmed and (16, 1, 64) in trimmed and (16, 16, 4) not in trimmed
    assert all("twice the domain" in e.reason for e in r.excluded)
    assert len(blocks) + len(trimmed) == 56


def test_blocks_that_cannot_launch_are_excluded_not_ranked():
    # 255 registers: a warp needs 8192 registers, 32 warps need 4x the register file.
    r = rank(star(registers=255), "A100", threads=(1024, 256), jobs=1)
    assert {math.prod(p.block) for p in r.predictions} == {256}
    assert any("does not fit on an SM" in e.reason for e in r.excluded)


def test_every_ranked_prediction_equals_a_direct_prediction(exhaustive):
    machine, r = exhaustive
    assert r.configurations == len(r.predictions) == 3 * 56 - len(r.excluded)
    kernels = {f: star(f) for f in DEFAULT_FOLDS}
    for p in r.predictions[::7]:
        assert same_numbers(p, ws.predict(kernels[p.fold], machine, p.block))
    # best first; predictions equal to six digits in the robust tie order, the
    # leaders within 1 % of the best by their L2 headroom (MODEL.md §8)
    by_key = sorted(r.predictions, key=ranking_key)
    assert list(r.predictions) == leaders_first(by_key, lambda p: p)
    best = by_key[0].glups
    rest = [p.glups for p in r.predictions if p.glups < best * (1 - LEAD_SHARE)]
    assert all(a >= b * (1 - 1e-5) for a, b in zip(rest, rest[1:]))


def test_full_width_slabs_share_one_wave_computation(exhaustive):
    _, r = exhaustive
    assert r.waves < r.evaluated == r.stages == r.configurations


@pytest.mark.parametrize("k", [1, 8])
def test_pruned_top_k_equals_the_exhaustive_top_k(exhaustive, k):
    machine, full = exhaustive
    pruned = rank(lambda f: star(f), machine, threads=[1024], top=k, jobs=2)
    assert pruned.predictions == full.predictions[:k]
    assert pruned.evaluated + pruned.skipped == full.evaluated
    if k == 1:
        assert pruned.skipped > 0


def test_upper_bound_is_never_below_the_prediction_and_the_dram_bound_never_above():
    m = ws.load_machine("A100")
    curves = ws.load_fits(m.fits)
    for fold in DEFAULT_FOLDS:
        k = star(fold, radius=2)
        for block in block_shapes(1024)[::4]:
            stage = block_stage(k, m, block)
            p = ws.predict(k, m, block)
            acc = k.loads + k.stores
            bound = bind_all((a.forms for a in acc), block)
            lb = dram_lower_bound(
                compulsory_bytes(k.loads, bound, block, k.domain),
                compulsory_bytes(k.stores, bound, block, k.domain),
                stage.footprint.l2_store, curves, k.lups_per_thread,
            )
            assert 0 < lb <= p.volumes.dram_load + p.volumes.dram_store
            assert upper_bound(stage, lb, curves) >= p.glups


def test_folded_stores_to_distinct_rows_count_twice_in_the_bound():
    k = star((1, 2, 1))
    bound = bind_all((a.forms for a in k.stores), (32, 4, 2))
    # Two stores 2y and 2y+1 of doubles: 16 B per thread, 8 B per lattice update.
    assert compulsory_bytes(k.stores, bound, (32, 4, 2), k.domain) == 16


def test_compulsory_bytes_kept_per_access_tuple_equal_a_fresh_count_at_every_block():
    # the block-independent forms are counted once per access tuple; a copy
    # of the accesses (another tuple) is counted afresh from each block's forms
    for fold in DEFAULT_FOLDS:
        k = star(fold, radius=2)
        for block in block_shapes(256)[::2]:
            bound = bind_all((a.forms for a in k.loads + k.stores), block)
            for accesses in (k.loads, k.stores):
                kept = compulsory_bytes(accesses, bound, block, k.domain)
                fresh = pruning._bytes_of(
                    tuple((a.field, tuple(pruning.global_function(bound[f], block)
                                          for f in a.forms)) for a in accesses),
                    tuple(d for d in range(3) if k.domain[d] > 1),
                    tuple(n for n in k.domain if n > 1))
                assert kept == fresh > 0


def test_configurations_with_equal_wave_keys_have_equal_wave_volumes():
    m = ws.load_machine("V100")
    k = star((1, 1, 2), radius=2)
    seen = {}
    for block in block_shapes(512):
        stage = block_stage(k, m, block)
        w = dataclasses.replace(wave_volumes(k, stage.launch, stage.bound), enumerated=0)
        seen.setdefault(wave_key(k, stage.launch, stage.bound), []).append(w)
    assert len(seen) < len(block_shapes(512))
    for waves in seen.values():
        assert all(w == waves[0] for w in waves)


def test_blocks_beyond_a_flat_domain_in_z_are_one_class_with_identical_predictions():
    # D_z = 1: (32,1,1) and (32,1,2) differ only by idle trailing threads, and
    # both run 32 blocks per SM (the block limit), so their predictions agree.
    k = star(shape=(64, 32, 1))
    assert canonical_block((32, 1, 2), k.domain) == (32, 1, 1)
    r = rank(k, "A100", blocks=[(32, 1, 1), (32, 1, 2), (16, 2, 1)], jobs=1)
    assert r.stages == 2 and len(r.classes) == 1
    assert {c.block for c in r.classes[0]} == {(32, 1, 1), (32, 1, 2)}
    by_block = {p.block: p for p in r.predictions}
    for b in ((32, 1, 1), (32, 1, 2)):
        assert same_numbers(by_block[b], ws.predict(k, "A100", b))
    assert by_block[(32, 1, 2)].glups == by_block[(32, 1, 1)].glups


def test_folds_that_give_the_same_kernel_are_evaluated_once():
    k = star()
    r = rank({(1, 1, 1): k, (1, 2, 1): k}, "A100", blocks=[(64, 4, 4)], jobs=1)
    assert r.stages == 1 and len(r.predictions) == 2 and len(r.classes) == 1


def test_any_executor_gives_the_same_ranking_and_progress_reaches_the_total():
    calls = []
    kernels = {f: star(f) for f in DEFAULT_FOLDS[:2]}
    blocks = [(32, 4, 8), (64, 4, 4), (128, 2, 4), (16, 8, 8)]
    with ThreadPoolExecutor(2) as ex:
        threaded = rank(kernels, "A100", blocks=blocks, executor=ex,
                        progress=lambda d, t: calls.append((d, t)))
    inline = rank(kernels, "A100", blocks=blocks, jobs=1)
    assert threaded.predictions == inline.predictions
    assert calls[-1][0] == calls[-1][1] > 0
    assert all(d <= t for d, t in calls)


def test_a_dask_distributed_client_executor_gives_the_same_ranking():
    distributed = pytest.importorskip("distributed")
    blocks = [(32, 4, 8), (64, 4, 4), (8, 8, 16)]
    k = star()
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=None) as client:
        remote = rank(k, "A100", blocks=blocks, top=2, executor=client.get_executor())
    assert remote.predictions == rank(k, "A100", blocks=blocks, top=2, jobs=1).predictions


def test_bad_arguments_say_what_to_change():
    with pytest.raises(ws.LaunchError, match="top"):
        rank(star(), "A100", top=0)
    with pytest.raises(ws.LaunchError, match="at most 1024"):
        rank(star(), "A100", threads=(2048,))
    with pytest.raises(ws.LaunchError, match="factory"):
        rank(star(), "A100", folds=[(1, 2, 1)])
    with pytest.raises(ws.EmptyRankingError, match="no configuration"):
        rank(star(shape=(4, 4, 4)), "A100", threads=(1024,))


def test_default_threads_rank_every_count_that_launches_and_name_the_registers():
    # 255 registers: ceil(255 * 32 / 256) * 256 = 8192 per warp; 65536 // 8192 = 8 warps
    # = 256 threads per block at most (hand count); the default space is 64..1024
    heavy = star(shape=(64, 32, 32), registers=255)
    r = rank(heavy, "A100", jobs=1)
    counts = {math.prod(p.block) for p in r.predictions}
    assert counts == {64, 128, 256}
    assert {p.registers for p in r.predictions} == {255}
    assert {math.prod(e.block) for e in r.excluded if "registers" in e.reason} == {512, 1024}
    with pytest.raises(ws.EmptyRankingError) as info:
        rank(heavy, "A100", threads=[1024], jobs=1)
    assert "255 registers per thread (kernel)" in str(info.value)
    assert any("1024 threads with 255 registers" in r for r in info.value.reasons)


def test_threads_is_one_count_or_several_and_bad_counts_are_refused_by_name():
    k = star(shape=(64, 32, 32))
    # 256 = 2^8 threads: the power-of-two shapes (2^a, 2^b, 2^c), a + b + c = 8,
    # c <= 6 (45 - 3 = 42), none at least twice the domain's 64 x 32 x 32 (x >= 128:
    # 3 shapes, y >= 64: 6, z >= 64: 3; hand count 42 - 12 = 30)
    truth = {(2**a, 2**b, 2**(8 - a - b)) for a in range(9) for b in range(9 - a)
             if 8 - a - b <= 6 and 2**a < 128 and 2**b < 64 and 2**(8 - a - b) < 64}
    one = rank(k, "A100", threads=256, jobs=1)
    assert {p.block for p in one.predictions} == truth and len(truth) == 30
    assert one.predictions == rank(k, "A100", threads=[256], jobs=1).predictions
    import numpy as np
    both = rank(k, "A100", threads=(np.int64(128), 256), jobs=1)
    assert {math.prod(p.block) for p in both.predictions} == {128, 256}
    for bad, text in [(0, "threads=0: a block needs at least one thread"),
                      (-64, "threads=-64: a block needs at least one thread"),
                      ([256, 0], "threads=[256, 0]: a block needs at least one thread"),
                      (1.5, "threads=1.5: 1.5 is not a whole number of threads"),
                      ("256", "'256' is not a whole number of threads"),
                      (True, "True is not a whole number of threads"),
                      ([], "threads=[] names no thread count"),
                      (2048, "threads=2048: 2048 threads per block, but A100 allows at most "
                             "1024")]:
        with pytest.raises(ws.LaunchError, match=re.escape(text)) as info:
            rank(k, "A100", threads=bad, jobs=1)
        assert not isinstance(info.value, ws.EmptyRankingError)
        assert "threads=256" in str(info.value) or "at most 1024" in str(info.value)


def test_static_global_forms_equal_the_per_block_global_function():
    # the block-independent shortcut of global_accesses gives what binding
    # the form to each block and checking it gives (pruning module docstring)
    from warpspeed.search.pruning import global_function, static_global

    x, y, z = ws.tidx, ws.tidy, ws.tidz
    A = ws.Field("A", shape=(70, 40, 30))
    k = ws.Kernel(loads=[A[x + 1, y + 2, z], A[2 * x, y, z + 1], A[x, 0, z]],
                  stores=[A[x + 1, y + 1, z + 1]], domain=(32, 16, 16))
    forms = {f for acc in k.loads + k.stores for f in acc.forms}
    assert all(static_global(f) is not None for f in forms)
    for block in [(32, 1, 1), (8, 4, 2), (1, 16, 4)]:
        for f in forms:
            assert static_global(f) == global_function(f.bind(block), block)


def test_no_collection_pauses_the_collector_and_restores_its_state():
    import gc

    from warpspeed.search.executor import no_collection

    assert gc.isenabled()
    with pytest.raises(RuntimeError), no_collection():
        assert not gc.isenabled()
        raise RuntimeError("the collector comes back on errors too")
    assert gc.isenabled()
    gc.disable()
    try:
        with no_collection():
            pass
        assert not gc.isenabled()  # a caller's disabled collector stays disabled
    finally:
        gc.enable()


def _copy2d(fold: tuple[int, int, int]) -> ws.Kernel:
    """A 2-D copy (256 x 256 doubles) folded along x and y; a fold along z,
    an axis it does not have, is refused as the pystencils front end
    refuses it (``MissingAxisError``)."""
    if fold[2] != 1:
        raise ws.MissingAxisError(f"fold {fold} folds an axis that 2-dimensional fields do "
                                  "not have")
    a, b = ws.Field("a", shape=(256, 256)), ws.Field("b", shape=(256, 256))
    fx, fy = fold[0], fold[1]
    loads = [a[ws.tidx * fx + i, ws.tidy * fy + j] for i in range(fx) for j in range(fy)]
    stores = [b[ws.tidx * fx + i, ws.tidy * fy + j] for i in range(fx) for j in range(fy)]
    return ws.Kernel(loads=loads, stores=stores, domain=(256 // fx, 256 // fy), fold=fold,
                     name="copy2d")


def test_default_folds_leave_out_an_axis_the_kernel_does_not_have():
    r = ws.rank(_copy2d, "A100", threads=256, top=3)
    assert {p.fold for p in r.predictions} <= {(1, 1, 1), (1, 2, 1)}
    assert r.notes[0].startswith("fold (1, 1, 2) left out of the default folds")
    with pytest.raises(ws.MissingAxisError, match="2-dimensional"):
        ws.rank(_copy2d, "A100", threads=256, folds=[(1, 1, 1), (1, 1, 2)])


@pytest.mark.parametrize("folds, match", [
    ((1, 2, 1), r"folds is a list of folds \(x, y, z\) like \[\(1, 2, 1\)\], got \(1, 2, 1\)"),
    ([2], r"folds is a list of folds .* got \[2\]"),
    (3, r"folds is a list of folds .* got 3"),
    ([(1, 2)], r"each fold must be three integers \(x, y, z\), got \(1, 2\)"),
    ([(1, 0, 1)], r"each fold must be positive integers, got \(1, 0, 1\)"),
    ([(1.5, 1, 1)], r"each fold must be three integers"),
])
def test_folds_that_are_not_a_list_of_folds_are_refused_by_name(folds, match):
    """One fold given where ``rank`` asks for a list of them ended in
    ``TypeError: 'int' object is not iterable`` from the factory's call."""
    from stencils import star3d

    def factory(fold):
        return star3d.kernel(radius=1, shape=(64, 64, 64), fold=fold)

    with pytest.raises(ws.LaunchError, match=match):
        ws.rank(factory, "H200", threads=[256], folds=folds, jobs=1)


def test_a_ranking_is_the_sequence_of_its_predictions():
    """``r[0]``, ``len(r)`` and ``for p in r`` were TypeErrors; a user reads
    a ranking as the list it prints."""
    r = ws.rank(star3d_by_hand.kernel(radius=1, shape=(64, 64, 64)), "H200", threads=[256],
                jobs=1)
    assert r[0] is r.predictions[0] and r[-1] is r.predictions[-1]
    assert len(r) == len(r.predictions) > 1
    assert list(r) == list(r.predictions) and r[:2] == r.predictions[:2]
    from warpspeed.timing.base import LEAD_SHARE

    assert r[0].glups >= (1 - LEAD_SHARE) * max(p.glups for p in r)  # a leader, MODEL.md §8
