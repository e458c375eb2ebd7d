"""The development data shipped in ``fits/data`` (MODEL.md §9, "Shipped
copies"): a clone without ``../shared`` validates on them, they are the
shared copies byte for byte, and each folder keeps its source note."""

from __future__ import annotations

from pathlib import Path

import pytest

from warpspeed.validation import reference
from warpspeed.validation.reference import SHIPPED, dataset_dir, shared_dir

ROOT = Path(__file__).resolve().parents[2]
OWN = ROOT / "fits" / "data"


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_folder_keeps_its_source_note(name: str) -> None:
    note = (OWN / name / "README.md").read_text()
    assert "may ship" in note or "may be shipped" in note  # the permission it was copied under
    assert any(p.suffix == ".csv" for p in (OWN / name).iterdir())


@pytest.mark.skipif(not (shared_dir() / "data").is_dir(),
                    reason="no shared/ folder beside the repository to compare the copies with")
@pytest.mark.parametrize("name", SHIPPED)
def test_the_copies_equal_the_shared_data(name: str) -> None:
    for p in (OWN / name).iterdir():
        assert p.read_bytes() == (shared_dir() / "data" / name / p.name).read_bytes(), p


def test_a_clone_without_shared_reads_the_shipped_copies(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("WARPSPEED_SHARED", raising=False)
    monkeypatch.setattr(reference, "shared_dir", lambda: tmp_path / "no-shared")
    for name in SHIPPED:
        assert dataset_dir(name) == OWN / name
    assert len(reference.lbm_rows("W7800")) == 2
    assert len(reference.convolution_rows("RTXA4000")) > 900
    assert len(reference.rows("box2d_r7")) == 81  # both runs of the series
    # the micro-benchmark tables are not shipped: they stay under shared/
    assert dataset_dir("microbench") == tmp_path / "no-shared" / "data" / "microbench"


def test_warpspeed_shared_takes_precedence(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("WARPSPEED_SHARED", str(tmp_path))
    assert dataset_dir("lbm") == tmp_path / "data" / "lbm"
