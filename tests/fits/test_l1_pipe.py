"""The public L1 stride benchmarks behind the warp-pipe count
(fits/l1_pipe.py; the count is warpspeed/volumes/l1.py, MODEL.md §4): the
wavefront counter agrees with the count of the addresses, and the tag slope
of each GPU's table is its fit (the H200's is the Hopper family's)."""

from pathlib import Path

import pytest

import warpspeed as ws
from tests.fits.test_fits_scripts import script

PIPE = script("l1_pipe")
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"


@pytest.mark.skipif(not (SHARED / "microbench" / "l1_strides").is_dir(),
                    reason="shared/data/microbench not beside the repo")
def test_wavefronts_match_the_a100_counter_and_the_tag_slope_its_fit():
    data = PIPE.rows("a100")
    assert len(data) > 100
    assert all(r["wf"] == round(r["lsu"]) for r in data)
    assert PIPE.fit_slope(data) == pytest.approx(PIPE.TAG_CYCLES_PER_LINE, abs=0.01)


@pytest.mark.skipif(not (SHARED / "microbench" / "l1_strides").is_dir(),
                    reason="shared/data/microbench not beside the repo")
def test_the_hopper_family_carries_the_h200_tables_slope():
    slope = PIPE.fit_slope(PIPE.rows("h200"))
    assert ws.load_machine("H200").family.l1_tag_cycles_per_line == pytest.approx(slope, abs=5e-4)
