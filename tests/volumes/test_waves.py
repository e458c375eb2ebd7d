"""Wave footprints with islpy (MODEL.md §6) against brute-force enumeration."""

import dataclasses
import itertools

import islpy as isl
import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import warpspeed as ws
from warpspeed.input.expr import bind_all
from warpspeed.volumes.launch import make_launch, valid_threads, wave_sets
from warpspeed.volumes.waves import ADDRESS_MODES, box_volumes, count, wave_volumes


def tiny_machine(sms: int, blocks: int) -> ws.Machine:
    """A100 with few SMs, so that small domains span several waves."""
    return dataclasses.replace(ws.load_machine("A100"), sms=sms, max_blocks_per_sm=blocks)


def brute_force(
    kernel: ws.Kernel, launch, address: str = "paper"
) -> tuple[int, int, list[int], list[int], int]:
    """New load/store sectors, old (loads and stores) and overlap per earlier
    set, by enumeration of every thread and its byte addresses."""
    sets = wave_sets(launch)
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), launch.block)

    def threads(box):
        ranges = [range(max(lo, 0), hi) for lo, hi in box]
        blocks = np.array(list(itertools.product(*ranges)), dtype=np.int64).reshape(-1, 3)
        local = np.array(list(itertools.product(*(range(b) for b in launch.block))))
        v = np.concatenate(
            [np.repeat(blocks, len(local), axis=0), np.tile(local, (len(blocks), 1))], axis=1
        ).T
        glob = v[:3] * np.array(launch.block)[:, None] + v[3:]
        ok = np.all(glob < np.array(kernel.domain)[:, None], axis=0)
        return v[:, ok]

    def sectors(accesses, v):
        out = set()
        for acc in accesses:
            f = acc.field
            idx = [bound[e].evaluate(v) for e in acc.forms]
            if address == "paper":
                idx[0] = (idx[0] * f.itemsize) // 32
            else:  # leading dimensions whose index names no thread variable merge
                m = 1
                while m < f.ndim and not sp.sympify(acc.index[m - 1]).free_symbols:
                    m += 1
                lin = f.base_offset + f.itemsize * sum(idx[d] * f.strides[d] for d in range(m))
                idx = [lin // 32] + idx[m:]
            out |= {(f.name, *t) for t in zip(*idx)}
        return out

    cur_t = threads(sets.current)
    cur = sectors(kernel.loads, cur_t)
    new_load, new_store = len(cur), len(sectors(kernel.stores, cur_t))
    old, ovl = [], []
    for box in (sets.x, sets.y, sets.z):
        nonempty = all(hi > lo for lo, hi in box)
        img = sectors(kernel.loads, threads(box)) if nonempty else set()
        stored = sectors(kernel.stores, threads(box)) if nonempty else set()
        old.append(len(img) + len(stored))
        ovl.append(len(cur & img))
        cur -= img
    return new_load, new_store, old, ovl, cur_t.shape[1]


offsets = st.integers(-3, 3)
T = ws.threadIdx
Bk = ws.blockIdx
D = ws.blockDim


@st.composite
def kernels(draw):
    shape = (draw(st.integers(3, 40)), draw(st.integers(1, 12)), draw(st.integers(1, 10)))
    itemsize = draw(st.sampled_from([4, 8]))
    base = draw(st.sampled_from([0, 8, 24, 100]))
    fields = [ws.Field(n, shape=(96, 32, 20), itemsize=itemsize, base_offset=base)
              for n in ("A", "B")]
    # an array of structures: q components innermost (zyxf), constant component index
    q = draw(st.sampled_from([2, 3, 5, 19]))
    aos = ws.Field("C", shape=(q, 96, 32, 20), itemsize=itemsize, base_offset=base)
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    xs = [x, 2 * x, sp.floor(x / 2), T.x + 3 * Bk.x]
    ys = [y, y, 2 * y, sp.Mod(y, 3)]
    loads = []
    for _ in range(draw(st.integers(1, 6))):
        f = draw(st.sampled_from(fields))
        ex, ey = draw(st.sampled_from(xs)), draw(st.sampled_from(ys))
        # margins of 3 (4 along z) and extents 96 x 32 x 20: every index stays inside
        # its field (a load outside is refused, warpspeed.input.bounds)
        loads.append(f[ex + 3 + draw(offsets), ey + 3 + draw(offsets), z + 4 + draw(offsets)])
    for _ in range(draw(st.integers(0, 3))):
        comp = draw(st.integers(0, q - 1))
        loads.append(aos[comp, draw(st.sampled_from(xs)) + 3 + draw(offsets), y,
                         z + 4 + draw(offsets)])
    stores = [fields[1][x, y, z]] if draw(st.booleans()) else []
    return ws.Kernel(loads=loads, stores=stores, domain=shape)


blocks = st.tuples(st.sampled_from([1, 2, 4, 8, 16]), st.sampled_from([1, 2, 4]),
                   st.sampled_from([1, 2, 4]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kernels(), blocks, st.integers(1, 3), st.integers(1, 2), st.sampled_from(ADDRESS_MODES))
def test_isl_wave_counts_equal_brute_force_enumeration(kernel, block, sms, per_sm, address):
    launch = make_launch(kernel, tiny_machine(sms, per_sm), block)
    bound = bind_all((a.forms for a in kernel.loads + kernel.stores), launch.block)
    new_load, new_store, old, ovl, threads = brute_force(kernel, launch, address)
    for method in ("auto", "isl"):
        w = wave_volumes(kernel, launch, bound, method, address)
        assert w.new_load == 32 * new_load
        assert w.new_store == 32 * new_store
        assert w.old_sets == tuple(32 * o for o in old)
        assert w.overlap_sets == tuple(32 * o for o in ovl)
        assert w.threads == threads


def test_partial_blocks_at_the_domain_edge_count_only_valid_threads():
    A = ws.Field("A", shape=(100, 100, 100))
    k = ws.Kernel(loads=[A[ws.tidx, ws.tidy, ws.tidz]], stores=[], domain=(37, 5, 3))
    launch = make_launch(k, tiny_machine(1, 1), (16, 2, 2))
    sets = wave_sets(launch)
    assert valid_threads(sets.current, launch, k.domain) == brute_force(k, launch)[4]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 9), st.integers(1, 3),
                          st.integers(0, 20), st.integers(1, 6)), min_size=1, max_size=4))
def test_counting_strided_unions_equals_isl_enumeration(pieces):
    s = isl.Set("{[i, j] : 1 = 0}")
    for lo, n, stride, jlo, jn in pieces:
        piece = isl.Set(
            f"{{[i, j] : exists k : i = {lo} + {stride}k and 0 <= k < {n} "
            f"and {jlo} <= j < {jlo + jn}}}"
        )
        s = s.union(piece)
    assert count(s).points == s.count_val().to_python()


def test_skewed_sets_fall_back_to_enumeration_and_say_so():
    s = isl.Set("{[i, j] : 0 <= i < 10 and 0 <= j <= i}")
    c = count(s)
    assert c.points == 55 and c.enumerated == 55


@pytest.mark.parametrize("sizes", [(4, 3, 2), (100, 80, 70)])  # slices; difference array
def test_box_union_counts_match_a_dense_grid(sizes):
    rng = np.random.default_rng(1)
    for _ in range(20):
        def rand_boxes(n):
            out = []
            for _ in range(n):
                lo = rng.integers(0, 10, 3)
                hi = lo + rng.integers(1, 6, 3)
                out.append(tuple(zip(lo.tolist(), hi.tolist())))
            return out

        cur, earlier = rand_boxes(sizes[0]), [rand_boxes(sizes[1]), rand_boxes(sizes[2]), []]

        def dense(boxes):
            g = np.zeros((16, 16, 16), dtype=bool)
            for b in boxes:
                g[b[0][0]:b[0][1], b[1][0]:b[1][1], b[2][0]:b[2][1]] = True
            return g

        new, old, ovl = box_volumes(cur, earlier)
        c = dense(cur)
        assert new == c.sum()
        for group, o, v in zip(earlier, old, ovl):
            g = dense(group)
            assert (o, v) == (g.sum(), (c & g).sum())
            c &= ~g


def test_wave_cost_does_not_depend_on_the_domain_size():
    """The counts scale with the domain; the number of enumerated points stays 0."""
    from stencils.star3d_by_hand import kernel

    for shape in [(640, 512, 512), (6400, 512, 512)]:
        p = ws.predict(kernel(shape=shape), "A100", (256, 1, 2))
        assert p.wave.enumerated == 0


@pytest.mark.parametrize("block", [(256, 1, 2), (32, 8, 4)])
def test_streaming_copy_moves_eight_bytes_per_update_at_every_level(block):
    A = ws.Field("A", shape=(640, 512, 512))
    B = ws.Field("B", shape=(640, 512, 512))
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    k = ws.Kernel(loads=[A[x, y, z]], stores=[B[x, y, z]], domain=(640, 512, 512))
    v = ws.predict(k, "A100", block).volumes
    for value in (v.l1_load, v.l2_load, v.l2_store, v.dram_load, v.dram_store):
        assert value == pytest.approx(8.0)


@pytest.mark.parametrize("fold", [(1, 1, 1), (1, 2, 1), (1, 1, 2)])
@pytest.mark.parametrize("block", [(256, 1, 4), (16, 2, 32), (32, 32, 1)])
def test_direct_images_equal_isl_images_on_folded_stars(fold, block):
    from stencils.star3d_by_hand import kernel

    k = kernel(fold=fold)
    launch = make_launch(k, ws.load_machine("A100"), block)
    bound = bind_all((a.forms for a in k.loads + k.stores), launch.block)
    direct, by_isl = (wave_volumes(k, launch, bound, m) for m in ("auto", "isl"))
    # isl may have to enumerate skewed pieces of folded images; the counts agree
    assert direct == dataclasses.replace(by_isl, enumerated=0)
