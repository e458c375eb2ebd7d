"""Measured truth: time stencil kernels on a GPU and read their Nsight Compute
counters, one CSV row per configuration (MODEL.md §9).

The harness needs a machine with an NVIDIA GPU, CuPy (imported only on that
path) and ``ncu``. Everything else in this module is pure and tested without
a GPU: the CSV schema and its round trip, the normalisation of counters per
lattice update, the CUDA source and buffers of a pystencils kernel, the
launch grid, and the command lines.

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
  (``--cache-control all``). See :mod:`warpspeed.ncu` for the counters.

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

import argparse
import csv
import datetime as _dt
import json
import math
import os
import re
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from . import ncu as ncu_mod
from .errors import WarpspeedError
from .kernel import Kernel
from .stencil_spec import UsageError, load_stencil
from .stencil_spec import parse_params as parse_typed

Triple = tuple[int, int, int]


class MeasurementError(WarpspeedError, ValueError):
    """A measurement cannot be made or read: a bad CSV, a stencil that
    cannot be generated, no GPU or no CuPy on the GPU path."""


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Column:
    """One CSV column: its name, unit and meaning."""

    name: str
    unit: str
    meaning: str


SCHEMA: tuple[Column, ...] = (
    Column("machine", "--", "GPU name as the driver reports it (nvidia-smi)"),
    Column("stencil", "--", "stencil module in stencils/ (or .py path)"),
    Column("params", "JSON", "stencil parameters given to generate(), sorted"),
    Column("kernel", "--", "warpspeed kernel name (Kernel.name)"),
    Column("domain", "points", "interior points per axis, X,Y,Z"),
    Column("block", "threads", "thread-block size, X,Y,Z"),
    Column("fold", "Lup/thread", "lattice updates per thread per axis, X,Y,Z"),
    Column("lups", "Lup", "lattice updates per launch (interior points)"),
    Column("registers", "1/thread", "registers per thread of the compiled kernel"),
    Column("time_s", "s", "median kernel time of the timed launches"),
    Column("time_min_s", "s", "minimum kernel time of the timed launches"),
    Column("repetitions", "--", "number of timed launches"),
    Column("glups", "GLup/s", "lups / time_s / 1e9"),
    Column("dram_load", "B/Lup", "dram__bytes_read.sum / lups"),
    Column("dram_store", "B/Lup", "dram__bytes_write.sum / lups"),
    Column("l2_load", "B/Lup", "lts__t_sectors_srcunit_tex_op_read.sum * 32 / lups"),
    Column("l2_store", "B/Lup", "lts__t_sectors_srcunit_tex_op_write.sum * 32 / lups"),
    Column("l1_load", "B/Lup", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum * 32 / lups"),
    Column("l1_wavefronts", "1/Lup", "l1tex__data_pipe_lsu_wavefronts.sum / lups"),
    Column("ncu_time_s", "s", "gpu__time_duration.sum of the profiled launch"),
    Column("ncu_sm_clock_mhz", "MHz", "sm__cycles_elapsed.avg.per_second under ncu"),
    Column("achieved_occupancy", "%", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    Column("sm_clock_mhz", "MHz", "median SM clock while timing (nvidia-smi)"),
    Column("mem_clock_mhz", "MHz", "median memory clock while timing (nvidia-smi)"),
    Column("driver", "--", "NVIDIA driver version"),
    Column("cuda", "--", "CUDA runtime version used by CuPy"),
    Column("ncu", "--", "Nsight Compute version"),
    Column("cupy", "--", "CuPy version"),
    Column("pystencils", "--", "pystencils version"),
    Column("warpspeed", "--", "warpspeed version"),
    Column("date", "ISO 8601", "UTC time the row was measured"),
    Column("note", "--", "free text (skipped counters, warnings)"),
)

COLUMNS: tuple[str, ...] = tuple(c.name for c in SCHEMA)

#: Measured volumes (B/Lup) and what the model predicts for them (MODEL.md §9).
VOLUME_COLUMNS = ("dram_load", "dram_store", "l2_load", "l2_store", "l1_load")


def format_triple(t: Sequence[int]) -> str:
    return ",".join(str(int(v)) for v in t)


def parse_triple(text: str, what: str = "value") -> Triple:
    """``"32,8,4"`` or ``"32x8x4"`` -> ``(32, 8, 4)``; fewer than three
    numbers are padded with 1."""
    parts = [p for p in re.split(r"[,x\s]+", text.strip()) if p]
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError as exc:
        raise MeasurementError(f"{what} must be up to three integers X,Y,Z, got {text!r}") from exc
    if not 1 <= len(vals) <= 3 or any(v < 1 for v in vals):
        raise MeasurementError(f"{what} must be up to three positive integers, got {text!r}")
    return (vals + (1, 1))[:3]  # type: ignore[return-value]


def params_json(params: Mapping[str, Any]) -> str:
    """Canonical JSON of stencil parameters (sorted keys, tuples as lists)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=list)


def params_from_json(text: str) -> dict[str, Any]:
    """Inverse of :func:`params_json`; lists become tuples again."""
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError as exc:
        raise MeasurementError(f"params is not valid JSON: {text!r}") from exc
    if not isinstance(data, dict):
        raise MeasurementError(f"params must be a JSON object, got {text!r}")
    return {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}


@dataclass(frozen=True)
class Measurement:
    """One configuration measured on a GPU: one row of the CSV (:data:`SCHEMA`).

    ``None`` marks a quantity that was not measured (ncu unavailable, a
    counter the GPU lacks); it is written as an empty cell."""

    machine: str
    stencil: str
    params: str
    kernel: str
    domain: Triple
    block: Triple
    fold: Triple
    lups: int
    time_s: float
    glups: float
    registers: int | None = None
    time_min_s: float | None = None
    repetitions: int | None = None
    dram_load: float | None = None
    dram_store: float | None = None
    l2_load: float | None = None
    l2_store: float | None = None
    l1_load: float | None = None
    l1_wavefronts: float | None = None
    ncu_time_s: float | None = None
    ncu_sm_clock_mhz: float | None = None
    achieved_occupancy: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    driver: str = ""
    cuda: str = ""
    ncu: str = ""
    cupy: str = ""
    pystencils: str = ""
    warpspeed: str = ""
    date: str = ""
    note: str = ""

    @property
    def parameters(self) -> dict[str, Any]:
        """The stencil parameters as keyword arguments."""
        return params_from_json(self.params)

    @property
    def config(self) -> tuple[str, str, Triple, Triple]:
        """What identifies the configuration: (stencil, params, fold, block)."""
        return (self.stencil, self.params, self.fold, self.block)

    def to_row(self) -> dict[str, str]:
        """The CSV row: every column of :data:`SCHEMA`, as text."""
        out = {}
        for name in COLUMNS:
            v = getattr(self, name)
            if v is None:
                out[name] = ""
            elif isinstance(v, tuple):
                out[name] = format_triple(v)
            elif isinstance(v, float):
                out[name] = repr(v)
            else:
                out[name] = str(v)
        return out

    @classmethod
    def from_row(cls, row: Mapping[str, str]) -> Measurement:
        """Parse a CSV row (as :func:`csv.DictReader` gives it)."""
        missing = [c for c in COLUMNS if c not in row]
        if missing:
            raise MeasurementError(f"measurement row lacks the columns {missing}")
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            text = (row[f.name] or "").strip()
            typ = str(f.type)
            try:
                if typ == "Triple":
                    kwargs[f.name] = parse_triple(text, f.name)
                elif typ.startswith("int"):
                    kwargs[f.name] = int(text) if text else None
                elif typ.startswith("float"):
                    kwargs[f.name] = float(text) if text else None
                else:
                    kwargs[f.name] = text
            except ValueError as exc:
                raise MeasurementError(f"column {f.name}: not a valid value: {text!r}") from exc
        for need in ("lups", "time_s", "glups"):
            if kwargs[need] is None:
                raise MeasurementError(f"measurement row has no {need}")
        return cls(**kwargs)


def write_csv(path: str | Path, rows: Iterable[Measurement], append: bool = True) -> Path:
    """Write ``rows`` to ``path`` (header first if the file is new or
    ``append`` is false); an existing file must have the same header."""
    p = Path(path)
    new = not (append and p.is_file() and p.stat().st_size > 0)
    if not new:
        with p.open(newline="") as fh:
            header = next(csv.reader(fh), [])
        if tuple(header) != COLUMNS:
            raise MeasurementError(
                f"{p} has other columns than warpspeed.measure.SCHEMA; write to a new file"
            )
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w" if new else "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        if new:
            writer.writeheader()
        for m in rows:
            writer.writerow(m.to_row())
    return p


def read_csv(path: str | Path) -> list[Measurement]:
    """All measurements of a CSV written by :func:`write_csv`."""
    p = Path(path)
    if not p.is_file():
        raise MeasurementError(f"measurement file {p} does not exist")
    with p.open(newline="") as fh:
        reader = csv.DictReader(fh)
        header = tuple(reader.fieldnames or ())
        missing = [c for c in COLUMNS if c not in header]
        if missing:
            raise MeasurementError(f"{p} is not a warpspeed measurement CSV: no columns {missing}")
        return [Measurement.from_row(r) for r in reader]


# --------------------------------------------------------------------------- normalisation


def lups_per_launch(kernel: Kernel) -> int:
    """Lattice updates of one launch: valid threads times updates per thread."""
    return math.prod(kernel.domain) * kernel.lups_per_thread


def interior(kernel: Kernel) -> Triple:
    """Interior points per axis: the thread domain times the fold."""
    dom = tuple(kernel.domain) + (1,) * (3 - len(kernel.domain))
    return tuple(d * f for d, f in zip(dom, kernel.fold))  # type: ignore[return-value]


def normalise(values: Mapping[str, float | None], lups: int) -> dict[str, float | None]:
    """Counters of one launch (base units, :mod:`warpspeed.ncu` names) as
    the per-lattice-update columns of :data:`SCHEMA` (MODEL.md §9)."""
    if lups <= 0:
        raise MeasurementError(f"lattice updates per launch must be positive, got {lups}")

    def per(metric: str, factor: float = 1.0) -> float | None:
        v = values.get(metric)
        return None if v is None else v * factor / lups

    def raw(metric: str, factor: float = 1.0) -> float | None:
        v = values.get(metric)
        return None if v is None else v * factor

    sector = ncu_mod.SECTOR_BYTES
    return {
        "dram_load": per(ncu_mod.DRAM_READ),
        "dram_store": per(ncu_mod.DRAM_WRITE),
        "l2_load": per(ncu_mod.L2_READ_SECTORS, sector),
        "l2_store": per(ncu_mod.L2_WRITE_SECTORS, sector),
        "l1_load": per(ncu_mod.L1_LOAD_SECTORS, sector),
        "l1_wavefronts": per(ncu_mod.L1_WAVEFRONTS),
        "ncu_time_s": raw(ncu_mod.DURATION),
        "ncu_sm_clock_mhz": raw(ncu_mod.SM_CLOCK, 1e-6),
        "achieved_occupancy": raw(ncu_mod.OCCUPANCY),
    }


def glups(lups: int, seconds: float) -> float:
    """Performance in GLup/s of ``lups`` lattice updates in ``seconds``."""
    if seconds <= 0:
        raise MeasurementError(f"a kernel time must be positive, got {seconds}")
    return lups / seconds / 1e9


def parse_clock_samples(text: str) -> tuple[float | None, float | None]:
    """Median SM and memory clock (MHz) of ``nvidia-smi
    --query-gpu=clocks.sm,clocks.mem --format=csv,noheader,nounits -lms N``
    output; ``None`` where no sample could be read."""
    sm, mem = [], []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 2:
            continue
        try:
            s, m = float(parts[0]), float(parts[1])
        except ValueError:
            continue
        sm.append(s)
        mem.append(m)
    med = statistics.median
    return (med(sm) if sm else None, med(mem) if mem else None)


def parse_smi_identity(text: str) -> tuple[str, str]:
    """``(name, driver)`` of the first GPU in ``nvidia-smi
    --query-gpu=name,driver_version --format=csv,noheader`` output."""
    for line in text.splitlines():
        if "," in line:
            name, _, driver = line.rpartition(",")
            return name.strip(), driver.strip()
    raise MeasurementError(f"cannot read the GPU name from nvidia-smi output: {text!r}")


def cuda_version_string(version: int) -> str:
    """CUDA's integer version (12040) as text ("12.4")."""
    return f"{version // 1000}.{(version % 1000) // 10}"


# --------------------------------------------------------------------------- stencils


def load_generator(spec: str) -> Callable[..., tuple[Kernel, Any]]:
    """``generate`` of a stencil: a module of ``stencils/`` or a .py file;
    it must return ``(warpspeed kernel, pystencils kernel)``."""
    try:
        module = load_stencil(spec)
    except UsageError as exc:
        raise MeasurementError(str(exc)) from exc
    gen = getattr(module, "generate", None)
    if not callable(gen):
        raise MeasurementError(
            f"{spec} defines no generate(**params, fold=...) returning (ws.Kernel, pystencils "
            "kernel)"
        )
    return gen  # type: ignore[no-any-return]


def parse_params(items: Sequence[str], func: Callable[..., Any] | None = None) -> dict[str, Any]:
    """``NAME=VALUE`` strings as keyword arguments, typed by ``func``'s
    annotations when given (names it does not take are rejected), else
    guessed: integers, floats, comma-separated integer tuples, else text.
    ``fold`` is given separately."""
    if any(item.partition("=")[0].strip() == "fold" for item in items):
        raise MeasurementError("give folds with --folds, not as a parameter")
    try:
        return parse_typed(func, items)
    except UsageError as exc:
        raise MeasurementError(str(exc)) from exc


def generate_variant(spec: str, params: Mapping[str, Any], fold: Triple) -> tuple[Kernel, Any]:
    """The warpspeed and pystencils kernels of ``spec`` with ``params``
    folded by ``fold``."""
    gen = load_generator(spec)
    try:
        kernel, kernel_function = gen(**dict(params), fold=tuple(fold))
    except WarpspeedError:
        raise
    except (TypeError, ValueError) as exc:
        raise MeasurementError(
            f"{spec}: generate({dict(params)}, fold={fold}) failed: {exc}"
        ) from exc
    if not isinstance(kernel, Kernel):
        raise MeasurementError(f"{spec}: generate() did not return a ws.Kernel first")
    return kernel, kernel_function


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class Buffer:
    """A field argument: ``elements`` items of ``dtype``, the base pointer at
    ``base_offset`` bytes from a 128 B boundary."""

    name: str
    dtype: str
    itemsize: int
    elements: int
    base_offset: int = 0


@dataclass(frozen=True)
class Scalar:
    """A scalar kernel argument."""

    name: str
    dtype: str
    value: float


@dataclass(frozen=True)
class Program:
    """Everything the GPU path needs to compile and launch one kernel
    variant: CUDA source, function name, arguments in order, the thread
    domain (the grid follows from it and the block) and the lattice updates
    of one launch."""

    source: str
    function: str
    args: tuple[Buffer | Scalar, ...]
    domain: Triple
    lups: int
    options: tuple[str, ...] = field(default=())


def function_name(kernel: Kernel) -> str:
    """A C identifier naming the variant, unique per kernel and fold; ncu
    selects the measured kernel by it."""
    base = re.sub(r"\W", "_", kernel.name)
    return f"ws_{base}_f{''.join(str(f) for f in kernel.fold)}"


def cuda_source(code: str, old_name: str, new_name: str, headers: Iterable[str]) -> str:
    """Compilable NVRTC source of a pystencils kernel's C code: the
    headers it needs, ``RESTRICT`` defined, C linkage (no name mangling) and
    the function renamed to ``new_name``."""
    pattern = re.compile(rf"\b__global__\s+void\s+{re.escape(old_name)}\s*\(")
    if not pattern.search(code):
        raise MeasurementError(f"no __global__ function {old_name!r} in the kernel code")
    body = pattern.sub(f'extern "C" __global__ void {new_name}(', code, count=1)
    skip = '"pystencils_runtime/half.h"'  # CuPy's NVRTC has its own half type
    includes = ["<cuda/std/cstdint>"] + sorted(h for h in headers if h != skip)
    head = "\n".join(f"#include {h}" for h in includes)
    return f"{head}\n\n#define RESTRICT __restrict__\n\n{body}\n"


def grid_for(domain: Sequence[int], block: Sequence[int]) -> Triple:
    """Blocks per axis covering the thread domain (MODEL.md §3)."""
    d = tuple(domain) + (1,) * (3 - len(domain))
    return tuple(-(-n // b) for n, b in zip(d, block))  # type: ignore[return-value]


def program_for(
    kernel_function: Any, kernel: Kernel, scalars: Mapping[str, float] | None = None
) -> Program:
    """The :class:`Program` of a pystencils GPU kernel and its warpspeed
    kernel (same fold): source, buffers at the kernel's base offsets,
    scalars (``scalars`` or 1.0)."""
    from pystencils.codegen.properties import FieldBasePtr
    from pystencils.include import get_pystencils_include_path

    offsets = {a.field.name: a.field.base_offset for a in kernel.loads + kernel.stores}
    values = dict(scalars or {})
    args: list[Buffer | Scalar] = []
    for p in kernel_function.parameters:
        if p.is_field_parameter:
            ptr = [prop for prop in p.properties if isinstance(prop, FieldBasePtr)]
            if not ptr:
                raise MeasurementError(
                    f"parameter {p.name}: only fixed-size fields are supported (no shape or "
                    "stride arguments)"
                )
            f = ptr[0].field
            shape = [int(s) for s in f.shape]
            strides = [int(s) for s in f.strides]
            dtype = f.dtype.numpy_dtype
            args.append(
                Buffer(
                    name=f.name,
                    dtype=dtype.name,
                    itemsize=int(dtype.itemsize),
                    elements=1 + sum((n - 1) * s for n, s in zip(shape, strides)),
                    base_offset=int(offsets.get(f.name, 0)),
                )
            )
        else:
            np_dtype = p.dtype.numpy_dtype
            if np_dtype is None:
                raise MeasurementError(f"parameter {p.name} of type {p.dtype} is not supported")
            args.append(Scalar(p.name, np_dtype.name, float(values.pop(p.name, 1.0))))
    if values:
        raise MeasurementError(f"the kernel has no scalar parameters {sorted(values)}")
    name = function_name(kernel)
    return Program(
        source=cuda_source(
            kernel_function.get_c_code(), kernel_function.name, name,
            kernel_function.required_headers,
        ),
        function=name,
        args=tuple(args),
        domain=tuple(kernel.domain),  # type: ignore[arg-type]
        lups=lups_per_launch(kernel),
        options=("-w", "-std=c++17", "-I" + get_pystencils_include_path()),
    )


def design_blocks(threads: int, kernel: Kernel) -> list[Triple]:
    """The paper's block sizes of ``threads`` threads for ``kernel``
    (MODEL.md §8), as :func:`warpspeed.pystencils.blocks` lists them."""
    from .pystencils import blocks

    return blocks(threads, tuple(kernel.domain))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- GPU path


def _cupy() -> Any:
    try:
        import cupy
    except ImportError as exc:
        raise MeasurementError(
            "measuring needs CuPy and an NVIDIA GPU (pip install cupy-cuda12x or cupy-cuda13x)"
        ) from exc
    return cupy


@dataclass(frozen=True)
class Timing:
    """Kernel times (seconds) of one block size; ``skipped`` says why none."""

    block: Triple
    times: tuple[float, ...]
    registers: int | None
    skipped: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def minimum(self) -> float:
        return min(self.times)


class _Loaded:
    """A compiled program with its buffers on the device (GPU path only)."""

    def __init__(self, program: Program, seed: int = 0) -> None:
        cp = _cupy()
        self.cp = cp
        self.kernel = cp.RawKernel(
            program.source, program.function, options=program.options, backend="nvrtc"
        )
        rng = cp.random.default_rng(seed)
        self.memory = []
        self.args: list[Any] = []
        for a in program.args:
            if isinstance(a, Scalar):
                import numpy as np

                self.args.append(np.dtype(a.dtype).type(a.value))
                continue
            nbytes = a.elements * a.itemsize
            mem = cp.cuda.alloc(nbytes + 256)
            shift = (a.base_offset - mem.ptr) % 128
            arr = cp.ndarray((a.elements,), dtype=a.dtype, memptr=mem + shift)
            if arr.dtype.kind == "f":
                arr[...] = rng.random(a.elements, dtype=arr.dtype if a.itemsize >= 4 else "float32")
            else:
                arr[...] = 0
            self.memory.append(mem)
            self.args.append(arr)
        self.program = program
        self.cp.cuda.runtime.deviceSynchronize()

    def launch(self, block: Triple) -> None:
        self.kernel(grid_for(self.program.domain, block), block, tuple(self.args))

    def fits(self, block: Triple) -> str:
        limit = int(self.kernel.max_threads_per_block)
        if math.prod(block) > limit:
            return f"block of {math.prod(block)} threads exceeds this kernel's limit of {limit}"
        return ""


class _ClockSampler:
    """``nvidia-smi -lms`` in the background while the timed launches run."""

    def __init__(self, interval_ms: int = 50) -> None:
        self.cmd = [
            "nvidia-smi", "--query-gpu=clocks.sm,clocks.mem",
            "--format=csv,noheader,nounits", "-lms", str(interval_ms),
        ]
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> _ClockSampler:
        try:
            self.proc = subprocess.Popen(
                self.cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
            )
        except OSError:
            self.proc = None
        return self

    def __exit__(self, *exc: object) -> None:
        self.text = ""
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.text, _ = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.text, _ = self.proc.communicate()

    @property
    def clocks(self) -> tuple[float | None, float | None]:
        return parse_clock_samples(getattr(self, "text", ""))


def time_program(
    program: Program, blocks: Sequence[Triple], warmup: int = 5, repetitions: int = 25
) -> tuple[list[Timing], tuple[float | None, float | None]]:
    """Time every block size (GPU): ``warmup`` launches, then
    ``repetitions`` launches each timed with CUDA events. Returns the
    timings and the median (SM, memory) clocks in MHz seen meanwhile."""
    dev = _Loaded(program)
    cp = dev.cp
    regs = int(dev.kernel.num_regs)
    out = []
    start, end = cp.cuda.Event(), cp.cuda.Event()
    with _ClockSampler() as sampler:
        for block in blocks:
            why = dev.fits(block)
            if why:
                out.append(Timing(block, (), regs, skipped=why))
                continue
            for _ in range(warmup):
                dev.launch(block)
            times = []
            for _ in range(repetitions):
                start.record()
                dev.launch(block)
                end.record()
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
            out.append(Timing(block, tuple(times), regs))
    return out, sampler.clocks


def launch_program(program: Program, blocks: Sequence[Triple]) -> None:
    """Launch every block size once (GPU); the child that ncu profiles."""
    dev = _Loaded(program)
    for block in blocks:
        if not dev.fits(block):
            dev.launch(block)
    dev.cp.cuda.runtime.deviceSynchronize()


def _run_text(cmd: Sequence[str]) -> str:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout


def environment(ncu: str = "ncu") -> dict[str, str]:
    """Machine name and tool versions for the CSV (GPU path)."""
    cp = _cupy()
    import pystencils

    from . import __version__

    smi = _run_text(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    try:
        name, driver = parse_smi_identity(smi)
    except MeasurementError:
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        raw = props["name"]
        name, driver = (raw.decode() if isinstance(raw, bytes) else str(raw)), ""
    return {
        "machine": name,
        "driver": driver,
        "cuda": cuda_version_string(int(cp.cuda.runtime.runtimeGetVersion())),
        "ncu": ncu_mod.parse_version(_run_text([ncu, "--version"])),
        "cupy": str(cp.__version__),
        "pystencils": str(pystencils.__version__),
        "warpspeed": __version__,
    }


def child_command(
    spec: str, param_items: Sequence[str], fold: Triple, blocks: Sequence[Triple],
    scalar_items: Sequence[str] = (),
) -> list[str]:
    """argv of the child that launches each block size once (for ncu)."""
    cmd = [sys.executable, "-m", "warpspeed.measure", "launch", "--stencil", spec]
    for item in param_items:
        cmd += ["--set", item]
    for item in scalar_items:
        cmd += ["--scalar", item]
    cmd += ["--fold", format_triple(fold), "--blocks", *(format_triple(b) for b in blocks)]
    return cmd


def match_counters(
    launches: Sequence[ncu_mod.KernelMetrics], blocks: Sequence[Triple]
) -> list[ncu_mod.KernelMetrics]:
    """Profiled launches in launch order, checked against the block sizes
    the child launched (by count, and by the "Block Size" column if ncu
    printed one)."""
    if len(launches) != len(blocks):
        raise MeasurementError(
            f"ncu profiled {len(launches)} launches, the child made {len(blocks)}"
        )
    for k, b in zip(launches, blocks):
        if k.block is not None and k.block != tuple(b):
            raise MeasurementError(f"ncu launch {k.id} ran block {k.block}, expected {b}")
    return list(launches)


def profile(
    spec: str, param_items: Sequence[str], fold: Triple, blocks: Sequence[Triple],
    function: str, scalar_items: Sequence[str] = (), ncu: str = "ncu",
) -> list[ncu_mod.KernelMetrics]:
    """Run ncu over the child of :func:`child_command` (GPU)."""
    cmd = ncu_mod.ncu_command(
        child_command(spec, param_items, fold, blocks, scalar_items), f"^{function}$", ncu=ncu
    )
    env = dict(os.environ, LC_ALL="C", LANG="C")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    except OSError as exc:
        raise MeasurementError(f"cannot run {ncu}: {exc}") from exc
    if res.returncode != 0 or "==ERROR==" in res.stdout:
        tail = (res.stdout + res.stderr).strip().splitlines()[-3:]
        raise MeasurementError(f"ncu failed ({res.returncode}): {' | '.join(tail)}")
    return match_counters(ncu_mod.parse_csv(res.stdout), blocks)


def measure_fold(
    spec: str,
    param_items: Sequence[str],
    fold: Triple,
    *,
    threads: int | None = None,
    blocks: Sequence[Triple] | None = None,
    warmup: int = 5,
    repetitions: int = 25,
    use_ncu: bool = True,
    ncu: str = "ncu",
    scalar_items: Sequence[str] = (),
    note: str = "",
    env: Mapping[str, str] | None = None,
) -> tuple[list[Measurement], list[str]]:
    """Measure every block size of one fold (GPU): the rows and warnings."""
    params = parse_params(param_items, load_generator(spec))
    scalars = {k: float(v) for k, v in parse_params(scalar_items).items()}
    kernel, kernel_function = generate_variant(spec, params, fold)
    program = program_for(kernel_function, kernel, scalars)
    todo = list(blocks) if blocks else design_blocks(threads or 1024, kernel)
    timings, (sm_mhz, mem_mhz) = time_program(program, todo, warmup, repetitions)
    warnings = [f"{t.block}: skipped, {t.skipped}" for t in timings if t.skipped]
    ran = [t for t in timings if not t.skipped]
    counters: list[Mapping[str, float | None]] = [{} for _ in ran]
    ncu_note = ""
    if use_ncu and ran:
        try:
            launches = profile(spec, param_items, fold, [t.block for t in ran], program.function,
                               scalar_items, ncu)
            counters = [k.values for k in launches]
        except MeasurementError as exc:
            ncu_note = f"no counters: {exc}"
            warnings.append(ncu_note)
    info = dict(env) if env is not None else environment(ncu)
    date = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    rows = []
    for t, values in zip(ran, counters):
        vols = normalise(values, program.lups)
        reg = values.get(ncu_mod.REGISTERS)
        rows.append(
            Measurement(
                machine=info.get("machine", ""),
                stencil=spec,
                params=params_json(params),
                kernel=kernel.name,
                domain=interior(kernel),
                block=t.block,
                fold=tuple(kernel.fold),  # type: ignore[arg-type]
                lups=program.lups,
                registers=int(reg) if reg is not None else t.registers,
                time_s=t.median,
                time_min_s=t.minimum,
                repetitions=len(t.times),
                glups=glups(program.lups, t.median),
                sm_clock_mhz=sm_mhz,
                mem_clock_mhz=mem_mhz,
                date=date,
                note="; ".join(x for x in (note, ncu_note) if x),
                **{k: v for k, v in vols.items()},
                **{k: info.get(k, "") for k in
                   ("driver", "cuda", "ncu", "cupy", "pystencils", "warpspeed")},
            )
        )
    return rows, warnings


# --------------------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m warpspeed.measure",
        description="Measure stencil kernels on this machine's GPU (MODEL.md §9).",
    )
    sub = p.add_subparsers(dest="command", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--stencil", required=True,
                       help="module of stencils/ or a .py file defining generate()")
        q.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                       help="stencil parameter (repeatable)")
        q.add_argument("--scalar", action="append", default=[], metavar="NAME=VALUE",
                       help="kernel scalar argument (default 1.0)")

    run = sub.add_parser("run", help="time and profile configurations, append rows to a CSV")
    common(run)
    which = run.add_mutually_exclusive_group()
    which.add_argument("--threads", type=int, default=1024,
                       help="all power-of-two block shapes of this many threads (default 1024)")
    which.add_argument("--blocks", nargs="+", metavar="X,Y,Z", help="explicit block sizes")
    run.add_argument("--folds", nargs="+", default=["1,1,1"], metavar="X,Y,Z",
                     help="fold variants (default 1,1,1)")
    run.add_argument("--out", help="CSV to append to")
    run.add_argument("--warmup", type=int, default=5)
    run.add_argument("--repetitions", type=int, default=25)
    run.add_argument("--no-ncu", action="store_true", help="time only, leave counters empty")
    run.add_argument("--ncu", default="ncu", help="the ncu executable")
    run.add_argument("--note", default="", help="text for the note column")
    run.add_argument("--dry-run", action="store_true",
                     help="list the configurations and commands; needs no GPU")

    launch = sub.add_parser("launch", help="(internal) launch each block once, for ncu")
    common(launch)
    launch.add_argument("--fold", default="1,1,1")
    launch.add_argument("--blocks", nargs="+", required=True)
    return p


def _dry_run(args: argparse.Namespace, folds: list[Triple], blocks: list[Triple] | None) -> str:
    params = parse_params(args.set, load_generator(args.stencil))
    scalars = {k: float(v) for k, v in parse_params(args.scalar).items()}
    lines = [f"dry run: {args.stencil} {params_json(params)}, nothing is measured"]
    for fold in folds:
        kernel, kernel_function = generate_variant(args.stencil, params, fold)
        program = program_for(kernel_function, kernel, scalars)
        todo = blocks or design_blocks(args.threads, kernel)
        lines.append(
            f"fold {format_triple(fold)}: kernel {kernel.name}, function {program.function}, "
            f"interior {format_triple(interior(kernel))}, {program.lups} Lup per launch, "
            f"{len(todo)} block sizes: {' '.join(format_triple(b) for b in todo)}"
        )
        if not args.no_ncu:
            cmd = ncu_mod.ncu_command(
                child_command(args.stencil, args.set, fold, todo, args.scalar),
                f"^{program.function}$", ncu=args.ncu,
            )
            lines.append("  ncu: " + " ".join(cmd))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m warpspeed.measure``."""
    args = _parser().parse_args(argv)
    try:
        blocks = [parse_triple(b, "block") for b in args.blocks] if args.blocks else None
        if args.command == "launch":
            params = parse_params(args.set, load_generator(args.stencil))
            scalars = {k: float(v) for k, v in parse_params(args.scalar).items()}
            kernel, kernel_function = generate_variant(
                args.stencil, params, parse_triple(args.fold, "fold")
            )
            launch_program(program_for(kernel_function, kernel, scalars), blocks or [])
            return 0
        folds = [parse_triple(f, "fold") for f in args.folds]
        if args.dry_run:
            print(_dry_run(args, folds, blocks))
            return 0
        if not args.out:
            raise MeasurementError("give --out CSV (or --dry-run)")
        env = environment(args.ncu)
        total = 0
        for fold in folds:
            rows, warnings = measure_fold(
                args.stencil, args.set, fold, threads=args.threads, blocks=blocks,
                warmup=args.warmup, repetitions=args.repetitions, use_ncu=not args.no_ncu,
                ncu=args.ncu, scalar_items=args.scalar, note=args.note, env=env,
            )
            for w in warnings:
                print(f"warning: fold {format_triple(fold)}: {w}", file=sys.stderr)
            write_csv(args.out, rows)
            total += len(rows)
            print(f"fold {format_triple(fold)}: {len(rows)} rows appended to {args.out}",
                  flush=True)
        print(f"{total} configurations measured on {env['machine']}")
        return 0
    except WarpspeedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


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

if __name__ == "__main__":
    raise SystemExit(main())
