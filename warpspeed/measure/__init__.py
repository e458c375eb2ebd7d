"""Stage 7, measured truth: time stencil kernels on a GPU and read their Nsight Compute
counters, one CSV row per configuration (MODEL.md §9).

The harness needs a machine with an NVIDIA GPU, CuPy (imported only on that
path) and ``ncu``. Everything else in this package is pure and tested without
a GPU: the CSV schema and its round trip, the normalisation of counters per
lattice update, the CUDA source and buffers of a pystencils kernel, the
launch grid, and the command lines.

Modules (every name is re-exported here):

* :mod:`~warpspeed.measure.schema`: the CSV columns, :class:`Measurement`,
  :func:`read_csv` and :func:`write_csv`;
* :mod:`~warpspeed.measure.counters`: counters and times per lattice
  update, clocks and versions;
* :mod:`~warpspeed.measure.program`: the stencil's kernel variants and the
  CUDA :class:`Program` of each;
* :mod:`~warpspeed.measure.ncu`: the Nsight Compute command and the parser
  of its CSV (not re-exported: the other modules use it as ``ncu``);
* :mod:`~warpspeed.measure.run`: the GPU path (CuPy timing, the ncu child);
* :mod:`~warpspeed.measure.cli`: ``python -m warpspeed.measure`` (its entry,
  :mod:`~warpspeed.measure.__main__`).

Command line (on the GPU machine)::

    python -m warpspeed.measure run --stencil star3d --set radius=4 \\
        --threads 1024 --folds 1,1,1 1,2,1 1,1,2 --out fits/measurements/H100-star3d-r4.csv
    python -m warpspeed.measure run ... --dry-run     # no GPU: list what would run

``run`` generates the kernel once per fold (``stencils/NAME.py``'s
``generate(**params, fold=...)``, or a ``.py`` file defining it), compiles
it with NVRTC through CuPy, and for every block size (``--blocks``, or all
power-of-two shapes of ``--threads`` threads of the paper's design space,
MODEL.md §8):

* **time**: ``--warmup`` launches, then ``--repetitions`` launches timed
  one by one with CUDA events; the median is the time (the minimum is kept
  too). GLup/s = lattice updates (interior points) / median time. Clocks
  are sampled with ``nvidia-smi -lms`` while the repetitions run.
* **counters**: one ``ncu`` process per fold profiles a child
  (``python -m warpspeed.measure launch ...``) that launches every block
  size once; ncu flushes the caches before each profiled launch
  (``--cache-control all``). See :mod:`warpspeed.measure.ncu` for the counters.

Rows are appended to the CSV after each fold, so a run cut short keeps what
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

from .cli import main as main
from .counters import cuda_version_string as cuda_version_string
from .counters import (
    glups,
    interior,
    lups_per_launch,
    normalise,
    parse_clock_samples,
    parse_smi_identity,
)
from .program import (
    Buffer,
    Program,
    Scalar,
    cuda_source,
    design_blocks,
    function_name,
    generate_variant,
    grid_for,
    parse_params,
    program_for,
)
from .program import load_generator as load_generator
from .run import Timing, match_counters, measure_fold, time_program
from .run import child_command as child_command
from .run import environment as environment
from .run import launch_program as launch_program
from .run import profile as profile
from .schema import (
    COLUMNS,
    SCHEMA,
    VOLUME_COLUMNS,
    Column,
    Measurement,
    MeasurementError,
    params_from_json,
    params_json,
    parse_triple,
    read_csv,
    write_csv,
)
from .schema import Triple as Triple
from .schema import format_triple as format_triple

# ``NAME as NAME``: public names that stay out of ``__all__`` (as before the split
# into modules) but are still importable from here.
__all__ = [
    "COLUMNS",
    "SCHEMA",
    "VOLUME_COLUMNS",
    "Buffer",
    "Column",
    "Measurement",
    "MeasurementError",
    "Program",
    "Scalar",
    "Timing",
    "cuda_source",
    "design_blocks",
    "function_name",
    "generate_variant",
    "glups",
    "grid_for",
    "interior",
    "lups_per_launch",
    "match_counters",
    "measure_fold",
    "normalise",
    "params_from_json",
    "params_json",
    "parse_clock_samples",
    "parse_params",
    "parse_smi_identity",
    "parse_triple",
    "program_for",
    "read_csv",
    "time_program",
    "write_csv",
]
