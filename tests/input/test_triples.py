"""One reader of x, y, z triples and integer lists (``warpspeed.input.triples``)
for the command line, the web calculator, measurement files, Nsight Compute
output and the pystencils front end: what it accepts, what it refuses and
how it says so, and that each front end reads through it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from warpspeed.errors import KernelError
from warpspeed.input.stencil_spec import UsageError
from warpspeed.input.triples import ints_of, parse_ints, parse_triple, triple_of, triple_or_none

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize("text", ["256,1,2", "256x1x2", " 256, 1, 2 ", "256 1 2", "(256, 1, 2)",
                                  "[256,1,2]", "256 x 1 x 2"])
def test_every_spelling_of_a_triple_reads_the_same(text):
    assert parse_triple(text, "--block") == (256, 1, 2)


@pytest.mark.parametrize("text, message", [
    ("32,4", "--block must be three integers X,Y,Z like 256,1,2, got '32,4'"),
    ("1,2,3,4", "--block must be three integers X,Y,Z like 256,1,2, got '1,2,3,4'"),
    ("256;1;2", "--block must be three integers X,Y,Z like 256,1,2, got '256;1;2'"),
    ("1,,2", "--block must be three integers X,Y,Z like 256,1,2, got '1,,2'"),
    ("", "--block must be three integers X,Y,Z like 256,1,2, got ''"),
    ("2.5,1,1", "--block must be three integers X,Y,Z like 256,1,2, got '2.5,1,1'"),
    ("1" * 14 + ",1,1", "--block must be three integers X,Y,Z like 256,1,2"),
    ("0,1,1", "--block must be positive integers, got '0,1,1'"),
    ("-32,1,1", "--block must be positive integers, got '-32,1,1'"),
])
def test_a_bad_triple_is_refused_in_one_line_naming_the_input(text, message):
    with pytest.raises(UsageError) as info:
        parse_triple(text, "--block", error=UsageError)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_counts_padding_and_bounds():
    assert parse_triple("32,8", "fold", pad=True) == (32, 8, 1)
    assert parse_triple("4", "fold", pad=True) == (4, 1, 1)
    assert parse_ints("7", "fp", count=1, low=0, high=10**6) == (7,)
    assert parse_ints("0", "fp", count=1, low=0, high=10**6) == (0,)
    assert parse_ints("64,32,16,8", "shape") == (64, 32, 16, 8)
    with pytest.raises(ValueError, match="the fold must lie between 1 and 16, got '1,1,17'"):
        parse_triple("1,1,17", "the fold", high=16)
    with pytest.raises(ValueError, match="fp must be an integer, got 'lots'"):
        parse_ints("lots", "fp", count=1, low=0)


def test_nsight_compute_cells_read_as_triples_or_none():
    assert triple_or_none("(32, 8, 4)") == (32, 8, 4)
    assert [triple_or_none(t) for t in ("n/a", "", None, "(32, 8)")] == [None] * 4


def test_sequences_must_hold_integers_never_rounded():
    assert triple_of((2,), "grid_points") == (2, 1, 1)
    assert triple_of(np.array([1, 4]), "grid_points") == (1, 4, 1)
    assert triple_of([2.0, 1], "fold") == (2, 1, 1)
    assert ints_of((66, 34, 34, 19), "shape") == (66, 34, 34, 19)
    for bad in [(2.5,), "2", ("2", 1), (1, 2, 3, 4), (), None, 3]:
        with pytest.raises(KernelError, match=r"^fold must be one to three integers \(x, y, z\)"):
            triple_of(bad, "fold", error=KernelError)
    with pytest.raises(KernelError, match=r"^fold must be positive integers, got \(1, 0\)"):
        triple_of((1, 0), "fold", error=KernelError)


def test_each_front_end_reads_through_it():
    """The command line, the measurement files, the web form, the fold of
    the pystencils front end and Nsight Compute's cells: one grammar, each
    front end's error class."""
    from warpspeed.measure import MeasurementError
    from warpspeed.measure import parse_triple as measure_triple
    from warpspeed.measure.ncu import parse_csv
    from warpspeed.pystencils import fold_assignments
    from warpspeed.web.state import FieldError
    from warpspeed.web.state import parse_ints as web_ints

    assert measure_triple("(32, 8)") == (32, 8, 1)
    with pytest.raises(MeasurementError, match="block must be positive integers"):
        measure_triple("0,1,1", "block")
    with pytest.raises(FieldError) as info:
        web_ints("256 1 x", "block", "the block size", 3)
    assert info.value.field == "block"
    assert str(info.value) == "the block size must be three integers X,Y,Z like 256,1,2, got " \
                              "'256 1 x'"
    with pytest.raises(KernelError, match="fold must be one to three integers"):
        fold_assignments([], (1, 2, 1, 1))
    launch = parse_csv((DATA / "ncu_raw_fixture.csv").read_text())[0]
    assert (launch.block, launch.grid) == ((128, 2, 2), (4, 64, 128))  # "(128, 2, 2)" cells
