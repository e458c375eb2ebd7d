"""Built-in regression kernels: the default model never departs silently
from the paper's roofline. The bounds and why they hold are in
:mod:`warpspeed.validation.regression` (MODEL.md §11)."""

import pytest

import warpspeed as ws
from stencils import lbm_d3q19
from warpspeed.timing import parameter
from warpspeed.validation.regression import BAND, CASES, TINY, run


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_default_model_stays_within_the_explained_band_of_the_paper(case):
    o = run(case)
    assert o.waves >= 10, "the band holds for grids of many waves"
    assert BAND[0] <= o.ratio <= BAND[1], (o.name, o.default_glups, o.paper_glups)


def test_lbm_d3q19_runs_close_to_the_calibrated_copy_bandwidth():
    # 19 loads and 19 stores of 4 B per update: a memory-bound kernel with
    # little core work gets within 15 % of the copy stream's bandwidth when its
    # blocks visit the DRAM rows in long runs of whole lines (254 cells and a
    # ghost layer: rows of 256 floats; 256 wide: 5 % of HBM's activation gap,
    # the rest Little's law short of the plateau); blocks 8 wide visit each row
    # for 40 B and pay the gap in full; rows of 258 floats split every warp's
    # stores, a row visit each on NVIDIA's HBM (MODEL.md §11): the H200 ran
    # 15.2 against 22.1 GLup/s (fits/measurements/H200-pitch.csv; 128x2x1
    # blocks), the term charges 256-wide blocks 5-15 %
    for machine in ("V100", "A100", "A100-80GB", "H100", "H200", "GH200"):
        m = ws.load_machine(machine)
        k = lbm_d3q19.kernel(shape=(254, 256, 256), precision=32)
        p = ws.predict(k, m, (256, 1, 1))
        stream = parameter(m, "dram_bw_copy") / (p.volumes.dram_load + p.volumes.dram_store)
        assert 0.85 * stream <= p.glups <= 1.02 * stream, machine
        assert ws.predict(k, m, (8, 32, 1)).glups < 0.8 * p.glups, machine
        split = ws.predict(lbm_d3q19.kernel(precision=32), m, (256, 1, 1))
        assert split.traits.dram_split_share > 0 and 0.6 * p.glups < split.glups < 0.95 * p.glups


@pytest.mark.parametrize("case", TINY, ids=[c.name for c in TINY])
def test_tiny_grids_come_within_1_5x_of_one_launch(case):
    o = run(case)
    assert o.launch_bound_glups / 1.5 <= o.default_glups <= o.launch_bound_glups
