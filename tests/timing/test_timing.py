"""The default timing model ("latency") and its bytes-in-flight physics,
against hand computations and the public micro-benchmarks."""

import csv
import dataclasses
import math
from pathlib import Path

import pytest

import warpspeed as ws
from stencils.star3d_by_hand import kernel as star
from warpspeed.timing import DEFAULT_MODEL, MODELS, parameter
from warpspeed.timing.latency import (
    binding_limiter,
    fp_slots,
    glups_from_terms,
    memory_params,
    wave_efficiency,
)
from warpspeed.timing.memory import achieved_bandwidth
from warpspeed.validation.reference import dataset_dir

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not (SHARED / "microbench").is_dir(),
                    reason="micro-benchmark tables (shared/data/microbench) not beside the repo")
@pytest.mark.parametrize("machine, table", [("V100", "v100"), ("A100", "a100_40"),
                                            ("A100-80GB", "a100_80")])
def test_machine_files_reproduce_their_stream_tables_within_10_percent(machine, table):
    # The machine file's own parameters (not fits/memory.toml) against the
    # stream table: two blocks per SM run, so threads in flight are twice the
    # column; read moves 8 B per thread, scale 16 (load + store), triad 24.
    p = memory_params(ws.load_machine(machine))
    with (SHARED / "microbench" / "stream" / f"{table}.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    for col, per_thread, f in (("read", 8, 1.0), ("scale", 16, 0.5), ("triad", 24, 2 / 3)):
        for r in rows:
            pred = achieved_bandwidth(p, 2 * float(r["threads_in_flight"]) * per_thread, f)
            assert pred == pytest.approx(float(r[f"{col}_GBs"]), rel=0.10), (col, r["block_size"])


@pytest.fixture(scope="module")
def v100_pair():
    k = star(radius=4, shape=(632, 504, 504), alignment=0)
    return k, ws.predict(k, "V100", (32, 1, 32))


def test_the_default_model_is_the_latency_model_and_both_are_listed():
    assert DEFAULT_MODEL == "latency" and set(MODELS) == {"latency", "paper"}
    assert MODELS["paper"].address == "paper" and MODELS["latency"].address == "linear"


def test_time_overlaps_fp_and_l1_each_with_memory_then_adds_launch(v100_pair):
    k, p = v100_pair
    m = ws.load_machine("V100")
    t = p.terms
    times = [t["t_fp_ns"], t["t_l1_ns"], t["t_l2_ns"], t["t_dram_ns"]]
    core, memory = max(times[:2]), max(times[2:])
    assert (t["t_core_ns"], t["t_memory_ns"]) == (core, memory)

    def pnorm(a, b, e):
        return (a**e + b**e) ** (1 / e)

    update = max(pnorm(times[0], memory, parameter(m, "fp_overlap_exponent")),
                 pnorm(times[1], memory, parameter(m, "overlap_exponent")))
    assert t["t_update_ns"] == pytest.approx(update)
    # 632 x 504 x 504 updates in blocks of 32 x 1 x 32: a grid of 20 x 504 x 16
    # blocks, 160 per wave (2 per SM), so 1008 full waves and no partial one
    updates = 632 * 504 * 504
    assert t["waves"] == pytest.approx(20 * 504 * 16 / 160)
    total_ns = 1000 * parameter(m, "launch_overhead_us") + updates * update
    assert p.glups == pytest.approx(updates / total_ns)
    assert p.limits[p.limiter] == pytest.approx(1 / max(times))
    assert p.glups < min(v for v in p.limits.values() if v)  # overlap only adds time
    assert p.model == "latency" and p.to_dict()["terms"]["roofline_glups"] == pytest.approx(
        1 / max(times))


def test_glups_recombine_from_the_terms_for_the_joint_fit(v100_pair):
    from warpspeed.timing.latency import glups_from_terms

    _, p = v100_pair
    assert glups_from_terms(p.terms) == pytest.approx(p.glups, rel=1e-12)
    # a larger L1 exponent overlaps more: never slower
    assert glups_from_terms(p.terms, l1_exponent=3.0) >= p.glups


def test_core_and_memory_overlap_between_roofline_and_serial():
    from warpspeed.timing.latency import overlap

    assert overlap(2.0, 0.0, 1.13) == 2.0  # one side alone: its own time
    assert overlap(1.0, 1.0, 1.0) == pytest.approx(2.0)  # p = 1: serial
    assert overlap(3.0, 4.0, 2.0) == pytest.approx(5.0)  # hand: sqrt(9 + 16)
    assert overlap(1.0, 1.0, 50.0) == pytest.approx(1.0, rel=0.02)  # large p: roofline
    assert overlap(0.0, 0.0, 1.5) == 0.0


def test_l1_and_l2_times_follow_from_cycles_and_volumes(v100_pair):
    k, p = v100_pair
    m = ws.load_machine("V100")
    assert p.terms["t_l1_ns"] == pytest.approx(p.l1_cycles / (m.sms * m.clock_ghz * 32))
    v = p.volumes
    assert p.terms["t_l2_ns"] == pytest.approx((v.l2_load + v.l2_store) / m.l2_bandwidth)


def test_a_machine_file_with_the_old_tlb_keys_is_refused_with_the_reason(tmp_path):
    src = (Path(ws.__file__).parent / "machines" / "V100.toml").read_text()
    path = tmp_path / "old.toml"
    # a file of format 1 had it at the top level, one of format 2 in [latency]
    old = src.replace("format_version = 2", "format_version = 1")
    for text in (old + '\n[tlb_penalty]\nvalue = 3.57\nsource = "old fit"\n',
                 src + '\n[latency.tlb_penalty]\nvalue = 3.57\nsource = "old fit"\n'):
        path.write_text(text)
        with pytest.raises(ws.MachineError,
                           match=r"\[latency\] \['tlb_penalty'\] are no longer used.*TLB"):
            ws.load_machine(str(path))


def test_deep_and_lbm_blocks_pay_no_page_penalty():
    # the TLB term is gone: a deep block's DRAM time is its volume at the
    # achieved bandwidth, like a flat block's
    k = star(radius=4, shape=(632, 504, 504), alignment=0)
    deep = ws.predict(k, "V100", (16, 1, 64))
    t = deep.terms
    v = deep.volumes
    assert t["t_dram_ns"] == pytest.approx((v.dram_load + v.dram_store)
                                           / t["dram_bandwidth_achieved"])
    assert not any(key.startswith("tlb") for key in t)


def test_divisions_cost_their_machine_throughput_and_floats_issue_faster():
    m = ws.load_machine("V100")
    a = ws.Field("A", shape=(1024,))
    div = ws.Kernel(loads=[a[ws.tidx]], stores=[], domain=(1024,), fp_ops={"div": 10, "fma": 2})
    assert fp_slots(div, m) == pytest.approx(10 * 7.5 + 2)
    assert div.fp_instructions == 12
    single = dataclasses.replace(div, precision=32)
    assert fp_slots(single, m) == pytest.approx(10 * 8 + 2)
    pd = ws.predict(div, m, (128, 1, 1))
    ps = ws.predict(single, m, (128, 1, 1))
    assert pd.terms["t_fp_ns"] == pytest.approx(77 / (80 * 1.38 * 32))
    assert ps.terms["t_fp_ns"] == pytest.approx(82 / (80 * 1.38 * 64))


def test_the_last_partial_wave_takes_its_share_or_a_blocks_latency_chain():
    a = ws.Field("A", shape=(10**7,))
    k = ws.Kernel(loads=[a[ws.tidx]], stores=[], domain=(1024 * 80 * 2 * 3 // 2,))
    p = ws.predict(k, "V100", (1024, 1, 1))
    m = ws.load_machine("V100")
    assert p.wave_blocks == 160  # 2 blocks of 1024 threads per SM on 80 SMs
    from warpspeed.volumes.launch import make_launch

    la = make_launch(k, m, (1024, 1, 1))
    assert wave_efficiency(la) == pytest.approx(1.5 / 2)
    t = p.terms
    assert t["waves"] == pytest.approx(1.5)
    # one block's chain: a DRAM round trip plus its core work on one SM
    chain = parameter(m, "dram_latency_ns") + t["t_core_ns"] * m.sms * 1024
    assert t["block_chain_us"] == pytest.approx(chain / 1000)
    updates = 1024 * 80 * 3
    per_wave = updates / 1.5 * t["t_update_ns"]
    body = per_wave + max(chain, 0.5 * per_wave)
    launch = parameter(m, "launch_overhead_us")
    assert t["kernel_time_us"] == pytest.approx((body + 1000 * launch) / 1000)


def test_a_tiny_grid_costs_a_launch_and_a_latency_chain_not_a_full_wave():
    # 4^3 updates: one block; physical bound 64 updates per launch overhead
    from stencils.star3d import kernel as star_ps

    m = ws.load_machine("A100")
    tiny = ws.predict(star_ps(radius=1, shape=(4, 4, 4)), m, (64, 1, 1))
    bound = 64 / (1000 * parameter(m, "launch_overhead_us"))
    assert bound / 1.5 <= tiny.glups <= bound
    # 32^3: the launch is most of the time, the body a few microseconds
    small = ws.predict(star_ps(radius=1, shape=(32, 32, 32)), m, (128, 2, 1))
    assert small.terms["kernel_time_us"] > parameter(m, "launch_overhead_us")
    assert small.glups < 32**3 / (1000 * parameter(m, "launch_overhead_us"))


def _terms(launch_us, chain_us, waves=0.5, updates=1000.0, t_update_ns=1.0,
           roofline_glups=1.0):
    return {"launch_us": launch_us, "block_chain_us": chain_us, "waves": waves,
            "updates": updates, "t_update_ns": t_update_ns, "roofline_glups": roofline_glups}


@pytest.mark.parametrize("terms, limiter", [
    # 1000 updates at 1 ns (roofline 1 GLup/s): the level's time is 1 us; half a wave's
    # share is 0.5 / 0.5 * 1000 * 1 ns = 1 us, so a chain of 0.3 us does not set it
    (_terms(launch_us=2.0, chain_us=0.3), "launch"),
    (_terms(launch_us=0.5, chain_us=0.3), "dram"),
    (_terms(launch_us=1.0, chain_us=0.3), "dram"),  # a tie stays with the level
    # a chain of 1.5 us sets the last partial wave and outlasts the level and the launch
    (_terms(launch_us=0.5, chain_us=1.5), "partial wave"),
    (_terms(launch_us=2.0, chain_us=1.5), "launch"),
    # whole waves: no partial wave, whatever the chain
    (_terms(launch_us=0.5, chain_us=1.5, waves=2.0), "dram"),
])
def test_the_launch_or_the_partial_wave_binds_when_it_outlasts_every_level(terms, limiter):
    assert binding_limiter("dram", terms) == limiter


def test_a_launch_bound_star_is_labelled_launch_with_its_glups_and_four_limits_kept():
    from stencils.star3d import kernel as star_ps

    m = ws.load_machine("A100")
    p = ws.predict(star_ps(radius=1, shape=(4, 4, 4)), m, (64, 4, 1))
    t = p.terms
    # 64 updates: the DRAM time of all of them, 64 / DRAM limit (0.68 us), is below
    # the A100's launch overhead of 2.75 us
    assert 64 / p.limits["dram"] < 1000 * parameter(m, "launch_overhead_us") == 2750
    assert p.limiter == "launch" and set(p.limits) == {"fp", "l1", "l2", "dram"}
    assert min(p.limits, key=p.limits.__getitem__) == "dram"
    assert p.glups == pytest.approx(64 / (1000 * t["kernel_time_us"]))
    assert p.glups == pytest.approx(glups_from_terms(t))
    paper = ws.predict(star_ps(radius=1, shape=(4, 4, 4)), m, (64, 4, 1), model="paper")
    assert paper.limiter == "dram"
    big = ws.predict(star(), m, (256, 1, 4))
    assert big.limiter == "dram"


def test_a_grid_below_one_wave_with_heavy_core_work_is_labelled_partial_wave():
    # 64 x 64 updates, 20000 FMAs each, blocks of 256 x 1 x 1 clipped to 64 working
    # threads: 64 blocks, far below one wave of A100
    m = ws.load_machine("A100")
    a, b = ws.Field("A", shape=(66, 66, 3)), ws.Field("B", shape=(66, 66, 3))
    x, y, z = ws.tidx, ws.tidy, ws.tidz
    k = ws.Kernel(loads=[a[x + 1 + d, y + 1, z + 1] for d in (-1, 0, 1)],
                  stores=[b[x + 1, y + 1, z + 1]], domain=(64, 64, 1), fp_instructions=20000)
    p = ws.predict(k, m, (256, 1, 1))
    t_fp = 20000 / (m.sms * m.clock_ghz * m.fp64_fma_per_sm_cycle)  # ns per update
    chain = parameter(m, "dram_latency_ns") + t_fp * m.sms * 64  # one block's chain, ns
    assert p.terms["block_chain_us"] == pytest.approx(chain / 1000)
    # the chain (28.7 us) outlasts the FP time of all 4096 updates (16.8 us) and the launch
    assert chain > 4096 * t_fp > 1000 * parameter(m, "launch_overhead_us")
    assert p.limiter == "partial wave" and p.limits["fp"] == pytest.approx(1 / t_fp)


def test_a_machine_file_without_the_new_parameters_names_them(tmp_path):
    src = (Path(ws.__file__).parent / "machines" / "V100.toml").read_text()
    old = src.split("\n# --- default timing model")[0]
    path = tmp_path / "old_gpu.toml"
    path.write_text(old)
    k = star(radius=1, shape=(64, 64, 64))
    with pytest.raises(ws.MachineError,
                       match="dram_latency_ns.*overlap_exponent.*launch_overhead_us.*paper"):
        ws.predict(k, str(path), (64, 2, 2))
    assert ws.predict(k, str(path), (64, 2, 2), model="paper").glups > 0


def test_an_unknown_model_is_refused_with_the_list():
    with pytest.raises(ws.LaunchError, match="unknown model 'roofline'.*latency, paper"):
        ws.predict(star(radius=1, shape=(64, 64, 64)), "V100", (64, 2, 2), model="roofline")


def test_a_fixed_block_is_the_only_one_predicted_and_ranked():
    k = dataclasses.replace(star(radius=1, shape=(64, 64, 64)), fixed_block=(64, 1, 1))
    with pytest.raises(ws.LaunchError, match=r"only be launched with the block \(64, 1, 1\)"):
        ws.predict(k, "A100", (32, 2, 1))
    r = ws.rank(k, "A100", jobs=1)
    assert [p.block for p in r.predictions] == [(64, 1, 1)]
    assert any("fixes the block to (64, 1, 1)" in n for n in r.notes)


@pytest.mark.skipif(not dataset_dir("v100").is_dir(),
                    reason="the V100 sets are neither in fits/data/v100 nor in shared/data")
def test_v100_validation_default_model_beats_the_paper_on_glups():
    # The figures of the closing note come from `warpspeed validate --v100`;
    # this guards them: the paper model is ~1.3x too optimistic on the
    # radius-4 star. The default model has no TLB term: its two bz = 64 rows
    # are 1.2-1.5x too fast, which keeps the set's error near 11 % (12 % is
    # the bound this test holds it to).
    from warpspeed.validation.reference import report

    scores = {s.model: s for s in report(datasets=("star3d_r4",))}
    paper, latency = scores["paper"], scores["latency"]
    assert paper.glups_median_ratio > 1.2
    assert 0.9 <= latency.glups_median_ratio <= 1.1
    assert latency.glups_mape < 0.12 < paper.glups_mape
    assert latency.dram_load_mape < 0.08


@pytest.mark.skipif(not dataset_dir("v100").is_dir(),
                    reason="the V100 sets are neither in fits/data/v100 nor in shared/data")
def test_l1_rereads_bring_the_folded_radius_2_dram_volume_within_8_percent():
    # z-folding 4 overflows the L1: its re-reads miss the L2 as well. The
    # paper's memLoadV3 misses those rows by up to 2.4x (~10 % over the set).
    from warpspeed.validation.reference import report

    scores = {s.model: s for s in report(datasets=("star3d_r2",))}
    assert scores["paper"].dram_load_mape > 0.09
    assert scores["latency"].dram_load_mape < 0.08


def test_l1_rereads_miss_the_l2_at_its_capacity_miss_fraction():
    # Hand computation of volumes.level_volumes: the default model adds
    # (L2LoadV2 - L2LoadV1) * m2(min(O2, SMs * L1 / L2)) to memLoadV3 (a re-read's
    # reuse distance is at most what all L1s fetch meanwhile); the paper model
    # does not.
    from warpspeed.model import block_stage
    from warpspeed.volumes.capacity import load_fits
    from warpspeed.volumes.levels import level_volumes
    from warpspeed.volumes.waves import wave_volumes

    k = star(radius=2, shape=(596, 596, 508), fold=(1, 1, 4), alignment=0)
    m = ws.load_machine("V100")
    st = block_stage(k, m, (4, 16, 16))
    wave = wave_volumes(k, st.launch, st.bound, address="linear")
    curves = load_fits(m.fits)
    plain = level_volumes(k, m, st.launch, st.footprint, wave, curves, merged_stores=True)
    more = level_volumes(k, m, st.launch, st.footprint, wave, curves, merged_stores=True,
                         reread_evicts=True)
    v = plain.volumes
    o2 = (wave.new_load + wave.new_store) / m.l2_bytes
    m2 = 0.5 * math.exp(-13 * math.exp(-1.8 * o2))  # MODEL.md section 7, paper constants
    assert plain.hit_fractions["m2"] == pytest.approx(m2)
    bound = 80 * 128 * 1024 / (6 * 2**20)  # V100: 80 SMs of 128 KiB L1, 6 MiB L2
    assert o2 > bound
    m2_reread = 0.5 * math.exp(-13 * math.exp(-1.8 * bound))
    assert more.volumes.dram_load == pytest.approx(
        v.dram_load + (v.l2_load - v.l2_load_v1) * m2_reread)
    assert more.volumes.dram_load > 1.4 * v.dram_load  # the L1 thrashes at this fold
    assert more.volumes.l2_load == v.l2_load and more.volumes.dram_store == v.dram_store
    # without the term, memLoadV4 is the paper's V3 + loadEvicts exactly
    assert v.dram_load_v4 == pytest.approx(v.dram_load + (v.l2_load - v.dram_load_v2) * m2)


def test_l1_rereads_of_narrow_folded_blocks_stay_near_the_h200_counters():
    # fits/measurements/H200-probe.csv and H200-dev.csv (Nsight Compute): the 7-point
    # star folded 1x8x1 in blocks one thread wide reads 14.7-15.1 B per update from
    # DRAM; with the re-reads at the wave's O2 (1.65) the model counted 29.7-30.4
    # (2.0x), with the reuse distance bounded by the L1s (132 x 256 KiB over 30 MiB:
    # 1.1) within 20 %. On the MI210 (104 x 16 KiB over 8 MiB: 0.2) they vanish.
    from warpspeed.measure import generate_variant, read_csv
    from warpspeed.validation.measured_sets import RUNS_DIR

    rows = [r for name in ("H200-probe", "H200-dev") for r in read_csv(RUNS_DIR / f"{name}.csv")
            if r.stencil == "star3d" and r.fold == (1, 8, 1) and r.block[0] == 1 and r.dram_load]
    assert len(rows) == 2
    for r in rows:
        p = ws.predict(generate_variant(r.stencil, r.parameters, r.fold)[0], "H200", r.block)
        assert p.volumes.dram_load_rereads > 0
        assert p.volumes.dram_load == pytest.approx(r.dram_load, rel=0.2)
    mi = ws.predict(star(radius=1, shape=(512, 512, 512), fold=(1, 4, 1)), "MI210", (64, 4, 1))
    assert mi.volumes.dram_load_rereads < 0.01


def test_small_blocks_of_a_copy_are_bound_by_launching_them():
    # MODEL.md §11 "Block launch": the H200 launches one block per 80.8 ns and SM.
    # A copy of 1024 x 512 x 256 doubles in blocks of 64 threads: 131072 x 64 blocks,
    # each SM launches 63550 of them, 5.13 ms; the updates over it are 104 GLup/s
    # (the project's H200 measured 105.5, fits/measurements/H200-drain.csv)
    from stencils.copy3d import kernel as copy

    m = ws.load_machine("H200")
    k = copy(shape=(1024, 512, 256))
    small = ws.predict(k, m, (64, 1, 1))
    blocks = 1024 // 64 * 512 * 256
    expected = 1024 * 512 * 256 / (80.8 * blocks / m.sms)
    assert small.limiter == "block launch"
    assert small.terms["t_block_launch_ns"] == pytest.approx(1 / expected)
    assert small.glups == pytest.approx(expected, rel=0.01)  # plus the launch's microseconds
    assert small.glups == pytest.approx(glups_from_terms(small.terms))
    # blocks of 256 threads launch four times fewer blocks: the DRAM binds again
    assert ws.predict(k, m, (256, 1, 1)).limiter == "dram"
    # a machine file without the figure (V100: no small-kernels table held back) has no limit
    v100 = ws.predict(k, "V100", (64, 1, 1))
    assert v100.terms["t_block_launch_ns"] == 0 and v100.limiter != "block launch"


def test_a_dram_bound_thread_folded_along_x_carries_the_blind_spot_where_it_is_not_charged():
    # MODEL.md §10: lbmpy's D3Q19 folded 2x1x1 ran 20-40 % slower than unfolded on the
    # H200; NVIDIA's HBM charges the warps' split stores (§11), other memory systems
    # have no measurement of it: their predictions say so, folds along y do not
    from stencils.copy3d import kernel as copy

    def notes(fold, machine="A40"):
        p = ws.predict(copy(shape=(512, 256, 256), fold=fold), machine, (128, 2, 1))
        return p.limiter, [n for n in p.notes if "folded along x" in n]

    limiter, found = notes((2, 1, 1))
    assert limiter == "dram" and len(found) == 1 and "2x1x1" in found[0]
    assert notes((1, 2, 1))[1] == [] and notes((1, 1, 1))[1] == []
    limiter, found = notes((2, 1, 1), "H200")
    assert limiter == "dram" and found == []


def test_many_streams_stored_in_rows_that_are_not_whole_lines_pay_their_split_stores():
    # MODEL.md §11: on the H200 rows of 258 elements (one ghost layer around 256) ran a
    # copy of 19 float arrays 1.22x slower than rows of 256 (254 + 2) in 128x2x1 blocks
    # (fits/measurements/H200-pitch.csv); NVIDIA's HBM charges the split store sectors
    # as row visits, for many streams only (a copy's two streams do not conflict)
    from stencils.streams3d import kernel as streams

    def glups(fields, x, machine="H200"):
        k = streams(fields=fields, shape=(x, 64, 64), shift="ghost", precision=32)
        p = ws.predict(k, machine, (128, 2, 1))
        return p.glups * x, p.traits.dram_split_share  # per row: the rows differ by 2 cells

    (split, s_split), (whole, s_whole) = glups(19, 256), glups(19, 254)
    assert s_split > 0 and s_whole == 0
    assert 1.1 < whole / split < 1.35
    assert glups(1, 254)[0] / glups(1, 256)[0] == pytest.approx(1.0, abs=0.03)
    assert glups(19, 254, "A40")[0] / glups(19, 256, "A40")[0] == pytest.approx(1.0, abs=0.03)
    # the terms (and `warpspeed explain`) show the share only where it is charged
    k = streams(fields=19, shape=(256, 64, 64), shift="ghost", precision=32)
    assert ws.predict(k, "H200", (128, 2, 1)).terms["dram_split_share"] == pytest.approx(s_split)
    assert ws.predict(k, "A40", (128, 2, 1)).terms["dram_split_share"] == 0
