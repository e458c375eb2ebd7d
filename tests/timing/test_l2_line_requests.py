"""Hopper's L2 serves each L1 miss as a request of a whole line (MODEL.md
§11, "L2"; the family's ``l2_line_requests``): the line ratio of a block by
hand, and the L2 time it scales on Hopper only."""

import pytest

import warpspeed as ws


def _copy(machine, block):
    # doubles, rows of 520 B: a block one thread wide loads one sector of each line
    f = ws.Field("f", shape=(65, 256, 256), itemsize=8)
    g = ws.Field("g", shape=(65, 256, 256), itemsize=8)
    k = ws.Kernel(loads=[f[ws.tidx, ws.tidy, ws.tidz]], stores=[g[ws.tidx, ws.tidy, ws.tidz]],
                  domain=(65, 256, 256))
    return ws.predict(k, machine, block)


def test_a_block_one_double_wide_loads_one_sector_per_line():
    p = _copy("H200", (1, 32, 8))
    # 256 lines of 128 B for 256 sectors of 32 B: four times the bytes
    assert p.traits.l2_line_ratio == pytest.approx(4.0)
    assert p.terms["l2_line_ratio"] == pytest.approx(4.0)
    v = p.volumes
    l2_bw = p.terms["l2_bandwidth_achieved"]
    assert p.terms["t_l2_ns"] == pytest.approx(4.0 * (v.l2_load + v.l2_store) / l2_bw)


def test_wide_blocks_and_other_families_pay_sectors():
    wide = _copy("H200", (64, 4, 1))
    # 65 doubles per row: a 64-wide row of 512 B touches 5 lines for 17 sectors at most
    assert 1.0 <= wide.traits.l2_line_ratio < 1.3
    a100 = _copy("A100", (1, 32, 8))
    assert a100.traits.l2_line_ratio == pytest.approx(4.0)  # the same accesses ...
    assert a100.terms["l2_line_ratio"] == 1.0               # ... served as sectors
    v = a100.volumes
    assert a100.terms["t_l2_ns"] == pytest.approx(
        (v.l2_load + v.l2_store) / a100.terms["l2_bandwidth_achieved"])


def test_the_line_ratio_of_a_row_and_a_column_by_hand():
    # doubles, base on a 128 B boundary: a row of 128 threads reads 1 KiB,
    # 8 lines of 4 sectors (ratio 1); a column of 128 threads 4 KiB apart
    # reads one sector in each of 128 lines (ratio 4)
    a = ws.Field("a", shape=(512, 512), itemsize=8)
    b = ws.Field("b", shape=(512, 512), itemsize=8)
    k = ws.Kernel(loads=[a[ws.tidx, ws.tidy]], stores=[b[ws.tidx, ws.tidy]], domain=(512, 512))
    assert ws.predict(k, "H200", (128, 1, 1)).traits.l2_line_ratio == pytest.approx(1.0)
    assert ws.predict(k, "H200", (1, 128, 1)).traits.l2_line_ratio == pytest.approx(4.0)


def test_explain_says_when_the_l2_serves_whole_lines():
    from warpspeed.reports.advice import advise, explanation_lines

    def text(machine: str) -> str:
        p = _copy(machine, (1, 32, 8))
        return " ".join(explanation_lines(p, advise(p, ws.load_machine(machine))))

    assert "whole 128 B lines: this block's misses use 1.0 of 4 sectors each, x4.00" in text("H200")
    assert "whole 128 B lines" not in text("A100")
