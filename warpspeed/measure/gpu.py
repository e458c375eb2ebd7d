"""The CUDA side of the harness (MODEL.md §9): compile a
:class:`~warpspeed.measure.programs.Program` with NVRTC through CuPy, put its
buffers on the device, time each block with CUDA events, and say in one line
why a block cannot launch.

CuPy is imported only when a function here needs it (:func:`cupy_module`;
tests hand in a stand-in module with the same names). Nothing here imports
pystencils, islpy or the model.

**Compiling.** ``cupy.RawKernel(source, function, options, backend="nvrtc")``
with the program's options and its runtime-header folder (``-I``). Where
NVRTC cannot find a header of the CUDA toolkit itself (CuPy adds the
toolkit's headers on some installations and not on others), the compile is
tried once more with the toolkit's ``include`` folder and, on CUDA 13, its
``include/cccl`` (where CUDA 13 moved ``<cuda/std/...>``).
:func:`compile_check` is the same compile in a worker process: it fills
CuPy's on-disk kernel cache, so the process that times finds every kernel
compiled.

**Timing** (:class:`TimingRule`, the rule of the shipped H200 run): ``warmup``
launches, one timed launch that sizes the rest, then ``repetitions`` launches
(``short_repetitions`` when that one took under ``short_s``,
``long_repetitions`` over ``long_s``), each timed alone between two CUDA
events; the median is the time, the minimum is kept.

**Refusals.** A block of more threads than the compiled kernel can launch
(its registers), or a grid beyond CUDA's limits, is refused before launching;
a launch that fails all the same is refused with CUDA's message. Either way
the block is a :class:`Timing` with ``skipped`` saying why, never an abort.
"""

from __future__ import annotations

import math
import statistics
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .counters import parse_clock_samples
from .programs import Program, Scalar, grid_for
from .schema import MeasurementError, Triple

#: CUDA's grid limits (x, y, z).
MAX_GRID = (2**31 - 1, 65535, 65535)


def cupy_module() -> Any:
    """CuPy, or a :class:`MeasurementError` saying what to install."""
    try:
        import cupy
    except ImportError as exc:
        raise MeasurementError(
            "measuring needs CuPy and an NVIDIA GPU (pip install cupy-cuda12x or cupy-cuda13x)"
        ) from exc
    return cupy


def first_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its text."""
    text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def toolkit_includes(cuda_path: str | None, cuda_major: int) -> tuple[str, ...]:
    """``-I`` options of the CUDA toolkit's headers that exist: ``include``
    and, from CUDA 13 on, ``include/cccl``."""
    if not cuda_path:
        return ()
    folders = [Path(cuda_path) / "include"]
    if cuda_major >= 13:
        folders.append(Path(cuda_path) / "include" / "cccl")
    return tuple(f"-I{f}" for f in folders if f.is_dir())


def _missing_header(exc: BaseException) -> bool:
    return "cannot open source file" in str(exc) or "could not open source file" in str(exc)


def compile_kernel(cp: Any, program: Program) -> Any:
    """The program's kernel, compiled and loaded (module docstring); a
    compile error raises :class:`MeasurementError` in one line."""
    options = program.compile_options
    try:
        kernel = cp.RawKernel(program.source, program.function, options=options,
                              backend="nvrtc")
        kernel.compile()
        return kernel
    except Exception as exc:  # noqa: BLE001 - CuPy's compile errors have no common base
        if not _missing_header(exc):
            raise MeasurementError(f"{program.function} does not compile: "
                                   f"{first_line(exc)}") from exc
        version = int(cp.cuda.runtime.runtimeGetVersion()) // 1000
        extra = toolkit_includes(cp.cuda.get_cuda_path(), version)
        if not extra:
            raise MeasurementError(f"{program.function} does not compile: "
                                   f"{first_line(exc)}") from exc
    try:
        kernel = cp.RawKernel(program.source, program.function, options=options + extra,
                              backend="nvrtc")
        kernel.compile()
        return kernel
    except Exception as exc:  # noqa: BLE001
        raise MeasurementError(f"{program.function} does not compile: "
                               f"{first_line(exc)}") from exc


def compile_check(program: Program) -> str:
    """Compile ``program`` (in a worker process: fills CuPy's kernel cache);
    an empty string, or why it does not compile."""
    try:
        compile_kernel(cupy_module(), program)
    except MeasurementError as exc:
        return str(exc)
    return ""


#: Dynamic shared memory a block gets without asking for more (CUDA's 48 KiB).
DEFAULT_SHARED = 48 * 1024


def _reserve_shared(kernel: Any, shared_bytes: int) -> str:
    """Let ``kernel`` launch with ``shared_bytes`` of dynamic shared memory
    (beyond :data:`DEFAULT_SHARED` it must ask the driver); an empty string,
    or why it cannot."""
    if shared_bytes <= DEFAULT_SHARED:
        return ""
    try:
        kernel.max_dynamic_shared_size_bytes = shared_bytes
    except Exception as exc:  # noqa: BLE001 - CUDA's errors have no common base
        return f"{shared_bytes} B of shared memory per block refused: {first_line(exc)}"
    return ""


class Loaded:
    """A compiled program with its buffers on the device: base pointers at
    the program's offsets from a 128 B boundary, floating-point fields
    filled with uniform random numbers in [0, 1), others with zeros."""

    def __init__(self, cp: Any, program: Program, seed: int = 0) -> None:
        import numpy as np

        self.cp = cp
        self.program = program
        self.kernel = compile_kernel(cp, program)
        self.registers = int(self.kernel.num_regs)
        self.max_threads = int(self.kernel.max_threads_per_block)
        self.shared_refusal = _reserve_shared(self.kernel, program.shared_bytes)
        rng = cp.random.default_rng(seed)
        self.memory: list[Any] = []
        self.args: list[Any] = []
        for a in program.args:
            if isinstance(a, Scalar):
                self.args.append(np.dtype(a.dtype).type(a.value))
                continue
            mem = cp.cuda.alloc(a.elements * a.itemsize + 256)
            shift = (a.base_offset - mem.ptr) % 128
            arr = cp.ndarray((a.elements,), dtype=a.dtype, memptr=mem + shift)
            if np.dtype(a.dtype).kind == "f":
                fill = a.dtype if a.itemsize >= 4 else "float32"
                arr[...] = rng.random(a.elements, dtype=fill)
            else:
                arr[...] = 0
            self.memory.append(mem)
            self.args.append(arr)
        cp.cuda.runtime.deviceSynchronize()

    def refusal(self, block: Triple) -> str:
        """Why ``block`` cannot launch, or an empty string."""
        if self.shared_refusal:
            return self.shared_refusal
        threads = math.prod(block)
        if threads > self.max_threads:
            return (f"block of {threads} threads exceeds this kernel's limit of "
                    f"{self.max_threads} ({self.registers} registers per thread)")
        grid = grid_for(self.program.domain, block)
        for axis, g, lim in zip("xyz", grid, MAX_GRID):
            if g > lim:
                return f"grid of {g} blocks along {axis} exceeds CUDA's {lim}"
        return ""

    def launch(self, block: Triple) -> None:
        self.kernel(grid_for(self.program.domain, block), block, tuple(self.args),
                    shared_mem=self.program.shared_bytes)

    def release(self) -> None:
        """Give the buffers back to the device."""
        self.args.clear()
        self.memory.clear()
        self.cp.get_default_memory_pool().free_all_blocks()


@dataclass(frozen=True)
class TimingRule:
    """How many launches a block gets (module docstring)."""

    warmup: int = 1
    repetitions: int = 7
    short_s: float = 2e-4
    short_repetitions: int = 25
    long_s: float = 5e-3
    long_repetitions: int = 3

    def count(self, first_s: float) -> int:
        """Timed launches after a first one that took ``first_s``."""
        if first_s < self.short_s:
            return max(self.repetitions, self.short_repetitions)
        if first_s > self.long_s:
            return min(self.repetitions, self.long_repetitions)
        return self.repetitions


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


def _timed(dev: Loaded, block: Triple, start: Any, end: Any) -> float:
    start.record()
    dev.launch(block)
    end.record()
    end.synchronize()
    return float(dev.cp.cuda.get_elapsed_time(start, end)) * 1e-3


def time_block(dev: Loaded, block: Triple, rule: TimingRule) -> Timing:
    """The times of one block (module docstring), or its refusal."""
    why = dev.refusal(block)
    if why:
        return Timing(block, (), dev.registers, skipped=why)
    start, end = dev.cp.cuda.Event(), dev.cp.cuda.Event()
    try:
        for _ in range(rule.warmup):
            dev.launch(block)
        first = _timed(dev, block, start, end)
        times = tuple(_timed(dev, block, start, end) for _ in range(rule.count(first)))
    except Exception as exc:  # noqa: BLE001 - CUDA's launch errors have no common base
        return Timing(block, (), dev.registers, skipped=f"launch failed: {first_line(exc)}")
    return Timing(block, times, dev.registers)


def time_blocks(dev: Loaded, blocks: Sequence[Triple], rule: TimingRule) -> list[Timing]:
    """:func:`time_block` of each block, in order."""
    return [time_block(dev, b, rule) for b in blocks]


def launch_once(dev: Loaded, blocks: Sequence[Triple]) -> list[Triple]:
    """Launch each block that can launch once (the child ncu profiles);
    the blocks launched."""
    done = [b for b in blocks if not dev.refusal(b)]
    for b in done:
        dev.launch(b)
    dev.cp.cuda.runtime.deviceSynchronize()
    return done


@contextmanager
def clock_samples(interval_ms: int = 50) -> Iterator[list[str]]:
    """``nvidia-smi -lms`` in the background while the block runs; the list
    it yields holds the samples' text afterwards (empty without nvidia-smi)."""
    cmd = ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader,nounits",
           "-lms", str(interval_ms)]
    out: list[str] = []
    try:
        proc: subprocess.Popen[str] | None = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        proc = None
    try:
        yield out
    finally:
        if proc is not None:
            proc.terminate()
            try:
                text, _ = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                text, _ = proc.communicate()
            out.append(text)


def clocks_of(samples: Sequence[str]) -> tuple[float | None, float | None]:
    """Median SM and memory clocks of :func:`clock_samples`' text."""
    return parse_clock_samples("".join(samples))


def run_text(cmd: Sequence[str]) -> str:
    """A command's standard output, or an empty string where it cannot run."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return res.stdout


__all__ = [
    "MAX_GRID",
    "Loaded",
    "Timing",
    "TimingRule",
    "clock_samples",
    "clocks_of",
    "compile_check",
    "compile_kernel",
    "cupy_module",
    "first_line",
    "launch_once",
    "run_text",
    "time_block",
    "time_blocks",
    "toolkit_includes",
]
