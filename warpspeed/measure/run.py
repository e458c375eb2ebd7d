"""The GPU path of the harness (MODEL.md §9): time every block size with
CUDA events through CuPy (imported only here, when measuring), sample the
clocks with nvidia-smi, profile a child process with ncu (counters:
:mod:`warpspeed.measure.ncu`), and assemble the :class:`Measurement` rows of one
fold. :func:`child_command` and :func:`match_counters` need no GPU."""

from __future__ import annotations

import datetime as _dt
import math
import os
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import ncu as ncu_mod
from .counters import (
    cuda_version_string,
    glups,
    interior,
    normalise,
    parse_clock_samples,
    parse_smi_identity,
)
from .program import (
    Program,
    Scalar,
    design_blocks,
    generate_variant,
    grid_for,
    load_generator,
    parse_params,
    program_for,
)
from .schema import Measurement, MeasurementError, Triple, format_triple, params_json


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

    from .. import __version__

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
    threads: int | Sequence[int] | None = None,
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
    todo = list(blocks) if blocks else design_blocks(1024 if threads is None else threads, kernel)
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
                fold=kernel.fold,
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
                **vols,
                driver=info.get("driver", ""), cuda=info.get("cuda", ""),
                ncu=info.get("ncu", ""), cupy=info.get("cupy", ""),
                pystencils=info.get("pystencils", ""), warpspeed=info.get("warpspeed", ""),
            )
        )
    return rows, warnings
