"""Memory-concurrency physics (warpspeed.timing.memory) and its calibration
on the public stream tables (fits/memory.toml, fits/calibrate_memory.py)."""

from __future__ import annotations

import csv
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from warpspeed.timing.memory import (
    STORE_WEIGHT,
    MemoryParams,
    achieved_bandwidth,
    loaded_latency_ns,
    residence_time_ns,
    saturated_bandwidth,
)

REPO = Path(__file__).resolve().parents[2]
MICROBENCH = Path(__file__).resolve().parents[3] / "shared" / "data" / "microbench"
FITS = REPO / "fits" / "memory.toml"

P = MemoryParams(dram_latency_ns=400.0, l2_latency_ns=150.0, dram_bw_read=1500.0,
                 dram_bw_copy=1350.0, dram_bw_write=1500.0, shape=0.5, turnover_ns=250.0)


# ------------------------------------------------------------------ physics

def test_few_bytes_in_flight_move_at_bytes_over_turnover_plus_latency() -> None:
    # 100 B in flight, a thread with loads resides 250 + 400 = 650 ns: 0.153846 GB/s
    assert achieved_bandwidth(P, 100.0, 1.0) == pytest.approx(100.0 / 650.0, rel=1e-4)
    assert achieved_bandwidth(P, 100.0, 0.5) == pytest.approx(100.0 / 650.0, rel=1e-4)


def test_stores_only_never_wait_for_dram_latency() -> None:
    # a store is posted: 100 B of stores turn over every 250 ns, 0.4 GB/s
    assert achieved_bandwidth(P, 100.0, 0.0) == pytest.approx(100.0 / 250.0, rel=1e-4)


def test_latency_without_turnover_is_plain_littles_law() -> None:
    q = MemoryParams(400.0, 150.0, 1500.0, 1350.0, 1500.0, shape=0.0)
    assert achieved_bandwidth(q, 1000.0, 1.0) == pytest.approx(2.5, rel=1e-6)
    assert achieved_bandwidth(q, 1000.0, 0.0) == q.dram_bw_write


def test_no_bytes_in_flight_move_nothing() -> None:
    assert achieved_bandwidth(P, 0.0, 0.7) == 0.0


@pytest.mark.parametrize("f", [0.0, 0.25, 0.5, 2 / 3, 1.0])
def test_many_bytes_in_flight_saturate_at_the_mix_plateau(f: float) -> None:
    sat = saturated_bandwidth(P, f)
    bw = achieved_bandwidth(P, 1e12, f)
    assert bw <= sat
    assert bw == pytest.approx(sat, rel=1e-3)


@pytest.mark.parametrize("f", [0.0, 0.3, 0.5, 0.8, 1.0])
def test_bandwidth_rises_monotonically_with_bytes_in_flight(f: float) -> None:
    # strictly rising while the steps are resolvable in double precision,
    # never falling (beyond rounding) nor passing the plateau on the way up
    bws = [achieved_bandwidth(P, c, f) for c in np.logspace(1, 7, 200)]
    assert all(b2 > b1 for b1, b2 in zip(bws, bws[1:]))
    bws = [achieved_bandwidth(P, c, f) for c in np.logspace(7, 12, 100)]
    assert all(b2 >= b1 * (1 - 1e-14) for b1, b2 in zip(bws, bws[1:]))
    assert max(bws) <= saturated_bandwidth(P, f)


def test_bandwidth_never_exceeds_the_unloaded_littles_law_line() -> None:
    for c in np.logspace(2, 8, 50):
        assert achieved_bandwidth(P, c, 0.6) <= c / (P.turnover_ns + P.dram_latency_ns) + 1e-12


def test_mix_interpolation_returns_the_measured_plateaus_at_its_end_points() -> None:
    assert saturated_bandwidth(P, 0.0) == pytest.approx(P.dram_bw_write, rel=1e-12)
    assert saturated_bandwidth(P, 0.5) == pytest.approx(P.dram_bw_copy, rel=1e-12)
    assert saturated_bandwidth(P, 1.0) == pytest.approx(P.dram_bw_read, rel=1e-12)


def test_mix_interpolation_is_linear_in_busy_time_per_byte() -> None:
    # f = 3/4: half-way between copy and read in 1/S
    expected = 1.0 / (0.5 / P.dram_bw_copy + 0.5 / P.dram_bw_read)
    assert saturated_bandwidth(P, 0.75) == pytest.approx(expected, rel=1e-12)
    expected = 1.0 / (0.5 / P.dram_bw_write + 0.5 / P.dram_bw_copy)
    assert saturated_bandwidth(P, 0.25) == pytest.approx(expected, rel=1e-12)


def test_stores_raise_the_loaded_latency_more_than_loads() -> None:
    assert loaded_latency_ns(P, 0.0, 0.5) == P.dram_latency_ns
    read = loaded_latency_ns(P, 0.5, 1.0) - P.dram_latency_ns
    copy = loaded_latency_ns(P, 0.5, 0.5) - P.dram_latency_ns
    assert read == pytest.approx(P.dram_latency_ns * P.shape * 0.5)
    assert copy / read == pytest.approx((0.5 + STORE_WEIGHT * 0.5) / 1.0)


def test_residence_solves_littles_law_at_the_achieved_bandwidth() -> None:
    c, f = 3e5, 2 / 3
    bw = achieved_bandwidth(P, c, f)
    u = bw / saturated_bandwidth(P, f)
    assert bw * residence_time_ns(P, u, f) == pytest.approx(c, rel=1e-9)
    assert residence_time_ns(P, 1.0, f) == math.inf


def test_the_root_is_the_one_scipy_brentq_finds() -> None:
    """achieved_bandwidth solves Little's law by interval halving in plain
    Python (a first prediction imports no scipy.optimize); scipy's brentq on
    the same equation is the independent check. They agree to about 1e-12:
    near the root the equation's two sides, up to 1e9 B, cancel to their
    rounding noise, which bounds either method (1e-10 asserted)."""
    from scipy.optimize import brentq

    from warpspeed.timing import memory

    rng = np.random.default_rng(7)
    n = memory.WALL_EXPONENT
    for _ in range(200):
        c, f = 10.0 ** rng.uniform(0, 9), rng.uniform(0, 1)
        got = achieved_bandwidth(P, c, f)
        sat = saturated_bandwidth(P, f)

        def excess(u: float, c: float = c, f: float = f, sat: float = sat) -> float:
            return u * sat * memory._unwalled(P, u, f) - c * (1.0 - u**n) ** (1.0 / n)

        hi = min(1.0, c / (sat * memory._unwalled(P, 0.0, f)))
        root = brentq(excess, 0.0, hi, xtol=1e-15 * hi, rtol=1e-15) if excess(hi) > 0 else hi
        want = root * sat
        assert got == pytest.approx(want, rel=1e-10, abs=0.0)


@pytest.mark.parametrize("f", [-0.1, 1.5, float("nan")])
def test_load_fraction_outside_unit_interval_is_rejected(f: float) -> None:
    with pytest.raises(ValueError, match="load_fraction must lie in"):
        achieved_bandwidth(P, 1e5, f)
    with pytest.raises(ValueError, match="load_fraction must lie in"):
        saturated_bandwidth(P, f)


@pytest.mark.parametrize("c", [-1.0, float("nan"), float("inf")])
def test_negative_or_non_finite_bytes_in_flight_are_rejected(c: float) -> None:
    with pytest.raises(ValueError, match="bytes_in_flight must be"):
        achieved_bandwidth(P, c, 0.5)


def test_utilisation_outside_unit_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match="utilisation must lie in"):
        residence_time_ns(P, 1.2, 0.5)


@pytest.mark.parametrize("field,value", [("dram_latency_ns", 0.0), ("dram_bw_copy", -5.0),
                                         ("shape", -0.1), ("turnover_ns", float("nan"))])
def test_unphysical_parameters_are_rejected(field: str, value: float) -> None:
    kwargs = {**P.__dict__, field: value}
    with pytest.raises(ValueError, match=f"MemoryParams.{field}"):
        MemoryParams(**kwargs)


# -------------------------------------------------------------- calibration

#: DRAM doubles loaded and stored per thread of each stream kernel
#: (gpu-stream/main.cu: one element per thread, no loop).
KERNELS = {"init": (0, 1), "read": (1, 0), "scale": (1, 1), "triad": (2, 1)}
#: The benchmark runs two blocks per SM; the CSV column counts one.
BLOCKS_PER_SM = 2
#: Points known to miss 10 %, with the bound they stay under and why.
KNOWN_MISSES: dict[tuple[str, str], tuple[set[int], float, str]] = {
    ("a100_40", "init"): ({32}, 0.30, "A100 store-only kernel with one-warp blocks runs ~25 % "
                          "below the turnover of every larger block: not modelled"),
    ("a100_80", "init"): ({32}, 0.25, "same A100 one-warp-block anomaly"),
    ("h200", "triad"): ({224, 256, 288, 320}, 0.12, "no H200 latency table (H100 PCIe "
                        "latency used) and no saturated copy plateau in the H200 table"),
}


def _calibration() -> dict:
    if not (MICROBENCH / "stream").is_dir():
        pytest.skip(f"micro-benchmark data not found at {MICROBENCH} (shared/data/microbench "
                    "next to the repository)")
    return tomllib.loads(FITS.read_text())


def _params(entry: dict) -> MemoryParams:
    names = ("dram_latency_ns", "l2_latency_ns", "dram_bw_read", "dram_bw_copy",
             "dram_bw_write", "shape", "turnover_ns")
    return MemoryParams(**{n: float(entry[n]["value"]) for n in names})


def _stream(gpu: str) -> list[dict[str, str]]:
    with (MICROBENCH / "stream" / f"{gpu}.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


GPUS = ("v100", "a100_40", "a100_80", "h100_pcie", "h200")


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_calibrated_parameters_reproduce_the_stream_tables_within_ten_percent(
    gpu: str, kernel: str
) -> None:
    cal = _calibration()
    p = _params(cal[gpu])
    loads, stores = KERNELS[kernel]
    f = loads / (loads + stores)
    known, bound, why = KNOWN_MISSES.get((gpu, kernel), (set(), 0.10, ""))
    errors = {}
    for row in _stream(gpu):
        threads = BLOCKS_PER_SM * int(row["threads_in_flight"])
        model = achieved_bandwidth(p, threads * 8.0 * (loads + stores), f)
        errors[int(row["block_size"])] = model / float(row[f"{kernel}_GBs"]) - 1.0
    over = {b for b, e in errors.items() if abs(e) > 0.10}
    assert over <= known, f"{gpu} {kernel}: beyond 10 % at block sizes {sorted(over - known)}"
    assert max(abs(e) for e in errors.values()) <= bound, why
    recorded = cal[gpu]["errors"][kernel]
    assert recorded["max_rel"] == pytest.approx(max(abs(e) for e in errors.values()), abs=1e-5)


@pytest.mark.parametrize("gpu", GPUS)
def test_calibrated_latencies_are_pointer_chasing_plateaus_not_fits(gpu: str) -> None:
    cal = _calibration()[gpu]
    for name in ("dram_latency_ns", "l2_latency_ns"):
        assert "latency/" in cal[name]["source"] and "fitted" not in cal[name]["source"].replace(
            "not fitted", "")
    assert cal["l2_latency_ns"]["value"] < cal["dram_latency_ns"]["value"]
    assert "fitted" in cal["shape"]["source"]
