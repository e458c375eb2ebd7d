"""The block sample of the L1 and L2 estimators (MODEL.md §4, §5) against
enumerating every block of the grid."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import warpspeed as ws
from warpspeed.input.expr import bind_all
from warpspeed.volumes.footprint import block_footprint
from warpspeed.volumes.l1 import l1_cycles_per_warp_lup
from warpspeed.volumes.launch import make_launch
from warpspeed.volumes.sampling import INTERIOR, _periods, sample

#: Domains and blocks of the star kernels the counts are checked on.
DOMAINS = st.tuples(st.integers(8, 70), st.integers(1, 9), st.integers(1, 6))
BLOCKS = st.tuples(st.sampled_from([4, 8, 16, 32, 64]), st.sampled_from([1, 2, 4]),
                   st.sampled_from([1, 2]))


def star(domain, pitch, offset, radius):
    shape = (pitch, domain[1] + 2 * radius, domain[2] + 2 * radius)
    src = ws.Field("src", shape=shape, base_offset=offset)
    dst = ws.Field("dst", shape=shape, base_offset=offset)
    x, y, z = ws.tidx + radius, ws.tidy + radius, ws.tidz + radius
    loads = [src[x, y, z]] + [
        src[x + s, y, z] for s in range(-radius, radius + 1) if s
    ] + [src[x, y + s, z] for s in (-radius, radius)] + [src[x, y, z + s] for s in (-1, 1)]
    return ws.Kernel(loads=loads, stores=[dst[x, y, z]], domain=domain)


def both(kernel, block):
    launch = make_launch(kernel, ws.load_machine("A100"), block)
    acc = kernel.loads + kernel.stores
    bound = bind_all((a.forms for a in acc), launch.block)
    out = []
    for every in (False, True):
        s = sample(kernel, launch, acc, bound, every_block=every)
        fp = block_footprint(s, len(kernel.loads))
        out.append((l1_cycles_per_warp_lup(s), fp.l1_load, fp.l2_load_v1, fp.l2_store,
                    fp.alloc_per_block))
    return out, _periods(acc, bound)


@settings(max_examples=40, deadline=None)
@given(
    DOMAINS,
    BLOCKS,
    st.sampled_from([80, 96, 128, 136]),
    st.sampled_from([0, 8, 32, 96]),
    st.integers(1, 3),
)
def test_sample_equals_every_block_when_the_period_fits(domain, block, pitch, offset, radius):
    sampled, full = None, None
    (sampled, full), periods = both(star(domain, pitch, offset, radius), block)
    if all(p <= c for p, c in zip(periods, INTERIOR)):
        assert sampled == pytest.approx(full, rel=1e-9)
    else:  # an approximation of the average; still close
        assert sampled == pytest.approx(full, rel=0.25)


@given(st.lists(st.integers(-(2**40), 2**40), max_size=200), st.integers(0, 2**20))
@settings(max_examples=60, deadline=None)
def test_distinct_equals_numpy_unique_on_both_paths(values, spread):
    # small ranges take the bitmap, wide ones the sort: both give np.unique
    import numpy as np

    from warpspeed.volumes.distinct import distinct

    wide = np.array(values, dtype=np.int64)
    narrow = wide % (spread + 1) - 7
    for x in (wide, narrow):
        assert np.array_equal(distinct(x), np.unique(x))


@settings(max_examples=30, deadline=None)
@given(
    DOMAINS,
    BLOCKS,
    st.sampled_from([80, 96, 136]),
    st.sampled_from([0, 8, 96]),
    st.integers(1, 3),
    st.sampled_from([(32, 128), (64, 64), (128, 128)]),
)
def test_block_sector_and_line_counts_match_python_sets(domain, block, pitch, offset, radius,
                                                         granules):
    # MODEL.md §5: distinct sectors (and lines) of a field's loads per sampled
    # block, against sets of the sampled threads' byte addresses
    from warpspeed.volumes.footprint import _block_counts, _sorted_by_class

    sector, line = granules
    kernel = star(domain, pitch, offset, radius)
    launch = make_launch(kernel, ws.load_machine("A100"), block)
    acc = kernel.loads + kernel.stores
    bound = bind_all((a.forms for a in acc), launch.block)
    s = sample(kernel, launch, acc, bound)
    loads = list(range(len(kernel.loads)))
    sectors, lines, (blocks, first, end) = _block_counts(s, loads, _sorted_by_class(s), sector,
                                                          line)
    for b in range(s.active.shape[0]):
        act = s.active[b]
        seen: set[int] = set()
        for k in loads:
            cls, shift = s.access_class[k], s.access_shift[k]
            seen |= {int(a) // sector for a in (s.class_addresses[cls][b] + shift)[act]}
        assert sectors[b] == len(seen)
        assert lines[b] == len({x // (line // sector) for x in seen})
        runs = list(zip(first[blocks == b].tolist(), end[blocks == b].tolist()))
        assert [x for lo, hi in runs for x in range(lo, hi)] == sorted(seen)
        assert all(hi < lo for (_, hi), (lo, _) in zip(runs, runs[1:]))  # maximal runs


@settings(max_examples=30, deadline=None)
@given(
    DOMAINS,
    BLOCKS,
    st.sampled_from([80, 96, 128, 136]),
    st.sampled_from([0, 8, 96]),
    st.integers(1, 3),
    st.booleans(),
)
def test_counts_equal_every_warp_counted_by_hand(domain, block, pitch, offset, radius, every):
    # MODEL.md §4-§5: the estimators count repeated warps, half warps and
    # blocks (translates by whole sectors, 1 KiB regions, lines) once and
    # weight them; here every half warp, warp and block of the sample is
    # counted on its own (halfwarp_cycles, Python sets) and weighted
    import numpy as np

    from warpspeed.volumes.l1 import halfwarp_cycles

    kernel = star(domain, pitch, offset, radius)
    launch = make_launch(kernel, ws.load_machine("A100"), block)
    acc = kernel.loads + kernel.stores
    bound = bind_all((a.forms for a in acc), launch.block)
    s = sample(kernel, launch, acc, bound, every_block=every)
    nb, threads = s.active.shape
    n_loads = len(kernel.loads)
    cycles = halves = lups = whole = 0.0
    sectors = [0.0, 0.0]  # per warp and instruction: loads, stores
    union = 0.0  # per block: the loads' distinct sectors
    for b in range(nb):
        w, act = s.weights[b], s.active[b]
        lups += w * act.sum()
        halves += w * act.reshape(-1, 16).any(axis=1).sum()
        seen: set[int] = set()
        for k in range(len(acc)):
            a = s.class_addresses[s.access_class[k]][b] + s.access_shift[k]
            per_half = halfwarp_cycles(a.reshape(-1, 16), act.reshape(-1, 16))
            cycles += w * per_half.sum()
            # whole warps issued: an idle half of a partly active warp costs its sibling's
            for (c0, c1), on in zip(per_half.reshape(-1, 2), act.reshape(-1, 2, 16)):
                h0, h1 = on[0].any(), on[1].any()
                whole += w * ((c0 if h0 else c1) + (c1 if h1 else c0)) * (h0 or h1)
            for lanes, on in zip(a.reshape(-1, 32), act.reshape(-1, 32)):
                sectors[k >= n_loads] += w * len({int(v) // 32 for v in lanes[on]})
            if k < n_loads:
                seen |= {int(v) // 32 for v in a[act]}
        union += w * len(seen)
    fp = block_footprint(s, n_loads)
    assert l1_cycles_per_warp_lup(s, whole_warps=False) == pytest.approx(2 * cycles / halves,
                                                                         rel=1e-12)
    assert l1_cycles_per_warp_lup(s) == pytest.approx(whole * 32 / lups, rel=1e-12)
    assert fp.l1_load == pytest.approx(sectors[0] * 32 / lups, rel=1e-12)
    assert fp.l2_store == pytest.approx(sectors[1] * 32 / lups, rel=1e-12)
    assert fp.l2_load_v1 == pytest.approx(union * 32 / lups, rel=1e-12)
    assert np.isclose(s.weights.sum(), float(np.prod(launch.grid))) or not every


def test_row_translates_groups_only_exact_translates():
    # rows equal up to a whole multiple of the granularity, with equal
    # active lanes, share a group; a row shifted by less, or with another
    # active lane, gets its own
    import numpy as np

    from warpspeed.volumes.sampling import row_translates

    base = np.array([0, 8, 16, 24, 200, 208, 216, 224], dtype=np.int64)
    rows = np.stack([base, base + 1024, base + 2048 + 8, base + 3072, base - 1024])
    active = np.ones(rows.shape, dtype=bool)
    active[3, 0] = False
    first, inverse = row_translates(rows, active, 1024)
    assert inverse.tolist() == [inverse[0], inverse[0], inverse[2], inverse[3], inverse[0]]
    assert len(set(inverse.tolist())) == 3 and len(first) == 3
    assert row_translates(rows[2:4], active[2:4], 1024) is None  # nothing repeats
