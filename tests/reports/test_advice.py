"""The advisor (MODEL.md §4-§8, §10): binding limiter, headroom and hints,
checked against numbers derived by hand from the prediction."""

import dataclasses
import math
import re

import pytest

import warpspeed as ws
from stencils import star3d_by_hand
from warpspeed.reports.advice import advise, explanation_lines

A100 = ws.load_machine("A100")


def star(radius=4, shape=(640, 512, 512), **kw):
    k = star3d_by_hand.kernel(radius=radius, shape=shape)
    return dataclasses.replace(k, **kw) if kw else k


def kinds(advice):
    return {h.kind for h in advice.hints}


def test_headroom_is_the_next_limit_over_the_binding_one():
    k = star()
    p = ws.predict(k, A100, (32, 8, 4), model="paper")
    a = advise(p, A100, k)
    finite = sorted(v for v in p.limits.values() if v is not None)
    assert a.limiter == p.limiter and a.glups == finite[0]
    assert a.headroom == pytest.approx(finite[1] / finite[0])
    assert [v for _, v in a.limits] == finite
    assert a.next_limiter == next(n for n, v in p.limits.items() if v == finite[1])


def test_headroom_of_the_default_model_is_measured_from_the_binding_limit():
    k = star()
    p = ws.predict(k, A100, (256, 1, 4))
    a = advise(p, A100, k)
    assert p.limiter == "dram" and a.next_limiter == "l2"
    assert a.binding_limit == p.limits["dram"] > p.glups
    # the L2 limit is 2 % above the DRAM limit: 1.02x, not L2 over the prediction (1.41x)
    assert a.headroom == pytest.approx(p.limits["l2"] / p.limits["dram"])
    assert a.headroom < 1.03 < 1.4 < p.limits["l2"] / p.glups


def test_a_launch_bound_prediction_names_the_launch_its_limit_and_hint():
    from stencils.star3d import kernel as star_ps

    k = star_ps(radius=1, shape=(4, 4, 4))
    p = ws.predict(k, A100, (64, 4, 1))
    a = advise(p, A100, k)
    # 64 updates per 2750 ns of launch overhead: 0.0233 GLup/s, below the DRAM limit
    launch = 64 / 2750
    assert a.limiter == "launch" and a.binding_limit == pytest.approx(launch)
    assert [n for n, _ in a.limits][:2] == ["launch", "dram"]
    assert a.next_limiter == "dram"
    assert a.headroom == pytest.approx(p.limits["dram"] / launch)
    hint = next(h for h in a.hints if h.kind == "launch_bound")
    # the launch's 2.75 us of the kernel's time (launch plus body), as the terms give them
    assert p.terms["launch_us"] == pytest.approx(2.75)
    assert p.terms["kernel_time_us"] > 2.75
    assert f"2.75 of the kernel's {p.terms['kernel_time_us']:.2f} us" in hint.message
    # a large kernel's launch limit lies above every level's: not listed
    big = advise(ws.predict(star(), A100, (256, 1, 4)), A100)
    assert {n for n, _ in big.limits} == {"fp", "l1", "l2", "dram"}


def test_a_block_narrower_than_a_half_warp_gets_the_narrow_x_hint_with_its_numbers():
    k = star()
    narrow = advise(ws.predict(k, A100, (8, 8, 16)), A100, k)
    hint = next(h for h in narrow.hints if h.kind == "narrow_block_x")
    assert "8 is below 16" in hint.message and "spans 2 rows" in hint.message
    assert "16,4,16" in hint.message  # the same 1024 threads, 16 wide
    wide = advise(ws.predict(k, A100, (32, 8, 4)), A100, k)
    assert "narrow_block_x" not in kinds(wide)


def test_l1_conflict_hint_compares_with_two_cycles_per_access_and_update():
    k = star()
    p = ws.predict(k, A100, (4, 16, 16))
    ideal = 2.0 * (len(k.loads) + len(k.stores))  # 52 for 25 loads and 1 store
    a = advise(p, A100, k)
    hint = next(h for h in a.hints if h.kind == "l1_conflicts")
    assert f"{p.l1_cycles / ideal:.2f}x the {ideal:.1f}" in hint.message
    assert f"{p.limits['l1'] * p.l1_cycles / ideal:.1f} GLup/s" in hint.message


def test_z_layer_condition_hint_names_the_set_size_and_the_l2_size():
    k = star()
    p = ws.predict(k, A100, (32, 8, 4))
    # The z set is one block layer of the whole 640x512 plane: far more than 20 MiB.
    assert p.wave.old[1] > A100.l2_bytes
    hint = next(h for h in advise(p, A100, k).hints if h.kind == "layer_condition_z")
    assert f"needs {p.wave.old[1] / 2**20:.1f} MiB" in hint.message
    assert f"L2 holds {A100.l2_bytes / 2**20:.1f} MiB" in hint.message
    assert "2z folding" in hint.message and "deeper blocks" in hint.message


def test_a_small_plane_meets_the_layer_conditions():
    k = star(radius=1, shape=(128, 64, 64))
    a = advise(ws.predict(k, A100, (32, 8, 4)), A100, k)
    assert not {"layer_condition_z", "layer_condition_xy"} & kinds(a)


def test_register_limited_occupancy_says_how_many_registers_give_one_more_block():
    k = star(registers=128)
    p = ws.predict(k, A100, (64, 4, 1))
    assert p.occupancy_limited_by == "registers" and p.blocks_per_sm == 2
    # 3 blocks of 8 warps: 65536 / 24 = 2730 -> 2560 per warp (units of 256) -> 80 per thread.
    hint = next(h for h in advise(p, A100, k).hints if h.kind == "occupancy")
    assert "limited by registers" in hint.message and "512 of 2048" in hint.message
    assert "at most 80 would allow 3 blocks" in hint.message
    assert "Little's law" in hint.message  # the default model includes bytes in flight
    paper = ws.predict(k, A100, (64, 4, 1), model="paper")
    hint = next(h for h in advise(paper, A100, k).hints if h.kind == "occupancy")
    assert "no latency term" in hint.message


def test_a_floating_point_bound_kernel_is_told_so():
    k = star(fp_instructions=5000)
    p = ws.predict(k, A100, (32, 8, 4), model="paper")
    a = advise(p, A100, k)
    assert a.limiter == "fp" and "fp_bound" in kinds(a)
    assert a.hints[0].limiter == "fp"  # hints of the binding limiter come first
    fp_limit = A100.sms * A100.clock_ghz * A100.fp64_fma_per_sm_cycle / 5000
    assert a.glups == pytest.approx(fp_limit)


def test_advice_is_frozen_and_needs_no_kernel():
    p = ws.predict(star(radius=1, shape=(128, 64, 64)), A100, (8, 8, 16))
    a = advise(p, A100)
    assert "narrow_block_x" in kinds(a)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.limiter = "l2"  # type: ignore[misc]
    assert all(isinstance(h.message, str) and h.message for h in a.hints)
    assert math.isclose(a.glups, p.glups)


def test_an_l1_bound_prediction_quotes_the_validation_of_l1_bound_sets():
    import json

    from stencils import convolution2d
    from warpspeed.reports.expected import ACCURACY_JSON, L1_BOUND_SETS, l1_bound_scores

    k = convolution2d.kernel()
    table = json.loads(ACCURACY_JSON.read_text())["validation"]["leave_one_set_out"]
    for model, key in (("latency", "shipped"), ("paper", "paper")):
        p = ws.predict(k, A100, (64, 2, 1), model=model)
        assert p.limiter == "l1"
        hint = next(h for h in advise(p, A100, k).hints if h.kind == "l1_validation")
        recorded = {e["dataset"]: e for e in table[key] if e["dataset"] in L1_BOUND_SETS}
        assert {name for name, *_ in l1_bound_scores(model)} == set(L1_BOUND_SETS)
        for name, e in recorded.items():
            assert f"{name} {e['median_ratio']:.2f}x" in hint.message
            assert f"rank correlation {e['spearman']:.2f}" in hint.message
    # a DRAM-bound star says nothing of the L1's validation
    s = star()
    p = ws.predict(s, A100, (256, 1, 1))
    assert p.limiter != "l1" and "l1_validation" not in kinds(advise(p, A100, s))


def test_an_overlap_that_costs_time_names_the_resources_that_serialise():
    # 7-point star of floats on A100: the default model's time per update is
    # the p-norm of L1 and DRAM time; the hint quotes the pair and its loss
    k = star(radius=1, shape=(512, 512, 512), precision=32)
    p = ws.predict(k, A100, (256, 2, 1))
    t = p.terms
    assert t["t_dram_ns"] > t["t_l2_ns"] and t["t_l1_ns"] > t["t_fp_ns"]
    expect = t["t_memory_ns"] * (1 + (t["t_l1_ns"] / t["t_memory_ns"])
                                 ** t["l1_overlap_exponent"]) ** (1 / t["l1_overlap_exponent"])
    assert t["t_update_ns"] == pytest.approx(expect)
    hint = next(h for h in advise(p, A100, k).hints if h.kind == "overlap")
    assert f"x{t['t_update_ns'] / t['t_memory_ns']:.2f}" in hint.message
    assert "L1 work" in hint.message and "DRAM stream" in hint.message
    assert f"{1000 * t['t_memory_ns']:.1f} ps" in hint.message
    # the paper model has no overlap: no such hint
    q = ws.predict(k, A100, (256, 2, 1), model="paper")
    assert "overlap" not in kinds(advise(q, A100, k))


def test_an_overlap_hint_offers_the_ideal_l1_count_when_the_block_is_narrow():
    # block 8 wide, doubles: a half warp spans two rows, 2 cycles per half warp
    # and access: 32 cycles per warp-update for 7 loads and 1 store, 16 ideal
    k = star(radius=1, shape=(512, 512, 512))
    for block in ((8, 16, 2), (4, 32, 2)):
        p = ws.predict(k, A100, block)
        t = p.terms
        hint = next(h for h in advise(p, A100, k).hints if h.kind == "overlap")
        assert f"at the ideal L1 count (16.0 instead of {p.l1_cycles:.1f}" in hint.message
        expo = t["l1_overlap_exponent"]
        at = (t["t_l1_ns"] * 16 / p.l1_cycles) ** expo + t["t_memory_ns"] ** expo
        assert f"it would take {1000 * at ** (1 / expo):.1f} ps" in hint.message
    assert ws.predict(k, A100, (8, 16, 2)).l1_cycles == pytest.approx(32.0)


def test_every_regime_quotes_its_expected_accuracy_and_the_gpus_evidence():
    import json

    from warpspeed.reports.expected import ACCURACY_JSON

    shipped = {e["dataset"]: e for e in json.loads(ACCURACY_JSON.read_text())[
        "validation"]["leave_one_set_out"]["shipped"]}
    from stencils import star3d

    s = star3d.kernel(radius=1, shape=(256, 256, 256))  # DRAM-bound on H100
    p = ws.predict(s, "H100", (128, 4, 2))
    assert p.limiter == "dram"
    hint = next(h for h in advise(p, ws.load_machine("H100"), s).hints
                if h.kind == "expected_accuracy")
    assert f"star3d_r4 {shipped['star3d_r4']['median_ratio']:.2f}x" in hint.message
    assert "no kernel was measured on H100" in hint.message
    # an L2-bound configuration: no set is L2-bound, and that is said
    k = star3d.kernel(radius=4, shape=(256, 256, 256))
    p = ws.predict(k, "V100", (256, 2, 1))
    assert p.limiter == "l2"
    hint = next(h for h in advise(p, ws.load_machine("V100"), k).hints
                if h.kind == "expected_accuracy")
    assert "no development set is L2-bound" in hint.message
    assert "kernels measured on V100: star3d_r4, box2d_r7" in hint.message


def test_a_regime_without_a_set_does_not_deny_the_rows_its_error_band_counts():
    """Issue 46: on MI250X-GCD an L2-bound configuration was told "no measured
    evidence" and then quoted an L2-bound error band over 48 rows. The rows
    the band counts are named, and nothing denies them."""
    from stencils import star3d
    from warpspeed.reports.advice import explanation_lines
    from warpspeed.timing.evidence import class_rows

    k = star3d.kernel(radius=4)
    p = ws.predict(k, "MI250X-GCD", (16, 4, 8))
    assert p.limiter == "l2" and p.evidence.rows > 0
    rows, sets = class_rows("l2", p.model)
    assert rows >= p.evidence.rows and sets
    text = " ".join(explanation_lines(p, advise(p, ws.load_machine("MI250X-GCD"), k)))
    assert "no measured evidence" not in text
    assert f"{rows} of their rows are predicted L2-bound ({', '.join(sets)})" in text


def test_l1_hint_measures_against_the_machines_own_unit_stride_count():
    """A stride-2 load of doubles and a unit-stride store, by hand: on MI210's
    line count (wave64, 64 B lines) unit stride needs 8 lines per access, the
    strided load 16: 24 of 16 cycles; on A100's half-warp count 2 per access,
    the strided load 4: 6 of 4. A unit-stride D3Q19 step on MI100 is at its
    line count and gets no hint (it did against the half-warp ideal)."""
    from stencils import lbm_fluidx3d

    x, y = ws.tidx, ws.tidy
    a = ws.Field("a", shape=(4096, 256, 1))
    b = ws.Field("b", shape=(4096, 256, 1))
    k = ws.Kernel(loads=[a[2 * x, y, 0]], stores=[b[x, y, 0]], domain=(2048, 256, 1))
    for machine, cycles, ideal, words in (("MI210", 24.0, 16.0, "vector-L1 lines"),
                                          ("A100", 6.0, 4.0, "half warps")):
        p = ws.predict(k, machine, (64, 4, 1))
        assert p.l1_cycles == pytest.approx(cycles)
        (hint,) = [h for h in ws.advise(p, ws.load_machine(machine), k).hints
                   if h.kind == "l1_conflicts"]
        assert f"1.50x the {ideal:.1f}" in hint.message and words in hint.message
    lbm = lbm_fluidx3d.kernel()
    p = ws.predict(lbm, "MI100", (64, 1, 1))
    assert "l1_conflicts" not in {h.kind for h in ws.advise(p, ws.load_machine("MI100"), lbm).hints}


MI210 = ws.load_machine("MI210")


def _floats(shape=(64, 64, 64)):
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    full = tuple(n + 2 for n in shape)
    a, b = ws.Field("A", shape=full, itemsize=4), ws.Field("B", shape=full, itemsize=4)
    return ws.Kernel(loads=[a[x + 1 + d, y + 1, z + 1] for d in (-1, 0, 1)],
                     stores=[b[x + 1, y + 1, z + 1]], domain=shape)


def test_amd_hints_speak_of_cus_and_wavefronts_and_of_l1_lines():
    k = star(radius=1, shape=(64, 64, 64), registers=128)
    a = advise(ws.predict(k, MI210, (8, 8, 1)), MI210, k)
    text = " ".join(h.message for h in a.hints)
    assert a.vendor == "AMD" and "per CU" in text and "cycles per wavefront" in text
    assert re.search(r"\b(SMs?|warps?|half warps?)\b", text) is None, text
    # ideal L1 count: 8 accesses (7 loads, 1 store) of 64 lanes x 8 B in 64 B lines,
    # 8 lines each = 64 cycles per wavefront-update, in both hints that quote it
    overlap = next(h for h in a.hints if h.kind == "overlap")
    assert "at the ideal L1 count (64.0 instead of" in overlap.message
    assert "the 64.0 of conflict-free" in next(h for h in a.hints if h.kind == "l1_conflicts"
                                               ).message
    # rows of 8 doubles fill a 64 B line: not narrow; rows of 8 floats fill half of one
    assert "narrow_block_x" not in kinds(a)
    f = _floats()
    narrow = advise(ws.predict(f, MI210, (8, 8, 1)), MI210, f)
    hint = next(h for h in narrow.hints if h.kind == "narrow_block_x")
    assert hint.message.startswith("block x extent 8 is below 16: a wavefront of 64 spans 8 "
                                   "rows, each filling a 64 B L1 line only partly")
    lines = explanation_lines(ws.predict(k, MI210, (8, 8, 1)), a)
    assert any("; CU work (FP" in line for line in lines)


def test_advise_refuses_another_machine_than_the_predictions():
    """Issue 46: ws.advise took the H100 for an A100 prediction and mixed
    their facts; one line says which machine it needs."""
    k = star()
    p = ws.predict(k, A100, (256, 1, 1))
    with pytest.raises(ws.MachineError) as raised:
        advise(p, ws.load_machine("H100"), k)
    message = str(raised.value)
    assert "\n" not in message and "for A100 but the machine given is H100" in message


def test_advise_takes_the_machine_by_name_and_refuses_a_kernel_for_the_prediction():
    """Every other public function takes a machine name; advise() took only
    a Machine and ended in "'str' object has no attribute 'name'"."""
    k = star(radius=1, shape=(64, 64, 64))
    p = ws.predict(k, "A100", (64, 4, 1))
    assert ws.advise(p, "A100", k) == ws.advise(p, A100, k)
    with pytest.raises(TypeError, match=r"advise\(\) explains a Prediction .* got Kernel"):
        ws.advise(k, "A100")
    with pytest.raises(ws.MachineError, match="the prediction is for A100 but the machine given "
                                              "is H200"):
        ws.advise(p, "H200")
