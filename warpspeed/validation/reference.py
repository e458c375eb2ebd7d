"""The public V100 measurements of the paper's authors as validation data,
and the comparison of both timing models with them (issue "beyond the
paper", MODEL.md §9 for what "measured" means).

The data live in ``shared/data/v100/`` beside the repository (see its
README: recovered from printed notebook outputs of te42kyfo/warpspeed,
commits c85e496 and 7e804a7). Three sets:

* ``star3d_r4``: pystencils 25-point star, 640x512x512 with 4 ghost layers,
  1024-thread blocks: DRAM and L2 volumes and GLup/s. Rows with ``bz = 128``
  exceed CUDA's limit of 64 and are left out (what ran is unknown).
* ``star3d_r2``: 13-point star, 600x600x512 with 2 ghost layers, z folding
  1, 2 and 4: volumes only.
* ``box2d_r7``: hand-written 225-point 2D box, 15000 x 15000: GLup/s only,
  two runs of the same series (their spread is the measurement noise).

Kernels are built as the measured ones ran: element 0 of every field on a
128 B boundary (cupy allocations), 32 registers per thread (unknown; the
paper's assumption). The stars are the hand-written twin of the pystencils
kernel (``stencils.star3d_by_hand``; the tests show both predict alike).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import WarpspeedError
from ..input.kernel import Kernel
from ..search.ties import first_choice
from ..timing.kernel_fit import rank_correlation

if TYPE_CHECKING:
    from ..machine import Machine
    from ..model import BlockStage, Prediction


class ReferenceDataError(WarpspeedError, FileNotFoundError):
    """The shared reference data cannot be found or read."""


def shared_dir() -> Path:
    """The project's ``shared`` folder beside the repository, or the folder
    ``WARPSPEED_SHARED`` names."""
    import os

    env = os.environ.get("WARPSPEED_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared"


#: The development data sets the project ships a copy of (``fits/data``, each with
#: its source note; their READMEs in ``shared/data`` allow it).
SHIPPED = ("v100", "a100", "crossgpu", "lbm", "h200")


def dataset_dir(name: str) -> Path:
    """The folder of data set ``name`` (``v100``, ``a100``, ``crossgpu``,
    ``lbm``, ``microbench``): under ``WARPSPEED_SHARED`` when it is set, else
    the project's copy in ``fits/data`` (a clone has it), else
    ``shared/data`` beside the repository."""
    import os

    if not os.environ.get("WARPSPEED_SHARED") and name in SHIPPED:
        own = Path(__file__).resolve().parents[2] / "fits" / "data" / name
        if own.is_dir():
            return own
    return shared_dir() / "data" / name


def data_dir() -> Path:
    """The V100 data (:func:`dataset_dir`)."""
    return dataset_dir("v100")


@dataclass(frozen=True)
class Row:
    """One measured configuration."""

    dataset: str
    kernel: str
    params: tuple[tuple[str, object], ...]
    block: tuple[int, int, int]
    fold: tuple[int, int, int]
    dram_load: float | None
    l2_load: float | None
    glups: float | None

    def timed_glups(self) -> float:
        """The measured GLup/s of a timed row (the development sets keep only
        those)."""
        if self.glups is None:
            raise ReferenceDataError(f"row {self.block} of {self.dataset} has no measured "
                                     "GLup/s")
        return self.glups


class DevelopmentSet(Protocol):
    """A development set as the reports read it
    (:class:`warpspeed.validation.transfer.DevSet`): its name, its GPU and its
    rows."""

    @property
    def name(self) -> str: ...

    @property
    def machine(self) -> str: ...

    def load(self) -> list[Row]: ...


#: ``predict(model, rows, machine)``: the predictions of the rows with one model
#: (:func:`predictions`, or a caller's function that memoises it).
type Predict = Callable[[str, Sequence[Row], str | Path | Machine], Sequence[Prediction]]


def _read(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        from .provenance import missing_message

        raise ReferenceDataError(missing_message(str(path)))
    with path.open() as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


def rows(dataset: str) -> list[Row]:
    """The rows of one data set (``star3d_r4``, ``star3d_r2`` or ``box2d_r7``)."""
    d = data_dir()
    out = []
    if dataset in ("star3d_r4", "star3d_r2"):
        name = "star3d_r4.csv" if dataset == "star3d_r4" else "star3d_r2_volumes.csv"
        for r in _read(d / name):
            block = (int(r["bx"]), int(r["by"]), int(r["bz"]))
            if block[2] > 64:
                continue
            radius = int(r["range"])
            full = tuple(int(v) for v in r["domain_with_ghosts"].split("x"))
            shape = tuple(n - 2 * radius for n in full)
            out.append(Row(
                dataset, "star3d", (("radius", radius), ("shape", shape)), block,
                (int(r["tfx"]), int(r["tfy"]), int(r["tfz"])),
                _num(r["meas_memLoad_B_per_lup"]), _num(r["meas_L2Load_B_per_lup"]),
                _num(r["meas_GLup_per_s"]),
            ))
    elif dataset == "box2d_r7":
        for r in _read(d / "box2d_r7.csv"):
            out.append(Row(
                dataset, "box2d", (("radius", int(r["range"])), ("n", 15000)),
                (int(r["bx"]), int(r["by"]), 1), (1, 1, 1), None, None,
                _num(r["meas_GLup_per_s"]),
            ))
    else:
        raise ReferenceDataError(f"unknown data set {dataset!r}; use {DATASETS}")
    return out


DATASETS = ("star3d_r4", "star3d_r2", "box2d_r7")


def box2d(radius: int = 7, n: int = 15000) -> Kernel:
    """The hand-written 2D box stencil of the data: ``A[y][x] = c * sum
    B[y+j][x+i]`` for ``|i|, |j| <= radius``, one thread per point, x
    contiguous; 224 adds and one multiply per point. The guard keeps
    ``radius <= x, y < n - radius``; modelled as the domain ``n - 2 radius``
    with the indices shifted by ``radius``."""
    from ..input.expr import tidx, tidy
    from ..input.kernel import Field

    a = Field("A", shape=(n, n), itemsize=8)
    b = Field("B", shape=(n, n), itemsize=8)
    loads = [b[tidx + radius + i, tidy + radius + j]
             for j in range(-radius, radius + 1) for i in range(-radius, radius + 1)]
    points = (2 * radius + 1) ** 2
    return Kernel(loads=loads, stores=[a[tidx + radius, tidy + radius]],
                  domain=(n - 2 * radius, n - 2 * radius), fp_ops={"fma": points},
                  name=f"box2d_r{radius}")


#: Prefix of a row's ``kernel`` that marks a stencil of the project's own
#: measurements (``measured:star3d``; :mod:`warpspeed.validation.measured_sets`).
MEASURED = "measured:"


def measured_kernel(row: Row) -> Kernel:
    """The kernel of a row of the project's own measurements, generated again
    as the harness generated it, with the register count of the measured
    binary where the row's parameters carry it (``registers``)."""
    from dataclasses import replace

    from ..measure import generate_variant

    params = {k: list(v) if isinstance(v, tuple) else v for k, v in row.params}
    regs = params.pop("registers", None)
    k = generate_variant(row.kernel.removeprefix(MEASURED), params, row.fold)[0]
    if isinstance(regs, int):
        k = replace(k, registers=regs, registers_source="Nsight Compute, the measured binary")
    return k


def kernel_for(row: Row) -> Kernel:
    """The kernel a row measured, built as it ran (module docstring)."""
    # the kernel's own parameters, as its data set gives them: their types are
    # those of that kernel's function
    params: dict[str, Any] = dict(row.params)
    if row.kernel.startswith(MEASURED):
        return measured_kernel(row)
    if row.kernel == "box2d":
        return box2d(int(params["radius"]), int(params["n"]))
    if row.kernel == "fluidx3d":
        from stencils import lbm_fluidx3d

        return lbm_fluidx3d.kernel(**params)
    if row.kernel == "convolution2d":
        from stencils import convolution2d

        return convolution2d.kernel(fold=row.fold, **params)
    from stencils import star3d_by_hand

    return star3d_by_hand.kernel(
        radius=params["radius"], shape=params["shape"], fold=row.fold, alignment=0,
    )


@dataclass(frozen=True)
class Scores:
    """Agreement of one model with one data set (None where not measured)."""

    model: str
    dataset: str
    rows: int
    dram_load_mape: float | None
    l2_load_mape: float | None
    glups_mape: float | None
    glups_median_ratio: float | None
    spearman: float | None
    best_fraction: float | None


def _mape(pred: Sequence[float], meas: Sequence[float]) -> float | None:
    if not pred:
        return None
    return float(np.mean([abs(p / m - 1.0) for p, m in zip(pred, meas)]))


def score(model: str, dataset: str, preds: Sequence[Prediction], data: Sequence[Row]
          ) -> Scores:
    """MAPE of DRAM load, L2 load and GLup/s, median predicted/measured
    GLup/s, Spearman rank correlation, and the measured GLup/s of the
    predicted best over the measured best."""
    pairs = list(zip(preds, data))
    dram = [(p.volumes.dram_load, r.dram_load) for p, r in pairs if r.dram_load]
    l2 = [(p.volumes.l2_load, r.l2_load) for p, r in pairs if r.l2_load]
    g = [(p.glups, r.glups) for p, r in pairs if r.glups]
    timed = [p for p, r in pairs if r.glups]
    gp, gm = [a for a, _ in g], [b for _, b in g]
    return Scores(
        model=model,
        dataset=dataset,
        rows=len(pairs),
        dram_load_mape=_mape(*zip(*dram)) if dram else None,
        l2_load_mape=_mape(*zip(*l2)) if l2 else None,
        glups_mape=_mape(gp, gm) if g else None,
        glups_median_ratio=float(np.median([a / b for a, b in g])) if g else None,
        spearman=rank_correlation(gp, gm),
        best_fraction=gm[first_choice(timed)] / max(gm) if g else None,
    )


def predictions(model: str, data: Sequence[Row], machine: str | Path | Machine = "V100"
                ) -> list[Prediction]:
    """Predict every row with ``model`` (kernels built once per variant)."""
    from ..model import predict

    kernels: dict[tuple[object, ...], Kernel] = {}
    out = []
    for r in data:
        key = (r.kernel, r.params, r.fold)
        if key not in kernels:
            kernels[key] = kernel_for(r)
        out.append(predict(kernels[key], machine, r.block, model=model))
    return out


def l1_miss_rows(machine: str | Path | Machine = "V100"
                 ) -> list[tuple[Row, Kernel, BlockStage, float]]:
    """Every star row with a measured L2 load, with its kernel (built once
    per variant), its block stage and the measured L1 miss fraction of the
    redundant loads, ``(L2 measured - L2LoadV1) / (L1Load - L2LoadV1)``
    with the counts of the block stage (MODEL.md §5): the rows the
    ``fits/l1_*.py`` analyses compare their L1 models with."""
    from ..model import block_stage, load_machine

    m = load_machine(machine)
    kernels: dict[tuple[object, ...], Kernel] = {}
    out: list[tuple[Row, Kernel, BlockStage, float]] = []
    for ds in ("star3d_r4", "star3d_r2"):
        for r in rows(ds):
            if r.l2_load is None:
                continue
            k = kernels.setdefault((r.params, r.fold), kernel_for(r))
            st = block_stage(k, m, r.block)
            fp = st.footprint
            out.append((r, k, st, (r.l2_load - fp.l2_load_v1) / (fp.l1_load - fp.l2_load_v1)))
    return out


def report(models: Sequence[str] = ("paper", "latency"),
           datasets: Sequence[str] = DATASETS, machine: str | Path | Machine = "V100",
           predict: Predict | None = None) -> list[Scores]:
    """Scores of every model on every data set; ``predict(model, rows,
    machine)`` defaults to :func:`predictions` (a caller that predicts the
    same rows elsewhere passes a memoising one)."""
    predict = predict or predictions
    out = []
    for ds in datasets:
        data = rows(ds)
        for model in models:
            out.append(score(model, ds, predict(model, data, machine), data))
    return out


def format_report(scores: Sequence[Scores]) -> str:
    """A plain-text table of :func:`report`."""
    def f(v: float | None, pct: bool = False) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return f"{100 * v:.1f} %" if pct else f"{v:.3f}"

    head = ("data set", "model", "rows", "DRAM MAPE", "L2 MAPE", "GLup/s MAPE",
            "median p/m", "Spearman", "best/best")
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for s in scores:
        lines.append(" | ".join((
            s.dataset, s.model, str(s.rows), f(s.dram_load_mape, True), f(s.l2_load_mape, True),
            f(s.glups_mape, True), f(s.glups_median_ratio), f(s.spearman),
            f(s.best_fraction, True),
        )))
    return "\n".join(lines)


#: The A100 convolution scan (``shared/data/a100``, see its README).
CONVOLUTION = "convolution_15x15"


def convolution_rows(gpu: str = "A100") -> list[Row]:
    """The rows of the 2-D convolution scan on ``gpu``: ``A100``
    (``shared/data/a100/convolution_15x15.csv``, a public Kernel Tuner cache,
    see the README beside it), ``RTXA4000`` or ``W7800`` (the same scan in
    ``shared/data/crossgpu``): a 15x15 float32 filter over 4096 x 4096
    outputs, block ``(bx, by, 1)``, folding ``(tile_x, tile_y, 1)`` strided by
    the block size, the median time as GLup/s. No volumes were measured.
    :func:`kernel_for` builds each row's kernel (:mod:`stencils.convolution2d`),
    to be predicted on the GPU's machine file."""
    if gpu not in CROSSGPU:
        raise ReferenceDataError(f"no convolution scan of GPU {gpu!r}; known: {list(CROSSGPU)}")
    folder, name = CROSSGPU[gpu]
    path = dataset_dir(folder) / name
    params = (("filter_size", 15), ("precision", "float"), ("shape", (4096, 4096)))
    out = []
    for r in _read(path):
        try:
            block = (int(r["bx"]), int(r["by"]), 1)
            fold = (int(r["tile_x"]), int(r["tile_y"]), 1)
            glups = _num(r["meas_GLup_per_s"])
        except (KeyError, ValueError) as exc:
            raise ReferenceDataError(f"{path}: unreadable row {r}: {exc!r}") from exc
        dataset = CONVOLUTION if gpu == "A100" else f"{CONVOLUTION}_{gpu}"
        out.append(Row(dataset, "convolution2d", params, block, fold, None, None, glups))
    return out


#: The convolution scans: GPU -> (data set folder, file).
CROSSGPU = {"A100": ("a100", "convolution_15x15.csv"),
            "RTXA4000": ("crossgpu", "convolution_15x15_a4000.csv"),
            "W7800": ("crossgpu", "convolution_15x15_w7800.csv")}


#: FluidX3D's single-GPU D3Q19 benchmark rows (``shared/data/lbm``, see its README).
LBM = "fluidx3d_d3q19"


def lbm_gpus() -> list[str]:
    """The GPUs of ``shared/data/lbm/fluidx3d_d3q19.csv``, as machine names."""
    return [r["gpu"] for r in _read(dataset_dir("lbm") / f"{LBM}.csv")]


def lbm_rows(gpu: str) -> list[Row]:
    """The measured rows of one GPU (a name of :func:`lbm_gpus`) in
    ``shared/data/lbm/fluidx3d_d3q19.csv``: the D3Q19 SRT step on 256^3 cells,
    1D work-groups of 64 threads, FP32 and FP16S storage
    (:mod:`stencils.lbm_fluidx3d`), MLUP/s as GLup/s. No volumes were measured."""
    path = dataset_dir("lbm") / f"{LBM}.csv"
    params = (("shape", (256, 256, 256)),)
    out = []
    for r in _read(path):
        if r.get("gpu") != gpu:
            continue
        try:
            for storage, column in (("fp32", "fp32_fp32_MLUPs"), ("fp16s", "fp32_fp16s_MLUPs")):
                out.append(Row(f"{LBM}_{gpu}", "fluidx3d", (*params, ("storage", storage)),
                               (64, 1, 1), (1, 1, 1), None, None, float(r[column]) / 1000))
        except (KeyError, ValueError) as exc:
            raise ReferenceDataError(f"{path}: unreadable row {r}: {exc!r}") from exc
    if not out:
        raise ReferenceDataError(f"{path} has no row for GPU {gpu!r}")
    return out


__all__ = ["CONVOLUTION", "CROSSGPU", "DATASETS", "LBM", "MEASURED", "SHIPPED",
           "ReferenceDataError", "Row", "Scores", "box2d", "convolution_rows", "data_dir",
           "dataset_dir", "format_report", "kernel_for", "lbm_gpus", "lbm_rows",
           "measured_kernel", "predictions", "report", "rows", "score", "shared_dir"]
