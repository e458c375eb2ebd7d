"""AMD GPUs in the model (MODEL.md §15): wavefronts of 64, registers per SIMD,
the L1 line as the sector, the Infinity Cache as a level for data that fits,
HIP kernels from pystencils and lbmpy through extract, predict, rank and the
``create_kernel`` hook, and the notes of a kernel predicted on the other
vendor's GPU. Truth: hand counts of sectors, registers and bytes."""

from __future__ import annotations

import csv
import dataclasses
import math

import pystencils as ps
import pytest
import sympy as sp

import warpspeed as ws
from tests.ranking_order import is_best_first
from tests.slow import slow
from warpspeed.machine import MACHINE_DIR, load_machine
from warpspeed.model import block_stage
from warpspeed.pystencils import create_kernel, extract
from warpspeed.search.rank import rank
from warpspeed.timing.hierarchy import data_bytes
from warpspeed.validation.reference import shared_dir
from warpspeed.volumes.launch import occupancy

AMD = ("MI100", "MI210", "MI250X-GCD", "MI300X", "MI300A", "RX6900XT", "RX7900XTX")


def _cfg(target):
    """A code generator configuration for ``target`` ("CUDA", "HIP"), no GPU needed."""
    return ps.CreateKernelConfig(target=getattr(ps.Target, str(target).split(".")[-1]),
                                 jit=ps.no_jit)


def _star_rule(shape):
    src, dst = ps.fields(f"src, dst: float64[{shape}]", layout="fzyx")
    nb = [(0, 0, 0), (1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
    return [ps.Assignment(dst.center, sp.Rational(1, 7) * sum(src[o] for o in nb))]


def _star(target, n=66):
    return extract(ps.create_kernel(_star_rule(f"{n}, {n}, {n}"), _cfg(target))).kernel


def _d3q19(target, n=66):
    from stencils.lbm_d3q19 import update_rule

    pdfs, tmp = ps.fields(f"pdfs(19), pdfs_tmp(19): float64[{n}, {n}, {n}]", layout="fzyx")
    return extract(ps.create_kernel(update_rule(pdfs, tmp), _cfg(target))).kernel


def _dram(p):
    return p.volumes.dram_load + p.volumes.dram_store


def _machine_file(tmp_path, name, **tables):
    """The machine file ``name`` with the given tables replaced."""
    out, skip = [], 0
    for line in (MACHINE_DIR / f"{name}.toml").read_text().splitlines():
        if line in {f"[{k}]" for k in tables}:
            skip = 2  # the table's value and source lines
            continue
        if skip:
            skip -= 1
            continue
        out.append(line)
    for key, value in tables.items():
        out += [f"[{key}]", f"value = {value}", 'source = "test"']
    p = tmp_path / f"{name}-test.toml"
    p.write_text("\n".join(out) + "\n")
    return p


# ---------------------------------------------------------------- machine keys

def test_nvidia_files_get_the_nvidia_granules_and_no_last_level_cache():
    m = load_machine("A100")
    assert (m.l1_sector_bytes, m.l1_line_bytes, m.simds_per_sm, m.mall_bytes) == (32, 128, 1, 0)


@pytest.mark.parametrize("name", AMD)
def test_amd_files_name_a_source_for_every_hierarchy_key(name):
    m = load_machine(name)
    assert m.vendor == "AMD" and m.simds_per_sm in (2, 4)
    for key in ("simds_per_sm", "l1_sector_bytes", "l1_line_bytes"):
        assert len(m.source(key)) > 20
    assert m.l1_line_bytes % m.l1_sector_bytes == 0


def test_a_sector_larger_than_the_line_is_refused(tmp_path):
    p = _machine_file(tmp_path, "MI210", l1_sector_bytes=128, l1_line_bytes=64)
    with pytest.raises(ws.MachineError, match="l1_sector_bytes.*l1_line_bytes"):
        load_machine(p)


def test_a_last_level_cache_needs_its_bandwidth(tmp_path):
    p = _machine_file(tmp_path, "MI210", mall_bytes=1 << 27)
    with pytest.raises(ws.MachineError, match="mall_bandwidth"):
        load_machine(p)


# ---------------------------------------------------------------- block stage

def _shifted_load(n=4096):
    a = ws.Field("A", shape=(n + 64,), itemsize=8)
    b = ws.Field("B", shape=(n,), itemsize=8)
    return ws.Kernel(loads=[a[ws.tidx + 1]], stores=[b[ws.tidx]], domain=(n, 1, 1))


@pytest.mark.parametrize("name,sector", [("A100", 32), ("MI210", 64), ("RX6900XT", 128)])
def test_l1_load_counts_the_machines_sectors_per_wavefront(name, sector):
    # a wavefront of w lanes reads doubles at bytes 8 .. 8 w + 8: by hand,
    # ceil((8 w + 8) / sector) sectors (the first one starts at 0)
    m = load_machine(name)
    p = ws.predict(_shifted_load(), m, (256, 1, 1), model="paper")
    w = m.warp_size
    hand = math.ceil((8 * w + 8) / sector) * sector / w
    assert p.volumes.l1_load == pytest.approx(hand)


def test_registers_are_counted_per_simd_on_cdna():
    # MI210: 4 SIMDs of 512 VGPRs x 64 lanes; 80 registers round to 80 per lane
    # (granule 8): 512 // 80 = 6 waves per SIMD, 24 per CU; blocks of 5 waves: 4.
    # One pooled file would hold 131072 // (80 * 64) = 25 waves: 5 blocks.
    k = dataclasses.replace(_shifted_load(), registers=80)
    m = load_machine("MI210")
    assert occupancy(k, m, (320, 1, 1)).by_registers == (4 * (512 // 80)) // 5 == 4
    pooled = dataclasses.replace(m, simds_per_sm=1)
    assert occupancy(k, pooled, (320, 1, 1)).by_registers == 131072 // (80 * 64) // 5 == 5


# ---------------------------------------------------------------- Infinity Cache

@pytest.mark.parametrize("model", ["paper", "latency"])
def test_data_that_fits_the_infinity_cache_streams_at_its_bandwidth(model):
    k = _star("HIP", 66)  # 2 x 66^3 doubles = 4.4 MB, inside the 128 MB of RX6900XT
    m = load_machine("RX6900XT")
    assert data_bytes(k) == 2 * 66**3 * 8
    p = ws.predict(k, m, (64, 4, 1), model=model)
    q = ws.predict(k, dataclasses.replace(m, mall_bytes=0), (64, 4, 1), model=model)
    assert any("Infinity Cache" in n for n in p.notes)
    assert not any("Infinity Cache" in n for n in q.notes)
    assert _dram(p) == _dram(q)  # the volume is the same, only its bandwidth differs
    if model == "paper":
        assert p.limits["dram"] / q.limits["dram"] == pytest.approx(
            m.mall_bandwidth / m.dram_bandwidth)
    else:
        assert p.glups > q.glups


def test_data_larger_than_the_infinity_cache_sees_it_as_a_larger_l2():
    k = _star("HIP", 66)
    rx = load_machine("RX6900XT")
    m = dataclasses.replace(rx, mall_bytes=data_bytes(k) - 8192)  # just too small to hold it
    assert m.mall_bytes > m.l2_bytes
    p = ws.predict(k, m, (64, 4, 1), model="paper")
    # truth: the DRAM volume counted with the cache as the L2, the cache's
    # traffic counted with the L2; both stages stream, the slower one sets the rate
    past_cache = ws.predict(k, dataclasses.replace(m, l2_bytes=m.mall_bytes, mall_bytes=0),
                            (64, 4, 1), model="paper")
    past_l2 = ws.predict(k, dataclasses.replace(m, mall_bytes=0), (64, 4, 1), model="paper")
    assert _dram(p) == _dram(past_cache)
    t = max(_dram(past_l2) / m.mall_bandwidth, _dram(past_cache) / m.dram_bandwidth)
    assert p.limits["dram"] == pytest.approx(1 / t)
    assert any("go on to DRAM" in n for n in p.notes)


# ---------------------------------------------------------------- HIP kernels

@pytest.fixture(scope="module")
def hip_star():
    return _star("HIP", 130)


@pytest.fixture(scope="module")
def hip_d3q19():
    return _d3q19("HIP", 66)


def test_hip_kernel_is_extracted_like_the_cuda_one(hip_star):
    cuda = _star("CUDA", 130)
    assert hip_star.target == "HIP" and cuda.target == "CUDA"
    assert hip_star == cuda  # the same accesses, domain and work (the target is not compared)


@pytest.mark.parametrize("machine", ["MI210", "MI100", "RX6900XT", "A100"])
@pytest.mark.parametrize("model", ["paper", "latency"])
def test_hip_star_dram_volume_is_the_hand_count(hip_star, machine, model):
    # by hand: each point of the 130^3 source array is read once, each of the
    # 128^3 interior points written once: 8 B x (130^3 / 128^3 + 1) per update
    hand = 8.0 * (130**3 / 128**3 + 1)
    m = dataclasses.replace(load_machine(machine), mall_bytes=0)
    p = ws.predict(hip_star, m, (64, 4, 1), model=model)
    assert 0.97 <= _dram(p) / hand <= 1.35


@pytest.mark.parametrize("machine", ["MI210", "MI100", "A100"])
@slow
def test_hip_d3q19_dram_volume_is_the_hand_count(hip_d3q19, machine):
    # by hand: 19 pdfs of every cell of the 66^3 array read once, 19 of the
    # 64^3 interior written once, 8 B each
    hand = 19 * 8.0 * (66**3 / 64**3 + 1)
    p = ws.predict(hip_d3q19, machine, (64, 2, 1))
    assert 0.97 <= _dram(p) / hand <= 1.35


def test_vendor_mismatch_is_noted_both_ways(hip_star):
    cuda = dataclasses.replace(hip_star, target="CUDA")
    on = {(k.target, m): ws.predict(k, m, (64, 4, 1), model="paper").notes
          for k in (hip_star, cuda) for m in ("MI210", "A100")}
    assert any("generated for CUDA" in n for n in on[("CUDA", "MI210")])
    assert any("generated for HIP" in n for n in on[("HIP", "A100")])
    assert not any("generated for" in n for n in on[("HIP", "MI210")])
    assert on[("CUDA", "A100")] == ()
    # an AMD prediction says which of the model's terms are NVIDIA's
    assert any("L1 count" in n for n in on[("HIP", "MI210")])


def test_notes_are_in_the_json(hip_star):
    d = ws.predict(hip_star, "MI210", (64, 4, 1)).to_dict()
    assert d["notes"] and all(isinstance(n, str) for n in d["notes"])


def test_rank_on_amd_offers_partial_wavefronts_as_run(hip_star):
    r = rank(hip_star, "MI210", threads=(32, 128), folds=[(1, 1, 1)], jobs=1)
    ranked = {math.prod(p.block): p for p in r.predictions}
    # a 32-thread block issues whole wavefronts of 64 (MODEL.md §15): ranked and noted
    assert 32 in ranked and 128 in ranked
    assert any("whole wavefronts" in n for n in ranked[32].notes)
    assert not any("whole wavefronts" in n for n in ranked[128].notes)
    # NVIDIA ranks 32-thread blocks as before
    nv = rank(hip_star, "A100", threads=(32,), folds=[(1, 1, 1)], jobs=1)
    assert any(math.prod(p.block) == 32 for p in nv.predictions)


@pytest.mark.parametrize("machine", ["MI210", "A100"])
def test_hook_ranks_a_hip_star_like_a_cuda_one(machine):
    kernel, ranking = create_kernel(_star_rule("34, 34, 34"), _cfg(ps.Target.HIP),
                                    machine=machine, threads=256, folds=[(1, 1, 1)], jobs=1)
    assert kernel.target == ps.Target.HIP
    assert ranking and all(math.prod(p.block) == 256 for p in ranking)
    assert is_best_first([p.glups for p in ranking])


@slow
@pytest.mark.parametrize("machine", ["MI210", "A100"])
def test_hook_ranks_an_lbmpy_d3q19_hip_kernel(machine):
    from stencils.lbm_d3q19 import update_rule

    pdfs, tmp = ps.fields("pdfs(19), pdfs_tmp(19): float64[34, 34, 34]", layout="fzyx")
    kernel, ranking = create_kernel(update_rule(pdfs, tmp), _cfg(ps.Target.HIP),
                                    machine=machine, threads=128, folds=[(1, 1, 1)], jobs=1)
    assert kernel.target == ps.Target.HIP and ranking
    m = load_machine(machine)
    assert all(math.prod(p.block) % m.warp_size == 0 for p in ranking)
    hand = 19 * 8.0 * (34**3 / 32**3 + 1)
    best = ranking[0]
    assert 0.97 <= (best.volumes.dram_load + best.volumes.dram_store) / hand <= 1.35


# ---------------------------------------------------------------- L1 against the tables

L1_STRIDES = shared_dir() / "data" / "microbench" / "l1_strides"


def _l1_rows(gpu, machine):
    """(row, line count per 32 lanes, half-warp count per 32 lanes) of every
    block row and every stride row up to 16 of ``l1_strides/<gpu>.csv``: one
    block of 1024 threads, as the benchmark runs it (its cycles are per 32
    lanes: bytes_per_cycle_sm x cycles = 32 x the element size)."""
    m = load_machine(machine)
    out = []
    with (L1_STRIDES / f"{gpu}.csv").open() as fh:
        for r in csv.DictReader(fh):
            size = 4 if r["type"] == "float" else 8
            p, pitch = int(r["stride_or_width"]), int(r["stride_or_pitch"])
            if r["pattern"] == "block":
                a = ws.Field("A", shape=(pitch, 1024 // p + 1), itemsize=size)
                k = ws.Kernel(loads=[a[ws.tidx, ws.tidy]], stores=[], domain=(p, 1024 // p, 1))
                block = (p, 1024 // p, 1)
            elif 1 <= p <= 16:
                a = ws.Field("A", shape=(1024 * p + 1,), itemsize=size)
                k = ws.Kernel(loads=[a[ws.tidx * p]], stores=[], domain=(1024, 1, 1))
                block = (1024, 1, 1)
            else:
                continue
            assert float(r["bytes_per_cycle_sm"]) * float(r["cycles_per_warp_load"]) == \
                pytest.approx(32 * size, rel=0.05)
            st = block_stage(k, m, block)
            halfwarp = block_stage(k, dataclasses.replace(m, l1_model="halfwarp"), block)
            scale = 32 / m.warp_size
            out.append((r, st.l1_cycles * scale, halfwarp.l1_cycles * scale))
    return out


@pytest.mark.skipif(not L1_STRIDES.is_dir(), reason=f"L1 stride tables not found at "
                    f"{L1_STRIDES}: public data kept outside the repository")
@pytest.mark.parametrize("gpu,machine", [("mi210", "MI210"), ("rdna2", "RX6900XT")])
def test_line_count_against_the_l1_stride_micro_benchmark(gpu, machine):
    rows = _l1_rows(gpu, machine)
    measured = [float(r["cycles_per_warp_load"]) for r, _, _ in rows]
    # lanes a power-of-two stride >= 64 B apart fall on lines of one set: there
    # the cache serves exactly one line per clock, as counted
    worst = [(c, lines) for (r, lines, _), c in zip(rows, measured) if r["pattern"] == "stride"
             and int(r["stride_or_width"]) * (4 if r["type"] == "float" else 8) >= 64
             and int(r["stride_or_width"]) & (int(r["stride_or_width"]) - 1) == 0]
    assert len(worst) >= 3
    assert all(c / lines == pytest.approx(1.0, abs=0.05) for c, lines in worst)
    # blocks at least 4 wide (the stencils' shapes): within 0.5-1.9x, and the
    # spread of measured / count narrower than the half-warp count's
    blocks = [(c, lines, half) for (r, lines, half), c in zip(rows, measured)
              if r["pattern"] == "block" and int(r["stride_or_width"]) >= 4]
    assert len(blocks) == 10
    ratio = [c / lines for c, lines, _ in blocks]
    assert 0.5 <= min(ratio) and max(ratio) <= 1.9
    half = [c / h for c, _, h in blocks]
    assert max(ratio) / min(ratio) < max(half) / min(half)


def test_top_k_pruning_holds_when_the_data_fits_the_infinity_cache():
    # the bound of a pruned class must allow the cache's bandwidth: the top 3
    # equal the top 3 of predicting every configuration (brute force)
    k = _star("HIP", 66)
    r = rank(k, "RX6900XT", threads=(256,), folds=[(1, 1, 1)], top=3, jobs=1, model="paper")
    everything = rank(k, "RX6900XT", threads=(256,), folds=[(1, 1, 1)], jobs=1, model="paper")
    truth = sorted((ws.predict(k, "RX6900XT", p.block, model="paper").glups
                    for p in everything.predictions), reverse=True)[:3]
    assert [p.glups for p in r.predictions] == pytest.approx(truth)
    assert any("Infinity Cache" in n for n in r.predictions[0].notes)


def test_one_row_cache_bound_blocks_on_rdna_carry_the_measured_blind_spot():
    """MODEL.md §10: the note appears for a one-row block whose time the L1
    or L2 sets on RDNA, and nowhere else: not for two rows, not for a
    DRAM-bound one-row launch (FluidX3D's 64x1x1), not on CDNA or NVIDIA."""
    from stencils import convolution2d, lbm_fluidx3d

    conv = convolution2d.kernel(tile_x=1, tile_y=4)

    def flagged(kernel, machine, block):
        p = ws.predict(kernel, machine, block=block)
        return any("one row on RDNA" in n for n in p.notes), p.limiter

    assert flagged(conv, "W7800", (256, 1, 1)) == (True, "l1")
    assert flagged(conv, "W7800", (128, 2, 1))[0] is False
    assert flagged(conv, "MI210", (256, 1, 1))[0] is False
    assert flagged(conv, "A100", (256, 1, 1))[0] is False
    assert flagged(lbm_fluidx3d.kernel(), "W7800", (64, 1, 1)) == (False, "dram")
