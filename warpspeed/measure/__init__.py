"""Stage 6, measured truth: time stencil kernels on a GPU and read their Nsight Compute
counters, one CSV row per configuration (MODEL.md §9).

The harness needs a machine with an NVIDIA GPU and CuPy (imported only on
that path); ``ncu`` where counters are wanted. Everything else in this
package is pure and tested without a GPU: the CSV schema and its round trip,
the normalisation of counters per lattice update, the CUDA source and buffers
of a pystencils kernel, the plan files, the launch grid and the command lines.

Modules (their public names are importable from here, each module imported
on first use, so that timing prepared programs imports neither pystencils
nor islpy):

* :mod:`~warpspeed.measure.schema`: the CSV columns, :class:`Measurement`,
  :class:`Refusal` (a configuration that could not launch), :func:`read_csv`
  and :func:`write_csv`;
* :mod:`~warpspeed.measure.counters`: counters and times per lattice
  update, clocks and versions;
* :mod:`~warpspeed.measure.programs`: :class:`Program` and :class:`Plan`
  (what is compiled and which blocks are timed) and their files;
* :mod:`~warpspeed.measure.program`: the stencil's kernel variants and the
  plan of each (pystencils);
* :mod:`~warpspeed.measure.gpu`: compiling with NVRTC through CuPy, CUDA-event
  timing, refusals;
* :mod:`~warpspeed.measure.run`: a run over plans: compile workers, timing,
  rows, the ncu child;
* :mod:`~warpspeed.measure.ncu`: the Nsight Compute command and the parser
  of its CSV;
* :mod:`~warpspeed.measure.tune`: the model's best few configurations timed
  (``warpspeed tune``), on the GPU or replayed from a CSV;
* :mod:`~warpspeed.measure.cli`: ``python -m warpspeed.measure`` (its entry,
  :mod:`~warpspeed.measure.__main__`).

Command line::

    # on a machine with the GPU, CuPy and pystencils
    python -m warpspeed.measure run --stencil star3d --set radius=4 \\
        --threads 256 512 1024 --folds 1,1,1 1,2,1 1,1,2 --jobs 8 --out H100-star3d-r4.csv
    # or prepare here (pystencils), carry the folder, measure there (CuPy only)
    python -m warpspeed.measure prepare --stencil star3d --set radius=4 --folds 1,1,1 \\
        --threads 1024 --note "set star_r4" --out programs/
    python -m warpspeed.measure run --programs programs/ --jobs 8 --out H100-star3d-r4.csv
    python -m warpspeed.measure run ... --dry-run     # no GPU: list what would run

For every plan (one kernel variant) and every block size (``--blocks``, or
all power-of-two shapes of ``--threads`` threads of the paper's design space,
MODEL.md §8), :mod:`~warpspeed.measure.run` says what happens:

* **compile** with NVRTC through CuPy (pystencils' runtime headers on the
  include path), in ``--jobs`` worker processes before any timing;
* **time**: ``--warmup`` launches, one launch that sizes the rest, then
  ``--repetitions`` launches (more for short kernels, fewer for long ones:
  :class:`~warpspeed.measure.gpu.TimingRule`) timed one by one with CUDA
  events; the median is the time (the minimum is kept too). GLup/s =
  lattice updates (interior points) / median time. Clocks are sampled with
  ``nvidia-smi -lms`` while the launches run. A block the kernel cannot
  launch (too many registers) is a refusal row saying why;
* **counters**: one ``ncu`` process profiles a child
  (``python -m warpspeed.measure launch ...``) that launches the selected
  blocks (``--counter-blocks`` per plan) once each; ncu flushes the caches
  before each profiled launch (``--cache-control all``). See
  :mod:`warpspeed.measure.ncu` for the counters. Without ncu the counter
  cells stay empty and the note says so.

Rows are appended to the CSV after each plan, so a run cut short keeps what
it measured. Fields are allocated with their base pointers at the byte
offset from a 128 B boundary that the warpspeed kernel assumes
(``Field.base_offset``) and filled with uniform random numbers in [0, 1).
Kernel scalars (``omega_phi``, ``xi`` of the LBM) are 1.0 unless given with
``--scalar NAME=VALUE``.

CSV schema (:data:`SCHEMA`; one row per kernel configuration; an empty cell
is a value that was not measured, never a guess). Volumes are bytes per
lattice update (B/Lup); a thread folded ``f`` times performs ``f`` lattice
updates (MODEL.md conventions):

======================  ============  ================================================
column                  unit          meaning
======================  ============  ================================================
machine                 --            GPU name as the driver reports it (nvidia-smi)
stencil                 --            stencil module in stencils/ (or .py path)
params                  JSON          stencil parameters given to generate(), sorted
kernel                  --            warpspeed kernel name (Kernel.name)
domain                  points        interior points per axis, ``X,Y,Z``
block                   threads       thread-block size, ``X,Y,Z``
fold                    Lup/thread    lattice updates per thread per axis, ``X,Y,Z``
lups                    Lup           lattice updates per launch (interior points)
registers               1/thread      registers per thread of the compiled kernel
time_s                  s             median kernel time of the timed launches
time_min_s              s             minimum kernel time of the timed launches
repetitions             --            number of timed launches
glups                   GLup/s        lups / time_s / 1e9
dram_load               B/Lup         dram__bytes_read.sum / lups
dram_store              B/Lup         dram__bytes_write.sum / lups
l2_load                 B/Lup         lts__t_sectors_srcunit_tex_op_read.sum * 32 / lups
l2_store                B/Lup         lts__t_sectors_srcunit_tex_op_write.sum * 32 / lups
l1_load                 B/Lup         l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum * 32 / lups
l1_wavefronts           1/Lup         l1tex__data_pipe_lsu_wavefronts.sum / lups
ncu_time_s              s             gpu__time_duration.sum of the profiled launch
ncu_sm_clock_mhz        MHz           sm__cycles_elapsed.avg.per_second under ncu
achieved_occupancy      %             sm__warps_active.avg.pct_of_peak_sustained_active
sm_clock_mhz            MHz           median SM clock while timing (nvidia-smi)
mem_clock_mhz           MHz           median memory clock while timing (nvidia-smi)
driver                  --            NVIDIA driver version
cuda                    --            CUDA runtime version used by CuPy
ncu                     --            Nsight Compute version
cupy                    --            CuPy version
pystencils              --            pystencils version
warpspeed               --            warpspeed version
date                    ISO 8601      UTC time the row was measured
note                    --            free text (skipped counters, warnings)
======================  ============  ================================================

The model's L1 cycles per warp and lattice update (``Prediction.l1_cycles``)
compare with ``l1_wavefronts * warp_size``: one wavefront is one L1 cycle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Where each public name lives (module of this package).
_PUBLIC = {
    ".schema": ("COLUMNS", "SCHEMA", "VOLUME_COLUMNS", "Column", "Measurement",
                "MeasurementError", "Refusal", "Triple", "format_triple", "params_from_json",
                "params_json", "parse_triple", "read_csv", "read_refusals", "write_csv"),
    ".counters": ("cuda_version_string", "glups", "interior", "lups_per_launch", "normalise",
                  "parse_clock_samples", "parse_smi_identity"),
    ".programs": ("Buffer", "Plan", "Program", "Scalar", "grid_for", "read_plans",
                  "write_plans"),
    ".program": ("cuda_source", "design_blocks", "function_name", "generate_variant",
                 "load_generator", "parse_params", "plan_for", "program_for"),
    ".gpu": ("Timing", "TimingRule"),
    ".run": ("RunOptions", "child_command", "match_counters", "measure_plans",
             "select_counters"),
    ".cli": ("main",),
}
_HOME = {name: module for module, names in _PUBLIC.items() for name in names}

if TYPE_CHECKING:
    from .cli import main
    from .counters import (
        cuda_version_string,
        glups,
        interior,
        lups_per_launch,
        normalise,
        parse_clock_samples,
        parse_smi_identity,
    )
    from .gpu import Timing, TimingRule
    from .program import (
        cuda_source,
        design_blocks,
        function_name,
        generate_variant,
        load_generator,
        parse_params,
        plan_for,
        program_for,
    )
    from .programs import Buffer, Plan, Program, Scalar, grid_for, read_plans, write_plans
    from .run import RunOptions, child_command, match_counters, measure_plans, select_counters
    from .schema import (
        COLUMNS,
        SCHEMA,
        VOLUME_COLUMNS,
        Column,
        Measurement,
        MeasurementError,
        Refusal,
        Triple,
        format_triple,
        params_from_json,
        params_json,
        parse_triple,
        read_csv,
        read_refusals,
        write_csv,
    )


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    if name in _HOME:
        value = getattr(importlib.import_module(_HOME[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))


__all__ = [
    "Buffer",
    "COLUMNS",
    "Column",
    "Measurement",
    "MeasurementError",
    "Plan",
    "Program",
    "Refusal",
    "RunOptions",
    "SCHEMA",
    "Scalar",
    "Timing",
    "TimingRule",
    "Triple",
    "VOLUME_COLUMNS",
    "child_command",
    "cuda_source",
    "cuda_version_string",
    "design_blocks",
    "format_triple",
    "function_name",
    "generate_variant",
    "glups",
    "grid_for",
    "interior",
    "load_generator",
    "lups_per_launch",
    "main",
    "match_counters",
    "measure_plans",
    "normalise",
    "params_from_json",
    "params_json",
    "parse_clock_samples",
    "parse_params",
    "parse_smi_identity",
    "parse_triple",
    "plan_for",
    "program_for",
    "read_csv",
    "read_plans",
    "read_refusals",
    "select_counters",
    "write_csv",
    "write_plans",
]
