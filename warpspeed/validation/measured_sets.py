"""The project's own measurements as development sets (MODEL.md §9): the
H200 run of the shipped stencils (``fits/data/h200``, read with
:func:`warpspeed.measure.read_csv`), one set per ``set NAME`` of its ``note``
column; the project's second H200 run (``fits/measurements/H200-new.csv``:
other stencils, float and folds) and its third (:data:`H200_THIRD`),
reported and never fitted, except the drain set's four padded copies, which
fix the block drain's stagger (MODEL.md §11).

A row's kernel is generated again from its stencil, parameters and fold, as
the measurement harness generated it (:func:`warpspeed.measure.generate_variant`),
with the register count of the compiled kernel: the ``registers`` column,
read by Nsight Compute on one row of each stencil and fold (the same binary
ran on the variant's other rows). A variant without a count keeps the
kernel's own.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..measure import Measurement, read_csv
from .reference import MEASURED, ReferenceDataError, Row, dataset_dir

#: The folder of the H200 run (:func:`warpspeed.validation.reference.dataset_dir`).
H200 = "h200"
#: The sets of the H200 run, in the order of its README.
H200_SETS = ("star_r1_512", "star_r4", "lbm_d3q19_f64", "layer_r1_2048xNYx32", "copy_size")
#: The project's second H200 run, a file of ``fits/measurements`` (a clone has it).
H200_SECOND = "H200-new"
#: Its sets: the stencils and variants the first run lacks.
H200_SECOND_SETS = ("star_r2", "box3d", "star2d", "lbm_d3q19_f32", "allen_cahn", "copy_design")
#: The project's third H200 run, three files of ``fits/measurements`` (a clone
#: has them) and their sets: one kernel at several occupancies (blocks padded
#: with shared memory they never touch), lbmpy's D3Q19 at other sizes and
#: folds, copies in blocks of 64-1024 threads, and stars and the box in small
#: blocks and x-folds predicted before they were measured
#: (``fits/heldout_predictions.csv``), copies of 1-19 arrays at once, the
#: D3Q19's halves, shifted copies and rows of whole lines or not (each with
#: the model's predictions committed before the run, ``fits/*_predictions.csv``).
H200_THIRD: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("H200-occupancy", ("occ_lbm_f64", "occ_lbm_f32", "occ_copy", "occ_box", "occ_star_r2")),
    ("H200-lbm_sizes", ("lbm_sizes_f64", "lbm_sizes_f32", "lbm_folds_f64", "lbm_folds_f32")),
    ("H200-drain", ("drain_copy",)),
    ("H200-heldout", ("heldout_small_r1", "heldout_small_r4", "heldout_small_box",
                      "heldout_xfold_r1")),
    ("H200-streams", ("streams_f64", "streams_f32")),
    ("H200-lbm_parts", ("lbm_parts_f64", "lbm_parts_f32")),
    ("H200-shifts", ("shifts_f64", "shifts_f32")),
    ("H200-pitch", ("pitch_f64", "pitch_f32", "pitch_lbm_f64", "pitch_lbm_f32")),
)
#: The project's own measurement runs (``fits/measurements``, MODEL.md §9).
RUNS_DIR = Path(__file__).resolve().parents[2] / "fits" / "measurements"


def set_of(m: Measurement) -> str:
    """The set a row belongs to: the ``NAME`` of its note's ``set NAME``
    (one word; what follows it describes the row, as ``at most 2 blocks/SM``)."""
    head = m.note.split(";")[0].strip()
    words = head.removeprefix("set ").split() if head.startswith("set ") else []
    return words[0] if words else ""


@cache
def _measurements(folder: str) -> tuple[Measurement, ...]:
    """The rows of run ``folder``: a file of :data:`RUNS_DIR`, or a data set's
    ``measurements.csv``."""
    own = RUNS_DIR / f"{folder}.csv"
    path = own if own.is_file() else dataset_dir(folder) / "measurements.csv"
    if not path.is_file():
        from .provenance import missing_message

        raise ReferenceDataError(missing_message(str(path)))
    return tuple(read_csv(path))


def registers(folder: str = H200) -> dict[tuple[str, str, tuple[int, int, int]], int]:
    """The compiled kernel's registers per stencil, parameters and fold."""
    return {(m.stencil, m.params, m.fold): int(m.registers)
            for m in _measurements(folder) if m.registers}


def measured_rows(name: str, folder: str = H200) -> list[Row]:
    """The rows of set ``name`` of a measurement run, as development rows (the
    register count of the variant's compiled kernel among the parameters)."""
    regs = registers(folder)
    out = []
    for m in _measurements(folder):
        if set_of(m) != name:
            continue
        params: dict[str, object] = dict(m.parameters)
        if (n := regs.get((m.stencil, m.params, m.fold))) is not None:
            params["registers"] = n
        out.append(Row(f"{folder}_{name}", MEASURED + m.stencil,
                       tuple(sorted((k, _frozen(v)) for k, v in params.items())),
                       m.block, m.fold, m.dram_load, m.l2_load, m.glups))
    if not out:
        raise ReferenceDataError(f"the {folder} measurements have no set {name!r}")
    return out


def _frozen(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


__all__ = ["H200", "H200_SECOND", "H200_SECOND_SETS", "H200_SETS", "H200_THIRD", "RUNS_DIR",
           "measured_rows", "registers", "set_of"]
