"""A stand-in for CuPy: the names the harness uses (``warpspeed.measure.gpu``),
with a device clock instead of a GPU, so that the GPU path runs without one.

* A kernel's registers come from a ``// fake: registers=N`` line of its source
  (default 32); it can launch ``65536 // N`` threads per block, at most 1024
  (rounded down to a warp), as CUDA allows with 64 K registers per SM.
* A launch advances the device clock by :func:`launch_seconds` of its grid
  and block; a CUDA event records the clock, ``get_elapsed_time`` is the
  difference in milliseconds. A launch of more threads than the kernel can
  take raises as CUDA does (out of resources); a source with ``#error`` does
  not compile; a source that includes ``<fake_toolkit.h>`` compiles only with
  ``-I<toolkit>/include`` of :data:`CUDA_PATH`.
* ``FAKE_CUPY_LOG`` (environment): a file each process appends its
  compiles and launches to, one JSON object a line.

``build()`` returns a fresh module object; tests put it in ``sys.modules``.
"""

from __future__ import annotations

import json
import math
import os
import re
import types
from typing import Any

import numpy as np

#: Seconds per launched thread of a launch (:func:`launch_seconds`).
SECONDS_PER_THREAD = 1e-11
#: Where the fake toolkit lives (tests set it; None: no toolkit).
CUDA_PATH: str | None = None


def launch_seconds(grid: tuple[int, int, int], block: tuple[int, int, int]) -> float:
    """The fake duration of a launch: every launched thread costs
    :data:`SECONDS_PER_THREAD`, times (1 + 16 / block x): narrow blocks are slower."""
    return math.prod(grid) * math.prod(block) * SECONDS_PER_THREAD * (1 + 16 / block[0])


def _log(**entry: Any) -> None:
    path = os.environ.get("FAKE_CUPY_LOG")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"pid": os.getpid(), **entry}) + "\n")


class _Device:
    clock = 0.0
    next_ptr = 0x7F00_0000_0010  # deliberately 16 B past a 128 B boundary


class CompileException(Exception):
    pass


class CUDADriverError(RuntimeError):
    pass


class RawKernel:
    def __init__(self, code: str, name: str, options: tuple[str, ...] = (),
                 backend: str = "nvrtc") -> None:
        self.code, self.name, self.options, self.backend = code, name, tuple(options), backend
        m = re.search(r"fake: registers=(\d+)", code)
        self.num_regs = int(m.group(1)) if m else 32
        self.max_threads_per_block = min(1024, (65536 // self.num_regs) // 32 * 32)
        self.fail_after: int | None = None
        self.launches = 0
        self.shared_limit = 48 * 1024

    def compile(self) -> None:
        if "#error" in self.code:
            raise CompileException("kern.cu(3): error: #error directive: not this one\n1 error")
        if "<fake_toolkit.h>" in self.code and not any(
                o == f"-I{CUDA_PATH}/include" for o in self.options):
            raise CompileException('kern.cu(1): catastrophic error: cannot open source file '
                                   '"fake_toolkit.h"')
        _log(event="compile", name=self.name, options=list(self.options))

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self.shared_limit

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        if value > 227 * 1024:
            raise CUDADriverError("CUDA_ERROR_INVALID_VALUE: invalid argument")
        self.shared_limit = value

    def __call__(self, grid: tuple[int, ...], block: tuple[int, ...], args: tuple,
                 shared_mem: int = 0) -> None:
        if shared_mem > self.shared_limit:
            raise CUDADriverError("CUDA_ERROR_INVALID_VALUE: invalid argument")
        if math.prod(block) > self.max_threads_per_block:
            raise CUDADriverError("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: too many resources "
                                  "requested for launch")
        if "fake: fail" in self.code and self.launches >= 3:
            raise CUDADriverError("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")
        self.launches += 1
        g = (tuple(grid) + (1, 1))[:3]
        b = (tuple(block) + (1, 1))[:3]
        _Device.clock += launch_seconds(g, b)  # type: ignore[arg-type]
        _log(event="launch", name=self.name, block=list(b), shared_mem=shared_mem)


class Event:
    def __init__(self) -> None:
        self.t = 0.0

    def record(self) -> None:
        self.t = _Device.clock

    def synchronize(self) -> None:
        pass


def get_elapsed_time(start: Event, end: Event) -> float:
    return (end.t - start.t) * 1e3


class MemoryPointer:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr

    def __add__(self, offset: int) -> MemoryPointer:
        return MemoryPointer(self.ptr + offset)


def alloc(nbytes: int) -> MemoryPointer:
    ptr = _Device.next_ptr
    _Device.next_ptr += (nbytes + 255) // 256 * 256 + 16
    return MemoryPointer(ptr)


class ndarray:
    def __init__(self, shape: tuple[int, ...], dtype: Any, memptr: MemoryPointer) -> None:
        self.shape, self.dtype, self.ptr = shape, np.dtype(dtype), memptr.ptr
        self.filled: Any = None
        _log(event="array", ptr=self.ptr, dtype=self.dtype.name)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.filled = value


class _Generator:
    def random(self, size: int, dtype: Any = "float64") -> str:
        return f"uniform[0,1) x {size} {np.dtype(dtype).name}"


class _Pool:
    def free_all_blocks(self) -> None:
        _log(event="free")


def build() -> types.ModuleType:
    """A fresh fake ``cupy`` module (the device clock starts at zero)."""
    _Device.clock = 0.0
    cp = types.ModuleType("cupy")
    cp.__version__ = "0.0+fake"  # type: ignore[attr-defined]
    cp.RawKernel = RawKernel  # type: ignore[attr-defined]
    cp.ndarray = ndarray  # type: ignore[attr-defined]
    cp.random = types.SimpleNamespace(default_rng=lambda seed=0: _Generator())  # type: ignore[attr-defined]
    cp.get_default_memory_pool = lambda: _Pool()  # type: ignore[attr-defined]
    cp.show_config = lambda: print("CuPy Version : 0.0+fake (a stand-in, no GPU)")  # type: ignore[attr-defined]
    runtime = types.SimpleNamespace(
        deviceSynchronize=lambda: None, runtimeGetVersion=lambda: 13000,
        getDeviceProperties=lambda i: {"name": b"Fake GPU"}, getDeviceCount=lambda: 1)
    cp.cuda = types.SimpleNamespace(  # type: ignore[attr-defined]
        alloc=alloc, Event=Event, get_elapsed_time=get_elapsed_time, runtime=runtime,
        Device=lambda i=0: types.SimpleNamespace(id=i), get_cuda_path=lambda: CUDA_PATH)
    return cp
