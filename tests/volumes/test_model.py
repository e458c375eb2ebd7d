"""Volumes and limits (MODEL.md §5-§8) on the paper's 25-point star."""

import dataclasses
import json

import pytest

import warpspeed as ws
from stencils.star3d_by_hand import kernel as star

KEYS = {"machine", "block", "fold", "blocks_per_sm", "wave_blocks", "l1_cycles", "volumes",
        "limits", "glups", "limiter"}


@pytest.fixture(scope="module")
def p256():
    return ws.predict(star(), "A100", (256, 1, 2), model="paper")


def test_prediction_dict_has_the_documented_keys_and_is_json(p256):
    d = json.loads(json.dumps(p256.to_dict()))
    assert KEYS <= set(d)
    assert set(d["volumes"]) == {"l1_load", "l2_load", "l2_store", "dram_load", "dram_store"}
    assert set(d["limits"]) == {"fp", "l1", "l2", "dram"}
    assert d["block"] == [256, 1, 2] and d["fold"] == [1, 1, 1]
    assert "oversubscription" in d["details"] and "wave_overlap" in d["details"]


def test_glups_is_the_minimum_limit_and_names_it(p256):
    limits = {k: v for k, v in p256.limits.items() if v is not None}
    assert p256.glups == min(limits.values())
    assert p256.limits[p256.limiter] == p256.glups


def test_limits_follow_the_roofline_formulas(p256):
    m = ws.load_machine("A100")
    v = p256.volumes
    assert p256.limits["dram"] == pytest.approx(1400 / (v.dram_load + v.dram_store))
    assert p256.limits["l2"] == pytest.approx(4500 / (v.l2_load + v.l2_store))
    assert p256.limits["l1"] == pytest.approx(m.sms * m.clock_ghz * 32 / p256.l1_cycles)
    assert p256.limits["fp"] == pytest.approx(m.sms * m.clock_ghz * 32 / 25)


def test_star_volumes_at_the_register_side(p256):
    # A warp reads 32 consecutive doubles, 8 sectors when 32 B aligned: 8 B/Lup.
    # The first interior point is 128 B aligned, so the centre, the y and z
    # neighbours and the x shifts by +-4 are aligned (19 loads); the x shifts
    # by +-1..3 straddle one more sector per warp: 9 sectors (6 loads).
    assert p256.volumes.l1_load == pytest.approx(19 * 8 + 6 * 9)
    assert p256.volumes.l2_store == pytest.approx(8.0)


def test_dram_volume_lies_between_compulsory_and_no_reuse(p256):
    v = p256.volumes
    assert 8.0 <= v.dram_load_v1 <= v.l2_load_v1 + 1e-9
    assert v.dram_load_v2 <= v.dram_load_v1
    assert v.dram_load >= v.dram_load_v2


def test_layer_condition_transition_comes_earlier_for_deeper_blocks():
    """Paper Fig. 23: constant total size, growing square xy planes."""
    total = 512 * 1024 * 1024
    sizes = [128, 256, 384, 512, 768, 1024]

    def series(block):
        return [ws.predict(star(shape=(n, n, total // (n * n))), "A100", block).volumes.dram_load
                for n in sizes]

    shallow, deep = series((512, 2, 1)), series((32, 2, 16))
    # near the 8 B/Lup minimum for small planes
    assert max(shallow[:2]) < 10 and max(deep[:2]) < 10
    # then rising to a plateau far above it
    assert shallow[-1] > 4 * 8 and deep[-1] > 1.4 * 8
    assert all(b >= a - 0.6 for a, b in zip(shallow[1:], shallow[2:]))

    def first_rise(s):  # first plane size past half-way to the plateau
        half = min(s) + 0.5 * (s[-1] - min(s))
        return next(i for i, v in enumerate(s) if v > half)

    assert first_rise(deep) < first_rise(shallow)


def test_v100_smaller_l2_breaks_the_layer_condition_earlier():
    k = star(shape=(384, 384, 512 * 1024 * 1024 // 384**2))
    a = ws.predict(k, "A100", (256, 2, 2)).volumes.dram_load
    v = ws.predict(k, "V100", (256, 2, 2)).volumes.dram_load
    assert v > a


def test_thin_and_deep_blocks_beat_short_x_blocks():
    k = star()
    good = ws.predict(k, "A100", (16, 2, 32)).glups
    bad = ws.predict(k, "A100", (1, 16, 64)).glups
    assert good > 3 * bad


def test_predict_rejects_a_non_kernel():
    with pytest.raises(TypeError, match="ws.Kernel"):
        ws.predict("star", "A100", (32, 1, 1))


@pytest.mark.parametrize("machine", ["A100", "MI210"])
def test_stacked_block_stages_equal_each_block_counted_alone(machine):
    # MODEL.md §4-§5: block_stages counts the launches that share accesses
    # together; every number must be the one of counting the launch alone
    # (with a launch that cannot run reported in its place)
    from warpspeed.errors import LaunchError
    from warpspeed.input.addresses import kernel_forms, thread_accesses
    from warpspeed.input.expr import bind_all
    from warpspeed.model import block_stages
    from warpspeed.volumes.footprint import block_footprint
    from warpspeed.volumes.l1 import l1_cycles_per_warp_lup, line_cycles_per_warp_lup
    from warpspeed.volumes.launch import make_launch
    from warpspeed.volumes.sampling import sample

    m = ws.load_machine(machine)
    k = star(radius=2, shape=(100, 36, 20))
    blocks = [(64, 4, 1), (32, 2, 2), (16, 8, 4), (128, 1, 1), (2048, 1, 1), (8, 8, 2)]
    stages = block_stages(k, m, blocks)
    assert isinstance(stages[4], LaunchError)
    for b, st in zip(blocks, stages):
        if b == (2048, 1, 1):
            continue
        la = make_launch(k, m, b)
        bound = bind_all([kernel_forms(k)], la.block)
        loads, stores = thread_accesses(k, bound, la.block)
        s = sample(k, la, loads + stores, bound, warp=m.warp_size)
        if m.l1_model == "lines":
            l1 = line_cycles_per_warp_lup(s, m.l1_line_bytes, m.warp_size, m.l1_lanes_per_cycle)
        else:
            l1 = l1_cycles_per_warp_lup(s) * m.warp_size / 32
        fp = block_footprint(s, len(loads), m.l1_sector_bytes, m.l1_line_bytes, m.warp_size)
        assert st.l1_cycles == l1
        assert (st.footprint.l1_load, st.footprint.l2_load_v1, st.footprint.l2_store,
                st.footprint.l2_store_v1, st.footprint.alloc_per_block) == (
                fp.l1_load, fp.l2_load_v1, fp.l2_store, fp.l2_store_v1, fp.alloc_per_block)


def test_a_prediction_without_a_model_name_is_of_the_default_model():
    """The README: the latency model is the default, for predict and for a
    Prediction built without naming one."""
    k = ws.Kernel(loads=[ws.Field("a", shape=(256,))[ws.tidx]],
                  stores=[ws.Field("b", shape=(256,))[ws.tidx]], domain=(256,))
    p = ws.predict(k, "V100", block=(64, 1, 1))
    fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(p) if f.name != "model"}
    assert ws.Prediction(**fields).model == p.model == "latency"
