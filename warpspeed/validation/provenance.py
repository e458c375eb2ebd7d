"""Where the reference measurements come from and how to rebuild them
(MODEL.md §9). They are public data of other projects, kept in the
``shared/data`` folder beside the repository (or the folder
``WARPSPEED_SHARED`` names); the development sets whose READMEs allow it are
also shipped in ``fits/data`` with their source notes (a clone has them, the
micro-benchmark tables stay in ``shared/``). When a file is missing, the error
names its repository, commit and original file, and the steps that produce it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    """One reference data set: where it lives under ``shared/data``, the
    public repository and commit it comes from, and how it is rebuilt."""

    path: str
    repository: str
    commit: str
    original: str
    rebuild: str


SOURCES: tuple[Source, ...] = (
    Source("v100/star3d_r4.csv", "te42kyfo/warpspeed", "c85e496",
           "printed outputs of the notebooks pystencils-volumes.ipynb and blocking_test.ipynb",
           "copy the printed table (block, DRAM and L2 volumes, GLup/s) of those notebooks "
           "into CSV; the file's header comments give the columns"),
    Source("v100/star3d_r2_volumes.csv", "te42kyfo/warpspeed", "c85e496",
           "printed outputs of the notebook pystencils-volumes.ipynb",
           "copy the printed volumes (block, z folding, DRAM and L2 load) into CSV"),
    Source("v100/box2d_r7.csv", "te42kyfo/warpspeed", "notebook outputs of June and July 2020",
           "printed GFlop/s of the 2D box stencil notebooks (two runs)",
           "copy the printed GFlop/s per block into CSV; GLup/s = GFlop/s / 225"),
    Source("a100/convolution_15x15.csv", "AutoTuningAssociation/benchmark_hub", "8eeb99e",
           "cachefiles/convolution_milo/A100.json.gz (Kernel Tuner cache, MIT license)",
           "python fits/convert_convolution.py A100.json.gz > convolution_15x15.csv"),
    Source("crossgpu/convolution_15x15_a4000.csv", "AutoTuningAssociation/benchmark_hub",
           "8eeb99e", "cachefiles/convolution_milo/A4000.json.gz (Kernel Tuner cache, MIT license)",
           "python fits/convert_convolution.py A4000.json.gz > convolution_15x15_a4000.csv"),
    Source("crossgpu/convolution_15x15_w7800.csv", "AutoTuningAssociation/benchmark_hub",
           "8eeb99e", "cachefiles/convolution_milo/W7800.json.gz (Kernel Tuner cache, MIT license)",
           "python fits/convert_convolution.py W7800.json.gz > convolution_15x15_w7800.csv"),
    Source("lbm/fluidx3d_d3q19.csv", "ProjectPhysX/FluidX3D", "8986874",
           "README.md, table 'Single-GPU/CPU Benchmarks'",
           "copy the eleven GPUs' rows of shared/data/lbm/README.md (FP32/FP32 and FP32/FP16S "
           "MLUP/s) into CSV"),
    Source("microbench/", "te42kyfo/gpu-benches", "1c36d50",
           "the measured tables of the repository's README and result folders",
           "convert each table to CSV with the column names of the files' headers"),
)


def source_of(path: str) -> Source | None:
    """The :class:`Source` of a file under ``shared/data`` (a path ending in
    one of :data:`SOURCES`' paths, or inside the micro-benchmark folder)."""
    text = str(path).replace("\\", "/")
    for s in SOURCES:
        if text.endswith(s.path) or (s.path.endswith("/") and f"/{s.path}" in text):
            return s
    return None


def describe(s: Source) -> str:
    """One sentence: repository, commit, original file and the rebuild step."""
    return (f"It comes from github.com/{s.repository} (commit {s.commit}), {s.original}; "
            f"to rebuild it: {s.rebuild}")


def every_source() -> str:
    """All reference data sets in one sentence, grouped by repository."""
    groups: dict[str, list[Source]] = {}
    for s in SOURCES:
        groups.setdefault(s.repository, []).append(s)
    parts = []
    for repo, items in groups.items():
        files = ", ".join(s.path for s in items)
        commits = ", ".join(dict.fromkeys(s.commit for s in items))
        steps = "; ".join(dict.fromkeys(s.rebuild for s in items if s.rebuild.startswith(
            "python")))
        parts.append(f"{files} from github.com/{repo} ({commits})"
                     + (f", rebuilt by {steps}" if steps else ""))
    return "; ".join(parts)


def missing_message(path: str) -> str:
    """What a user reads when the reference file ``path`` is missing: that
    file's origin and rebuild step, then every data set's origin."""
    s = source_of(path)
    where = (" " + describe(s) + ".") if s is not None else ""
    return (f"reference data {path} not found: a clone ships the development sets in "
            f"fits/data, the micro-benchmark tables are not shipped.{where} Put the shared/ "
            "folder (shared/data/...) beside the repository or set WARPSPEED_SHARED to it. "
            "All reference data: "
            f"{every_source()} (MODEL.md §9, warpspeed/validation/provenance.py)")


__all__ = ["SOURCES", "Source", "describe", "every_source", "missing_message", "source_of"]
